"""Tevet & Berant's test of several metrics at once: :func:`run_diversity_test` and its report.

Every metric's values over the sets (:func:`~jaxmetrics.diversity.compute_set_metrics`, or
given) are correlated with the diversity parameter by
:func:`~jaxmetrics.diversity.decoding_test` (decTest) or
:func:`~jaxmetrics.diversity.content_test` (conTest, binary labels); the rows form a
:class:`DiversityTestReport`.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import numpy as np

from jaxmetrics._validation import check_choice, check_open_unit, check_resampling
from jaxmetrics.diversity.correlation import content_test, decoding_test
from jaxmetrics.diversity.set_metrics import SetMetricValues, compute_set_metrics, resolve_set_metric, set_metric_names
from jaxmetrics.results import Result, static_field
from jaxmetrics.results import make_signature

__all__ = ["DIVERSITY_TESTS", "DiversityTestRow", "DiversityTestReport", "run_diversity_test"]

#: ``test=``: the decoding test (decTest), the content test (conTest), or ``'auto'``
DIVERSITY_TESTS = ("auto", "dec", "con")


class DiversityTestRow(Result):
    """decTest / conTest result of one metric (a row of :class:`DiversityTestReport`).

    Attributes:
      metric: the metric's name.
      spearman: Spearman's ρ with the parameter (None when undefined).
      pearson: Pearson's r (None when undefined).
      oca: optimal classification accuracy (conTest only; None for decTest or when undefined).
      error: why the statistics are undefined (e.g. the metric is constant over the sets), else
        None.

    Examples:
      >>> DiversityTestRow("distinct", 1.0, 0.9)
      DiversityTestRow(metric='distinct', spearman=1, pearson=0.9, oca=None, error=None)
    """

    metric: str = static_field()
    spearman: float | None = None
    pearson: float | None = None
    oca: float | None = None
    error: str | None = static_field(default=None)


class DiversityTestReport(Result):
    """Tevet & Berant's test of every metric on one set of responses (:func:`run_diversity_test`).

    ``report["distinct"]`` is the row of one metric; :meth:`format_table` prints all of them.

    Attributes:
      rows: one :class:`DiversityTestRow` per metric, in the order asked for.
      test: ``"dec"`` (decTest: Spearman, Pearson) or ``"con"`` (conTest: adds OCA).
      num_sets: the number of response sets ``S``.
      signature: what the numbers depend on (static; :mod:`jaxmetrics.results`):
        ``metric:diversity-test``, the test, the metric names and, when a neural metric was
        computed here, the encoder with its weights' hash and dtype (``""`` for a report built
        by hand).
      meta: with ``num_resamples=`` in :func:`run_diversity_test`, the
        :class:`~jaxmetrics.meta.MetaEvaluation` of the metrics (the sets are the items, the
        parameter the "human" score): Pearson and Spearman intervals (sets resampled), every
        pair of metrics tested (permutation, Williams; Holm) and the significance clusters;
        else ``None``.

    Examples:
      >>> report = DiversityTestReport((DiversityTestRow("m", 1.0, 0.5),), "dec", 4)
      >>> report
      DiversityTestReport(rows=tuple[1], test='dec', num_sets=4)
      >>> report["m"]
      DiversityTestRow(metric='m', spearman=1, pearson=0.5, oca=None, error=None)
      >>> print(report.format_table())
      | metric | test | sets | spearman | pearson |
      |---|---|---|---|---|
      | m | dec | 4 | 1.000 | 0.500 |
    """

    rows: tuple
    test: str = static_field()
    num_sets: int = static_field()
    signature: str = static_field(default="", repr=False)
    meta: Any = dataclasses.field(default=None, repr=False)

    def __getitem__(self, metric: str) -> DiversityTestRow:
        for r in self.rows:
            if r.metric == metric:
                return r
        raise KeyError(f"metric: no row for {metric!r}; have {', '.join(r.metric for r in self.rows)}")

    def format_table(self) -> str:
        """Markdown table: one line per metric (``n/a`` where a statistic is undefined); with
        ``meta``, also the Spearman ρ's interval, its significance cluster (1 = not significantly
        worse than the top metric) and the Holm-adjusted p-value against the top."""
        cols = ["spearman", "pearson"] + (["oca"] if self.test == "con" else [])
        f = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        extra = [] if self.meta is None else [f"spearman {self.meta.confidence:.0%} CI", "cluster", "p vs top (Holm)"]
        lines = ["| metric | test | sets | " + " | ".join(cols + extra) + " |",
                 "|" + "---|" * (3 + len(cols) + len(extra))]
        for r in self.rows:
            cells = [f(getattr(r, c)) for c in cols]
            if self.meta is not None:
                cells += _meta_cells(self.meta, r.metric)
            lines.append(f"| {r.metric} | {self.test} | {self.num_sets} | " + " | ".join(cells) + " |")
        return "\n".join(lines)


def _meta_cells(meta, metric: str) -> list[str]:
    """A metric's Spearman interval, cluster and p-value against the top (``n/a`` when the metric
    was left out of the meta-evaluation, as undefined)."""
    if metric not in meta.metrics:
        return ["n/a"] * 3
    c, m = meta.correlations.index("spearman"), meta.metrics.index(metric)
    top = meta.metrics.index(meta.top("pooled", "spearman"))
    p = "-" if m == top else f"{float(meta.p_holm[0, c, top, m]):.3g}"
    return [f"[{float(meta.low[0, c, m]):.3f}, {float(meta.high[0, c, m]):.3f}]", str(int(meta.cluster[0, c, m])), p]


def run_diversity_test(response_sets: Sequence[Sequence[str]] | None, params: Any,
                       metrics: Sequence[str], *, test: str = "auto", model: Any = None,
                       values: SetMetricValues | None = None, dtype: Any = None, seed: int = 0,
                       num_resamples: int = 0, confidence: float = 0.95, alpha: float = 0.05,
                       ) -> DiversityTestReport:
    """Run decTest or conTest for each metric: one :class:`DiversityTestRow` per metric.

    ``test="auto"`` picks conTest when ``params`` are all 0/1, else decTest. A metric that is
    constant over the sets gets ``None`` statistics and an ``error`` message.

    Args:
      response_sets: ``S`` sets of >= 2 texts (may be None when ``values`` is given).
      params: ``[S]`` the diversity parameter of each set (binary labels for conTest).
      metrics: metric names (see :func:`compute_set_metrics`).
      test: ``"auto"``, ``"dec"`` or ``"con"``.
      model: encoder for the neural metrics (see :func:`compute_set_metrics`); named in the
        report's signature when a neural metric is computed.
      values: precomputed :class:`SetMetricValues` (then ``response_sets`` and ``model`` are
        not used, and the signature names no model: add it with
        :func:`jaxmetrics.results.extend_signature`).
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).
      seed: seed of the meta-evaluation's resampling (key ``jax.random.key(seed)``).
      num_resamples: when >= 2, the report's ``meta`` is the meta-evaluation of the metrics with a
        defined correlation (:func:`jaxmetrics.meta.meta_evaluate`: Pearson and Spearman, the sets
        resampled, ``num_resamples`` bootstrap resamples and permutation draws): intervals,
        pairwise tests, clusters; 0 (default): none. At least ``(1 + confidence) / (1 - confidence)``
        when not 0.
      confidence: the meta-evaluation's interval coverage, in ``[0.5, 1)``.
      alpha: the significance level of its clusters, on Holm-adjusted p-values.

    Returns:
      :class:`DiversityTestReport`.

    Examples:
      >>> sets = [["a a a", "a a a"], ["a b a", "a a b"], ["a b c", "c d e"], ["x y z", "u v w"]]
      >>> report = run_diversity_test(sets, [0.2, 0.5, 0.8, 1.1], ["distinct-1"])
      >>> report["distinct-1"].spearman, report.test
      (1.0, 'dec')
    """
    p = np.asarray(params, np.float64)
    check_choice(test, "test", DIVERSITY_TESTS)
    if num_resamples != 0:  # before any metric is computed
        check_resampling(num_resamples, confidence)
        check_open_unit(alpha, "alpha")
    if test == "auto":
        test = "con" if np.all((p == 0) | (p == 1)) else "dec"
    metrics = set_metric_names(metrics)
    lm = None
    if values is None:
        if model is not None and any(resolve_set_metric(m).needs_model for m in metrics):
            from jaxmetrics.models import resolve_model

            lm = model = resolve_model(model, purpose="neural diversity metrics", dtype=dtype)
        values = compute_set_metrics(response_sets, metrics, model=model)
    missing = [m for m in metrics if m not in values]
    if missing:
        raise ValueError(f"values: no values for metric(s) {missing}")
    rows = []
    for name in metrics:
        try:
            if test == "con":
                r = content_test(values[name], p)
                rows.append(DiversityTestRow(metric=name, spearman=r.spearman, pearson=r.pearson,
                                             oca=r.oca))
            else:
                r = decoding_test(values[name], p)
                rows.append(DiversityTestRow(metric=name, spearman=r.spearman, pearson=r.pearson))
        except ValueError as e:
            rows.append(DiversityTestRow(metric=name, error=str(e)))
    encoder = {} if lm is None else {"dtype": getattr(lm, "dtype", None)}
    meta = None
    if num_resamples:
        import jax

        from jaxmetrics.meta import meta_evaluate

        ok = [r.metric for r in rows if r.error is None]
        if ok:
            meta = meta_evaluate({m: values[m] for m in ok}, p, key=jax.random.key(int(seed)),
                                 correlations=("pearson", "spearman"), num_resamples=num_resamples,
                                 confidence=confidence, alpha=alpha)
    sig = make_signature("diversity-test", model=lm, test=test, metrics=tuple(metrics), **encoder)
    return DiversityTestReport(rows=tuple(rows), test=test, num_sets=int(len(p)), signature=sig, meta=meta)
