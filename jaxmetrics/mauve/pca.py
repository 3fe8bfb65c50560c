"""Row L2-normalisation and PCA for MAUVE's quantisation step.

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
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["PCAProjection", "l2_normalize", "pca_eigen", "num_components_for_variance", "fit_pca", "pca_transform"]


class PCAProjection(NamedTuple):
    """A fitted PCA. ``transform(x) = (x - mean) @ components``.

    Attributes:
      mean: ``[d]`` mean of the fitting rows.
      components: ``[d, m_pad]`` orthonormal principal directions (descending variance), with
        the columns past ``num_components`` zeroed.
      num_components: ``m*``, the number of directions kept (Python int).
      explained_variance_ratio: ``[min(N, d)]`` ``lambda_j / sum(lambda)``, descending.
    """

    mean: jax.Array
    components: jax.Array
    num_components: int
    explained_variance_ratio: jax.Array


@jax.jit
def l2_normalize(x: jax.Array) -> jax.Array:
    """Rows scaled to unit L2 norm, ``x_i / ||x_i||`` (zero rows stay zero), ``[n, d] -> [n, d]``.

    Examples:
      >>> from jaxmetrics.mauve.pca import l2_normalize
      >>> import jax.numpy as jnp
      >>> l2_normalize(jnp.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
      [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]
    """
    # Double-where: sqrt has an infinite derivative at 0, so a zero row would give a NaN
    # gradient; substitute 1 before the sqrt (value and gradient of zero rows stay 0).
    sq = jnp.sum(x * x, axis=-1, keepdims=True)
    return x / jnp.sqrt(jnp.where(sq > 0, sq, 1.0))


@jax.jit
def pca_eigen(x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Eigen-decomposition of the centred data ``x [N, d]``.

    Returns ``(eigenvalues [r], directions [d, r], mean [d])`` with ``r = min(N, d)``, eigenvalues
    of ``X_c^T X_c / (N - 1)`` in descending order (clipped at 0) and unit-norm directions.
    For ``N < d`` the ``[N, N]`` Gram matrix is decomposed and ``v = X_c^T u / ||X_c^T u||``.

    Examples:
      >>> from jaxmetrics.mauve.pca import pca_eigen
      >>> import jax.numpy as jnp
      >>> ev, vec, mean = pca_eigen(jnp.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.5], [0.0, -0.5]]))
      >>> [round(float(e), 4) for e in ev], mean.tolist()
      ([0.6667, 0.1667], [0.0, 0.0])
    """
    n, d = x.shape
    mean = jnp.mean(x, axis=0)
    xc = x - mean
    denom = max(n - 1, 1)
    if n >= d:
        w, v = jnp.linalg.eigh(xc.T @ xc / denom)  # ascending
        w, v = w[::-1], v[:, ::-1]
    else:
        w, u = jnp.linalg.eigh(xc @ xc.T / denom)
        w, u = w[::-1], u[:, ::-1]
        v = xc.T @ u
        norm = jnp.sqrt(jnp.sum(v * v, axis=0, keepdims=True))
        v = v / jnp.where(norm > 0, norm, 1.0)
    return jnp.maximum(w, 0.0), v, mean


def num_components_for_variance(eigenvalues: Any, explained_var: float) -> int:
    """``m* = 1 + argmax_j(cumsum(lambda / sum(lambda))_j >= v)`` (host-side; mauve-text's rule).

    Examples:
      >>> from jaxmetrics.mauve.pca import num_components_for_variance
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


def fit_pca(
    x: Any,
    *,
    explained_var: float = 0.9,
    max_data: int = -1,
    key: jax.Array | None = None,
    pad_to: int = 64,
) -> PCAProjection:
    """Fit PCA on ``x [N, d]`` keeping enough components to explain ``explained_var``.

    Args:
      x: ``[N, d]`` rows (already normalised if desired).
      explained_var: fraction ``v`` in (0, 1).
      max_data: -1 (or ``>= N``) fits on all rows; otherwise on ``max_data`` rows drawn without
        replacement with ``key`` (mauve-text's ``pca_max_data``).
      key: PRNG key, needed only when subsampling.
      pad_to: ``m_pad`` is ``m*`` rounded up to a multiple of this (capped at ``min(N, d)``).

    Examples:
      >>> from jaxmetrics.mauve.pca import fit_pca, pca_transform
      >>> import jax, jax.numpy as jnp
      >>> x = jax.random.normal(jax.random.key(0), (50, 8)) * jnp.array([5.0, 3, 1, 1, 1, 1, 1, 1])
      >>> pca = fit_pca(x, explained_var=0.5, pad_to=4)
      >>> pca.num_components, pca.components.shape, pca_transform(pca, x).shape
      (1, (8, 4), (50, 4))
    """
    x = jnp.asarray(x)
    n = x.shape[0]
    if 0 < max_data < n:
        if key is None:
            raise ValueError("key: a PRNG key is needed when max_data subsamples the rows")
        idx = jax.random.choice(key, n, (int(max_data),), replace=False)
        fit_rows = x[idx]
    else:
        fit_rows = x
    w, v, mean = pca_eigen(fit_rows)
    r = w.shape[0]
    m = num_components_for_variance(np.asarray(w), explained_var)
    m_pad = min(r, -(-m // pad_to) * pad_to)
    comps = _components(v, jnp.asarray(m), m_pad)
    total = jnp.sum(w)
    ratio = w / jnp.where(total > 0, total, 1.0)
    return PCAProjection(mean, comps, m, ratio)


@jax.jit
def pca_transform(pca: PCAProjection, x: jax.Array) -> jax.Array:
    """Project ``x [n, d]`` onto the kept directions: ``(x - mean) @ components`` -> ``[n, m_pad]``.

    Examples:
      >>> from jaxmetrics.mauve.pca import pca_transform, PCAProjection
      >>> import jax.numpy as jnp
      >>> p = PCAProjection(jnp.zeros(2), jnp.array([[1.0], [0.0]]), 1, jnp.array([1.0, 0.0]))
      >>> pca_transform(p, jnp.array([[2.0, 3.0]])).tolist()
      [[2.0]]
    """
    return (x - pca.mean) @ pca.components
