"""k-nearest-neighbour hyperspheres and membership, blocked so n x n never exists.

Definitions (Kynkäänniemi et al. 2019, reused by Mark-Evaluate):

    r_k(s, S)^2 = k-th smallest  ||s - t||^2  over t in S, t != s (by index)
    f(x, S)     = 1  iff  exists s in S with ||x - s||^2 <= r_k(s, S)^2     (ties inside)

Numerics. Squared distances come from one matmul per block,
``||x||^2 + ||y||^2 - 2 x.y`` (the library's :func:`jaxmetrics._ops.squared_distances` at
``Precision.HIGHEST``), after both sets are shifted by the same vector (the
reference mean; distances are translation invariant and the shift removes the large
common offset that makes the expansion cancel badly). The result is clamped at 0, and
values below the rounding level of the expansion, ``tie_rtol * (||x||^2 + ||y||^2)``, are
set to exactly 0, so exact duplicates are at distance 0 in every pass whatever the
blocking. Radii and memberships use the same function, so the ``<=`` comparisons are
consistent.

Duplicate points (policy). Sets are multisets: every row is its own sample, and "self
excluded" means the same *row*, not the same value. A point with ``j >= k`` exact copies
therefore has radius 0; it still contains its copies (ties are inside). Nothing is
deduplicated here, and the population sizes are the row counts;
:func:`individual_hyperspheres` is the one place that reduces a set to its distinct rows
(Mark-Evaluate's default reading: a repeated row is the same individual).

Blocking. Every pass works on one distance tile at a time inside ``lax.fori_loop`` /
``lax.scan`` (no host loop over blocks), so memory is ``O(block_size * n)`` and everything
is traced once and runs under ``jax.jit`` with sharded inputs. The self pass
(:func:`knn_hyperspheres`) computes each unordered pair's distance once and updates both
rows from it; the cross pass (:func:`cross_membership`) computes each pair once and
answers both directions.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax

from jaxmetrics._ops import squared_distances
from jaxmetrics.results import Result

__all__ = [
    "Hyperspheres",
    "Individuals",
    "CrossMembership",
    "knn_hyperspheres",
    "individual_hyperspheres",
    "cross_membership",
    "neighborhood_counts",
    "default_block_size",
]

# Largest distance tile (elements) used when ``block_size`` is not given: 2**22 floats
# = 16 MiB per tile in float32.
_TILE_ELEMENTS = 1 << 22


class Hyperspheres(Result):
    """k-NN hyperspheres of one set (:func:`knn_hyperspheres`).

    Attributes:
      radii_sq: ``[n]`` squared radius, the squared distance to the k-th nearest other row.
      neighbors: ``[n, k]`` int32 row indices of the k nearest other rows, nearest first.

    Examples:
      >>> import jax.numpy as jnp
      >>> knn_hyperspheres(jnp.array([[0.], [1.], [3.]]), k=1)
      Hyperspheres(radii_sq=f32[3], neighbors=i32[3,1])
    """

    radii_sq: jax.Array
    neighbors: jax.Array


class Individuals(Result):
    """The individuals of one set and their k-NN hyperspheres (:func:`individual_hyperspheres`).

    Attributes:
      spheres: :class:`Hyperspheres` of the individuals (radius ``-1`` and neighbours ``-1``
        on the other rows).
      individuals_mask: ``[n]`` bool, the rows that are individuals.

    Examples:
      >>> import jax.numpy as jnp
      >>> individual_hyperspheres(jnp.array([[0.], [1.], [3.]]), k=1)
      Individuals(spheres=Hyperspheres(radii_sq=f32[3], neighbors=i32[3,1]), individuals_mask=bool[3])
    """

    spheres: Hyperspheres
    individuals_mask: jax.Array


class CrossMembership(Result):
    """Membership of each set in the other's hyperspheres (:func:`cross_membership`).

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


def _distances(x: jax.Array, y: jax.Array, x_sq: jax.Array, y_sq: jax.Array) -> jax.Array:
    """The library's squared distances with the settings of every k-NN pass: the library's float32
    matmul precision and rounding-level values snapped to 0 (``32 eps (||x||^2 + ||y||^2)``), so
    identical rows are at distance exactly 0 whatever the blocking."""
    return squared_distances(x, y, x_sq=x_sq, y_sq=y_sq, tie_rtol=_tie_rtol(x.dtype))


def _row_masks(x: jax.Array, x_mask: jax.Array | None) -> jax.Array:
    """``x_mask`` as bool, or all rows of ``x`` when it is None."""
    return jnp.ones((x.shape[0],), bool) if x_mask is None else jnp.asarray(x_mask, bool)


def _pad_rows(x: jax.Array, block: int):
    n = x.shape[0]
    nb = -(-n // block)
    pad = nb * block - n
    if pad:
        x = jnp.concatenate([x, jnp.zeros((pad,) + x.shape[1:], x.dtype)], axis=0)
    return x, nb


# Rows per group in the two-stage k-smallest selection of a distance tile (see
# ``_k_smallest_rows``); a multiple of 8 keeps the group minima vectorised.
_GROUP = 8


def _self_block_size(n: int, k: int) -> int:
    """Default rows per block of the symmetric self pass: tile ``[B, ~n/2]`` of ~2M elements,
    a multiple of ``_GROUP``, and an odd number of blocks (no half-covered block pair)."""
    b = max(_GROUP * k, (1 << 22) // max(1, n))
    b = -(-b // _GROUP) * _GROUP
    if b >= n:
        return -(-n // _GROUP) * _GROUP
    nb = -(-n // b)
    if nb % 2 == 0:
        nb += 1
        b = -(-(-(-n // nb)) // _GROUP) * _GROUP
    return b


def _k_smallest_rows(d: jax.Array, k: int, g: int):
    """The ``k`` smallest entries of each row of ``d [r, c]`` and their column indices,
    in ``(value, index)`` order (ties: lower index), without a top-k over every entry.

    Two stages: the minima of contiguous groups of ``g`` columns, the ``k`` groups with the
    smallest minima (ties: lower group), then a top-k over those ``k * g`` entries. Exact:
    every group holding one of the row's ``k`` smallest entries has one of the ``k``
    smallest group minima (each group ranked before it contributes a distinct smaller
    entry). XLA:CPU's top-k is several times slower per element than a min reduction, so
    this leaves the selection ~free next to the matmul that produced ``d``.
    """
    r, c = d.shape
    if g == 1 or c // g < k:
        v, i = lax.top_k(-d, k)
        return -v, i
    d3 = d.reshape(r, c // g, g)
    _, gi = lax.top_k(-jnp.min(d3, axis=2), k)
    gi = jnp.sort(gi, axis=1)  # candidates in ascending index order: top-k ties stay exact
    cand = jnp.take_along_axis(d3, gi[:, :, None], axis=1).reshape(r, k * g)
    v, j = lax.top_k(-cand, k)
    return -v, jnp.take_along_axis(gi, j // g, axis=1) * g + j % g


def _k_smallest_cols(d: jax.Array, k: int, g: int):
    """The ``k`` smallest entries of each *column* of ``d [r, c]`` (as ``[c, k]``) with their
    row indices, ties by lower row; group minima over contiguous groups of ``g`` rows are
    elementwise minima of rows, so the transposed tile is never formed."""
    r, c = d.shape
    if g == 1 or r // g < k:
        v, i = lax.top_k(-d.T, k)
        return -v, i
    d3 = d.reshape(r // g, g, c)
    _, gi = lax.top_k(-jnp.min(d3, axis=1).T, k)  # [c, k] row groups
    gi = jnp.sort(gi, axis=1)
    cand = d3[gi, :, jnp.arange(c)[:, None]].reshape(c, k * g)
    v, j = lax.top_k(-cand, k)
    return -v, jnp.take_along_axis(gi, j // g, axis=1) * g + j % g


@partial(jax.jit, static_argnames=("k", "block_size"))
def knn_hyperspheres(x: jax.Array, k: int, *, x_mask: jax.Array | None = None,
                     block_size: int | None = None) -> Hyperspheres:
    """k-NN hyperspheres of the rows of ``x`` (self excluded by row index).

    ``radii_sq[i] = min_k { ||x_i - x_j||^2 : j != i }`` (the k-th smallest), and
    ``neighbors[i]`` the indices of those k rows, nearest first (ties by lower index).
    The caller must ensure ``1 <= k <= n - 1`` (the public functions check it).

    Each distance is computed once, not twice: the rows are cut into ``nb`` blocks of
    ``block_size`` and step ``i`` (a ``lax.fori_loop``) computes the tile of block ``i``
    against the ``nb // 2 + 1`` blocks that follow it cyclically, ``[B, (nb//2 + 1) B]``.
    Every unordered block pair meets in exactly one step (for even ``nb`` the pairs half
    way round meet twice and one copy is masked), so the row-wise k smallest of the tile
    update block ``i`` and the column-wise k smallest update the partner rows. Running
    ``(value, index)`` lists are merged by a two-key sort, so ties resolve to the lower
    index whatever the blocking. Memory is ``O(B n)``; the ``[n, n]`` matrix never exists.

    With ``x_mask`` only the rows where it is True take part: the others are never a
    neighbour, get radius ``-1`` (a sphere that holds nothing) and neighbours ``-1``. A row
    with fewer than ``k`` other valid rows takes the largest of the distances it has (0 when
    it has none), and its missing neighbours are ``-1``.

    Args:
      x: ``[n, d]`` float features.
      k: static neighbourhood size.
      x_mask: optional ``[n]`` bool, the rows that take part (default: all).
      block_size: static rows per block (default: a tile of ~2M elements, odd ``nb``).

    Returns:
      :class:`Hyperspheres` with ``radii_sq [n]`` and ``neighbors [n, k]``.

    Examples:
      >>> import jax.numpy as jnp
      >>> h = knn_hyperspheres(jnp.array([[0.], [1.], [3.]]), k=1)
      >>> h.radii_sq.tolist(), h.neighbors[:, 0].tolist()
      ([1.0, 1.0, 4.0], [1, 0, 1])
    """
    if x_mask is None:
        x_mask = jnp.ones((x.shape[0],), bool)
    vals, inds = _knn(x, jnp.asarray(x_mask, bool), k, block_size)
    return _spheres(vals, inds, x_mask)


def individual_hyperspheres(x: jax.Array, k: int, *, distinct: bool = True,
                            block_size: int | None = None) -> Individuals:
    """k-NN hyperspheres of the individuals of ``x``: every row, or its distinct rows.

    With ``distinct=False`` every row is an individual (:func:`knn_hyperspheres` of all rows).
    With ``distinct=True`` a row equal to an earlier row (its nearest neighbour, compared
    exactly, or at distance 0 after the tie snapping) is the same individual caught again and
    is left out; the spheres are then recomputed on the first occurrences only (a second k-NN
    pass, run only when the set has a duplicate, selected by ``lax.cond``). Traceable (call it
    under ``jax.jit``; ``k``, ``distinct`` and ``block_size`` static).

    Args:
      x: ``[n, d]`` float features (``1 <= k <= n - 1``).
      k: neighbourhood size.
      distinct: individuals are the distinct rows (else every row).
      block_size: rows per distance block.

    Returns:
      :class:`Individuals` (``spheres`` and ``individuals_mask [n]``).

    Examples:
      >>> import jax.numpy as jnp
      >>> ind = individual_hyperspheres(jnp.array([[0.], [0.], [1.], [3.]]), k=1)
      >>> ind.individuals_mask.tolist(), ind.spheres.radii_sq.tolist()
      ([True, False, True, True], [1.0, -1.0, 1.0, 4.0])
    """
    n = x.shape[0]
    ones = jnp.ones((n,), bool)
    vals, inds = _knn(x, ones, k, block_size)
    if not distinct:
        return Individuals(spheres=_spheres(vals, inds, ones), individuals_mask=ones)
    idx = jnp.arange(n, dtype=jnp.int32)
    # a duplicate equals its nearest row exactly (distances of equal rows can round above 0
    # when the set sits at the shift point, so the rows themselves are compared)
    nn = jnp.clip(inds[:, 0], 0, n - 1)
    same = jnp.all(x == x[nn], axis=1) | (vals[:, 0] == 0)
    mask = ~(same & (inds[:, 0] < idx))
    # recompute on the distinct rows only when there is a duplicate (else the pass is exact)
    vals, inds = lax.cond(jnp.all(mask), lambda: (vals, inds),
                          lambda: _knn(x, mask, k, block_size))
    return Individuals(spheres=_spheres(vals, inds, mask), individuals_mask=mask)


def _spheres(vals: jax.Array, inds: jax.Array, x_mask: jax.Array) -> Hyperspheres:
    """Radii and neighbours from the sorted k smallest ``(value, index)`` lists."""
    finite = jnp.isfinite(vals)
    # the k-th value as a reduction, not a slice ``vals[:, k-1]``: fused with a slice,
    # XLA:CPU has dropped its fast TopK for a full sort (about 10x slower)
    radii = jnp.max(jnp.where(finite, vals, 0.0), axis=1)
    radii = jnp.where(x_mask, radii, -1.0).astype(vals.dtype)
    nbrs = jnp.where(finite & x_mask[:, None], inds, -1)
    return Hyperspheres(radii_sq=radii, neighbors=nbrs)


@partial(jax.jit, static_argnames=("k", "block_size"))
def _knn(x: jax.Array, x_mask: jax.Array, k: int, block_size: int | None):
    """The k smallest ``(squared distance, index)`` pairs of every row against the other
    valid rows, sorted; missing entries are ``(inf, int32 max)``."""
    n = x.shape[0]
    block = block_size or _self_block_size(n, k)
    g = _GROUP if block % _GROUP == 0 and block >= _GROUP * k else 1
    x_sq = jnp.sum(x * x, axis=-1)
    xp, nb = _pad_rows(x, block)
    xp_sq, _ = _pad_rows(x_sq, block)
    maskp, _ = _pad_rows(x_mask, block)
    total = nb * block
    width = (nb // 2 + 1) * block
    inf = jnp.asarray(jnp.inf, x.dtype)
    no_index = jnp.iinfo(jnp.int32).max
    r_local = jnp.arange(block, dtype=jnp.int32)
    c_local = jnp.arange(width, dtype=jnp.int32)

    def step(i, carry):
        vals, inds = carry
        start = i * block
        wrap = jnp.maximum(start + width - total, 0)
        # partner rows start, start+1, ... cyclically, listed in ascending index order
        # (the wrapped-around part first) so that tile order is index order
        cols = jnp.where(c_local < wrap, c_local, c_local - wrap + start)
        rows = start + r_local
        offset = (cols // block - i) % nb
        col_bad = (cols >= n) | ~jnp.take(maskp, cols)
        if nb % 2 == 0 and nb > 1:  # the pair half way round is done at the lower step
            col_bad = col_bad | ((offset == nb // 2) & (i >= nb // 2))
        d = _distances(
            lax.dynamic_slice_in_dim(xp, start, block),
            jnp.take(xp, cols, axis=0),
            lax.dynamic_slice_in_dim(xp_sq, start, block),
            jnp.take(xp_sq, cols),
        )
        row_bad = (rows >= n) | ~lax.dynamic_slice_in_dim(maskp, start, block)
        bad = col_bad[None, :] | row_bad[:, None] | (rows[:, None] == cols[None, :])
        d = jnp.where(bad, inf, d)
        rv, ri = _k_smallest_rows(d, k, g)  # block i against every partner
        cv, ci = _k_smallest_cols(d, k, g)  # each partner against block i
        ri = jnp.take(cols, ri)
        ci = start + ci
        # block i's own rows take the row-wise result (its diagonal tile is in there)
        cv = lax.dynamic_update_slice(cv, rv, (wrap, 0))
        ci = lax.dynamic_update_slice(ci, ri, (wrap, 0))
        ci = jnp.where(jnp.isinf(cv), no_index, ci)
        mv = jnp.concatenate([vals[cols], cv], axis=1)
        mi = jnp.concatenate([inds[cols], ci], axis=1)
        mv, mi = lax.sort((mv, mi), dimension=1, num_keys=2)
        return vals.at[cols].set(mv[:, :k]), inds.at[cols].set(mi[:, :k])

    init = (jnp.full((total, k), inf, x.dtype), jnp.full((total, k), no_index, jnp.int32))
    vals, inds = lax.fori_loop(0, nb, step, init)
    return vals[:n], inds[:n]


@partial(jax.jit, static_argnames=("block_size",))
def cross_membership(
    a: jax.Array,
    a_radii_sq: jax.Array,
    b: jax.Array,
    b_radii_sq: jax.Array,
    *,
    a_mask: jax.Array | None = None,
    b_mask: jax.Array | None = None,
    block_size: int | None = None,
) -> CrossMembership:
    """Both-way hypersphere membership and per-sphere counts from one distance pass.

    With ``D_ij = ||a_i - b_j||^2`` (computed once, in blocks of rows of ``b``):

        b_in_a[j]  = any_i  D_ij <= a_radii_sq[i]        (= f(b_j, A))
        a_in_b[i]  = any_j  D_ij <= b_radii_sq[j]        (= f(a_i, B))
        a_counts[i] = sum_j [D_ij <= a_radii_sq[i]]      (rows of B in the sphere of a_i)
        b_counts[j] = sum_i [D_ij <= b_radii_sq[j]]      (rows of A in the sphere of b_j)

    Rows outside ``a_mask`` / ``b_mask`` take no part: they contain nothing, are never
    counted and their own entries are False / 0.

    Args:
      a: ``[n, d]``; a_radii_sq: ``[n]``; b: ``[m, d]``; b_radii_sq: ``[m]``.
      a_mask, b_mask: optional ``[n]`` / ``[m]`` bool, the rows that take part (default: all).
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
    a_mask, b_mask = _row_masks(a, a_mask), _row_masks(b, b_mask)
    block = block_size or default_block_size(m, n)
    a_sq = jnp.sum(a * a, axis=-1)
    b_sq = jnp.sum(b * b, axis=-1)
    a_radii_sq = jnp.where(a_mask, a_radii_sq, -1.0)
    bp, nb = _pad_rows(b, block)
    bp_sq, _ = _pad_rows(b_sq, block)
    # padded and masked rows get radius -1: they contain nothing and are never counted
    bp_r = jnp.concatenate([jnp.where(b_mask, b_radii_sq, -1.0),
                            -jnp.ones((nb * block - m,), b_radii_sq.dtype)])
    valid, _ = _pad_rows(b_mask, block)

    def step(carry, args):
        a_cov, a_cnt = carry
        bb, bb_sq, bb_r, ok = args
        d = _distances(bb, a, bb_sq, a_sq)  # [block, n]
        in_a_sphere = (d <= a_radii_sq[None, :]) & ok[:, None]
        in_b_sphere = (d <= bb_r[:, None]) & a_mask[None, :]
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
    return CrossMembership(b_in_a=b_in.reshape(-1)[:m], a_in_b=a_cov, a_counts=a_cnt,
                           b_counts=b_cnt.reshape(-1)[:m])


@partial(jax.jit, static_argnames=("block_size",))
def neighborhood_counts(
    a: jax.Array,
    b: jax.Array,
    b_radii_sq: jax.Array,
    b_neighbors: jax.Array,
    *,
    a_mask: jax.Array | None = None,
    b_mask: jax.Array | None = None,
    block_size: int | None = None,
) -> jax.Array:
    """Rows of ``a`` inside the union of the spheres of each row's neighbourhood in ``b``.

    ``counts[j] = #{i : a_mask[i] and exists t in NN_k(b_j) with ||a_i - b_t||^2 <= b_radii_sq[t]}``
    where ``NN_k(b_j) = {j} + b_neighbors[j]`` (entries ``-1`` skipped), i.e. the paper's
    ``sum_{a} f(a, NN_k(b_j, B))``. One distance pass, in blocks of rows of ``a``.

    Args:
      a: ``[n, d]``; b: ``[m, d]``; b_radii_sq: ``[m]``; b_neighbors: ``[m, k]`` int32.
      a_mask, b_mask: optional ``[n]`` / ``[m]`` bool, the rows that take part (default: all).
      block_size: static rows of ``a`` per block.

    Returns:
      ``[m]`` int32 (0 for rows outside ``b_mask``).

    Examples:
      >>> import jax.numpy as jnp
      >>> a = jnp.array([[0.], [2.], [9.]]); b = jnp.array([[0.5], [1.5]])
      >>> neighborhood_counts(a, b, jnp.array([0.25, 0.25]), jnp.array([[1], [0]])).tolist()
      [2, 2]
    """
    n, m = a.shape[0], b.shape[0]
    k = b_neighbors.shape[1]
    a_mask, b_mask = _row_masks(a, a_mask), _row_masks(b, b_mask)
    block = block_size or max(1, min(n, _TILE_ELEMENTS // max(1, m * (k + 1))))
    own = jnp.arange(m, dtype=jnp.int32)
    hood = jnp.concatenate([own[:, None], jnp.where(b_neighbors >= 0, b_neighbors, own[:, None])], axis=1)
    b_r = jnp.where(b_mask, b_radii_sq, -1.0)
    b_sq = jnp.sum(b * b, axis=-1)
    ap, nb = _pad_rows(a, block)
    ap_sq, _ = _pad_rows(jnp.sum(a * a, axis=-1), block)
    ok, _ = _pad_rows(a_mask, block)

    def step(count, args):
        aa, aa_sq, aa_ok = args
        inside = (_distances(aa, b, aa_sq, b_sq) <= b_r[None, :]) & aa_ok[:, None]  # [block, m]
        hit = jnp.any(jnp.take(inside, hood, axis=1), axis=2)  # [block, m]
        return count + jnp.sum(hit, axis=0, dtype=jnp.int32), None

    count, _ = lax.scan(step, jnp.zeros((m,), jnp.int32),
                        (ap.reshape(nb, block, -1), ap_sq.reshape(nb, block), ok.reshape(nb, block)))
    return jnp.where(b_mask, count, 0)
