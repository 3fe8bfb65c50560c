"""Similarity → diversity reduction (Tevet & Berant, Sec. 5) and set-level diversity metrics.

For a response set ``S = {s_1..s_R}`` and a symmetric similarity ``sim``:

    div(S) = - mean_{i > j} sim(s_i, s_j)        (all C(R, 2) unordered pairs)

i.e. the *negated* mean similarity (≤ 0 for cosine-like similarities). Everything here is
batched over many sets ``[S, R, ...]`` with a response mask ``[S, R]`` (sets may differ in
size) and vmapped.

Layers: the kernels :func:`similarity_to_diversity` (a similarity matrix → diversity) and
:func:`batched_set_diversity` (any pairwise similarity function, vmapped over sets); per-set
metrics on response sets, each returning ``[S]``: :func:`embedding_cosine_diversity`,
:func:`ngram_cosine_diversity`, :func:`distinct_n_sets`, :func:`ngram_entropy_sets`,
:func:`self_bleu_sets`.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import PRECISION, accumulator_dtype
from jaxmetrics._validation import check_int, check_mask
from jaxmetrics.diversity.encoding import ROW_MULTIPLE, encode_sets
from jaxmetrics.diversity.ngrams import check_orders, ngram_cosine_matrix, ngram_count_stats
from jaxmetrics.diversity.selfbleu import bleu_from_stats, self_bleu_stats

__all__ = [
    "similarity_to_diversity",
    "batched_set_diversity",
    "embedding_cosine_diversity",
    "ngram_cosine_diversity",
    "distinct_n_sets",
    "ngram_entropy_sets",
    "self_bleu_sets",
]


def similarity_to_diversity(sim: jax.Array, sim_mask: jax.Array | None = None) -> jax.Array:
    """``-mean_{i>j} sim[..., i, j]`` over the pairs of responses kept by ``sim_mask``.

    Args:
      sim: ``[..., R, R]`` pairwise similarities (only the strict lower triangle is read).
      sim_mask: optional ``[..., R]`` bool of the real responses, i.e. of the rows (and
        columns) of ``sim`` (>= 2 per set; sets with fewer give 0, the public wrappers
        reject them).

    Returns:
      ``[...]`` diversities.

    Examples:
      >>> import jax.numpy as jnp
      >>> sim = jnp.array([[1., .5, .2], [.5, 1., .8], [.2, .8, 1.]])
      >>> round(float(similarity_to_diversity(sim)), 4)
      -0.5
      >>> float(similarity_to_diversity(sim, jnp.array([True, True, False])))
      -0.5
    """
    sim = jnp.asarray(sim)
    R = sim.shape[-1]
    m = jnp.ones(sim.shape[:-1], bool) if sim_mask is None else jnp.asarray(sim_mask, bool)
    pair = jnp.tril(jnp.ones((R, R), bool), k=-1) & m[..., :, None] & m[..., None, :]
    cnt = jnp.sum(pair, axis=(-1, -2))
    tot = jnp.sum(jnp.where(pair, sim, 0.0), axis=(-1, -2))
    return 0.0 - tot / jnp.maximum(cnt, 1).astype(tot.dtype)  # 0 - x: no negative zero


def _pairwise_similarity(x: Any, sim_fn: Callable[[Any, Any], jax.Array]) -> jax.Array:
    """``[R, R]`` matrix ``sim_fn(x[i], x[j])`` for a pytree ``x`` with leading axis ``R``."""
    return jax.vmap(lambda a: jax.vmap(lambda b: sim_fn(a, b))(x))(x)


def _set_diversity(x: Any, sim_fn: Callable, x_mask: jax.Array | None = None) -> jax.Array:
    """Diversity of one response set: ``similarity_to_diversity(pairwise sim_fn(x))``."""
    return similarity_to_diversity(_pairwise_similarity(x, sim_fn), x_mask)


@partial(jax.jit, static_argnames=("sim_fn",))
def batched_set_diversity(x: Any, sim_fn: Callable, x_mask: jax.Array | None = None) -> jax.Array:
    """Diversity ``-mean_{i>j} sim_fn(x[s, i], x[s, j])`` of every set ``s``.

    ``sim_fn`` takes two single responses (pytrees without the leading axes, e.g. a
    sentence vector ``[D]`` or ``(token_vectors [L, D], token_mask [L])``) and returns a
    scalar; it is vmapped over both responses and over the sets. ``sim_fn`` is static (pass
    the same function object to avoid recompiling).

    Args:
      x: a pytree whose leaves are ``[S, R, ...]``.
      sim_fn: ``(a, b) -> scalar`` symmetric similarity of two responses.
      x_mask: optional ``[S, R]`` bool of the real responses (>= 2 per set).

    Returns:
      ``[S]`` diversities.

    Examples:
      >>> import jax.numpy as jnp
      >>> e = jnp.array([[[1., 0.], [1., 0.]], [[1., 0.], [0., 1.]]])
      >>> batched_set_diversity(e, jnp.dot).tolist()
      [-1.0, 0.0]
    """
    if x_mask is None:
        return jax.vmap(lambda a: _set_diversity(a, sim_fn))(x)
    return jax.vmap(lambda a, m: _set_diversity(a, sim_fn, m))(x, x_mask)


def _cosine_similarity(a: jax.Array, b: jax.Array, eps: float = 1e-12) -> jax.Array:
    """Cosine of two vectors ``[D]``: ``a·b / max(‖a‖‖b‖, eps)``."""
    return jnp.dot(a, b, precision=PRECISION) / jnp.maximum(jnp.linalg.norm(a) * jnp.linalg.norm(b), eps)


def embedding_cosine_diversity(embeddings: Any, embeddings_mask: Any = None) -> np.ndarray:
    """Sent-BERT diversity: ``-mean_{i>j} cos(e_i, e_j)`` per set of sentence embeddings.

    Args:
      embeddings: ``[S, R, D]`` (or one set ``[R, D]``) sentence embeddings.
      embeddings_mask: optional ``[S, R]`` (or ``[R]``) bool of the real responses (>= 2 per
        set).

    Returns:
      ``[S]`` (or a 0-d array for one set).

    Examples:
      >>> import numpy as np
      >>> e = np.array([[1., 0.], [0., 1.], [1., 1.]])
      >>> round(float(embedding_cosine_diversity(e)), 4)  # -(0 + .7071 + .7071) / 3
      -0.4714
    """
    e = np.asarray(embeddings)
    if e.dtype == object or not np.issubdtype(e.dtype, np.number):
        raise TypeError(f"embeddings: expected a numeric array, got dtype {e.dtype}")
    single = e.ndim == 2
    if single:
        e = e[None]
    if e.ndim != 3:
        raise ValueError(f"embeddings: expected [S, R, D] or [R, D], got shape {e.shape}")
    if not np.all(np.isfinite(e)):
        raise ValueError("embeddings: contains NaN or infinite values")
    if embeddings_mask is None:
        m = np.ones(e.shape[:2], bool)
    else:
        m = np.asarray(check_mask(embeddings_mask, e.shape[1:2] if single else e.shape[:2],
                                  "embeddings_mask")).reshape(e.shape[:2])
    few = np.nonzero(m.sum(1) < 2)[0]
    if few.size:
        raise ValueError(f"embeddings: set {few[0]} has fewer than 2 responses")
    out = np.asarray(batched_set_diversity(jnp.asarray(e), _cosine_similarity, jnp.asarray(m)))
    return np.asarray(out[0]) if single else out


# ---------------------------------------------------------------------------------------
# n-gram metrics per response set (batched)
# ---------------------------------------------------------------------------------------

def _per_set(response_sets: Sequence, tokenizer: Callable | None, kernel: Callable) -> np.ndarray:
    """Encode the sets (their number padded to :data:`ROW_MULTIPLE`, so similar batches share
    one compilation), apply ``kernel(ids, lengths, ids_mask) -> [S', ...]`` and keep the real
    sets' rows."""
    enc = encode_sets(response_sets, tokenizer=tokenizer, set_multiple=ROW_MULTIPLE)
    return np.asarray(kernel(enc.ids, enc.lengths, enc.ids_mask))[:len(response_sets)]


@partial(jax.jit, static_argnames=("n_min", "n_max"))
def _cosine_div_kernel(ids, lengths, mask, n_min: int, n_max: int):
    def one(i, l, m):
        divs = [similarity_to_diversity(ngram_cosine_matrix(i, l, n), m)
                for n in range(n_min, n_max + 1)]
        return jnp.stack(divs)
    return jax.vmap(one)(ids, lengths, mask)


def ngram_cosine_diversity(response_sets: Sequence, n_min: int = 1, n_max: int = 5, *,
                           tokenizer: Callable | None = None) -> np.ndarray:
    """Averaged n-gram cosine diversity per set (Tevet & Berant ``AveragedCosineSimilarity``).

    ``div(S) = mean_{n=n_min..n_max} ( -mean_{i>j} cos_n(s_i, s_j) )`` with ``cos_n`` the
    cosine of n-gram count vectors (0 if either has no n-grams).

    Args:
      response_sets: ``S`` sets, each a list of >= 2 texts or token sequences.
      n_min, n_max: the range of orders.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      ``[S]`` float array (≤ 0; higher = more diverse).

    Examples:
      >>> ngram_cosine_diversity([["a b c", "a b c"], ["a b c", "x y z"]], 1, 1).tolist()
      [-1.0, 0.0]
    """
    check_orders(n_min, n_max)
    return _per_set(response_sets, tokenizer, lambda i, l, m: jnp.mean(
        _cosine_div_kernel(i, l, m, n_min, n_max), axis=1))


@partial(jax.jit, static_argnames=("max_n",))
def _set_count_stats(ids, lengths, mask, max_n: int):
    """:func:`ngram_count_stats` of every set (fields ``[S, max_n]``)."""
    return jax.vmap(lambda i, l: ngram_count_stats(i, l, max_n))(ids, jnp.where(mask, lengths, 0))


def distinct_n_sets(response_sets: Sequence, n_min: int = 1, n_max: int = 5, *,
                    tokenizer: Callable | None = None) -> np.ndarray:
    """Averaged distinct-n of every set: ``mean_n #unique / #total`` pooled within the set.

    Args:
      response_sets: ``S`` sets, each a list of >= 2 texts or token sequences.
      n_min, n_max: the range of orders.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      ``[S]`` float64 array.

    Examples:
      >>> distinct_n_sets([["a b", "a b"], ["a b", "c d"]], 1, 2).tolist()
      [0.5, 1.0]
    """
    check_orders(n_min, n_max)

    def averaged(ids, lengths, ids_mask):
        st = _set_count_stats(ids, lengths, ids_mask, n_max)
        u, t = np.asarray(st.unique)[:, n_min - 1:], np.asarray(st.total)[:, n_min - 1:]
        return np.mean(np.where(t > 0, u / np.maximum(t, 1), 0.0), axis=1)

    return _per_set(response_sets, tokenizer, averaged)


def ngram_entropy_sets(response_sets: Sequence, n: int = 2, *,
                       tokenizer: Callable | None = None) -> np.ndarray:
    """Pooled n-gram entropy (nats) of every set, ``[S]``.

    Args:
      response_sets: ``S`` sets, each a list of >= 2 texts or token sequences.
      n: n-gram order >= 1.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      ``[S]`` float64 array.

    Examples:
      >>> ngram_entropy_sets([["a a", "a a"], ["a b", "c d"]], n=1).round(4).tolist()
      [0.0, 1.3863]
    """
    check_int(n, "n", minimum=1)
    return _per_set(response_sets, tokenizer, lambda i, l, m: np.asarray(
        _set_count_stats(i, l, m, n).entropy, np.float64)[:, n - 1])


@partial(jax.jit, static_argnames=("max_n",))
def _self_bleu_sets_kernel(ids, lengths, mask, weights, max_n: int):
    def one(i, l, m):
        st = self_bleu_stats(i, l, max_n, m)
        b = bleu_from_stats(st.numerators, st.denominators, st.hyp_len, st.ref_len, weights)
        return jnp.sum(jnp.where(m, b, 0.0)) / jnp.maximum(jnp.sum(m), 1)
    return jax.vmap(one)(ids, lengths, mask)


def self_bleu_sets(response_sets: Sequence, n: int = 4, *,
                   tokenizer: Callable | None = None) -> np.ndarray:
    """Mean Self-BLEU-n inside every set (each response vs the others of its set), ``[S]``.

    Computed in the default float dtype inside ``jit`` (float32 unless x64 is on), so it
    equals :func:`~jaxmetrics.diversity.self_bleu_scores` of each set to ~1e-6.

    Args:
      response_sets: ``S`` sets of >= 2 texts or token sequences each (as
        :func:`ngram_entropy_sets`).
      n: the largest n-gram order >= 1; orders ``1..n`` weigh ``1/n`` each.
      tokenizer: splits texts (``str -> list``).

    Returns:
      ``[S]`` mean BLEU of the set's responses, in the default float dtype.

    Examples:
      >>> self_bleu_sets([["a b c d", "a b c d"], ["a b c d", "w x y z"]], n=2).round(4).tolist()
      [1.0, 0.0]
    """
    check_int(n, "n", minimum=1)
    w = jnp.full((n,), 1.0 / n, accumulator_dtype())
    return _per_set(response_sets, tokenizer, lambda i, l, m: _self_bleu_sets_kernel(i, l, m, w, n))
