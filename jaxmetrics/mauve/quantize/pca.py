"""PCA for MAUVE's quantisation step (the row L2-normalisation is :func:`jaxmetrics._ops.l2_normalize`).

mauve-text normalises every feature row to unit L2 norm, fits a (centred, un-whitened) PCA
and keeps the first ``m* = 1 + argmax(cumsum(explained_variance_ratio) >= v)`` components.
PCA is centring plus an orthogonal projection, so only the projected distances matter; sign
and solver are irrelevant. Here the eigen-decomposition is of the ``[d, d]`` covariance when
``N >= d`` and of the ``[N, N]`` Gram matrix otherwise (the cheaper of the two).

``m*`` depends on the data, which would make every call compile new shapes. The projection
therefore keeps ``m_pad`` columns, ``m*`` rounded up to a multiple of ``pad_to`` (64), with the
columns beyond ``m*`` set to zero: squared distances are exactly those in ``m*`` dimensions and
at most ``d / pad_to`` different shapes are ever compiled.
"""
from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics._ops import PRECISION
from jaxmetrics.results import Result, static_field

__all__ = ["PCAProjection", "num_components_for_variance", "fit_pca", "pca_transform", "pca_eigen_from_scatter",
           "pca_from_eigen", "subsample_rows"]


class PCAProjection(Result):
    """A fitted PCA (:func:`fit_pca`). ``transform(x) = (x - mean) @ components``.

    Attributes:
      mean: ``[d]`` mean of the fitting rows.
      components: ``[d, m_pad]`` orthonormal principal directions (descending variance), with
        the columns past ``num_components`` zeroed.
      explained_variance_ratio: ``[min(N, d)]`` ``lambda_j / sum(lambda)``, descending.
      num_components: ``m*``, the number of directions kept (a static Python int).
    """

    mean: jax.Array
    components: jax.Array
    explained_variance_ratio: jax.Array
    num_components: int = static_field()


@jax.jit
def _pca_eigen(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Eigen-decomposition of the centred data ``x [N, d]``.

    Returns ``(eigenvalues [r], directions [d, r], mean [d], ratios [r])`` with ``r = min(N, d)``,
    eigenvalues of ``X_c^T X_c / (N - 1)`` in descending order (clipped at 0), unit-norm
    directions and each eigenvalue's share of their sum.
    For ``N < d`` the ``[N, N]`` Gram matrix is decomposed and ``v = X_c^T u / ||X_c^T u||``.
    """
    n, d = x.shape
    mean = jnp.mean(x, axis=0)
    xc = x - mean
    if n >= d:
        return pca_eigen_from_scatter(jnp.matmul(xc.T, xc, precision=PRECISION), mean, n)
    w, u = jnp.linalg.eigh(jnp.matmul(xc, xc.T, precision=PRECISION) / max(n - 1, 1))
    w, u = w[::-1], u[:, ::-1]
    v = jnp.matmul(xc.T, u, precision=PRECISION)
    norm = jnp.sqrt(jnp.sum(v * v, axis=0, keepdims=True))
    v = v / jnp.where(norm > 0, norm, 1.0)
    return _with_ratio(jnp.maximum(w, 0.0), v, mean)


def _with_ratio(w, v, mean):
    total = jnp.sum(w)
    return w, v, mean, w / jnp.where(total > 0, total, 1.0)


@jax.jit
def _pca_eigen_padded(x: jax.Array, n_valid: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """:func:`_pca_eigen` of the first ``n_valid`` rows of ``x [N, d]`` (``n_valid >= d``; the
    other rows are padding and do not count): one compiled program for every ``n_valid``."""
    n, d = x.shape
    valid = (jnp.arange(n) < n_valid)[:, None]
    nv = n_valid.astype(x.dtype)
    mean = jnp.sum(jnp.where(valid, x, 0.0), axis=0) / nv
    xc = jnp.where(valid, x - mean, 0.0)
    return pca_eigen_from_scatter(jnp.matmul(xc.T, xc, precision=PRECISION), mean, nv)


def pca_eigen_from_scatter(scatter: jax.Array, mean: jax.Array, num_rows: Any):
    """The eigen-decomposition of :func:`_pca_eigen` from the scatter ``X_c^T X_c [d, d]`` of
    ``num_rows`` centred rows and their ``mean [d]`` (rows streamed in blocks, for instance):
    ``(eigenvalues [d], directions [d, d], mean, ratios [d])``, eigenvalues of
    ``scatter / (num_rows - 1)`` descending and clipped at 0. Traceable."""
    denom = jnp.maximum(jnp.asarray(num_rows, scatter.dtype) - 1.0, 1.0)
    w, v = jnp.linalg.eigh(scatter / denom)  # ascending
    return _with_ratio(jnp.maximum(w[::-1], 0.0), v[:, ::-1], mean)


def num_components_for_variance(eigenvalues: Any, explained_var: float) -> int:
    """``m* = 1 + argmax_j(cumsum(lambda / sum(lambda))_j >= v)`` (host-side; mauve-text's rule).

    Examples:
      >>> from jaxmetrics.mauve.quantize.pca import num_components_for_variance
      >>> num_components_for_variance([5.0, 3.0, 1.0, 1.0], 0.75)
      2
    """
    ev = np.asarray(eigenvalues, dtype=np.float64)
    total = ev.sum()
    if total <= 0:  # all rows identical: one (null) direction is enough
        return 1
    ratio = np.cumsum(ev / total)
    return int(np.argmax(ratio >= explained_var)) + 1


@functools.partial(jax.jit, static_argnames=("m_pad",))
def _components(v: jax.Array, m: jax.Array, m_pad: int) -> jax.Array:
    cols = v[:, :m_pad]
    return jnp.where(jnp.arange(m_pad) < m, cols, 0.0)


def subsample_rows(key: jax.Array, num_rows: int, max_data: int) -> jax.Array:
    """The ``max_data`` row indices (of ``num_rows``, drawn without replacement with ``key``) that
    :func:`fit_pca` fits on when it subsamples (mauve-text's ``pca_max_data``)."""
    return jax.random.choice(key, num_rows, (int(max_data),), replace=False)


def fit_pca(
    x: Any,
    *,
    key: jax.Array,
    explained_var: float = 0.9,
    max_data: int = -1,
    pad_to: int = 64,
    num_valid: int | None = None,
) -> PCAProjection:
    """Fit PCA on ``x [N, d]`` keeping enough components to explain ``explained_var``.

    With eigenvalues ``lambda`` of the covariance of the fitting rows (descending), keeps
    ``m* = 1 + argmax_j(cumsum(lambda / sum(lambda))_j >= explained_var)`` directions, stored in
    ``m_pad`` columns (``m*`` rounded up to a multiple of ``pad_to``, capped at ``min(N, d)``;
    the extra columns are zero).

    Args:
      x: ``[N, d]`` rows (already normalised if desired).
      key: ``jax.random`` key of the row subsample. Always required, so that every call states
        its randomness; it is used only when ``max_data`` subsamples (``0 < max_data < N``).
      explained_var: fraction ``v`` in (0, 1).
      max_data: -1 (or ``>= N``) fits on all rows; otherwise on ``max_data`` rows drawn without
        replacement with ``key`` (mauve-text's ``pca_max_data``), at least ``min(N, d + 1)`` of
        them (fewer span too few directions: :func:`jaxmetrics._validation.check_pca_max_data`).
      pad_to: ``m_pad`` is ``m*`` rounded up to a multiple of this (capped at ``min(N, d)``).
      num_valid: only the first ``num_valid`` rows are data, the rest padding (a bucketed
        size, :func:`~jaxmetrics.mauve.sizes.bucket_size`); the fit is that of ``x[:num_valid]``
        and, with ``num_valid >= d``, one compiled program serves every ``num_valid``.

    Returns:
      :class:`PCAProjection` (``mean [d]``, ``components [d, m_pad]``,
      ``explained_variance_ratio [min(N, d)]``, ``num_components``).

    Examples:
      >>> from jaxmetrics.mauve.quantize.pca import fit_pca, pca_transform
      >>> import jax, jax.numpy as jnp
      >>> x = jax.random.normal(jax.random.key(0), (50, 8)) * jnp.array([5.0, 3, 1, 1, 1, 1, 1, 1])
      >>> pca = fit_pca(x, key=jax.random.key(1), explained_var=0.5, pad_to=4)
      >>> pca
      PCAProjection(mean=f32[8], components=f32[8,4], explained_variance_ratio=f32[8], num_components=1)
      >>> pca_transform(pca, x).shape
      (50, 4)
    """
    V.check_key(key)
    V.check_open_unit(explained_var, "explained_var")
    pad_to = V.check_int(pad_to, "pad_to", minimum=1)
    x = jnp.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"x: expected a 2-D array [N, d], got shape {tuple(x.shape)}")
    n = x.shape[0]
    if num_valid is not None:
        num_valid = V.check_int(num_valid, "num_valid", minimum=1, maximum=n)
    V.check_pca_max_data(max_data, "max_data", num_rows=n if num_valid is None else num_valid, dim=x.shape[1])
    padded = num_valid is not None and num_valid < n
    if padded and not 0 < max_data < num_valid and num_valid >= x.shape[1]:
        w, v, mean, ratio = _pca_eigen_padded(x, np.int32(num_valid))
    else:
        if padded:  # a subsample or a Gram-sized problem: fit the valid rows as they are
            x = x[:num_valid]
            n = num_valid
        if 0 < max_data < n:
            idx = subsample_rows(key, n, max_data)
            fit_rows = x[idx]
        else:
            fit_rows = x
        w, v, mean, ratio = _pca_eigen(fit_rows)
    return pca_from_eigen(w, v, mean, ratio, explained_var=explained_var, pad_to=pad_to)


def pca_from_eigen(w: jax.Array, v: jax.Array, mean: jax.Array, ratio: jax.Array, *, explained_var: float,
                   pad_to: int = 64) -> PCAProjection:
    """The :class:`PCAProjection` of an eigen-decomposition (descending ``w [r]``, directions
    ``v [d, r]``, ``mean [d]``, ``ratio [r]``): ``m*`` for ``explained_var`` (host-side) and the
    components padded to ``m_pad`` columns, as :func:`fit_pca` keeps them."""
    r = w.shape[0]
    m = num_components_for_variance(np.asarray(w), explained_var)
    m_pad = min(r, -(-m // pad_to) * pad_to)
    comps = _components(v, np.int32(m), m_pad)
    return PCAProjection(mean=mean, components=comps, explained_variance_ratio=ratio, num_components=m)


@jax.jit
def _project(x: jax.Array, mean: jax.Array, components: jax.Array) -> jax.Array:
    return jnp.matmul(x - mean, components, precision=PRECISION)


def pca_transform(pca: PCAProjection, x: Any) -> jax.Array:
    """Project ``x [n, d]`` onto the kept directions: ``(x - mean) @ components`` -> ``[n, m_pad]``.

    Compiled once per shape: ``num_components`` (static in :class:`PCAProjection`) is not
    an argument of the compiled projection, so fits keeping different ``m*`` share it.

    Examples:
      >>> from jaxmetrics.mauve.quantize.pca import pca_transform, PCAProjection
      >>> import jax.numpy as jnp
      >>> p = PCAProjection(mean=jnp.zeros(2), components=jnp.array([[1.0], [0.0]]),
      ...                   explained_variance_ratio=jnp.array([1.0, 0.0]), num_components=1)
      >>> pca_transform(p, jnp.array([[2.0, 3.0]])).tolist()
      [[2.0]]
    """
    return _project(jnp.asarray(x), pca.mean, pca.components)
