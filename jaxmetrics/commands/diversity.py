"""``jaxmetrics diversity``: distinct-n and Self-BLEU of plain text files (one text per line), each
with its confidence interval on request (:data:`jaxmetrics.diversity.intervals.CORPUS_METRICS`:
:func:`~jaxmetrics.diversity.distinct_n` / :func:`~jaxmetrics.diversity.distinct_n_interval`,
:func:`~jaxmetrics.diversity.self_bleu` / :func:`~jaxmetrics.diversity.self_bleu_interval`)."""
from __future__ import annotations

import argparse
import csv
import sys

from jaxmetrics._files import check_input_file
from jaxmetrics.commands._util import (add_confidence_options, check_confidence_options, check_outputs,
                                       LibraryChoices, write_json)

#: ``--metrics``: the names of :data:`jaxmetrics.diversity.intervals.CORPUS_METRICS`
METRICS = LibraryChoices("jaxmetrics.diversity.intervals", "CORPUS_METRICS")
#: ``--interval-method``: :data:`jaxmetrics.diversity.intervals.INTERVAL_METHODS`
INTERVAL_METHODS = LibraryChoices("jaxmetrics.diversity.intervals", "INTERVAL_METHODS")
#: the resampling scheme when ``--interval-method`` is not given (the interval functions' default)
DEFAULT_METHOD = "subsample"
#: CSV columns, one row per (file, metric, n)
COLUMNS = ("file", "metric", "n", "num_texts", "value", "low", "high", "standard_error")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "diversity",
        help="distinct-n and Self-BLEU of text files, with confidence intervals",
        description="Diversity of each text file (one generation per line, or .jsonl with a 'text' field): "
                    "distinct-n (distinct n-grams / n-grams, pooled over the file) and Self-BLEU-n (each "
                    "text's BLEU against all the others, averaged: higher is less diverse), texts split into "
                    "words as jaxmetrics.diversity.tevet_tokenize does. An empty line is an empty generation "
                    "(no n-gram; said on stderr). With --confidence each value gets an interval with the texts "
                    "resampled (distinct_n_interval, self_bleu_interval): it covers the metric's expected value "
                    "at this number of texts (docs/intervals.md). Every file and option is checked before "
                    "anything is computed.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="text files, one generation per line (or .jsonl)")
    p.add_argument("--metrics", nargs="+", default=None, choices=METRICS, metavar="METRIC",
                   help="one or more of %(choices)s (default: all)")
    p.add_argument("--n", type=int, nargs="+", default=None, metavar="N",
                   help="n-gram orders, each metric computed at each (default: each metric's own, as in Python: "
                        "distinct-n 3, self-bleu 4)")
    add_confidence_options(p, what="each value its confidence interval, the texts resampled, as "
                                    "distinct_n_interval / self_bleu_interval(texts, n, key=jax.random.key(SEED))")
    p.add_argument("--interval-method", default=None, choices=INTERVAL_METHODS, metavar="METHOD",
                   help="with --confidence, one of %(choices)s: subsets of 75 %% of the texts without replacement "
                        "(subsample), or the bootstrap (bca, percentile: biased low for these set statistics, "
                        f"docs/diversity.md) (default {DEFAULT_METHOD})")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="also write the signature, the settings and every row (with its interval) as JSON here "
                        "(default: none)")
    p.add_argument("--csv", default=None, metavar="PATH",
                   help="also write one row per file, metric and n (" + ",".join(COLUMNS) + ") as CSV here "
                        "(default: none)")
    p.set_defaults(func=run)


def _check_options(args: argparse.Namespace) -> None:
    """Every option, before any file is read: the orders, the interval options, the outputs."""
    check_confidence_options(args)
    if args.interval_method is None:
        args.interval_method = DEFAULT_METHOD
    elif args.confidence is None:
        raise ValueError("--interval-method: only applies with --confidence (no interval is computed without it)")
    if args.n is not None:
        bad = [n for n in args.n if n < 1]
        if bad:
            raise ValueError(f"--n: n-gram orders must be >= 1, got {bad[0]}")
        if len(set(args.n)) != len(args.n):
            raise ValueError(f"--n: repeated orders in {' '.join(map(str, args.n))}")
    if args.metrics is not None and len(set(args.metrics)) != len(args.metrics):
        raise ValueError(f"--metrics: repeated metrics in {' '.join(args.metrics)}")
    check_outputs(args, (("json", "--json"), ("csv", "--csv")))


def _read(args: argparse.Namespace) -> dict[str, list[str]]:
    """Every file's texts, checked before anything is computed: at least 2 texts (Self-BLEU needs
    another text as reference), 3 for subsample intervals (a subset must leave one out)."""
    from jaxmetrics.models.io import read_texts

    fewest = 3 if args.confidence is not None and args.interval_method == "subsample" else 2
    texts = {}
    for path in args.files:
        check_input_file(path, "files")
    for path in args.files:
        t = read_texts(path, name="files")
        if len(t) < fewest:
            why = "subsample intervals leave one text out" if fewest == 3 else "a set needs two texts to compare"
            raise ValueError(f"files: {path!r} holds {len(t)} text(s); at least {fewest} are needed ({why})")
        empty = sum(not s.strip() for s in t)
        if empty:
            print(f"jaxmetrics diversity: {path}: {empty} empty line(s) counted as empty generations (no n-gram)",
                  file=sys.stderr)
        texts[path] = t
    return texts


def _orders(args: argparse.Namespace, value_fn) -> list[int]:
    """``--n``, or the metric's own default order (its Python function's ``n``)."""
    import inspect

    return list(args.n) if args.n is not None else [inspect.signature(value_fn).parameters["n"].default]


def _rows(args: argparse.Namespace, texts: dict[str, list[str]]) -> list[dict]:
    """One row per (file, metric, n): the value and, with --confidence, its interval."""
    import jax

    from jaxmetrics.diversity.intervals import CORPUS_METRICS

    key = None if args.confidence is None else jax.random.key(args.seed)   # the same draws for every file
    rows = []
    for path, t in texts.items():
        for metric in args.metrics:
            value_fn, interval_fn = CORPUS_METRICS[metric]
            for n in _orders(args, value_fn):
                row = {"file": path, "metric": metric, "n": n, "num_texts": len(t), "value": float(value_fn(t, n)),
                       "low": None, "high": None, "standard_error": None}
                if key is not None:
                    ci = interval_fn(t, n, key=key, num_resamples=args.num_resamples, confidence=args.confidence,
                                     method=args.interval_method)
                    row.update(low=float(ci.low), high=float(ci.high), standard_error=float(ci.standard_error),
                               interval=ci.to_dict())
                rows.append(row)
    return rows


def _table(args: argparse.Namespace, rows: list[dict]) -> str:
    """The rows as a Markdown table, then what the intervals are."""
    pct = None if args.confidence is None else f"{args.confidence:.0%}"
    head = "| file | metric | n | texts | value |" + ("" if pct is None else f" {pct} interval |")
    lines = [head, "|---|---|---:|---:|---:|" + ("" if pct is None else "---|")]
    for r in rows:
        ci = "" if pct is None else f" [{r['low']:.4f}, {r['high']:.4f}] |"
        lines.append(f"| {r['file']} | {r['metric']} | {r['n']} | {r['num_texts']} | {r['value']:.4f} |{ci}")
    if pct is not None:
        lines.append(f"{pct} intervals: texts resampled ({args.interval_method}, {args.num_resamples} resamples, "
                     f"seed {args.seed}), for each metric's expected value at this number of texts")
    return "\n".join(lines)


def _signature(args: argparse.Namespace) -> str:
    from jaxmetrics.results import make_signature

    settings = dict(metrics=list(args.metrics), n="default" if args.n is None else list(args.n),
                    tokenizer="tevet_tokenize")
    if args.confidence is not None:
        settings.update(confidence=args.confidence, interval_method=args.interval_method,
                        num_resamples=args.num_resamples, seed=args.seed)
    return make_signature("diversity", **settings)


def run(args: argparse.Namespace) -> int:
    from jaxmetrics.diversity.intervals import CORPUS_METRICS

    _check_options(args)
    if args.metrics is None:
        args.metrics = list(CORPUS_METRICS)
    texts = _read(args)
    rows = _rows(args, texts)
    print(_table(args, rows))
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(COLUMNS)
            w.writerows(["" if r[c] is None else repr(r[c]) if isinstance(r[c], float) else r[c] for c in COLUMNS]
                        for r in rows)
    if args.json:
        write_json(args.json, {"signature": _signature(args), "confidence": args.confidence,
                               "interval_method": None if args.confidence is None else args.interval_method,
                               "num_resamples": args.num_resamples, "seed": args.seed, "rows": rows})
    return 0
