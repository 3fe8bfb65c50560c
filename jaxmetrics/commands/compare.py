"""``jaxmetrics compare``: a leaderboard of systems scored against the same references, with
confidence intervals and paired significance: per-pair similarities (BERTScore, WMD family, ...)
through :func:`jaxmetrics.confidence.compare_systems`, or MAUVE under one shared quantizer through
:func:`jaxmetrics.mauve.compare_mauve`."""
from __future__ import annotations

import argparse
import os
import sys

from jaxmetrics.commands._util import (add_dtype_option, add_empty_option, add_pooling_option,
                                       add_progress_options, add_significance_options, check_outputs,
                                       check_significance_options, is_features, LibraryChoices,
                                       MODEL_FORMS, option_error, progress_enabled, read_input, SCORES, write_json)

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
                    "systems' rows pooled and split again) or bootstrap; its inputs are texts or, as for "
                    "'jaxmetrics mauve', .npy features [n, d] (all files of one kind; features need no --model). "
                    "With more than two systems the pairwise p-values are Holm-adjusted (step-down, family-wise "
                    "error at --alpha over all pairs); the JSON keeps the raw ones too. Prints the leaderboard and "
                    "every pair's difference with its interval and p-value; --json and --plot write them. Options "
                    "that do not apply to the --metric (--seeds and --pooling without mauve, --score with mauve) are "
                    "refused. "
                    "Every input, option and output is checked before the model is loaded.",
    )
    p.add_argument("--references", required=True, metavar="FILE",
                   help="reference texts: one per line (or .jsonl with 'text'); with --metric mauve also .npy "
                        "features [n, d]")
    p.add_argument("--candidates", required=True, nargs="+", metavar="FILE",
                   help="two or more systems' candidate texts, each with as many texts as the references (with "
                        "--metric mauve any number of texts, or .npy features)")
    p.add_argument("--names", nargs="+", default=None, metavar="NAME",
                   help="one name per candidates file (default: the file names without their extension)")
    p.add_argument("--model", default=None,
                   help=f"encoder whose token vectors are compared (featurizer for --metric mauve): {MODEL_FORMS}; "
                        "required unless the inputs are .npy features (default: none)")
    add_dtype_option(p)
    p.add_argument("--metric", default="bertscore", choices=METRICS, metavar="METRIC",
                   help="one of %(choices)s: the per-pair similarity, with its defaults as in 'jaxmetrics similarity' "
                        "(default bertscore)")
    p.add_argument("--score", default=None, choices=SCORES, metavar="SCORE",
                   help="one of %(choices)s: the per-pair score averaged over the pairs (default f1; not for mauve)")
    p.add_argument("--method", default=None, choices=LibraryChoices("jaxmetrics.confidence", "COMPARISON_METHODS"),
                   metavar="METHOD", help="one of %(choices)s: p-values by the (paired) bootstrap or by approximate randomization (default bootstrap, "
                        "randomization for mauve)")
    add_pooling_option(p)
    p.set_defaults(pooling=None)   # given without mauve: refused (the similarities pool no vectors)
    p.add_argument("--seeds", type=int, nargs="+", default=None, metavar="S",
                   help="mauve only: k-means seeds of the shared quantizers, scores averaged over them (default 25)")
    add_significance_options(p, resamples="bootstrap resamples / randomization draws",
                             alpha="a difference is significant when its p-value (Holm-adjusted with more than "
                                   "two systems) is below this")
    p.add_argument("--level", dest="alpha", type=float, default=argparse.SUPPRESS,
                   help=argparse.SUPPRESS)   # the earlier name of --alpha
    p.add_argument("--max-length", type=int, default=None,
                   help="truncation in tokens (default 512 for the similarities, 1024 for mauve, or the model's "
                        "positions when fewer)")
    p.add_argument("--batch-size", type=int, default=64, help="texts per forward pass (default 64, as similarity; speed and memory only)")
    add_empty_option(p, per_pair=True, help=(
        "what to do with an empty (blank or whitespace-only) text: 'zero' (the default for the per-pair metrics) "
        "scores a pair whose candidate is empty P = R = F1 = 0, as bert_score does, and prints how many and which "
        "lines; 'error' (the default for mauve) stops with the file and its line numbers; 'drop' (mauve only, "
        "which cannot featurize an empty text) leaves those texts out and prints how many and which lines. An "
        "empty reference of a per-pair metric is always an error"))
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


#: the options that apply to one kind of --metric only: (attribute, option, for mauve, default)
_METRIC_ONLY = (("seeds", "--seeds", True, [25]), ("pooling", "--pooling", True, "auto"), ("score", "--score", False, "f1"))


def _check_settings(args: argparse.Namespace) -> None:
    mauve = args.metric == "mauve"
    for attr, option, for_mauve, default in _METRIC_ONLY:   # an option the metric would ignore: refused
        if getattr(args, attr) is None:
            setattr(args, attr, default)
        elif for_mauve != mauve:
            what = "applies to --metric mauve only" if for_mauve else "does not apply to --metric mauve"
            raise ValueError(f"{option}: {what}; --metric {args.metric} would ignore it (drop {option})")
    if args.method is None:
        args.method = "randomization" if mauve else "bootstrap"
    if len(set(args.seeds)) != len(args.seeds):
        raise ValueError(f"--seeds: repeated seeds in {' '.join(map(str, args.seeds))}")
    from jaxmetrics import _validation as V  # imports JAX: only when a command runs

    # the library's one check (the same bounds and message as compare_systems / compare_mauve)
    check_significance_options(args)
    V.check_int(args.batch_size, "--batch-size", minimum=1)   # before the model is loaded, as every option
    if args.max_length is not None:
        V.check_int(args.max_length, "--max-length", minimum=1)


def _check_inputs(args: argparse.Namespace) -> bool:
    """--empty, --model and the kind of every input (texts, or .npy features for mauve), before
    any file is read; True when the inputs are features."""
    mauve = args.metric == "mauve"
    if args.empty is None:
        args.empty = "error" if mauve else "zero"
    if mauve and args.empty == "zero":
        raise ValueError("--empty zero: MAUVE has no per-text score to set to 0; with --metric mauve give --empty "
                         "drop (leave empty texts out, counted) or error")
    if not mauve and args.empty == "drop":
        raise ValueError(f"--empty drop: would shift the pairing of --metric {args.metric} (pair i = line i of "
                         "each file); give --empty zero (an empty candidate scores 0) or error")
    paths = [args.references, *args.candidates]
    npy = [path for path in paths if is_features(path)]
    if npy and not mauve:
        raise ValueError(f"--candidates: {npy[0]!r} is a .npy feature file; --metric {args.metric} scores pairs "
                         "of texts (.npy features are read by --metric mauve)")
    if npy and len(npy) < len(paths):
        raise ValueError("--candidates: the references and every candidates file must all be .npy feature files "
                         "or all be text files")
    features = bool(npy)
    if features and args.model is not None:
        raise ValueError("--model: not used: the inputs are .npy features (drop --model)")
    if features and args.max_length is not None:
        raise ValueError("--max-length: not used: the inputs are .npy features (drop --max-length)")
    if not features and args.model is None:
        raise ValueError("--model: required for text inputs (the encoder, or MAUVE's featurizer)")
    return features


def _read_systems(args: argparse.Namespace, names: list[str]):
    """The references and every system's candidates as :class:`~jaxmetrics.commands._util.Inputs`,
    read by the commands' one reader (texts, or features for mauve) under --empty."""
    mauve = args.metric == "mauve"
    refs = read_input(args.references, "--references", command="compare", empty=args.empty,
                      kind="set" if mauve else "reference", features=mauve)
    systems = {}
    for name, f in zip(names, args.candidates):
        cands = read_input(f, "--candidates", command="compare", empty=args.empty, kind="set" if mauve else "pair",
                           features=mauve)
        if not mauve and cands.rows != refs.rows:
            raise ValueError(f"--candidates: {f!r} has {cands.rows} texts, the references {refs.rows} "
                             "(pair i = line i of each file)")
        if cands.features is not None and cands.features.shape[1] != refs.features.shape[1]:
            raise ValueError(f"--candidates: {f!r} holds features of width {cands.features.shape[1]}, the "
                             f"references {refs.features.shape[1]}")
        systems[name] = cands
    return refs, systems


def run(args: argparse.Namespace) -> int:
    names = _names(args)
    _check_settings(args)
    features = _check_inputs(args)
    check_outputs(args, (("json", "--json"), ("plot", "--plot")))
    refs_in, systems_in = _read_systems(args, names)
    lm = None
    if not features:
        from jaxmetrics.models import load_model

        lm = load_model(args.model, dtype=args.dtype)
    if args.metric == "mauve":
        board, cmp, signature, unit = _mauve_board(args, lm, refs_in, systems_in)
    else:
        refs = refs_in.texts
        board, cmp, signature = _similarity_board(args, lm, refs, {n: s.texts for n, s in systems_in.items()})
        unit = f"{args.metric} {args.score}, mean over {len(refs)} pairs; {args.confidence:.0%} BCa intervals; paired"
    order = sorted(range(len(names)), key=lambda i: -float(cmp.scores[i]))
    beats = {a: [d.worse for d in cmp.significant(args.alpha) if d.better == a] for a in names}
    pct = f"{args.confidence:.0%}"
    adjusted = "Holm-adjusted " if cmp.correction == "holm" else ""   # more than two systems: family-wise
    lines = [f"{unit} {args.method} {adjusted}p < {args.alpha:g}",
             f"| rank | system | score | {pct} interval | significantly better than |",
             "|---:|---|---:|---|---|"]
    for rank, i in enumerate(order, 1):
        ci = board[names[i]]
        lines.append(f"| {rank} | {names[i]} | {ci['value']:.4f} | [{ci['low']:.4f}, {ci['high']:.4f}] | "
                     f"{', '.join(beats[names[i]]) or '-'} |")
    print("\n".join(lines))
    print(_pairs_table(args, cmp, names, order))
    if args.json:
        pairs = [{"a": names[i], "b": names[j], "difference": float(cmp.difference[i, j]),
                  "low": float(cmp.low[i, j]), "high": float(cmp.high[i, j]), "p_value": float(cmp.p_value[i, j]),
                  "adjusted_p_value": float(cmp.adjusted_p_value[i, j])}
                 for i in range(len(names)) for j in range(i + 1, len(names))]
        doc = {"signature": signature, "metric": args.metric, "score": "mauve" if args.metric == "mauve" else args.score,
               "num_pairs": None if args.metric == "mauve" else refs_in.rows, "num_references": refs_in.rows,
               "method": args.method, "num_resamples": args.num_resamples, "confidence": args.confidence,
               "correction": cmp.correction, "significance": "Holm-adjusted p-values" if adjusted else "p-values",
               "alpha": args.alpha, "seed": args.seed, "model": args.model, "dtype": None if features else args.dtype,
               "inputs": "features" if features else "text", "empty": args.empty,
               "empty_reference_lines": refs_in.empty_lines,
               "systems": [{"name": names[i], "file": args.candidates[i], "rank": r,
                            "num_candidates": systems_in[names[i]].rows,
                            "empty_candidate_lines": systems_in[names[i]].empty_lines,
                            **board[names[i]]} for r, i in enumerate(order, 1)],
               "pairs": pairs}
        if args.metric == "mauve":
            doc.update(seeds=list(cmp.seeds), num_buckets=cmp.num_buckets, pooling=None if features else args.pooling)
        write_json(args.json, doc)
    if args.plot:
        from jaxmetrics.evaluation.plot import plot_leaderboard

        plot_leaderboard({names[i]: board[names[i]] for i in order}, args.plot,
                         xlabel="MAUVE" if args.metric == "mauve" else f"{args.metric} {args.score} (mean, {pct} interval)")
    return 0


def _pairs_table(args: argparse.Namespace, cmp, names: list[str], order: list[int]) -> str:
    """Every pair of systems, the higher-ranked first: the difference of their scores, its interval,
    its p-value and, with more than two systems, its Holm-adjusted p-value, which decides the last
    column as it decides ``significant()`` (the table printed after the leaderboard)."""
    pct = f"{args.confidence:.0%}"
    how = "intervals from resampled rows" if args.metric == "mauve" else "paired bootstrap intervals"
    holm = cmp.correction == "holm"
    decide = "Holm-adjusted p" if holm else "p"
    lines = [f"\ndifferences (first minus second), {pct} {how}, {args.method} p-values"
             + (" (Holm-adjusted over the pairs: family-wise error at the level)" if holm else "") + ":",
             f"| first | second | difference | {pct} interval | p-value |" + (" Holm-adjusted |" if holm else "")
             + f" {decide} < {args.alpha:g} |",
             "|---|---|---:|---|---:|" + ("---:|" if holm else "") + "---|"]
    for a, i in enumerate(order):
        for j in order[a + 1:]:
            p, q = float(cmp.p_value[i, j]), float(cmp.adjusted_p_value[i, j])
            lines.append(f"| {names[i]} | {names[j]} | {float(cmp.difference[i, j]):+.4f} | "
                         f"[{float(cmp.low[i, j]):+.4f}, {float(cmp.high[i, j]):+.4f}] | {p:.4f} |"
                         + (f" {q:.4f} |" if holm else "") + f" {'yes' if q < args.alpha else 'no'} |")
    return "\n".join(lines)


def _mauve_board(args, lm, refs_in, systems_in):
    """MAUVE of every system under shared quantizers: ``(board, comparison, signature, title)``;
    ``lm`` is ``None`` for .npy features."""
    import jax

    from jaxmetrics.mauve import compare_mauve
    from jaxmetrics.mauve.pipeline.inputs import featurize_texts, featurized_signature
    from jaxmetrics.results import extend_signature

    if lm is None:
        p, feats = refs_in.features, {n: s.features for n, s in systems_in.items()}
        pooling = max_length = None
    else:
        if progress_enabled(args):
            print(f"jaxmetrics compare: featurizing the references and {', '.join(systems_in)}", file=sys.stderr)
        try:
            made = featurize_texts({"references": refs_in.texts, **{n: s.texts for n, s in systems_in.items()}},
                                   model=lm, pooling=args.pooling, max_length=args.max_length,
                                   batch_size=args.batch_size, progress=progress_enabled(args))
        except ValueError as e:
            raise option_error(e, {"pooling": "--pooling", "max_length": "--max-length"}) from None
        feats = dict(made.features)
        p = feats.pop("references")
        pooling, max_length = made.pooling, made.max_length
    cmp = compare_mauve(references=p, systems=feats, key=jax.random.key(args.seed), seeds=tuple(args.seeds),
                        method=args.method, num_resamples=args.num_resamples, confidence=args.confidence)
    board = {n: {"value": float(cmp.scores[i]), "low": float(cmp.score_low[i]), "high": float(cmp.score_high[i])}
             for i, n in enumerate(cmp.names)}
    signature = featurized_signature(extend_signature(cmp.signature, alpha=args.alpha), model=lm, pooling=pooling,
                                     max_length=max_length)
    how = "features from .npy" if lm is None else f"{pooling} pooling"
    title = (f"MAUVE against {refs_in.rows} references under one quantizer per seed ({len(cmp.seeds)}, k = "
             f"{cmp.num_buckets}), {how}; {args.confidence:.0%} intervals from resampled rows;")
    return board, cmp, signature, title


def _similarity_board(args, lm, refs, systems):
    """Mean per-pair similarity of every system: ``(board, comparison, signature)``."""
    import warnings

    import jax
    import jax.numpy as jnp

    from jaxmetrics.confidence import compare_systems, confidence_interval
    from jaxmetrics.results import extend_signature, parse_signature
    from jaxmetrics.similarity import SimilaritySettings, compute_similarity

    settings = SimilaritySettings(metric=args.metric, max_length=args.max_length, batch_size=args.batch_size)
    scores, signature = {}, None
    for name, cands in systems.items():
        if progress_enabled(args):
            print(f"jaxmetrics compare: scoring {name}", file=sys.stderr)
        with warnings.catch_warnings():   # the empty candidates were reported by their lines when read
            warnings.filterwarnings("ignore", message=r"candidates: \d+ of \d+ texts are empty")
            res = compute_similarity(references=refs, candidates=cands, model=lm, settings=settings,
                                     progress=progress_enabled(args))
        scores[name] = jnp.asarray(getattr(res, args.score), jnp.float32)
        signature = res.signature
    key = jax.random.key(args.seed)
    # one key for every system: the same draws of the pairs (paired, as the differences are), so two
    # systems with the same scores get the same interval, the one `jaxmetrics similarity --confidence --seed`
    # gives for that score with the same settings
    intervals = {name: confidence_interval(jnp.mean, s, key=key, confidence=args.confidence,
                                           num_resamples=args.num_resamples)
                 for name, s in scores.items()}
    cmp = compare_systems(jnp.mean, scores, key=jax.random.fold_in(key, len(scores)), method=args.method,
                          num_resamples=args.num_resamples, confidence=args.confidence)
    board = {n: {k: float(getattr(ci, k)) for k in ("value", "low", "high", "standard_error")}
             for n, ci in intervals.items()}
    # the similarity's signature, and how the leaderboard resampled it (its keys all come from --seed)
    compared = {k: v for k, v in parse_signature(cmp.signature).items()
                if k in ("method", "num_resamples", "confidence", "correction")}
    signature = extend_signature(signature, comparison="compare-systems", interval="bca", score=args.score,
                                 seed=args.seed, alpha=args.alpha, **compared)
    return board, cmp, signature
