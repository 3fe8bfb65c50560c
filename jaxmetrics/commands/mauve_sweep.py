"""``jaxmetrics mauve-sweep``: MAUVE (mean ± s.d. over k-means seeds) of one or more candidate
files against a references file, along one setting: sample size, text length, k, c or quantizer."""
from __future__ import annotations

import argparse
import json
import os
import sys

from jaxmetrics._cli_util import (add_pooling_option, add_progress_options, check_outputs, pooled_features,
                                  progress_enabled)
from jaxmetrics._validation import check_input_file

_FEATURE_SUFFIX = ".npy"
_OVER = ("n", "length", "k", "c", "quantizer")


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
        "or .jsonl with 'text') featurized with --model, or .npy features [n, d] (not for --over length).",
    )
    p.add_argument("--references", required=True, metavar="FILE", help="human texts (P), or .npy features")
    p.add_argument("--candidates", required=True, nargs="+", metavar="FILE",
                   help="one file per system (Q); the system is named after the file")
    p.add_argument("--model", default="gpt2-large",
                   help="featurizer for text files: hub id or local checkpoint directory (default gpt2-large)")
    add_pooling_option(p)
    p.add_argument("--over", required=True, choices=_OVER, help="the setting to sweep")
    p.add_argument("--values", nargs="+", default=None, metavar="V",
                   help="the setting's values: sizes (n), token lengths (length), ints or 'auto' (k), "
                   "floats (c), quantizer names (quantizer); default: n/8, n/4, n/2, n for n; "
                   "32 64 128 256 (capped at the model) for length; auto for k; 1 2 5 10 for c; "
                   "kmeans drmm lattice for quantizer")
    p.add_argument("--seeds", type=int, default=5, help="number of k-means seeds (default 5)")
    p.add_argument("--seed", type=int, default=25, help="first seed; seeds are seed, seed+1, ... (default 25)")
    p.add_argument("--num-buckets", default="auto", help="'auto' (n/10) or an integer (not for --over k)")
    p.add_argument("--mauve-scaling-factor", type=float, default=5.0, help="the constant c (not for --over c)")
    p.add_argument("--kmeans-explained-var", type=float, default=0.9)
    p.add_argument("--kmeans-num-redo", type=int, default=5)
    p.add_argument("--kmeans-max-iter", type=int, default=500)
    p.add_argument("--max-text-length", type=int, default=None,
                   help="truncation length in tokens for --over other than length (default: 1024, or "
                   "the model's positions if fewer)")
    p.add_argument("--batch-size", type=int, default=8, help="texts per featurizer forward pass (default 8)")
    p.add_argument("--cache-dir", default=None, help="feature cache directory (not for --over length)")
    p.add_argument("--json", dest="json_out", help="write the sweep, its rows and the reports as JSON here")
    p.add_argument("--csv", dest="csv_out", help="write one line per setting and system as CSV here")
    p.add_argument("--plot", help="write the MAUVE-vs-setting figure here (.png/.pdf)")
    add_progress_options(p)
    p.set_defaults(func=run)


def _is_features(path: str) -> bool:
    return os.path.splitext(path)[1].lower() == _FEATURE_SUFFIX


def _values(over: str, raw: list[str] | None) -> tuple | None:
    """Parse ``--values`` for the setting (errors name the option)."""
    if raw is None:
        return None
    out = []
    for v in raw:
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
                if not x > 0:
                    raise ValueError
            else:
                x = v
        except ValueError:
            kind = {"n": "an integer >= 2", "length": "an integer >= 1", "k": "'auto' or an integer >= 2",
                    "c": "a positive number"}[over]
            raise ValueError(f"--values: {v!r} is not {kind} (--over {over})") from None
        out.append(x)
    if over == "quantizer":
        from jaxmetrics.mauve.quantizers import available_quantizers

        known = available_quantizers()
        for v in out:
            if v not in known:
                raise ValueError(f"--values: unknown quantizer {v!r}; known: {', '.join(known)}")
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
    """Every check that needs no model: options, input files, output paths."""
    if args.seeds < 1:
        raise ValueError(f"--seeds: must be >= 1, got {args.seeds}")
    if args.num_buckets != "auto":
        try:
            if int(args.num_buckets) < 2:
                raise ValueError
        except ValueError:
            raise ValueError(f"--num-buckets: expected 'auto' or an integer >= 2, got {args.num_buckets!r}") from None
    if not args.mauve_scaling_factor > 0:
        raise ValueError(f"--mauve-scaling-factor: must be > 0, got {args.mauve_scaling_factor}")
    if args.batch_size < 1:
        raise ValueError(f"--batch-size: must be >= 1, got {args.batch_size}")
    if args.max_text_length is not None and args.max_text_length < 1:
        raise ValueError(f"--max-text-length: must be >= 1, got {args.max_text_length}")
    values = _values(args.over, args.values)
    features = _is_features(args.references)
    for path in args.candidates:
        if _is_features(path) != features:
            raise ValueError(f"candidates: {path!r} and references {args.references!r} must all be .npy "
                             "feature files or all be text files")
    if features and args.over == "length":
        raise ValueError("--over length: needs text files (texts are truncated and featurized again)")
    check_input_file(args.references, "references", text=not features)
    for path in args.candidates:
        check_input_file(path, "candidates", text=not features)
    check_outputs(args, (("json_out", "--json"), ("csv_out", "--csv"), ("plot", "--plot")))
    return features, values


def _log(args, msg: str) -> None:
    if progress_enabled(args):
        print(f"jaxmetrics mauve-sweep: {msg}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from jaxmetrics.models import resolve_pooling

    import numpy as np

    from jaxmetrics.mauve import mauve_length_sweep, mauve_sweep, paired_mauve_difference, rank_agreement

    features, values = _check(args)
    names = _names(args.candidates)
    seeds = tuple(range(args.seed, args.seed + args.seeds))
    nb = args.num_buckets if args.num_buckets == "auto" else int(args.num_buckets)
    kw = dict(seeds=seeds, num_buckets=nb, mauve_scaling_factor=args.mauve_scaling_factor,
              kmeans_explained_var=args.kmeans_explained_var, kmeans_num_redo=args.kmeans_num_redo,
              kmeans_max_iter=args.kmeans_max_iter)
    if features:
        refs = np.load(args.references, allow_pickle=False)
        cands = {m: np.load(path, allow_pickle=False) for m, path in zip(names, args.candidates)}
    else:
        from jaxmetrics.commands.mauve import nonempty_texts
        from jaxmetrics.models import load_model, read_texts

        refs = nonempty_texts(args.references, "references", read_texts, command="mauve-sweep")
        cands = {m: nonempty_texts(path, "candidates", read_texts, command="mauve-sweep")
                 for m, path in zip(names, args.candidates)}
        _log(args, f"loading {args.model}")
        lm = load_model(args.model)
    if args.over == "length":
        limit = lm.max_positions
        if values is None:
            values = tuple(v for v in (32, 64, 128, 256) if limit is None or v <= limit) or (limit,)
        elif limit is not None and max(values) > limit:
            raise ValueError(f"--values: {max(values)} tokens exceeds the model's {limit} positions")
        _log(args, f"featurizing {len(values)} truncations with {args.model} "
             f"({resolve_pooling(lm, args.pooling)} pooling), then k-means")
        res = mauve_length_sweep(references=refs, candidates=cands, model=lm, lengths=values,
                                 pooling=args.pooling, batch_size=args.batch_size, progress=progress_enabled(args),
                                 **kw)
    else:
        if not features:
            max_length = args.max_text_length
            if max_length is None:
                max_length = 1024 if lm.max_positions is None else min(1024, lm.max_positions)
            fkw = dict(max_length=max_length, batch_size=args.batch_size, cache_dir=args.cache_dir,
                       progress=progress_enabled(args))
            _log(args, f"featurizing with {args.model} ({resolve_pooling(lm, args.pooling)} pooling)")
            refs = pooled_features(refs, lm, args.pooling, **fkw)
            cands = {m: pooled_features(t, lm, args.pooling, **fkw) for m, t in cands.items()}
        _log(args, f"k-means and MAUVE for every {args.over} value, system and seed (one compiled call)")
        res = mauve_sweep(references=refs, candidates=cands, over=args.over, values=values, **kw)

    rows = res.rows()
    print(f"{'setting':>10} {'value':>8} {'system':>16}  MAUVE (mean ± s.d. over {len(seeds)} seeds)     k      n")
    for r in rows:
        tokens = ""
        if r.references_length_mean is not None:
            tokens = f"   mean tokens: references {r.references_length_mean:.1f}, {r.system} {r.candidates_length_mean:.1f}"
        print(f"{r.setting:>10} {str(r.value):>8} {r.system:>16}  {r.mauve_mean:.4f} ± {r.mauve_std:.4f}"
              f"{'':>19}{r.num_buckets:>4} {r.num_candidates:>6}{tokens}")
    report = {"sweep": res.to_dict(), "rows": [r.to_dict() for r in rows]}
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
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
    if args.csv_out:
        res.to_csv(args.csv_out)
    if args.plot:
        res.plot(args.plot)
    return 0
