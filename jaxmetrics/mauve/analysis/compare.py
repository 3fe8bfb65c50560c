"""Several systems against one human text: MAUVE under one shared quantizer, with intervals and
paired significance (:func:`compare_mauve`).

With a codebook per pair (mauve-text, :func:`~jaxmetrics.mauve.compute_mauve`) the scores of two
systems come from different quantizations and are not comparable to the precision their gap
needs. Here one quantizer per seed is fitted on the human text and every system stacked,
``[P; Q_1; ...; Q_S]`` (:func:`~jaxmetrics.mauve.fit_quantizer`), and each system's MAUVE is
computed from its histogram and P's under that quantizer, averaged over the seeds.

The spread comes from resampling the rows with the quantizers held fixed: each of ``B`` bootstrap
replicates draws P's rows once (shared by all systems: the comparison is paired on the human
side) and the systems' rows with one key (the systems' rows are not paired, but systems of one
size take the same row indices, so a system given twice gets one interval and a difference of
exactly 0), recounts the bins, and rescores every system. The
quantizer is not refitted per replicate (that would cost ``B`` k-means fits); the k-means spread
is reduced instead by averaging over ``seeds`` (:func:`~jaxmetrics.mauve.compute_mauve_seeds`
reports it). MAUVE of resampled rows is biased low (multinomial noise makes two histograms
differ more), so the intervals use the centred deviations ``M* - mean(M*)``:

* each system's interval is ``[M - q_{1-a/2}(dev), M - q_{a/2}(dev)]`` clipped to ``[0, 1]``; it
  covers the value MAUVE takes at these sample sizes under this quantizer (the estimator's mean,
  as for :func:`~jaxmetrics.mauve.compute_mauve_seeds`), not the infinite-sample value;
* each difference ``D_ij = M_i - M_j`` gets the same centred interval of ``D*_ij``.

The p-value of "systems ``i`` and ``j`` are the same distribution":

* ``method='randomization'`` (default; approximate randomization): ``B`` draws pool the two
  systems' rows, split them at random into sets of their sizes, and rescore both against P under
  the same quantizers; ``p = (1 + #{|D^r| >= |D_ij|}) / (B + 1)``. The quantizer is fitted on all
  rows symmetrically, so under the null the split is exchangeable and the test holds its level
  (measured on MiniLM features of the bundled text at n = 500 per set: p < 0.05 in 8 of 100
  draws of two human-text systems, within the binomial range of a 5 % level; a system with 30 %
  of its rows looping found in 98 of 100);
* ``method='bootstrap'``: ``p = (1 + #{|D*_ij - mean D*_ij| >= |D_ij|}) / (B + 1)`` from the
  replicates above; conservative here (0 of 20 null draws, 75 % power in the same check).

With more than two systems the pairwise p-values are adjusted for the ``S (S - 1) / 2`` tests by
Holm's step-down procedure (:func:`jaxmetrics.confidence.holm_adjust`); the raw ones are kept in
``p_value``, the adjusted ones in ``adjusted_p_value`` decide ``significant``.

Only the histogram pipeline is defined here: the density-ratio estimators (``estimator='knn'``,
``'classifier'``, ``'gaussian'``) have no bins to resample and are refused by name.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics.confidence import (SystemComparison, bootstrap_indices, holm_adjust, pairwise_correction,
                                   randomization_draws, resampling_p_values, resampling_signature)
from jaxmetrics.mauve.pipeline.codebook import fit_quantizer
from jaxmetrics.mauve.pipeline.compute import _make_quantizer
from jaxmetrics.mauve.engine import mauve_scores, split_counts
from jaxmetrics.mauve.frontier.estimate import require_quantized
from jaxmetrics.mauve.frontier.settings import FrontierSettings
from jaxmetrics.mauve.quantize.quantizers import Quantizer, _quantizer_settings
from jaxmetrics.results import static_field

__all__ = ["MauveComparison", "codebook_signature_fields", "compare_mauve"]

#: bootstrap replicates scored per call (bounds the float64 curves held at once)
SCORE_CHUNK = 250


class MauveComparison(SystemComparison):
    """MAUVE of several systems against one human text, comparable, with intervals
    (:func:`compare_mauve`). The fields of :class:`jaxmetrics.confidence.SystemComparison`
    (``scores``, ``difference``, ``low`` / ``high`` of the differences, ``p_value``, ``adjusted_p_value``
    and ``correction`` (Holm's with more than two systems), ``names``, ``method``, ``confidence``,
    ``num_resamples``, ``signature``; ``.significant(level)``), and:

    Attributes:
      score_low, score_high: ``[S]`` each system's reflected bootstrap interval.
      seeds: the quantizers' seeds (static).
      num_buckets: ``k`` (static).
    """

    score_low: jax.Array
    score_high: jax.Array
    seeds: tuple[int, ...] = static_field()
    num_buckets: int = static_field()


def codebook_signature_fields(quantizer: Any, num_buckets: Any, k: int) -> dict[str, Any]:
    """The signature entries of the quantizer that :func:`~jaxmetrics.mauve.fit_quantizer` fitted
    with ``k`` bins and its default k-means settings (``compare_mauve``, ``mauve_attribution``):
    ``num_buckets`` as given (an instance's own ``num_bins`` when it has one), ``quantizer`` and
    its settings."""
    own = getattr(quantizer, "num_bins", None)
    given = own if isinstance(own, int) and not isinstance(own, bool) else num_buckets
    return dict(num_buckets=given, **_quantizer_settings(_make_quantizer(quantizer, k)))


@jax.jit
def _resampled_counts(labels: jax.Array, idx: jax.Array, num_bins_like: jax.Array) -> jax.Array:
    """``[B, T, K]`` bin counts of ``labels [T, n]`` at the resampled rows ``idx [B, n]``."""
    k = num_bins_like.shape[0]

    def one(i):
        return jax.vmap(lambda lab: jnp.zeros(k, jnp.int32).at[lab[i]].add(1))(labels)

    return jax.lax.map(one, idx, batch_size=64)


@jax.jit
def _split_counts_permuted(labels: jax.Array, perms: jax.Array, first: jax.Array, num_bins_like: jax.Array):
    """Counts ``[B, 2, T, K]`` of the first ``first`` rows and of the rest of ``labels [T, n]`` after
    each draw's permutation ``perms [B, n]`` of the rows (the same for every seed's labels)."""
    k, n = num_bins_like.shape[0], labels.shape[1]

    def one(perm):
        in_first = (jnp.arange(n) < first)[None, :].astype(jnp.int32)
        lab = labels[:, perm]
        count = lambda w: jax.vmap(lambda l, ww: jnp.zeros(k, jnp.int32).at[l].add(ww))(lab, jnp.broadcast_to(w, lab.shape))
        return jnp.stack([count(in_first), count(1 - in_first)])

    return jax.lax.map(one, perms, batch_size=64)


def compare_mauve(
    *,
    references: Any,
    systems: Any,
    key: jax.Array,
    seeds: Sequence[int] = (25,),
    num_resamples: int = 1000,
    method: str = "randomization",
    confidence: float = 0.95,
    num_buckets: int | str = "auto",
    quantizer: str | Quantizer = "kmeans",
    frontier: FrontierSettings | None = None,
    scaling: float | None = None,
    num_points: int | None = None,
    scoring: str | None = None,
    estimator: Any = "quantized",
) -> MauveComparison:
    """MAUVE of every system against the same human text under one shared quantizer, with each
    score's interval and every difference's interval and p-value (module docstring).

    Args:
      references: keyword-only, ``[n_p, d]`` human-text features (P).
      systems: keyword-only, ``{name: candidates [n_s, d]}`` of at least 2 systems (the names label the
        leaderboard); their sizes may differ (``'auto'`` buckets use the smallest set).
      key: a ``jax.random`` key for the resampling (required).
      seeds: k-means seeds; one shared quantizer each, scores averaged over them.
      num_resamples: bootstrap replicates and randomization draws ``B``, at least ``(1 + confidence) / (1 - confidence)`` (39 at 0.95; fewer make the end points the extreme resamples: :func:`jaxmetrics._validation.check_resampling`).
      method: ``'randomization'`` (default) or ``'bootstrap'``: how the p-values are computed.
      confidence: nominal coverage of the intervals, in ``[0.5, 1)``.
      num_buckets: as :func:`~jaxmetrics.mauve.compute_mauve`.
      frontier: a :class:`~jaxmetrics.mauve.FrontierSettings` (``divergence='kl'`` only), or its
        ``scaling`` (c), ``num_points`` (m) and ``scoring`` as keywords.
      quantizer: ``'kmeans'`` (mauve-text's settings), another registered name, or a
        :class:`~jaxmetrics.mauve.quantize.quantizers.Quantizer` instance with its own settings (its
        ``num_bins`` replaces ``num_buckets``).
      estimator: ``'quantized'`` only (the histogram pipeline above); a density-ratio estimator
        (``'knn'``, ``'classifier'``, ``'gaussian'``, an instance, or one given as ``quantizer``) is
        refused with a ``ValueError`` naming it, before any work.

    Returns:
      :class:`MauveComparison`. ``scores[s]`` equals
      ``mauve_shared_codebook([(P, Q_s)], fitted=...)`` with that seed's shared quantizer
      (averaged over the seeds). With more than two systems ``adjusted_p_value`` holds the
      Holm-adjusted p-values (``correction='holm'``), which decide ``significant``. Its ``signature``
      (``metric:compare-mauve``) names the ``key``, ``method``, ``num_resamples``, ``confidence``,
      ``correction``, ``seeds``, ``num_buckets`` as given, the quantizer and its settings and the
      frontier: two calls with one signature give the same numbers.

    Examples:
      >>> import jax, numpy as np
      >>> rng = np.random.default_rng(0)
      >>> p = rng.normal(size=(300, 8)).astype("float32")
      >>> systems = {"close": rng.normal(size=(300, 8)).astype("float32"),
      ...            "far": (rng.normal(size=(300, 8)) + 0.8).astype("float32")}
      >>> cmp = compare_mauve(references=p, systems=systems, key=jax.random.key(0), num_resamples=200)
      >>> cmp.names, bool(cmp.scores[0] > cmp.scores[1])
      (('close', 'far'), True)
      >>> [(d.better, d.worse) for d in cmp.significant(0.05)]
      [('close', 'far')]
    """
    if not isinstance(systems, Mapping):
        raise TypeError(f"systems: expected a mapping {{name: candidates}}, got {type(systems).__name__}")
    names, datas = tuple(map(str, systems)), list(systems.values())
    if len(datas) < 2:
        raise ValueError(f"systems: need at least 2 systems to compare, got {len(datas)}")
    V.check_key(key)
    require_quantized(estimator, quantizer, where="compare_mauve")
    B, conf = V.check_resampling(num_resamples, confidence)
    frontier = FrontierSettings.resolve(frontier, scaling=scaling, num_points=num_points, scoring=scoring)
    if frontier.divergence != "kl":
        raise ValueError(f"frontier: compare_mauve scores KL MAUVE, not divergence={frontier.divergence!r}")
    V.check_choice(method, "method", ("randomization", "bootstrap"))
    seeds = V.check_seeds(seeds)
    p = V.check_features(references, "references")
    qs = [V.check_features(q, f"systems[{n!r}]", dim=p.shape[1]) for n, q in zip(names, datas)]
    sets = [p] + qs
    sizes = [x.shape[0] for x in sets]
    stacked = np.concatenate(sets, axis=0)
    labels, k = [], None
    for s in seeds:
        fitted = fit_quantizer(sets, num_buckets=num_buckets, quantizer=quantizer, seed=s)
        tl = getattr(fitted, "train_labels", None)
        labels.append(np.asarray(tl if tl is not None and tl.shape[0] == stacked.shape[0] else fitted.assign(stacked)))
        k = int(fitted.num_bins)
    S, T = len(qs), len(seeds)
    offsets = np.cumsum([0] + sizes)
    per_set = [np.stack([lab[offsets[i]:offsets[i + 1]] for lab in labels]) for i in range(len(sets))]  # [T, n_i]

    def scores_of(p_counts, q_counts):          # [..., T, k] each, P broadcast over systems -> [..., S]
        sc = mauve_scores(p_counts, q_counts, **frontier._kwargs())
        return np.asarray(sc.mauve, np.float64).mean(axis=-1)

    counts = np.stack([np.stack([split_counts(lab, sizes, k)[i] for lab in labels]) for i in range(len(sets))])
    point = scores_of(np.broadcast_to(counts[:1], (S, T, k)), counts[1:])                       # [S]
    ref_key, sys_key = jax.random.split(key)
    keys = [ref_key] + [sys_key] * S         # the systems share one key: equal sizes, equal row draws
    like = jnp.zeros(k)
    boot_counts = [np.asarray(_resampled_counts(jnp.asarray(lab), idx, like))
                   for lab, idx in zip(per_set, bootstrap_indices(keys, B, sizes))]             # each [B, T, k]
    bp = np.broadcast_to(boot_counts[0][:, None], (B, S, T, k))
    bq = np.stack(boot_counts[1:], axis=1)                                                       # [B, S, T, k]
    boot = np.concatenate([scores_of(bp[i:i + SCORE_CHUNK], bq[i:i + SCORE_CHUNK])
                           for i in range(0, B, SCORE_CHUNK)])                                   # [B, S]
    alpha = (1.0 - conf) / 2.0
    dev = boot - boot.mean(axis=0)                                   # the resampling noise, bias removed
    score_low = np.clip(point - np.quantile(dev, 1.0 - alpha, axis=0), 0.0, 1.0)
    score_high = np.clip(point - np.quantile(dev, alpha, axis=0), 0.0, 1.0)
    diff = point[:, None] - point[None, :]
    bdiff = boot[:, :, None] - boot[:, None, :]
    bdev = bdiff - bdiff.mean(axis=0)
    low, high = diff - np.quantile(bdev, 1.0 - alpha, axis=0), diff - np.quantile(bdev, alpha, axis=0)
    if method == "bootstrap":
        null = bdev
    else:
        null = np.zeros((B, S, S))
        pkeys = jax.random.split(jax.random.fold_in(key, 1), S * S)
        for i in range(S):
            for j in range(i + 1, S):
                pooled = jnp.asarray(np.concatenate([per_set[1 + i], per_set[1 + j]], axis=1))
                draws = randomization_draws(pkeys[i * S + j], B, pooled.shape[1], paired=False)
                perm = np.asarray(_split_counts_permuted(pooled, draws, jnp.asarray(sizes[1 + i]), like))  # [B, 2, T, k]
                pc = np.broadcast_to(counts[0], (B, 2, T, k))
                m = np.concatenate([scores_of(pc[c:c + SCORE_CHUNK], perm[c:c + SCORE_CHUNK])
                                    for c in range(0, B, SCORE_CHUNK)])                              # [B, 2]
                null[:, i, j] = null[:, j, i] = m[:, 0] - m[:, 1]
    pval = resampling_p_values(diff, null, tolerance=1e-12)
    adjusted, correction = holm_adjust(pval), pairwise_correction(S)
    sig = resampling_signature("compare-mauve", key=key, method=method, num_resamples=B, confidence=conf,
                               correction=correction, seeds=seeds, **codebook_signature_fields(quantizer, num_buckets, k),
                               **frontier.signature_fields())
    f32 = lambda a: jnp.asarray(np.asarray(a, np.float32))
    return MauveComparison(scores=f32(point), difference=f32(diff), low=f32(low), high=f32(high), p_value=f32(pval),
                           adjusted_p_value=f32(adjusted), names=names, method=method, confidence=conf,
                           num_resamples=B, correction=correction, score_low=f32(score_low),
                           score_high=f32(score_high), seeds=seeds, num_buckets=k, signature=sig)
