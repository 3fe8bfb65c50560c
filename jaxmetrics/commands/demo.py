"""``jaxmetrics demo``: the MAUVE paper's comparison in miniature on the bundled data
(same as ``make demo``; ``python -m jaxmetrics.commands.demo`` runs it without the other commands).

Only the options are built at start-up; :mod:`jaxmetrics.demo` (which imports JAX and the
evaluation code) is imported when the demo runs, so ``jaxmetrics --help`` stays fast. The demo
itself is the library function :func:`jaxmetrics.demo.run_demo`; this module only turns the
options (and ``JAXMETRICS_DEMO_SIZE``) into its :class:`~jaxmetrics.demo.DemoConfig`."""
from __future__ import annotations

import argparse
import os
import sys

from jaxmetrics.commands._util import add_dtype_option


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """Add the demo's options to ``ap`` (``jaxmetrics demo`` and ``python -m jaxmetrics.commands.demo``)."""
    ap.add_argument("--small", action="store_true",
                    help="reduced side metrics: 3 k-means seeds, 100 Self-BLEU samples, 8000 perplexity "
                         "tokens; same prompts and runs (also selected by JAXMETRICS_DEMO_SIZE=small)")
    ap.add_argument("--num-prompts", type=int, default=None,
                    help="held-out passages per decoding, at least 10 (default: 500)")
    ap.add_argument("--out", default="demo_output", help="output folder (default: demo_output)")
    ap.add_argument("--model", default=None, help="generating GPT-2 directory (default: the bundled demo model)")
    ap.add_argument("--seed", type=int, default=None, help="seed (default 0)")
    add_dtype_option(ap)


def run(args: argparse.Namespace) -> int:
    """Run the demo from parsed :func:`add_arguments` options; returns the exit code 0.

    Raises ``ValueError`` for an unknown ``JAXMETRICS_DEMO_SIZE`` or a bad ``--num-prompts`` (naming
    the variable or the option, as every command-line error does)."""
    from dataclasses import replace

    from jaxmetrics.demo import SIZES, run_demo

    size = "small" if args.small else os.environ.get("JAXMETRICS_DEMO_SIZE", "full")
    if size not in SIZES:
        raise ValueError(f"JAXMETRICS_DEMO_SIZE: expected one of {sorted(SIZES)}, got {size!r}")
    cfg = SIZES[size]
    over = {}
    if args.num_prompts is not None:
        if args.num_prompts < 10:
            raise ValueError(f"--num-prompts: expected at least 10, got {args.num_prompts}")
        over.update(num_prompts=args.num_prompts, self_bleu_samples=min(cfg.self_bleu_samples, args.num_prompts))
    if args.seed is not None:
        over["seed"] = args.seed
    if over:
        cfg = replace(cfg, **over)
    run_demo(cfg, out_dir=args.out, model=args.model, dtype=args.dtype)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "demo", help="greedy / pure / nucleus generations of the bundled GPT-2 scored against "
                     "held-out Shakespeare with every metric (writes demo_output/; about 7.5 minutes on 2 CPU "
                     "cores from an empty cache)")
    add_arguments(p)
    p.set_defaults(func=run)


def main(argv=None) -> int:
    """``python -m jaxmetrics.commands.demo [--small] [--out DIR] ...``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m jaxmetrics.commands.demo",
                                 description="The MAUVE paper's Table 2 in miniature, offline, on the bundled data.")
    add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        return run(args)
    except ValueError as e:
        ap.error(str(e))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
