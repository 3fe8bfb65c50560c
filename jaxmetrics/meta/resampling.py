"""Correlations of many metrics on many resamples at once: the computations behind
:func:`jaxmetrics.meta.meta_evaluate`.

A resample is a vector of item **weights** ``w [n]`` (bootstrap counts; all ones for the data as
given), so every statistic is a function of weighted sums and one compiled program serves every
resample, ``vmap``-ed in chunks:

* Pearson per group from the weighted moments ``Σw, Σwx, Σwx², Σwxh, ...`` (the data are
  standardized first, so float32 sums lose nothing that matters);
* Spearman: the weighted average ranks (an item drawn ``w`` times fills ``w`` positions; ties
  share the mean position), ranks taken within the scope (a group, or all items), then Pearson;
* Kendall τ-b and WMT's τ-like: quadratic forms ``Σ_kl w_k w_l F_kl`` in the item-pair matrices
  (concordance signs, ties, qualifying pairs), computed for all resamples as one matrix product
  per block of rows, O(B n²) per metric;
* the paired permutation test of Pearson / Spearman: each item's two metric values swapped by a
  coin, on the standardized values (ranks for Spearman). The swapped vector's sums are the
  original sums plus the sums of the swapped part, which are linear in the swap mask, so every
  pair of metrics is read from ``[G, M]`` sums per draw.

All arrays here are float32 JAX arrays; the host-side preparation is float64 NumPy.
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import PRECISION

__all__ = ["LevelData", "level_data", "level_permutation", "level_values", "stratified_weights"]

#: rows of an item-pair block of the τ computations
ROW_BLOCK = 256


class LevelData(NamedTuple):
    """One level's items, prepared on the host (:func:`level_data`).

    ``x [M, n]`` the metrics and ``h [n]`` the human scores, standardized over all items;
    ``z [M, n]`` / ``zh [n]`` standardized within each group (the permutation test's values),
    ``rz [M, n]`` / ``rzh [n]`` the within-group ranks, standardized within each group;
    ``hraw [n]`` the human scores as given (τ-like's threshold applies to them);
    ``gid [n]`` group ids, ``sizes [G]``; rank plans ``order``, ``run``, ``run_first`` ``[M + 1, n]``
    (row ``M`` is the human scores) for the weighted ranks.
    """

    x: jax.Array
    h: jax.Array
    z: jax.Array
    zh: jax.Array
    rz: jax.Array
    rzh: jax.Array
    hraw: jax.Array
    gid: jax.Array
    sizes: np.ndarray
    order: jax.Array
    run: jax.Array
    run_first: jax.Array


def _standardize(v: np.ndarray, gid: np.ndarray, G: int) -> np.ndarray:
    """``v [..., n]`` centred and scaled within each group (float64); a constant group stays 0."""
    cnt = np.bincount(gid, minlength=G).astype(np.float64)
    out = np.empty_like(v)
    flat, res = v.reshape(-1, v.shape[-1]), out.reshape(-1, v.shape[-1])
    for row, r in zip(flat, res):
        mean = np.bincount(gid, row, G) / cnt
        d = row - mean[gid]
        sd = np.sqrt(np.bincount(gid, d * d, G) / cnt)
        r[:] = d / np.where(sd > 0, sd, 1.0)[gid]
    return out


def _rank_plan(v: np.ndarray, gid: np.ndarray):
    """Sorting plan of ``v [n]`` within groups: ``order``, tie-run id per sorted position, and the
    first run of each run's group."""
    order = np.lexsort((v, gid))
    vs, gs = v[order], gid[order]
    new = np.concatenate([[True], (vs[1:] != vs[:-1]) | (gs[1:] != gs[:-1])])
    run = np.cumsum(new) - 1
    gnew = np.concatenate([[True], gs[1:] != gs[:-1]])
    first_of_group = np.maximum.accumulate(np.where(gnew, run, 0))   # run index where the group starts
    run_first = np.zeros(v.size, np.int64)
    run_first[run] = first_of_group
    return order, run, run_first


def _host_ranks(v: np.ndarray, gid: np.ndarray) -> np.ndarray:
    order, run, _ = _rank_plan(v, gid)
    n = v.size
    pos = np.arange(n, dtype=np.float64)
    start = np.full(n, np.inf)
    np.minimum.at(start, run, pos)
    end = np.full(n, -np.inf)
    np.maximum.at(end, run, pos)
    gstart = np.full(gid.max() + 1, np.inf)
    np.minimum.at(gstart, gid[order], pos)
    r = np.empty(n)
    r[order] = (start[run] + end[run]) / 2 - gstart[gid[order]] + 1
    return r


def level_data(scores: np.ndarray, human: np.ndarray, gid: np.ndarray, num_groups: int) -> LevelData:
    """Prepare ``scores [M, n]`` and ``human [n]`` (float64) with group ids ``gid [n]`` for the kernels."""
    G = int(num_groups)
    one = np.zeros_like(gid)
    x = _standardize(scores, one, 1)
    h = _standardize(human[None], one, 1)[0]
    ranks = np.stack([_host_ranks(v, gid) for v in scores])
    hr = _host_ranks(human, gid)
    plans = [_rank_plan(v, gid) for v in list(scores) + [human]]
    f32 = lambda a: jnp.asarray(a, jnp.float32)   # noqa: E731
    i32 = lambda k: jnp.asarray(np.stack([p[k] for p in plans]), jnp.int32)   # noqa: E731
    return LevelData(f32(x), f32(h), f32(_standardize(scores, gid, G)), f32(_standardize(human[None], gid, G)[0]),
                     f32(_standardize(ranks, gid, G)), f32(_standardize(hr[None], gid, G)[0]), f32(human),
                     jnp.asarray(gid, jnp.int32), np.bincount(gid, minlength=G), i32(0), i32(1), i32(2))


def stratified_weights(key: jax.Array, num_resamples: int, gid: np.ndarray, num_groups: int) -> jax.Array:
    """Bootstrap weights ``[B, n]``: in every group, ``n_g`` draws with replacement among its items
    (:func:`jaxmetrics.confidence.bootstrap_indices`, one key per group), counted per item."""
    from jaxmetrics.confidence import bootstrap_indices

    members = [np.flatnonzero(gid == g) for g in range(num_groups)]
    keys = jax.random.split(key, num_groups)
    draws = bootstrap_indices(keys, num_resamples, [m.size for m in members])
    glob = jnp.concatenate([jnp.asarray(m, jnp.int32)[d] for m, d in zip(members, draws)], axis=1)
    B, n = glob.shape
    return jnp.zeros((B, gid.size), jnp.float32).at[jnp.arange(B)[:, None], glob].add(1.0)


def _weighted_ranks(w, order, run, run_first):
    """Average ranks of one vector under weights ``w [n]`` within its groups (plan of :func:`_rank_plan`)."""
    n = w.shape[0]
    tot = jax.ops.segment_sum(w[order], run, num_segments=n)
    cum = jnp.cumsum(tot) - tot
    start = cum - cum[run_first]
    return jnp.zeros_like(w).at[order].set(start[run] + (tot[run] + 1) / 2)


def _group_pearson(X, t, w, gid, G):
    """Weighted Pearson r of each row of ``X [M, n]`` with ``t [n]`` within each group: ``[M, G]``."""
    seg = partial(jax.ops.segment_sum, segment_ids=gid, num_segments=G)
    nw = jnp.maximum(seg(w), 1e-30)[:, None]
    wx = (X * w).T                                                   # [n, M]
    sx, sxx, sxt = seg(wx), seg(wx * X.T), seg(wx * t[:, None])
    st, stt = seg(w * t)[:, None], seg(w * t * t)[:, None]
    cov = sxt - sx * st / nw
    vx, vt = sxx - sx * sx / nw, stt - st * st / nw
    den = vx * vt
    ok = den > 1e-12 * jnp.maximum(sxx * stt, 1e-30)
    return jnp.where(ok, jnp.clip(cov * jax.lax.rsqrt(jnp.where(ok, den, 1.0)), -1.0, 1.0), jnp.nan).T


def _pearson_spearman(d: LevelData, w, G: int, spearman: bool):
    """``[2 or 1, M, G]`` Pearson (and Spearman) per group under weights ``w [n]``."""
    out = [_group_pearson(d.x, d.h, w, d.gid, G)]
    if spearman:
        ranks = jax.vmap(lambda o, r, f: _weighted_ranks(w, o, r, f))(d.order, d.run, d.run_first)
        out.append(_group_pearson(ranks[:-1], ranks[-1], w, d.gid, G))
    return jnp.stack(out)


@partial(jax.jit, static_argnames=("G", "spearman", "batch_size"))
def _moment_values(d: LevelData, W, *, G: int, spearman: bool, batch_size: int):
    return jax.lax.map(lambda w: _pearson_spearman(d, w, G, spearman), W, batch_size=batch_size)


@partial(jax.jit, static_argnames=("G", "tau_b", "tau_like"))
def _pair_forms(d: LevelData, W, threshold, *, G: int, tau_b: bool, tau_like: bool):
    """Per group and resample, the quadratic forms ``Σ_kl w_k w_l F_kl`` of τ-b and τ-like:
    ``[K, M, G, B]`` for the metric's matrices and ``[2, G, B]`` for the human-only ones."""
    B, n = W.shape
    pad = (-n) % ROW_BLOCK
    x = jnp.pad(d.x, ((0, 0), (0, pad)))
    h = jnp.pad(d.h, (0, pad))
    hraw = jnp.pad(d.hraw, (0, pad))
    gid = jnp.pad(d.gid, (0, pad), constant_values=G)
    Wp = jnp.pad(W, ((0, 0), (0, pad)))
    nb = (n + pad) // ROW_BLOCK

    def block(i, xm):
        r = jax.lax.dynamic_slice_in_dim(jnp.arange(n + pad), i * ROW_BLOCK, ROW_BLOCK)
        same = (gid[r][:, None] == gid[None, :]).astype(jnp.float32)
        sh = jnp.sign(h[r][:, None] - h[None, :])
        mats = []
        if xm is None:
            mats = [(sh == 0) * same, (jnp.abs(hraw[r][:, None] - hraw[None, :]) > threshold) * same]
        else:
            sx = jnp.sign(xm[r][:, None] - xm[None, :])
            if tau_b:
                mats += [sx * sh * same, (sx == 0) * same]
            if tau_like:
                valid = (jnp.abs(hraw[r][:, None] - hraw[None, :]) > threshold) * same
                mats.append(valid * jnp.where(sx == sh, 1.0, -1.0))
        F = jnp.concatenate(mats)                                     # [K * ROW_BLOCK, n]
        prod = jnp.matmul(F, Wp.T, precision=PRECISION).reshape(len(mats), ROW_BLOCK, B) * Wp[:, r].T[None]
        return jax.vmap(lambda p: jax.ops.segment_sum(p, gid[r], num_segments=G))(prod)   # [K, G, B]

    def total(xm):
        return jax.lax.fori_loop(0, nb, lambda i, acc: acc + block(i, xm),
                                 jnp.zeros((2 * tau_b + tau_like if xm is not None else 2, G, B), jnp.float32))

    human = total(None)
    metric = jax.lax.map(total, x)                                     # [M, K, G, B]
    return jnp.moveaxis(metric, 1, 0), human


def level_values(d: LevelData, W: jax.Array, correlations: tuple[str, ...], *, threshold: float,
                 batch_size: int) -> dict:
    """Every requested correlation per group under every resample ``W [B, n]``.

    Returns ``{name: (per_group [B, M, G], aggregate [B, M])}``: the aggregate is the size-weighted
    mean over the groups (the groups' sizes are fixed under the stratified bootstrap), except for
    ``tau_like``, whose pairs are pooled over the groups (WMT's DARR: ``Σ(C - D) / Σ(C + D)``).
    """
    G = int(d.sizes.size)
    sizes = jnp.asarray(d.sizes / d.sizes.sum(), jnp.float32)
    out = {}
    avg = lambda v: jnp.sum(v * sizes, axis=-1)   # noqa: E731
    if "pearson" in correlations or "spearman" in correlations:
        ps = _moment_values(d, W, G=G, spearman="spearman" in correlations, batch_size=batch_size)  # [B, k, M, G]
        out["pearson"] = (ps[:, 0], avg(ps[:, 0]))
        if "spearman" in correlations:
            out["spearman"] = (ps[:, 1], avg(ps[:, 1]))
    tb, tl = "kendall" in correlations, "tau_like" in correlations
    if tb or tl:
        forms, human = _pair_forms(d, W, jnp.float32(threshold), G=G, tau_b=tb, tau_like=tl)
        forms, human = jnp.moveaxis(forms, -1, 1), jnp.moveaxis(human, -1, 1)    # [K, B, M, G], [2, B, G]
        seg = partial(jax.ops.segment_sum, segment_ids=d.gid, num_segments=G)
        tot = jax.vmap(seg)(W)                                                   # [B, G]
        n0 = tot * (tot - 1) / 2
        if tb:
            tie_h = (human[0] - tot) / 2
            tie_x = (forms[1] - tot[:, None]) / 2
            den = (n0[:, None] - tie_x) * (n0 - tie_h)[:, None]
            ok = den > 0
            tau = jnp.where(ok, jnp.clip(forms[0] / 2 * jax.lax.rsqrt(jnp.where(ok, den, 1.0)), -1, 1), jnp.nan)
            out["kendall"] = (tau, avg(tau))
        if tl:
            num, den = forms[2 * tb], human[1][:, None]
            g = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), jnp.nan)
            tot_den = jnp.sum(den, axis=-1)
            out["tau_like"] = (g, jnp.where(tot_den > 0, jnp.sum(num, -1) / jnp.where(tot_den > 0, tot_den, 1.0),
                                            jnp.nan))
    return out


@partial(jax.jit, static_argnames=("G", "batch_size"))
def _swap_null(z, t, gid, weights, S, *, G: int, batch_size: int):
    seg = partial(jax.ops.segment_sum, segment_ids=gid, num_segments=G)
    n_g = jnp.maximum(seg(jnp.ones_like(t)), 1.0)[:, None, None]
    Z0, Q0, P0 = seg(z.T), seg((z * z).T), seg((z * t).T)            # [G, M]
    T1, T2 = seg(t)[:, None, None], seg(t * t)[:, None, None]

    def diff(s):
        sf = s.astype(z.dtype)
        U, R, V = seg((z * sf).T), seg((z * z * sf).T), seg((z * t * sf).T)
        mix = lambda base, part: base[:, :, None] + part[:, None, :] - part[:, :, None]   # noqa: E731
        sa, saa, sat = mix(Z0, U), mix(Q0, R), mix(P0, V)              # [G, M(i), M(j)]: A'(i, j)
        cov = sat - sa * T1 / n_g
        den = (saa - sa * sa / n_g) * (T2 - T1 * T1 / n_g)
        r = jnp.where(den > 0, cov * jax.lax.rsqrt(jnp.where(den > 0, den, 1.0)), 0.0)
        agg = jnp.sum(r * weights[:, None, None], axis=0)             # [M, M]: A'(i, j) vs B'(i, j) = A'(j, i)
        return agg - agg.T

    return diff(jnp.zeros_like(t, bool)), jax.lax.map(diff, S, batch_size=batch_size)


def level_permutation(d: LevelData, swaps: jax.Array, correlation: str, *, batch_size: int):
    """The paired permutation test's observed differences ``[M, M]`` and null differences
    ``[B, M, M]`` of the size-weighted mean correlation (``'pearson'`` or ``'spearman'``) under the
    swap masks ``swaps [B, n]``; entry ``[i, j]`` is metric ``i`` minus metric ``j``."""
    G = int(d.sizes.size)
    z, t = (d.z, d.zh) if correlation == "pearson" else (d.rz, d.rzh)
    weights = jnp.asarray(d.sizes / d.sizes.sum(), jnp.float32)
    return _swap_null(z, t, d.gid, weights, swaps, G=G, batch_size=batch_size)
