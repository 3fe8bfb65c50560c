"""MAUVE from histograms: divergence curve, area, frontier integral, smoothing.

This is the histogram stage of MAUVE (Pillutla et al., NeurIPS 2021), written as pure
JAX functions of arrays so it can be jit-compiled, vmapped and differentiated (the soft
MAUVE of :mod:`jaxmetrics.mauve` builds on it). Under ``jax.enable_x64(True)`` it equals
``mauve-text`` 0.4.0 to about 1e-12 on any pair of histograms, including empty bins.

Definitions (``p``, ``q`` are histograms over ``k`` bins, ``c`` the scaling):

* mixture weights ``w_j = linspace(1e-6, 1 - 1e-6, m)``, ``R_j = w_j p + (1 - w_j) q``;
* ``KL(a || b) = sum_{i: a_i > 0} a_i log(a_i / b_i)`` (nats);
* divergence curve ``[(1, 0)] + [(exp(-c KL(q||R_j)), exp(-c KL(p||R_j)))]_j + [(0, 1)]``,
  an ``[m + 2, 2]`` array (the two end points are the analytic limits w -> 0 and w -> 1);
* MAUVE = area under that curve by the trapezoid rule in the curve's natural order
  ``sum_j (x_j - x_{j+1}) (y_j + y_{j+1}) / 2`` (x decreases and y increases along it, so this
  equals mauve-text's symmetrised, sorted ``sklearn.metrics.auc`` without any sorting);
* frontier integral (Liu et al. 2021, scaling 2) ``FI = sum_i f(p_i, q_i)`` with
  ``f = (p + q)/2 - p q (log p - log q)/(p - q)``, ``f = (p + q)/2`` when exactly one is 0, and
  ``f = 0`` when both are 0 or ``|p - q| <= 1e-8``;
* add-constant smoothing from counts ``p*_i = (n_i + b) / sum_j (n_j + b)``; ``b = 1/2`` is the
  Krichevsky-Trofimov estimator behind mauve-text's ``mauve_star`` / ``frontier_integral_star``.

Two scorings of the curve (``scoring=``):

* ``'mauve-text'`` (default): the above, as mauve-text >= 0.2;
* ``'paper'``: the code behind the NeurIPS 2021 paper (``krishnap25/mauve-experiments``,
  ``src/mauve_metrics.py``, and mauve 0.1.0): the angular grid
  ``w = sort(cos(linspace(1e-6, pi/2 - 1e-6, m)))`` (points crowd towards ``w = 0`` and
  ``w = 1``), ``R_j = w_j p + (1 - w_j) q`` in that arithmetic, the same end points and axes,
  and the area ``sklearn.metrics.auc(x, y)`` on the curve in that order (no sorting, no
  symmetrisation), i.e. the same natural-order trapezoid. Where sklearn's ``auc`` would reject a
  curve whose ``x`` is non-monotone only by rounding (identical histograms: the paper's code
  raises ``ValueError`` there), the trapezoid is returned (1 up to rounding). The frontier
  integral does not depend on the scoring (the paper's code has none).
"""
from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.mauve.frontier.settings import SCORINGS, check_frontier
from jaxmetrics import _validation as V
from jaxmetrics._ops import is_concrete
from jaxmetrics.numerics import trapezoid_area
from jaxmetrics.mauve.frontier.results import MauveResult

__all__ = [
    "MauveResult",
    "divergence_curve",
    "area_under_divergence_curve",
    "frontier_integral",
    "mauve_from_histograms",
    "smooth_counts",
    "smooth_frontier_integral",
    "mauve_from_counts",
    "mixture_weights",
    "frontier_curve",
]

#: Mixture weights stay this far from 0 and 1 (mauve-text's grid).
_W_EPS = 1e-6
#: mauve-text's frontier-integral guard: bins with |p - q| <= this contribute 0.
_FI_TOL = 1e-8


def _paper_weights(num_points: int) -> tuple[np.ndarray, np.ndarray]:
    """The paper's angular grid ``sort(cos(linspace(1e-6, pi/2 - 1e-6, m)))`` and ``1 - w``, in
    float64 on the host (as numpy computes them there; ``1 - w`` is kept separately so that it
    survives a float32 cast, where ``cos(1e-6)`` rounds to 1)."""
    w = np.sort(np.cos(np.linspace(1e-6, np.pi / 2 - 1e-6, num_points)))
    return w, 1.0 - w


def _float_pair(p: Any, q: Any) -> tuple[jax.Array, jax.Array]:
    p = jnp.asarray(p)
    q = jnp.asarray(q)
    dtype = jnp.result_type(p, q)
    if not jnp.issubdtype(dtype, jnp.floating):
        dtype = jnp.result_type(float)
    return p.astype(dtype), q.astype(dtype)


def _safe_kl(a: jax.Array, b: jax.Array) -> jax.Array:
    """``sum_{a>0} a log(a/b)`` over the last axis, with finite gradients at ``a == 0``.

    Double-where: the logs only ever see the value 1 in masked-out bins, so neither the
    value nor the gradient picks up ``0 * inf``. ``b > 0`` wherever ``a > 0`` for the
    interior mixtures used here (``0 < w < 1``).
    """
    pos = a > 0
    a_safe = jnp.where(pos, a, 1.0)
    b_safe = jnp.where(pos, b, 1.0)
    return jnp.sum(jnp.where(pos, a * (jnp.log(a_safe) - jnp.log(b_safe)), 0.0), axis=-1)


def mixture_weights(num_points: int, *, scoring: str = "mauve-text", dtype: Any = jnp.float32):
    """The frontier's mixture grid ``(w, 1 - w)``, each ``[num_points]``: the one grid of every
    MAUVE frontier (histograms here, density ratios in :mod:`.divergences`).

    ``scoring='mauve-text'``: ``w = linspace(1e-6, 1 - 1e-6, num_points)``; ``'paper'``: the
    NeurIPS 2021 code's angular grid, with ``1 - w`` computed in float64 on the host so that it
    survives a float32 cast. ``num_points`` and ``scoring`` are static (call inside ``jit``).

    Examples:
      >>> from jaxmetrics.mauve.frontier.histograms import mixture_weights
      >>> w, wc = mixture_weights(3)
      >>> w.tolist(), (w + wc).tolist()
      ([9.999999974752427e-07, 0.5, 0.9999989867210388], [1.0, 1.0, 1.0])
    """
    if scoring == "paper":
        w_np, wc_np = _paper_weights(num_points)
        return jnp.asarray(w_np, dtype), jnp.asarray(wc_np, dtype)
    w = jnp.linspace(_W_EPS, 1.0 - _W_EPS, num_points, dtype=dtype)
    return w, 1.0 - w


def frontier_curve(div_q: jax.Array, div_p: jax.Array, scaling: jax.Array) -> jax.Array:
    """The divergence curve ``[..., m + 2, 2]`` from ``D(Q || R_w)`` and ``D(P || R_w)``
    ``[..., m]`` on the grid of :func:`mixture_weights`: ``(1, 0)``, then
    ``(exp(-c D(Q||R_w)), exp(-c D(P||R_w)))`` for each ``w``, then ``(0, 1)`` (mauve-text's end
    points). MAUVE is its trapezoid area.

    Examples:
      >>> import jax.numpy as jnp
      >>> from jaxmetrics.mauve.frontier.histograms import frontier_curve
      >>> frontier_curve(jnp.zeros(1), jnp.zeros(1), 5.0).tolist()
      [[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
    """
    interior = jnp.exp(-scaling * jnp.stack([div_q, div_p], axis=-1))  # [..., m, 2]
    batch = interior.shape[:-2]
    first = jnp.broadcast_to(jnp.array([1.0, 0.0], interior.dtype), batch + (1, 2))
    last = jnp.broadcast_to(jnp.array([0.0, 1.0], interior.dtype), batch + (1, 2))
    return jnp.concatenate([first, interior, last], axis=-2)


@functools.partial(jax.jit, static_argnames=("num_points", "scoring"))
def _curve(p: jax.Array, q: jax.Array, scaling: jax.Array, num_points: int,
           scoring: str = "mauve-text") -> jax.Array:
    w, wc = mixture_weights(num_points, scoring=scoring, dtype=p.dtype)
    if scoring == "paper":
        # the paper's arithmetic, w p + (1 - w) q: near w = 1 (1 - w ~ 5e-13) the form below
        # would cancel in the bins where p = 0.
        r = w[:, None] * p[..., None, :] + wc[:, None] * q[..., None, :]  # [..., m, k]
    else:
        # q + w (p - q) rather than w p + (1 - w) q: identical histograms then give R == p == q
        # exactly (MAUVE exactly 1 in float32 too); equal to the other form up to rounding.
        r = q[..., None, :] + w[:, None] * (p - q)[..., None, :]  # [..., m, k]
    return frontier_curve(_safe_kl(q[..., None, :], r), _safe_kl(p[..., None, :], r), scaling)


def _fi_terms(p: jax.Array, q: jax.Array, tol: float) -> jax.Array:
    """Per-bin frontier-integral terms, in a well-conditioned form.

    With ``m = (p + q)/2`` and ``t = (p - q)/(p + q)`` the textbook term
    ``(p + q)/2 - p q (log p - log q)/(p - q)`` equals ``m [1 - (1 - t^2) atanh(t) / t]``
    ``= m sum_{k>=1} 2 t^(2k) / (4 k^2 - 1)``. The textbook form cancels catastrophically as
    ``p -> q`` (in float32 it turns negative and its gradient reaches ~1e6 near
    ``|p - q| ~ 1e-7``), which matters for soft histograms, where nearly equal bins are the
    norm. We use the series for ``|t| < 0.2`` (terms to ``t^12``, truncation < 1e-11 relative)
    and the atanh form otherwise, with double-where so values *and* gradients stay finite.
    A bin with exactly one side 0 gives ``(p + q)/2``, an empty bin 0, and (when ``tol > 0``)
    a bin with ``|p - q| <= tol`` gives 0, mauve-text's guard.
    """
    pos = (p > 0) & (q > 0)
    if tol > 0:
        pos = pos & (jnp.abs(p - q) > tol)
    one_zero = (p > 0) != (q > 0)
    s = jnp.where(pos, p + q, 2.0)
    m = s / 2
    t = jnp.where(pos, (p - q) / s, 0.0)
    small = jnp.abs(t) < 0.2
    t2 = t * t
    series = t2 * (2 / 3 + t2 * (2 / 15 + t2 * (2 / 35 + t2 * (2 / 63 + t2 * (2 / 99 + t2 * (2 / 143))))))
    tb = jnp.where(small, 0.5, t)
    # |t| rounds to 1 when one side is negligible next to the other: the term's limit there is m.
    tiny = jnp.finfo(t.dtype).eps
    tb = jnp.clip(tb, -1.0 + tiny, 1.0 - tiny)
    direct = 1.0 - (1.0 - tb * tb) * jnp.arctanh(tb) / tb
    term = m * jnp.where(small, series, direct)
    return jnp.where(pos, term, jnp.where(one_zero, (p + q) / 2, 0.0))


def _fi_textbook_terms(p: jax.Array, q: jax.Array, tol: float) -> jax.Array:
    """mauve-text's arithmetic, term for term (double-where keeps gradients finite)."""
    general = (p > 0) & (q > 0) & (jnp.abs(p - q) > tol)
    one_zero = (p > 0) != (q > 0)
    ps = jnp.where(general, p, 1.0)
    qs = jnp.where(general, q, 2.0)
    term = (ps + qs) / 2 - ps * qs * (jnp.log(ps) - jnp.log(qs)) / (ps - qs)
    return jnp.where(general, term, jnp.where(one_zero, (p + q) / 2, 0.0))


@jax.jit
def _fi(p: jax.Array, q: jax.Array) -> jax.Array:
    # In float64 we follow mauve-text's formula term for term, so values agree to rounding
    # (its cancellation error near p ~ q is ~1e-9 in float64, and parity means reproducing
    # it). In float32 that formula is unusable near p ~ q (it turns negative), so lower
    # precisions use the well-conditioned form of _fi_terms.
    if p.dtype == jnp.float64:
        return jnp.sum(_fi_textbook_terms(p, q, _FI_TOL), axis=-1)
    return jnp.sum(_fi_terms(p, q, _FI_TOL), axis=-1)


@jax.jit
def smooth_frontier_integral(p: jax.Array, q: jax.Array) -> jax.Array:
    """Frontier integral without mauve-text's ``|p - q| <= 1e-8`` cut-off, for gradients.

    Same value as :func:`frontier_integral` up to that guard (< 1e-9 per bin), but smooth
    everywhere, so it is the form used by soft MAUVE and losses.

    Examples:
      >>> import jax.numpy as jnp
      >>> from jaxmetrics.mauve.frontier.histograms import smooth_frontier_integral
      >>> round(float(smooth_frontier_integral(jnp.array([0.5, 0.5]), jnp.array([0.5, 0.5]))), 12)
      0.0
    """
    return jnp.sum(_fi_terms(p, q, 0.0), axis=-1)


@functools.partial(jax.jit, static_argnames=("num_points", "scoring"))
def _mauve_core(p: jax.Array, q: jax.Array, scaling: jax.Array, num_points: int,
                scoring: str = "mauve-text") -> MauveResult:
    curve = _curve(p, q, scaling, num_points, scoring)
    return MauveResult(trapezoid_area(curve), _fi(p, q), curve)


def _check_hists(p: Any, q: Any, names: tuple[str, str]) -> tuple[jax.Array, jax.Array]:
    p, q = _float_pair(p, q)
    for x, name in ((p, names[0]), (q, names[1])):
        if x.ndim < 1 or x.shape[-1] == 0:
            raise ValueError(f"{name}: expected a histogram of shape [k] (k >= 1), got shape {x.shape}")
    if p.shape != q.shape:
        raise ValueError(f"{names[1]}: shape {q.shape} does not match {names[0]} shape {p.shape}")
    for x, name in ((p, names[0]), (q, names[1])):
        if is_concrete(x):
            a = np.asarray(x)
            if not np.all(np.isfinite(a)):
                raise ValueError(f"{name}: contains NaN or infinite values")
            if np.any(a < 0):
                raise ValueError(f"{name}: entries must be non-negative")
            if np.any(a.sum(axis=-1) <= 0):
                raise ValueError(f"{name}: total mass must be positive")
    return p, q


def divergence_curve(p_hist: Any, q_hist: Any, *, scaling: float = 5.0, num_points: int = 25,
                     scoring: str = "mauve-text") -> jax.Array:
    """Divergence curve of MAUVE, ``[..., m + 2, 2]`` for histograms ``[..., k]``.

    Row ``j`` (``1 <= j <= m``) is ``(exp(-c KL(q||R_j)), exp(-c KL(p||R_j)))`` with
    ``R_j = w_j p + (1 - w_j) q`` and ``w = linspace(1e-6, 1 - 1e-6, m)`` (``scoring='paper'``:
    ``w = sort(cos(linspace(1e-6, pi/2 - 1e-6, m)))``); row 0 is ``(1, 0)`` and row ``m + 1`` is
    ``(0, 1)``.

    Args:
      p_hist, q_hist: ``[..., k]`` non-negative histograms (normally summing to 1).
      scaling: the constant ``c`` (>= 1, checked where concrete: :class:`~jaxmetrics.mauve.FrontierSettings`); traced, so changing it does not recompile.
      num_points: ``m``, the number of interior mixture weights (static).
      scoring: ``'mauve-text'`` (uniform grid) or ``'paper'`` (angular grid); see
        :func:`mauve_from_histograms`.

    Examples:
      >>> from jaxmetrics.mauve.frontier.histograms import divergence_curve
      >>> import jax.numpy as jnp
      >>> divergence_curve(jnp.array([0.5, 0.5]), jnp.array([0.5, 0.5]), num_points=3).tolist()
      [[1.0, 0.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [0.0, 1.0]]
    """
    frontier = check_frontier(scaling, num_points, scoring=scoring)
    num_points, scoring = frontier.num_points, frontier.scoring
    p, q = _check_hists(p_hist, q_hist, ("p_hist", "q_hist"))
    return _curve(p, q, jnp.asarray(scaling, p.dtype), num_points, scoring)


def area_under_divergence_curve(curve: Any) -> jax.Array:
    """MAUVE = trapezoid area under a divergence curve ``[..., m + 2, 2]`` taken in order.

    ``area = sum_j (x_j - x_{j+1}) (y_j + y_{j+1}) / 2``.

    Examples:
      >>> from jaxmetrics.mauve.frontier.histograms import area_under_divergence_curve
      >>> import jax.numpy as jnp
      >>> float(area_under_divergence_curve(jnp.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])))
      1.0
    """
    curve = jnp.asarray(curve)
    if curve.ndim < 2 or curve.shape[-1] != 2 or curve.shape[-2] < 2:
        raise ValueError(f"curve: expected shape [..., n >= 2, 2], got {curve.shape}")
    return trapezoid_area(curve)


def frontier_integral(p_hist: Any, q_hist: Any) -> jax.Array:
    """Frontier integral of two histograms ``[..., k]`` (Liu et al. 2021, scaling 2).

    ``FI = sum_i f(p_i, q_i)``, ``f = (p + q)/2 - p q (log p - log q) / (p - q)``; a bin where
    exactly one side is 0 gives ``(p + q)/2``; a bin with both 0 or ``|p - q| <= 1e-8`` gives 0
    (mauve-text's guard). Gradients are finite everywhere (double-where).

    Examples:
      >>> from jaxmetrics.mauve.frontier.histograms import frontier_integral
      >>> import jax.numpy as jnp
      >>> float(frontier_integral(jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0])))
      1.0
      >>> float(frontier_integral(jnp.array([0.3, 0.7]), jnp.array([0.3, 0.7])))
      0.0
    """
    p, q = _check_hists(p_hist, q_hist, ("p_hist", "q_hist"))
    return _fi(p, q)


def mauve_from_histograms(
    p_hist: Any, q_hist: Any, *, scaling: float = 5.0, num_points: int = 25, scoring: str = "mauve-text"
) -> MauveResult:
    """MAUVE, frontier integral and divergence curve of two histograms.

    With ``R_j = w_j p + (1 - w_j) q``, ``w = linspace(1e-6, 1 - 1e-6, m)``, the curve is
    ``[(1, 0)] + [(exp(-c KL(q||R_j)), exp(-c KL(p||R_j)))] + [(0, 1)]`` and
    ``mauve = sum_j (x_j - x_{j+1})(y_j + y_{j+1}) / 2``; see :func:`frontier_integral` for FI.
    Pure and differentiable: ``jax.jit(mauve_from_histograms, static_argnames=('num_points',
    'scoring'))``, ``jax.vmap`` and ``jax.grad`` all work (value checks are skipped on traced
    inputs). Gradients are finite at empty bins, and positive everywhere when smoothing is used.

    ``scoring`` selects how the curve is scored. ``'mauve-text'`` (default) is mauve-text >= 0.2
    (the uniform grid above; its symmetrised, sorted ``sklearn.metrics.auc`` equals the
    natural-order trapezoid). ``'paper'`` is the code of the NeurIPS 2021 paper
    (``krishnap25/mauve-experiments``) and of mauve 0.1.0: the angular grid
    ``w = sort(cos(linspace(1e-6, pi/2 - 1e-6, m)))``, ``R_j`` computed as ``w_j p + (1 - w_j) q``,
    the same end points and axes, and ``sklearn.metrics.auc(x, y)`` on the curve as built (the
    natural-order trapezoid; where sklearn would reject an ``x`` that is non-monotone only by
    rounding, as for identical histograms, the trapezoid is returned). Use ``'paper'`` to compare
    with numbers published with that code (the NeurIPS 2021 tables); the two differ only through
    the grid's discretisation error, typically 1e-4 to 1e-3. The frontier integral is the same.

    Args:
      p_hist, q_hist: ``[..., k]`` non-negative histograms (the text-side ``p`` is the human
        text by convention). Integer counts are cast to float; they are not renormalised.
      scaling: ``c >= 1`` (traced; checked where concrete).
      num_points: number of interior mixture weights ``m`` (static).
      scoring: ``'mauve-text'`` (default) or ``'paper'`` (static).

    Returns:
      :class:`MauveResult` with ``mauve [...]``, ``frontier_integral [...]`` and
      ``divergence_curve [..., m + 2, 2]``.

    Examples:
      >>> from jaxmetrics.mauve.frontier.histograms import mauve_from_histograms
      >>> import jax.numpy as jnp
      >>> float(mauve_from_histograms(jnp.array([0.2, 0.8]), jnp.array([0.2, 0.8])).mauve)
      1.0
      >>> mauve_from_histograms(jnp.array([1.0, 0.0]), jnp.array([0.0, 1.0]))
      MauveResult(mauve=0.0040721, frontier_integral=1, divergence_curve=f32[27,2])
      >>> p, q = jnp.array([0.7, 0.3, 0.0]), jnp.array([0.1, 0.3, 0.6])
      >>> a = float(mauve_from_histograms(p, q).mauve)
      >>> b = float(mauve_from_histograms(p, q, scoring="paper").mauve)
      >>> round(a, 4), round(b, 4)
      (0.1057, 0.106)
    """
    frontier = check_frontier(scaling, num_points, scoring=scoring)
    num_points, scoring = frontier.num_points, frontier.scoring
    p, q = _check_hists(p_hist, q_hist, ("p_hist", "q_hist"))
    return _mauve_core(p, q, jnp.asarray(scaling, p.dtype), num_points, scoring)


def smooth_counts(counts: Any, *, pseudocount: float = 0.5) -> jax.Array:
    """Add-constant smoothed histogram from bin counts ``[..., k]``.

    ``p_i = (n_i + b) / sum_j (n_j + b)``; ``b = 0.5`` is Krichevsky-Trofimov (mauve-text's
    ``mauve_star``), ``b = 1`` Laplace, ``b = 0`` the plain empirical histogram. ``counts`` may be
    fractional (soft counts); ``pseudocount`` is traced.

    Examples:
      >>> from jaxmetrics.mauve.frontier.histograms import smooth_counts
      >>> import jax.numpy as jnp
      >>> smooth_counts(jnp.array([3.0, 0.0]), pseudocount=0.5).tolist()
      [0.875, 0.125]
    """
    b_value = None
    if is_concrete(pseudocount):
        b_value = V.check_positive(float(np.asarray(pseudocount)), "pseudocount", allow_zero=True)
    c = jnp.asarray(counts)
    if not jnp.issubdtype(c.dtype, jnp.floating):
        c = c.astype(jnp.result_type(float))
    if c.ndim < 1 or c.shape[-1] == 0:
        raise ValueError(f"counts: expected shape [..., k] with k >= 1, got {c.shape}")
    if is_concrete(c):
        a = np.asarray(c)
        if not np.all(np.isfinite(a)) or np.any(a < 0):
            raise ValueError("counts: must be finite and non-negative")
        if b_value == 0.0 and np.any(a.sum(axis=-1) <= 0):
            raise ValueError("counts: total count is 0 and pseudocount is 0 (empty histogram)")
    return _smooth(c, jnp.asarray(pseudocount, c.dtype))


@jax.jit
def _smooth(c: jax.Array, b: jax.Array) -> jax.Array:
    s = c + b
    return s / jnp.sum(s, axis=-1, keepdims=True)


def mauve_from_counts(
    p_counts: Any,
    q_counts: Any,
    *,
    pseudocount: float = 0.5,
    scaling: float = 5.0,
    num_points: int = 25,
    scoring: str = "mauve-text",
) -> MauveResult:
    """MAUVE from bin counts ``[..., k]`` with add-constant smoothing.

    Both count vectors are smoothed with :func:`smooth_counts` (``b = pseudocount``) and passed to
    :func:`mauve_from_histograms` (with its ``scaling``, ``num_points`` and ``scoring``).
    ``pseudocount=0.5`` gives mauve-text's ``mauve_star`` and ``frontier_integral_star``;
    ``pseudocount=0`` gives its plain ``mauve``.

    Examples:
      >>> from jaxmetrics.mauve.frontier.histograms import mauve_from_counts
      >>> import jax.numpy as jnp
      >>> mauve_from_counts(jnp.array([5, 0, 5]), jnp.array([5, 5, 0]), pseudocount=0.5)
      MauveResult(mauve=0.30106, frontier_integral=0.292375, divergence_curve=f32[27,2])
    """
    p = smooth_counts(p_counts, pseudocount=pseudocount)
    q = smooth_counts(q_counts, pseudocount=pseudocount)
    if p.shape != q.shape:
        raise ValueError(f"q_counts: shape {q.shape} does not match p_counts shape {p.shape}")
    return mauve_from_histograms(p, q, scaling=scaling, num_points=num_points, scoring=scoring)
