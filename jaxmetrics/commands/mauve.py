"""``jaxmetrics mauve``: MAUVE between a references file (human text, P) and a candidates file
(model text, Q): two text files featurized with ``--model``, or two ``.npy`` feature files."""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

from jaxmetrics._cli_util import (add_pooling_option, add_progress_options, check_outputs, pooled_features,
                                  progress_enabled)
from jaxmetrics._validation import check_input_file

_FEATURE_SUFFIX = ".npy"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mauve",
        help="MAUVE between reference (human) and candidate (model) texts or features",
        description="MAUVE (Pillutla et al. 2021) with mauve-text's defaults. P is the references "
        "(human text), Q the candidates (model text). Each file is either a text file (one text per "
        "line, or .jsonl with a 'text' field), featurized with --model, or a .npy array of features "
        "[n, d]; the extension decides, and both files must be of the same kind. Text is featurized "
        "with --model: an encoder (BERT, RoBERTa, MiniLM) is mean-pooled over the tokens, a decoder "
        "(GPT-2, Llama) gives its last token's hidden state, as in mauve-text (--pooling chooses).",
    )
    p.add_argument("--references", required=True, metavar="FILE",
                   help="human texts (P): .txt / .jsonl, or .npy features [n_p, d]")
    p.add_argument("--candidates", required=True, metavar="FILE",
                   help="model texts (Q): .txt / .jsonl, or .npy features [n_q, d]")
    p.add_argument("--model", default="gpt2-large",
                   help="featurizer for text files: hub id or local checkpoint directory (default gpt2-large)")
    add_pooling_option(p)
    p.add_argument("--max-text-length", type=int, default=None,
                   help="truncation length in tokens (default: 1024, or the model's positions if fewer)")
    p.add_argument("--batch-size", type=int, default=8, help="texts per featurizer forward pass (default 8)")
    p.add_argument("--cache-dir", default=None,
                   help="feature cache directory: an interrupted run resumes where it stopped")
    p.add_argument("--num-buckets", default="auto", help="'auto' (n/10) or an integer")
    p.add_argument("--pca-max-data", type=int, default=-1, help="rows used to fit the PCA (-1: all)")
    p.add_argument("--kmeans-explained-var", type=float, default=0.9)
    p.add_argument("--kmeans-num-redo", type=int, default=5)
    p.add_argument("--kmeans-max-iter", type=int, default=500)
    p.add_argument("--mauve-scaling-factor", type=float, default=5.0, help="the constant c (default 5)")
    p.add_argument("--divergence-curve-discretization-size", type=int, default=25,
                   help="interior points of the divergence curve (default 25)")
    p.add_argument("--seed", type=int, default=25)
    p.add_argument("--num-seeds", type=int, default=1,
                   help="average over this many k-means seeds (seed, seed+1, ...); default 1")
    p.add_argument("--plot", help="write the divergence curve figure here (.png/.pdf)")
    p.add_argument("--json", dest="json_out", help="write the scores as JSON here")
    add_progress_options(p)
    p.set_defaults(func=run)


def _is_features(path: str) -> bool:
    return os.path.splitext(path)[1].lower() == _FEATURE_SUFFIX


def _check_files(args: argparse.Namespace) -> bool:
    """Check both inputs and every output before any work; True when the inputs are features."""
    ref, cand = args.references, args.candidates
    if _is_features(ref) != _is_features(cand):
        raise ValueError(f"candidates: {cand!r} and references {ref!r} must both be .npy feature files "
                         "or both be text files")
    features = _is_features(ref)
    for name, path in (("references", ref), ("candidates", cand)):
        check_input_file(path, name, text=not features)
    check_outputs(args, (("json_out", "--json"), ("plot", "--plot")))
    return features


def nonempty_texts(path: str, name: str, read_texts, *, command: str = "mauve") -> list[str]:
    """The non-empty texts of ``path`` (read by ``read_texts``); the dropped ones are reported on
    stderr as ``jaxmetrics <command>: ...``; none left is a ``ValueError`` naming ``name``."""
    texts = read_texts(path, name=name)
    kept = [t for t in texts if t.strip()]
    if len(kept) < len(texts):
        print(f"jaxmetrics {command}: {name}: dropped {len(texts) - len(kept)} empty text(s)", file=sys.stderr)
    if not kept:
        raise ValueError(f"{name}: {path!r} holds no non-empty text")
    return kept


def _inputs(args: argparse.Namespace, features: bool) -> dict:
    """``compute_mauve`` keyword arguments for the two files (p = references, q = candidates)."""
    import numpy as np

    if features:
        return dict(p_features=np.load(args.references, allow_pickle=False),
                    q_features=np.load(args.candidates, allow_pickle=False))
    try:
        models = importlib.import_module("jaxmetrics.models")
        read_texts, load_model, resolve_pooling = models.read_texts, models.load_model, models.resolve_pooling
    except (ImportError, AttributeError) as e:
        raise ValueError(f"--model: featurizing text files needs jaxmetrics.models ({e})") from e
    p_text = nonempty_texts(args.references, "references", read_texts)
    q_text = nonempty_texts(args.candidates, "candidates", read_texts)
    lm = load_model(args.model)
    max_length = args.max_text_length
    if max_length is None:  # mauve-text's 1024, capped silently by the model's positions
        max_length = 1024 if lm.max_positions is None else min(1024, lm.max_positions)
    kw = dict(max_length=max_length, batch_size=args.batch_size, cache_dir=args.cache_dir,
              progress=progress_enabled(args))
    if progress_enabled(args):
        print(f"jaxmetrics mauve: featurizing with {args.model} ({resolve_pooling(lm, args.pooling)} pooling)",
              file=sys.stderr)
    return dict(p_features=pooled_features(p_text, lm, args.pooling, **kw),
                q_features=pooled_features(q_text, lm, args.pooling, **kw))


def run(args: argparse.Namespace) -> int:
    from jaxmetrics.mauve import compute_mauve, compute_mauve_seeds, plot_divergence_curves

    if args.num_seeds < 1:
        raise ValueError(f"num_seeds: must be >= 1, got {args.num_seeds}")
    try:
        nb = args.num_buckets if args.num_buckets == "auto" else int(args.num_buckets)
    except ValueError:
        raise ValueError(f"num_buckets: expected 'auto' or an integer, got {args.num_buckets!r}") from None
    features = _check_files(args)
    kw = _inputs(args, features)
    kw.update(num_buckets=nb, pca_max_data=args.pca_max_data, kmeans_explained_var=args.kmeans_explained_var,
              kmeans_num_redo=args.kmeans_num_redo, kmeans_max_iter=args.kmeans_max_iter,
              divergence_curve_discretization_size=args.divergence_curve_discretization_size,
              mauve_scaling_factor=args.mauve_scaling_factor)
    if progress_enabled(args):
        print("jaxmetrics mauve: quantizing and computing MAUVE", file=sys.stderr)
    try:
        if args.num_seeds == 1:
            out = compute_mauve(**kw, seed=args.seed)
        else:
            out = compute_mauve_seeds(**kw, seeds=tuple(range(args.seed, args.seed + args.num_seeds)))
    except ImportError as e:  # the featurizer (jaxmetrics.models) is unavailable
        raise ValueError(str(e)) from e
    if args.num_seeds == 1:
        result = dict(mauve=out.mauve, frontier_integral=out.frontier_integral, mauve_star=out.mauve_star,
                      frontier_integral_star=out.frontier_integral_star, num_buckets=out.num_buckets)
        curves = {"references vs candidates": out.divergence_curve}
        print(f"MAUVE {out.mauve:.4f}  MAUVE* {out.mauve_star:.4f}  FI {out.frontier_integral:.4f}  "
              f"FI* {out.frontier_integral_star:.4f}  (k = {out.num_buckets})")
    else:
        result = dict(mauve=out.mauve_mean, mauve_std=out.mauve_std, mauve_star=out.mauve_star_mean,
                      mauve_star_std=out.mauve_star_std, frontier_integral=out.frontier_integral_mean,
                      frontier_integral_std=out.frontier_integral_std, num_buckets=out.num_buckets,
                      seeds=list(out.seeds), mauve_per_seed=[float(v) for v in out.mauve])
        curves = {f"seed {s}": c for s, c in zip(out.seeds, out.divergence_curve)}
        print(f"MAUVE {out.mauve_mean:.4f} +- {out.mauve_std:.4f}  MAUVE* {out.mauve_star_mean:.4f} +- "
              f"{out.mauve_star_std:.4f}  over {len(out.seeds)} seeds (k = {out.num_buckets})")
    if args.plot:
        plot_divergence_curves(curves, args.plot)
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)
    return 0
