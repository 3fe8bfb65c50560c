"""Self-BLEU: BLEU of each generation against all the others, vectorised.

Definition (nltk ``sentence_bleu`` with ``SmoothingFunction().method1``, as in the MAUVE
experiments and Holtzman et al.): for hypothesis ``h`` of length ``c`` and references
``{r : r != h}`` (all other generations, by position),

* clipped count of n-gram ``g``: ``min(c_h(g), max_{r != h} c_r(g))``;
* ``p_n = Σ_g clipped / max(1, Σ_g c_h(g))``; method1 replaces a zero numerator by 0.1;
* closest reference length ``ρ = argmin_{r != h} (|len r - c|, len r)``;
* ``BP = 1`` if ``c > ρ``, ``0`` if ``c = 0``, else ``exp(1 - ρ/c)``;
* ``BLEU = 0`` if the unigram numerator is 0, else ``BP · exp(Σ_n w_n ln p_n)``.

Self-BLEU-N averages BLEU with uniform weights ``w_n = 1/N`` (n = 1..N) over the
hypotheses (optionally a seeded sample of them, drawn with ``jax.random`` from
``jax.random.key(seed)``).

Vectorisation: the max over all *other* generations is the top-2 trick — per n-gram keep
the largest and second largest per-generation count; a generation holding the largest
uses the second. Everything is sorts and segment reductions on ``[B*T]`` arrays.

Layers: the kernel :func:`self_bleu_stats` (integer statistics of every row, jit, returns a
:class:`SelfBLEUStats`) and :func:`bleu_from_stats`; on texts or token sequences
:func:`self_bleu_scores` (every generation) and :func:`self_bleu` (the mean).
"""
from __future__ import annotations

from functools import partial
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_int
from jaxmetrics.diversity.encoding import ROW_MULTIPLE, encode_sequences
from jaxmetrics.diversity.ngrams import ngram_ids
from jaxmetrics.results import Result

__all__ = ["SelfBLEUStats", "self_bleu_stats", "bleu_from_stats", "self_bleu_scores", "self_bleu"]


class SelfBLEUStats(Result):
    """Integer sufficient statistics of Self-BLEU for every row (:func:`self_bleu_stats`).

    Attributes:
      numerators: int32 ``[B, max_n]`` clipped n-gram matches against all other rows.
      denominators: int32 ``[B, max_n]`` ``max(1, #n-grams)`` of the row.
      hyp_len: int32 ``[B]`` the row's length ``c``.
      ref_len: int32 ``[B]`` the closest other length ``ρ``.

    Examples:
      >>> from jaxmetrics.diversity import encode_sequences
      >>> enc = encode_sequences(["a b c", "a b d", "a b c"])
      >>> self_bleu_stats(enc.ids, enc.lengths, max_n=2)
      SelfBLEUStats(numerators=i32[3,2], denominators=i32[3,2], hyp_len=i32[3], ref_len=i32[3])
    """

    numerators: jax.Array
    denominators: jax.Array
    hyp_len: jax.Array
    ref_len: jax.Array


def _clipped_numerators(g: jax.Array, valid: jax.Array, row: jax.Array, B: int) -> jax.Array:
    """Σ_g min(c_h(g), max_{r≠h} c_r(g)) for every row h; ``g, valid, row: [W]`` → ``[B]``."""
    W = g.shape[0]
    g = jnp.where(valid, g, W)
    g_s, r_s = jax.lax.sort((g, row), num_keys=2)
    start = jnp.concatenate([jnp.ones((1,), bool), (g_s[1:] != g_s[:-1]) | (r_s[1:] != r_s[:-1])])
    run = jnp.cumsum(start.astype(jnp.int32)) - 1  # one run per (n-gram, row)
    cnt = jax.ops.segment_sum(jnp.ones((W,), jnp.int32), run, num_segments=W)
    run_g = jnp.full((W,), W, jnp.int32).at[run].set(g_s)
    run_r = jnp.full((W,), B, jnp.int32).at[run].set(r_s)
    ok = (cnt > 0) & (run_g < W)
    gseg = jnp.where(ok, run_g, W)
    c = jnp.where(ok, cnt, 0)
    m1 = jax.ops.segment_max(c, gseg, num_segments=W + 1)
    m1r = m1[gseg]
    is_max = ok & (c == m1r)
    n_max = jax.ops.segment_sum(is_max.astype(jnp.int32), gseg, num_segments=W + 1)
    m2 = jax.ops.segment_max(jnp.where(ok & (c < m1r), c, 0), gseg, num_segments=W + 1)
    m2 = jnp.where(n_max >= 2, m1, jnp.maximum(m2, 0))
    ref = jnp.where(is_max, m2[gseg], m1r)
    clipped = jnp.where(ok, jnp.minimum(c, ref), 0)
    return jax.ops.segment_sum(clipped, jnp.where(ok, run_r, B), num_segments=B + 1)[:B]


def _closest_other_length(lengths: jax.Array, mask: jax.Array | None = None) -> jax.Array:
    """``argmin_{r≠h} (|len_r - len_h|, len_r)`` over rows r in ``mask``; ``[B] -> [B]``."""
    B = lengths.shape[0]
    far = jnp.int32(2 ** 28)  # masked rows never win (lengths are far below this)
    srt = jnp.sort(lengths if mask is None else jnp.where(mask, lengths, far))
    left = jnp.searchsorted(srt, lengths, side="left")
    right = jnp.searchsorted(srt, lengths, side="right")
    big = jnp.iinfo(jnp.int32).max // 2
    lo = jnp.where(left >= 1, srt[jnp.maximum(left - 1, 0)], -big)
    hi = jnp.where(right < B, srt[jnp.minimum(right, B - 1)], big)
    pick = jnp.where(lengths - lo <= hi - lengths, lo, hi)
    return jnp.where(right - left >= 2, lengths, pick)


@partial(jax.jit, static_argnames=("max_n",))
def self_bleu_stats(ids: jax.Array, lengths: jax.Array, max_n: int = 4,
                    ids_mask: jax.Array | None = None) -> SelfBLEUStats:
    """Integer sufficient statistics of Self-BLEU for every row of a padded batch.

    Args:
      ids: ``[B, T]`` token ids (B >= 2).
      lengths: ``[B]`` real lengths.
      max_n: largest n-gram order (static).
      ids_mask: optional ``[B]`` bool over the rows of ``ids``; rows outside it are neither
        references nor counted (their own outputs are meaningless).

    Returns:
      :class:`SelfBLEUStats`: clipped matches against all other rows, ``max(1, #n-grams)``,
      the row length and the closest other length (see the module docstring).

    Examples:
      >>> from jaxmetrics.diversity import encode_sequences
      >>> enc = encode_sequences(["a b c", "a b d", "a b c"])
      >>> s = self_bleu_stats(enc.ids, enc.lengths, max_n=2)
      >>> s.numerators.tolist(), s.denominators.tolist(), s.ref_len.tolist()
      ([[3, 2], [2, 1], [3, 2]], [[3, 2], [3, 2], [3, 2]], [3, 3, 3])
    """
    B, T = ids.shape
    W = B * T
    lengths = lengths.astype(jnp.int32)
    if ids_mask is not None:
        lengths = jnp.where(ids_mask, lengths, 0)
    grams = ngram_ids(ids, lengths, max_n)
    gid, valid = grams.ids, grams.valid
    row = jnp.broadcast_to(jnp.arange(B, dtype=jnp.int32)[:, None], (B, T)).reshape(W)
    nums = jax.vmap(lambda g, v: _clipped_numerators(g, v, row, B))(
        gid.reshape(max_n, W), valid.reshape(max_n, W))
    orders = jnp.arange(1, max_n + 1, dtype=jnp.int32)
    dens = jnp.maximum(1, lengths[:, None] - orders[None, :] + 1)
    return SelfBLEUStats(numerators=nums.T, denominators=dens, hyp_len=lengths,
                         ref_len=_closest_other_length(lengths, ids_mask))


def bleu_from_stats(numerators: jax.Array, denominators: jax.Array, hyp_len: jax.Array,
                    ref_len: jax.Array, weights: jax.Array, epsilon: float = 0.1) -> jax.Array:
    """Sentence BLEU with method1 smoothing from integer statistics.

    ``BLEU = [num_1 > 0] · BP · exp(Σ_n w_n ln p_n)``, ``p_n = num_n/den_n`` or
    ``epsilon/den_n`` when ``num_n = 0``; ``BP = 1`` if ``c > ρ``, 0 if ``c = 0``, else
    ``exp(1 - ρ/c)``.

    Args:
      numerators, denominators: ``[..., N]`` (e.g. the fields of :class:`SelfBLEUStats`).
      hyp_len, ref_len: ``[...]``.
      weights: ``[N]`` weights of the orders ``1..N``.
      epsilon: method1's added count.

    Returns:
      ``[...]`` BLEU values.

    Examples:
      >>> b = bleu_from_stats(jnp.array([3., 0.]), jnp.array([3., 2.]), 3., 3., jnp.array([.5, .5]))
      >>> round(float(b), 4)  # sqrt(1 * 0.1/2)
      0.2236
    """
    num = jnp.asarray(numerators)
    den = jnp.asarray(denominators).astype(num.dtype if jnp.issubdtype(num.dtype, jnp.floating)
                                           else jnp.asarray(0.0).dtype)
    num = num.astype(den.dtype)
    p = jnp.where(num > 0, num, epsilon) / den
    s = jnp.sum(jnp.asarray(weights, den.dtype) * jnp.log(p), axis=-1)
    c = jnp.asarray(hyp_len, den.dtype)
    r = jnp.asarray(ref_len, den.dtype)
    bp = jnp.where(c > r, 1.0, jnp.where(c == 0, 0.0, jnp.exp(1.0 - r / jnp.where(c == 0, 1.0, c))))
    return jnp.where(num[..., 0] > 0, bp * jnp.exp(s), 0.0)


def _bleu_numpy(num, den, c, r, weights, epsilon=0.1) -> np.ndarray:
    """float64 host evaluation of :func:`bleu_from_stats` (exact parity with nltk)."""
    num = np.asarray(num, np.float64)
    den = np.asarray(den, np.float64)
    p = np.where(num > 0, num, epsilon) / den
    s = np.sum(np.asarray(weights, np.float64) * np.log(p), axis=-1)
    c = np.asarray(c, np.float64)
    r = np.asarray(r, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        bp = np.where(c > r, 1.0, np.where(c == 0, 0.0, np.exp(1.0 - r / np.where(c == 0, 1, c))))
    return np.where(num[..., 0] > 0, bp * np.exp(s), 0.0)


def _weights_for(n: int, weights) -> np.ndarray:
    if weights is None:
        return np.full((n,), 1.0 / n)
    w = np.asarray(weights, np.float64)
    if w.ndim != 1 or w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"weights: expected a 1-D list of finite non-negative numbers, got {weights!r}")
    return w


def self_bleu_scores(generations: Sequence, n: int = 4, *, weights=None,
                     tokenizer: Callable | None = None) -> np.ndarray:
    """Self-BLEU of every generation against all the others, ``[B]`` float64.

    Equals ``[sentence_bleu(gens[:i] + gens[i+1:], gens[i], weights,
    smoothing_function=SmoothingFunction().method1) for i in range(B)]`` (nltk).

    Args:
      generations: ``B >= 2`` texts (split by :func:`tevet_tokenize` or ``tokenizer``) or
        token sequences (str/int tokens, e.g. model token ids). Empty ones are allowed (BLEU 0).
      n: n-gram order; weights default to uniform ``1/n`` for orders ``1..n``.
      weights: optional explicit weights ``[N]`` (orders ``1..N``).
      tokenizer: ``str -> list`` used for texts (default
        :func:`~jaxmetrics.diversity.tevet_tokenize`).

    Returns:
      ``[B]`` float64 numpy array.

    Examples:
      >>> self_bleu_scores(["a b c d", "a b c e", "x y z w"], n=2).round(4).tolist()
      [0.7071, 0.7071, 0.0]
    """
    check_int(n, "n", minimum=1)
    w = _weights_for(n, weights)
    enc = encode_sequences(generations, tokenizer=tokenizer, allow_empty=True,
                           name="generations", row_multiple=ROW_MULTIPLE)
    B = len(generations)
    if B < 2:
        raise ValueError(f"generations: need at least 2 generations, got {B}")
    mask = jnp.arange(enc.ids.shape[0]) < B
    st = jax.tree.map(lambda a: np.asarray(a)[:B], self_bleu_stats(enc.ids, enc.lengths, len(w), mask))
    return _bleu_numpy(st.numerators, st.denominators, st.hyp_len, st.ref_len, w)


def _sample_indices(num: int, num_samples: int, seed: int) -> np.ndarray:
    """The ``num_samples`` distinct hypothesis indices of :func:`self_bleu` for ``seed``."""
    key = jax.random.key(seed)
    return np.asarray(jax.random.choice(key, num, shape=(num_samples,), replace=False))


def self_bleu(generations: Sequence, n: int = 4, *, num_samples: int | None = None,
              seed: int = 1234, weights=None, tokenizer: Callable | None = None) -> float:
    """Self-BLEU-n: mean BLEU of (sampled) generations against all other generations.

    ``mean_{i ∈ H} BLEU(g_i; {g_j : j != i})`` (see :func:`self_bleu_scores`). ``H`` is all
    hypotheses, or with ``num_samples`` the distinct indices
    ``jax.random.choice(jax.random.key(seed), B, shape=(num_samples,), replace=False)`` (the
    MAUVE experiments average over 500 sampled hypotheses); references are always all other
    generations. Higher = less diverse.

    Args:
      generations: ``B >= 2`` texts or token sequences.
      n: n-gram order (uniform weights over 1..n).
      num_samples: number of hypotheses to average over (``<= B``), or None for all.
      seed: integer seed of the ``jax.random`` key the sample is drawn with.
      weights: optional explicit weights ``[N]`` (orders ``1..N``) instead of uniform.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      the mean as a Python float.

    Examples:
      >>> round(self_bleu(["a b c d", "a b c e", "x y z w"], n=2), 4)
      0.4714
    """
    scores = self_bleu_scores(generations, n, weights=weights, tokenizer=tokenizer)
    if num_samples is not None:
        check_int(num_samples, "num_samples", minimum=1, maximum=len(scores))
        check_int(seed, "seed")
        scores = scores[_sample_indices(len(scores), num_samples, seed)]
    return float(np.mean(scores))
