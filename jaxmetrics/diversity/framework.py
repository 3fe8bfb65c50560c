"""Tevet & Berant's framework for evaluating diversity metrics.

A *diversity parameter* ``d`` controls some aspect of diversity of generated response sets
(softmax temperature in the decoding test, a binary low/high content-diversity label in
the content test). A metric is good for that aspect when its values on the sets correlate
with ``d``:

* **decTest** (:func:`decoding_test`): Spearman ρ and Pearson r of (metric, d) over all sets
  of one task;
* **conTest** (:func:`content_test`): Spearman ρ and the optimal 1-D classification accuracy
  (OCA) ``max_θ max(acc_θ, 1 - acc_θ)``, ``acc_θ = (#{x ∈ G1: x <= θ + 1e-5} +
  #{x ∈ G0: x > θ + 1e-5}) / N`` over thresholds θ ∈ metric values (G1: label 1).

Data: McDiv CSVs (``sample_id, context, resp_0..resp_{n-1}, label_value, label_name``), read
by :func:`read_mcdiv_csv`. Metrics on sets: :func:`compute_set_metrics` (n-gram metrics, and
neural ones with ``model=``); :func:`run_diversity_test` runs the test for every metric and
returns a :class:`DiversityTestReport`; :func:`self_decoding_test` generates its own sets
with a tester such as :func:`lm_generator` or :func:`unigram_generator`.
"""
from __future__ import annotations

import csv
import re
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_choice, check_int, check_key, check_texts
from jaxmetrics.diversity import reduction as _red
from jaxmetrics.results import Result, static_field

__all__ = [
    "McDivData",
    "Correlation",
    "ContentTestScores",
    "SetMetricValues",
    "DiversityTestRow",
    "DiversityTestReport",
    "SelfDecodingTestResult",
    "read_mcdiv_csv",
    "optimal_classification_accuracy",
    "decoding_test",
    "content_test",
    "compute_set_metrics",
    "run_diversity_test",
    "self_decoding_test",
    "unigram_generator",
    "lm_generator",
    "plot_metric_vs_parameter",
]


# --------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------

class McDivData(Result):
    """One McDiv-format file (:func:`read_mcdiv_csv`): ``S`` response sets and their parameter.

    The texts are static fields (tuples), so the pytree's only leaf is ``label_values``.

    Attributes:
      label_values: float64 ``[S]`` the diversity parameter of every set.
      sample_ids: ``S`` sample ids (strings).
      contexts: ``S`` contexts.
      response_sets: ``S`` tuples of responses.
      label_name: the parameter's name (``label_name`` of the first row).

    Examples:
      >>> import numpy as np
      >>> McDivData(np.array([0.5]), ("0",), ("hi",), (("a b", "a c"),), "temp")
      McDivData(label_values=f64[1], sample_ids=('0',), contexts=('hi',), response_sets=tuple[1], label_name='temp')
    """

    label_values: np.ndarray
    sample_ids: tuple = static_field()
    contexts: tuple = static_field()
    response_sets: tuple = static_field()
    label_name: str = static_field()


class Correlation(Result):
    """Correlation of a metric with a diversity parameter (:func:`decoding_test`).

    Attributes:
      spearman: Spearman's rank correlation ρ.
      pearson: Pearson's r.

    Examples:
      >>> decoding_test([0.2, 0.5, 0.4, 0.9], [0.2, 0.5, 0.8, 1.1])
      Correlation(spearman=0.8, pearson=0.877058)
    """

    spearman: float
    pearson: float


class ContentTestScores(Result):
    """conTest scores of a metric against binary content labels (:func:`content_test`).

    Attributes:
      spearman: Spearman's rank correlation ρ with the labels.
      pearson: Pearson's r with the labels.
      oca: optimal classification accuracy (1 = the labels are separable by one threshold).

    Examples:
      >>> content_test([0.1, 0.3, 0.2, 0.9, 0.7, 0.8], [0, 0, 0, 1, 1, 1])
      ContentTestScores(spearman=0.87831, pearson=0.964901, oca=1)
    """

    spearman: float
    pearson: float
    oca: float


class SetMetricValues(Result):
    """Diversity of every response set under each metric (:func:`compute_set_metrics`).

    Index by metric name: ``vals["distinct"]`` is that metric's ``[S]`` array.

    Attributes:
      names: the ``M`` metric names, in the order asked for.
      values: float64 ``[M, S]``; row ``m`` holds metric ``names[m]`` (higher = more diverse).

    Examples:
      >>> vals = compute_set_metrics([["a b c", "a b c"], ["a b c", "d e f"]], ["distinct-1"])
      >>> vals
      SetMetricValues(names=('distinct-1',), values=f64[1,2])
      >>> vals["distinct-1"].tolist()
      [0.5, 1.0]
    """

    names: tuple = static_field()
    values: np.ndarray

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.names:
            raise KeyError(f"name: no metric {name!r}; computed: {', '.join(self.names)}")
        return self.values[self.names.index(name)]

    def __contains__(self, name: object) -> bool:
        return name in self.names


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
      n_sets: the number of response sets ``S``.

    Examples:
      >>> report = DiversityTestReport((DiversityTestRow("m", 1.0, 0.5),), "dec", 4)
      >>> report
      DiversityTestReport(rows=tuple[1], test='dec', n_sets=4)
      >>> report["m"]
      DiversityTestRow(metric='m', spearman=1, pearson=0.5, oca=None, error=None)
      >>> print(report.format_table())
      | metric | test | sets | spearman | pearson |
      |---|---|---|---|---|
      | m | dec | 4 | 1.000 | 0.500 |
    """

    rows: tuple
    test: str = static_field()
    n_sets: int = static_field()

    def __getitem__(self, metric: str) -> DiversityTestRow:
        for r in self.rows:
            if r.metric == metric:
                return r
        raise KeyError(f"metric: no row for {metric!r}; have {', '.join(r.metric for r in self.rows)}")

    def format_table(self) -> str:
        """Markdown table: one line per metric (``n/a`` where a statistic is undefined)."""
        cols = ["spearman", "pearson"] + (["oca"] if self.test == "con" else [])
        f = lambda v: "n/a" if v is None else f"{v:.3f}"  # noqa: E731
        lines = ["| metric | test | sets | " + " | ".join(cols) + " |",
                 "|" + "---|" * (3 + len(cols))]
        for r in self.rows:
            lines.append(f"| {r.metric} | {self.test} | {self.n_sets} | "
                         + " | ".join(f(getattr(r, c)) for c in cols) + " |")
        return "\n".join(lines)


class SelfDecodingTestResult(Result):
    """A decTest on generated response sets (:func:`self_decoding_test`).

    Attributes:
      report: the :class:`DiversityTestReport` (``test="dec"``).
      params: float64 ``[S]`` the parameter each set was generated with.
      values: :class:`SetMetricValues` of the sets.
      response_sets: the ``S = P * C`` generated sets (tuples of texts), parameter-major.

    Examples:
      >>> import jax
      >>> gen = unigram_generator(vocab_size=30, length=8, n_responses=4)
      >>> self_decoding_test(gen, ["c"] * 6, [0.5, 2.0, 8.0], ["distinct-1"], key=jax.random.key(0))
      SelfDecodingTestResult(report=DiversityTestReport(rows=tuple[1], test='dec', n_sets=18), params=f64[18], values=SetMetricValues(names=('distinct-1',), values=f64[1,18]), response_sets=tuple[18])
    """

    report: DiversityTestReport
    params: np.ndarray
    values: SetMetricValues
    response_sets: tuple = static_field()


# --------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------

def read_mcdiv_csv(path: str) -> McDivData:
    """Read a McDiv-format CSV: ``sample_id, context, resp_0..resp_{n-1}, label_value, label_name``.

    ``resp_*`` columns must be contiguous from 0; extra columns (e.g. ``metric_*``) are
    ignored. Every response must be a non-empty string and every ``label_value`` a finite
    number (rows are counted from 0 after the header in error messages).

    Args:
      path: the CSV file.

    Returns:
      :class:`McDivData`.

    Examples:
      >>> import tempfile, os
      >>> p = os.path.join(tempfile.mkdtemp(), "d.csv")
      >>> _ = open(p, "w").write("sample_id,context,resp_0,resp_1,label_value,label_name\\n"
      ...                        "0,hi,a b,a c,0.5,temp\\n")
      >>> d = read_mcdiv_csv(p)
      >>> d.response_sets, d.label_values.tolist(), d.label_name
      ((('a b', 'a c'),), [0.5], 'temp')
    """
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        cols = reader.fieldnames or []
        rows = list(reader)
    resp = sorted((int(m.group(1)), c) for c in cols if (m := re.fullmatch(r"resp_(\d+)", c)))
    missing = [c for c in ("sample_id", "context", "label_value", "label_name") if c not in cols]
    if missing:
        raise ValueError(f"path: {path} lacks column(s) {missing}")
    if len(resp) < 2 or [i for i, _ in resp] != list(range(len(resp))):
        raise ValueError(f"path: {path} needs contiguous columns resp_0..resp_(n-1), n >= 2; "
                         f"got {[c for _, c in resp]}")
    if not rows:
        raise ValueError(f"path: {path} has no rows")
    sets, labels = [], []
    for k, r in enumerate(rows):
        s = [r[c] if r[c] is not None else "" for _, c in resp]
        for j, t in enumerate(s):
            if not t.strip():
                raise ValueError(f"path: row {k} (sample_id {r['sample_id']}) has an empty resp_{j}")
        sets.append(tuple(s))
        try:
            label = float(r["label_value"])
        except (TypeError, ValueError):
            raise ValueError(f"path: row {k} has a non-numeric label_value {r['label_value']!r}") from None
        if not np.isfinite(label):
            raise ValueError(f"path: {path}: row {k} (sample_id {r['sample_id']}), column label_value: "
                             f"{r['label_value']!r} is not a finite number")
        labels.append(label)
    return McDivData(label_values=np.asarray(labels, np.float64),
                     sample_ids=tuple(r["sample_id"] for r in rows),
                     contexts=tuple(r["context"] for r in rows), response_sets=tuple(sets),
                     label_name=rows[0]["label_name"])


# --------------------------------------------------------------------------------------
# Test statistics
# --------------------------------------------------------------------------------------

@jax.jit
def _oca_kernel(values, labels, tol):
    inf = jnp.asarray(jnp.inf, values.dtype)
    g1 = jnp.sort(jnp.where(labels, values, inf))
    g0 = jnp.sort(jnp.where(labels, inf, values))
    n = values.shape[0]
    n1 = jnp.sum(labels)
    th = values + tol
    c1 = jnp.searchsorted(g1, th, side="right")  # G1 values <= θ + tol
    c0 = (n - n1) - jnp.searchsorted(g0, th, side="right")  # G0 values > θ + tol
    acc = (c1 + c0) / n
    return jnp.max(jnp.maximum(acc, 1.0 - acc))


def _check_pair(values: Any, params: Any, vname: str, pname: str):
    v = np.asarray(values)
    p = np.asarray(params)
    if v.dtype == object or not np.issubdtype(v.dtype, np.number):
        raise TypeError(f"{vname}: expected numbers, got dtype {v.dtype}")
    if p.dtype == object or not (np.issubdtype(p.dtype, np.number) or p.dtype == np.bool_):
        raise TypeError(f"{pname}: expected numbers, got dtype {p.dtype}")
    if v.ndim != 1 or v.shape != p.shape:
        raise ValueError(f"{vname}: expected a 1-D array matching {pname} {p.shape}, got {v.shape}")
    if v.size < 3:
        raise ValueError(f"{vname}: need at least 3 sets, got {v.size}")
    if not (np.all(np.isfinite(v)) and np.all(np.isfinite(p.astype(np.float64)))):
        raise ValueError(f"{vname}: contains NaN or infinite values")
    return v.astype(np.float64), p.astype(np.float64)


def optimal_classification_accuracy(values: Any, labels: Any, tol: float = 1e-5) -> float:
    """OCA: best accuracy of a 1-D threshold classifier of ``labels`` from ``values``.

    ``OCA = max_{θ ∈ values} max(acc_θ, 1 - acc_θ)``,
    ``acc_θ = (#{i: y_i = 1, x_i <= θ + tol} + #{i: y_i = 0, x_i > θ + tol}) / N``.
    Direction-agnostic; 1 = perfectly separable.

    Args:
      values: ``[N]`` metric values (N >= 3).
      labels: ``[N]`` in {0, 1} (1 = diverse class).
      tol: the threshold offset (Tevet & Berant's 1e-5).

    Returns:
      the accuracy as a Python float.

    Examples:
      >>> optimal_classification_accuracy([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1])
      1.0
      >>> optimal_classification_accuracy([0.1, 0.9, 0.2, 0.8], [0, 0, 1, 1])
      0.75
    """
    v, y = _check_pair(values, labels, "values", "labels")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("labels: expected binary labels 0/1")
    return float(_oca_kernel(jnp.asarray(v), jnp.asarray(y == 1), tol))


def _correlations(values: Any, params: Any, pname: str) -> tuple[float, float]:
    """(Spearman ρ, Pearson r) of ``values`` with ``params``; raises when either is constant."""
    from scipy import stats
    v, p = _check_pair(values, params, "values", pname)
    if np.ptp(v) == 0:
        raise ValueError("values: constant over all sets, correlation undefined")
    if np.ptp(p) == 0:
        raise ValueError(f"{pname}: constant over all sets, correlation undefined")
    return float(stats.spearmanr(p, v).statistic), float(stats.pearsonr(p, v).statistic)


def decoding_test(values: Any, params: Any) -> Correlation:
    """decTest: Spearman ρ and Pearson r of metric ``values [S]`` with a decoding ``params [S]``.

    Raises ``ValueError`` when either input is constant (correlation undefined).

    Args:
      values: ``[S]`` metric values of the sets (S >= 3).
      params: ``[S]`` the diversity parameter each set was generated with (e.g. temperature).

    Returns:
      :class:`Correlation` of Python floats.

    Examples:
      >>> c = decoding_test([0.2, 0.5, 0.4, 0.9], [0.2, 0.5, 0.8, 1.1])
      >>> round(c.spearman, 3), round(c.pearson, 3)
      (0.8, 0.877)
    """
    spearman, pearson = _correlations(values, params, "params")
    return Correlation(spearman=spearman, pearson=pearson)


def content_test(values: Any, labels: Any) -> ContentTestScores:
    """conTest: Spearman ρ, Pearson r and OCA of a metric against binary content labels.

    Args:
      values: ``[S]`` metric values of the sets (S >= 3).
      labels: ``[S]`` in {0, 1} (1 = the high content-diversity class).

    Returns:
      :class:`ContentTestScores` of Python floats.

    Examples:
      >>> r = content_test([0.1, 0.3, 0.2, 0.9, 0.7, 0.8], [0, 0, 0, 1, 1, 1])
      >>> round(r.spearman, 3), r.oca
      (0.878, 1.0)
    """
    oca = optimal_classification_accuracy(values, labels)
    spearman, pearson = _correlations(values, labels, "labels")
    return ContentTestScores(spearman=spearman, pearson=pearson, oca=oca)


# --------------------------------------------------------------------------------------
# Metrics on response sets
# --------------------------------------------------------------------------------------

def _chunks(n: int, size: int):
    for i in range(0, n, size):
        yield slice(i, min(n, i + size))


def _neural_embeddings(sets, lm, kind: str, cache: dict):
    """Sentence embeddings ``[S, R, D]`` or token vectors ``([S, R, L, D], [S, R, L])`` of the
    sets, with the response mask ``[S, R]``; computed once per kind and call (``cache``)."""
    if kind in cache:
        return cache[kind]
    from jaxmetrics.models import sentence_embeddings, token_embeddings
    flat = [t for s in sets for t in s]
    R = max(len(s) for s in sets)
    mask = np.zeros((len(sets), R), bool)
    index = np.zeros((len(sets), R), np.int64)
    k = 0
    for i, s in enumerate(sets):
        mask[i, :len(s)] = True
        index[i, :len(s)] = np.arange(k, k + len(s))
        k += len(s)
    if kind == "sentence":
        e = sentence_embeddings(flat, model=lm, progress=False)
        out = (e[index], mask)
    else:
        te = token_embeddings(flat, model=lm, progress=False)
        tmask = te.embeddings_mask & ~te.special_mask
        out = ((te.embeddings[index], tmask[index]), mask)
    cache[kind] = out
    return out


def _sent_bert(sets, model=None, cache=None, **_):
    e, mask = _neural_embeddings(sets, model, "sentence", {} if cache is None else cache)
    return _red.embedding_cosine_diversity(e, mask)


def _token_sim_metric(metric: str, **kw):
    def sim(a, b):
        from jaxmetrics.similarity import pair_similarity
        return pair_similarity(candidate=a[0], reference=b[0], candidate_mask=a[1],
                               reference_mask=b[1], metric=metric, **kw).f1
    sim.__name__ = f"{metric}_f1"
    return sim


_TOKEN_SIMS: dict = {}


def _token_metric(name: str, metric: str, **kw):
    def fn(sets, model=None, cache=None, batch_size: int = 16, **_):
        if name not in _TOKEN_SIMS:  # one function object → one compilation
            _TOKEN_SIMS[name] = _token_sim_metric(metric, **kw)
        (emb, tmask), mask = _neural_embeddings(sets, model, "tokens", {} if cache is None else cache)
        out = [np.asarray(_red.batched_set_diversity((jnp.asarray(emb[sl]), jnp.asarray(tmask[sl])),
                                                     _TOKEN_SIMS[name], jnp.asarray(mask[sl])))
               for sl in _chunks(len(sets), batch_size)]
        return np.concatenate(out)
    return fn


_SET_METRICS: dict = {
    # name: (function(sets, model=..., cache=...) -> [S], needs_model, description)
    "distinct": (lambda s, **_: _red.distinct_n_sets(s, 1, 5), False,
                 "averaged distinct-n, n=1..5 (Tevet & Berant)"),
    "cosine": (lambda s, **_: _red.ngram_cosine_diversity(s, 1, 5), False,
               "-mean pairwise n-gram count cosine, averaged n=1..5"),
    "entropy": (lambda s, **_: _red.ngram_entropy_sets(s, 2), False, "bigram entropy (nats)"),
    "self-bleu": (lambda s, **_: -_red.self_bleu_sets(s, 4), False,
                  "-(mean Self-BLEU-4 within the set)"),
    "sent-bert": (_sent_bert, True, "-mean pairwise cosine of mean-pooled sentence embeddings"),
    "bertscore": (_token_metric("bertscore", "rwmd", normalize=False), True,
                  "-mean pairwise BERTScore F1 (greedy token matching, no idf/rescaling)"),
    "twmd": (_token_metric("twmd", "twmd", temperature=0.02), True,
             "-mean pairwise tempered WMD F1 (T=0.02, 1 Sinkhorn iteration)"),
}


def _resolve_metric(name: str):
    """``(function, needs_model, description)`` of a metric name (raises for unknown names)."""
    if name in _SET_METRICS:
        return _SET_METRICS[name]
    m = re.fullmatch(r"(distinct|cosine|entropy|self-bleu)-(\d+)", name)
    if m:
        n = int(m.group(2))
        if n < 1:
            raise ValueError(f"metrics: order must be >= 1 in {name!r}")
        fn = {"distinct": lambda s, **_: _red.distinct_n_sets(s, n, n),
              "cosine": lambda s, **_: _red.ngram_cosine_diversity(s, n, n),
              "entropy": lambda s, **_: _red.ngram_entropy_sets(s, n),
              "self-bleu": lambda s, **_: -_red.self_bleu_sets(s, n)}[m.group(1)]
        return fn, False, f"{m.group(1)} with n={n}"
    known = sorted(_SET_METRICS) + ["distinct-N", "cosine-N", "entropy-N", "self-bleu-N"]
    raise ValueError(f"metrics: unknown metric {name!r}; known: {', '.join(known)}")


def _metric_names(metrics: Any) -> list[str]:
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    metrics = list(metrics)
    if not metrics:
        raise ValueError("metrics: no metric names given")
    return metrics


def compute_set_metrics(response_sets: Sequence[Sequence[str]], metrics: Sequence[str], *,
                        model: Any = None) -> SetMetricValues:
    """Diversity of every response set under each named metric (higher = more diverse).

    Metrics: ``distinct`` (averaged distinct-n, n = 1..5), ``cosine`` (``-mean`` pairwise n-gram
    count cosine, n = 1..5), ``entropy`` (bigram entropy), ``self-bleu`` (``-`` mean Self-BLEU-4
    in the set), the single-order variants ``distinct-N / cosine-N / entropy-N /
    self-bleu-N``, and with an encoder ``sent-bert`` (``-mean`` pairwise cosine of mean-pooled
    sentence embeddings), ``bertscore`` (``-mean`` pairwise BERTScore F1, no idf / rescaling)
    and ``twmd`` (``-mean`` pairwise tempered WMD F1, T = 0.02).

    Args:
      response_sets: ``S`` sets of >= 2 non-empty texts.
      metrics: metric names (a list, or one comma-separated string).
      model: the encoder of the neural metrics: a loaded model, a hub id or a local checkpoint
        directory (resolved with :func:`jaxmetrics.models.resolve_model`).

    Returns:
      :class:`SetMetricValues` (``values [M, S]`` float64, indexable by name).

    Examples:
      >>> sets = [["a b c", "a b c"], ["a b c", "d e f"]]
      >>> compute_set_metrics(sets, ["distinct-1", "cosine-1"])["cosine-1"].tolist()
      [-1.0, 0.0]
    """
    metrics = _metric_names(metrics)
    from jaxmetrics.diversity.ngrams import _encode_sets
    _encode_sets(response_sets)  # validates: >= 2 responses per set, no empty / non-str items
    for i, s in enumerate(response_sets):
        check_texts(s, f"response_sets[{i}]")
    resolved = [_resolve_metric(name) for name in metrics]
    lm = None
    if any(needs for _, needs, _ in resolved):
        if model is None:
            name = next(n for n, (_, needs, _) in zip(metrics, resolved) if needs)
            raise ValueError(f"model: metric {name!r} needs an encoder (give model=...)")
        from jaxmetrics.models import resolve_model
        lm = resolve_model(model, purpose="neural diversity metrics")
    cache: dict = {}
    values = [np.asarray(fn(response_sets, model=lm, cache=cache), np.float64)
              for fn, _, _ in resolved]
    return SetMetricValues(names=tuple(metrics), values=np.stack(values))


def run_diversity_test(response_sets: Sequence[Sequence[str]] | None, params: Any,
                       metrics: Sequence[str], *, test: str = "auto", model: Any = None,
                       values: SetMetricValues | None = None) -> DiversityTestReport:
    """Run decTest or conTest for each metric: one :class:`DiversityTestRow` per metric.

    ``test="auto"`` picks conTest when ``params`` are all 0/1, else decTest. A metric that is
    constant over the sets gets ``None`` statistics and an ``error`` message.

    Args:
      response_sets: ``S`` sets of >= 2 texts (may be None when ``values`` is given).
      params: ``[S]`` the diversity parameter of each set (binary labels for conTest).
      metrics: metric names (see :func:`compute_set_metrics`).
      test: ``"auto"``, ``"dec"`` or ``"con"``.
      model: encoder for the neural metrics (see :func:`compute_set_metrics`).
      values: precomputed :class:`SetMetricValues` (then ``response_sets`` and ``model`` are
        not used).

    Returns:
      :class:`DiversityTestReport`.

    Examples:
      >>> sets = [["a a a", "a a a"], ["a b a", "a a b"], ["a b c", "c d e"], ["x y z", "u v w"]]
      >>> report = run_diversity_test(sets, [0.2, 0.5, 0.8, 1.1], ["distinct-1"])
      >>> report["distinct-1"].spearman, report.test
      (1.0, 'dec')
    """
    p = np.asarray(params, np.float64)
    check_choice(test, "test", ("auto", "dec", "con"))
    if test == "auto":
        test = "con" if np.all((p == 0) | (p == 1)) else "dec"
    metrics = _metric_names(metrics)
    if values is None:
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
    return DiversityTestReport(rows=tuple(rows), test=test, n_sets=int(len(p)))


def plot_metric_vs_parameter(params: Any, values: SetMetricValues, path: str, *,
                             label_name: str = "parameter") -> str:
    """Save a scatter plot of every metric against the diversity parameter to ``path``.

    Each metric is z-scored so they share one axis.

    Args:
      params: ``[S]`` the diversity parameter of each set.
      values: :class:`SetMetricValues` of the sets (:func:`compute_set_metrics`).
      path: the image file to write (PNG).
      label_name: the x-axis label.

    Returns:
      ``path``.

    Examples:
      >>> import os, tempfile
      >>> vals = compute_set_metrics([["a b", "a b"], ["a b", "c d"], ["a c", "b d"]], ["distinct"])
      >>> out = plot_metric_vs_parameter([0.1, 0.5, 1.0], vals, os.path.join(tempfile.mkdtemp(), "p.png"))
      >>> os.path.getsize(out) > 0
      True
    """
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if not isinstance(values, SetMetricValues):
        raise TypeError(f"values: expected SetMetricValues (compute_set_metrics), got {type(values).__name__}")
    p = np.asarray(params, np.float64)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in values.names:
        v = np.asarray(values[name], np.float64)
        z = (v - v.mean()) / (v.std() if v.std() > 0 else 1.0)
        order = np.argsort(p, kind="stable")
        ax.plot(p[order], z[order], ".", alpha=0.6, label=name)
    ax.set_xlabel(label_name)
    ax.set_ylabel("metric (z-score)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------
# Self-generating decoding test (decTest end to end)
# --------------------------------------------------------------------------------------

def self_decoding_test(generate: Callable, contexts: Sequence[str], params: Sequence[float],
                       metrics: Sequence[str], *, key: jax.Array, model: Any = None
                       ) -> SelfDecodingTestResult:
    """Generate response sets over a sweep of a decoding parameter and run decTest.

    For every parameter value ``d`` (e.g. temperature) ``generate(contexts, d, key)`` must
    return one response set (list of texts) per context; all sets are scored by every
    metric and correlated with ``d`` (Spearman, Pearson).

    Args:
      generate: ``(contexts, d, key) -> list[list[str]]``; e.g. :func:`lm_generator` (a causal
        LM sampler) or :func:`unigram_generator`.
      contexts: ``C`` prompts.
      params: ``P >= 2`` parameter values.
      metrics: metric names (see :func:`compute_set_metrics`).
      key: ``jax.random`` key (split once per parameter value).
      model: encoder for the neural metrics.

    Returns:
      :class:`SelfDecodingTestResult` (the report, the ``P * C`` sets, their parameters and
      metric values).

    Examples:
      >>> gen = unigram_generator(vocab_size=30, length=8, n_responses=4)
      >>> res = self_decoding_test(gen, ["c"] * 6, [0.5, 2.0, 8.0], ["distinct-1"],
      ...                          key=jax.random.key(0))
      >>> res.report["distinct-1"].spearman > 0.8
      True
    """
    check_key(key)
    if isinstance(contexts, str):
        raise TypeError("contexts: expected a list of strings, got str")
    contexts = list(contexts)
    if not contexts:
        raise ValueError("contexts: empty")
    params = [float(p) for p in params]
    if len(params) < 2:
        raise ValueError(f"params: need at least 2 parameter values, got {len(params)}")
    sets, labels = [], []
    for p, k in zip(params, jax.random.split(key, len(params))):
        out = generate(contexts, p, k)
        if len(out) != len(contexts):
            raise ValueError(f"generate: returned {len(out)} sets for {len(contexts)} contexts")
        sets.extend([tuple(s) for s in out])
        labels.extend([p] * len(out))
    values = compute_set_metrics(sets, metrics, model=model)
    report = run_diversity_test(None, labels, metrics, test="dec", values=values)
    return SelfDecodingTestResult(report=report, params=np.asarray(labels, np.float64),
                                  values=values, response_sets=tuple(sets))


def lm_generator(*, model: Any, n_responses: int = 5, max_new_tokens: int = 20,
                 parameter: str = "temperature", output: str = "text", **sampling_kw) -> Callable:
    """A decTest tester backed by a causal LM and :func:`jaxmetrics.lm.generate`.

    Returns ``generate(contexts, d, key) -> list[list[str]]``: every context is tokenized,
    repeated ``n_responses`` times and sampled in one batch with ``temperature = d`` (or
    ``top_p = d`` with ``parameter="top_p"``); responses are the generated continuations only
    (prompt excluded), decoded to text (``output="text"``) or written as space-separated
    token ids (``output="ids"``, for n-gram metrics on model tokens as in the MAUVE paper).

    Args:
      model: a causal LM: a loaded model, a hub id or a local checkpoint directory (resolved
        with :func:`jaxmetrics.models.resolve_model`).
      n_responses: responses per set (>= 2).
      max_new_tokens: tokens sampled per response.
      parameter: ``"temperature"`` or ``"top_p"``.
      output: ``"text"`` or ``"ids"``.
      **sampling_kw: passed to :func:`jaxmetrics.lm.generate` (e.g. ``top_k``,
        ``eos_token_id``).

    Returns:
      the tester ``(contexts, d, key) -> list[list[str]]``.

    Examples:
      >>> import tempfile
      >>> from jaxmetrics.models import load_model
      >>> from jaxmetrics.testing import tiny_checkpoint
      >>> lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
      >>> gen = lm_generator(model=lm, n_responses=2, max_new_tokens=3, output="ids", eos_token_id=None)
      >>> sets = gen(["hello there"], 1.0, jax.random.key(0))
      >>> len(sets), len(sets[0]), len(sets[0][0].split())
      (1, 2, 3)
    """
    from jaxmetrics.lm import generate
    from jaxmetrics.models import resolve_model

    check_int(n_responses, "n_responses", minimum=2)
    check_int(max_new_tokens, "max_new_tokens", minimum=1)
    check_choice(parameter, "parameter", ("temperature", "top_p"))
    check_choice(output, "output", ("text", "ids"))
    lm = resolve_model(model, causal=True, purpose="lm_generator")

    def sample_sets(contexts, d, key):
        prompts = [np.asarray(lm.tokenizer(c)["input_ids"], np.int32) for c in contexts]
        batch = [p for p in prompts for _ in range(n_responses)]
        out = generate(batch, model=lm, key=key, max_new_tokens=max_new_tokens,
                       **{parameter: float(d)}, **sampling_kw)
        seqs = out.sequences(include_prompt=False)
        if output == "ids":
            texts = [" ".join(str(int(t)) for t in s) for s in seqs]
        else:
            texts = [lm.tokenizer.decode(s, skip_special_tokens=True) for s in seqs]
        return [texts[i * n_responses:(i + 1) * n_responses] for i in range(len(contexts))]

    return sample_sets


def unigram_generator(vocab_size: int = 50, length: int = 12, n_responses: int = 5) -> Callable:
    """A toy tester: responses are words drawn from ``softmax(-rank / d)`` over a vocabulary.

    Higher ``d`` (temperature) flattens the distribution, so sets get more diverse — a
    known-ordering generator for checking the decoding-test wiring without a language
    model. The draws come from the ``key`` the tester is called with.

    Args:
      vocab_size: number of words ``w0 .. w{V-1}``.
      length: words per response.
      n_responses: responses per set (>= 2).

    Returns:
      the tester ``(contexts, d, key) -> list[list[str]]``.

    Examples:
      >>> g = unigram_generator(vocab_size=5, length=3, n_responses=2)
      >>> sets = g(["x"], 1.0, jax.random.key(0))
      >>> len(sets), len(sets[0]), len(sets[0][0].split())
      (1, 2, 3)
    """
    check_int(vocab_size, "vocab_size", minimum=2)
    check_int(length, "length", minimum=1)
    check_int(n_responses, "n_responses", minimum=2)
    words = np.array([f"w{i}" for i in range(vocab_size)])
    logits = -jnp.arange(vocab_size, dtype=jnp.float32)

    def sample_sets(contexts, temperature, key):
        draw = jax.random.categorical(key, logits / temperature,
                                      shape=(len(contexts), n_responses, length))
        draw = np.asarray(draw)
        return [[" ".join(words[r]) for r in s] for s in draw]

    return sample_sets
