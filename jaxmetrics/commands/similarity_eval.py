"""``jaxmetrics similarity-eval``: correlation of similarity metrics with human scores over a grid.

Reads STS-style pairs (``sentence1 <TAB> sentence2 <TAB> score [<TAB> group]``, optional
header), runs :func:`jaxmetrics.similarity.correlation_sweep` over the grid of temperatures ×
Sinkhorn iterations × layers × centerings (× metrics), and prints one row per setting with the
Pearson correlation per group and the size-weighted means; with its meta-evaluation
(:meth:`~jaxmetrics.similarity.CorrelationSweep.with_meta`, on by default) also each setting's
interval, its significance cluster and its p-value against the top setting, and the settings not
significantly worse than the top.
"""
from __future__ import annotations

import argparse
import re
import sys

from jaxmetrics.commands._util import (add_dtype_option, add_model_option, add_progress_options,
                                       add_significance_options, CENTERINGS, check_outputs,
                                       check_significance_options, LibraryChoices, progress_enabled, RANKINGS, SCORES,
                                       SPECIAL_TOKENS, write_json)
from jaxmetrics._files import check_input_file
from jaxmetrics.commands.similarity import CENTERING_BATCHES, CENTERING_BATCHES_HELP

# Kept here (not imported from jaxmetrics.similarity) so that building the parser stays cheap.
_METRICS = LibraryChoices("jaxmetrics.similarity.settings", "SIMILARITY_METRICS")
_GRID_AXES = {"t": "temperatures", "temperature": "temperatures", "temperatures": "temperatures",
              "i": "iterations", "iterations": "iterations", "num_iterations": "iterations",
              "l": "layers", "layer": "layers", "layers": "layers",
              "c": "centering", "centering": "centering",
              "m": "metric", "metric": "metric", "metrics": "metric"}
_FLAGS = {"temperatures": "--temperatures", "iterations": "--iterations", "layers": "--layers",
          "centering": "--centering", "metric": "--metric"}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "similarity-eval",
        help="correlation of similarity metrics (TWMD, BERTScore, ...) with human scores over a grid",
        description="Correlate a token-embedding similarity with human scores (Pearson and Spearman per "
                    "group, and their size-weighted mean) for every setting of a grid of temperatures, "
                    "Sinkhorn iterations, layers and centerings, in one sweep over cached embeddings "
                    "(Chen et al. 2020's STS protocol: centering batches restart at every group). Each setting's "
                    "weighted correlation gets a bootstrap interval (pairs resampled within groups), every pair of "
                    "settings a permutation test (Holm-adjusted), and the settings not significantly worse than the "
                    "top are reported as the best cluster (--num-resamples 0 turns this off).",
        epilog="example: jaxmetrics similarity-eval pairs.tsv --model M --grid T=0.02,0.05,0.1 "
               "--iterations 1,5 --layers 4-6 --centering none,batch --csv out.csv",
    )
    p.add_argument("pairs", help="TSV file: sentence1<TAB>sentence2<TAB>score[<TAB>group] per line, "
                                 "optional header; sentence1 is the reference, sentence2 the candidate")
    add_model_option(p, "encoder whose token vectors are compared")
    add_dtype_option(p)
    p.add_argument("--grid", action="append", default=[], metavar="AXIS=VALUES",
                   help="a grid axis, e.g. T=0.02,0.05,0.1 (axes: T / temperatures, iterations, layers, "
                        "centering, metric); repeatable")
    p.add_argument("--metric", default=None,
                   help="metric(s), comma-separated, among the similarities of 'jaxmetrics similarity --metric' "
                        "(default twmd)")
    p.add_argument("--temperatures", default=None,
                   help="temperatures, comma-separated (default: the paper's T of each centering)")
    p.add_argument("--iterations", "--num-iterations", dest="iterations", default=None,
                   help="Sinkhorn iteration counts for TWMD, comma-separated (default 1)")
    p.add_argument("--layers", default=None,
                   help="hidden_states indices: '4-6', '4,6,8' or '-1' (default 10 base / 19 large / last)")
    p.add_argument("--centering", default=None,
                   help="centering method(s), comma-separated, among those of 'jaxmetrics similarity --centering' "
                        "(default: each "
                        f"metric's own, none for bertscore and batch for the others, as the paper recommends)")
    p.add_argument("--score", default="f1", choices=SCORES, metavar="SCORE",
                   help="which per-pair score is correlated, one of %(choices)s (default f1)")
    p.add_argument("--rank-by", default="weighted_pearson", choices=RANKINGS, metavar="STATISTIC",
                   help="how the best setting is chosen, one of %(choices)s (default weighted_pearson)")
    p.add_argument("--center-batch-size", type=int, default=32,
                   help="pairs per centering batch, restarting at every group (default 32)")
    p.add_argument("--centering-batches", default="consecutive", choices=CENTERING_BATCHES, metavar="HOW",
                   help=CENTERING_BATCHES_HELP)
    p.add_argument("--special-tokens", default="drop", choices=SPECIAL_TOKENS, metavar="HOW",
                   help="special tokens in the matching, one of %(choices)s (default drop)")
    p.add_argument("--batch-size", type=int, default=64, help="texts per forward pass (default 64, as similarity; speed and memory only)")
    p.add_argument("--max-length", type=int, default=None,
                   help="truncation in tokens (default 512, or the model's positions when fewer)")
    p.add_argument("--pair-chunk", type=int, default=128, help="pairs per compiled kernel call (default 128)")
    add_significance_options(p, can_turn_off=True,
                             resamples="meta-evaluation: bootstrap resamples (intervals) and permutation draws "
                                       "(tests between settings)",
                             alpha="significance level of the clusters, on Holm-adjusted p-values")
    p.add_argument("--json", default=None,
                   help="write the signature, the rows, the best setting and the meta-evaluation as JSON here "
                        "(default: none)")
    p.add_argument("--csv", default=None, help="write one CSV row per setting here (default: none)")
    p.add_argument("--plot", default=None,
                   help="plot the weighted correlation against T to this file (.png, .pdf, ...; default: none)")
    add_progress_options(p)
    p.set_defaults(func=run)


def _split(text: str, option: str) -> list[str]:
    items = [x.strip() for x in text.split(",")]
    if not items or any(not x for x in items):
        raise ValueError(f"{option}: expected a comma-separated list, got {text!r}")
    return items


def _floats(text: str, option: str) -> list[float]:
    out = []
    for x in _split(text, option):
        try:
            v = float(x)
        except ValueError:
            raise ValueError(f"{option}: {x!r} is not a number") from None
        if not v > 0 or v == float("inf"):
            raise ValueError(f"{option}: temperatures must be finite and > 0, got {x!r}")
        out.append(v)
    return out


def _ints(text: str, option: str, *, minimum: int | None = None) -> list[int]:
    out = []
    for x in _split(text, option):
        m = re.fullmatch(r"(\d+)-(\d+)", x)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            if b < a:
                raise ValueError(f"{option}: empty range {x!r}")
            out.extend(range(a, b + 1))
            continue
        try:
            out.append(int(x))
        except ValueError:
            raise ValueError(f"{option}: {x!r} is not an integer or a range like 4-6") from None
    if minimum is not None and any(v < minimum for v in out):
        raise ValueError(f"{option}: values must be >= {minimum}, got {text!r}")
    return out


def _names(text: str, option: str, choices: tuple) -> list[str]:
    out = _split(text, option)
    for x in out:
        if x not in choices:
            raise ValueError(f"{option}: {x!r} is not one of {', '.join(choices)}")
    return out


def _grid(args: argparse.Namespace) -> dict:
    """The grid's axes as raw strings: from --grid AXIS=VALUES and from the per-axis flags."""
    axes = {}
    for spec in args.grid:
        key, sep, values = spec.partition("=")
        axis = _GRID_AXES.get(key.strip().lower())
        if not sep or axis is None:
            raise ValueError(f"--grid: expected AXIS=VALUES with AXIS one of T, iterations, layers, centering, "
                             f"metric, got {spec!r}")
        if axis in axes:
            raise ValueError(f"--grid: axis {key.strip()!r} given twice")
        axes[axis] = (values, f"--grid {key.strip()}")
    for axis, flag in _FLAGS.items():
        value = getattr(args, axis)
        if value is not None:
            if axis in axes:
                raise ValueError(f"{flag}: also given as {axes[axis][1]}; give it once")
            axes[axis] = (value, flag)
    out = {}
    if "temperatures" in axes:
        out["temperatures"] = _floats(*axes["temperatures"])
    if "iterations" in axes:
        out["num_iterations"] = _ints(*axes["iterations"], minimum=1)
    if "layers" in axes:
        out["layers"] = _ints(*axes["layers"])
    out["centering"] = _names(*axes["centering"], CENTERINGS) if "centering" in axes else None
    out["metric"] = _names(*axes["metric"], _METRICS) if "metric" in axes else ["twmd"]
    return out


def run(args: argparse.Namespace) -> int:
    from jaxmetrics._validation import check_int

    check_input_file(args.pairs, "pairs")
    check_outputs(args, (("json", "--json"), ("csv", "--csv"), ("plot", "--plot")))
    grid = _grid(args)
    for name in ("center_batch_size", "batch_size", "max_length", "pair_chunk"):
        if getattr(args, name) is not None:
            check_int(getattr(args, name), "--" + name.replace("_", "-"), minimum=1)
    check_significance_options(args, can_turn_off=True)

    from jaxmetrics.similarity import SimilaritySettings, correlation_sweep, read_scored_pairs
    from jaxmetrics.similarity.grouped import check_group_sizes

    settings = SimilaritySettings(center_batch_size=args.center_batch_size, centering_batches=args.centering_batches,
                                  special_tokens=args.special_tokens,
                                  max_length=args.max_length, batch_size=args.batch_size, pair_chunk=args.pair_chunk)
    pairs = read_scored_pairs(args.pairs)
    check_group_sizes(pairs.groups, pairs.group_names, name=f"pairs: {args.pairs}")
    res = correlation_sweep(pairs=pairs, model=args.model, score=args.score, settings=settings,
                            progress=progress_enabled(args), dtype=args.dtype, **grid)
    small = [g for g, n in zip(res.group_names, res.group_sizes) if n < 3]
    if args.num_resamples and small:
        print(f"jaxmetrics: warning: no meta-evaluation (intervals, tests): group {small[0]!r} has fewer than 3 "
              f"pairs", file=sys.stderr)
    elif args.num_resamples:
        import jax

        res = res.with_meta(key=jax.random.key(args.seed), num_resamples=args.num_resamples,
                            confidence=args.confidence, alpha=args.alpha)
    best = res.best(args.rank_by)
    batches = "" if "batch" not in res.centering else (
        f"; batch centering: {args.centering_batches} batches of {args.center_batch_size} pairs"
        + (" in file order (the scores depend on it)" if args.centering_batches == "consecutive" else
           " by hash (independent of the file's order)"))
    print(f"{len(pairs)} pairs in {len(res.group_names)} group(s) "
          f"({', '.join(f'{g}: {n}' for g, n in zip(res.group_names, res.group_sizes))}){batches}; "
          f"Pearson r of {args.score} with the human scores:")
    print(res.table())
    setting = ", ".join(f"{k}={v}" for k, v in (("metric", best.metric), ("layer", best.layer),
                                                 ("centering", best.centering),
                                                 ("num_iterations", best.num_iterations),
                                                 ("temperature", best.temperature)) if v is not None)
    print(f"best by {args.rank_by}: {setting}: weighted r={best.weighted_pearson:.4f} "
          f"rho={best.weighted_spearman:.4f}")
    if res.meta is not None:
        corr = "pearson" if args.rank_by == "weighted_pearson" else "spearman"
        tied = res.meta.best(correlation=corr)
        print(f"not significantly worse than the top by {corr} ({res.meta.tests[0]} test, Holm, "
              f"alpha={res.meta.alpha}; {res.meta.num_resamples} resamples): {len(tied)} of {len(res)} setting(s): "
              + "; ".join(tied))
    if args.csv:
        res.to_csv(args.csv)
    if args.plot:
        res.plot(args.plot, by=args.rank_by)
    if args.json:
        doc = {"signature": res.signature, "input": args.pairs, "model": args.model, "dtype": args.dtype,
               "score": args.score, "centering_batches": args.centering_batches,
               "num_pairs": len(pairs),
               "group_names": list(res.group_names), "group_sizes": list(res.group_sizes),
               "rank_by": args.rank_by, "best": best, "rows": res.rows(),
               "meta": None if res.meta is None else res.meta.to_dict()}
        write_json(args.json, doc)
    return 0
