"""The demo's command-line options, shared by ``jaxmetrics demo`` and ``python -m jaxmetrics.demo``.

Plain argparse, no JAX: ``jaxmetrics --help`` builds every command's options without importing
:mod:`jaxmetrics.demo` (which imports JAX and the evaluation code)."""
from __future__ import annotations

import argparse

from jaxmetrics._options import add_dtype_option

__all__ = ["add_arguments"]


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """Add the demo's options to ``ap`` (shared by ``python -m jaxmetrics.demo`` and ``jaxmetrics demo``)."""
    ap.add_argument("--small", action="store_true",
                    help="reduced side metrics: 3 k-means seeds, 100 Self-BLEU samples, 8000 perplexity "
                         "tokens; same prompts and runs (also selected by JAXMETRICS_DEMO_SIZE=small)")
    ap.add_argument("--num-prompts", type=int, default=None,
                    help="held-out passages per decoding, at least 10 (default: 500)")
    ap.add_argument("--out", default="demo_output", help="output folder (default: demo_output)")
    ap.add_argument("--model", default=None, help="generating GPT-2 directory (default: the bundled demo model)")
    ap.add_argument("--seed", type=int, default=None, help="seed (default 0)")
    add_dtype_option(ap)
