"""``jaxmetrics meta-eval``: which metric agrees with human scores, with intervals, pairwise
significance and clusters (:func:`jaxmetrics.meta.meta_evaluate`) over a file of items."""
from __future__ import annotations

import argparse

from jaxmetrics._files import check_input_file
from jaxmetrics.commands._util import (add_dtype_option, add_progress_options, add_significance_options,
                                       check_outputs, check_significance_options, LibraryChoices, progress_enabled,
                                       write_json)

_METRICS = LibraryChoices("jaxmetrics.meta.items", "ITEM_METRICS")
_CORRELATIONS = LibraryChoices("jaxmetrics.meta.evaluate", "CORRELATIONS")
_LEVELS = LibraryChoices("jaxmetrics.meta.evaluate", "LEVELS")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "meta-eval",
        help="meta-evaluation: correlation of metrics with human scores, intervals, significance, clusters",
        description="Score the items of a CSV / TSV / JSONL file (candidate, reference(s), human score, optional "
                    "group and system, optional columns of precomputed metric scores) with the chosen metrics, "
                    "and report for every metric its Pearson / Spearman / Kendall tau-b (and tau-like) correlation "
                    "with the human scores at the pooled, group-averaged and system levels with bootstrap "
                    "intervals, the significance of every pairwise difference (paired permutation test or paired "
                    "bootstrap, Williams for Pearson; Holm-adjusted) and the significance clusters: cluster 1 is the "
                    "top metric and every metric not significantly worse. Everything is checked before a model is "
                    "loaded.",
        epilog="example: jaxmetrics meta-eval items.csv --metrics bertscore,twmd --columns bleu --model M "
               "--json meta.json",
    )
    p.add_argument("items", help="a .csv, .tsv or .jsonl file: fields candidate, reference (or reference_2, ...), "
                                 "human, and optionally group, system and numeric score columns")
    p.add_argument("--metrics", default=None,
                   help="similarity metrics to score the items with, comma-separated, among those of 'jaxmetrics "
                        "similarity --metric' (F1 against the best reference; default: bertscore, or none when "
                        "--columns is given)")
    p.add_argument("--columns", default=None,
                   help="numeric fields of the file holding precomputed metric scores, comma-separated (default: none)")
    p.add_argument("--model", default=None, help="encoder for --metrics: a local Hugging Face checkpoint folder "
                                                 "or a hub id (required when a metric is scored; default: none, for --columns only)")
    add_dtype_option(p)
    p.add_argument("--layer", type=int, default=None, help="hidden_states index (default: each metric's own)")
    p.add_argument("--correlations", default="pearson,spearman,kendall",
                   help="comma-separated, among pearson, spearman, kendall (tau-b), tau_like (default "
                        "pearson,spearman,kendall; kendall and tau_like cost O(resamples x items^2))")
    p.add_argument("--level", default=None, choices=_LEVELS, metavar="LEVEL",
                   help="print only this level's table, one of %(choices)s (default: every level present)")
    add_significance_options(p, resamples="bootstrap resamples and permutation draws",
                             alpha="significance level of the clusters, on Holm-adjusted p-values")
    p.add_argument("--threshold", type=float, default=0.0,
                   help="tau_like: pairs count when their human scores differ by more than this (default 0; "
                        "WMT DARR used 25 on a 0-100 scale)")
    p.add_argument("--json", default=None, help="write the full result as JSON here (default: none)")
    p.add_argument("--csv", default=None, help="write one row per level, correlation and metric here (default: none)")
    add_progress_options(p)
    p.set_defaults(func=run)


def _list(text: str | None, option: str, choices=None) -> list[str]:
    if text is None:
        return []
    items = [x.strip() for x in text.split(",")]
    if any(not x for x in items):
        raise ValueError(f"{option}: expected a comma-separated list, got {text!r}")
    for x in items:
        if choices is not None and x not in choices:
            raise ValueError(f"{option}: {x!r} is not one of {', '.join(choices)}")
    return items


def run(args: argparse.Namespace) -> int:
    check_input_file(args.items, "items")
    check_outputs(args, (("json", "--json"), ("csv", "--csv")))
    columns = _list(args.columns, "--columns")
    metrics = _list(args.metrics, "--metrics", _METRICS) if args.metrics is not None else \
        ([] if columns else ["bertscore"])
    correlations = _list(args.correlations, "--correlations", _CORRELATIONS)
    check_significance_options(args)
    if not args.threshold >= 0:
        raise ValueError(f"--threshold: expected a number >= 0, got {args.threshold}")
    if metrics and args.model is None:
        raise ValueError(f"--model: required to score --metrics {','.join(metrics)}")
    if not metrics and not columns:
        raise ValueError("--metrics, --columns: give at least one metric to evaluate")

    import jax

    from jaxmetrics.meta import meta_evaluate, read_meta_items, score_items

    items = read_meta_items(args.items, columns=columns)
    if metrics and (not items.candidates or not items.references):
        raise ValueError(f"items: {args.items} has no candidate and reference fields to score --metrics with")
    if len(items.score_names) + len(metrics) < 1:
        raise ValueError("--metrics, --columns: give at least one metric to evaluate")
    items = score_items(items, model=args.model, metrics=metrics, layer=args.layer,
                        progress=progress_enabled(args), dtype=args.dtype)
    res = meta_evaluate(items.scores, items.human, names=items.score_names,
                        groups=[items.group_names[g] for g in items.groups] if items.group_names else None,
                        systems=[items.system_names[s] for s in items.systems] if items.system_names else None,
                        key=jax.random.key(args.seed), correlations=correlations, num_resamples=args.num_resamples,
                        confidence=args.confidence, alpha=args.alpha, threshold=args.threshold)
    if args.level is not None and args.level not in res.levels:
        raise ValueError(f"--level: {args.level!r} is not present (levels: {', '.join(res.levels)}; 'averaged' needs "
                         f"a group field, 'system' a system field)")
    print(f"{len(items)} items, {len(items.group_names) or 1} group(s), {len(items.system_names)} system(s); "
          f"{res.num_resamples} resamples, {res.confidence:.0%} intervals, clusters at alpha={res.alpha}")
    for level in ([args.level] if args.level else res.levels):
        print()
        print(res.table(level))
    if args.csv:
        res.to_csv(args.csv)
    if args.json:
        write_json(args.json, {"input": args.items, "model": args.model, "metrics": list(res.metrics), **res.to_dict()})
    return 0
