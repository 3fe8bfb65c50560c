"""The closed-form statistics of meta-evaluation: Kendall's τ-b and τ-like, the Williams test
and significance clusters (Holm's correction is :func:`jaxmetrics.confidence.holm_adjust`, the
one every leaderboard uses).

* :func:`kendall_tau_b` — Kendall's τ-b of two score vectors (ties in either corrected for, as
  ``scipy.stats.kendalltau``'s default);
* :func:`tau_like` — WMT's "Kendall's τ-like" for relative rankings: over the pairs whose human
  scores differ by more than ``threshold``, ``(Concordant - Discordant) / (Concordant +
  Discordant)``, a tie of the metric counting as discordant (WMT 2018-2020 DARR);
* :func:`williams_test` — Williams' (1959) t-test for the difference between two dependent
  correlations that share a variable (the human scores), as WMT's metrics task used it;
* :func:`significance_clusters` — metrics ranked as clusters: cluster 1 is the top metric and every
  metric not significantly worse than it; the rest are clustered the same way.

Examples:
    >>> round(kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]), 4)
    0.6667
"""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxmetrics.results import Result, static_field

__all__ = ["WilliamsTest", "kendall_tau_b", "significance_clusters", "tau_like",
           "williams_test"]


def _pair(x: Any, y: Any, xname: str, yname: str) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(x, np.float64).reshape(-1)
    b = np.asarray(y, np.float64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"{yname}: expected {a.size} values (as many as {xname}), got {b.size}")
    if a.size < 2:
        raise ValueError(f"{xname}: a correlation needs at least 2 values, got {a.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"{xname if not np.all(np.isfinite(a)) else yname}: contains NaN or infinite values")
    return a, b


def _signs(v: np.ndarray) -> np.ndarray:
    return np.sign(v[:, None] - v[None, :])


def kendall_tau_b(x: Any, y: Any) -> float:
    """Kendall's τ-b of ``x`` and ``y`` ``[n]`` (float64, on the host, O(n²) memory in blocks).

    ``τ_b = (C - D) / sqrt((n0 - n1) (n0 - n2))`` with ``C`` / ``D`` the concordant / discordant
    pairs, ``n0 = n (n - 1) / 2`` and ``n1`` / ``n2`` the pairs tied in ``x`` / in ``y``; NaN when a
    side is constant (as ``scipy.stats.kendalltau``).

    Examples:
      >>> kendall_tau_b([1, 2, 2, 3], [1, 2, 3, 3])
      0.8
    """
    a, b = _pair(x, y, "x", "y")
    n = a.size
    s = t1 = t2 = 0.0
    for lo in range(0, n, 1024):                      # row blocks: memory 1024 x n
        sa = np.sign(a[lo:lo + 1024, None] - a[None])
        sb = np.sign(b[lo:lo + 1024, None] - b[None])
        s += float((sa * sb).sum())
        t1 += float((sa == 0).sum())
        t2 += float((sb == 0).sum())
    n0 = n * (n - 1) / 2
    n1, n2 = (t1 - n) / 2, (t2 - n) / 2
    den = np.sqrt((n0 - n1) * (n0 - n2))
    return float(np.clip(s / 2 / den, -1.0, 1.0)) if den > 0 else float("nan")


def tau_like(scores: Any, human: Any, *, threshold: float = 0.0) -> float:
    """WMT's Kendall τ-like of metric ``scores`` against ``human`` ``[n]`` (relative rankings).

    Over the pairs ``(k, l)`` with ``|human_k - human_l| > threshold`` (WMT DARR: 25 points of a
    0-100 direct assessment), a pair is concordant when the metric orders it as the humans do and
    discordant otherwise, a metric tie included; ``τ = (C - D) / (C + D)``. NaN when no pair
    qualifies.

    Examples:
      >>> tau_like([0.1, 0.2, 0.2], [1.0, 2.0, 3.0])   # the tie of the last pair is discordant
      0.333333...
    """
    a, b = _pair(scores, human, "scores", "human")
    if not np.isfinite(threshold) or threshold < 0:
        raise ValueError(f"threshold: expected a finite number >= 0, got {threshold}")
    sa, sb = _signs(a), _signs(b)
    valid = np.abs(b[:, None] - b[None, :]) > threshold
    conc = float(((sa == sb) & valid).sum()) / 2
    disc = float(((sa != sb) & valid).sum()) / 2
    return (conc - disc) / (conc + disc) if conc + disc > 0 else float("nan")


class WilliamsTest(Result):
    """Williams' test of ``r12 = r13`` for two correlations sharing variable 1 (:func:`williams_test`).

    Attributes:
      statistic: the t statistic (positive when ``r12 > r13``).
      p_value: two-sided p-value, ``2 P(T_{n-3} > |t|)``.
      p_greater: one-sided p-value of ``r12 > r13`` (WMT's), ``P(T_{n-3} > t)``.
      df: degrees of freedom ``n - 3`` (static).
    """

    statistic: Any
    p_value: Any
    p_greater: Any
    df: int = static_field()


def _t_sf(t: np.ndarray, df: float) -> np.ndarray:
    """``P(T_df > t)`` of Student's t (float64, ``scipy.special.stdtr``)."""
    from scipy.special import stdtr

    return stdtr(df, -np.asarray(t, np.float64))


def williams_test(r12: Any, r13: Any, r23: Any, n: int) -> WilliamsTest:
    """Williams' t-test for two dependent correlations with a variable in common.

    Variable 1 is the human score, 2 and 3 two metrics scored on the same ``n`` items:

        t = (r12 - r13) sqrt((n - 1)(1 + r23)) / sqrt(2 K (n - 1)/(n - 3) + (r12 + r13)²/4 (1 - r23)³),
        K = 1 - r12² - r13² - r23² + 2 r12 r13 r23,

    with ``n - 3`` degrees of freedom (Williams 1959; Steiger 1980, eq. 7; Graham & Baldwin 2014).
    Arrays broadcast; the p-values are float64.

    Args:
      r12: correlation of the human scores with metric A.
      r13: correlation of the human scores with metric B.
      r23: correlation between the two metrics.
      n: the number of items (``n >= 4``).

    Returns:
      :class:`WilliamsTest`.

    Examples:
      >>> w = williams_test(0.6, 0.5, 0.7, 100)
      >>> round(float(w.statistic), 4), round(float(w.p_value), 4)
      (1.5952, 0.1139)
    """
    if isinstance(n, bool) or int(n) != n or n < 4:
        raise ValueError(f"n: the Williams test needs n >= 4 items (n - 3 degrees of freedom), got {n}")
    vals = []
    for v, name in ((r12, "r12"), (r13, "r13"), (r23, "r23")):
        a = np.asarray(v, np.float64)
        if not np.all(np.isfinite(a)) or np.any(np.abs(a) > 1):
            raise ValueError(f"{name}: expected finite correlations in [-1, 1]")
        vals.append(a)
    a, b, c = np.broadcast_arrays(*vals)
    n = int(n)
    k = 1 - a * a - b * b - c * c + 2 * a * b * c
    den = np.sqrt(np.maximum(2 * k * (n - 1) / (n - 3) + (a + b) ** 2 / 4 * (1 - c) ** 3, 0.0))
    num = (a - b) * np.sqrt((n - 1) * (1 + c))
    with np.errstate(invalid="ignore", divide="ignore"):   # den = 0: t = 0 when num = 0, else +-inf
        t = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.where(num == 0, 0.0, np.sign(num) * np.inf))
    greater = _t_sf(t, n - 3)
    two = np.minimum(1.0, 2 * _t_sf(np.abs(t), n - 3))
    return WilliamsTest(statistic=t, p_value=two, p_greater=greater, df=n - 3)


def significance_clusters(values: Any, p_values: Any, *, alpha: float = 0.05) -> np.ndarray:
    """Cluster ranks of ``M`` metrics from their values and pairwise (adjusted) p-values.

    Cluster 1 is the metric with the highest value and every metric whose difference from it is
    not significant (``p >= alpha``); those are removed and cluster 2 is formed the same way from
    the rest, and so on. A metric with an undefined (NaN) value gets cluster 0.

    Args:
      values: ``[M]`` the metrics' correlations (higher is better).
      p_values: ``[M, M]`` symmetric p-values of the pairwise differences (Holm-adjusted).
      alpha: the significance level.

    Returns:
      int ``[M]`` cluster numbers (1 = best).

    Examples:
      >>> p = [[1, 0.3, 0.01], [0.3, 1, 0.02], [0.01, 0.02, 1]]
      >>> significance_clusters([0.80, 0.79, 0.60], p).tolist()
      [1, 1, 2]
    """
    v = np.asarray(values, np.float64).reshape(-1)
    p = np.asarray(p_values, np.float64)
    if p.shape != (v.size, v.size):
        raise ValueError(f"p_values: expected shape ({v.size}, {v.size}), got {p.shape}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha: expected a level in (0, 1), got {alpha}")
    out = np.zeros(v.size, np.int64)
    left = [m for m in range(v.size) if np.isfinite(v[m])]
    k = 0
    while left:
        k += 1
        top = max(left, key=lambda m: v[m])
        members = [m for m in left if m == top or not p[top, m] < alpha]
        out[members] = k
        left = [m for m in left if m not in members]
    return out
