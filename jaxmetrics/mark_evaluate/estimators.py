"""Mark-Evaluate population estimators (Mordido & Meinel, COLING 2020).

S = reference set (``n`` rows), S' = evaluation / candidate set (``m`` rows), true population
``P = n + m`` (the row counts, known a priori). ``r_k`` and ``f`` are those of
:mod:`jaxmetrics.mark_evaluate.hyperspheres`; ``NN_k(x, X)`` is ``x`` and its k nearest
neighbours in its own set (``k + 1`` samples), and ``f(y, NN_k(x, X)) = 1`` iff ``y`` lies in
the sphere of at least one sample of that neighbourhood. Every score is

    ME = 1 - A(P, P_hat),   A = min(1, |P_hat - P| / P),                 in [0, 1], 1 = best

and an estimator whose denominator (recaptures) is 0 gives ME = 0.

Two readings, selected by ``literal`` (see docs/mark_evaluate.md for measured differences):

``literal=True`` -- the formulas of the paper's Section 3 as printed:

* ME-Petersen: ``M = n + sum_{s'} f(s', S)``, ``C = m + sum_s f(s, S')``,
  ``R = sum_{s'} f(s', S) + sum_s f(s, S')``, ``P_hat = M C / R``. For ``n == m`` with IMPAR
  precision p and recall r, ``ME = 1 - min(1, (1-p)(1-r) / (2(p+r)))``.
* ME-Schnabel(S, S'): visit 1 marks ``M(1) = S + {s' : f(s', S) = 1}``; visit ``i + 1`` (one
  per ``s'_i``, input order) catches ``NN_k(s'_i, S')`` and the ``g_i = sum_s f(s, NN_k(s'_i, S'))``
  samples of S in the spheres of that neighbourhood, so ``C_i = (k + 1) + g_i``,
  ``R_i = g_i + |M(i) ∩ NN_k(s'_i, S')|``, ``M_i = |M(i)|``; then ``NN_k(s'_i, S')`` is marked
  (``C_T = sum_i C_i``, ``R_T = sum_i R_i`` are the paper's totals).
  ``P_hat = sum_i C_i M_i / sum_i R_i``. Quality = ME-Schnabel(S_r, S_e), diversity =
  ME-Schnabel(S_e, S_r).
* ME-CAPTURE (model M0 of program CAPTURE, Otis et al. 1978) over ``T = |S ∪ S'| = P``
  occasions, one per sample x: the occasion of x catches ``NN_k(x, own set)`` and the samples
  of the other set in its spheres, so ``C_total = P (k + 1) + sum_s g_s + sum_{s'} g_{s'}``
  and every sample is caught (``M_T = P``). With ``n_dot = C_total``, ``D = M_T``, ``t = T``:

      ln L(N) = lnΓ(N+1) - lnΓ(N-D+1) + n_dot ln n_dot + (tN - n_dot) ln(tN - n_dot) - tN ln(tN)

  maximised over the integers ``N in [D, 2P]`` (above 2P the score is 0 anyway).

Measured defects of the literal reading: the own-set captures (``k + 1`` per visit or
occasion) do not depend on how S and S' relate, so sets with nothing in common score about
0.85 (Schnabel) and 0.98 (CAPTURE); and rows repeated many times are counted as many
individuals, so candidates collapsed onto one point inside the references score 1 (Petersen,
Schnabel quality) and about 0.99 (CAPTURE).

``literal=False`` (default) -- three documented corrections, nothing else changed:

1. *Individuals are distinct points.* A row equal to an earlier row of its own set (distance
   0) is the same individual caught again: the estimators run on the distinct rows of each
   set (their spheres, neighbourhoods, counts), and the true population stays the row count
   ``P = n + m``. Sets without duplicates are unaffected (Petersen's closed form holds); a set
   collapsed onto a few points is estimated as a small population and scores low. As ``k < n``
   is required of the rows, every score needs more than k individuals per set: a set with at
   most k distinct rows has no k-NN sphere and every score is 0 (a single marked individual
   made Schnabel diversity erratic, anywhere in [0.03, 1]).
2. *Schnabel: only the first marking step marks, and visit i catches its own sample* (and,
   when ``s'_i`` is marked, the reference whose sphere marked it): ``M_i = M_1``,
   ``C_i = 1 + u_i``, ``R_i = 2 u_i`` with ``u_i = f(s'_i, S)``, so with ``U = sum_i u_i``
   ``P_hat = (n + U)(m + U) / (2U)``: exactly P when every candidate is marked, above P and
   growing as U falls (quality is monotone in the share of candidates inside the references'
   spheres; diversity, roles swapped, in the share of references inside the candidates').
   Own-set marks carry no information about the other set (sets with nothing in common
   scored about 0.85), and neighbourhood catches made the estimate fall *below* P for healthy
   sets and cross it again as quality fell (quality rose at 100 % words swapped).
3. *CAPTURE: an occasion catches its own sample and the other set's samples in the spheres of
   its neighbourhood* (not the k own-set neighbours), ``n_dot = P + sum_s g_s + sum_{s'} g_{s'}``:
   far-apart sets catch every sample once, no recaptures, score 0. M0 still gives exactly
   ``P_hat = P`` only when ``n_dot / P > ln(P + 1)`` (identical sets: about ``k + 2`` plus the
   other neighbours' captures per sample), slightly below 1 above that size.

``occasions="visits"`` is a further variant of ME-CAPTURE (not in the paper): the two Petersen
visits as the occasions (``t = 2``, ``n_dot = M + C``, ``D = M + C - R``).
"""
from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import gammaln, xlogy

from jaxmetrics._ops import accumulator_dtype
from jaxmetrics._validation import check_choice, check_features, check_int
from jaxmetrics.mark_evaluate.hyperspheres import (
    CrossMembership,
    Hyperspheres,
    _knn,
    _spheres,
    cross_membership,
    neighborhood_counts,
)
from jaxmetrics.results import Result
from jaxmetrics.sharding import host_readable

__all__ = [
    "MarkEvaluateStats",
    "MarkEvaluateScores",
    "SchnabelScores",
    "PetersenEstimate",
    "SchnabelEstimate",
    "CaptureEstimate",
    "mark_evaluate_stats",
    "accuracy_score",
    "petersen_estimate",
    "schnabel_estimate",
    "capture_estimate",
    "m0_estimate",
    "me_petersen",
    "me_schnabel",
    "me_capture",
    "mark_evaluate_scores",
]

_OCCASIONS = ("samples", "visits")


# --------------------------------------------------------------------------- results
class MarkEvaluateStats(Result):
    """Everything the estimators need, from three distance passes (:func:`mark_evaluate_stats`).

    Attributes:
      references: :class:`~jaxmetrics.mark_evaluate.Hyperspheres` of S, the references
        (``radii_sq [n]``, ``neighbors [n, k]``).
      candidates: :class:`~jaxmetrics.mark_evaluate.Hyperspheres` of S', the candidates
        (``radii_sq [m]``, ``neighbors [m, k]``).
      cross: :class:`~jaxmetrics.mark_evaluate.CrossMembership` with ``a = S``, ``b = S'``.
      references_mask: ``[n]`` bool, the rows of S that are individuals (all rows with
        ``literal=True``; the first occurrence of each distinct row otherwise).
      candidates_mask: ``[m]`` bool, the same for S'.
      references_catches: ``[n]`` int32, ``g_s = sum_{s'} f(s', NN_k(s, S))``.
      candidates_catches: ``[m]`` int32, ``g_{s'} = sum_s f(s, NN_k(s', S'))``.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4) + 0.01, k=1)
      >>> s.references
      Hyperspheres(radii_sq=f32[4], neighbors=i32[4,1])
    """

    references: Hyperspheres
    candidates: Hyperspheres
    cross: CrossMembership
    references_mask: jax.Array
    candidates_mask: jax.Array
    references_catches: jax.Array
    candidates_catches: jax.Array

    def swap(self) -> "MarkEvaluateStats":
        """The same statistics with the roles of S and S' exchanged."""
        c = self.cross
        return MarkEvaluateStats(
            references=self.candidates,
            candidates=self.references,
            cross=CrossMembership(b_in_a=c.a_in_b, a_in_b=c.b_in_a, a_counts=c.b_counts,
                                  b_counts=c.a_counts),
            references_mask=self.candidates_mask, candidates_mask=self.references_mask,
            references_catches=self.candidates_catches, candidates_catches=self.references_catches,
        )


class MarkEvaluateScores(Result):
    """The four Mark-Evaluate scores (:func:`mark_evaluate_scores`), each in [0, 1], 1 = best.

    Attributes:
      petersen: ME-Petersen (symmetric).
      schnabel_quality: ME-Schnabel(S_r, S_e): references marked first, candidates visited.
      schnabel_diversity: ME-Schnabel(S_e, S_r): candidates marked first, references visited.
      capture: ME-CAPTURE, model M0 (symmetric).

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(30, 4))
      >>> mark_evaluate_scores(references=x, candidates=x, k=3)
      MarkEvaluateScores(petersen=1, schnabel_quality=1, schnabel_diversity=1, capture=1)
    """

    petersen: jax.Array
    schnabel_quality: jax.Array
    schnabel_diversity: jax.Array
    capture: jax.Array


class SchnabelScores(Result):
    """ME-Schnabel in both directions (:func:`me_schnabel`), each in [0, 1], 1 = best.

    Attributes:
      quality: ME-Schnabel(S_r, S_e) (references marked first, candidates visited).
      diversity: ME-Schnabel(S_e, S_r) (candidates marked first, references visited).
    """

    quality: jax.Array
    diversity: jax.Array


class PetersenEstimate(Result):
    """Lincoln-Petersen counts and population estimate (:func:`petersen_estimate`).

    Attributes:
      marked: ``M = n + sum_{s'} f(s', S)``, samples marked on the first visit.
      captured: ``C = m + sum_s f(s, S')``, samples captured on the second visit.
      recaptured: ``R = sum_{s'} f(s', S) + sum_s f(s, S')``, captured samples already marked.
      population: ``P_hat = M C / R`` (0 when ``R = 0``).
    """

    marked: jax.Array
    captured: jax.Array
    recaptured: jax.Array
    population: jax.Array


class SchnabelEstimate(Result):
    """Schnabel sums and population estimate (:func:`schnabel_estimate`).

    Attributes:
      catch_times_marked: ``sum_i C_i M_i`` over the visits.
      recaptured: ``sum_i R_i`` over the visits.
      population: ``P_hat = sum_i C_i M_i / sum_i R_i`` (0 when ``sum_i R_i = 0``).
    """

    catch_times_marked: jax.Array
    recaptured: jax.Array
    population: jax.Array


class CaptureEstimate(Result):
    """Model-M0 (program CAPTURE) inputs and population estimate (:func:`capture_estimate`).

    Attributes:
      num_captures: total captures ``n_dot`` over all occasions.
      num_distinct: distinct samples caught ``D``.
      num_occasions: capture occasions ``t``.
      population: the M0 maximum-likelihood ``P_hat`` (:func:`m0_estimate`).
    """

    num_captures: jax.Array
    num_distinct: jax.Array
    num_occasions: jax.Array
    population: jax.Array


# --------------------------------------------------------------------------- validation
def _check_pair(references: Any, candidates: Any, k: Any) -> tuple[jax.Array, jax.Array]:
    """Both feature sets as float JAX arrays of one dtype, and ``1 <= k < min(n, m)``; errors
    name the argument (non-2-D, empty, NaN/inf, mismatched dimensions, bad ``k``)."""
    k = check_int(k, "k", minimum=1)
    ref = check_features(references, "references")
    cand = check_features(candidates, "candidates", dim=ref.shape[1])
    smallest = min(ref.shape[0], cand.shape[0])
    if k >= smallest:
        raise ValueError(
            f"k: must be smaller than the size of each set (k-th neighbour, self excluded); "
            f"got k={k} with references of {ref.shape[0]} and candidates of {cand.shape[0]} samples"
        )
    ref, cand = jnp.asarray(ref), jnp.asarray(cand)
    dtype = jnp.result_type(ref.dtype, cand.dtype)
    return ref.astype(dtype), cand.astype(dtype)


def _check_occasions(occasions: str) -> str:
    return check_choice(occasions, "occasions", _OCCASIONS)


# --------------------------------------------------------------------------- warnings
def _distinct_up_to(a: np.ndarray, limit: int) -> int:
    """Number of distinct rows of ``a``, counted up to ``limit`` (``O(limit n d)``)."""
    count = 0
    while a.shape[0] and count < limit:
        a = a[~np.all(a == a[:1], axis=1)]
        count += 1
    return count


def _warn_degenerate(ref: Any, cand: Any, k: int, literal: bool = False) -> None:
    """Warn (host side, concrete inputs only) when a score cannot mean much: a set with fewer
    than ``10 k`` rows, a set whose rows are all one point, or (``literal=False``) a set with
    at most ``k`` distinct rows, whose scores are all 0. Skipped for global arrays spanning
    several processes (their values are not on this host)."""
    if not host_readable(ref, cand):
        return
    for x, name in ((ref, "references"), (cand, "candidates")):
        n = x.shape[0]
        if n < 10 * k:
            warnings.warn(
                f"{name}: only {n} samples for k={k} (fewer than 10*k = {10 * k}); the k-NN "
                f"hyperspheres are too few for the Mark-Evaluate scores to mean much",
                UserWarning, stacklevel=4)
        a = np.asarray(x)
        if n > 1 and bool(np.all(a == a[:1])):
            warnings.warn(
                f"{name}: all {n} samples are the same point (one distinct row); the set is a "
                f"single individual and every sphere of it has radius 0"
                + ("" if literal else "; with distinct rows as individuals every score is 0"),
                UserWarning, stacklevel=4)
        elif not literal and n > k:
            distinct = _distinct_up_to(a, k + 1)
            if distinct <= k:
                warnings.warn(
                    f"{name}: only {distinct} distinct rows for k={k}; with distinct rows as "
                    f"individuals (literal=False) no individual has k neighbours and every "
                    f"score is 0", UserWarning, stacklevel=4)


# --------------------------------------------------------------------------- statistics
def _set_spheres(x, k: int, block_size, dedup: bool):
    """Hyperspheres of one set and its individuals' mask (first occurrences when ``dedup``)."""
    n = x.shape[0]
    ones = jnp.ones((n,), bool)
    vals, inds = _knn(x, ones, k, block_size)
    if not dedup:
        return _spheres(vals, inds, ones), ones
    idx = jnp.arange(n, dtype=jnp.int32)
    # a duplicate equals its nearest row exactly (distances of equal rows can round above 0
    # when the set sits at the shift point, so the rows themselves are compared)
    nn = jnp.clip(inds[:, 0], 0, n - 1)
    same = jnp.all(x == x[nn], axis=1) | (vals[:, 0] == 0)
    mask = ~(same & (inds[:, 0] < idx))
    # recompute on the distinct rows only when there is a duplicate (else the pass is exact)
    vals, inds = lax.cond(jnp.all(mask), lambda: (vals, inds),
                          lambda: _knn(x, mask, k, block_size))
    return _spheres(vals, inds, mask), mask


@partial(jax.jit, static_argnames=("k", "block_size", "dedup"))
def _stats(ref, cand, k: int, block_size: int | None, dedup: bool = True) -> MarkEvaluateStats:
    # one common shift (translation invariant) keeps the matmul expansion well conditioned
    shift = jnp.mean(ref, axis=0)
    ref = ref - shift
    cand = cand - shift
    hr, mr = _set_spheres(ref, k, block_size, dedup)
    hc, mc = _set_spheres(cand, k, block_size, dedup)
    cross = cross_membership(ref, hr.radii_sq, cand, hc.radii_sq, a_mask=mr, b_mask=mc,
                             block_size=block_size)
    gc = neighborhood_counts(ref, cand, hc.radii_sq, hc.neighbors, a_mask=mr, b_mask=mc)
    gr = neighborhood_counts(cand, ref, hr.radii_sq, hr.neighbors, a_mask=mc, b_mask=mr)
    return MarkEvaluateStats(references=hr, candidates=hc, cross=cross, references_mask=mr,
                             candidates_mask=mc, references_catches=gr, candidates_catches=gc)


def mark_evaluate_stats(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
                        block_size: int | None = None, mesh: Any = None) -> MarkEvaluateStats:
    """Hyperspheres of both sets, their cross memberships and neighbourhood catches.

    ``r_k(s, S)`` is the distance from ``s`` to its k-th nearest other row of its own set and
    ``f(x, S) = 1`` iff ``||x - s|| <= r_k(s, S)`` for some ``s in S`` (see
    :mod:`jaxmetrics.mark_evaluate.hyperspheres`). With ``literal=False`` each set is first
    reduced to its distinct rows (a repeated row is the same individual; see the module
    docstring), which costs a second k-NN pass only for a set that has duplicates.

    Warns (concrete inputs only) when a set has fewer than ``10 k`` rows or one distinct row.

    Args:
      references: ``[n, d]`` features of S.
      candidates: ``[m, d]`` features of S'.
      k: neighbourhood size, ``1 <= k < min(n, m)``.
      literal: every row is an individual (the paper as printed) instead of every distinct row.
      block_size: rows per distance block (static; default keeps tiles near 4M elements).
      mesh: optional :class:`jax.sharding.Mesh`: rows of each set are sharded over it (each
        set's size must be a multiple of the device count, else it runs replicated with a warning).

    Returns:
      :class:`MarkEvaluateStats`: ``references`` / ``candidates`` hyperspheres (``[n]``,
      ``[n, k]`` / ``[m]``, ``[m, k]``), their ``cross`` membership, the individuals' masks and
      the neighbourhood catches ``g``.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4) + 0.01, k=1)
      >>> s.cross
      CrossMembership(b_in_a=bool[4], a_in_b=bool[4], a_counts=i32[4], b_counts=i32[4])
      >>> bool(s.cross.b_in_a.all())
      True
    """
    ref, cand = _check_pair(references, candidates, k)
    _warn_degenerate(references, candidates, int(k), bool(literal))
    if mesh is not None:
        from jaxmetrics.sharding import place_rows

        ref = place_rows(ref, mesh, name="references")
        cand = place_rows(cand, mesh, name="candidates")
    return _stats(ref, cand, int(k), block_size, not bool(literal))


# --------------------------------------------------------------------------- estimators
def accuracy_score(p_hat: Any, population: Any, valid: Any = True) -> jax.Array:
    """``1 - min(1, |p_hat - P| / P)``, or 0 where ``valid`` is False (no recaptures).

    Args:
      p_hat: estimated population size(s).
      population: true population size ``P`` (broadcast against ``p_hat``).
      valid: bool (array); where False the score is 0.

    Returns:
      array of ``p_hat``'s shape, in [0, 1].

    Examples:
      >>> round(float(accuracy_score(110.0, 100.0)), 6)
      0.9
      >>> float(accuracy_score(0.0, 100.0, valid=False))
      0.0
    """
    p_hat = jnp.asarray(p_hat)
    population = jnp.asarray(population, p_hat.dtype)
    loss = jnp.minimum(1.0, jnp.abs(p_hat - population) / population)
    return jnp.where(valid, 1.0 - loss, 0.0)


def _count(mask) -> jax.Array:
    return jnp.sum(mask, dtype=jnp.int32)


def petersen_estimate(stats: MarkEvaluateStats) -> PetersenEstimate:
    """Lincoln-Petersen counts of the two visits and ``P_hat = M C / R`` (0 when ``R = 0``).

    ``M = |S| + sum_{s'} f(s', S)``, ``C = |S'| + sum_s f(s, S')``,
    ``R = sum_{s'} f(s', S) + sum_s f(s, S')`` over the individuals of ``stats``.

    Args:
      stats: :class:`MarkEvaluateStats` of S (references) and S' (candidates).

    Returns:
      :class:`PetersenEstimate` of scalars.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4), k=1)
      >>> petersen_estimate(s)
      PetersenEstimate(marked=8, captured=8, recaptured=8, population=8)
    """
    n, m = _count(stats.references_mask), _count(stats.candidates_mask)
    fc = _count(stats.cross.b_in_a)
    fr = _count(stats.cross.a_in_b)
    M, C, R = n + fc, m + fr, fc + fr
    f = accumulator_dtype()
    p_hat = jnp.where(R > 0, M.astype(f) * C.astype(f) / jnp.maximum(R, 1).astype(f), 0.0)
    return PetersenEstimate(marked=M, captured=C, recaptured=R, population=p_hat)


def _hoods(spheres: Hyperspheres, mask) -> jax.Array:
    """``[m, k+1]`` bool/index pair of the neighbourhoods ``NN_k(x)``: x then its neighbours."""
    m = spheres.neighbors.shape[0]
    own = jnp.arange(m, dtype=jnp.int32)[:, None]
    idx = jnp.concatenate([own, spheres.neighbors], axis=1)
    ok = jnp.concatenate([mask[:, None], spheres.neighbors >= 0], axis=1) & mask[:, None]
    return jnp.where(ok, idx, 0), ok


def schnabel_estimate(stats: MarkEvaluateStats, *, literal: bool = False) -> SchnabelEstimate:
    """Schnabel sums ``sum_i C_i M_i``, ``sum_i R_i`` and ``P_hat`` with S marked first, S' visited.

    See the module docstring for C_i, M_i, R_i. ``P_hat = 0`` when ``sum_i R_i = 0``.
    ``literal=True`` catches and then marks each visit's neighbourhood (the paper as printed);
    the default keeps the marks of the first step and a visit catches its own sample
    (correction 2: ``P_hat = (n + U)(m + U) / (2U)`` with U marked candidates).

    Args:
      stats: :class:`MarkEvaluateStats` (use ``stats.swap()`` to visit the references).
      literal: sequential marking by the visits.

    Returns:
      :class:`SchnabelEstimate` of scalars.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4), k=1)
      >>> float(schnabel_estimate(s).population)
      8.0
    """
    f = accumulator_dtype()
    marked0 = stats.cross.b_in_a & stats.candidates_mask
    count0 = _count(stats.references_mask) + _count(marked0)
    if not literal:
        # correction 2: M_i = M_1, and visit i catches s'_i and, when s'_i is marked, the
        # reference whose sphere marked it (C_i = 1 + u_i, R_i = 2 u_i); a closed form
        u = _count(marked0)
        num = count0.astype(f) * (_count(stats.candidates_mask) + u).astype(f)
        den = (2 * u).astype(f)
        p_hat = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)
        return SchnabelEstimate(catch_times_marked=num, recaptured=den, population=p_hat)

    idx, ok = _hoods(stats.candidates, stats.candidates_mask)
    g = stats.candidates_catches

    def visit(carry, x):
        marked, n_marked = carry
        i, o, g_i = x
        hit = marked[i] & o
        already = _count(hit)
        size = _count(o)
        c_t = size + g_i
        r_t = g_i + already
        cm = c_t.astype(f) * n_marked.astype(f)
        marked = marked.at[i].set(marked[i] | o)
        return (marked, n_marked + size - already), (cm, r_t)

    _, (cm, r) = lax.scan(visit, (marked0, count0), (idx, ok, g))
    num = jnp.sum(cm)
    den = jnp.sum(r.astype(f))
    p_hat = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)
    return SchnabelEstimate(catch_times_marked=num, recaptured=den, population=p_hat)


def m0_estimate(num_captures: Any, num_distinct: Any, num_occasions: Any,
                max_population: int) -> jax.Array:
    """Model-M0 maximum-likelihood population size on the integer grid ``[D, max_population]``.

    ``ln L(N) = lnΓ(N+1) - lnΓ(N-D+1) + n ln n + (tN-n) ln(tN-n) - tN ln(tN)`` (p profiled
    out as ``n / (tN)``), with ``0 ln 0 = 0``; grid points below D are excluded. Ties go to
    the smallest N.

    Args:
      num_captures: total captures ``n`` (scalar).
      num_distinct: distinct individuals caught ``D``.
      num_occasions: capture occasions ``t``.
      max_population: static grid end (inclusive).

    Returns:
      scalar ``N_hat`` (float).

    Examples:
      >>> int(m0_estimate(20, 10, 2, 40))   # everyone caught twice in two occasions
      10
      >>> int(m0_estimate(10, 10, 2, 40))   # no recaptures: the grid end
      40
    """
    f = accumulator_dtype()
    N = jnp.arange(max_population + 1, dtype=f)
    n = jnp.asarray(num_captures, f)
    D = jnp.asarray(num_distinct, f)
    t = jnp.asarray(num_occasions, f)
    tN = t * N
    ll = (gammaln(N + 1.0) - gammaln(jnp.maximum(N - D, 0.0) + 1.0)
          + xlogy(n, n) + xlogy(tN - n, jnp.maximum(tN - n, 0.0)) - xlogy(tN, tN))
    ll = jnp.where((N >= D) & (tN >= n), ll, -jnp.inf)
    return jnp.argmax(ll).astype(f)


def capture_estimate(stats: MarkEvaluateStats, *, occasions: str = "samples",
                     literal: bool = False) -> CaptureEstimate:
    """M0 (program CAPTURE) estimate: captures, distinct samples, occasions and ``P_hat``.

    ``occasions="samples"`` (default): one occasion per individual of S ∪ S' (the paper);
    ``n_dot = C_total`` with the own-set neighbours counted (``literal=True``) or not (the
    default, correction 3). ``occasions="visits"``: the two Petersen visits as occasions.

    Args:
      stats: :class:`MarkEvaluateStats`.
      occasions: ``"samples"`` or ``"visits"``.
      literal: count the own-set neighbours as captures (``occasions="samples"`` only).

    Returns:
      :class:`CaptureEstimate` of scalars.

    Examples:
      >>> import numpy as np
      >>> x = np.array([[0.], [1.], [3.], [6.]])      # catches g = 2, 2, 3, 3 in each set
      >>> capture_estimate(mark_evaluate_stats(references=x, candidates=x, k=1))
      CaptureEstimate(num_captures=28, num_distinct=8, num_occasions=8, population=8)
    """
    _check_occasions(occasions)
    P = _population(stats)
    if occasions == "visits":
        pe = petersen_estimate(stats)
        n_cap = pe.marked + pe.captured
        distinct = pe.marked + pe.captured - pe.recaptured
        t = jnp.asarray(2, jnp.int32)
    else:
        n_ind = _count(stats.references_mask) + _count(stats.candidates_mask)
        cross = (jnp.sum(stats.references_catches, dtype=jnp.int32)
                 + jnp.sum(stats.candidates_catches, dtype=jnp.int32))
        if literal:
            own = (jnp.sum(_hoods(stats.references, stats.references_mask)[1], dtype=jnp.int32)
                   + jnp.sum(_hoods(stats.candidates, stats.candidates_mask)[1], dtype=jnp.int32))
        else:
            own = n_ind
        n_cap = own + cross
        distinct = n_ind
        t = n_ind
    p_hat = m0_estimate(n_cap, distinct, t, 2 * P)
    return CaptureEstimate(num_captures=jnp.asarray(n_cap), num_distinct=jnp.asarray(distinct, jnp.int32),
                           num_occasions=jnp.asarray(t, jnp.int32), population=p_hat)


# --------------------------------------------------------------------------- scores
def _population(stats: MarkEvaluateStats) -> int:
    return stats.references.radii_sq.shape[0] + stats.candidates.radii_sq.shape[0]


def _defined(stats: MarkEvaluateStats) -> jax.Array:
    """Both sets have more than k individuals, so every individual has k neighbours (with
    ``literal=True`` every row is one and ``k < min(n, m)`` is checked on input)."""
    k = stats.references.neighbors.shape[1]
    return (_count(stats.references_mask) > k) & (_count(stats.candidates_mask) > k)


def _petersen(stats: MarkEvaluateStats) -> jax.Array:
    pe = petersen_estimate(stats)
    return accuracy_score(pe.population, _population(stats), (pe.recaptured > 0) & _defined(stats))


def _schnabel(stats: MarkEvaluateStats, literal: bool) -> SchnabelScores:
    P = _population(stats)
    ok = _defined(stats)
    q = schnabel_estimate(stats, literal=literal)
    d = schnabel_estimate(stats.swap(), literal=literal)
    return SchnabelScores(quality=accuracy_score(q.population, P, (q.recaptured > 0) & ok),
                          diversity=accuracy_score(d.population, P, (d.recaptured > 0) & ok))


def _capture(stats: MarkEvaluateStats, occasions: str, literal: bool) -> jax.Array:
    est = capture_estimate(stats, occasions=occasions, literal=literal)
    return accuracy_score(est.population, _population(stats), _defined(stats))


_petersen_score = jax.jit(_petersen)
_schnabel_scores = jax.jit(_schnabel, static_argnames=("literal",))
_capture_score = jax.jit(_capture, static_argnames=("occasions", "literal"))


@partial(jax.jit, static_argnames=("occasions", "literal"))
def _scores(stats: MarkEvaluateStats, occasions: str, literal: bool) -> MarkEvaluateScores:
    s = _schnabel(stats, literal)
    return MarkEvaluateScores(petersen=_petersen(stats), schnabel_quality=s.quality,
                              schnabel_diversity=s.diversity,
                              capture=_capture(stats, occasions, literal))


def mark_evaluate_scores(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
                         occasions: str = "samples", block_size: int | None = None,
                         mesh: Any = None) -> MarkEvaluateScores:
    """All Mark-Evaluate scores from one set of distance passes.

    Every score is ``1 - min(1, |P_hat - P| / P)`` with ``P = n + m`` and ``P_hat`` the
    estimator's population size (see the module docstring): ME-Petersen, ME-Schnabel in both
    directions and ME-CAPTURE.

    Args:
      references: ``[n, d]`` reference features S_r.
      candidates: ``[m, d]`` candidate features S_e.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      literal: the formulas of the paper as printed instead of the corrected default (see the
        module docstring: distinct rows as individuals, Schnabel marks of the first step only,
        CAPTURE occasions without the own-set neighbours).
      occasions: ME-CAPTURE set-up, ``"samples"`` (one occasion per sample, the paper;
        default) or ``"visits"`` (the two Petersen visits).
      block_size: rows per distance block.
      mesh: optional :class:`jax.sharding.Mesh` to shard the rows of both sets over (see
        :func:`mark_evaluate_stats`).

    Returns:
      :class:`MarkEvaluateScores` of scalar arrays in [0, 1] (1 = best): ``petersen``,
      ``schnabel_quality`` (= ME-Schnabel(S_r, S_e)), ``schnabel_diversity``
      (= ME-Schnabel(S_e, S_r)), ``capture``.

    Examples:
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> x = rng.normal(size=(30, 2))
      >>> mark_evaluate_scores(references=x, candidates=x, k=3).to_dict()
      {'petersen': 1.0, 'schnabel_quality': 1.0, 'schnabel_diversity': 1.0, 'capture': 1.0}
      >>> s = mark_evaluate_scores(references=x, candidates=x + 100.0, k=3)
      >>> float(s.petersen), float(s.schnabel_quality), float(s.capture)
      (0.0, 0.0, 0.0)
    """
    _check_occasions(occasions)
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k,
                                literal=literal, block_size=block_size, mesh=mesh)
    return _scores(stats, occasions, bool(literal))


def me_petersen(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
                block_size: int | None = None) -> jax.Array:
    """ME-Petersen ``1 - min(1, |MC/R - P| / P)`` (0 when R = 0); symmetric.

    Args:
      references: ``[n, d]``.
      candidates: ``[m, d]``.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      literal: every row an individual (the paper as printed) instead of every distinct row.
      block_size: rows per distance block.

    Returns:
      0-d array in [0, 1].

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(30, 3))
      >>> float(me_petersen(references=x, candidates=x)), float(me_petersen(references=x, candidates=x + 100.0))
      (1.0, 0.0)
    """
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k,
                                literal=literal, block_size=block_size)
    return _petersen_score(stats)


def me_schnabel(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
                block_size: int | None = None) -> SchnabelScores:
    """ME-Schnabel quality = ME-Schnabel(S_r, S_e) and diversity = ME-Schnabel(S_e, S_r).

    Args:
      references: ``[n, d]`` S_r.
      candidates: ``[m, d]`` S_e.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      literal: the paper as printed (every row an individual, sequential marking by the
        visits) instead of the corrected default.
      block_size: rows per distance block.

    Returns:
      :class:`SchnabelScores` (``quality``, ``diversity``: 0-d arrays in [0, 1]).

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(30, 3))
      >>> me_schnabel(references=x, candidates=x)
      SchnabelScores(quality=1, diversity=1)
    """
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k,
                                literal=literal, block_size=block_size)
    return _schnabel_scores(stats, literal=bool(literal))


def me_capture(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
               occasions: str = "samples", block_size: int | None = None) -> jax.Array:
    """ME-CAPTURE (model M0) score; symmetric. See the module docstring for ``occasions``.

    Args:
      references: ``[n, d]``.
      candidates: ``[m, d]``.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      literal: the paper as printed (every row an individual, own-set neighbours counted as
        captures) instead of the corrected default.
      occasions: ``"samples"`` (default) or ``"visits"``.
      block_size: rows per distance block.

    Returns:
      0-d array in [0, 1].

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(30, 3))
      >>> float(me_capture(references=x, candidates=x)), float(me_capture(references=x, candidates=x + 100.0))
      (1.0, 0.0)
    """
    _check_occasions(occasions)
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k,
                                literal=literal, block_size=block_size)
    return _capture_score(stats, occasions=occasions, literal=bool(literal))
