"""Exact n-gram ids and n-gram statistics on padded token arrays.

Layout: a set of token sequences is a padded ``ids [B, T]`` int array plus ``lengths [B]``
(token ``t`` of row ``b`` is real iff ``t < lengths[b]``). The n-gram starting at ``(b, t)``
is *valid* iff ``t + n <= lengths[b]``.

N-gram identity is exact, not hashed: the id of an n-gram is the dense rank of the pair
(id of its (n-1)-gram prefix, id of its last token) among all windows of the batch, obtained
by one two-key sort per order. So ids never collide, every step has a static shape and the
whole thing is jit-compiled (``jnp.unique`` needs a data-dependent size; a rolling hash in
int32 would collide).

Host side (strings → arrays) lives in :func:`encode_sequences` and :func:`tevet_tokenize`.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

__all__ = [
    "tevet_tokenize",
    "encode_sequences",
    "encode_sets",
    "ngram_ids",
    "ngram_count_stats",
    "ngram_cosine_matrix",
    "distinct_n",
    "averaged_distinct_n",
    "ngram_entropy",
]


# --------------------------------------------------------------------------------------
# Host side: tokenisation and padding
# --------------------------------------------------------------------------------------

def tevet_tokenize(text: str) -> list[str]:
    """Split ``text`` into words by Tevet & Berant's rule.

    Definition: remove every ``'.'`` and ``'\\n'``, split on single spaces, drop empty
    strings. Case is kept and other punctuation stays attached to its word.

    Args:
      text: a string.

    Returns:
      list of word strings.

    Examples:
      >>> tevet_tokenize("Hello there. How are  you?\\n")
      ['Hello', 'there', 'How', 'are', 'you?']
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected str, got {type(text).__name__}")
    return [w for w in text.replace(".", "").replace("\n", "").split(" ") if w != ""]


_ROWS = 8  # public wrappers pad the batch to a multiple of this (fewer compilations)


def _pad_len(t: int, multiple: int = 16) -> int:
    return max(multiple, -(-t // multiple) * multiple)


def _tokenize_all(sequences: Any, name: str, tokenizer: Callable[[str], list] | None,
                  allow_empty: bool) -> list[list]:
    if isinstance(sequences, (str, bytes)) or sequences is None:
        raise TypeError(f"{name}: expected a sequence of texts or token sequences, got "
                        f"{type(sequences).__name__}")
    if isinstance(sequences, np.ndarray) and sequences.ndim == 2 and sequences.dtype != object:
        return [list(r) for r in sequences]
    out = []
    for i, s in enumerate(sequences):
        if isinstance(s, str):
            toks = (tokenizer or tevet_tokenize)(s)
        elif isinstance(s, (list, tuple, np.ndarray)):
            toks = list(s)
            for t in toks:
                if not isinstance(t, (str, int, np.integer)) or isinstance(t, bool):
                    raise TypeError(f"{name}: item {i} contains a token of type "
                                    f"{type(t).__name__}; tokens must be str or int")
        else:
            raise TypeError(f"{name}: item {i} is {type(s).__name__}, expected str or a "
                            f"sequence of tokens")
        if not toks and not allow_empty:
            raise ValueError(f"{name}: item {i} is empty (no tokens)")
        out.append(toks)
    if not out:
        raise ValueError(f"{name}: no sequences (the list is empty)")
    return out


def _to_dense(token_lists: list[list], max_len: int | None = None,
              row_multiple: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Map arbitrary hashable tokens to dense int32 ids and pad to ``[B, T]``.

    With ``row_multiple > 1`` empty rows (length 0) are appended up to a multiple of it.
    """
    lengths = np.array([len(t) for t in token_lists], dtype=np.int64)
    flat = [tok for toks in token_lists for tok in toks]
    if flat and all(isinstance(t, (int, np.integer)) for t in flat):
        arr = np.asarray(flat, dtype=np.int64)
        _, dense = np.unique(arr, return_inverse=True)
    else:
        vocab: dict = {}
        # Strings need a host dictionary; this is the single Python pass over tokens.
        dense = np.fromiter((vocab.setdefault(tok, len(vocab)) for tok in flat),
                            dtype=np.int64, count=len(flat))
    T = _pad_len(int(lengths.max()) if max_len is None else max_len)
    B = -(-len(token_lists) // row_multiple) * row_multiple
    lengths = np.concatenate([lengths, np.zeros(B - len(lengths), np.int64)])
    ids = np.zeros((B, T), dtype=np.int32)
    mask = np.arange(T)[None, :] < lengths[:, None]
    ids[mask] = dense.reshape(-1).astype(np.int32)
    return ids, lengths.astype(np.int32)


def encode_sequences(sequences: Any, *, tokenizer: Callable[[str], list] | None = None,
                     allow_empty: bool = False, name: str = "sequences", row_multiple: int = 1
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Turn texts or token sequences into padded dense ids ``[B, T]`` and ``lengths [B]``.

    Texts are split with ``tokenizer`` (default :func:`tevet_tokenize`); lists of str or int
    tokens (e.g. model token ids) are used as given. Tokens are mapped to dense ids
    ``0..V-1`` (equal tokens ↔ equal ids); ``T`` is rounded up to a multiple of 16 so that
    similar batches share one compiled kernel; ``row_multiple`` likewise appends empty
    rows (length 0) so that ``B`` is a multiple of it.

    Examples:
      >>> ids, lengths = encode_sequences(["a b a", "b c"])
      >>> ids[:, :3].tolist(), lengths.tolist()
      ([[0, 1, 0], [1, 2, 0]], [3, 2])
    """
    toks = _tokenize_all(sequences, name, tokenizer, allow_empty)
    return _to_dense(toks, row_multiple=row_multiple)


def encode_sets(sets: Any, *, tokenizer: Callable[[str], list] | None = None,
                name: str = "response_sets", set_multiple: int = 1
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Encode response sets into ``ids [S, R, T]``, ``lengths [S, R]``, ``mask [S, R]``.

    Every set must hold at least two non-empty responses; sets may differ in size (``mask``
    marks the real responses). Token ids are shared across all sets. ``set_multiple``
    appends fully masked sets so that ``S`` is a multiple of it (fewer compilations).

    Examples:
      >>> ids, lengths, mask = encode_sets([["a b", "b c"], ["a", "c", "d"]])
      >>> ids.shape, lengths.tolist(), mask.tolist()
      ((2, 3, 16), [[2, 2, 0], [1, 1, 1]], [[True, True, False], [True, True, True]])
    """
    if isinstance(sets, (str, bytes)) or sets is None:
        raise TypeError(f"{name}: expected a list of response sets, got {type(sets).__name__}")
    sets = list(sets)
    if not sets:
        raise ValueError(f"{name}: no response sets (the list is empty)")
    flat: list[list] = []
    sizes = []
    for i, s in enumerate(sets):
        if isinstance(s, (str, bytes)) or not isinstance(s, (list, tuple, np.ndarray)):
            raise TypeError(f"{name}: set {i} is {type(s).__name__}, expected a list of responses")
        if len(s) < 2:
            raise ValueError(f"{name}: set {i} has {len(s)} response(s); at least 2 are needed")
        flat.extend(_tokenize_all(s, f"{name}[{i}]", tokenizer, allow_empty=False))
        sizes.append(len(s))
    ids_flat, len_flat = _to_dense(flat)
    S, R, T = -(-len(sets) // set_multiple) * set_multiple, max(sizes), ids_flat.shape[1]
    ids = np.zeros((S, R, T), np.int32)
    lengths = np.zeros((S, R), np.int32)
    mask = np.zeros((S, R), bool)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    for i, k in enumerate(sizes):
        ids[i, :k] = ids_flat[offs[i]:offs[i + 1]]
        lengths[i, :k] = len_flat[offs[i]:offs[i + 1]]
        mask[i, :k] = True
    return ids, lengths, mask


# --------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------

def _float_dtype():
    """The default float dtype (float64 under ``jax.enable_x64(True)``)."""
    return jnp.asarray(0.0).dtype


def _dense_rank_pairs(a: jax.Array, b: jax.Array) -> jax.Array:
    """Dense rank of the pairs ``(a[i], b[i])`` in lexicographic order; ``[W] -> [W]``."""
    W = a.shape[0]
    iota = jnp.arange(W, dtype=jnp.int32)
    a_s, b_s, perm = jax.lax.sort((a, b, iota), num_keys=2)
    new = jnp.concatenate([jnp.ones((1,), bool), (a_s[1:] != a_s[:-1]) | (b_s[1:] != b_s[:-1])])
    rank_s = jnp.cumsum(new.astype(jnp.int32)) - 1
    return jnp.zeros((W,), jnp.int32).at[perm].set(rank_s)


@partial(jax.jit, static_argnames=("max_n",))
def ngram_ids(ids: jax.Array, lengths: jax.Array, max_n: int) -> tuple[jax.Array, jax.Array]:
    """Exact ids of all n-grams, n = 1..max_n, of a padded batch.

    ``gid[n-1, b, t]`` is the id of the n-gram ``ids[b, t:t+n]``; two windows have the same
    id iff their tokens are equal. Ids lie in ``[0, B*T)``; invalid windows
    (``t + n > lengths[b]``) get the sentinel ``B*T`` and ``valid = False``.

    Args:
      ids: ``[B, T]`` integer token ids (any values; padding ignored).
      lengths: ``[B]`` number of real tokens per row.
      max_n: largest n-gram order (static).

    Returns:
      ``(gid [max_n, B, T] int32, valid [max_n, B, T] bool)``.

    Examples:
      >>> g, v = ngram_ids(jnp.array([[5, 7, 5, 7]]), jnp.array([4]), max_n=2)
      >>> g[1, 0, 0] == g[1, 0, 2], v[1, 0].tolist()
      (Array(True, dtype=bool), [True, True, True, False])
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
    return jnp.stack(gids), jnp.stack(valids)


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
    cnt = jax.ops.segment_sum(ok.astype(_float_dtype()),
                              jnp.where(ok, run, W), num_segments=W + 1)[:W]
    totf = jnp.maximum(total, 1).astype(cnt.dtype)
    p = cnt / totf
    ent = 0.0 - jnp.sum(jnp.where(cnt > 0, p * jnp.log(jnp.where(cnt > 0, p, 1.0)), 0.0))
    return unique, total, ent


@partial(jax.jit, static_argnames=("max_n",))
def ngram_count_stats(ids: jax.Array, lengths: jax.Array, max_n: int):
    """Pooled n-gram statistics of a set of sequences, for n = 1..max_n.

    With ``c(g)`` the number of occurrences of n-gram ``g`` over all rows and
    ``N = Σ_g c(g)``: ``unique = #{g : c(g) > 0}``, ``total = N`` and
    ``entropy = -Σ_g (c(g)/N) ln(c(g)/N)`` (nats; 0 when N = 0). Sufficient statistics for
    distinct-n (``unique / total``) and n-gram entropy. vmap over a leading set axis to
    get per-set values.

    Args:
      ids: ``[B, T]`` token ids; lengths: ``[B]``; max_n: static.

    Returns:
      ``(unique [max_n] int, total [max_n] int, entropy [max_n] float)``.

    Examples:
      >>> u, t, e = ngram_count_stats(jnp.array([[1, 2, 1, 2]]), jnp.array([4]), max_n=2)
      >>> u.tolist(), t.tolist()
      ([2, 2], [4, 3])
    """
    gid, valid = ngram_ids(ids, lengths, max_n)
    W = ids.shape[0] * ids.shape[1]
    return jax.vmap(_pooled_stats_one_order)(gid.reshape(max_n, W), valid.reshape(max_n, W))


@partial(jax.jit, static_argnames=("n",))
def ngram_cosine_matrix(ids: jax.Array, lengths: jax.Array, n: int) -> jax.Array:
    """Pairwise cosine similarity of n-gram count vectors within one set.

    ``cos(i, j) = Σ_g c_i(g) c_j(g) / (‖c_i‖ ‖c_j‖)`` over the union vocabulary, and 0 when
    either sequence has no n-grams (Tevet & Berant's ``CosineSimilarity``). Uses a dense
    ``[R, R*T]`` count matrix, so meant for response sets (R small); vmap over sets.

    Args:
      ids: ``[R, T]`` token ids; lengths: ``[R]``; n: n-gram order (static).

    Returns:
      ``[R, R]`` similarity matrix.

    Examples:
      >>> ids, lengths = encode_sequences(["a b c", "a b d", "x y z"])
      >>> [round(float(v), 4) for v in ngram_cosine_matrix(ids, lengths, n=1)[0]]
      [1.0, 0.6667, 0.0]
    """
    R, T = ids.shape
    W = R * T
    gid, valid = ngram_ids(ids, lengths, n)
    g, v = gid[n - 1], valid[n - 1]
    dtype = _float_dtype()
    rows = jnp.broadcast_to(jnp.arange(R)[:, None], (R, T))
    counts = jnp.zeros((R, W + 1), dtype).at[rows, jnp.where(v, g, W)].add(v.astype(dtype))
    counts = counts[:, :W]
    gram = counts @ counts.T
    norm = jnp.sqrt(jnp.diag(gram))
    den = norm[:, None] * norm[None, :]
    return jnp.where(den > 0, gram / jnp.where(den > 0, den, 1.0), 0.0)


# --------------------------------------------------------------------------------------
# Public functions on texts / token sequences (host boundary)
# --------------------------------------------------------------------------------------

def _check_orders(n_min: int, n_max: int) -> None:
    from jaxmetrics._validation import check_int
    check_int(n_min, "n_min", minimum=1)
    check_int(n_max, "n_max", minimum=1)
    if n_max < n_min:
        raise ValueError(f"n_max: must be >= n_min ({n_min}), got {n_max}")


def distinct_n(sequences: Sequence, n: int = 3, *, tokenizer: Callable | None = None) -> float:
    """Distinct-n pooled over a set: ``#unique n-grams / #n-grams`` (0 if there are none).

    All n-grams of all sequences are pooled (Tevet & Berant ``DistinctNgrams``; the MAUVE
    experiments' Distinct-n on token ids).

    Args:
      sequences: list of texts (split by :func:`tevet_tokenize` or ``tokenizer``) or of
        token sequences (str or int tokens).
      n: n-gram order >= 1.

    Examples:
      >>> distinct_n(["a b a b", "a b c"], n=2)
      0.6
    """
    from jaxmetrics._validation import check_int
    check_int(n, "n", minimum=1)
    ids, lengths = encode_sequences(sequences, tokenizer=tokenizer, allow_empty=True,
                                    row_multiple=_ROWS)
    u, t, _ = ngram_count_stats(ids, lengths, n)
    u, t = int(u[n - 1]), int(t[n - 1])
    return u / t if t > 0 else 0.0


def averaged_distinct_n(sequences: Sequence, n_min: int = 1, n_max: int = 5, *,
                        tokenizer: Callable | None = None) -> float:
    """Mean of :func:`distinct_n` over ``n = n_min..n_max`` (zeros included).

    Tevet & Berant's ``AveragedDistinctNgrams`` (their default n = 1..5).

    Examples:
      >>> round(averaged_distinct_n(["a b a b", "a b c"], 1, 2), 4)  # (3/7 + 3/5) / 2
      0.5143
    """
    _check_orders(n_min, n_max)
    ids, lengths = encode_sequences(sequences, tokenizer=tokenizer, allow_empty=True,
                                    row_multiple=_ROWS)
    u, t, _ = ngram_count_stats(ids, lengths, n_max)
    u, t = np.asarray(u)[n_min - 1:], np.asarray(t)[n_min - 1:]
    return float(np.mean(np.where(t > 0, u / np.maximum(t, 1), 0.0)))


def ngram_entropy(sequences: Sequence, n: int = 4, *, tokenizer: Callable | None = None) -> float:
    """Shannon entropy (nats) of the pooled n-gram distribution of a set.

    ``H_n = -Σ_g p(g) ln p(g)`` with ``p(g) = c(g) / Σ_g' c(g')`` over all n-grams of all
    sequences; 0 if there are no n-grams.

    Examples:
      >>> round(ngram_entropy(["a b", "c d"], n=1), 4)  # 4 equiprobable words: ln 4
      1.3863
    """
    from jaxmetrics._validation import check_int
    check_int(n, "n", minimum=1)
    ids, lengths = encode_sequences(sequences, tokenizer=tokenizer, allow_empty=True,
                                    row_multiple=_ROWS)
    _, _, e = ngram_count_stats(ids, lengths, n)
    return float(e[n - 1])
