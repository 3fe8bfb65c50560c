"""Lloyd k-means in JAX (:func:`kmeans`), reproducing the faiss settings mauve-text relies on.

Why not ``ott.tools.k_means``: it initialises with k-means++ (or random points drawn with
replacement), stops on a relative-tolerance criterion, and has neither faiss's empty-cluster
splitting nor its ``256 * k`` training subsample, so it would not behave like the reference.
Like faiss, the ``num_redo`` restarts run one after another (``lax.map``), so each stops after
its own number of Lloyd steps; each step reduces row tiles of the distance matrix to their
nearest centroid while they are in cache.

Per restart ``r`` (faiss ``Clustering::train`` with ``IndexFlatL2``):

1. If ``N > max_points_per_centroid * k``, train on a random subsample of that many rows.
2. Initialise the ``k`` centroids with ``k`` distinct random rows.
3. Repeat up to ``max_iter`` times: assign every row to its nearest centroid by squared L2
   distance ``||x||^2 + ||c||^2 - 2 x.c`` (clamped at 0,
   :func:`jaxmetrics._ops.squared_distances`); objective = sum of those distances;
   centroids <- cluster means; every empty cluster takes a copy of a centroid ``j`` chosen with
   probability proportional to ``size_j - 1``, both copies perturbed by ``1 +- 1/1024`` in
   alternating coordinates, and the size split in half. Stop as soon as the objective equals
   the previous iteration's (faiss >= 1.8 ``early_stop_threshold = 0``).
   From ``n * k >= 2**22`` on, the assignment is exact but not brute force: a row whose centroid
   provably stays its nearest (Hamerly-style distance bounds, kept per group of centroids)
   skips the search; the others are packed into tiles and searched against every centroid
   (see :func:`_lloyd`). On MiniLM features of real text (n = 20,000, k = 1,000) this searches
   65 % of the rows per step and takes about 5.9 s instead of 8.0-9.2 s for the same centroids.
4. Keep the restart with the lowest final objective; label all ``N`` rows with its centroids.

This is the one k-means of jaxmetrics: MAUVE's quantizer and PRD (Mark-Evaluate family) use it.

**Masked mode** (``x_mask`` and / or ``num_active_clusters``; used by the MAUVE sweeps, which
run many subsets and cluster counts as one vmapped computation of fixed shapes): only the rows
with ``x_mask`` true are clustered, into the first ``num_active_clusters`` of the
``num_clusters`` centroid slots (the others stay unused, their distances are +inf). It is the
same algorithm with the same random stream: the subsample and the initial rows are
``jax.random.permutation`` draws over the *positions among the valid rows* (reproduced for a
traced row count by :func:`_permuted_slots`), and the empty-cluster donor is a
``jax.random.categorical`` draw in which inactive slots have weight 0. With JAX's default
partitionable threefry (``jax_threefry_partitionable``, on since JAX 0.5) these draws do not
depend on the padding, so ``kmeans(x, key, num_clusters=K, num_active_clusters=k, x_mask=m)``
equals ``kmeans(x[m], key, num_clusters=k)`` (labels of the valid rows, first ``k`` centroids)
up to floating-point summation order. The all-rows call is the static fast path of the one
implementation: no masks, no gathers when nothing is subsampled.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import squared_distances
from jaxmetrics.results import Result

__all__ = ["KMeansResult", "kmeans"]

_SPLIT_EPS = 1.0 / 1024.0


class KMeansResult(Result):
    """Output of :func:`kmeans` (a pytree: it is returned from the jitted function as is).

    Attributes:
      centroids: ``[k, D]`` of the best restart.
      labels: ``[N]`` int32 nearest-centroid index of every input row (with the final centroids).
      objective: scalar, the best restart's last objective (sum of squared distances on the
        training rows).
      num_iter: ``[num_redo]`` int32 Lloyd iterations run by each restart.
      objectives: ``[num_redo]`` final objective of each restart.
      rows_searched: ``[num_redo]`` int32 rows whose nearest centroid each restart searched for,
        summed over its Lloyd steps (``num_iter * N`` without the distance bounds; fewer with
        them): the work done is ``2 * rows_searched * k * D`` flops of distance products
        (exact while ``num_iter * N < 2**31``).
    """

    centroids: jax.Array
    labels: jax.Array
    objective: jax.Array
    num_iter: jax.Array
    objectives: jax.Array
    rows_searched: jax.Array


@jax.jit
def _assign_to_centroids(x: jax.Array, centroids: jax.Array) -> jax.Array:
    """Index ``[n]`` int32 of the nearest centroid of each row (squared L2; first index on ties),
    by the Lloyd step's tiled search."""
    return _nearest_tiled(x, jnp.sum(x * x, axis=-1), centroids)[0]


def _shuffle_rounds(n: int) -> int:
    """Sorting rounds of ``jax.random.permutation`` for ``n`` items (its static rule)."""
    return int(np.ceil(3 * np.log(max(1, n)) / np.log(np.iinfo(np.uint32).max)))


def _permuted_slots(key: jax.Array, n: jax.Array, width: int) -> jax.Array:
    """``jax.random.permutation(key, n)`` in the first ``n`` of ``width`` slots, for a traced ``n``.

    The slots ``>= n`` keep ``n, ..., width - 1`` in order. Every round sorts by the same random
    bits as ``permutation`` (``bits(subkey, (width,))``, whose first ``n`` values are those of
    ``bits(subkey, (n,))`` with JAX's default partitionable threefry), with the slots past ``n``
    kept last, and the rounds past ``permutation``'s count for ``n`` are skipped: the first ``n``
    slots equal ``permutation(key, n)`` whatever ``width``."""
    ns = np.arange(1, width + 1)
    rounds = np.asarray([_shuffle_rounds(int(v)) for v in ns]) if width else np.zeros(0, int)
    slots = jnp.arange(width, dtype=jnp.int32)
    tail = slots >= n
    out = slots
    for r in range(_shuffle_rounds(width)):
        key, sub = jax.random.split(key)
        bits = jax.random.bits(sub, (width,), jnp.uint32)
        shuffled = out[jnp.lexsort((jnp.where(tail, slots.astype(jnp.uint32), bits), tail))]
        out = jnp.where(n >= int(ns[rounds > r].min()), shuffled, out)
    return out


def _split_empty(c: jax.Array, counts: jax.Array, key: jax.Array, active: jax.Array | None = None) -> jax.Array:
    """faiss-style split of empty clusters (sequential over the empty ones, in index order).

    With ``active`` ``[k]`` bool only the active slots count (an inactive slot is never split
    nor chosen as a donor: its size, hence its weight, is 0)."""
    k, dim = c.shape
    empty = counts == 0 if active is None else (counts == 0) & active
    n_empty = jnp.sum(empty)
    order = jnp.argsort(~empty, stable=True)  # empty cluster ids first, ascending
    sign = jnp.where(jnp.arange(dim) % 2 == 0, 1.0, -1.0).astype(c.dtype)

    def body(i, state):
        c, counts, key = state
        key, sub = jax.random.split(key)
        ci = order[i]
        weight = jnp.maximum(counts - 1.0, 0.0)
        # all clusters of size <= 1 (only when N ~ k): fall back to uniform over non-empty
        weight = jnp.where(jnp.sum(weight) > 0, weight, (counts > 0).astype(c.dtype))
        cj = jax.random.categorical(sub, jnp.log(weight))
        src = c[cj]
        c = c.at[ci].set(src * (1.0 + sign * _SPLIT_EPS)).at[cj].set(src * (1.0 - sign * _SPLIT_EPS))
        half = counts[cj] / 2.0
        counts = counts.at[ci].set(half).at[cj].add(-half)
        return c, counts, key

    c, _, _ = jax.lax.fori_loop(0, n_empty, body, (c, counts, key))
    return c


_TILE_ROWS = 2048


def _nearest_tiled(x: jax.Array, x_sq: jax.Array, c: jax.Array, tile: int = _TILE_ROWS,
                   active: jax.Array | None = None):
    """Nearest centroid ``[n]`` int32 and its squared distance ``[n]`` for every row of ``x``.

    Rows are processed ``tile`` at a time (``lax.map``), so each ``[tile, k]`` block of distances
    is reduced to its argmin and min while it is still in cache instead of materialising the
    ``[n, k]`` matrix and reading it back twice (measured ~8% faster per Lloyd step at
    n = 20000, k = 1000, d = 896 on a 2-core CPU). Same values as the untiled
    :func:`~jaxmetrics._ops.squared_distances` (clamped at 0), first index on ties. With
    ``active`` ``[k]`` bool, inactive centroids are at distance +inf.
    """
    c_sq = jnp.sum(c * c, axis=-1)
    if active is not None:  # an inactive slot's squared norm is +inf, so are its distances: no extra pass
        c_sq = jnp.where(active, c_sq, jnp.inf)

    def block(xb, xb_sq):
        d = squared_distances(xb, c, x_sq=xb_sq, y_sq=c_sq)
        return jnp.argmin(d, axis=-1).astype(jnp.int32), jnp.min(d, axis=-1)

    n = x.shape[0]
    m = n // tile
    if m < 2:
        return block(x, x_sq)
    head = jax.lax.map(lambda a: block(*a), (x[: m * tile].reshape(m, tile, -1), x_sq[: m * tile].reshape(m, tile)))
    labels, nearest = head[0].reshape(-1), head[1].reshape(-1)
    if m * tile < n:
        tl, tn = block(x[m * tile:], x_sq[m * tile:])
        labels, nearest = jnp.concatenate([labels, tl]), jnp.concatenate([nearest, tn])
    return labels, nearest


#: relative slack of the skip test: a row keeps its centroid without a search only when its exact
#: distance clears the bound by this fraction of ``||x||² + ||c||²``, far above the float32
#: rounding of the matmul expansion (``~1e-7`` of it), so only true near-ties are searched anew
_SKIP_RTOL = 1e-5
#: lower bounds kept per row: one per group of ``ceil(k / _GROUPS)`` consecutive centroid slots
#: (each decays by its own group's largest move, not the largest of all ``k``): ``[n, 64]``
#: float32 per restart
_GROUPS = 64
#: the bounds pay from about this many row-centroid pairs (``n * k``); below it the bookkeeping
#: and the larger program cost more than the skipped products (MAUVE's tests and n <= 1,000 per
#: side: ~25 % slower with bounds), and each step searches every row
_BOUNDED_MIN_WORK = 1 << 22
#: rows per tile of the bounded search (best of 256-2048 at d = 162 and 661, k = 1,000)
_SEARCH_ROWS = 1024


def _search_flagged(x, x_sq, c, c_sq, flag, labels, lower, tile: int, groups: int):
    """Nearest centroid and, per group of centroid slots, the nearest other centroid of the rows
    with ``flag`` set, ``tile`` rows at a time.

    The flagged rows are packed to the front (``jnp.nonzero`` with a static size) and only
    ``ceil(count / tile)`` tiles of the ``[tile, k]`` distance block are computed (a loop of traced
    length); the other rows keep ``labels`` and ``lower``. The block is reduced as ``[tile, groups,
    k / groups]``: a min per group in one pass, then only the nearest group's ``k / groups`` values
    are read again for the argmin and the second minimum (the first group's first minimum: the
    same first-index-on-ties argmin as over the whole row). Returns the updated labels,
    lower bounds ``[n, groups]`` (a searched row's distance to the nearest centroid of each group,
    its own centroid left out) and the number of rows searched."""
    n = x.shape[0]
    k = c.shape[0]
    pad = (-k) % groups
    size = (k + pad) // groups
    c = jnp.pad(c, ((0, pad), (0, 0)))
    c_sq = jnp.pad(c_sq, (0, pad), constant_values=jnp.inf)  # padded slots: never the nearest
    num_tiles = -(-n // tile)
    rows_all = jnp.nonzero(flag, size=num_tiles * tile, fill_value=n)[0]
    count = jnp.sum(flag, dtype=jnp.int32)
    slot = jnp.arange(size)[None, :]

    def one_tile(t, state):
        labels, lower = state
        rows = jax.lax.dynamic_slice(rows_all, (t * tile,), (tile,))
        safe = jnp.minimum(rows, n - 1)  # padding slots read row n - 1; their writes are dropped
        d = squared_distances(x[safe], c, x_sq=x_sq[safe], y_sq=c_sq).reshape(tile, groups, size)
        group_min = jnp.min(d, axis=-1)  # a plain min reduces at the matmul's pace; an argmin does not
        g = jnp.argmin(group_min, axis=-1)
        own = jnp.take_along_axis(d, g[:, None, None], axis=1)[:, 0, :]
        within = jnp.argmin(own, axis=-1)
        own_second = jnp.min(jnp.where(slot == within[:, None], jnp.inf, own), axis=-1)
        second = group_min.at[jnp.arange(tile), g].set(own_second)
        labels = labels.at[rows].set((g * size + within).astype(jnp.int32), mode="drop")
        lower = lower.at[rows].set(jnp.sqrt(second), mode="drop")
        return labels, lower

    labels, lower = jax.lax.fori_loop(0, (count + tile - 1) // tile, one_tile, (labels, lower))
    return labels, lower, count


def _assigned_sq_distances(x: jax.Array, c: jax.Array, labels: jax.Array, tile: int = _TILE_ROWS) -> jax.Array:
    """``||x_i - c_{labels_i}||²`` ``[n]`` from the differences (exact near 0), ``tile`` rows at a
    time: the gathered centroids take ``[tile, D]`` memory, never ``[n, D]``. The last tile is
    shifted back to end at row ``n`` (its overlap is computed twice, to the same values)."""
    n = x.shape[0]
    tile = min(tile, n)

    def one_tile(t, out):
        start = jnp.minimum(t * tile, n - tile)
        xb = jax.lax.dynamic_slice_in_dim(x, start, tile)
        lb = jax.lax.dynamic_slice_in_dim(labels, start, tile)
        return jax.lax.dynamic_update_slice_in_dim(out, jnp.sum((xb - c[lb]) ** 2, axis=-1), start, 0)

    return jax.lax.fori_loop(0, -(-n // tile), one_tile, jnp.zeros((n,), x.dtype))


def _lloyd(x: jax.Array, x_sq: jax.Array, init: jax.Array, key: jax.Array, max_iter: jax.Array,
           weights: jax.Array | None = None, active: jax.Array | None = None):
    """One restart of Lloyd's algorithm from ``init``; returns (centroids, objective, iterations,
    rows searched).

    ``x_sq`` ``[n]`` are the squared row norms of ``x`` (computed once for all restarts). The
    masked mode passes ``weights`` ``[n]`` (1: a training row, 0: ignored) and ``active`` ``[k]``
    (the centroid slots in use); without them (the static fast path) every row and slot counts.

    From ``_BOUNDED_MIN_WORK`` row-centroid pairs on, each assignment step is Lloyd's, exactly, but
    skips the ``[n, k]`` search for the rows whose
    centroid provably stays the nearest (distance bounds in the manner of Hamerly, 2010, and of
    Yinyang k-means' centroid groups, Ding et al., 2015): a row keeps ``a`` when its exact
    distance to ``c_a`` is below ``l``, a lower bound on its distance to every other centroid: the
    minimum, over the ``_GROUPS`` groups of consecutive centroid slots, of its distance to the
    group's nearest centroid (``c_a`` left out) when it was last searched, minus the largest move
    of a centroid of that group since (the triangle inequality). (Hamerly's second test, half the
    distance from ``c_a`` to its nearest other centroid, skipped 0.1 % more rows on real sentence
    features for a ``[k, k]`` product every step, so it is not used.) The test keeps a margin
    (``_SKIP_RTOL``) above float32 rounding, so a row is skipped only when a full search would
    return the same centroid; late iterations, where few rows move, search a small fraction of the
    rows. The objective is the sum of the exact squared distances to the assigned centroids
    (computed the same way every step, so the stopping rule "objective equals the previous one"
    fires when the assignment is stable).
    """
    n = x.shape[0]
    k = init.shape[0]
    train = None if weights is None else weights > 0
    tile = min(_SEARCH_ROWS, n)
    dtype = x.dtype
    groups = min(k, _GROUPS)
    bounded = n * k >= _BOUNDED_MIN_WORK  # static: the shapes decide
    # float32 and wider: _SKIP_RTOL; bfloat16 / float16 rows: 100 ulps (a row is then rarely skipped)
    rtol = max(_SKIP_RTOL, 100.0 * float(jnp.finfo(dtype).eps))

    def cond(state):
        _, obj, prev_obj, it, *_ = state
        return (it < max_iter) & (obj != prev_obj)

    def body(state):
        c, obj, _, it, key, labels, lower, searched = state
        c_sq = jnp.sum(c * c, axis=-1)
        if active is not None:  # an inactive slot is at distance +inf from every row and centroid
            c_sq = jnp.where(active, c_sq, jnp.inf)
        if bounded:
            exact = _assigned_sq_distances(x, c, labels)
            bound = jnp.maximum(jnp.min(lower, axis=-1), 0.0)  # a decayed bound may pass below 0
            keep = exact * (1.0 + rtol) + rtol * (x_sq + c_sq[labels]) < bound * bound
            flag = ~keep if train is None else ~keep & train
            labels, lower, count = _search_flagged(x, x_sq, c, c_sq, flag, labels, lower, tile, groups)
            nearest = _assigned_sq_distances(x, c, labels)
        else:  # a small problem: every row searched, by the tiled brute-force step
            labels, nearest = _nearest_tiled(x, x_sq, c, active=active)
            count = jnp.asarray(n, jnp.int32)
        # segment_sum is a scatter-add: cheap on CPU (and deterministic there) where a one-hot
        # matmul would double the cost of the step.
        if weights is None:
            new_obj = jnp.sum(nearest)
            sums = jax.ops.segment_sum(x, labels, num_segments=k)
            counts = jax.ops.segment_sum(jnp.ones_like(x_sq), labels, num_segments=k)
        else:
            # rows outside the training set go to an extra segment, dropped (the weights are 0 / 1):
            # the same sums as x * weights, without an [n, D] product per step
            new_obj = jnp.sum(jnp.where(train, nearest, 0.0))
            segments = jnp.where(train, labels, k)
            sums = jax.ops.segment_sum(x, segments, num_segments=k + 1)[:k]
            counts = jax.ops.segment_sum(weights, segments, num_segments=k + 1)[:k]
        means = sums / jnp.maximum(counts, 1.0)[:, None]
        key, sub = jax.random.split(key)
        empty = counts == 0 if active is None else (counts == 0) & active
        new_c = jax.lax.cond(jnp.any(empty), lambda c, n, k: _split_empty(c, n, k, active),
                             lambda c, n, k: c, means, counts, sub)
        if bounded:  # each group's bounds drop by the largest move of its (active) centroids
            moved = jnp.sqrt(jnp.sum((new_c - c) ** 2, axis=-1))
            if active is not None:
                moved = jnp.where(active, moved, 0.0)
            lower = lower - jnp.max(jnp.pad(moved, (0, (-k) % groups)).reshape(groups, -1), axis=-1)
        return new_c, new_obj, obj, it + 1, key, labels, lower, searched + count

    state = (init, jnp.asarray(jnp.inf, dtype), jnp.asarray(-1.0, dtype), jnp.asarray(0, jnp.int32), key,
             jnp.zeros((n,), jnp.int32),
             jnp.zeros((n, groups if bounded else 0), jnp.promote_types(dtype, jnp.float32)),
             jnp.asarray(0, jnp.int32))  # bounds in float32 at least, as the tiles' distances
    c, obj, _, it, _, _, _, searched = jax.lax.while_loop(cond, body, state)
    return c, obj, it, searched


@functools.partial(jax.jit, static_argnames=("num_clusters", "num_redo", "max_points_per_centroid"))
def kmeans(
    x: jax.Array,
    key: jax.Array,
    *,
    num_clusters: int,
    num_redo: int = 5,
    max_iter: int | jax.Array = 500,
    max_points_per_centroid: int = 256,
    x_mask: jax.Array | None = None,
    num_active_clusters: int | jax.Array | None = None,
) -> KMeansResult:
    """k-means (squared L2, Lloyd) with ``num_redo`` sequential restarts; faiss-like behaviour.

    Minimises ``sum_i min_j ||x_i - c_j||^2`` from ``num_redo`` random initialisations (``k``
    distinct rows each) and keeps the restart with the lowest objective; see the module doc for
    the exact iteration, stopping rule and empty-cluster handling.

    Args:
      x: ``[N, D]`` float rows (``N >= num_clusters``).
      key: PRNG key (all randomness: subsample, initialisation, splits).
      num_clusters: ``k`` (static).
      num_redo: number of restarts (static).
      max_iter: maximum Lloyd iterations per restart (traced).
      max_points_per_centroid: train on a random ``max_points_per_centroid * k`` rows when ``N`` is
        larger (faiss's default 256; static).
      x_mask: optional ``[N]`` bool; only these rows are clustered (masked mode, see the module
        doc). Every row still gets a label.
      num_active_clusters: optional ``k <= num_clusters`` (traced): use only the first ``k``
        centroid slots (masked mode); the rest are left unused. The valid rows must number at
        least ``k``.

    Returns:
      :class:`KMeansResult`. Fully jitted; ``jax.vmap`` over ``key`` gives independent seeds.

    Examples:
      >>> from jaxmetrics.mauve.quantize.clustering import kmeans
      >>> import jax, jax.numpy as jnp
      >>> x = jnp.concatenate([jnp.zeros((5, 2)), jnp.ones((5, 2)) * 10]) + jnp.arange(10.0)[:, None] * 0.01
      >>> res = kmeans(x, jax.random.key(0), num_clusters=2, num_redo=3)
      >>> res  # doctest: +ELLIPSIS
      KMeansResult(centroids=f32[2,2], labels=i32[10], objective=..., num_iter=i32[3], objectives=f32[3], rows_searched=i32[3])
      >>> sorted(jnp.bincount(res.labels, length=2).tolist())
      [5, 5]
      >>> masked = kmeans(x, jax.random.key(0), num_clusters=3, num_active_clusters=2,
      ...                 x_mask=jnp.arange(10) != 0)  # 9 rows, 2 of 3 slots
      >>> sorted(jnp.bincount(masked.labels[1:], length=3).tolist())
      [0, 4, 5]
    """
    n, _ = x.shape
    k = num_clusters
    key_sub, key_init, key_loop = jax.random.split(key, 3)
    max_iter = jnp.asarray(max_iter, jnp.int32)
    if x_mask is None and num_active_clusters is None:  # static fast path: all rows, all slots
        weights = active = None
        n_train = min(n, max_points_per_centroid * k)
        train = x[jax.random.permutation(key_sub, n)[:n_train]] if n_train < n else x

        def init_rows(kinit):
            return jax.random.permutation(kinit, n_train)[:k]
    else:
        mask = jnp.ones((n,), bool) if x_mask is None else jnp.asarray(x_mask).astype(bool)
        k_act = jnp.asarray(num_clusters if num_active_clusters is None else num_active_clusters, jnp.int32)
        active = jnp.arange(k) < k_act
        n_valid = jnp.sum(mask.astype(jnp.int32))
        n_train = jnp.minimum(n_valid, max_points_per_centroid * k_act)
        by_position = jnp.argsort(~mask, stable=True)  # the valid rows in order, then the others
        # the training rows: the first n_train of this order, as the fast path draws them (faiss's
        # subsample). The rows stay where they are (a gathered copy would double the memory of
        # x); a weight marks the training rows.
        order = jnp.where(n_valid > n_train, by_position[_permuted_slots(key_sub, n_valid, n)], by_position)
        train = x
        weights = jnp.zeros((n,), x.dtype).at[order].set((jnp.arange(n) < n_train).astype(x.dtype))

        def init_rows(kinit):
            return order[_permuted_slots(kinit, n_train, n)[:k]]

    train_sq = jnp.sum(train * train, axis=-1)

    def one_restart(kinit, kloop):
        return _lloyd(train, train_sq, train[init_rows(kinit)], kloop, max_iter, weights, active)

    # restarts one after another (as faiss): vmapped, every restart would run as many Lloyd
    # steps as the slowest one. Only the best centroids so far are kept (memory of one restart,
    # not num_redo); a later restart replaces them only with a strictly lower objective, so the
    # first one wins ties, as faiss's strict "<".
    kinits, kloops = jax.random.split(key_init, num_redo), jax.random.split(key_loop, num_redo)

    def restart(r, carry):
        best_c, best_obj, objs, iters, searched = carry
        c, obj, it, rows = one_restart(kinits[r], kloops[r])
        better = obj < best_obj
        return (jnp.where(better, c, best_c), jnp.where(better, obj, best_obj), objs.at[r].set(obj),
                iters.at[r].set(it), searched.at[r].set(rows))

    dtype = x.dtype
    per_restart = jnp.zeros((num_redo,), jnp.int32)   # iterations, rows searched
    centroids, objective, objs, iters, searched = jax.lax.fori_loop(
        0, num_redo, restart, (jnp.zeros((k, x.shape[1]), dtype), jnp.asarray(jnp.inf, dtype),
                               jnp.zeros((num_redo,), dtype), per_restart, per_restart))
    labels = _nearest_tiled(x, jnp.sum(x * x, axis=-1), centroids, active=active)[0]
    return KMeansResult(centroids=centroids, labels=labels, objective=objective, num_iter=iters, objectives=objs,
                        rows_searched=searched)
