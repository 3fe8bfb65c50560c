"""benchmarks/million_pairs.py at toy size with a tiny random encoder: the command is SIGKILLed
after its first chunk, the next invocation resumes from the cache and completes, and the pairs
recomputed in-process agree with the resumed run's scores."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def test_a_killed_run_resumes_and_agrees(tmp_path, tiny_checkpoint_dir):
    work, out = tmp_path / "work", tmp_path / "million"
    cmd = [sys.executable, str(BENCH / "million_pairs.py"), "--pairs", "2100", "--work", str(work),
           "--model", tiny_checkpoint_dir("bert"), "--layer", "1", "--check", "100", "--out", str(out)]
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    first = subprocess.run(cmd + ["--kill-after-chunks", "1"], capture_output=True, text=True, env=env, timeout=600)
    assert first.returncode == 0, first.stderr[-2000:]
    (seg,) = json.loads((work / "segments.json").read_text())["segments"]
    assert seg["status"] == "killed (SIGKILL)" and 1 <= seg["chunks_after"] < 3, seg
    assert not out.with_suffix(".md").exists()

    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert second.returncode == 0, second.stderr[-2000:]
    rec = json.loads(out.with_suffix(".json").read_text())
    a, b = rec["segments"]
    assert b["status"] == "complete" and b["chunks_before"] == seg["chunks_after"] and b["chunks_after"] == 3
    assert rec["check"]["pairs"] == 100 and rec["check"]["max_abs_diff"] < 1e-5
    assert len(json.loads((work / "result.json").read_text())["f1"]) == 2100
    table = out.with_suffix(".md").read_text()
    assert "| 1 |" in table and "killed (SIGKILL)" in table and "| complete |" in table and "Machine:" in table
