"""The statistics of Tevet & Berant's tests: how well a metric follows a diversity parameter.

A *diversity parameter* ``d`` controls some aspect of diversity of generated response sets
(softmax temperature in the decoding test, a binary low/high content-diversity label in
the content test). A metric is good for that aspect when its values on the sets correlate
with ``d``:

* **decTest** (:func:`decoding_test`): Spearman ρ and Pearson r of (metric, d) over all sets
  of one task (:func:`jaxmetrics.numerics.spearman` / :func:`~jaxmetrics.numerics.pearson`);
* **conTest** (:func:`content_test`): Spearman ρ and the optimal 1-D classification accuracy
  (:func:`optimal_classification_accuracy`, OCA) ``max_θ max(acc_θ, 1 - acc_θ)``,
  ``acc_θ = (#{x ∈ G1: x <= θ + 1e-5} + #{x ∈ G0: x > θ + 1e-5}) / N`` over thresholds
  θ ∈ metric values (G1: label 1).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.numerics import pearson, spearman
from jaxmetrics.results import Result

__all__ = ["Correlation", "ContentTestScores", "optimal_classification_accuracy", "decoding_test",
           "content_test"]


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
    v, p = _check_pair(values, params, "values", pname)
    if np.ptp(v) == 0:
        raise ValueError("values: constant over all sets, correlation undefined")
    if np.ptp(p) == 0:
        raise ValueError(f"{pname}: constant over all sets, correlation undefined")
    return spearman(p, v), pearson(p, v)


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
    rho, r = _correlations(values, params, "params")
    return Correlation(spearman=rho, pearson=r)


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
    rho, r = _correlations(values, labels, "labels")
    return ContentTestScores(spearman=rho, pearson=r, oca=oca)
