"""``jaxmetrics demo``: the MAUVE paper's comparison in miniature on the bundled data
(same as ``python -m jaxmetrics.demo`` / ``make demo``)."""
from __future__ import annotations


def register(subparsers) -> None:
    from jaxmetrics.demo import add_arguments, run_from_args

    p = subparsers.add_parser(
        "demo", help="greedy / pure / nucleus generations of the bundled GPT-2 scored against "
                     "held-out Shakespeare with every metric (writes demo_output/)")
    add_arguments(p)
    p.set_defaults(func=run_from_args)
