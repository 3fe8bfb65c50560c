"""``jaxmetrics mark-evaluate``: Mark-Evaluate scores of candidate texts against references."""
from __future__ import annotations

import argparse

from jaxmetrics.commands._util import (add_dtype_option, add_empty_option, add_model_option, add_progress_options,
                                       LibraryChoices, progress_enabled, read_input, write_json)
from jaxmetrics._files import check_input_file


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mark-evaluate",
        help="Mark-Evaluate (Petersen, Schnabel, CAPTURE) with IMPAR and FID baselines",
        description="Score candidate texts against reference texts with the Mark-Evaluate population "
                    "estimators on encoder embeddings (sentence mode, or token mode with --token-level). "
                    "Files hold one text per line, or .jsonl with a 'text' field. Prints the result (with its "
                    "signature) as JSON. "
                    "Every option is checked before the model is loaded; in sentence mode that includes --k "
                    "against the number of texts of each file.",
    )
    p.add_argument("--references", required=True, metavar="FILE", help="reference texts file")
    p.add_argument("--candidates", required=True, metavar="FILE", help="candidate (generated) texts file")
    add_model_option(p, "encoder that embeds the texts")
    add_dtype_option(p)
    p.add_argument("--k", type=int, default=3,
                   help="k of the k-NN hyperspheres: 1 <= k < the number of samples of each set (the k-th "
                        "neighbour, self excluded, must exist): in sentence mode each file needs at least k + 1 "
                        "texts; in token mode the samples are the token vectors, counted after encoding "
                        "(default: 3)")
    p.add_argument("--token-level", action="store_true",
                   help="every token vector of the last 5 layers is a sample (default: one sentence embedding "
                        "per text)")
    p.add_argument("--occasions", choices=LibraryChoices("jaxmetrics.mark_evaluate.checks", "OCCASIONS"),
                   metavar="OCCASIONS", default="samples",
                   help="one of %(choices)s: ME-CAPTURE set-up: one occasion per sample (the paper; default) or the two "
                        "Petersen visits (default: samples)")
    p.add_argument("--literal", action="store_true",
                   help="the estimators as printed in the paper (default: the corrected estimators)")
    p.add_argument("--max-length", type=int, default=256, help="encoder truncation in tokens (default: 256)")
    p.add_argument("--batch-size", type=int, default=32, help="texts per forward pass (default: 32, sentence-transformers' own for "
                        "texts of up to 256 tokens; speed and memory only)")
    p.add_argument("--no-baselines", action="store_true", help="skip IMPAR and FID (default: compute them)")
    add_empty_option(p, per_pair=False, what="Mark-Evaluate")
    p.add_argument("--drop-empty", dest="empty", action="store_const", const="drop", default=argparse.SUPPRESS,
                   help="the same as --empty drop")
    add_progress_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxmetrics._validation import check_int
    from jaxmetrics.mark_evaluate.pipeline import compute_mark_evaluate

    for name in ("references", "candidates"):
        check_input_file(getattr(args, name), f"--{name}")
    check_int(args.k, "--k", minimum=1)
    check_int(args.max_length, "--max-length", minimum=1)
    check_int(args.batch_size, "--batch-size", minimum=1)
    texts = {}
    for name in ("references", "candidates"):
        texts[name] = read_input(getattr(args, name), f"--{name}", command="mark-evaluate", empty=args.empty,
                                 what="Mark-Evaluate").texts
    if not args.token_level:   # one sample per text: the k-th neighbour must exist in each set
        for name, t in texts.items():
            if args.k >= len(t):
                raise ValueError(f"--k: {args.k} needs more than k texts in each set (the k-th neighbour, self "
                                 f"excluded); --{name} {getattr(args, name)!r} has {len(t)}: give at least "
                                 f"{args.k + 1} texts or a smaller --k")
    out = compute_mark_evaluate(references=texts["references"], candidates=texts["candidates"],
                                model=args.model, k=args.k, token_level=args.token_level,
                                occasions=args.occasions, literal=args.literal, baselines=not args.no_baselines,
                                max_length=args.max_length, batch_size=args.batch_size,
                                progress=progress_enabled(args), dtype=args.dtype)
    write_json(None, out, sort_keys=True)
    return 0
