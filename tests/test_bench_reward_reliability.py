"""benchmarks/reward_reliability.py at toy size (tiny random GPT-2 and encoder): every configuration
gets a row of correlations with the many-sample influence, and the table records the machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.mark.integration
def test_tiny_reliability_table(tmp_path, tiny_checkpoint_dir):
    out = tmp_path / "rel"
    cmd = [sys.executable, str(BENCH / "reward_reliability.py"), "--model", tiny_checkpoint_dir("gpt2"),
           "--featurizer", tiny_checkpoint_dir("bert"), "--samples", "64", "--references", "48",
           "--step-references", "24", "--batch", "8", "--pools", "16", "--buckets", "3", "--truth-buckets", "4",
           "--truth-seeds", "1", "--repeats", "2", "--out", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {r["rewards"]: r for r in json.loads(out.with_suffix(".json").read_text())["rows"]}
    assert set(rows) == {"truth with other seeds (ceiling)", "batch 8 + pool 0, 3 bins", "batch 8 + pool 16, 3 bins"}
    for r in rows.values():
        assert -1.0 <= r["min"] <= r["mean"] <= r["max"] <= 1.0
    table = out.with_suffix(".md").read_text()
    assert "| batch 8 + pool 16, 3 bins |" in table and "Machine:" in table
