"""``jaxmetrics anisotropy``: per-layer baseline, self- and intra-sentence similarity of a
model's token vectors, before and after each centering (Chen et al. 2020, Figures 1–2)."""
from __future__ import annotations

import argparse
import sys

from jaxmetrics.commands._util import (add_dtype_option, add_length_and_batch_options, add_model_option,
                                       add_progress_options, CENTERINGS, check_length_and_batch, check_outputs,
                                       progress_enabled, read_input, write_json)
from jaxmetrics._files import check_input_file



def register(subparsers) -> None:
    p = subparsers.add_parser(
        "anisotropy",
        help="per-layer anisotropy diagnostics (baseline / self / intra-sentence similarity, "
             "before and after centering)",
        description="For every layer of MODEL (one forward pass with all hidden states): the mean "
                    "cosine of random token pairs from different texts (baseline), of occurrences of "
                    "the same token id in different texts (self-similarity) and of each token with "
                    "its text's mean vector (intra-sentence similarity), for each centering "
                    "(Ethayarajh 2019; Chen et al. 2020). Padding and special tokens are excluded. "
                    "Prints a table; --json and --plot write the numbers and the figure. Every option and "
                    "output is checked before the model is loaded.",
    )
    p.add_argument("texts", help="texts, one sentence per line (or .jsonl with 'text')")
    add_model_option(p, "encoder or decoder whose layers are measured")
    add_dtype_option(p)
    p.add_argument("--centering", nargs="+", default=None, choices=CENTERINGS,
                   metavar="NAME", help="centerings to compare, among %(choices)s (default: all of them)")
    p.add_argument("--num-pairs", type=int, default=10_000, help="random token pairs of the baseline (default: 10000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random pairs (default: 0)")
    p.add_argument("--center-batch-size", type=int, default=32,
                   help="texts per centering batch ('batch') (default: 32)")
    add_length_and_batch_options(p, max_length_help="truncation in tokens (default 512, or the model's positions "
                                 "when fewer)", batch_size=16, batch_help="texts per forward pass (default: 16, the encoding "
                                 "engine's: every layer's token vectors leave each pass; speed and memory only)")
    p.add_argument("--drop-empty", action="store_true", help="drop empty lines instead of failing (default: fail)")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="write the result (every curve and setting, and its signature) as JSON here "
                        "(default: none)")
    p.add_argument("--plot", default=None, metavar="PATH",
                   help="save the per-layer figure here (.png, .pdf, .svg, ...) (default: none)")
    add_progress_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxmetrics._validation import check_int

    check_input_file(args.texts, "texts")
    check_outputs(args, (("json", "--json"), ("plot", "--plot")))
    check_int(args.num_pairs, "--num-pairs", minimum=1)
    check_int(args.center_batch_size, "--center-batch-size", minimum=1)
    check_length_and_batch(args)
    centerings = list(dict.fromkeys(args.centering or CENTERINGS))
    texts = read_input(args.texts, "texts", command="anisotropy", empty="drop" if args.drop_empty else "error",
                       fix="remove them or pass --drop-empty").texts
    if len(texts) < 2:
        raise ValueError(f"texts: {args.texts!r} holds {len(texts)} text; needs at least 2")

    from jaxmetrics.models import load_model
    from jaxmetrics.similarity import compute_anisotropy

    progress = progress_enabled(args)
    if progress:
        print(f"jaxmetrics anisotropy: loading {args.model}", file=sys.stderr)
    lm = load_model(args.model, dtype=args.dtype)
    res = compute_anisotropy(texts, model=lm, seed=args.seed, centerings=centerings,
                             num_pairs=args.num_pairs, center_batch_size=args.center_batch_size,
                             max_length=args.max_length, batch_size=args.batch_size, progress=progress)
    print(f"{res.num_texts} texts, {res.num_tokens} tokens, {res.num_word_types} token ids in >= 2 texts, "
          f"{res.num_layers} layers (L0 = embeddings), {res.num_pairs} random pairs (seed {res.seed})")
    print(res.table())
    if args.json:
        write_json(args.json, res)
        if progress:
            print(f"jaxmetrics anisotropy: wrote {args.json}", file=sys.stderr)
    if args.plot:
        res.plot(args.plot)
        if progress:
            print(f"jaxmetrics anisotropy: wrote {args.plot}", file=sys.stderr)
    return 0
