"""Diversity metrics of response sets by name: the registry and :func:`compute_set_metrics`.

A metric name resolves (:func:`resolve_set_metric`) to a :class:`SetMetric`: the n-gram
metrics ``distinct`` (averaged distinct-n, n = 1..5), ``cosine`` (``-mean`` pairwise n-gram
count cosine, n = 1..5), ``entropy`` (bigram entropy), ``self-bleu`` (``-`` mean Self-BLEU-4 in
the set) and their single-order forms ``distinct-N / cosine-N / entropy-N / self-bleu-N``
(:mod:`~jaxmetrics.diversity.reduction`), and the neural metrics ``sent-bert``, ``bertscore``
and ``twmd``, whose vectors come from the models package
(:func:`~jaxmetrics.diversity.embed_response_sets`).
"""
from __future__ import annotations

import re
from typing import Any, Sequence

import numpy as np

from jaxmetrics._validation import check_texts
from jaxmetrics.diversity import reduction as _red
from jaxmetrics.diversity.neural import SetEmbeddings, embed_response_sets, token_set_diversity
from jaxmetrics.diversity.encoding import encode_sets
from jaxmetrics.results import Result, make_signature, static_field

__all__ = ["SetMetric", "SetMetricValues", "resolve_set_metric", "set_metric_names",
           "compute_set_metrics"]

# name: (kind, order or None, the encoder vectors it needs, description)
_NAMED = {
    "distinct": ("distinct", None, None, "averaged distinct-n, n=1..5 (Tevet & Berant)"),
    "cosine": ("cosine", None, None, "-mean pairwise n-gram count cosine, averaged n=1..5"),
    "entropy": ("entropy", 2, None, "bigram entropy (nats)"),
    "self-bleu": ("self-bleu", 4, None, "-(mean Self-BLEU-4 within the set)"),
    "sent-bert": ("sent-bert", None, "sentence",
                  "-mean pairwise cosine of mean-pooled sentence embeddings"),
    "bertscore": ("bertscore", None, "tokens",
                  "-mean pairwise BERTScore F1 (greedy token matching, no idf/rescaling)"),
    "twmd": ("twmd", None, "tokens", "-mean pairwise tempered WMD F1 (T=0.02, 1 Sinkhorn iteration)"),
}
_ORDERED = ("distinct", "cosine", "entropy", "self-bleu")


class SetMetric(Result):
    """A diversity metric of response sets, resolved from its name (:func:`resolve_set_metric`).

    Attributes:
      name: the name it was resolved from (e.g. ``"distinct-2"``).
      kind: ``distinct``, ``cosine``, ``entropy``, ``self-bleu``, ``sent-bert``, ``bertscore`` or
        ``twmd``.
      order: the n-gram order of a single-order metric (``entropy``: 2, ``self-bleu``: 4), None
        for the averaged n = 1..5 ones and the neural ones.
      embeddings: the encoder vectors it needs, ``"sentence"`` or ``"tokens"``; None for n-gram
        metrics.
      description: one line saying what it computes (higher = more diverse for every metric).

    Examples:
      >>> resolve_set_metric("distinct-2")
      SetMetric(name='distinct-2', kind='distinct', order=2, embeddings=None, description='distinct with n=2')
    """

    name: str = static_field()
    kind: str = static_field()
    order: int | None = static_field()
    embeddings: str | None = static_field()
    description: str = static_field()

    @property
    def needs_model(self) -> bool:
        """Whether the metric needs an encoder (``model=`` of :func:`compute_set_metrics`)."""
        return self.embeddings is not None


def resolve_set_metric(name: str) -> SetMetric:
    """The :class:`SetMetric` of a metric name; raises ``ValueError`` for an unknown name.

    Args:
      name: ``distinct``, ``cosine``, ``entropy``, ``self-bleu``, ``sent-bert``, ``bertscore``,
        ``twmd``, or ``distinct-N`` / ``cosine-N`` / ``entropy-N`` / ``self-bleu-N`` (N >= 1).

    Returns:
      :class:`SetMetric`.

    Examples:
      >>> resolve_set_metric("sent-bert").needs_model
      True
      >>> resolve_set_metric("cosine").needs_model
      False
    """
    if name in _NAMED:
        kind, order, emb, desc = _NAMED[name]
        return SetMetric(name=name, kind=kind, order=order, embeddings=emb, description=desc)
    m = re.fullmatch(r"(distinct|cosine|entropy|self-bleu)-(\d+)", name)
    if m:
        n = int(m.group(2))
        if n < 1:
            raise ValueError(f"metrics: order must be >= 1 in {name!r}")
        return SetMetric(name=name, kind=m.group(1), order=n, embeddings=None,
                         description=f"{m.group(1)} with n={n}")
    known = sorted(_NAMED) + [f"{k}-N" for k in _ORDERED]
    raise ValueError(f"metrics: unknown metric {name!r}; known: {', '.join(known)}")


def set_metric_names(metrics: Any) -> list[str]:
    """Metric names from a list or one comma-separated string (blanks dropped); raises when
    none is given. Names are not resolved here (see :func:`resolve_set_metric`).

    Examples:
      >>> set_metric_names("distinct, cosine-2")
      ['distinct', 'cosine-2']
    """
    if isinstance(metrics, str):
        metrics = [m.strip() for m in metrics.split(",") if m.strip()]
    metrics = list(metrics)
    if not metrics:
        raise ValueError("metrics: no metric names given")
    return metrics


def _values(metric: SetMetric, sets, vectors: SetEmbeddings | None) -> np.ndarray:
    """``[S]`` values of one resolved metric (``vectors``: the embeddings it needs)."""
    kind, n = metric.kind, metric.order
    if kind == "distinct":
        return _red.distinct_n_sets(sets, *((1, 5) if n is None else (n, n)))
    if kind == "cosine":
        return _red.ngram_cosine_diversity(sets, *((1, 5) if n is None else (n, n)))
    if kind == "entropy":
        return _red.ngram_entropy_sets(sets, n)
    if kind == "self-bleu":
        return -_red.self_bleu_sets(sets, n)
    if kind == "sent-bert":
        return _red.embedding_cosine_diversity(vectors.embeddings, vectors.embeddings_mask)
    return token_set_diversity(vectors, similarity=kind)


class SetMetricValues(Result):
    """Diversity of every response set under each metric (:func:`compute_set_metrics`).

    Index by metric name: ``vals["distinct"]`` is that metric's ``[S]`` array.

    Attributes:
      names: the ``M`` metric names, in the order asked for.
      values: float64 ``[M, S]``; row ``m`` holds metric ``names[m]`` (higher = more diverse).
      signature: what the numbers depend on (static, not in the repr; :mod:`jaxmetrics.results`):
        ``metric:set-metrics``, the ``metrics`` and, when a neural metric was computed, the encoder
        with its weights' hash and its ``dtype``.

    Examples:
      >>> vals = compute_set_metrics([["a b c", "a b c"], ["a b c", "d e f"]], ["distinct-1"])
      >>> vals
      SetMetricValues(names=('distinct-1',), values=f64[1,2])
      >>> vals["distinct-1"].tolist()
      [0.5, 1.0]
    """

    names: tuple = static_field()
    values: np.ndarray
    signature: str = static_field(default="", repr=False)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.names:
            raise KeyError(f"name: no metric {name!r}; computed: {', '.join(self.names)}")
        return self.values[self.names.index(name)]

    def __contains__(self, name: object) -> bool:
        return name in self.names


def compute_set_metrics(response_sets: Sequence[Sequence[str]], metrics: Sequence[str], *,
                        model: Any = None, progress: bool = False, dtype: Any = None) -> SetMetricValues:
    """Diversity of every response set under each named metric (higher = more diverse).

    Metrics: see :func:`resolve_set_metric` (the module docstring lists them). The neural
    metrics need ``model``; the responses are embedded once per kind of vector
    (:func:`~jaxmetrics.diversity.embed_response_sets`) and shared by the metrics that use it.

    Args:
      response_sets: ``S`` sets of >= 2 non-empty texts.
      metrics: metric names (a list, or one comma-separated string).
      model: the encoder of the neural metrics: a loaded model, a hub id or a local checkpoint
        directory (resolved with :func:`jaxmetrics.models.resolve_model`).
      progress: show a progress bar over the metrics (and the featurizer's).
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`SetMetricValues` (``values [M, S]`` float64, indexable by name).

    Examples:
      >>> sets = [["a b c", "a b c"], ["a b c", "d e f"]]
      >>> compute_set_metrics(sets, ["distinct-1", "cosine-1"])["cosine-1"].tolist()
      [-1.0, 0.0]
    """
    metrics = set_metric_names(metrics)
    encode_sets(response_sets)  # validates: >= 2 responses per set, no empty / non-str items
    for i, s in enumerate(response_sets):
        check_texts(s, f"response_sets[{i}]")
    resolved = [resolve_set_metric(name) for name in metrics]
    lm = None
    needy = [m for m in resolved if m.needs_model]
    if needy:
        if model is None:
            raise ValueError(f"model: metric {needy[0].name!r} needs an encoder (give model=...)")
        from jaxmetrics.models import resolve_model
        lm = resolve_model(model, purpose="neural diversity metrics", dtype=dtype)
    vectors: dict = {}
    rows = []
    bar = None
    if progress and len(resolved) > 1:
        from jaxmetrics.progress import progress_bar

        bar = progress_bar(len(resolved), desc="diversity metrics", unit="metric")
    try:
        for m in resolved:
            if bar is not None:
                bar.set_postfix_str(m.name)
            if m.embeddings is not None and m.embeddings not in vectors:
                vectors[m.embeddings] = embed_response_sets(
                    response_sets, model=lm, tokens=m.embeddings == "tokens", progress=progress)
            rows.append(np.asarray(_values(m, response_sets, vectors.get(m.embeddings)), np.float64))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    encoder = {} if lm is None else dict(model=lm, dtype=getattr(lm, "dtype", None))
    return SetMetricValues(names=tuple(metrics), values=np.stack(rows),
                           signature=make_signature("set-metrics", metrics=tuple(metrics), **encoder))
