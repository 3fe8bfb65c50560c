"""``jaxmetrics compare``: a leaderboard of systems scored against the same references, with
confidence intervals and paired significance: per-pair similarities (BERTScore, WMD family, ...)
through :func:`jaxmetrics.confidence.compare_systems`, or MAUVE under one shared quantizer through
:func:`jaxmetrics.mauve.compare_mauve`."""
from __future__ import annotations

import argparse
import os
import sys

from jaxmetrics.commands._util import (add_model_option, add_pooling_option, add_progress_options, check_outputs,
                                       option_error, progress_enabled, read_input_texts, write_json)
from jaxmetrics._files import check_input_file
from jaxmetrics.commands._options import LibraryChoices, SCORES, add_dtype_option

#: ``--metric``: the similarities of :func:`jaxmetrics.similarity.compute_similarity`, and MAUVE
METRICS = LibraryChoices("jaxmetrics.similarity.settings", "SIMILARITY_METRICS", after=("mauve",))


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "compare",
        help="leaderboard of systems against the same references: score, interval, significant differences",
        description="Score every candidates file against the references (pair i = line i of each file) with "
                    "a token-embedding similarity, then report each system's mean score with its bootstrap "
                    "confidence interval (BCa, pairs resampled) and, for every pair of systems, the paired "
                    "difference with its interval and a p-value (paired bootstrap, as sacrebleu's paired-bs, "
                    "or approximate randomization). With --metric mauve the files need not be paired: each system's "
                    "MAUVE against the references under one k-means quantizer fitted on all of them (so the scores "
                    "are comparable), its interval from resampled rows, and p-values by randomization (the two "
                    "systems' rows pooled and split again) or bootstrap. Prints the leaderboard; --json and --plot "
                    "write it. "
                    "Every input, option and output is checked before the model is loaded.",
    )
    p.add_argument("--references", required=True, help="reference texts: one per line (or .jsonl with 'text')")
    p.add_argument("--candidates", required=True, nargs="+", metavar="FILE",
                   help="two or more systems' candidate texts, each with as many texts as the references")
    p.add_argument("--names", nargs="+", default=None, metavar="NAME",
                   help="one name per candidates file (default: the file names without their extension)")
    add_model_option(p, "encoder whose token vectors are compared")
    add_dtype_option(p)
    p.add_argument("--metric", default="bertscore", choices=METRICS, metavar="METRIC",
                   help="one of %(choices)s: the per-pair similarity, with its defaults as in 'jaxmetrics similarity' "
                        "(default bertscore)")
    p.add_argument("--score", default="f1", choices=SCORES, metavar="SCORE",
                   help="one of %(choices)s: the per-pair score averaged over the pairs (default f1; not for mauve)")
    p.add_argument("--method", default=None, choices=LibraryChoices("jaxmetrics.confidence", "COMPARISON_METHODS"),
                   metavar="METHOD", help="one of %(choices)s: p-values by the (paired) bootstrap or by approximate randomization (default bootstrap, "
                        "randomization for mauve)")
    add_pooling_option(p)
    p.add_argument("--seeds", type=int, nargs="+", default=[25], metavar="S",
                   help="mauve: k-means seeds of the shared quantizers, scores averaged over them (default 25)")
    p.add_argument("--num-resamples", type=int, default=1000,
                   help="bootstrap resamples / randomization draws (default 1000)")
    p.add_argument("--confidence", type=float, default=0.95, help="intervals' nominal coverage (default 0.95)")
    p.add_argument("--level", type=float, default=0.05,
                   help="a difference is significant when its p-value is below this (default 0.05)")
    p.add_argument("--seed", type=int, default=0, help="seed of the resampling (default 0)")
    p.add_argument("--max-length", type=int, default=None,
                   help="truncation in tokens (default 512 for the similarities, 1024 for mauve, or the model's "
                        "positions when fewer)")
    p.add_argument("--batch-size", type=int, default=64, help="texts per forward pass (default 64, as similarity; speed and memory only)")
    p.add_argument("--json", default=None,
                   help="write the leaderboard and the pairwise tests as JSON here (default: none)")
    p.add_argument("--plot", default=None,
                   help="draw each system's score with its interval here (.png, .pdf, ...; default: none)")
    add_progress_options(p)
    p.set_defaults(func=run)


def _names(args: argparse.Namespace) -> list[str]:
    if len(args.candidates) < 2:
        raise ValueError(f"--candidates: give at least two systems to compare, got {len(args.candidates)}")
    names = args.names or [os.path.splitext(os.path.basename(f))[0] for f in args.candidates]
    if len(names) != len(args.candidates):
        raise ValueError(f"--names: {len(names)} names for {len(args.candidates)} candidates files")
    if len(set(names)) != len(names):
        raise ValueError(f"--names: the systems' names must differ, got {names} (give --names)")
    return names


def _check_settings(args: argparse.Namespace) -> None:
    if args.method is None:
        args.method = "randomization" if args.metric == "mauve" else "bootstrap"
    if len(set(args.seeds)) != len(args.seeds):
        raise ValueError(f"--seeds: repeated seeds in {' '.join(map(str, args.seeds))}")
    if args.num_resamples < 2:
        raise ValueError(f"--num-resamples: at least 2, got {args.num_resamples}")
    for value, flag in ((args.confidence, "--confidence"), (args.level, "--level")):
        if not 0.0 < value < 1.0:
            raise ValueError(f"{flag}: expected a number strictly between 0 and 1, got {value}")


def run(args: argparse.Namespace) -> int:
    names = _names(args)
    _check_settings(args)
    check_input_file(args.references, "--references")
    for f in args.candidates:
        check_input_file(f, "--candidates")
    check_outputs(args, (("json", "--json"), ("plot", "--plot")))
    fix = ("remove them" if args.metric == "mauve" else
           "remove those lines from every file (line i of each file is item i)")
    refs = read_input_texts(args.references, "--references", command="compare", fix=fix)
    systems = {}
    for name, f in zip(names, args.candidates):
        cands = read_input_texts(f, "--candidates", command="compare", fix=fix)
        if args.metric != "mauve" and len(cands) != len(refs):
            raise ValueError(f"--candidates: {f!r} has {len(cands)} texts, the references {len(refs)} "
                             "(pair i = line i of each file)")
        systems[name] = cands

    from jaxmetrics.models import load_model

    lm = load_model(args.model, dtype=args.dtype)
    if args.metric == "mauve":
        board, cmp, signature, unit = _mauve_board(args, lm, refs, systems)
    else:
        board, cmp, signature = _similarity_board(args, lm, refs, systems)
        unit = f"{args.metric} {args.score}, mean over {len(refs)} pairs; {args.confidence:.0%} BCa intervals; paired"
    order = sorted(range(len(names)), key=lambda i: -float(cmp.scores[i]))
    beats = {a: [d.worse for d in cmp.significant(args.level) if d.better == a] for a in names}
    pct = f"{args.confidence:.0%}"
    lines = [f"{unit} {args.method} p < {args.level:g}",
             f"| rank | system | score | {pct} interval | significantly better than |",
             "|---:|---|---:|---|---|"]
    for rank, i in enumerate(order, 1):
        ci = board[names[i]]
        lines.append(f"| {rank} | {names[i]} | {ci['value']:.4f} | [{ci['low']:.4f}, {ci['high']:.4f}] | "
                     f"{', '.join(beats[names[i]]) or '-'} |")
    print("\n".join(lines))
    if args.json:
        pairs = [{"a": names[i], "b": names[j], "difference": float(cmp.difference[i, j]),
                  "low": float(cmp.low[i, j]), "high": float(cmp.high[i, j]), "p_value": float(cmp.p_value[i, j])}
                 for i in range(len(names)) for j in range(i + 1, len(names))]
        doc = {"signature": signature, "metric": args.metric, "score": "mauve" if args.metric == "mauve" else args.score,
               "num_pairs": None if args.metric == "mauve" else len(refs), "num_references": len(refs),
               "method": args.method, "num_resamples": args.num_resamples, "confidence": args.confidence,
               "level": args.level, "seed": args.seed, "model": args.model, "dtype": args.dtype,
               "systems": [{"name": names[i], "file": args.candidates[i], "rank": r, "num_candidates": len(systems[names[i]]),
                            **board[names[i]]} for r, i in enumerate(order, 1)],
               "pairs": pairs}
        if args.metric == "mauve":
            doc.update(seeds=list(cmp.seeds), num_buckets=cmp.num_buckets, pooling=args.pooling)
        write_json(args.json, doc)
    if args.plot:
        from jaxmetrics.evaluation.plot import plot_leaderboard

        plot_leaderboard({names[i]: board[names[i]] for i in order}, args.plot,
                         xlabel="MAUVE" if args.metric == "mauve" else f"{args.metric} {args.score} (mean, {pct} interval)")
    return 0


def _mauve_board(args, lm, refs, systems):
    """MAUVE of every system under shared quantizers: ``(board, comparison, signature, title)``."""
    import jax

    from jaxmetrics.mauve import compare_mauve
    from jaxmetrics.mauve.pipeline.inputs import featurize_texts, featurized_signature
    from jaxmetrics.results import make_signature

    if progress_enabled(args):
        print(f"jaxmetrics compare: featurizing the references and {', '.join(systems)}", file=sys.stderr)
    try:
        made = featurize_texts({"references": refs, **systems}, model=lm, pooling=args.pooling,
                               max_length=args.max_length, batch_size=args.batch_size, progress=progress_enabled(args))
    except ValueError as e:
        raise option_error(e, {"pooling": "--pooling", "max_length": "--max-length"}) from None
    feats = dict(made.features)
    p = feats.pop("references")
    pooling, max_length = made.pooling, made.max_length
    cmp = compare_mauve(references=p, systems=feats, key=jax.random.key(args.seed), seeds=tuple(args.seeds),
                        method=args.method, num_resamples=args.num_resamples, confidence=args.confidence)
    board = {n: {"value": float(cmp.scores[i]), "low": float(cmp.score_low[i]), "high": float(cmp.score_high[i])}
             for i, n in enumerate(cmp.names)}
    signature = featurized_signature(make_signature("compare_mauve", seeds=list(cmp.seeds), num_buckets=cmp.num_buckets),
                                     model=lm, pooling=pooling, max_length=max_length)
    title = (f"MAUVE against {len(refs)} references under one quantizer per seed ({len(cmp.seeds)}, k = "
             f"{cmp.num_buckets}), {pooling} pooling; {args.confidence:.0%} intervals from resampled rows;")
    return board, cmp, signature, title


def _similarity_board(args, lm, refs, systems):
    """Mean per-pair similarity of every system: ``(board, comparison, signature)``."""
    import jax
    import jax.numpy as jnp

    from jaxmetrics.confidence import compare_systems, confidence_interval
    from jaxmetrics.similarity import SimilaritySettings, compute_similarity

    settings = SimilaritySettings(metric=args.metric, max_length=args.max_length, batch_size=args.batch_size)
    scores, signature = {}, None
    for name, cands in systems.items():
        if progress_enabled(args):
            print(f"jaxmetrics compare: scoring {name}", file=sys.stderr)
        res = compute_similarity(references=refs, candidates=cands, model=lm, settings=settings,
                                 progress=progress_enabled(args))
        scores[name] = jnp.asarray(getattr(res, args.score), jnp.float32)
        signature = res.signature
    key = jax.random.key(args.seed)
    intervals = {name: confidence_interval(jnp.mean, s, key=jax.random.fold_in(key, i), confidence=args.confidence,
                                           num_resamples=args.num_resamples)
                 for i, (name, s) in enumerate(scores.items())}
    cmp = compare_systems(jnp.mean, scores, key=jax.random.fold_in(key, len(scores)), method=args.method,
                          num_resamples=args.num_resamples, confidence=args.confidence)
    board = {n: {k: float(getattr(ci, k)) for k in ("value", "low", "high", "standard_error")}
             for n, ci in intervals.items()}
    return board, cmp, signature
