"""k-nearest-neighbour hyperspheres and membership, blocked so n x n never exists.

Definitions (Kynkäänniemi et al. 2019, reused by Mark-Evaluate):

    r_k(s, S)^2 = k-th smallest  ||s - t||^2  over t in S, t != s (by index)
    f(x, S)     = 1  iff  exists s in S with ||x - s||^2 <= r_k(s, S)^2     (ties inside)

Numerics. Squared distances come from one matmul per block,
``||x||^2 + ||y||^2 - 2 x.y``, after both sets are shifted by the same vector (the
reference mean; distances are translation invariant and the shift removes the large
common offset that makes the expansion cancel badly). The result is clamped at 0, and
values below the rounding level of the expansion, ``tie_rtol * (||x||^2 + ||y||^2)``, are
set to exactly 0, so exact duplicates are at distance 0 in every pass whatever the
blocking. Radii and memberships use the same function, so the ``<=`` comparisons are
consistent.

Duplicate points (policy). Sets are multisets: every row is its own sample, and "self
excluded" means the same *row*, not the same value. A point with ``j >= k`` exact copies
therefore has radius 0; it still contains its copies (ties are inside). Nothing is
deduplicated, and the population sizes are the row counts.

Blocking. The query rows are processed in blocks of ``block_size`` rows by ``lax.map`` /
``lax.scan`` (one ``[block_size, n]`` distance tile at a time), so memory is
``O(block_size * n)``; everything is traced once and runs under ``jax.jit`` with sharded
inputs (no host loop over blocks).
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

__all__ = [
    "Hyperspheres",
    "CrossMembership",
    "knn_hyperspheres",
    "cross_membership",
    "default_block_size",
    "squared_distances",
]

# Largest distance tile (elements) used when ``block_size`` is not given: 2**22 floats
# = 16 MiB per tile in float32.
_TILE_ELEMENTS = 1 << 22


class Hyperspheres(NamedTuple):
    """k-NN hyperspheres of one set.

    Attributes:
      radii_sq: ``[n]`` squared radius, the squared distance to the k-th nearest other row.
      neighbors: ``[n, k]`` int32 row indices of the k nearest other rows, nearest first.
    """

    radii_sq: jax.Array
    neighbors: jax.Array


class CrossMembership(NamedTuple):
    """Membership of each set in the other's hyperspheres.

    Attributes:
      b_in_a: ``[m]`` bool, ``f(b_j, A)``.
      a_in_b: ``[n]`` bool, ``f(a_i, B)``.
      a_counts: ``[n]`` int32, number of rows of B inside the sphere of ``a_i``.
      b_counts: ``[m]`` int32, number of rows of A inside the sphere of ``b_j``.
    """

    b_in_a: jax.Array
    a_in_b: jax.Array
    a_counts: jax.Array
    b_counts: jax.Array


def default_block_size(n_rows: int, n_cols: int) -> int:
    """Rows per block so that one ``[block, n_cols]`` tile has about 4M elements.

    Examples:
      >>> default_block_size(100, 50)
      100
      >>> default_block_size(50_000, 50_000)
      83
    """
    b = max(1, _TILE_ELEMENTS // max(1, n_cols))
    return int(min(n_rows, b))


def _tie_rtol(dtype) -> float:
    return 32.0 * float(jnp.finfo(dtype).eps)


def squared_distances(x: jax.Array, y: jax.Array, x_sq=None, y_sq=None) -> jax.Array:
    """Squared Euclidean distances ``[n, m]`` by the matmul expansion, rounding-safe.

    ``d_ij = max(0, ||x_i||^2 + ||y_j||^2 - 2 x_i.y_j)``, and ``d_ij = 0`` when it is below
    ``32 eps (||x_i||^2 + ||y_j||^2)`` (the expansion's rounding level), so identical rows
    are at distance exactly 0.

    Args:
      x: ``[n, d]``; y: ``[m, d]``; x_sq, y_sq: optional precomputed squared norms.

    Examples:
      >>> import jax.numpy as jnp
      >>> squared_distances(jnp.array([[0., 0.], [3., 4.]]), jnp.array([[3., 4.]])).tolist()
      [[25.0], [0.0]]
    """
    if x_sq is None:
        x_sq = jnp.sum(x * x, axis=-1)
    if y_sq is None:
        y_sq = jnp.sum(y * y, axis=-1)
    dot = jnp.dot(x, y.T, precision=lax.Precision.HIGHEST)
    s = x_sq[:, None] + y_sq[None, :]
    d = jnp.maximum(s - 2.0 * dot, 0.0)
    return jnp.where(d <= _tie_rtol(d.dtype) * s, jnp.zeros((), d.dtype), d)


def _pad_rows(x: jax.Array, block: int):
    n = x.shape[0]
    nb = -(-n // block)
    pad = nb * block - n
    if pad:
        x = jnp.concatenate([x, jnp.zeros((pad,) + x.shape[1:], x.dtype)], axis=0)
    return x, nb


@partial(jax.jit, static_argnames=("k", "block_size"))
def knn_hyperspheres(x: jax.Array, k: int, block_size: int | None = None) -> Hyperspheres:
    """k-NN hyperspheres of the rows of ``x`` (self excluded by row index).

    ``radii_sq[i] = min_k { ||x_i - x_j||^2 : j != i }`` (the k-th smallest), and
    ``neighbors[i]`` the indices of those k rows, nearest first (ties by lower index).
    Computed in row blocks (``lax.map``), never forming the ``[n, n]`` matrix. The caller
    must ensure ``1 <= k <= n - 1`` (the public functions check it).

    Args:
      x: ``[n, d]`` float features.
      k: static neighbourhood size.
      block_size: static rows per block (default: :func:`default_block_size`).

    Returns:
      :class:`Hyperspheres` with ``radii_sq [n]`` and ``neighbors [n, k]``.

    Examples:
      >>> import jax.numpy as jnp
      >>> h = knn_hyperspheres(jnp.array([[0.], [1.], [3.]]), k=1)
      >>> h.radii_sq.tolist(), h.neighbors[:, 0].tolist()
      ([1.0, 1.0, 4.0], [1, 0, 1])
    """
    n = x.shape[0]
    block = block_size or default_block_size(n, n)
    x_sq = jnp.sum(x * x, axis=-1)
    xp, nb = _pad_rows(x, block)
    xp_sq, _ = _pad_rows(x_sq, block)
    rows = jnp.arange(nb * block, dtype=jnp.int32)
    cols = jnp.arange(n, dtype=jnp.int32)

    def one_block(args):
        xb, xb_sq, idx = args
        d = squared_distances(xb, x, xb_sq, x_sq)
        d = jnp.where(idx[:, None] == cols[None, :], jnp.inf, d)
        return lax.top_k(-d, k)

    neg, ind = lax.map(
        one_block,
        (xp.reshape(nb, block, -1), xp_sq.reshape(nb, block), rows.reshape(nb, block)),
    )
    # the k-th value is the min of the sorted top-k; taken by a reduction, not a slice
    # ``neg[:, k-1]``: fused with a slice, XLA:CPU drops its fast TopK for a full sort
    # (about 10x slower), and an optimization_barrier instead crashes XLA's SPMD TopK pass
    r = -jnp.min(neg.reshape(-1, k)[:n], axis=1)
    return Hyperspheres(r, ind.reshape(-1, k)[:n].astype(jnp.int32))


@partial(jax.jit, static_argnames=("block_size",))
def cross_membership(
    a: jax.Array,
    a_radii_sq: jax.Array,
    b: jax.Array,
    b_radii_sq: jax.Array,
    block_size: int | None = None,
) -> CrossMembership:
    """Both-way hypersphere membership and per-sphere counts from one distance pass.

    With ``D_ij = ||a_i - b_j||^2`` (computed once, in blocks of rows of ``b``):

        b_in_a[j]  = any_i  D_ij <= a_radii_sq[i]        (= f(b_j, A))
        a_in_b[i]  = any_j  D_ij <= b_radii_sq[j]        (= f(a_i, B))
        a_counts[i] = sum_j [D_ij <= a_radii_sq[i]]      (rows of B in the sphere of a_i)
        b_counts[j] = sum_i [D_ij <= b_radii_sq[j]]      (rows of A in the sphere of b_j)

    Args:
      a: ``[n, d]``; a_radii_sq: ``[n]``; b: ``[m, d]``; b_radii_sq: ``[m]``.
      block_size: static rows of ``b`` per block.

    Returns:
      :class:`CrossMembership`.

    Examples:
      >>> import jax.numpy as jnp
      >>> a = jnp.array([[0.], [1.]]); b = jnp.array([[0.5], [5.]])
      >>> c = cross_membership(a, jnp.array([1., 1.]), b, jnp.array([0.25, 16.]))
      >>> c.b_in_a.tolist(), c.a_in_b.tolist(), c.a_counts.tolist(), c.b_counts.tolist()
      ([True, False], [True, True], [1, 1], [2, 1])
    """
    n, m = a.shape[0], b.shape[0]
    block = block_size or default_block_size(m, n)
    a_sq = jnp.sum(a * a, axis=-1)
    b_sq = jnp.sum(b * b, axis=-1)
    bp, nb = _pad_rows(b, block)
    bp_sq, _ = _pad_rows(b_sq, block)
    # padded rows get radius -1: they contain nothing and are never counted
    bp_r = jnp.concatenate([b_radii_sq, -jnp.ones((nb * block - m,), b_radii_sq.dtype)])
    valid = jnp.arange(nb * block) < m

    def step(carry, args):
        a_cov, a_cnt = carry
        bb, bb_sq, bb_r, ok = args
        d = squared_distances(bb, a, bb_sq, a_sq)  # [block, n]
        in_a_sphere = (d <= a_radii_sq[None, :]) & ok[:, None]
        in_b_sphere = d <= bb_r[:, None]
        a_cnt = a_cnt + jnp.sum(in_a_sphere, axis=0, dtype=jnp.int32)
        a_cov = a_cov | jnp.any(in_b_sphere, axis=0)
        out = (jnp.any(in_a_sphere, axis=1), jnp.sum(in_b_sphere, axis=1, dtype=jnp.int32))
        return (a_cov, a_cnt), out

    init = (jnp.zeros((n,), bool), jnp.zeros((n,), jnp.int32))
    (a_cov, a_cnt), (b_in, b_cnt) = lax.scan(
        step,
        init,
        (
            bp.reshape(nb, block, -1),
            bp_sq.reshape(nb, block),
            bp_r.reshape(nb, block),
            valid.reshape(nb, block),
        ),
    )
    return CrossMembership(b_in.reshape(-1)[:m], a_cov, a_cnt, b_cnt.reshape(-1)[:m])
