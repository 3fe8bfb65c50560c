"""``jaxmetrics featurize``: texts -> MAUVE features saved as ``.npy``."""
from __future__ import annotations

import argparse
import sys


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "featurize",
        help="embed texts with a model (last layer at the last token, the MAUVE convention)",
        description="Featurize texts (one per line, or .jsonl with a 'text' field) with a Hugging Face "
                    "checkpoint (safetensors) and save the [N, D] float32 features as .npy.",
    )
    p.add_argument("texts", help="text file (one text per line) or .jsonl with a 'text' field")
    p.add_argument("--model", required=True, help="hub id or local checkpoint directory")
    p.add_argument("--out", required=True, help="output .npy file")
    p.add_argument("--max-length", type=int, default=1024, help="truncate texts to this many tokens")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--layer", type=int, default=-1, help="hidden_states index (default: last layer)")
    p.add_argument("--pooling", choices=["last", "mean"], default="last",
                   help="last real token (MAUVE) or masked mean (sentence embeddings)")
    p.add_argument("--cache-dir", default=None, help="feature cache directory (resumable)")
    p.add_argument("--drop-empty", action="store_true", help="drop empty lines instead of failing")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from jaxmetrics.models import featurize, load_model, read_texts, sentence_embeddings

    texts = read_texts(args.texts, name="texts")
    if args.drop_empty:
        n0 = len(texts)
        texts = [t for t in texts if t.strip()]
        if len(texts) < n0:
            print(f"jaxmetrics featurize: dropped {n0 - len(texts)} empty text(s)", file=sys.stderr)
    lm = load_model(args.model)
    kw = dict(max_length=args.max_length, batch_size=args.batch_size, cache_dir=args.cache_dir,
              progress=not args.no_progress, layer=args.layer)
    pool = featurize if args.pooling == "last" else sentence_embeddings
    feats = pool(texts, model=lm, **kw)
    np.save(args.out, feats)
    print(f"wrote {feats.shape[0]} x {feats.shape[1]} features to {args.out}", file=sys.stderr)
    return 0
