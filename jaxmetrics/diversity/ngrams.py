"""Exact n-gram ids and n-gram statistics on padded token arrays.

Layout: a set of token sequences is a padded ``ids [B, T]`` int array plus ``lengths [B]``
(token ``t`` of row ``b`` is real iff ``t < lengths[b]``);
:func:`~jaxmetrics.diversity.encode_sequences` (:mod:`~jaxmetrics.diversity.encoding`) builds
it from texts or token lists. The n-gram starting at ``(b, t)``
is *valid* iff ``t + n <= lengths[b]``.

N-gram identity is exact, not hashed: the id of an n-gram is the dense rank of the pair
(id of its (n-1)-gram prefix, id of its last token) among all windows of the batch, obtained
by one two-key sort per order. So ids never collide, every step has a static shape and the
whole thing is jit-compiled (``jnp.unique`` needs a data-dependent size; a rolling hash in
int32 would collide).

Layers: kernels (arrays in, arrays or a :class:`~jaxmetrics.Result` out, jit)
:func:`ngram_ids` (shared with :mod:`~jaxmetrics.diversity.selfbleu`),
:func:`ngram_count_stats` and :func:`ngram_cosine_matrix`; the text-level metrics
:func:`distinct_n`, :func:`averaged_distinct_n` and :func:`ngram_entropy` (Python floats);
:func:`check_orders` checks an order range for every averaged metric.
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import PRECISION, accumulator_dtype
from jaxmetrics._validation import check_int
from jaxmetrics.diversity.encoding import ROW_MULTIPLE, encode_sequences
from jaxmetrics.results import Result

__all__ = [
    "NGramIds",
    "NGramStats",
    "check_orders",
    "ngram_ids",
    "ngram_count_stats",
    "ngram_cosine_matrix",
    "distinct_n",
    "averaged_distinct_n",
    "ngram_entropy",
]


class NGramIds(Result):
    """Exact ids of every n-gram window of a padded batch (:func:`ngram_ids`).

    Attributes:
      ids: int32 ``[max_n, B, T]``; ``ids[n-1, b, t]`` is the id of the n-gram starting at
        ``(b, t)`` (equal n-grams ↔ equal ids, in ``[0, B*T)``; ``B*T`` for invalid windows).
      valid: bool ``[max_n, B, T]``, true iff ``t + n <= lengths[b]``.

    Examples:
      >>> import jax.numpy as jnp
      >>> ngram_ids(jnp.array([[1, 2, 1, 2]]), jnp.array([4]), max_n=2)
      NGramIds(ids=i32[2,1,4], valid=bool[2,1,4])
    """

    ids: jax.Array
    valid: jax.Array


class NGramStats(Result):
    """Pooled n-gram statistics of a corpus for the orders ``n = 1..max_n`` (arrays ``[max_n]``).

    Returned by :func:`ngram_count_stats` (one batch, inside ``jit``) and by
    :meth:`NGramState.compute <jaxmetrics.diversity.NGramState.compute>` (a stream).

    Attributes:
      unique: int ``[max_n]`` number of distinct n-grams ``#{g : c(g) > 0}``.
      total: int ``[max_n]`` number of n-grams ``N = Σ_g c(g)``.
      distinct: float ``[max_n]`` distinct-n ``unique / total`` (0 when there are no n-grams).
      entropy: float ``[max_n]`` ``-Σ_g (c(g)/N) ln(c(g)/N)`` in nats (0 when N = 0).

    Examples:
      >>> import jax.numpy as jnp
      >>> s = ngram_count_stats(jnp.array([[1, 2, 1, 2]]), jnp.array([4]), max_n=2)
      >>> s
      NGramStats(unique=i32[2], total=i32[2], distinct=f32[2], entropy=f32[2])
      >>> s.distinct.tolist()
      [0.5, 0.6666666865348816]
    """

    unique: jax.Array
    total: jax.Array
    distinct: jax.Array
    entropy: jax.Array


# --------------------------------------------------------------------------------------
# Host side: tokenisation and padding
# --------------------------------------------------------------------------------------

# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------

def _dense_rank_pairs(a: jax.Array, b: jax.Array) -> jax.Array:
    """Dense rank of the pairs ``(a[i], b[i])`` in lexicographic order; ``[W] -> [W]``."""
    W = a.shape[0]
    iota = jnp.arange(W, dtype=jnp.int32)
    a_s, b_s, perm = jax.lax.sort((a, b, iota), num_keys=2)
    new = jnp.concatenate([jnp.ones((1,), bool), (a_s[1:] != a_s[:-1]) | (b_s[1:] != b_s[:-1])])
    rank_s = jnp.cumsum(new.astype(jnp.int32)) - 1
    return jnp.zeros((W,), jnp.int32).at[perm].set(rank_s)


@partial(jax.jit, static_argnames=("max_n",))
def ngram_ids(ids: jax.Array, lengths: jax.Array, max_n: int) -> NGramIds:
    """Exact ids of all n-grams, n = 1..max_n, of a padded batch.

    ``gid[n-1, b, t]`` is the id of the n-gram ``ids[b, t:t+n]``; two windows have the same
    id iff their tokens are equal. Ids lie in ``[0, B*T)``; invalid windows
    (``t + n > lengths[b]``) get the sentinel ``B*T`` and ``valid = False``.

    Args:
      ids: ``[B, T]`` integer token ids (any values; padding ignored).
      lengths: ``[B]`` number of real tokens per row.
      max_n: largest n-gram order (static).

    Returns:
      :class:`NGramIds` (``ids [max_n, B, T]`` int32, ``valid [max_n, B, T]`` bool).

    Examples:
      >>> g = ngram_ids(jnp.array([[1, 2, 1, 2]]), jnp.array([4]), max_n=2)
      >>> g.ids[1, 0, :3].tolist(), g.valid[1, 0].tolist()   # "1 2" twice, "2 1" once
      ([0, 1, 0], [True, True, True, False])
    """
    B, T = ids.shape
    W = B * T
    sentinel = jnp.int32(W)
    pos = jnp.arange(T, dtype=jnp.int32)[None, :]
    lengths = lengths.astype(jnp.int32)
    valid1 = pos < lengths[:, None]
    tok = ids.astype(jnp.int32).reshape(W)
    g1 = _dense_rank_pairs(jnp.where(valid1.reshape(W), 0, 1), tok)
    g1 = jnp.where(valid1.reshape(W), g1, sentinel).reshape(B, T)
    gids, valids = [g1], [valid1]
    prev = g1
    for n in range(2, max_n + 1):
        valid = pos + n <= lengths[:, None]
        last = jnp.concatenate([g1[:, n - 1:], jnp.full((B, n - 1), sentinel)], axis=1)
        a = jnp.where(valid, prev, sentinel).reshape(W)
        g = _dense_rank_pairs(a, jnp.where(valid, last, sentinel).reshape(W))
        g = jnp.where(valid.reshape(W), g, sentinel).reshape(B, T)
        gids.append(g)
        valids.append(valid)
        prev = g
    return NGramIds(ids=jnp.stack(gids), valid=jnp.stack(valids))


def _pooled_stats_one_order(g: jax.Array, valid: jax.Array):
    """(unique, total, entropy) of the n-gram multiset ``g[valid]``; ``g, valid: [W]``."""
    W = g.shape[0]
    g = jnp.where(valid, g, W)
    g_s = jnp.sort(g)
    ok = g_s < W
    start = jnp.concatenate([jnp.ones((1,), bool), g_s[1:] != g_s[:-1]]) & ok
    unique = jnp.sum(start)
    total = jnp.sum(ok)
    run = jnp.cumsum(start.astype(jnp.int32)) - 1
    cnt = jax.ops.segment_sum(ok.astype(accumulator_dtype()),
                              jnp.where(ok, run, W), num_segments=W + 1)[:W]
    totf = jnp.maximum(total, 1).astype(cnt.dtype)
    p = cnt / totf
    ent = 0.0 - jnp.sum(jnp.where(cnt > 0, p * jnp.log(jnp.where(cnt > 0, p, 1.0)), 0.0))
    return unique, total, ent


@partial(jax.jit, static_argnames=("max_n",))
def ngram_count_stats(ids: jax.Array, lengths: jax.Array, max_n: int) -> NGramStats:
    """Pooled n-gram statistics of a set of sequences, for n = 1..max_n.

    With ``c(g)`` the number of occurrences of n-gram ``g`` over all rows and
    ``N = Σ_g c(g)``: ``unique = #{g : c(g) > 0}``, ``total = N``, ``distinct = unique / N``
    and ``entropy = -Σ_g (c(g)/N) ln(c(g)/N)`` (nats; both 0 when N = 0). A kernel (no
    checks; jit-compiled): vmap over a leading set axis to get per-set values.

    Args:
      ids: ``[B, T]`` integer token ids (padding ignored).
      lengths: ``[B]`` real lengths.
      max_n: largest n-gram order (static).

    Returns:
      :class:`NGramStats` of arrays ``[max_n]``.

    Examples:
      >>> s = ngram_count_stats(jnp.array([[1, 2, 1, 2]]), jnp.array([4]), max_n=2)
      >>> s.unique.tolist(), s.total.tolist()
      ([2, 2], [4, 3])
    """
    g = ngram_ids(ids, lengths, max_n)
    gid, valid = g.ids, g.valid
    W = ids.shape[0] * ids.shape[1]
    unique, total, entropy = jax.vmap(_pooled_stats_one_order)(gid.reshape(max_n, W),
                                                               valid.reshape(max_n, W))
    dt = entropy.dtype
    distinct = jnp.where(total > 0, unique.astype(dt) / jnp.maximum(total, 1).astype(dt), 0.0)
    return NGramStats(unique=unique, total=total, distinct=distinct, entropy=entropy)


@partial(jax.jit, static_argnames=("n",))
def ngram_cosine_matrix(ids: jax.Array, lengths: jax.Array, n: int) -> jax.Array:
    """Pairwise cosine similarity of n-gram count vectors within one set.

    ``cos(i, j) = Σ_g c_i(g) c_j(g) / (‖c_i‖ ‖c_j‖)`` over the union vocabulary, and 0 when
    either sequence has no n-grams (Tevet & Berant's ``CosineSimilarity``). Uses a dense
    ``[R, R*T]`` count matrix, so meant for response sets (R small); vmap over sets.

    Args:
      ids: ``[R, T]`` token ids.
      lengths: ``[R]`` real lengths.
      n: n-gram order (static).

    Returns:
      ``[R, R]`` similarity matrix.

    Examples:
      >>> enc = encode_sequences(["a b c", "a b d", "x y z"])
      >>> [round(float(v), 4) for v in ngram_cosine_matrix(enc.ids, enc.lengths, n=1)[0]]
      [1.0, 0.6667, 0.0]
    """
    R, T = ids.shape
    W = R * T
    grams = ngram_ids(ids, lengths, n)
    g, v = grams.ids[n - 1], grams.valid[n - 1]
    dtype = accumulator_dtype()
    rows = jnp.broadcast_to(jnp.arange(R)[:, None], (R, T))
    counts = jnp.zeros((R, W + 1), dtype).at[rows, jnp.where(v, g, W)].add(v.astype(dtype))
    counts = counts[:, :W]
    gram = jnp.matmul(counts, counts.T, precision=PRECISION)
    norm = jnp.sqrt(jnp.diag(gram))
    den = norm[:, None] * norm[None, :]
    return jnp.where(den > 0, gram / jnp.where(den > 0, den, 1.0), 0.0)


# --------------------------------------------------------------------------------------
# Public functions on texts / token sequences (host boundary)
# --------------------------------------------------------------------------------------

def check_orders(n_min: int, n_max: int) -> None:
    """Raise ``ValueError`` unless ``1 <= n_min <= n_max`` (the range of n-gram orders of the
    averaged metrics); errors name ``n_min`` / ``n_max``.

    Examples:
      >>> check_orders(1, 5)
      >>> check_orders(3, 2)
      Traceback (most recent call last):
      ...
      ValueError: n_max: must be >= n_min (3), got 2
    """
    check_int(n_min, "n_min", minimum=1)
    check_int(n_max, "n_max", minimum=1)
    if n_max < n_min:
        raise ValueError(f"n_max: must be >= n_min ({n_min}), got {n_max}")


def _corpus_stats(sequences: Sequence, max_n: int, tokenizer: Callable | None) -> NGramStats:
    enc = encode_sequences(sequences, tokenizer=tokenizer, allow_empty=True, row_multiple=ROW_MULTIPLE)
    return ngram_count_stats(enc.ids, enc.lengths, max_n)


def distinct_n(sequences: Sequence, n: int = 3, *, tokenizer: Callable | None = None) -> float:
    """Distinct-n pooled over a set: ``#unique n-grams / #n-grams`` (0 if there are none).

    All n-grams of all sequences are pooled (Tevet & Berant ``DistinctNgrams``; the MAUVE
    experiments' Distinct-n on token ids).

    Args:
      sequences: list of texts (split by :func:`tevet_tokenize` or ``tokenizer``) or of
        token sequences (str or int tokens).
      n: n-gram order >= 1.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      the ratio as a Python float.

    Examples:
      >>> distinct_n(["a b a b", "a b c"], n=2)
      0.6
    """
    check_int(n, "n", minimum=1)
    s = _corpus_stats(sequences, n, tokenizer)
    u, t = int(s.unique[n - 1]), int(s.total[n - 1])
    return u / t if t > 0 else 0.0


def averaged_distinct_n(sequences: Sequence, n_min: int = 1, n_max: int = 5, *,
                        tokenizer: Callable | None = None) -> float:
    """Mean of :func:`distinct_n` over ``n = n_min..n_max`` (zeros included).

    Tevet & Berant's ``AveragedDistinctNgrams`` (their default n = 1..5).

    Args:
      sequences: texts or token sequences (as :func:`distinct_n`).
      n_min, n_max: the range of orders, ``1 <= n_min <= n_max``.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      the mean as a Python float.

    Examples:
      >>> round(averaged_distinct_n(["a b a b", "a b c"], 1, 2), 4)  # (3/7 + 3/5) / 2
      0.5143
    """
    check_orders(n_min, n_max)
    s = _corpus_stats(sequences, n_max, tokenizer)
    u, t = np.asarray(s.unique)[n_min - 1:], np.asarray(s.total)[n_min - 1:]
    return float(np.mean(np.where(t > 0, u / np.maximum(t, 1), 0.0)))


def ngram_entropy(sequences: Sequence, n: int = 4, *, tokenizer: Callable | None = None) -> float:
    """Shannon entropy (nats) of the pooled n-gram distribution of a set.

    ``H_n = -Σ_g p(g) ln p(g)`` with ``p(g) = c(g) / Σ_g' c(g')`` over all n-grams of all
    sequences; 0 if there are no n-grams.

    Args:
      sequences: texts or token sequences (as :func:`distinct_n`).
      n: n-gram order >= 1.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      the entropy as a Python float.

    Examples:
      >>> round(ngram_entropy(["a b", "c d"], n=1), 4)  # 4 equiprobable words: ln 4
      1.3863
    """
    check_int(n, "n", minimum=1)
    return float(_corpus_stats(sequences, n, tokenizer).entropy[n - 1])
