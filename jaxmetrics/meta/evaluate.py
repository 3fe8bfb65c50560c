"""Which metric agrees with people, and is the difference real: :func:`meta_evaluate`.

Given per-item scores of several metrics and human scores (with optional groups and systems),
:func:`meta_evaluate` returns a :class:`MetaEvaluation`: for every metric, level and correlation
the value with its bootstrap interval; for every pair of metrics the significance of the
difference between their correlations with the same human scores (a paired permutation test or a
paired bootstrap, and the Williams test for Pearson), Holm-adjusted over the pairs; and the
metrics ranked as significance clusters. ``docs/meta_evaluation.md`` says which correlation and
which test answer which question.
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.confidence import holm_adjust, resampling_signature
from jaxmetrics.meta.statistics import significance_clusters, williams_test
from jaxmetrics.results import Result, static_field

__all__ = ["CORRELATIONS", "LEVELS", "MetaEvaluation", "meta_evaluate"]

#: ``correlations=``: Pearson r, Spearman ρ, Kendall τ-b, WMT's pairwise τ-like
CORRELATIONS = ("pearson", "spearman", "kendall", "tau_like")
#: the levels a :class:`MetaEvaluation` can hold, in order
LEVELS = ("pooled", "averaged", "system")
#: the paired test of each correlation's differences
TESTS = {"pearson": "permutation", "spearman": "permutation", "kendall": "paired-bootstrap",
         "tau_like": "paired-bootstrap"}
#: elements per vmapped chunk when ``batch_size`` is not given
CHUNK_ELEMENTS = 1 << 25


class MetaEvaluation(Result):
    """Correlations of several metrics with human scores, their intervals, pairwise tests and
    clusters (:func:`meta_evaluate`). Axes: ``L`` levels, ``C`` correlations, ``M`` metrics,
    ``G`` groups; ``[..., i, j]`` compares metric ``i`` with metric ``j``.

    Attributes:
      value: ``[L, C, M]`` the correlation at each level on the data as given.
      low, high: ``[L, C, M]`` the percentile bootstrap interval (items resampled within groups;
        systems for the system level).
      group_value, group_low, group_high: ``[G, C, M]`` each group's correlation and interval.
      difference: ``[L, C, M, M]`` ``value[..., i] - value[..., j]``.
      p_value: ``[L, C, M, M]`` two-sided p-value of "no difference" (the test of ``tests``; 1 on
        the diagonal).
      p_holm: ``[L, C, M, M]`` the same, Holm-adjusted over the ``M (M - 1) / 2`` pairs of each
        level and correlation.
      williams_statistic, williams_p, williams_holm: ``[L, M, M]`` the Williams test of the Pearson
        correlations (t, two-sided p, Holm-adjusted p); NaN at the ``averaged`` level, where it
        does not apply (a mean of per-group correlations), and on the diagonal.
      cluster: int ``[L, C, M]`` significance cluster of each metric (1 = the top metric and
        every metric not significantly worse than it, by ``p_holm`` at ``alpha``; 0 = undefined).
      metrics, correlations, levels, group_names: the axes' labels (static).
      tests: the paired test of each correlation: ``'permutation'`` or ``'paired-bootstrap'`` (static).
      num_items: items (pairs, segments) ``n``; num_systems: systems (0 without ``systems=``) (static).
      confidence, alpha, num_resamples, threshold: the settings (static).
      signature: what the numbers depend on (static; :mod:`jaxmetrics.results`):
        ``metric:meta-evaluation``, the ``key``, ``method:percentile`` (the intervals; the tests
        are in ``tests``), ``num_resamples``, ``confidence``, ``alpha``, ``threshold``, the
        correlations and the metrics' names.
    """

    value: np.ndarray
    low: np.ndarray
    high: np.ndarray
    group_value: np.ndarray
    group_low: np.ndarray
    group_high: np.ndarray
    difference: np.ndarray
    p_value: np.ndarray
    p_holm: np.ndarray
    williams_statistic: np.ndarray
    williams_p: np.ndarray
    williams_holm: np.ndarray
    cluster: np.ndarray
    metrics: tuple = static_field()
    correlations: tuple = static_field()
    levels: tuple = static_field()
    group_names: tuple = static_field()
    tests: tuple = static_field()
    num_items: int = static_field()
    num_systems: int = static_field()
    confidence: float = static_field()
    alpha: float = static_field()
    num_resamples: int = static_field()
    threshold: float = static_field(default=0.0)
    signature: str = static_field(default="", repr=False)

    def _index(self, level: str | None, correlation: str) -> tuple[int, int]:
        level = self.default_level() if level is None else level
        if level not in self.levels:
            raise ValueError(f"level: {level!r} is not one of {', '.join(self.levels)}")
        if correlation not in self.correlations:
            raise ValueError(f"correlation: {correlation!r} is not one of {', '.join(self.correlations)}")
        return self.levels.index(level), self.correlations.index(correlation)

    def default_level(self) -> str:
        """``'averaged'`` when there are groups (the STS authors' level), else ``'pooled'``."""
        return "averaged" if "averaged" in self.levels else "pooled"

    def best(self, level: str | None = None, correlation: str = "pearson") -> list[str]:
        """The metrics of cluster 1 (the top metric and those not significantly worse), best first."""
        k, c = self._index(level, correlation)
        members = [m for m in range(len(self.metrics)) if self.cluster[k, c, m] == 1]
        return [self.metrics[m] for m in sorted(members, key=lambda m: -self.value[k, c, m])]

    def top(self, level: str | None = None, correlation: str = "pearson") -> str:
        """The metric with the highest value (the head of :meth:`best`)."""
        return self.best(level, correlation)[0]

    def table(self, level: str | None = None, correlation: str | None = None, digits: int = 3) -> str:
        """A plain-text table of one level, one line per metric: for every correlation its value, its
        interval and (in parentheses) its significance cluster; for ``correlation`` (default: the
        first), by which the lines are ordered, the Holm-adjusted p-value of the difference from the
        top metric (and Williams' for Pearson where it applies)."""
        correlation = correlation or self.correlations[0]
        k, c = self._index(level, correlation)
        top = self.metrics.index(self.top(self.levels[k], correlation))
        head = ["metric"] + [f"{name} [{self.confidence:.0%} CI] (cluster)" for name in self.correlations] + \
            [f"p vs top ({correlation}, {TESTS[correlation]}, Holm)"]
        has_w = correlation == "pearson" and np.isfinite(self.williams_p[k]).any()
        if has_w:
            head.append("p vs top (Williams, Holm)")
        rows = [head]
        order = sorted(range(len(self.metrics)), key=lambda m: (self.cluster[k, c, m] or 1e9, -self.value[k, c, m]))
        for m in order:
            cells = [str(self.metrics[m])]
            for j in range(len(self.correlations)):
                cells.append(f"{_num(self.value[k, j, m], digits)} [{_num(self.low[k, j, m], digits)}, "
                             f"{_num(self.high[k, j, m], digits)}] ({int(self.cluster[k, j, m])})")
            cells.append("-" if m == top else _p(self.p_holm[k, c, top, m]))
            if has_w:
                cells.append("-" if m == top else _p(self.williams_holm[k, top, m]))
            rows.append(cells)
        widths = [max(len(r[j]) for r in rows) for j in range(len(head))]
        lines = ["  ".join(cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(r, widths)))
                 .rstrip() for r in rows]
        best = ", ".join(self.best(self.levels[k], correlation))
        return (f"level: {self.levels[k]} ({self.num_systems if self.levels[k] == 'system' else self.num_items} "
                f"{'systems' if self.levels[k] == 'system' else 'items'}); best by {correlation} "
                f"(not significantly worse than the top at alpha={self.alpha}): {best}\n" + "\n".join(lines))

    def csv_rows(self) -> list[Mapping[str, Any]]:
        """One row per (level or group, correlation, metric): the value, its interval, the cluster,
        and the p-values (raw, Holm; Williams for Pearson) against the level's top metric."""
        out = []
        for k, level in enumerate(self.levels):
            for c, corr in enumerate(self.correlations):
                top = self.metrics.index(self.top(level, corr)) if (self.cluster[k, c] == 1).any() else None
                for m, name in enumerate(self.metrics):
                    vs = top is not None and m != top
                    out.append({"level": level, "group": "", "correlation": corr, "metric": name,
                                "value": float(self.value[k, c, m]), "low": float(self.low[k, c, m]),
                                "high": float(self.high[k, c, m]), "cluster": int(self.cluster[k, c, m]),
                                "test": self.tests[c],
                                "p_vs_top": float(self.p_value[k, c, top, m]) if vs else None,
                                "p_vs_top_holm": float(self.p_holm[k, c, top, m]) if vs else None,
                                "williams_p_vs_top_holm": float(self.williams_holm[k, top, m])
                                if vs and corr == "pearson" and np.isfinite(self.williams_holm[k, top, m]) else None})
        if len(self.group_names) > 1:
            for g, group in enumerate(self.group_names):
                for c, corr in enumerate(self.correlations):
                    for m, name in enumerate(self.metrics):
                        out.append({"level": "group", "group": group, "correlation": corr, "metric": name,
                                    "value": float(self.group_value[g, c, m]), "low": float(self.group_low[g, c, m]),
                                    "high": float(self.group_high[g, c, m]), "cluster": None, "test": None,
                                    "p_vs_top": None, "p_vs_top_holm": None, "williams_p_vs_top_holm": None})
        return out


def _num(v, digits: int) -> str:
    v = float(v)
    return "nan" if math.isnan(v) else f"{v:.{digits}f}"


def _p(v) -> str:
    v = float(v)
    return "nan" if math.isnan(v) else (f"{v:.2g}" if v < 0.001 else f"{v:.3f}")


def _check_scores(scores: Any, names: Any, n_hint: int | None) -> tuple[tuple[str, ...], np.ndarray]:
    if isinstance(scores, Mapping):
        if names is not None:
            raise ValueError("names: give names only with an array of scores; a dict names its metrics")
        labels, rows = tuple(str(k) for k in scores), list(scores.values())
    else:
        arr = scores if isinstance(scores, (list, tuple)) else np.asarray(scores)
        rows = list(arr) if not isinstance(arr, np.ndarray) or arr.ndim == 2 else [arr]
        labels = tuple(str(x) for x in names) if names is not None else tuple(f"metric{i}" for i in range(len(rows)))
        if len(labels) != len(rows):
            raise ValueError(f"names: expected {len(rows)} names (one per metric), got {len(labels)}")
    if not rows:
        raise ValueError("scores: no metric given")
    if len(set(labels)) != len(labels):
        raise ValueError(f"scores: metric names repeat: {labels}")
    out = []
    for name, r in zip(labels, rows):
        a = np.asarray(r, np.float64)
        if a.ndim != 1 or (n_hint is not None and a.size != n_hint):
            raise ValueError(f"scores[{name!r}]: expected {n_hint} scores (one per item), got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"scores[{name!r}]: contains NaN or infinite scores")
        if np.ptp(a) == 0:
            raise ValueError(f"scores[{name!r}]: constant over all items, its correlation is undefined")
        out.append(a)
    return labels, np.stack(out)


def _check_inputs(scores, human, groups, systems, names, correlations):
    from jaxmetrics.similarity.grouped import group_ids

    h = np.asarray(human, np.float64)
    if h.ndim != 1 or h.size < 3:
        raise ValueError(f"human: expected [n] scores with n >= 3, got shape {h.shape}")
    if not np.all(np.isfinite(h)):
        raise ValueError("human: contains NaN or infinite scores")
    if np.ptp(h) == 0:
        raise ValueError("human: constant over all items, every correlation is undefined")
    labels, x = _check_scores(scores, names, h.size)
    corrs = (correlations,) if isinstance(correlations, str) else tuple(dict.fromkeys(correlations))
    if not corrs:
        raise ValueError("correlations: no correlation given")
    for c in corrs:
        if c not in CORRELATIONS:
            raise ValueError(f"correlations: {c!r} is not one of {', '.join(CORRELATIONS)}")
    gid, gnames = group_ids(groups, h.size)
    sizes = np.bincount(gid, minlength=len(gnames))
    small = [(gnames[g], int(sizes[g])) for g in range(len(gnames)) if sizes[g] < 3]
    if small:
        raise ValueError(f"groups: group {small[0][0]!r} has {small[0][1]} item(s); a resampled correlation needs "
                         f"at least 3 per group ({len(small)} group(s) too small)")
    sid = snames = None
    if systems is not None:
        sid, snames = group_ids(systems, h.size, "systems")
        if len(snames) < 3:
            raise ValueError(f"systems: a system-level correlation needs at least 3 systems, got {len(snames)}")
    return labels, x, h, corrs, gid, gnames, sid, snames


def _interval(vals: jax.Array, conf: float, what: str, labels: tuple) -> tuple[np.ndarray, np.ndarray]:
    v = np.asarray(vals, np.float64)                         # [B, M, ...]
    bad = np.isnan(v).sum(axis=0)
    if bad.any():
        m = int(np.unravel_index(np.argmax(bad), bad.shape)[0])
        warnings.warn(f"meta_evaluate: {int(bad.max())} of {v.shape[0]} resamples give an undefined {what} for "
                      f"{labels[m]!r} (a resampled group with a constant side); its interval uses the others",
                      stacklevel=3)
    a = (1 - conf) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(v, a, axis=0), np.nanquantile(v, 1 - a, axis=0)


def _pairwise(p: np.ndarray) -> np.ndarray:
    """Holm over the upper triangle of ``p [M, M]``, mirrored; 1 on the diagonal."""
    M = p.shape[0]
    iu = np.triu_indices(M, 1)
    out = np.ones((M, M))
    fam = p[iu]
    adj = np.full(fam.shape, np.nan)     # an undefined test (NaN) is no test: not counted by Holm
    ok = np.isfinite(fam)
    if ok.any():
        adj[ok] = holm_adjust(fam[ok])
    out[iu], out[iu[::-1]] = adj, adj
    return out


def _chunk(batch_size, B: int, per: int) -> int:
    if batch_size is not None:
        return max(1, min(int(batch_size), B))
    return max(1, min(B, CHUNK_ELEMENTS // max(per, 1)))


def _one_level(x, h, gid, G, W, swaps, corrs, conf, threshold, batch_size, labels):
    """Values, intervals, per-group values and p-values of one level."""
    from jaxmetrics.confidence import resampling_p_values
    from jaxmetrics.meta.resampling import level_data, level_permutation, level_values

    M, n = x.shape
    d = level_data(x, h, gid, G)
    chunk = _chunk(batch_size, W.shape[0], 12 * (M + 1) * n)
    both = level_values(d, jnp.concatenate([jnp.ones((1, n), jnp.float32), W]), corrs, threshold=threshold,
                        batch_size=chunk)                      # row 0: the data as given (one program for both)
    point = {c: (v[0][:1], v[1][:1]) for c, v in both.items()}
    boot = {c: (v[0][1:], v[1][1:]) for c, v in both.items()}
    res = {"value": [], "low": [], "high": [], "gvalue": [], "glow": [], "ghigh": [], "p": []}
    for c in corrs:
        value, gvalue = np.asarray(point[c][1][0], np.float64), np.asarray(point[c][0][0], np.float64)
        lo, hi = _interval(boot[c][1], conf, c, labels)
        glo, ghi = _interval(boot[c][0], conf, f"per-group {c}", labels)
        if TESTS[c] == "permutation":
            obs, null = level_permutation(d, swaps, c, batch_size=_chunk(batch_size, swaps.shape[0], 8 * G * M * M))
            p = np.asarray(resampling_p_values(obs, null, tolerance=1e-6), np.float64)
        else:
            b = np.asarray(boot[c][1], np.float64)
            bdiff = b[:, :, None] - b[:, None, :]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                null = bdiff - np.nanmean(bdiff, axis=0)
            p = resampling_p_values(value[:, None] - value[None, :], np.nan_to_num(null, nan=0.0), tolerance=1e-9)
        for key, v in zip(res, (value, lo, hi, gvalue, glo, ghi, p)):
            res[key].append(v)
    return {k: np.stack(v) for k, v in res.items()}


def meta_evaluate(scores: Any, human: Any, *, groups: Any = None, systems: Any = None, names: Any = None,
                  key: jax.Array, correlations: Any = ("pearson", "spearman", "kendall"),
                  num_resamples: int = 1000, confidence: float = 0.95, alpha: float = 0.05,
                  threshold: float = 0.0, batch_size: int | None = None) -> MetaEvaluation:
    """Meta-evaluate metrics against human scores: correlations, intervals, pairwise tests, clusters.

    Levels (``docs/meta_evaluation.md``):

    * ``pooled``: one correlation over all ``n`` items;
    * ``averaged`` (with ``groups``): the size-weighted mean of the per-group correlations,
      ``Σ_g n_g r_g / n`` (the STS authors' per-year average); the per-group values are
      ``group_value``. For ``tau_like`` the pairs of every group are pooled instead
      (``Σ(C - D) / Σ(C + D)``, WMT's DARR with a group per source segment);
    * ``system`` (with ``systems``): the correlation of the per-system means of each metric and
      of the human scores.

    Intervals: percentile intervals of ``num_resamples`` stratified bootstrap resamples (the
    items of each group resampled with replacement within it; one draw serves every metric,
    level and group) and, at the system level, of resamples of the systems. Tests, for every pair
    of metrics at every level: Pearson and Spearman by the paired permutation test (each item's
    two standardized metric values — ranks for Spearman — swapped by a coin, Deutsch et al. 2021;
    ``num_resamples`` draws), Kendall and τ-like by the paired bootstrap (the centred resampled
    differences); Pearson also by Williams' test (pooled and system levels). Every family of
    ``M (M - 1) / 2`` p-values is Holm-adjusted; clusters use the adjusted permutation/bootstrap
    p-values at ``alpha``. All resamples are computed as weights in vmapped chunks.

    Args:
      scores: ``{name: [n]}`` per-item scores of each metric, or ``[M, n]`` (with ``names``).
      human: ``[n]`` human scores (finite, not constant).
      groups: optional ``[n]`` group labels (dataset, document; >= 3 items per group).
      systems: optional ``[n]`` system labels (>= 3 systems) for the system level.
      names: metric names for an array of ``scores`` (default ``metric0``, ...).
      key: a ``jax.random`` key (required).
      correlations: any of ``pearson``, ``spearman``, ``kendall`` (τ-b), ``tau_like``. Kendall and
        τ-like cost ``O(B n²)`` per metric (item pairs; within groups for the per-group values).
      num_resamples: ``B`` bootstrap resamples and permutation draws, at least
        ``(1 + confidence) / (1 - confidence)`` (39 at 0.95; fewer make the interval's end points
        the extreme resamples: :func:`jaxmetrics._validation.check_resampling`).
      confidence: the intervals' nominal coverage in ``[0.5, 1)``.
      alpha: significance level of the clusters, in ``(0, 1)``.
      threshold: ``tau_like`` counts the pairs whose human scores differ by more than this.
      batch_size: resamples per vmapped chunk (``None``: sized from the data).

    Returns:
      :class:`MetaEvaluation`; ``.table()``, ``.best()``, ``.to_csv()``, ``.to_dict()``.

    Examples:
      >>> import jax, numpy as np
      >>> rng = np.random.default_rng(0)
      >>> human = rng.normal(size=200)
      >>> good, bad = human + rng.normal(size=200) * 0.5, human + rng.normal(size=200) * 2
      >>> out = meta_evaluate({"good": good, "bad": bad}, human, key=jax.random.key(0), num_resamples=200)
      >>> out.best(), out.levels
      (['good'], ('pooled',))
      >>> bool(out.low[0, 0, 0] < out.value[0, 0, 0] < out.high[0, 0, 0])
      True
    """
    from jaxmetrics._validation import check_key, check_open_unit, check_resampling
    from jaxmetrics.confidence import randomization_draws
    from jaxmetrics.meta.resampling import stratified_weights

    check_key(key)
    B, conf = check_resampling(num_resamples, confidence)
    a = check_open_unit(alpha, "alpha")
    if not (isinstance(threshold, (int, float, np.number)) and np.isfinite(threshold) and threshold >= 0):
        raise ValueError(f"threshold: expected a finite number >= 0, got {threshold!r}")
    labels, x, h, corrs, gid, gnames, sid, snames = _check_inputs(scores, human, groups, systems, names, correlations)
    M, n = x.shape
    G = len(gnames)
    k_boot, k_perm, k_sys, k_sperm = jax.random.split(key, 4)
    W = stratified_weights(k_boot, B, gid, G)
    swaps = randomization_draws(k_perm, B, n, paired=True)
    args = (corrs, conf, float(threshold), batch_size, labels)
    levels, per = ["pooled"], [_one_level(x, h, np.zeros(n, np.int64), 1, W, swaps, *args)]
    group = per[0]
    if G > 1:
        levels.append("averaged")
        per.append(_one_level(x, h, gid, G, W, swaps, *args))
        group = per[1]
    if sid is not None:
        Y = len(snames)
        cnt = np.bincount(sid, minlength=Y)
        xs = np.stack([np.bincount(sid, r, Y) / cnt for r in x])
        hs = np.bincount(sid, h, Y) / cnt
        if np.ptp(hs) == 0 or np.any(np.ptp(xs, axis=1) == 0):
            raise ValueError("systems: the per-system means of the human scores or of a metric are all equal; "
                             "the system-level correlation is undefined")
        Ws = stratified_weights(k_sys, B, np.zeros(Y, np.int64), 1)
        levels.append("system")
        per.append(_one_level(xs, hs, np.zeros(Y, np.int64), 1, Ws, randomization_draws(k_sperm, B, Y, paired=True),
                              *args))
    out = _assemble(per, group, levels, labels, corrs, gnames, x, h, sid, snames, n, conf, a, B, float(threshold))
    return out.replace(signature=resampling_signature(
        "meta-evaluation", key=key, method="percentile", num_resamples=B, confidence=conf, alpha=a,
        threshold=float(threshold), correlations=list(corrs), metrics=list(labels)))


def _assemble(per, group, levels, labels, corrs, gnames, x, h, sid, snames, n, conf, alpha, B, threshold):
    """The :class:`MetaEvaluation` of the per-level results: Holm, Williams, clusters."""
    M, L, C = len(labels), len(levels), len(corrs)
    value = np.stack([r["value"] for r in per])                     # [L, C, M]
    p = np.stack([r["p"] for r in per])                             # [L, C, M, M]
    holm = np.stack([[_pairwise(p[k, c]) for c in range(C)] for k in range(L)])
    cluster = np.stack([[significance_clusters(value[k, c], holm[k, c], alpha=alpha) for c in range(C)]
                        for k in range(L)])
    wt, wp, wh = (np.full((L, M, M), np.nan) for _ in range(3))
    for k, level in enumerate(levels):
        if level == "averaged" or M < 2 or "pearson" not in corrs:
            continue
        if level == "system":
            Y = len(snames)
            cnt = np.bincount(sid, minlength=Y)
            xs, hs, m = np.stack([np.bincount(sid, r, Y) / cnt for r in x]), np.bincount(sid, h, Y) / cnt, Y
        else:
            xs, hs, m = x, h, n
        if m < 4:
            warnings.warn(f"meta_evaluate: the Williams test needs at least 4 items; the {level} level has {m}, so "
                          f"its Williams p-values are NaN", stacklevel=3)
            continue
        r = np.clip(np.corrcoef(np.vstack([hs[None], xs])), -1.0, 1.0)
        w = williams_test(r[0, 1:, None], r[0, None, 1:], r[1:, 1:], m)
        off = ~np.eye(M, dtype=bool)
        wt[k] = np.where(off, w.statistic, np.nan)
        wp[k] = np.where(off, w.p_value, np.nan)
        wh[k] = np.where(off, _pairwise(np.where(off, w.p_value, 1.0)), np.nan)
    return MetaEvaluation(
        value=value, low=np.stack([r["low"] for r in per]), high=np.stack([r["high"] for r in per]),
        group_value=np.moveaxis(group["gvalue"], -1, 0), group_low=np.moveaxis(group["glow"], -1, 0),
        group_high=np.moveaxis(group["ghigh"], -1, 0), difference=value[..., :, None] - value[..., None, :],
        p_value=p, p_holm=holm, williams_statistic=wt, williams_p=wp, williams_holm=wh, cluster=cluster,
        metrics=labels, correlations=corrs, levels=tuple(levels), group_names=tuple(gnames),
        tests=tuple(TESTS[c] for c in corrs), num_items=int(n), num_systems=0 if snames is None else len(snames),
        confidence=conf, alpha=alpha, num_resamples=B, threshold=threshold)
