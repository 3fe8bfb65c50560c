"""``jaxmetrics mauve-sweep``: MAUVE (mean ± s.d. over k-means seeds) of one or more candidate
files against a references file, along one setting: sample size, text length, k, c or quantizer."""
from __future__ import annotations

import argparse
import os
import sys

from jaxmetrics.commands._util import (add_progress_options, check_outputs, is_features, LibraryChoices,
                                       load_features, progress_enabled, read_input, write_json)
from jaxmetrics._files import check_input_file
from jaxmetrics.commands.mauve import (ESTIMATORS, add_mauve_options, check_estimator_options, check_estimator_sizes,
                                       check_mauve_options, check_sizes, featurize_with,
                                       models_module, settings)

#: ``--over``: the settings of :func:`jaxmetrics.mauve.mauve_sweep`, and ``length`` (:func:`jaxmetrics.mauve.mauve_length_sweep`)
_OVER = LibraryChoices("jaxmetrics.mauve.analysis.sweep_stages", "SWEEP_AXES", after=("length",))
#: The settings a density-ratio ``--estimator`` is swept over (``mauve_sweep(estimator=...)``'s).
_RATIO_OVER = ("n", "c")
#: The sweep's seeds: mauve-text's 25 and the next four (jaxmetrics.mauve.mauve_sweep's default).
DEFAULT_SEEDS = (25, 26, 27, 28, 29)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "mauve-sweep",
        help="MAUVE along sample size, text length, k, c or quantizer (mean ± s.d. over seeds)",
        description="MAUVE of each candidate file against the references (P = human text) for every "
        "value of one setting, mean ± s.d. over k-means seeds, as in the MAUVE paper's Figures 3-4 and "
        "Tables 5-6: --over n (sample size per side, k = n/10), length (texts truncated to each "
        "length, features recomputed), k (clusters), c (scaling constant), quantizer (kmeans, drmm, "
        "lattice). Prints one line per setting and system, the Spearman correlation of the systems' "
        "ranking between settings, and paired seed-by-seed differences. Files are texts (one per line "
        "or .jsonl with 'text') featurized with --model, or .npy features [n, d] (not for --over length). "
        "--estimator knn, classifier or gaussian sweeps a density-ratio estimator of the MAUVE family "
        "(--over n or c) instead of k-means histograms.",
    )
    p.add_argument("--references", required=True, metavar="FILE", help="human texts (P), or .npy features")
    p.add_argument("--candidates", required=True, nargs="+", metavar="FILE",
                   help="one file per system (Q); the system is named after the file")
    p.add_argument("--over", required=True, choices=_OVER, metavar="SETTING", help="the setting to sweep: one of %(choices)s")
    p.add_argument("--values", nargs="+", default=None, metavar="V",
                   help="the setting's values, space- or comma-separated: sizes per side >= 2 (n), token "
                   "lengths (length), integers >= 2 or 'auto' (k), positive numbers (c), quantizer names "
                   "(quantizer); default: n/8, n/4, n/2, n (at least 20) for n; 32 64 128 256 (capped at the "
                   "model) for length; auto for k; 1 2 5 10 for c; kmeans drmm lattice for quantizer")
    add_mauve_options(p, seeds=DEFAULT_SEEDS, sweep=True)
    p.add_argument("--estimator", choices=ESTIMATORS, metavar="ESTIMATOR", default="quantized",
                   help="how each MAUVE is estimated: quantized (k-means histograms, mauve-text's numbers) or a "
                   "density-ratio estimator, knn, classifier or gaussian, keyed by each seed on the rows k-means "
                   "would get; with one, --over n or c only, no --num-buckets or k-means options, and no k or "
                   "MAUVE* in the results (default quantized)")
    p.add_argument("--json", dest="json_out", metavar="PATH",
                   help="write the signature, the sweep, its rows, the reports and the settings as JSON here "
                        "(default: none)")
    p.add_argument("--csv", dest="csv_out", metavar="PATH",
                   help="write one line per setting and system as CSV here (default: none)")
    p.add_argument("--plot", metavar="PATH", help="write the MAUVE-vs-setting figure here (.png/.pdf) (default: none)")
    add_progress_options(p)
    p.set_defaults(func=run)


def _values(over: str, raw: list[str] | None) -> tuple | None:
    """Parse ``--values`` (space- and/or comma-separated) for the setting; errors name the option and
    say what the axis takes ('auto' only for k)."""
    if raw is None:
        return None
    items = [x.strip() for v in raw for x in v.split(",")]
    if any(not x for x in items):
        raise ValueError(f"--values: empty value in {' '.join(raw)!r}")
    kind = {"n": "an integer >= 2 (texts per side)", "length": "an integer >= 1 (tokens)",
            "k": "'auto' or an integer >= 2", "c": "a positive number", "quantizer": "a quantizer name"}[over]
    out = []
    for v in items:
        try:
            if over in ("n", "length"):
                x = int(v)
                if x < (2 if over == "n" else 1):
                    raise ValueError
            elif over == "k":
                x = v if v == "auto" else int(v)
                if x != "auto" and x < 2:
                    raise ValueError
            elif over == "c":
                x = float(v)
                if not 0 < x < float("inf"):
                    raise ValueError
            else:
                x = v
        except ValueError:
            hint = " ('auto' is a value of --over k only)" if v == "auto" else ""
            raise ValueError(f"--values: {v!r} is not {kind} (--over {over}){hint}") from None
        out.append(x)
    if over == "quantizer":
        from jaxmetrics.mauve.quantize.quantizers import available_quantizers

        known = available_quantizers()
        for v in out:
            if v not in known:
                raise ValueError(f"--values: unknown quantizer {v!r}; known: {', '.join(known)}")
    elif len(set(out)) != len(out):
        raise ValueError(f"--values: repeated values in {' '.join(map(str, out))}")
    return tuple(out)


def _names(paths: list[str]) -> list[str]:
    names = []
    for path in paths:
        base = os.path.splitext(os.path.basename(path))[0] or "candidates"
        name, i = base, 2
        while name in names:
            name, i = f"{base}-{i}", i + 1
        names.append(name)
    return names


def _check(args: argparse.Namespace) -> tuple[bool, tuple | None]:
    """Every check that needs no model and reads no input: options, input files, output paths."""
    if args.estimator != "quantized":
        if args.over not in _RATIO_OVER:
            raise ValueError(f"--over {args.over}: not available with --estimator {args.estimator}; a density-ratio "
                             "estimator is swept over n or c only (--over n, --over c)")
        check_estimator_options(args)   # --num-buckets, --kmeans-*: an error naming both options
    if args.over == "k" and args.num_buckets is not None:
        raise ValueError("--num-buckets: not used with --over k (the --values are the numbers of buckets)")
    if args.over == "c" and args.mauve_scaling_factor is not None:
        raise ValueError("--mauve-scaling-factor: not used with --over c (the --values are the scaling factors)")
    if args.over == "length":
        for option, value in (("--max-length", args.max_length), ("--cache-dir", args.cache_dir)):
            if value is not None:
                raise ValueError(f"{option}: not used with --over length (the --values are the lengths, and "
                                 "truncated texts are featurized again)")
    check_mauve_options(args)
    values = _values(args.over, args.values)
    features = is_features(args.references)
    for path in args.candidates:
        if is_features(path) != features:
            raise ValueError(f"--candidates: {path!r} and --references {args.references!r} must all be .npy "
                             "feature files or all be text files")
    if features and args.over == "length":
        raise ValueError("--over length: needs text files (texts are truncated and featurized again)")
    check_input_file(args.references, "--references", text=not features)
    for path in args.candidates:
        check_input_file(path, "--candidates", text=not features)
    check_outputs(args, (("json_out", "--json"), ("csv_out", "--csv"), ("plot", "--plot")))
    return features, values


def _check_sizes(args: argparse.Namespace, values: tuple | None, n_ref: int, sizes: dict[str, int]) -> None:
    """Sample sizes against --values and MAUVE's minimum sizes (those of a density-ratio
    --estimator), before any model is loaded."""
    n_min = min([n_ref] + list(sizes.values()))
    if args.over == "n":
        if values is None:   # mauve_sweep's default sizes, for the checks only: the sweep gets None
            from jaxmetrics.mauve.sizes import default_sample_sizes  # and records 'default' in its signature

            values = default_sample_sizes(n_min)
        big = [v for v in values if v > n_min]
        if big:
            raise ValueError(f"--values: sample size {big[0]} exceeds the smallest set ({n_min} texts or rows)")
    settings_ = values if args.over in ("n", "k") and values is not None else (None,)
    for v in settings_:
        for name, n in sizes.items():
            if args.estimator != "quantized":
                n_p, n_q = (v, v) if args.over == "n" else (n_ref, n)
                check_estimator_sizes(args.estimator, n_p, n_q,
                                      f"--candidates {name}" + (f" (n = {v})" if args.over == "n" else ""))
            elif args.over == "n":
                check_sizes(args, v, v, f"--candidates {name} (n = {v})")
            else:
                check_sizes(args, n_ref, n, f"--candidates {name}", num_buckets=v if args.over == "k" else None,
                            buckets_option="--values" if args.over == "k" else "--num-buckets")


def _log(args, msg: str) -> None:
    if progress_enabled(args):
        print(f"jaxmetrics mauve-sweep: {msg}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    features, values = _check(args)
    names = _names(args.candidates)
    seeds = tuple(args.seeds)
    if features:
        refs = load_features(args.references, "--references")
        cands = {m: load_features(path, "--candidates") for m, path in zip(names, args.candidates)}
    else:
        models_module()   # text files need the model code
        refs = read_input(args.references, "--references", command="mauve-sweep", empty=args.empty).texts
        cands = {m: read_input(path, "--candidates", command="mauve-sweep", empty=args.empty).texts
                 for m, path in zip(names, args.candidates)}
    _check_sizes(args, values, len(refs), {m: len(c) for m, c in cands.items()})
    from jaxmetrics.mauve import mauve_length_sweep, mauve_sweep, paired_mauve_difference, rank_agreement

    kw = dict(seeds=seeds, num_buckets=args.num_buckets, kmeans_explained_var=args.kmeans_explained_var,
              kmeans_num_redo=args.kmeans_num_redo, kmeans_max_iter=args.kmeans_max_iter)
    ratio = args.estimator != "quantized"
    if args.over != "c":
        kw["scaling"] = 5.0 if args.mauve_scaling_factor is None else args.mauve_scaling_factor
    pooling = max_length = None
    if not features:
        _log(args, f"loading {args.model}")
        lm = models_module().load_model(args.model, dtype=args.dtype)
    if args.over == "length":
        limit = lm.max_positions
        if values is None:
            values = tuple(v for v in (32, 64, 128, 256) if limit is None or v <= limit) or (limit,)
        elif limit is not None and max(values) > limit:
            raise ValueError(f"--values: {max(values)} tokens exceeds the model's {limit} positions")
        pooling = models_module().resolve_pooling(lm, args.pooling, name="--pooling")
        print(f"jaxmetrics mauve-sweep: featurizing {len(values)} truncations with {args.model}: {pooling} pooling"
              f"{' (--pooling auto)' if args.pooling == 'auto' else ''}", file=sys.stderr, flush=True)
        res = mauve_length_sweep(references=refs, candidates=cands, model=lm, lengths=values,
                                 pooling=pooling, batch_size=args.batch_size, progress=progress_enabled(args),
                                 **kw)
    else:
        if not features:
            made = featurize_with(args, lm, {"references": refs} | cands, command="mauve-sweep")
            pooling, max_length = made.pooling, made.max_length
            cands = dict(made.features)
            refs = cands.pop("references")
        _log(args, f"density ratios ({args.estimator}) and MAUVE for every {args.over} value, system and seed"
             if ratio else f"k-means and MAUVE for every {args.over} value, system and seed (one compiled call)")
        if args.over == "k":
            kw.pop("num_buckets")
        res = mauve_sweep(references=refs, candidates=cands, over=args.over, values=values,
                          estimator=args.estimator, **kw)

    rows = res.rows()
    if ratio:
        print(f"estimator {args.estimator} (density ratios, no k-means buckets: k is '-')")
    print(f"{'setting':>10} {'value':>8} {'system':>16}  MAUVE (mean ± s.d. over {len(seeds)} seeds)     k      n")
    for r in rows:
        tokens = ""
        if r.references_length_mean is not None:
            tokens = f"   mean tokens: references {r.references_length_mean:.1f}, {r.system} {r.candidates_length_mean:.1f}"
        print(f"{r.setting:>10} {str(r.value):>8} {r.system:>16}  {r.mauve_mean:.4f} ± {r.mauve_std:.4f}"
              f"{'':>19}{'-' if r.num_buckets is None else r.num_buckets:>4} {r.num_candidates:>6}{tokens}")
    # the sweep's MAUVE is exp(-c KL) (mauve_sweep takes no divergence); settings() records the
    # estimator and, for a density-ratio one, None for the k-means settings
    conf = settings(argparse.Namespace(**{"divergence": "kl", **vars(args)}), features, pooling, max_length)
    conf.update(over=args.over, values=list(res.values))
    if args.over == "c":
        conf["mauve_scaling_factor"] = None
    if args.over == "k":
        conf["num_buckets"] = None
    from jaxmetrics.mauve.pipeline.inputs import featurized_signature

    sig = res.signature if args.over == "length" else featurized_signature(
        res.signature, model=None if features else lm, pooling=pooling, max_length=max_length)
    report = {"signature": sig, "sweep": res.to_dict(), "rows": [r.to_dict() for r in rows], "settings": conf}
    if len(names) >= 2:
        ra = rank_agreement(res)
        report["rank_agreement"] = ra.to_dict()
        if len(res.values) > 1:
            print(f"Spearman of the systems' ranking between {args.over} values: min {ra.min_spearman:.3f}, "
                  f"mean {ra.mean_spearman:.3f}")
        if len(seeds) >= 2:
            report["paired_differences"] = []
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    d = paired_mauve_difference(res, system=a, baseline=b)
                    report["paired_differences"].append(d.to_dict())
                    for v, value in enumerate(res.values):
                        verdict = "beyond" if d.exceeds_seed_noise[v] else "within"
                        print(f"{a} - {b} at {args.over}={value}: {d.difference[v]:+.4f} "
                              f"(s.e. {d.standard_error[v]:.4f}, t = {d.t_statistic[v]:.2f}, "
                              f"p = {d.p_value[v]:.3g}): {verdict} the seed noise")
    if args.json_out:
        write_json(args.json_out, report)
    if args.csv_out:
        res.to_csv(args.csv_out)
    if args.plot:
        res.plot(args.plot)
    return 0
