"""``jaxmetrics mauve``: MAUVE between a references file (human text, P) and a candidates file
(model text, Q): two text files featurized with ``--model``, or two ``.npy`` feature files.

Every option is parsed and range-checked, both inputs are read and MAUVE's minimum sizes are
checked before the model is loaded; ``--json`` records the scores, the divergence curves, both
sample sizes, the seeds and every setting (pooling and model included)."""
from __future__ import annotations

import argparse
import importlib
import sys

from jaxmetrics.commands._util import (add_confidence_options, add_dtype_option, add_empty_option,
                                       add_model_option, add_pooling_option, add_progress_options,
                                       check_confidence_options, check_outputs, is_features, LibraryChoices,
                                       option_error, progress_enabled, read_input, write_json)
from jaxmetrics._files import check_input_file, text_line_numbers

#: mauve-text's seed.
DEFAULT_SEEDS = (25,)
#: k-means seeds of ``--explain`` when one seed is given: that seed and the next ones.
EXPLAIN_SEEDS = 5
#: characters of a text printed by ``--explain`` (the JSON keeps it whole)
EXPLAIN_WIDTH = 100
#: ``--estimator``'s choices: :func:`jaxmetrics.mauve.frontier.estimators.available_estimators`
ESTIMATORS = LibraryChoices("jaxmetrics.mauve.frontier.estimators", "available_estimators")
#: ``--divergence``'s choices: :data:`jaxmetrics.mauve.frontier.divergences.DIVERGENCES`
DIVERGENCES = LibraryChoices("jaxmetrics.mauve.frontier.divergences", "DIVERGENCES")
#: Options that apply to ``--estimator quantized`` only, with their defaults (given otherwise: an error).
QUANTIZED_ONLY = (("num_buckets", "--num-buckets", None),
                  ("kmeans_explained_var", "--kmeans-explained-var", 0.9),
                  ("kmeans_num_redo", "--kmeans-num-redo", 5), ("kmeans_max_iter", "--kmeans-max-iter", 500),
                  ("pca_max_data", "--pca-max-data", -1), ("explain", "--explain", None))


def add_mauve_options(p: argparse.ArgumentParser, *, seeds: tuple[int, ...], sweep: bool = False) -> None:
    """The options ``mauve`` and ``mauve-sweep`` share (featurizer, k-means, seeds), each help with its default."""
    add_model_option(p, "featurizer for text files (default gpt2-large, mauve-text's)", default="gpt2-large")
    add_dtype_option(p)
    add_pooling_option(p)
    p.add_argument("--max-length", type=int, default=None, metavar="TOKENS",
                   help="featurizer truncation in tokens, first tokens kept (default: 1024, "
                   "mauve-text's, or the model's positions if fewer)" + (" (not for --over length)" if sweep else ""))
    p.add_argument("--batch-size", type=int, default=8, help="texts per featurizer forward pass (default 8, as featurize: texts of up to 1024 tokens; speed "
                        "and memory only)")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="feature cache folder: an interrupted run resumes where it stopped (default: none)"
                   + (" (not for --over length)" if sweep else ""))
    p.add_argument("--num-buckets", default=None, metavar="K",
                   help="'auto' (max(2, round(n/10)), mauve-text's) or an integer >= 2 (default auto)"
                   + (" (not for --over k)" if sweep else ""))
    p.add_argument("--kmeans-explained-var", type=float, default=0.9,
                   help="PCA keeps the components explaining this fraction of the variance, in (0, 1) (default 0.9)")
    p.add_argument("--kmeans-num-redo", type=int, default=5, help="k-means restarts, the best kept (default 5)")
    p.add_argument("--kmeans-max-iter", type=int, default=500, help="Lloyd iterations per restart at most (default 500)")
    p.add_argument("--mauve-scaling-factor", type=float, default=None, metavar="C",
                   help="the constant c >= 1 of exp(-c KL) (below 1 texts with nothing in common score above "
                   "1/2) (default 5)" + (" (not for --over c)" if sweep else ""))
    p.add_argument("--seeds", type=int, nargs="+", default=list(seeds), metavar="S",
                   help="k-means seeds, an explicit list of integers; mean and s.d. over them when there are "
                   f"several (default {' '.join(map(str, seeds))}" + (": mauve-text's seed)" if seeds == (25,) else ")"))
    add_empty_option(p, per_pair=False, what="MAUVE")


def add_estimator_options(p: argparse.ArgumentParser, *, prefix: str = "--",
                          without: str = "no MAUVE*, FI*, --num-buckets, k-means options or --explain") -> None:
    """``--estimator`` and ``--divergence`` (the MAUVE family: ``compute_mauve(estimator=, divergence=)``);
    ``prefix='--mauve-'`` names them ``--mauve-estimator`` / ``--mauve-divergence``, ``without`` says
    what a density-ratio estimator does not give in that command."""
    p.add_argument(f"{prefix}estimator", choices=ESTIMATORS, metavar="ESTIMATOR", default="quantized",
                   help="how the divergence frontier is estimated: quantized (k-means histograms, "
                   "mauve-text's numbers) or a density-ratio estimator, knn, classifier or gaussian, keyed by "
                   f"each seed ({without}) (default quantized)")
    p.add_argument(f"{prefix}divergence", choices=DIVERGENCES, metavar="DIVERGENCE", default="kl",
                   help="the f-divergence whose frontier MAUVE (and MAUVE*) summarises: kl (MAUVE as "
                   "published), chi2, hellinger, tv or js; the frontier integrals stay KL-based (default kl)")


def check_estimator_options(args: argparse.Namespace) -> None:
    """With a density-ratio ``--estimator``, an option of the k-means pipeline is an error naming
    both options (it would be ignored); so is ``--explain`` with a ``--divergence`` other than kl
    (its influences are those of the KL MAUVE*)."""
    est = getattr(args, "estimator", "quantized")
    if est != "quantized":
        for name, option, default in QUANTIZED_ONLY:
            value = getattr(args, name, default)
            if value != default and not (name == "num_buckets" and value == "auto"):
                raise ValueError(f"{option}: applies to --estimator quantized only, not to --estimator {est} "
                                 "(a density-ratio estimator has no buckets, k-means or MAUVE*)")
    if getattr(args, "explain", None) is not None and getattr(args, "divergence", "kl") != "kl":
        raise ValueError(f"--explain: ranks the samples by their influence on the KL MAUVE*; not available "
                         f"with --divergence {args.divergence}")


def check_estimator_sizes(estimator: str, n_ref: int, n_cand: int, cand_option: str = "--candidates") -> None:
    """The fewest rows a density-ratio ``estimator`` (its default settings) takes, checked before
    any featurization: a ``ValueError`` naming ``--estimator`` and the sizes."""
    from jaxmetrics.mauve.frontier.estimators import get_estimator

    est = get_estimator(estimator)
    sizes = f"--references has {n_ref} and {cand_option} {n_cand}"
    if min(n_ref, n_cand) < 2:
        raise ValueError(f"--estimator {estimator}: needs at least 2 rows on each side; {sizes}")
    k = getattr(est, "k", None)   # k-NN: k neighbours among the n_p + n_q - 1 other rows
    if isinstance(k, int) and n_ref + n_cand - 1 < k:
        raise ValueError(f"--estimator {estimator}: its {k} neighbours need more than {k} rows in all; {sizes}")
    folds = getattr(est, "num_folds", None)   # cross-fitting: a row of each side in every fold
    if isinstance(folds, int) and min(n_ref, n_cand) < folds:
        raise ValueError(f"--estimator {estimator}: its {folds} cross-fitting folds need at least {folds} rows "
                         f"on each side; {sizes}")


#: The library arguments whose checks ``mauve`` / ``mauve-sweep`` reuse, and the options that set them.
OPTION_NAMES = {"num_buckets": "--num-buckets", "kmeans_explained_var": "--kmeans-explained-var",
                "kmeans_num_redo": "--kmeans-num-redo", "kmeans_max_iter": "--kmeans-max-iter",
                "pca_max_data": "--pca-max-data", "scaling": "--mauve-scaling-factor",
                "mauve_scaling_factor": "--mauve-scaling-factor",
                "num_points": "--divergence-curve-discretization-size",
                "divergence_curve_discretization_size": "--divergence-curve-discretization-size"}


def check_mauve_options(args: argparse.Namespace) -> None:
    """Parse and range-check the shared options of ``mauve`` / ``mauve-sweep`` (nothing loaded):
    errors name the option. The bounds are the library's own checks (``KMeansQuantizer``,
    ``FrontierSettings``, :mod:`jaxmetrics.mauve.sizes`), so the command refuses exactly what
    ``compute_mauve`` refuses, with the same message. Sets ``args.num_buckets`` to ``'auto'`` or an ``int``."""
    from jaxmetrics import _validation as V  # imports JAX: only when a command runs
    from jaxmetrics.mauve import FrontierSettings, KMeansQuantizer
    from jaxmetrics.mauve.sizes import check_num_buckets

    if len(set(args.seeds)) != len(args.seeds):
        raise ValueError(f"--seeds: repeated seeds in {' '.join(map(str, args.seeds))}")
    nb = "auto" if args.num_buckets is None else args.num_buckets
    if nb != "auto":
        try:
            nb = int(nb)
        except ValueError:
            raise ValueError(f"--num-buckets: expected 'auto' or an integer >= 2, got {nb!r}") from None
    try:
        if nb != "auto":
            check_num_buckets(nb)
        KMeansQuantizer("auto", explained_var=args.kmeans_explained_var, num_redo=args.kmeans_num_redo,
                        max_iter=args.kmeans_max_iter, pca_max_data=getattr(args, "pca_max_data", -1))
        FrontierSettings.resolve(None, scaling=args.mauve_scaling_factor,
                                 num_points=getattr(args, "divergence_curve_discretization_size", None))
    except (TypeError, ValueError) as e:
        raise option_error(e, OPTION_NAMES) from None
    args.num_buckets = nb
    V.check_int(args.batch_size, "--batch-size", minimum=1)
    if args.max_length is not None:
        V.check_int(args.max_length, "--max-length", minimum=1)
    if args.cache_dir is not None:
        from jaxmetrics.models.cache import check_writable_dir  # a path check; no model code runs

        check_writable_dir(args.cache_dir, "--cache-dir")


def check_sizes(args: argparse.Namespace, n_ref: int, n_cand: int, cand_option: str = "--candidates",
                num_buckets=None, buckets_option: str = "--num-buckets") -> int:
    """MAUVE's minimum sizes (:mod:`jaxmetrics.mauve.sizes`) for ``n_ref`` / ``n_cand`` rows, before
    any featurization: the number of buckets (``num_buckets``, else ``--num-buckets``), or a
    ``ValueError`` naming the option (``buckets_option`` for a number of buckets given)."""
    from jaxmetrics.mauve.sizes import resolve_num_buckets

    nb = args.num_buckets if num_buckets is None else num_buckets
    try:
        return resolve_num_buckets(nb, (n_ref, n_cand), ("--references", cand_option), warn=False)
    except ValueError as e:
        raise option_error(e, {"num_buckets": buckets_option}) from None


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mauve",
        help="MAUVE between reference (human) and candidate (model) texts or features",
        description="MAUVE (Pillutla et al. 2021) with mauve-text's defaults. P is the references "
        "(human text), Q the candidates (model text). Each file is either a text file (one text per "
        "line, or .jsonl with a 'text' field), featurized with --model, or a .npy array of features "
        "[n, d]; the extension decides, and both files must be of the same kind. --pooling decides "
        "how a text becomes a vector: by default an encoder (BERT, RoBERTa, MiniLM) is mean-pooled over "
        "its tokens and a decoder (GPT-2, Llama) gives its last token's hidden state, the table "
        "compute_mauve(model=...) follows in Python, so both give one number; mauve-text takes the last "
        "token for every model (--pooling last, as compute_mauve(featurize_model_name=...)). The pooling "
        "used is printed on stderr and written in --json and its signature. An empty (blank) line of a text "
        "file stops the run with the file and its line numbers unless --empty drop leaves it out (the count "
        "and the lines are printed). Every option and both inputs are checked before the model is loaded. With a "
        "density-ratio --estimator that cannot tell the two samples apart (its out-of-sample log ratios do not "
        "rank the references above the candidates, one-sided 5 %), a line 'indistinguishable at this n: ...' "
        "follows the scores and --json has \"indistinguishable\": true with the note.",
    )
    p.add_argument("--references", required=True, metavar="FILE",
                   help="human texts (P): .txt / .jsonl, or .npy features [n_p, d]")
    p.add_argument("--candidates", required=True, metavar="FILE",
                   help="model texts (Q): .txt / .jsonl, or .npy features [n_q, d]")
    add_mauve_options(p, seeds=DEFAULT_SEEDS)
    add_estimator_options(p)
    p.add_argument("--pca-max-data", type=int, default=-1,
                   help="rows used to fit the PCA, -1 for all; a subsample needs at least the feature dimension + 1 "
                   "rows (fewer span too few directions) (default -1)")
    p.add_argument("--divergence-curve-discretization-size", type=int, default=25,
                   help="interior points of the divergence curve, at least 3 (with fewer the curve is its two end "
                   "segments) (default 25)")
    p.add_argument("--plot", metavar="PATH", help="write the divergence curve figure here (.png/.pdf) (default: none)")
    p.add_argument("--explain", type=int, default=None, metavar="N",
                   help="also list the N generations that pull MAUVE down most and the N human texts the model "
                   "covers least, by the line of the input file (from 1, as an editor numbers it) with their "
                   "text: each sample's influence dMAUVE*/dw_i (mauve_attribution), averaged over "
                   f"the --seeds, or over {EXPLAIN_SEEDS} seeds from the one given (then its MAUVE* is that "
                   "mean, not the one seed's of the line above: both are printed) (default: off)")
    for side, flag in (("references", "--references-text"), ("candidates", "--candidates-text")):
        p.add_argument(flag, default=None, metavar="FILE",
                       help=f"with .npy --{side} and --explain: the text file the features were made from (one "
                       "text per feature row, in order; blank lines are skipped when the file has exactly one "
                       "non-empty text per row), so that --explain shows each text and its line (default: rows "
                       "only)")
    add_confidence_options(p, seed=False, what=(
        "MAUVE and the frontier integral their confidence interval, as compute_mauve_seeds(confidence=LEVEL): "
        "the rows of both sides resampled (bootstrap, keyed by the first seed) combined with the spread "
        "over --seeds, for MAUVE's value at these sample sizes (docs/intervals.md); give three seeds or more "
        "(with one the k-means spread is not measured and the interval is too narrow); --estimator quantized "
        "and --divergence kl only"))
    p.add_argument("--json", dest="json_out", metavar="PATH",
                   help="write the signature, scores, curves, sample sizes, seeds and settings (and, with "
                        "--confidence, the intervals) as JSON here (default: none)")
    add_progress_options(p)
    p.set_defaults(func=run)


def _check_confidence(args: argparse.Namespace) -> None:
    """``--confidence`` and ``--num-resamples``, before any work: the interval needs the k-means
    histograms and the KL frontier; one seed is a warning (the k-means spread is not measured)."""
    import warnings

    check_confidence_options(args)
    if args.confidence is None:
        return
    if args.estimator != "quantized":
        raise ValueError(f"--confidence: intervals resample the k-means histograms: --estimator quantized only, "
                         f"not --estimator {args.estimator}")
    if args.divergence != "kl":
        raise ValueError(f"--confidence: intervals are for --divergence kl, not --divergence {args.divergence}")
    if len(args.seeds) == 1:
        warnings.warn("--confidence with one seed: the interval leaves out the spread over k-means seeds and is "
                      "too narrow (83 % coverage for a nominal 95 %); give three --seeds or more", UserWarning)


def _interval_line(rec: dict) -> str:
    """The line ``--confidence`` adds: the intervals of MAUVE and of the frontier integral."""
    m, fi = rec["mauve_interval"], rec["frontier_integral_interval"]
    seeds = len(rec["seeds"])
    return (f"{m['confidence']:.0%} interval: MAUVE [{m['low']:.4f}, {m['high']:.4f}]  FI [{fi['low']:.4f}, "
            f"{fi['high']:.4f}]  (rows resampled {m['num_resamples']} times, with the spread over {seeds} "
            f"seed{'s' if seeds > 1 else ''})")


def _check_files(args: argparse.Namespace) -> bool:
    """Check both inputs, the texts beside features and every output before any work; True when
    the inputs are features."""
    ref, cand = args.references, args.candidates
    if is_features(ref) != is_features(cand):
        raise ValueError(f"--candidates: {cand!r} and --references {ref!r} must both be .npy feature files "
                         "or both be text files")
    features = is_features(ref)
    for name, path in (("--references", ref), ("--candidates", cand)):
        check_input_file(path, name, text=not features)
    for side in ("references", "candidates"):
        path = getattr(args, f"{side}_text", None)
        if path is None:
            continue
        flag = f"--{side}-text"
        if not features:
            raise ValueError(f"{flag}: only with .npy features (the texts of a text file are its lines)")
        if args.explain is None:
            raise ValueError(f"{flag}: only with --explain (the texts are shown beside the ranked rows)")
        check_input_file(path, flag)
    check_outputs(args, (("json_out", "--json"), ("plot", "--plot")))
    return features


def texts_beside(path: str, option: str, rows: int, features_path: str) -> tuple[list[str], list[int]]:
    """``(texts, lines)`` of the text file ``path`` for the ``rows`` feature rows of ``features_path``:
    one text per row in order, either every text of the file or, when the file has exactly one
    non-empty text per row, its non-empty ones (a featurizer that skipped blank lines); ``lines``
    are their 1-based lines. Any other count is a ``ValueError`` naming ``option``."""
    from jaxmetrics.models.io import read_texts

    texts, lines = read_texts(path, name=option), text_line_numbers(path)
    if len(texts) == rows:
        return texts, lines
    kept = [(ln, t) for ln, t in zip(lines, texts) if t.strip()]
    if len(kept) == rows:
        return [t for _, t in kept], [ln for ln, _ in kept]
    raise ValueError(f"{option}: {path!r} holds {len(texts)} texts ({len(kept)} non-empty) for the {rows} feature "
                     f"rows of {features_path!r}: give the text file the features were made from (one text per row)")


def models_module(option: str = "--model"):
    """``jaxmetrics.models``, or a ``ValueError`` naming ``option`` when it cannot be used."""
    try:
        models = importlib.import_module("jaxmetrics.models")
        for attr in ("read_texts", "load_model", "resolve_pooling", "encode"):
            if not hasattr(models, attr):
                raise ImportError(f"jaxmetrics.models has no {attr}")
    except ImportError as e:
        raise ValueError(f"{option}: featurizing text files needs jaxmetrics.models ({e})") from e
    return models


def featurize_with(args: argparse.Namespace, lm, texts: dict, *, command: str):
    """:func:`jaxmetrics.mauve.pipeline.inputs.featurize_texts` of ``texts`` with the loaded ``lm``
    and the command's ``--pooling``, ``--max-length``, ``--batch-size``, ``--cache-dir`` and
    progress options, after one status line on stderr naming the featurizer, pooling and length."""
    from jaxmetrics.mauve.pipeline.inputs import MAUVE_MAX_LENGTH, featurize_texts

    models = models_module()
    try:
        pooling = models.resolve_pooling(lm, args.pooling, name="--pooling")
        max_length = models.check_max_length(lm, args.max_length, MAUVE_MAX_LENGTH, name="--max-length")
        auto = ("; --pooling auto: the library's table, last token for a decoder, mean for a sentence encoder, "
                "as compute_mauve(model=...)") if args.pooling == "auto" else ""
        print(f"jaxmetrics {command}: featurizing with {args.model}: {pooling} pooling"
              f"{' (--pooling auto)' if args.pooling == 'auto' else ''}, max length {max_length} tokens{auto}",
              file=sys.stderr, flush=True)
        return featurize_texts(texts, model=lm, pooling=pooling, max_length=max_length, batch_size=args.batch_size,
                               cache_dir=args.cache_dir, progress=progress_enabled(args))
    except ValueError as e:
        raise option_error(e, {"pooling": "--pooling", "max_length": "--max-length"}) from None


def _seeds_options(kw: dict, family: dict) -> dict:
    """compute_mauve_seeds's keywords for compute_mauve's (mauve-text's names): the sets as
    references / candidates, the frontier as one settings object, the k-means settings as the
    quantizer (the histogram estimator only)."""
    from jaxmetrics.mauve import FrontierSettings, KMeansQuantizer

    out = dict(references=kw["p_features"], candidates=kw["q_features"], num_buckets=kw["num_buckets"],
               estimator=family["estimator"],
               frontier=FrontierSettings(scaling=kw["mauve_scaling_factor"],
                                         num_points=kw["divergence_curve_discretization_size"],
                                         divergence=family["divergence"]))
    if family["estimator"] == "quantized":
        out["quantizer"] = KMeansQuantizer("auto", explained_var=kw["kmeans_explained_var"],
                                           num_redo=kw["kmeans_num_redo"], max_iter=kw["kmeans_max_iter"],
                                           pca_max_data=kw["pca_max_data"])
    return out


def settings(args: argparse.Namespace, features: bool, pooling, max_length) -> dict:
    """Every setting of a MAUVE run, for ``--json``."""
    out = dict(inputs="features" if features else "text", model=None if features else args.model,
               dtype=None if features else args.dtype, pooling=pooling, max_length=max_length, batch_size=None if features else args.batch_size,
               num_buckets=args.num_buckets, kmeans_explained_var=args.kmeans_explained_var,
               kmeans_num_redo=args.kmeans_num_redo, kmeans_max_iter=args.kmeans_max_iter,
               mauve_scaling_factor=5.0 if args.mauve_scaling_factor is None else args.mauve_scaling_factor,
               seeds=list(args.seeds), quantizer="kmeans", scoring="mauve-text")
    for name in ("pca_max_data", "divergence_curve_discretization_size"):
        if hasattr(args, name):
            out[name] = getattr(args, name)
    if not features and hasattr(args, "empty"):   # what was done with empty lines of the text files
        out["empty"] = args.empty
    if hasattr(args, "estimator"):
        out.update(estimator=args.estimator, divergence=args.divergence)
        if args.estimator != "quantized":   # the k-means pipeline's settings did not apply
            out.update({name: None for name, _, _ in QUANTIZED_ONLY if name in out}, quantizer=None)
    return out


def _result(out, seeds: tuple, n_ref: int, n_cand: int, conf: dict) -> dict:
    """The ``--json`` record of one ``compute_mauve`` (one seed) or ``compute_mauve_seeds`` result."""
    import numpy as np

    one = len(seeds) == 1
    # a density-ratio estimator has no histograms (its details have no mauve_star): None in the record
    per = {f: None if getattr(out, f, None) is None else np.atleast_1d(np.asarray(getattr(out, f), np.float64))
           for f in ("mauve", "mauve_star", "frontier_integral", "frontier_integral_star")}
    curves = np.asarray(out.divergence_curve, np.float64).reshape(len(seeds), -1, 2)
    rec = {}
    for f, v in per.items():
        rec[f] = None if v is None else float(v[0]) if one else float(v.mean())
        rec[f"{f}_std"] = None if one or v is None else float(v.std(ddof=1))
    for f, v in per.items():
        rec[f"{f}_per_seed"] = None if v is None else [float(x) for x in v]
    rec.update(estimator=out.estimator, divergence=out.divergence, indistinguishable=out.indistinguishable,
               note=out.note or None)
    k = getattr(out, "num_buckets", None)
    rec.update(seeds=list(seeds), num_buckets=None if k is None else int(k),
               num_references=int(n_ref),
               num_candidates=int(n_cand), divergence_curve=curves.tolist(), settings=conf)
    return rec


def _explain(args: argparse.Namespace, p, q, sides: dict, seeds: tuple, kw: dict, rec: dict) -> dict:
    """``--explain N``: the ranked generations and human texts (printed, and returned for ``--json``).
    ``sides``: ``{'p': (texts or None, lines or None), 'q': ...}``, each row's text and 1-based line of
    its file; ``rec``: the summary line's record, whose MAUVE* the header relates its own to."""
    from jaxmetrics.mauve import mauve_attribution

    att_seeds = seeds if len(seeds) > 1 else tuple(seeds[0] + i for i in range(EXPLAIN_SEEDS))
    if progress_enabled(args):
        print(f"jaxmetrics mauve: influences over {len(att_seeds)} k-means seeds", file=sys.stderr)
    from jaxmetrics.mauve import KMeansQuantizer

    quant = KMeansQuantizer(check_sizes(args, len(p), len(q)), explained_var=kw["kmeans_explained_var"],
                            num_redo=kw["kmeans_num_redo"], max_iter=kw["kmeans_max_iter"],
                            pca_max_data=kw["pca_max_data"])
    att = mauve_attribution(references=p, candidates=q, seeds=att_seeds, quantizer=quant,
                            scaling=kw["mauve_scaling_factor"], num_points=kw["divergence_curve_discretization_size"])
    ranked = {}
    for side in ("q", "p"):
        texts, lines = sides[side]
        rows = [r.to_dict() for r in att.ranked(side, args.explain, texts=texts)]
        for r in rows:
            r["line"] = None if lines is None else lines[r["index"]]
            if texts is None:   # features without their texts: rows only
                r.pop("text")
        ranked[side] = rows
    print("\n" + explain_header(float(att.mauve), att_seeds, rec))
    for side, title, option in (("q", "Generations that pull MAUVE down most", "--candidates"),
                                ("p", "Human texts the model covers least", "--references")):
        where = "line" if sides[side][1] is not None else "row"
        print(f"{title} ({option}; {where}: " + ("the line of its text file, from 1" if where == "line"
                                                 else "the row of the .npy features, from 1") + "):")
        for rank, row in enumerate(ranked[side], 1):
            text = row.get("text")
            shown = "" if text is None else "  " + (text if len(text) <= EXPLAIN_WIDTH
                                                     else text[:EXPLAIN_WIDTH - 3] + "...")
            at = row["line"] if row["line"] is not None else row["index"] + 1
            print(f"  {rank:>3}. {where} {at:<6} {row['influence']:+.3e}{shown}")
    return {"mauve_star": float(att.mauve), "seeds": list(att_seeds),
            "temperature": [float(t) for t in att.temperature], "candidates": ranked["q"], "references": ranked["p"]}


def explain_header(mauve_star: float, att_seeds: tuple, rec: dict) -> str:
    """The first line of ``--explain``: the MAUVE* whose influences are listed, related to the
    summary line's (``rec``): the same quantity over the same seeds, or, when the summary used one
    seed and the influences several, both values, each labelled with its seeds."""
    seeds = " ".join(map(str, att_seeds))
    head = "Influence of one more copy of a sample on MAUVE*; negative pulls it down. "
    if list(att_seeds) == list(rec["seeds"]):
        which = "the mean over the seeds" if len(att_seeds) > 1 else "seed"
        return head + f"MAUVE* {mauve_star:.4f} ({which} {seeds}, as in the line above)."
    return head + (f"MAUVE* {mauve_star:.4f} is the mean over the k-means seeds {seeds}, which steadies the "
                   f"ranking; the line above, MAUVE* {rec['mauve_star']:.4f}, is seed {rec['seeds'][0]} alone.")


def _score_line(rec: dict, n_ref: int, n_cand: int, how: str) -> str:
    """The one line ``mauve`` prints: MAUVE, MAUVE*, FI, FI* (one seed) or MAUVE, MAUVE* ± s.d.
    (several); MAUVE and FI only for a density-ratio estimator; the estimator and the divergence
    named when they are not the defaults."""
    quantized = rec["estimator"] == "quantized"
    n_seeds = len(rec["seeds"])
    extra = ("" if quantized else f"estimator {rec['estimator']}, ") + (
        "" if rec["divergence"] == "kl" else f"divergence {rec['divergence']}, ")
    where = (f"k = {rec['num_buckets']}, " if quantized else "") + extra + f"n = {n_ref} / {n_cand}{how}"
    if n_seeds == 1:
        fields = ("mauve", "mauve_star", "frontier_integral", "frontier_integral_star") if quantized else (
            "mauve", "frontier_integral")
        names = {"mauve": "MAUVE", "mauve_star": "MAUVE*", "frontier_integral": "FI", "frontier_integral_star": "FI*"}
        return "  ".join(f"{names[f]} {rec[f]:.4f}" for f in fields) + f"  ({where})"
    second = ("mauve_star", "MAUVE*") if quantized else ("frontier_integral", "FI")
    return (f"MAUVE {rec['mauve']:.4f} +- {rec['mauve_std']:.4f}  {second[1]} {rec[second[0]]:.4f} +- "
            f"{rec[second[0] + '_std']:.4f}  over {n_seeds} seeds ({where})")


def run(args: argparse.Namespace) -> int:
    check_mauve_options(args)
    check_estimator_options(args)
    _check_confidence(args)
    if args.explain is not None and args.explain < 1:
        raise ValueError(f"--explain: expected a number of samples >= 1, got {args.explain}")
    features = _check_files(args)
    if not features:
        models_module()   # text files need the model code
    p_src, q_src = (read_input(path, name, command="mauve", empty=args.empty, features=True)
                    for path, name in ((args.references, "--references"), (args.candidates, "--candidates")))
    if features:
        p_in, q_in = p_src.features, q_src.features
        if p_in.shape[1] != q_in.shape[1]:
            raise ValueError(f"--candidates: features of width {q_in.shape[1]}, --references {p_in.shape[1]}")
    else:
        p_in, q_in = p_src.texts, q_src.texts
    sides = {side: (None if features else src.texts, None if features else src.lines)
             for side, src in (("p", p_src), ("q", q_src))}
    for side, src, name in (("p", p_src, "references"), ("q", q_src, "candidates")):
        beside = getattr(args, f"{name}_text", None)
        if beside is not None:
            sides[side] = texts_beside(beside, f"--{name}-text", src.rows, src.path)
    n_ref, n_cand = len(p_in), len(q_in)
    if args.estimator == "quantized":  # before the model is loaded
        check_sizes(args, n_ref, n_cand)
        if features:  # the PCA subsample against the features' dimension (text: once featurized)
            from jaxmetrics import _validation as V

            V.check_pca_max_data(args.pca_max_data, "--pca-max-data", num_rows=n_ref + n_cand, dim=p_in.shape[1])
    else:
        check_estimator_sizes(args.estimator, n_ref, n_cand)
    pooling = max_length = None
    if features:
        p, q = p_in, q_in
    else:
        lm = models_module().load_model(args.model, dtype=args.dtype)
        made = featurize_with(args, lm, {"p": p_in, "q": q_in}, command="mauve")
        pooling, max_length = made.pooling, made.max_length
        p, q = made.features["p"], made.features["q"]
    from jaxmetrics.mauve import compute_mauve, compute_mauve_seeds, plot_divergence_curves

    seeds = tuple(args.seeds)
    kw = dict(p_features=p, q_features=q, num_buckets=args.num_buckets, pca_max_data=args.pca_max_data,
              kmeans_explained_var=args.kmeans_explained_var, kmeans_num_redo=args.kmeans_num_redo,
              kmeans_max_iter=args.kmeans_max_iter,
              divergence_curve_discretization_size=args.divergence_curve_discretization_size,
              mauve_scaling_factor=5.0 if args.mauve_scaling_factor is None else args.mauve_scaling_factor)
    if progress_enabled(args):
        print("jaxmetrics mauve: " + ("quantizing and computing MAUVE" if args.estimator == "quantized" else
                                      f"estimating density ratios ({args.estimator}) and computing MAUVE"),
              file=sys.stderr)
    family = dict(estimator=args.estimator, divergence=args.divergence)
    import warnings

    from jaxmetrics.mauve.frontier.estimate import IndistinguishableWarning

    interval = {} if args.confidence is None else dict(confidence=args.confidence, num_resamples=args.num_resamples)
    try:
        with warnings.catch_warnings():   # said on stdout below, beside the value it qualifies
            warnings.simplefilter("ignore", IndistinguishableWarning)
            out = (compute_mauve(**kw, **family, seed=seeds[0]) if len(seeds) == 1 and not interval
                   else compute_mauve_seeds(**_seeds_options(kw, family), seeds=seeds, **interval))
    except ValueError as e:   # a bound that needs the features (--pca-max-data) names the option
        raise option_error(e, OPTION_NAMES) from None
    rec = _result(out, seeds, n_ref, n_cand, {**settings(args, features, pooling, max_length), **interval})
    if interval:
        rec.update(mauve_interval=out.mauve_interval.to_dict(),
                   frontier_integral_interval=out.frontier_integral_interval.to_dict(),
                   sampling_standard_error=float(out.sampling_standard_error))
    rec.update(empty_reference_lines=p_src.empty_lines, empty_candidate_lines=q_src.empty_lines)
    from jaxmetrics.mauve.pipeline.inputs import featurized_signature

    rec = {"signature": featurized_signature(out.signature, model=None if features else lm, pooling=pooling,
                                             max_length=max_length), **rec}
    print(_score_line(rec, n_ref, n_cand, "" if pooling is None else f", {pooling} pooling"))
    if interval:
        print(_interval_line(rec))
    if out.indistinguishable:   # a density-ratio estimator that saw no difference: the value says nothing
        print(out.note)
    if args.explain is not None:
        rec["explain"] = _explain(args, p, q, sides, seeds, kw, rec)
    if args.plot:
        import numpy as np

        plot_divergence_curves({f"seed {s}": np.asarray(c) for s, c in zip(seeds, rec["divergence_curve"])}
                               if len(seeds) > 1 else {"references vs candidates": np.asarray(rec["divergence_curve"][0])},
                               args.plot)
    if args.json_out:
        write_json(args.json_out, rec)
    return 0
