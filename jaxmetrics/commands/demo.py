"""``jaxmetrics demo``: the MAUVE paper's comparison in miniature on the bundled data
(same as ``python -m jaxmetrics.demo`` / ``make demo``).

Only the options are built at start-up; :mod:`jaxmetrics.demo` (which imports JAX and the
evaluation code) is imported when the demo runs, so ``jaxmetrics --help`` stays fast."""
from __future__ import annotations

import argparse

from jaxmetrics._demo_options import add_arguments


def _run(args: argparse.Namespace) -> int:
    from jaxmetrics.demo import run_from_args

    return run_from_args(args)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "demo", help="greedy / pure / nucleus generations of the bundled GPT-2 scored against "
                     "held-out Shakespeare with every metric (writes demo_output/)")
    add_arguments(p)
    p.set_defaults(func=_run)
