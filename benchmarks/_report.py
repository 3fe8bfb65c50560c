"""Shared ending of every benchmark script: print the Markdown table and save it under
``benchmarks/results/`` (or wherever ``--out`` points)."""
from __future__ import annotations

from pathlib import Path


def save_table(table: str, out: str | Path) -> str:
    """Print ``table``, write it to ``out`` (parents created) and return it."""
    print(table)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table)
    return table
