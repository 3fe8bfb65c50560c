"""Confidence intervals of the Mark-Evaluate scores, the embeddings of both sets resampled.

A Mark-Evaluate score is a function of two *sets* of embeddings through their k-NN balls, and
it depends on the set sizes (the balls shrink as a set grows). What the interval covers is the
score's **expected value at these sizes** ``n`` (references) and ``m`` (candidates): its mean
over pairs of sets of ``n`` and ``m`` embeddings drawn from the two populations.

Resampling scheme (``method=``):

* ``'subsample'`` (default): each side is subsampled without replacement, subsets of
  ``round(fraction · n)`` and ``round(fraction · m)`` rows, independently
  (:func:`jaxmetrics.confidence.subsample_interval`); a subset has no repeated row, so every
  ball is a real k-NN ball of distinct points, and the spread of the subset scores, centred on
  their mean and rescaled by ``sqrt(f / (1 - f))``, stands for the spread at ``n, m``.
* ``'bca'`` / ``'percentile'``: the bootstrap (rows drawn with replacement, each side on its
  own). About 37 % of a resample's rows are copies. With the default reading
  (``literal=False``) a copy is the same individual caught again, so a resample has about 63 %
  of ``n + m`` individuals while the true population stays the row count: the estimators see a
  population that looks far too small. With ``literal=True`` a copy is a neighbour at distance
  0, so balls collapse to radius 0 around duplicated points. Either way the resampled scores
  are not draws of the score at ``n, m``; kept to show it (measured coverage in
  ``docs/mark_evaluate.md``, "Confidence intervals"), not recommended.

One compiled computation per shape and setting: every resample's statistics (both k-NN passes,
the cross memberships, the neighbourhood catches) and score are vmapped, in chunks that bound
the memory of the distance tiles.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from jaxmetrics._validation import check_choice, check_int, check_key, check_open_unit, check_resampling
from jaxmetrics.confidence import Interval, confidence_interval, subsample_interval
from jaxmetrics.mark_evaluate.checks import check_feature_pair, check_occasions
from jaxmetrics.mark_evaluate.scores import _score
from jaxmetrics.mark_evaluate.stats import _stats, _warn_degenerate

__all__ = ["ESTIMATORS", "INTERVAL_METHODS", "mark_evaluate_interval"]

#: the scores an interval can be asked for, in the order of ``estimator="all"``
#: (the fields of :class:`~jaxmetrics.mark_evaluate.MarkEvaluateScores`)
ESTIMATORS = ("petersen", "schnabel_quality", "schnabel_diversity", "capture")
#: the resampling schemes (module docstring)
INTERVAL_METHODS = ("subsample", "bca", "percentile")
#: distance-tile elements per vmapped chunk when ``batch_size`` is not given
_CHUNK_TILE_ELEMENTS = 1 << 25


def _statistic(estimator: str, k: int, literal: bool, occasions: str, block_size: int | None):
    """``(references [n, d], candidates [m, d]) -> score``: the score of :func:`mark_evaluate_scores`
    (``[4]`` in :data:`ESTIMATORS` order for ``'all'``), traceable."""
    def stat(ref, cand):
        stats = _stats(ref, cand, k, block_size, not literal)
        if estimator == "petersen":
            return _score(stats, "petersen")
        if estimator == "capture":
            return _score(stats, "capture", occasions, literal)
        if estimator in ("schnabel_quality", "schnabel_diversity"):
            s = _score(stats, "schnabel", literal=literal)
            return s.quality if estimator == "schnabel_quality" else s.diversity
        s = _score(stats, "all", occasions, literal)
        return jnp.stack([s.petersen, s.schnabel_quality, s.schnabel_diversity, s.capture])
    return stat


@partial(jax.jit, static_argnames=("estimator", "k", "literal", "occasions", "num_resamples", "confidence",
                                   "method", "fraction", "batch_size", "block_size"))
def _interval(ref, cand, key, estimator, k, literal, occasions, num_resamples, confidence, method, fraction,
              batch_size, block_size) -> Interval:
    stat = _statistic(estimator, k, literal, occasions, block_size)
    if method == "subsample":
        return subsample_interval(stat, ref, cand, key=key, num_resamples=num_resamples, confidence=confidence,
                                  fraction=fraction, batch_size=batch_size)
    return confidence_interval(stat, ref, cand, key=key, num_resamples=num_resamples, confidence=confidence,
                               method=method, batch_size=batch_size)


def mark_evaluate_interval(*, references: Any, candidates: Any, key: jax.Array, estimator: str = "petersen",
                           k: int = 3, num_resamples: int = 1000, confidence: float = 0.95,
                           method: str = "subsample", fraction: float = 0.75, literal: bool = False,
                           occasions: str = "samples", batch_size: int | None = None,
                           block_size: int | None = None) -> Interval:
    """A Mark-Evaluate score with a confidence interval, both sets of embeddings resampled.

    ``value`` is the score of :func:`~jaxmetrics.mark_evaluate.mark_evaluate_scores` on the
    embeddings as given (``1 - min(1, |P_hat - P| / P)`` of the chosen estimator, ``P = n + m``).
    The interval covers the score's **expected value at these set sizes** (the mean over pairs
    of sets of ``n`` references and ``m`` candidates from the same two populations; the score
    changes with the sizes). With ``method='subsample'`` (default) each of ``num_resamples``
    resamples draws ``round(fraction · n)`` references and ``round(fraction · m)`` candidates
    without replacement (:func:`jaxmetrics.confidence.subsample_interval`): no resample holds a
    repeated row, so no ball holds a zero-distance copy. ``'bca'`` / ``'percentile'`` are the
    bootstrap, whose copies distort every estimator (module docstring; measured coverage in
    ``docs/mark_evaluate.md``). All resamples run as one vmapped computation.

    Args:
      references: ``[n, d]`` reference embeddings S_r.
      candidates: ``[m, d]`` candidate embeddings S_e.
      key: a ``jax.random`` key (required); the same key gives the same interval.
      estimator: ``'petersen'`` (default), ``'schnabel_quality'``, ``'schnabel_diversity'``,
        ``'capture'``, or ``'all'`` for the four as a ``[4]`` vector in that order.
      k: neighbourhood size; every subsample must keep more than ``k`` rows per side.
      num_resamples: number of resamples, at least ``(1 + confidence) / (1 - confidence)`` (39 at 0.95; fewer make the end points the extreme resamples: :func:`jaxmetrics._validation.check_resampling`).
      confidence: nominal coverage in ``[0.5, 1)``.
      method: ``'subsample'`` (default), ``'bca'`` or ``'percentile'``.
      fraction: subsample size as a fraction of each set (``'subsample'`` only), in ``(0, 1)``.
      literal, occasions: the estimators' reading and ME-CAPTURE's set-up, as
        :func:`~jaxmetrics.mark_evaluate.mark_evaluate_scores`.
      batch_size: resamples per vmapped chunk (``None``: as many as keep the chunk's distance
        tiles near 32M elements).
      block_size: rows per distance block inside one resample.

    Returns:
      :class:`~jaxmetrics.confidence.Interval` (0-d arrays, or ``[4]`` for ``'all'``).

    Raises:
      ValueError / TypeError: bad embeddings (as :func:`~jaxmetrics.mark_evaluate.mark_evaluate_scores`),
        a bad ``estimator``, ``k``, ``num_resamples``, ``confidence``, ``method``, ``fraction``
        (a subsample with ``k`` rows or fewer, or with none left out), ``occasions`` or
        ``batch_size``; the message names the argument.

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mark_evaluate import mark_evaluate_scores
      >>> rng = np.random.default_rng(0)
      >>> ref, cand = rng.normal(size=(60, 4)), rng.normal(size=(60, 4)) + 0.3
      >>> ci = mark_evaluate_interval(references=ref, candidates=cand, key=jax.random.key(0), num_resamples=100)
      >>> v = mark_evaluate_scores(references=ref, candidates=cand).petersen
      >>> bool(ci.value == v), ci.method, bool(ci.low <= ci.value <= ci.high)
      (True, 'subsample', True)
    """
    check_key(key)
    check_choice(estimator, "estimator", ESTIMATORS + ("all",))
    B, conf = check_resampling(num_resamples, confidence)
    check_choice(method, "method", INTERVAL_METHODS)
    frac = check_open_unit(fraction, "fraction")
    check_occasions(occasions)
    pair = check_feature_pair(references=references, candidates=candidates, k=k)
    k = int(k)
    _warn_degenerate(references, candidates, k, bool(literal))
    ref, cand = jnp.asarray(pair.references), jnp.asarray(pair.candidates)
    sizes = (ref.shape[0], cand.shape[0])
    subs = tuple(int(round(frac * n)) for n in sizes) if method == "subsample" else sizes
    if method == "subsample":
        for n, s, name in zip(sizes, subs, ("references", "candidates")):
            if not k < s <= n - 1:
                raise ValueError(f"fraction: {frac} of the {n} {name} gives subsets of {s} rows; they need more "
                                 f"than k={k} rows and must leave out at least 1")
    if batch_size is None:
        batch_size = max(1, min(B, _CHUNK_TILE_ELEMENTS // max(1, sum(subs) ** 2)))
    else:
        batch_size = check_int(batch_size, "batch_size", minimum=1)
    return _interval(ref, cand, key, estimator, k, bool(literal), occasions, B, conf, method, frac, int(batch_size),
                     block_size)
