"""``jaxmetrics mark-evaluate``: Mark-Evaluate scores of candidate texts against references."""
from __future__ import annotations

import argparse
import json
import sys

from jaxmetrics._cli_util import add_progress_options, progress_enabled
from jaxmetrics._validation import check_input_file


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mark-evaluate",
        help="Mark-Evaluate (Petersen, Schnabel, CAPTURE) with IMPAR and FID baselines",
        description="Score candidate texts against reference texts with the Mark-Evaluate population "
                    "estimators on encoder embeddings (sentence mode, or token mode with --token-level). "
                    "Files hold one text per line, or .jsonl with a 'text' field. Prints the result as JSON.",
    )
    p.add_argument("--references", required=True, metavar="FILE", help="reference texts file")
    p.add_argument("--candidates", required=True, metavar="FILE", help="candidate (generated) texts file")
    p.add_argument("--model", required=True, help="encoder: hub id or local checkpoint directory")
    p.add_argument("--k", type=int, default=3, help="k of the k-NN hyperspheres (default 3)")
    p.add_argument("--token-level", action="store_true",
                   help="every token vector of the last 5 layers is a sample (default: sentence embeddings)")
    p.add_argument("--occasions", choices=["samples", "visits"], default="samples",
                   help="ME-CAPTURE set-up: one occasion per sample (the paper; default) or the two "
                        "Petersen visits")
    p.add_argument("--literal", action="store_true",
                   help="the estimators as printed in the paper instead of the corrected default")
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--no-baselines", action="store_true", help="skip IMPAR and FID")
    p.add_argument("--drop-empty", action="store_true", help="drop empty lines instead of failing")
    add_progress_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxmetrics.mark_evaluate.pipeline import compute_mark_evaluate
    from jaxmetrics.models import read_texts

    for name in ("references", "candidates"):
        check_input_file(getattr(args, name), name)
    texts = {}
    for name in ("references", "candidates"):
        t = read_texts(getattr(args, name), name=name)
        if args.drop_empty:
            n0 = len(t)
            t = [x for x in t if x.strip()]
            if len(t) < n0:
                print(f"jaxmetrics mark-evaluate: dropped {n0 - len(t)} empty {name} line(s)", file=sys.stderr)
        texts[name] = t
    out = compute_mark_evaluate(references=texts["references"], candidates=texts["candidates"],
                                model=args.model, k=args.k, token_level=args.token_level,
                                occasions=args.occasions, literal=args.literal, baselines=not args.no_baselines,
                                max_length=args.max_length, batch_size=args.batch_size,
                                progress=progress_enabled(args))
    print(json.dumps(out.to_dict(), indent=2, sort_keys=True))
    return 0
