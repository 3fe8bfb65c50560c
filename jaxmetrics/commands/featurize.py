"""``jaxmetrics featurize``: texts -> features saved as ``.npy``."""
from __future__ import annotations

import argparse
import sys

from jaxmetrics.commands._util import (add_dtype_option, add_length_and_batch_options, add_model_option,
                                       add_pooling_option, add_progress_options, check_length_and_batch,
                                       check_output_file, progress_enabled, read_input)
from jaxmetrics._files import check_input_file


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "featurize",
        help="embed texts with a model (mean-pooled for encoders, last token for decoders)",
        description="Featurize texts (one per line, or .jsonl with a 'text' field) with a Hugging Face "
                    "checkpoint (safetensors) and save the [N, D] float32 features as .npy. Encoders are "
                    "mean-pooled over the tokens, decoders take the last token (the MAUVE convention); "
                    "--pooling chooses. Every option, --out and --cache-dir are checked before the model "
                    "is loaded.",
    )
    p.add_argument("texts", help="text file (one text per line) or .jsonl with a 'text' field")
    add_model_option(p, "encoder or decoder that embeds the texts")
    add_dtype_option(p)
    p.add_argument("--out", required=True, metavar="FILE.npy",
                   help="output file; must end in .npy (written at exactly this path; any other suffix is "
                        "refused before the work)")
    add_length_and_batch_options(p, max_length_help="truncate texts to this many tokens (default: 1024 for "
                                 "last-token pooling, 256 for mean pooling, or the model's positions if fewer)",
                                 batch_size=8, batch_help="texts per forward pass (default: 8, small because MAUVE "
                                 "features read texts of up to 1024 tokens; speed and memory only: the features do "
                                 "not depend on it)")
    p.add_argument("--layer", type=int, default=-1, help="hidden_states index (default: -1, the last layer)")
    add_pooling_option(p)
    p.add_argument("--cache-dir", default=None,
                   help="resumable feature cache; must exist or be creatable, and be writable; a damaged chunk "
                        "is named in a warning and recomputed (default: no cache)")
    p.add_argument("--drop-empty", action="store_true", help="drop empty lines instead of failing (default: fail)")
    add_progress_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxmetrics.models import resolve_pooling

    import numpy as np

    from jaxmetrics import models
    from jaxmetrics.models.cache import check_writable_dir

    check_input_file(args.texts, "texts")
    check_output_file(args.out, "--out")
    if not args.out.lower().endswith(".npy"):
        raise ValueError(f"--out: {args.out!r} does not end in .npy; featurize writes a NumPy .npy array "
                         "(name the file FILE.npy)")
    if args.cache_dir is not None:
        check_writable_dir(args.cache_dir, "--cache-dir")
    check_length_and_batch(args)
    texts = read_input(args.texts, "texts", command="featurize", empty="drop" if args.drop_empty else "error",
                       fix="remove them or pass --drop-empty").texts
    lm = models.load_model(args.model, dtype=args.dtype)
    feats = models.encode(texts, model=lm, layers=args.layer, pooling=args.pooling, max_length=args.max_length,
                          batch_size=args.batch_size, cache_dir=args.cache_dir, progress=progress_enabled(args),
                          desc="featurize").pooled[0]
    with open(args.out, "wb") as f:   # exactly the path given (np.save on a name would add .npy to it)
        np.save(f, feats)
    print(f"wrote {feats.shape[0]} x {feats.shape[1]} features ({resolve_pooling(lm, args.pooling)} pooling) "
          f"to {args.out}", file=sys.stderr)
    return 0
