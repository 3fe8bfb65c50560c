"""Confidence intervals of the corpus-level diversity metrics: distinct-n and Self-BLEU.

Both metrics are functions of a *set* of texts, not means of per-text values, and both change
with the size of the set (more texts repeat more n-grams, and give every text more references).
What an interval covers is therefore the estimator's **expected value at this number of
texts**: the mean of ``distinct_n`` (or ``self_bleu``) over sets of ``B`` texts drawn from the
population the texts came from.

The items resampled are the texts. Two schemes, as ``method=``:

* ``'subsample'`` (default): subsets of ``0.75 B`` texts drawn without replacement
  (:func:`jaxmetrics.confidence.subsample_interval`): the spread of the subset values, centred
  on their mean and rescaled by ``sqrt(f / (1 - f))``, stands for the spread at ``B`` texts.
* ``'bca'`` / ``'percentile'``: the bootstrap of :func:`jaxmetrics.confidence_interval`
  (resamples of ``B`` texts with replacement). A bootstrap resample holds only about 63 % of
  the distinct texts and repeats the others: a repeated text adds n-grams that are not new, so
  distinct-n of a resample is biased low (distinct-2 of 100 real sentences: 0.95, its
  resamples 0.61 on average, 50 standard errors below; every resample falls below the
  estimate, so BCa's bias correction saturates and its interval collapses onto the lowest
  resamples), and with a text's copies excluded from its
  references (:func:`resampled_self_bleu`; as its own reference a copy would score BLEU 1)
  Self-BLEU of a resample sees fewer references and is biased low too. Kept to show it, not
  recommended: measured coverage in ``docs/diversity.md`` ("Confidence intervals").

Layers: :func:`ngram_rows` (host: texts → per-text n-gram ids, exact across the set, padded to
a multiple of 16 per text) with the traceable statistic :func:`distinct_ngram_fraction`;
:func:`resampled_self_bleu` (traceable, per-text resampling counts); the wrappers
:func:`distinct_n_interval` and :func:`self_bleu_interval` (one jitted, vmapped computation,
compiled once per shape and setting; reproducible for a key).
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp

from jaxmetrics._ops import accumulator_dtype
from jaxmetrics._validation import check_choice, check_int, check_key, check_open_unit, check_resampling
from jaxmetrics.confidence import Interval, confidence_interval, subsample_interval
from jaxmetrics.diversity.encoding import encode_sequences
from jaxmetrics.diversity.ngrams import distinct_n, ngram_ids
from jaxmetrics.diversity.selfbleu import _closest_other_length, _weights_for, bleu_from_stats, self_bleu
from jaxmetrics.results import Result

__all__ = ["CORPUS_METRICS", "NGramRows", "INTERVAL_METHODS", "ngram_rows", "distinct_ngram_fraction", "distinct_n_interval",
           "resampled_self_bleu", "self_bleu_interval"]

#: the resampling schemes of the diversity intervals (module docstring)
INTERVAL_METHODS = ("subsample", "bca", "percentile")


class NGramRows(Result):
    """The n-grams of one order of every text, one row per text (:func:`ngram_rows`).

    Attributes:
      ids: int32 ``[B, T]``; ``ids[b, t]`` is the id of the n-gram starting at token ``t`` of
        text ``b`` (equal n-grams ↔ equal ids across the whole set; ``T`` is the longest text
        rounded up to a multiple of 16).
      ids_mask: bool ``[B, T]``, true on the text's real n-grams (``t + n <= length_b``).

    Examples:
      >>> ngram_rows(["a b a b", "a b c"], n=2)
      NGramRows(ids=i32[2,16], ids_mask=bool[2,16])
    """

    ids: jax.Array
    ids_mask: jax.Array


def ngram_rows(sequences: Sequence, n: int = 3, *, tokenizer: Callable | None = None) -> NGramRows:
    """Per-text n-gram ids of order ``n``, exact across the set (the items of distinct-n's interval).

    The texts are encoded as :func:`~jaxmetrics.diversity.distinct_n` encodes them
    (:func:`~jaxmetrics.diversity.encode_sequences`) and the ids are those of
    :func:`~jaxmetrics.diversity.ngram_ids` over the whole set, so two windows of any two texts
    have the same id iff their n tokens are equal (no hashing, no collision). Rows are items:
    resampling rows and counting distinct ids (:func:`distinct_ngram_fraction`) gives distinct-n
    of the resampled set.

    Args:
      sequences: ``B`` texts (split by :func:`~jaxmetrics.diversity.tevet_tokenize` or
        ``tokenizer``) or token sequences; empty ones are allowed (no n-grams).
      n: n-gram order >= 1.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      :class:`NGramRows` (``ids [B, T]`` int32, ``ids_mask [B, T]`` bool).

    Examples:
      >>> r = ngram_rows(["a b a b", "a b c"], n=2)
      >>> r.ids[:, :2].tolist(), r.ids_mask.sum(axis=1).tolist()   # "a b" has one id in both texts
      ([[0, 1], [0, 2]], [3, 2])
    """
    n = check_int(n, "n", minimum=1)
    enc = encode_sequences(sequences, tokenizer=tokenizer, allow_empty=True)
    grams = ngram_ids(jnp.asarray(enc.ids), jnp.asarray(enc.lengths), n)
    return NGramRows(ids=grams.ids[n - 1], ids_mask=grams.valid[n - 1])


def distinct_ngram_fraction(ids: jax.Array, ids_mask: jax.Array) -> jax.Array:
    """Distinct-n of a set of n-gram rows: ``#distinct ids / #ids`` over ``ids[ids_mask]``.

    Traceable (one sort of the ``B·T`` ids and a compare of neighbours, masked entries sorted
    last), so it runs inside :func:`~jaxmetrics.confidence_interval` and
    :func:`~jaxmetrics.confidence.subsample_interval` on resampled rows of :func:`ngram_rows`.
    A row taken twice contributes its n-grams twice to the count and nothing new to the distinct
    ids. 0 when there is no n-gram.

    Args:
      ids: ``[B, T]`` integer n-gram ids, below ``2**31 - 1`` (:attr:`NGramRows.ids`).
      ids_mask: ``[B, T]`` bool, the real n-grams.

    Returns:
      0-d float (float32, float64 under ``jax.enable_x64``).

    Examples:
      >>> r = ngram_rows(["a b a b", "a b c"], n=2)
      >>> round(float(distinct_ngram_fraction(r.ids, r.ids_mask)), 6)    # distinct_n(..., n=2)
      0.6
      >>> twice = jnp.array([0, 0])                                       # text 0 twice: 2 / 6
      >>> round(float(distinct_ngram_fraction(r.ids[twice], r.ids_mask[twice])), 6)
      0.333333
    """
    flat = jnp.asarray(ids).reshape(-1).astype(jnp.int32)
    ok = jnp.asarray(ids_mask, bool).reshape(-1)
    last = jnp.iinfo(jnp.int32).max
    s = jnp.sort(jnp.where(ok, flat, last))
    total = jnp.sum(ok, dtype=jnp.int32)
    real = jnp.arange(s.shape[0]) < total
    new = jnp.concatenate([jnp.ones((1,), bool), s[1:] != s[:-1]]) & real
    f = accumulator_dtype()
    unique = jnp.sum(new, dtype=jnp.int32).astype(f)
    return jnp.where(total > 0, unique / jnp.maximum(total, 1).astype(f), 0.0)


def _check_interval_args(key, num_resamples, confidence, method, fraction, batch_size) -> None:
    check_key(key)
    check_resampling(num_resamples, confidence)
    check_choice(method, "method", INTERVAL_METHODS)
    check_open_unit(fraction, "fraction")
    if batch_size is not None:
        check_int(batch_size, "batch_size", minimum=1)


def _check_subsample(method: str, fraction: float, num_items: int, name: str) -> None:
    m = int(round(fraction * num_items))
    if method == "subsample" and not 1 <= m <= num_items - 1:
        raise ValueError(f"fraction: {fraction} of the {num_items} {name} gives subsamples of {m}; they must keep "
                         f"at least 1 and leave out at least 1")


def _resample(statistic, sample, key, num_resamples, confidence, method, fraction, batch_size) -> Interval:
    """The interval of a statistic in ``[0, 1]`` (distinct-n, Self-BLEU): its ends are clipped to
    that range (the subsample interval's rescaled spread can step past 1 for a set whose value is
    near it; no resampled value can)."""
    if method == "subsample":
        ci = subsample_interval(statistic, sample, key=key, num_resamples=num_resamples, confidence=confidence,
                                fraction=fraction, batch_size=batch_size)
    else:
        ci = confidence_interval(statistic, sample, key=key, num_resamples=num_resamples, confidence=confidence,
                                 method=method, batch_size=batch_size)
    return ci.replace(low=jnp.clip(ci.low, 0.0, 1.0), high=jnp.clip(ci.high, 0.0, 1.0))


@partial(jax.jit, static_argnames=("num_resamples", "confidence", "method", "fraction", "batch_size"))
def _distinct_interval(rows: NGramRows, key, num_resamples, confidence, method, fraction, batch_size) -> Interval:
    return _resample(lambda r: distinct_ngram_fraction(r.ids, r.ids_mask), rows, key, num_resamples, confidence,
                     method, fraction, batch_size)


def distinct_n_interval(sequences: Sequence, n: int = 3, *, key: jax.Array, num_resamples: int = 1000,
                        confidence: float = 0.95, method: str = "subsample", fraction: float = 0.75,
                        tokenizer: Callable | None = None, batch_size: int | None = None) -> Interval:
    """Distinct-n of a set of texts with a confidence interval, the texts resampled.

    ``value`` is :func:`~jaxmetrics.diversity.distinct_n` of the texts as given (pooled
    ``#distinct n-grams / #n-grams``). The interval covers distinct-n's **expected value at
    this number of texts** ``B`` (distinct-n falls as a set grows, so it is a different number
    at another size): with ``method='subsample'`` (default) from ``num_resamples`` subsets of
    ``round(fraction · B)`` texts drawn without replacement
    (:func:`jaxmetrics.confidence.subsample_interval`); with ``'bca'`` / ``'percentile'`` from
    bootstrap resamples, which repeat texts and so are biased low (a repeated text adds no new
    n-gram; see the module docstring) — measured coverage of both in ``docs/diversity.md``. Every resample is one vmapped evaluation of
    :func:`distinct_ngram_fraction` on :func:`ngram_rows`, compiled once per shape
    (``B``, ``T`` rounded up to a multiple of 16) and setting.

    Args:
      sequences: ``B >= 2`` texts or token sequences (as :func:`~jaxmetrics.diversity.distinct_n`).
      n: n-gram order >= 1.
      key: a ``jax.random`` key (required); the same key gives the same interval.
      num_resamples: number of resamples, at least ``(1 + confidence) / (1 - confidence)`` (39 at 0.95; fewer make the end points the extreme resamples: :func:`jaxmetrics._validation.check_resampling`).
      confidence: nominal coverage in ``[0.5, 1)``.
      method: ``'subsample'`` (default), ``'bca'`` or ``'percentile'``.
      fraction: subsample size as a fraction of ``B`` (``'subsample'`` only), in ``(0, 1)``.
      tokenizer: ``str -> list`` used for texts.
      batch_size: resamples per vmapped chunk (``None``: bounded by memory).

    Returns:
      :class:`~jaxmetrics.confidence.Interval` (0-d arrays ``value``, ``low``, ``high``, ...); the
      ends are clipped to ``[0, 1]``, the statistic's range.

    Raises:
      ValueError: fewer than 2 texts, a bad ``n``, ``num_resamples``, ``confidence``,
        ``method``, ``fraction`` or ``batch_size`` (the message names the argument).

    Examples:
      >>> import jax
      >>> texts = [f"the cat {w} on the mat" for w in ("sat", "lay", "sat", "slept", "sat", "ran")]
      >>> ci = distinct_n_interval(texts, n=2, key=jax.random.key(0), num_resamples=200)
      >>> round(float(ci.value), 4), ci.method, bool(ci.low <= ci.value <= ci.high)
      (0.3667, 'subsample', True)
    """
    _check_interval_args(key, num_resamples, confidence, method, fraction, batch_size)
    rows = ngram_rows(sequences, n, tokenizer=tokenizer)
    if rows.ids.shape[0] < 2:
        raise ValueError(f"sequences: need at least 2 texts to resample, got {rows.ids.shape[0]}")
    _check_subsample(method, fraction, rows.ids.shape[0], "sequences")
    return _distinct_interval(rows, key, int(num_resamples), float(confidence), method, float(fraction),
                              None if batch_size is None else int(batch_size))


def _self_bleu_runs(ids: jax.Array, lengths: jax.Array, max_n: int):
    """The resample-independent part of Self-BLEU: for every order, the runs of equal
    ``(n-gram, row)`` pairs sorted by n-gram, ``run_g, run_r, cnt : [max_n, W]`` (``W = B·T``;
    unused runs have ``run_g = W``, ``run_r = B``, ``cnt = 0``)."""
    B, T = ids.shape
    W = B * T
    grams = ngram_ids(ids, lengths, max_n)
    row = jnp.broadcast_to(jnp.arange(B, dtype=jnp.int32)[:, None], (B, T)).reshape(W)

    def one(g, v):
        g = jnp.where(v, g, W)
        g_s, r_s = jax.lax.sort((g, row), num_keys=2)
        start = jnp.concatenate([jnp.ones((1,), bool), (g_s[1:] != g_s[:-1]) | (r_s[1:] != r_s[:-1])])
        run = jnp.cumsum(start.astype(jnp.int32)) - 1
        cnt = jax.ops.segment_sum(jnp.ones((W,), jnp.int32), run, num_segments=W)
        run_g = jnp.full((W,), W, jnp.int32).at[run].set(g_s)
        run_r = jnp.full((W,), B, jnp.int32).at[run].set(r_s)
        ok = (cnt > 0) & (run_g < W)
        return jnp.where(ok, run_g, W), jnp.where(ok, run_r, B), jnp.where(ok, cnt, 0)

    return jax.vmap(one)(grams.ids.reshape(max_n, W), grams.valid.reshape(max_n, W))


def _clipped_from_runs(run_g, run_r, cnt, active: jax.Array) -> jax.Array:
    """``Σ_g min(c_h(g), max_{r ∈ active, r ≠ h} c_r(g))`` for every row ``h`` (``[B]``), from one
    order's runs (``run_g`` ascending) and the rows in the resample (``active [B]``)."""
    W, B = run_g.shape[0], active.shape[0]
    ok = jnp.concatenate([active, jnp.zeros((1,), bool)])[run_r] & (run_g < W)
    c = jnp.where(ok, cnt, 0)
    seg = partial(jax.ops.segment_max, segment_ids=run_g, num_segments=W + 1, indices_are_sorted=True)
    m1 = seg(c)
    m1r = m1[run_g]
    is_max = ok & (c == m1r)
    n_max = jax.ops.segment_sum(is_max.astype(jnp.int32), run_g, num_segments=W + 1, indices_are_sorted=True)
    m2 = jnp.where(n_max >= 2, m1, seg(jnp.where(ok & (c < m1r), c, 0)))
    ref = jnp.where(is_max, m2[run_g], m1r)
    clipped = jnp.where(ok, jnp.minimum(c, ref), 0)
    return jax.ops.segment_sum(clipped, run_r, num_segments=B + 1)[:B]


def _self_bleu_of_counts(runs, lengths, counts, order_weights) -> jax.Array:
    run_g, run_r, cnt = runs
    max_n = run_g.shape[0]
    active = counts > 0
    nums = jax.vmap(lambda g, r, c: _clipped_from_runs(g, r, c, active))(run_g, run_r, cnt)   # [max_n, B]
    lengths = lengths.astype(jnp.int32)
    orders = jnp.arange(1, max_n + 1, dtype=jnp.int32)
    dens = jnp.maximum(1, lengths[:, None] - orders[None, :] + 1)
    ref_len = _closest_other_length(jnp.where(active, lengths, 0), active)
    bleu = bleu_from_stats(nums.T, dens, lengths, ref_len, order_weights)
    c = counts.astype(bleu.dtype)
    return jnp.sum(c * bleu) / jnp.maximum(jnp.sum(c), 1)


def resampled_self_bleu(ids: jax.Array, lengths: jax.Array, counts: jax.Array, *, max_n: int = 4,
                        order_weights: Any = None) -> jax.Array:
    """Self-BLEU of a resampled set given by per-text counts, a text's copies never its references.

    With ``counts[h]`` the number of times text ``h`` was drawn (0: not drawn) and
    ``D = {r : counts[r] > 0}`` the distinct texts drawn,

        value = Σ_h counts[h] · BLEU(h; D \\ {h}) / Σ_h counts[h]

    (BLEU as :func:`~jaxmetrics.diversity.self_bleu_scores`: nltk's ``sentence_bleu`` with
    method1 smoothing). A text drawn twice is scored twice, but never against its own copy
    (that would be BLEU 1); BLEU's references enter through their maximum n-gram counts and the
    closest length, so the copies of a reference change nothing. With all counts 1 this is
    :func:`~jaxmetrics.diversity.self_bleu` (float32); with counts 0/1, Self-BLEU of the subset.
    Traceable at a fixed shape: a resample is a vector of counts, not gathered rows, and the
    n-gram ids and their per-text counts do not depend on it (under ``vmap`` over ``counts``
    they are computed once).

    Args:
      ids: ``[B, T]`` token ids (:func:`~jaxmetrics.diversity.encode_sequences`).
      lengths: ``[B]`` real lengths.
      counts: ``[B]`` non-negative integers (e.g. ``jnp.bincount(idx, length=B)`` of resampled
        indices), not all 0.
      max_n: largest n-gram order (static).
      order_weights: ``[max_n]`` weights of the orders ``1..max_n`` (default uniform ``1/max_n``).

    Returns:
      0-d float.

    Examples:
      >>> from jaxmetrics.diversity import encode_sequences
      >>> enc = encode_sequences(["a b c d", "a b c e", "x y z w"])
      >>> round(float(resampled_self_bleu(enc.ids, enc.lengths, jnp.array([1, 1, 1]), max_n=2)), 6)  # self_bleu
      0.471405
      >>> float(resampled_self_bleu(enc.ids, enc.lengths, jnp.array([2, 0, 1]), max_n=2))   # no reference shares
      0.0
    """
    ids, lengths = jnp.asarray(ids), jnp.asarray(lengths)
    w = jnp.full((max_n,), 1.0 / max_n) if order_weights is None else jnp.asarray(order_weights)
    return _self_bleu_of_counts(_self_bleu_runs(ids, lengths, max_n), lengths, jnp.asarray(counts), w)


@partial(jax.jit, static_argnames=("max_n", "num_resamples", "confidence", "method", "fraction", "batch_size"))
def _self_bleu_interval(ids, lengths, order_weights, key, max_n, num_resamples, confidence, method, fraction,
                        batch_size) -> Interval:
    B = ids.shape[0]
    runs = _self_bleu_runs(ids, lengths, max_n)     # once, outside the resamples

    def stat(idx):
        return _self_bleu_of_counts(runs, lengths, jnp.bincount(idx, length=B), order_weights)
    return _resample(stat, jnp.arange(B, dtype=jnp.int32), key, num_resamples, confidence, method, fraction,
                     batch_size)


def self_bleu_interval(generations: Sequence, n: int = 4, *, key: jax.Array, num_resamples: int = 1000,
                       confidence: float = 0.95, method: str = "subsample", fraction: float = 0.75,
                       weights: Any = None, tokenizer: Callable | None = None,
                       batch_size: int | None = None) -> Interval:
    """Self-BLEU of a set of generations with a confidence interval, the generations resampled.

    ``value`` is :func:`~jaxmetrics.diversity.self_bleu` of the generations as given (every
    generation's BLEU against all the others, averaged; float32 here). What is resampled is the
    *set*: a resample is a set of generations, and each of its texts is scored against the
    resample's other texts — the references change with the resample, as they would with another
    set of generations. So the interval covers Self-BLEU's **expected value at this number of
    generations** ``B`` (Self-BLEU grows with the number of references). With
    ``method='subsample'`` (default) the resamples are subsets of ``round(fraction · B)``
    generations drawn without replacement (:func:`jaxmetrics.confidence.subsample_interval`); with ``'bca'`` / ``'percentile'`` they
    are bootstrap resamples where a drawn text's copies are excluded from its references
    (:func:`resampled_self_bleu`; with copies as references a duplicate would score BLEU 1),
    which leaves a text about 63 % of the distinct references and biases the resamples low —
    measured coverage of both in ``docs/diversity.md``.

    Not the same thing: ``confidence_interval(jnp.mean, self_bleu_scores(generations))`` treats
    the per-generation scores, each against the full fixed set, as independent items; it covers
    the mean BLEU of new generations against *these* references and leaves out the variation of
    the references, so it is too narrow for Self-BLEU at ``B`` (docs/diversity.md).

    Args:
      generations: ``B >= 2`` texts or token sequences (as :func:`~jaxmetrics.diversity.self_bleu`).
      n: n-gram order (uniform weights over ``1..n``).
      key: a ``jax.random`` key (required); the same key gives the same interval.
      num_resamples: number of resamples, at least ``(1 + confidence) / (1 - confidence)`` (39 at 0.95; fewer make the end points the extreme resamples: :func:`jaxmetrics._validation.check_resampling`).
      confidence: nominal coverage in ``[0.5, 1)``.
      method: ``'subsample'`` (default), ``'bca'`` or ``'percentile'``.
      fraction: subsample size as a fraction of ``B`` (``'subsample'`` only), in ``(0, 1)``.
      weights: optional explicit weights ``[N]`` of the orders ``1..N`` instead of uniform.
      tokenizer: ``str -> list`` used for texts.
      batch_size: resamples per vmapped chunk (``None``: bounded by memory).

    Returns:
      :class:`~jaxmetrics.confidence.Interval` (0-d arrays).

    Raises:
      ValueError: fewer than 2 generations, a bad ``n``, ``weights``, ``num_resamples``,
        ``confidence``, ``method``, ``fraction`` or ``batch_size`` (naming the argument).

    Examples:
      >>> import jax
      >>> gens = ["a b c d", "a b c e", "x y z w", "a b x y", "c d e f", "a c d e"]
      >>> ci = self_bleu_interval(gens, n=2, key=jax.random.key(0), num_resamples=200)
      >>> round(float(ci.value), 4), bool(ci.low <= ci.value <= ci.high)   # self_bleu(gens, n=2)
      (0.7608, True)
    """
    n = check_int(n, "n", minimum=1)
    w = _weights_for(n, weights)
    _check_interval_args(key, num_resamples, confidence, method, fraction, batch_size)
    enc = encode_sequences(generations, tokenizer=tokenizer, allow_empty=True, name="generations")
    B = enc.ids.shape[0]
    if B < 2:
        raise ValueError(f"generations: need at least 2 generations, got {B}")
    _check_subsample(method, fraction, B, "generations")
    return _self_bleu_interval(jnp.asarray(enc.ids), jnp.asarray(enc.lengths), jnp.asarray(w, accumulator_dtype()),
                               key, len(w), int(num_resamples), float(confidence), method, float(fraction),
                               None if batch_size is None else int(batch_size))


#: the corpus-level metrics of a set of texts that have an interval here, by name: ``(value function,
#: interval function)``, both called as ``f(texts, n, ...)`` (``jaxmetrics diversity --metrics``)
CORPUS_METRICS = {"distinct-n": (distinct_n, distinct_n_interval), "self-bleu": (self_bleu, self_bleu_interval)}
