"""Small numerics that several metric families share, written once.

* :func:`mean_std` — mean and sample standard deviation (``ddof=1``; 0 for one value), the
  "mean ± s.d." of every multi-seed or multi-run summary.
* :func:`trapezoid_area` — area under a curve of points taken *in the given order* (no
  sorting), as MAUVE integrates its divergence curve.
* :func:`average_ranks`, :func:`pearson`, :func:`spearman` — host-side (numpy, float64) rank and
  linear correlation, with ties sharing their average rank (``scipy.stats.rankdata`` /
  ``pearsonr`` / ``spearmanr``) and NaN where a side is constant.
* :func:`segment_ranks`, :func:`segment_pearson` — the same inside ``jax.jit``, per group of a
  segmented vector (one value per item, a group id per item), for correlations computed on the
  device over many groups at once.

Examples:
    >>> import numpy as np
    >>> mean_std([1.0, 2.0, 3.0])
    (2.0, 1.0)
    >>> average_ranks(np.array([10.0, 30.0, 20.0, 30.0])).tolist()
    [1.0, 3.5, 2.0, 3.5]
    >>> round(spearman([1, 2, 3, 4], [1, 3, 2, 4]), 6)
    0.8
    >>> float(trapezoid_area(np.array([[0.0, 1.0], [1.0, 0.0]])))   # natural order, x decreasing
    -0.5
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.compilation import apply_default_compilation_cache

apply_default_compilation_cache()  # on by default; see jaxmetrics.compilation

__all__ = ["average_ranks", "mean_std", "pearson", "segment_pearson", "segment_ranks", "spearman",
           "trapezoid_area"]


def mean_std(values: Any, axis: int | None = None):
    """Mean and sample standard deviation (``ddof=1``) of ``values``, in float64.

    With ``axis=None`` over all values, returned as two Python floats; otherwise along
    ``axis``, returned as two arrays. The standard deviation of a single value is 0 (not NaN).
    """
    v = np.asarray(values, np.float64)
    if axis is None:
        v = v.reshape(-1)
        return float(v.mean()), (float(v.std(ddof=1)) if v.size > 1 else 0.0)
    mean = v.mean(axis=axis)
    std = v.std(axis=axis, ddof=1) if v.shape[axis] > 1 else np.zeros_like(mean)
    return mean, std


@jax.jit
def trapezoid_area(curve: jax.Array) -> jax.Array:
    """Trapezoid area under ``curve [..., m, 2]`` (points ``(x, y)``) taken in the given order.

    ``sum_i (x_i - x_{i+1}) (y_i + y_{i+1}) / 2``: positive for a curve whose ``x`` decreases
    along it (MAUVE's divergence curve runs from ``(1, 0)``-side ``x = 1`` down to ``x = 0``).
    """
    x, y = curve[..., 0], curve[..., 1]
    return jnp.sum((x[..., :-1] - x[..., 1:]) * (y[..., :-1] + y[..., 1:]), axis=-1) / 2


def average_ranks(x: Any, *, descending: bool = False) -> np.ndarray:
    """1-based ranks along the last axis, ties sharing their average rank (float64).

    ``descending=True`` gives rank 1 to the largest value.
    """
    a = np.asarray(x, np.float64)
    if descending:
        a = -a
    flat = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
    out = np.empty_like(flat)
    for row, v in enumerate(flat):
        order = np.argsort(v, kind="stable")
        s = v[order]
        new = np.concatenate([[True], s[1:] != s[:-1]])
        run = np.cumsum(new) - 1
        starts = np.flatnonzero(new)
        ends = np.append(starts[1:], len(s)) - 1
        r = np.empty(len(v))
        r[order] = (starts[run] + ends[run]) / 2 + 1
        out[row] = r
    return out.reshape(a.shape)


def pearson(x: Any, y: Any) -> float:
    """Pearson correlation of two equal-length vectors (float64); NaN when a side is constant."""
    a, b = np.asarray(x, np.float64).reshape(-1), np.asarray(y, np.float64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"y: expected {a.size} values (as many as x), got {b.size}")
    da, db = a - a.mean(), b - b.mean()
    den = np.sqrt((da * da).sum() * (db * db).sum())
    return float(np.clip((da * db).sum() / den, -1.0, 1.0)) if den > 0 else float("nan")


def spearman(x: Any, y: Any) -> float:
    """Spearman's rho: the Pearson correlation of the average ranks; NaN when a side is constant."""
    return pearson(average_ranks(np.asarray(x).reshape(-1)), average_ranks(np.asarray(y).reshape(-1)))


def segment_pearson(x, y, groups, sizes, num_groups: int):
    """Pearson r of ``x`` and ``y`` ``[N]`` within each group (traceable).

    ``groups [N]`` int group ids in ``[0, num_groups)``; ``sizes [G]`` items per group. Returns
    ``[G]``, NaN for a group where a side is constant (or empty).
    """
    seg = partial(jax.ops.segment_sum, segment_ids=groups, num_segments=num_groups)
    n = jnp.where(sizes > 0, sizes, 1).astype(x.dtype)
    dx = x - (seg(x) / n)[groups]
    dy = y - (seg(y) / n)[groups]
    sxy, sxx, syy = seg(dx * dy), seg(dx * dx), seg(dy * dy)
    den = sxx * syy
    ok = den > 0
    r = jnp.where(ok, sxy * jax.lax.rsqrt(jnp.where(ok, den, 1.0)), jnp.nan)
    return jnp.clip(r, -1.0, 1.0)


def segment_ranks(x, groups, num_groups: int):
    """1-based ranks of ``x [N]`` within each group (traceable), ties sharing their average rank."""
    n = x.shape[0]
    order = jnp.lexsort((x, groups))                   # by group, then by value
    xs, gs = x[order], groups[order]
    pos = jnp.arange(n)
    new = jnp.concatenate([jnp.ones((1,), bool), (xs[1:] != xs[:-1]) | (gs[1:] != gs[:-1])])
    run = jnp.cumsum(new) - 1                          # index of each tie run
    start = jax.ops.segment_min(pos, run, num_segments=n)
    end = jax.ops.segment_max(pos, run, num_segments=n)
    gstart = jax.ops.segment_min(pos, gs, num_segments=num_groups)
    rank = (start[run] + end[run]).astype(x.dtype) / 2 - gstart[gs].astype(x.dtype) + 1
    return jnp.zeros_like(x).at[order].set(rank)
