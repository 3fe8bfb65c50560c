"""Soft (differentiable) MAUVE: soft quantization, soft histograms, MAUVE and FI as losses.

MAUVE quantizes features into ``k`` bins and compares the two histograms. Hard bins make the
score piecewise constant in the features (zero gradient almost everywhere). Replacing each
point's one-hot bin by a softmax over bins gives a smooth surrogate:

* soft assignment to centroids ``c_1..c_k``:
  ``a_ij = softmax_j(-||x_i - c_j||^2 / tau)`` (rows sum to 1; ``tau`` is in units of
  squared distance), or any fitted quantizer's ``soft_assign(x, tau)``;
* soft counts ``n_j = sum_i m_i a_ij`` with an optional padding mask ``m_i in {0, 1}`` (the
  mask of the features, ``references_mask`` / ``candidates_mask``, or ``assignments_mask``), and the
  add-constant smoothed histogram ``p_j = (n_j + b) / sum_l (n_l + b)``;
* the divergence curve, MAUVE and frontier integral of ``(p, q)`` from
  :func:`jaxmetrics.mauve.frontier.histograms.mauve_from_histograms`.

Everything is differentiable with respect to the features, the centroids and ``tau``. As
``tau -> 0`` the soft assignment tends to the nearest-centroid one-hot, so soft MAUVE with
``b = 0`` tends to hard MAUVE on the same centroids (tested). Smoothing (``b > 0``) keeps every
bin's mass positive, so the gradients stay finite and informative even when a bin is empty
on one side; the histogram stage also uses guarded ("double-where") logs, so gradients are
finite with ``b = 0`` too.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics._ops import is_concrete
from jaxmetrics.mauve.quantize.clustering import _assign_to_centroids
from jaxmetrics.mauve.quantize.quantizers import soft_assignment
from jaxmetrics.mauve.frontier.settings import check_frontier
from jaxmetrics.mauve.frontier.histograms import MauveResult, mauve_from_histograms, smooth_frontier_integral
from jaxmetrics.results import Result

__all__ = [
    "CentroidQuantizer",
    "soft_assign",
    "soft_counts",
    "soft_histogram",
    "soft_mauve",
    "hard_mauve",
    "mauve_loss",
]


def soft_assign(features: Any, centroids: Any, temperature: Any) -> jax.Array:
    """Soft assignment of points to centroids, ``[n, k]``.

    ``a_ij = exp(-||x_i - c_j||^2 / tau) / sum_l exp(-||x_i - c_l||^2 / tau)``.

    Args:
      features: ``[n, d]``.
      centroids: ``[k, d]``.
      temperature: ``tau > 0`` (traced; in units of squared distance).

    Examples:
      >>> import jax.numpy as jnp
      >>> a = soft_assign(jnp.array([[0.0], [1.0]]), jnp.array([[0.0], [1.0]]), 0.01)
      >>> a.round(3).tolist()
      [[1.0, 0.0], [0.0, 1.0]]
    """
    if is_concrete(temperature):
        V.check_positive(temperature, "temperature")
    x = jnp.asarray(V.check_features(features, "features"))
    c = jnp.asarray(V.check_features(centroids, "centroids", dim=x.shape[1]))
    dtype = jnp.result_type(x, c)
    return soft_assignment(x.astype(dtype), c.astype(dtype), jnp.asarray(temperature, dtype))


def soft_counts(assignments: Any, assignments_mask: Any = None) -> jax.Array:
    """Soft bin counts ``n_j = sum_i m_i a_ij``, ``[k]``, from assignments ``[n, k]``.

    Args:
      assignments: ``[n, k]`` rows (soft or one-hot).
      assignments_mask: optional ``[n]`` mask ``m`` (true / 1 = real row, false / 0 = padding).

    Examples:
      >>> import jax.numpy as jnp
      >>> soft_counts(jnp.array([[0.5, 0.5], [1.0, 0.0], [0.0, 1.0]]), jnp.array([1, 1, 0])).tolist()
      [1.5, 0.5]
    """
    a = jnp.asarray(assignments)
    if a.ndim != 2:
        raise ValueError(f"assignments: expected shape [n, k], got {a.shape}")
    m = V.check_mask(assignments_mask, (a.shape[0],), "assignments_mask", nonempty=True)
    return _counts(a, m)


def _counts(a: jax.Array, m: jax.Array | None) -> jax.Array:
    if m is None:
        return jnp.sum(a, axis=0)
    return jnp.sum(a * m.astype(a.dtype)[:, None], axis=0)


def _normalize(counts: jax.Array, pseudocount: Any) -> jax.Array:
    s = counts + jnp.asarray(pseudocount, counts.dtype)
    return s / jnp.sum(s)


def soft_histogram(assignments: Any, assignments_mask: Any = None, *, pseudocount: Any = 0.0) -> jax.Array:
    """Smoothed histogram ``p_j = (n_j + b) / sum_l (n_l + b)`` of soft counts, ``[k]``.

    Args:
      assignments: ``[n, k]`` rows summing to 1 (soft or one-hot).
      assignments_mask: optional ``[n]`` (1 = real point, 0 = padding).
      pseudocount: ``b >= 0`` (traced); 0.5 is Krichevsky-Trofimov.

    Examples:
      >>> import jax.numpy as jnp
      >>> soft_histogram(jnp.array([[1.0, 0.0], [1.0, 0.0]]), pseudocount=1.0).tolist()
      [0.75, 0.25]
    """
    if is_concrete(pseudocount):
        V.check_positive(pseudocount, "pseudocount", allow_zero=True)
    return _normalize(soft_counts(assignments, assignments_mask), pseudocount)


class CentroidQuantizer(Result):
    """A fitted quantizer given by its centroids ``[k, d]`` (a pytree: jit / grad friendly).

    ``assign`` is the nearest centroid (squared L2); ``soft_assign(x, tau)`` is
    :func:`soft_assign`. Use it to differentiate MAUVE with respect to the centroids, or to
    wrap centroids from any clustering.

    Attributes:
      centroids: ``[k, d]``; ``num_bins`` is ``k``.

    Examples:
      >>> import jax.numpy as jnp
      >>> cq = CentroidQuantizer(jnp.array([[0.0], [1.0]]))
      >>> cq
      CentroidQuantizer(centroids=f32[2,1])
      >>> cq.num_bins, cq.assign(jnp.array([[0.2], [0.9]])).tolist()
      (2, [0, 1])
    """

    centroids: jax.Array

    @property
    def num_bins(self) -> int:
        """``k``, the number of centroids."""
        return int(self.centroids.shape[0])

    def assign(self, features: Any) -> jax.Array:
        """Index ``[n]`` int32 of the nearest centroid of each row of ``features [n, d]``."""
        x = jnp.asarray(features)
        c = self.centroids.astype(x.dtype) if jnp.issubdtype(x.dtype, jnp.floating) else self.centroids
        return _assign_to_centroids(x, c)

    def soft_assign(self, features: Any, temperature: Any) -> jax.Array:
        """:func:`soft_assign` of ``features [n, d]`` to the centroids: ``[n, k]``, rows sum to 1."""
        x = jnp.asarray(features)
        dtype = jnp.result_type(x, self.centroids)
        return soft_assignment(x.astype(dtype), self.centroids.astype(dtype), jnp.asarray(temperature, dtype))


def _as_quantizer(quantizer: Any, dim: int) -> Any:
    if hasattr(quantizer, "soft_assign") and hasattr(quantizer, "assign"):
        return quantizer
    if hasattr(quantizer, "fit"):
        raise TypeError("quantizer: got an unfitted quantizer; call .fit(features, key=...) first")
    try:
        c = jnp.asarray(quantizer)
    except TypeError as e:
        raise TypeError(
            f"quantizer: expected a centroid array [k, d] or a fitted quantizer, got {type(quantizer).__name__}"
        ) from e
    if c.ndim != 2 or c.shape[1] != dim:
        raise ValueError(f"quantizer: centroids must have shape [k, {dim}], got {c.shape}")
    if is_concrete(c) and not np.all(np.isfinite(np.asarray(c))):
        raise ValueError("quantizer: centroids contain NaN or infinite values")
    return CentroidQuantizer(c)


def _histograms(references, candidates, quantizer, references_mask, candidates_mask, pseudocount, scaling, num_points,
                assign):
    """The smoothed histograms ``(p, q)`` of :func:`soft_mauve` and :func:`hard_mauve`, after their checks.

    ``assign(quantizer, x, mask, dtype)`` gives the ``[n, k]`` assignments (soft or one-hot) of one
    side's rows ``x``; ``dtype`` is the float dtype of the checked ``references`` (float32 if they
    are not float). Each side's assignments are counted under its mask and smoothed with
    ``pseudocount``.
    """
    p = jnp.asarray(V.check_features(references, "references"))
    q = jnp.asarray(V.check_features(candidates, "candidates", dim=p.shape[1]))
    pm = V.check_mask(references_mask, (p.shape[0],), "references_mask", nonempty=True)
    qm = V.check_mask(candidates_mask, (q.shape[0],), "candidates_mask", nonempty=True)
    if is_concrete(pseudocount):
        V.check_positive(pseudocount, "pseudocount", allow_zero=True)
    check_frontier(scaling, num_points)  # c may be traced (differentiable MAUVE): checked where concrete
    quant = _as_quantizer(quantizer, p.shape[1])
    dtype = p.dtype if jnp.issubdtype(p.dtype, jnp.floating) else jnp.float32
    return tuple(_normalize(_counts(assign(quant, x, m, dtype), m), pseudocount) for x, m in ((p, pm), (q, qm)))


def soft_mauve(*, references: Any, candidates: Any, quantizer: Any, temperature: Any, pseudocount: Any = 0.0,
               scaling: Any = 5.0, num_points: int = 25, references_mask: Any = None,
               candidates_mask: Any = None) -> MauveResult:
    """Soft MAUVE and frontier integral, differentiable in features, centroids and ``tau``.

    ``p_j = (sum_i m_i a_ij(P) + b) / sum_l (...)`` and likewise ``q`` with soft assignments
    ``a`` (see the module docstring), then MAUVE / FI / divergence curve of ``(p, q)`` exactly
    as :func:`~jaxmetrics.mauve.frontier.histograms.mauve_from_histograms` (the frontier integral uses an
    algebraically identical form that stays well conditioned, with stable gradients, when
    ``p_j ~ q_j``; see :func:`~jaxmetrics.mauve.frontier.histograms.smooth_frontier_integral`). With ``b = 0``, soft MAUVE
    tends to hard MAUVE (:func:`hard_mauve`) on the same quantizer as ``tau -> 0``.

    Args:
      references: keyword-only, ``[n_p, d]``, P (human text by convention).
      candidates: keyword-only, ``[n_q, d]``, Q.
      quantizer: centroids ``[k, d]`` or a fitted quantizer with ``soft_assign(x, tau)``
        (k-means, DRMM, lattice, :class:`CentroidQuantizer`).
      temperature: ``tau > 0`` (traced).
      pseudocount: ``b >= 0`` added to every soft count (traced); ``b > 0`` bounds every bin
        away from 0.
      scaling: MAUVE's ``c`` (traced). num_points: interior mixture weights (static).
      references_mask, candidates_mask: optional ``[n_p]`` / ``[n_q]`` masks (0 = padding, ignored).

    Returns:
      :class:`~jaxmetrics.mauve.frontier.histograms.MauveResult` ``(mauve, frontier_integral, divergence_curve)``.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> c = jnp.array([[0.0, 0.0], [3.0, 0.0]])
      >>> p = jnp.array([[0.1, 0.0], [2.9, 0.1]]); q = jnp.array([[0.0, 0.2], [0.2, 0.0]])
      >>> r = soft_mauve(references=p, candidates=q, quantizer=c, temperature=0.5)
      >>> bool(0.0 < r.mauve < 1.0), r.divergence_curve.shape
      (True, (27, 2))
      >>> g = jax.grad(lambda q: soft_mauve(references=p, candidates=q, quantizer=c, temperature=0.5).mauve)(q)
      >>> bool(jnp.all(jnp.isfinite(g))) and bool(g[0, 0] > 0)  # moving q toward c_1 helps
      True
    """
    if is_concrete(temperature):
        V.check_positive(temperature, "temperature")
    ph, qh = _histograms(references, candidates, quantizer, references_mask, candidates_mask, pseudocount, scaling,
                         num_points,
                         lambda quant, x, m, dtype: quant.soft_assign(_fill_padding(x, m), temperature))
    r = mauve_from_histograms(ph, qh, scaling=scaling, num_points=num_points)
    return r.replace(frontier_integral=smooth_frontier_integral(ph, qh))


def _fill_padding(x: jax.Array, m: jax.Array | None) -> jax.Array:
    """Replace padded rows by the (constant) mean real row before quantizing.

    Padding has weight 0, but its values still flow through the quantizer: garbage or all-zero
    rows can give inf/NaN *derivatives* there (e.g. a row norm at 0), and ``0 * NaN = NaN`` in
    reverse mode. With this double-where the quantizer only ever sees real-looking rows, and
    padded rows get an exactly zero gradient.
    """
    if m is None:
        return x
    w = m.astype(x.dtype)[:, None]
    fill = jax.lax.stop_gradient(jnp.sum(w * x, axis=0) / jnp.maximum(jnp.sum(w), 1.0))
    return jnp.where(w > 0, x, fill)


def hard_mauve(*, references: Any, candidates: Any, quantizer: Any, pseudocount: Any = 0.0, scaling: Any = 5.0,
               num_points: int = 25, references_mask: Any = None, candidates_mask: Any = None) -> MauveResult:
    """MAUVE with a fixed, already fitted quantizer (hard bins); the ``tau -> 0`` limit of
    :func:`soft_mauve`.

    Counts ``n_j = sum_i m_i [bin(x_i) = j]`` (one-hot sums), ``p_j = (n_j + b)/sum_l (n_l + b)``,
    then :func:`~jaxmetrics.mauve.frontier.histograms.mauve_from_histograms`. ``b = 0`` is mauve-text's
    ``mauve``, ``b = 0.5`` its ``mauve_star``.

    Examples:
      >>> import jax.numpy as jnp
      >>> c = jnp.array([[0.0], [1.0]])
      >>> p, q = jnp.array([[0.1], [0.2]]), jnp.array([[0.9], [1.1]])
      >>> round(float(hard_mauve(references=p, candidates=q, quantizer=c).mauve), 6)
      0.004072
    """
    ph, qh = _histograms(references, candidates, quantizer, references_mask, candidates_mask, pseudocount, scaling,
                         num_points,
                         lambda quant, x, m, dtype: jax.nn.one_hot(quant.assign(x), quant.num_bins, dtype=dtype))
    return mauve_from_histograms(ph, qh, scaling=scaling, num_points=num_points)


def mauve_loss(*, references: Any, candidates: Any, quantizer: Any, temperature: Any, pseudocount: Any = 0.5,
               **soft_mauve_options: Any) -> jax.Array:
    """Training loss ``1 - soft MAUVE(P, Q)`` (a scalar in [0, 1); minimize it).

    :func:`soft_mauve` itself (``scaling``, ``num_points``, ``references_mask``, ``candidates_mask`` are passed on
    as ``soft_mauve_options``), but smoothed by default (``pseudocount=0.5``,
    Krichevsky-Trofimov) so that bins one side has not reached still pass a gradient.
    Typical use: ``P`` the target (e.g. human-text) features, ``Q = generator(params)``; take
    ``jax.grad`` with respect to the generator's parameters and step with optax.

    Examples:
      >>> import jax, jax.numpy as jnp, optax
      >>> c = jnp.array([[0.0], [2.0]])
      >>> p = jnp.array([[0.0], [0.1], [1.9], [2.0]]); q = jnp.array([[0.0], [0.1], [0.2], [0.3]])
      >>> loss = lambda q: mauve_loss(references=p, candidates=q, quantizer=c, temperature=0.3)
      >>> opt = optax.adam(0.1); st = opt.init(q); l0 = loss(q)
      >>> for _ in range(50):
      ...     u, st = opt.update(jax.grad(loss)(q), st); q = optax.apply_updates(q, u)
      >>> bool(loss(q) < l0)
      True
    """
    return 1.0 - soft_mauve(references=references, candidates=candidates, quantizer=quantizer,
                            temperature=temperature, pseudocount=pseudocount, **soft_mauve_options).mauve
