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


def causal_models(spec: str, tmp: str | Path) -> list[tuple[str, str, str]]:
    """``(key, label, directory)`` of the causal models named in ``spec`` (comma-separated:
    ``demo`` -- the bundled demo GPT-2, linked under a name containing "gpt2" because mauve-text
    loads only such names --, ``gpt2`` -- a random GPT-2-small-sized model written to ``tmp``)."""
    from featurize_vs_torch import gpt2_small_dir

    from jaxmetrics.data import demo_model_dir

    out = []
    for m in spec.split(","):
        if m == "demo":
            link = Path(tmp) / "demo-gpt2"
            if not link.exists():
                link.symlink_to(demo_model_dir())
            out.append((m, "bundled demo GPT-2", str(link)))
        elif m == "gpt2":
            out.append((m, "GPT-2-small-sized (random)", gpt2_small_dir(Path(tmp))))
        else:
            raise SystemExit(f"--models: unknown model {m!r} (demo, gpt2)")
    return out
