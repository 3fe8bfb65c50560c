"""The divergence frontier from density ratios: MAUVE_f for any estimator and f-divergence.

Every MAUVE estimator of the family (the MAUVE journal paper, Pillutla et al., JMLR 2023,
arXiv 2212.14578: quantization, non-parametric k-NN, classifier, parametric Gaussian) ends in one
quantity: the log density ratio ``l(x) = log dP/dQ (x)`` at the samples of both sides. This module
turns such ratios into the frontier and its summaries; :mod:`.estimators` estimates them.

Derivation (no paper text was available to copy: this is derived from the definitions). With
``R_w = w P + (1 - w) Q`` and ``r = dP/dQ = exp(l)``,

    dP/dR_w = r / (w r + 1 - w) =: a,          dQ/dR_w = 1 / (w r + 1 - w) =: b,

so for an f-divergence ``D_f(A || R) = E_R[f(dA/dR)]`` (``f`` convex, ``f(1) = 0``)

    D_f(P || R_w) = w E_P[f(a)] + (1 - w) E_Q[f(a)],   D_f(Q || R_w) = w E_P[f(b)] + (1 - w) E_Q[f(b)]:

sample averages over the mixture ``R_w``, i.e. over the pooled samples with weight ``w`` on P's mean
and ``1 - w`` on Q's. Only ``l`` at the samples is needed; ``a <= 1/w`` and ``b <= 1/(1 - w)`` are
bounded on the grid ``0 < w < 1``, so every term is finite even where ``l = +-inf`` (a bin one side
leaves empty). The curve is ``[(1, 0)] + [(exp(-c D_f(Q||R_w)), exp(-c D_f(P||R_w)))]_w + [(0, 1)]``
(mauve-text's grid and end points, for every ``f``) and ``mauve`` its trapezoid area.

The frontier integral (Liu et al., NeurIPS 2021) is ``FI = 2 int_0^1 [w KL(P||R_w) + (1 - w)
KL(Q||R_w)] dw``. Per point this integral has a closed form: ``FI = E_Q[phi(r)]`` with
``phi(r) = (r + 1)/2 - r log r / (r - 1)`` (mauve-text's per-bin term), and since
``dQ/d((P + Q)/2) = 2 / (1 + r)``, ``FI = E_P[psi(l)] + E_Q[psi(l)]`` with the bounded, even
``psi(l) = (1 - l / sinh l) / 2`` in ``[0, 1/2)``.

On histograms (a "sample" per bin, weighted by its mass, ``l_i = log p_i - log q_i``) every sample
average is the exact sum over bins, so ``divergence='kl'`` reproduces
:func:`~jaxmetrics.mauve.mauve_from_histograms` (tested to 1e-12 in float64); on the per-row log
ratios of a quantizer (every row of bin ``i`` carries ``log(p_i / q_i)``) likewise.

Divergences (``divergence=``, :data:`DIVERGENCES`), each as ``f(t)``:

====================  =====================================  ======================
name                  ``f(t)``                                range of D_f(A || R_w)
====================  =====================================  ======================
``'kl'`` (default)    ``t log t - t + 1`` (today's MAUVE)     ``[0, -log w]``
``'chi2'``            ``(t - 1)^2`` (Pearson chi-squared)     ``[0, 1/w - 1]``
``'hellinger'``       ``(sqrt(t) - 1)^2`` (squared Hellinger) ``[0, 2)``
``'tv'``              ``|t - 1| / 2`` (total variation)       ``[0, 1)``
``'js'``              ``t log t - (1 + t) log((1 + t) / 2)``  ``[0, 2 log 2)``
====================  =====================================  ======================

Each ``f`` is written with ``f(1) = f'(1) = 0``, so ``f >= 0``: for a true ratio
(``E_R[a] = 1``) adding ``c (t - 1)`` to ``f`` changes nothing, but an estimated ratio need not
average to 1, and with ``t log t`` alone the KL estimate could go negative and MAUVE above 1.
(The journal paper reports MAUVE with several f-divergences; which ones exactly could not be
checked against its text: this set holds the usual ones, and the default is today's KL MAUVE.)
"""
from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics._ops import is_concrete
from jaxmetrics.mauve.frontier.histograms import MauveResult, frontier_curve, mixture_weights
from jaxmetrics.mauve.frontier.settings import DIVERGENCES, check_frontier
from jaxmetrics.numerics import trapezoid_area

__all__ = ["DIVERGENCES", "mauve_from_log_ratios", "f_mauve", "gaussian_frontier"]


def _xlogx(t: jax.Array, log_t: jax.Array) -> jax.Array:
    return jnp.where(t > 0, t * jnp.where(t > 0, log_t, 0.0), 0.0)


def _f(divergence: str, log_t: jax.Array) -> jax.Array:
    """``f(t)`` from ``log t`` (``log t = -inf`` is ``t = 0``)."""
    t = jnp.exp(log_t)
    if divergence == "kl":  # t log t - t + 1: the same divergence for a true ratio, never negative
        return _xlogx(t, log_t) - t + 1.0
    if divergence == "chi2":
        return (t - 1.0) ** 2
    if divergence == "hellinger":
        return (jnp.exp(0.5 * log_t) - 1.0) ** 2
    if divergence == "tv":
        return 0.5 * jnp.abs(t - 1.0)
    # js: t log t - (1 + t) log((1 + t) / 2), with log(1 + t) = softplus(log t)
    return _xlogx(t, log_t) - (1.0 + t) * (jax.nn.softplus(log_t) - jnp.log(2.0))


def _psi(l: jax.Array) -> jax.Array:
    """``(1 - l / sinh l) / 2``: the frontier integral's per-sample term (even, in ``[0, 1/2)``)."""
    small = jnp.abs(l) < 1e-4
    ls = jnp.clip(jnp.where(small, 1.0, l), -700.0, 700.0)
    ratio = jnp.where(small, 1.0 - l * l / 6.0, ls / jnp.sinh(ls))
    return 0.5 * (1.0 - jnp.where(jnp.isinf(l), 0.0, ratio))


def _normalized(w: jax.Array) -> jax.Array:
    return w / jnp.sum(w, axis=-1, keepdims=True)


@functools.partial(jax.jit, static_argnames=("divergence", "num_points", "scoring"))
def _frontier(lp, lq, wp, wq, scaling, divergence, num_points, scoring):
    w, wc = mixture_weights(num_points, scoring=scoring, dtype=lp.dtype)
    wp, wq = _normalized(wp), _normalized(wq)
    lw, lwc = jnp.log(w), jnp.log(wc)

    def side(l, weights):  # E_side[f(a)], E_side[f(b)] for every w: [..., m] each
        # log(w r + 1 - w) = logaddexp(log w + l, log(1 - w)); log a = l - that; log b = -that
        lden = jnp.logaddexp(lw[:, None] + l[..., None, :], lwc[:, None])  # [..., m, n]
        la = jnp.where(jnp.isposinf(l)[..., None, :], -lw[:, None], l[..., None, :] - lden)
        lb = -lden
        fa = jnp.sum(weights[..., None, :] * _f(divergence, la), axis=-1)
        fb = jnp.sum(weights[..., None, :] * _f(divergence, lb), axis=-1)
        return fa, fb

    pa, pb = side(lp, wp)
    qa, qb = side(lq, wq)
    d_p = w * pa + wc * qa  # D_f(P || R_w)  [..., m]
    d_q = w * pb + wc * qb  # D_f(Q || R_w)
    curve = frontier_curve(d_q, d_p, scaling)
    fi = jnp.sum(wp * _psi(lp), axis=-1) + jnp.sum(wq * _psi(lq), axis=-1)
    return MauveResult(mauve=trapezoid_area(curve), frontier_integral=fi, divergence_curve=curve)


def _as_float(x: Any, name: str) -> jax.Array:
    x = jnp.asarray(x)
    if x.ndim < 1:
        raise ValueError(f"{name}: expected an array [..., n], got a scalar")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = x.astype(jnp.result_type(float))
    return x


def mauve_from_log_ratios(p_log_ratio: Any, q_log_ratio: Any, *, p_weights: Any = None, q_weights: Any = None,
                          divergence: str = "kl", scaling: float = 5.0, num_points: int = 25,
                          scoring: str = "mauve-text") -> MauveResult:
    """MAUVE_f, frontier integral and divergence curve from log density ratios at the samples.

    ``p_log_ratio [..., n_p]`` and ``q_log_ratio [..., n_q]`` hold ``l = log dP/dQ`` at P's and Q's
    samples (``+-inf`` allowed: a region only one side visits); ``p_weights`` / ``q_weights``
    (same shapes, >= 0, default uniform; normalised per side) weight the samples (0: padding;
    histogram masses for bins). With ``R_w = w P + (1 - w) Q`` on ``w in linspace(1e-6, 1 - 1e-6,
    num_points)`` (``scoring='paper'``: the angular grid), ``D_f(P || R_w) = w E_P[f(a)] + (1 - w)
    E_Q[f(a)]`` with ``a = r / (w r + 1 - w)``, likewise ``D_f(Q || R_w)`` with ``b = 1 / (w r + 1 - w)``
    (see the module docstring). Pure: jit / vmap / grad-able in the log ratios (finite gradients
    for finite ratios).

    Returns:
      :class:`~jaxmetrics.mauve.MauveResult`: ``mauve [...]`` (area under the curve of
      ``divergence``), ``frontier_integral [...]`` (Liu et al.'s, KL-based, whatever
      ``divergence``) and ``divergence_curve [..., m + 2, 2]``.

    Examples:
      >>> import jax.numpy as jnp
      >>> from jaxmetrics.mauve.frontier.divergences import mauve_from_log_ratios
      >>> same = mauve_from_log_ratios(jnp.zeros(4), jnp.zeros(3))
      >>> float(same.mauve), float(same.frontier_integral)
      (1.0, 0.0)
      >>> apart = mauve_from_log_ratios(jnp.full(4, jnp.inf), jnp.full(3, -jnp.inf))
      >>> round(float(apart.mauve), 4), float(apart.frontier_integral)
      (0.0041, 1.0)
    """
    frontier = check_frontier(scaling, num_points, scoring=scoring, divergence=divergence)
    divergence, scoring = frontier.divergence, frontier.scoring
    lp, lq = _as_float(p_log_ratio, "p_log_ratio"), _as_float(q_log_ratio, "q_log_ratio")
    dtype = jnp.result_type(lp, lq)
    lp, lq = lp.astype(dtype), lq.astype(dtype)
    for x, name in ((lp, "p_log_ratio"), (lq, "q_log_ratio")):
        if is_concrete(x) and bool(jnp.isnan(x).any()):
            raise ValueError(f"{name}: contains NaN")
    wp = jnp.ones_like(lp) if p_weights is None else jnp.broadcast_to(jnp.asarray(p_weights, dtype), lp.shape)
    wq = jnp.ones_like(lq) if q_weights is None else jnp.broadcast_to(jnp.asarray(q_weights, dtype), lq.shape)
    return _frontier(lp, lq, wp, wq, jnp.asarray(scaling, dtype), divergence, int(num_points), scoring)


def f_mauve(p_hist: Any, q_hist: Any, *, divergence: str = "kl", scaling: float = 5.0, num_points: int = 25,
            scoring: str = "mauve-text") -> MauveResult:
    """MAUVE_f of two histograms ``[..., k]``: :func:`mauve_from_log_ratios` with one sample per bin,
    log ratio ``log p_i - log q_i`` and weights ``p_i`` (P) and ``q_i`` (Q).

    ``divergence='kl'`` is :func:`~jaxmetrics.mauve.mauve_from_histograms` (equal to 1e-12 in float64).

    Examples:
      >>> from jaxmetrics.mauve.frontier.divergences import f_mauve
      >>> from jaxmetrics.mauve import mauve_from_histograms
      >>> p, q = [0.5, 0.3, 0.2, 0.0], [0.1, 0.3, 0.3, 0.3]
      >>> abs(float(f_mauve(p, q).mauve) - float(mauve_from_histograms(p, q).mauve)) < 1e-6
      True
      >>> round(float(f_mauve(p, q, divergence="hellinger").mauve), 3)
      0.587
    """
    p, q = _as_float(p_hist, "p_hist"), _as_float(q_hist, "q_hist")
    if p.shape != q.shape:
        raise ValueError(f"q_hist: shape {q.shape} does not match p_hist shape {p.shape}")
    dtype = jnp.result_type(p, q)
    p, q = p.astype(dtype), q.astype(dtype)
    lr = jnp.log(jnp.where(p > 0, p, 0.0)) - jnp.log(jnp.where(q > 0, q, 0.0))
    lr = jnp.where((p == 0) & (q == 0), 0.0, lr)
    return mauve_from_log_ratios(lr, lr, p_weights=p, q_weights=q, divergence=divergence, scaling=scaling,
                                 num_points=num_points, scoring=scoring)


def gaussian_frontier(mahalanobis: Any, *, divergence: str = "kl", scaling: float = 5.0, num_points: int = 25,
                      num_nodes: int = 200) -> MauveResult:
    """Exact MAUVE_f of two Gaussians with one covariance, ``P = N(mu_p, S)``, ``Q = N(mu_q, S)``.

    The log ratio ``l(x) = log dP/dQ (x)`` is linear in ``x``: with the Mahalanobis distance
    ``delta = ||S^{-1/2} (mu_p - mu_q)||``, ``l ~ N(delta^2 / 2, delta^2)`` under P and
    ``N(-delta^2 / 2, delta^2)`` under Q. Every term of the frontier is an expectation of a function
    of ``l``, so the frontier is a one-dimensional Gauss-Hermite integral (``num_nodes`` nodes;
    at most 250; 200 agree with 250 to 1e-12 for ``delta <= 6``): the samples of :func:`mauve_from_log_ratios` become the
    quadrature nodes, their weights the quadrature weights. ``mahalanobis`` may be batched ``[...]``
    and traced. It is the known answer the estimators of :mod:`.estimators` are tested against,
    and the parametric Gaussian estimator's value with a shared covariance (in the limit of many
    samples).

    Examples:
      >>> from jaxmetrics.mauve.frontier.divergences import gaussian_frontier
      >>> float(gaussian_frontier(0.0).mauve)
      1.0
      >>> [round(float(gaussian_frontier(d).mauve), 3) for d in (0.5, 1.0, 2.0)]
      [0.951, 0.631, 0.106]
    """
    V.check_int(num_nodes, "num_nodes", minimum=1, maximum=250)  # numpy's weights overflow beyond
    t, w = np.polynomial.hermite.hermgauss(int(num_nodes))
    delta = jnp.asarray(mahalanobis)
    dtype = jnp.result_type(delta, float)
    delta = delta.astype(dtype)[..., None]
    nodes = jnp.asarray(np.sqrt(2.0) * t, dtype)
    weights = jnp.broadcast_to(jnp.asarray(w / np.sqrt(np.pi), dtype), delta.shape[:-1] + nodes.shape)
    lp = delta ** 2 / 2 + delta * nodes
    lq = -(delta ** 2) / 2 + delta * nodes
    return mauve_from_log_ratios(lp, lq, p_weights=weights, q_weights=weights, divergence=divergence,
                                 scaling=scaling, num_points=num_points)
