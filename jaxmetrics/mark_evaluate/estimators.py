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

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import gammaln, xlogy

from jaxmetrics._ops import accumulator_dtype
from jaxmetrics.mark_evaluate.checks import check_occasions
from jaxmetrics.mark_evaluate.hyperspheres import Hyperspheres
from jaxmetrics.mark_evaluate.stats import MarkEvaluateStats, mark_evaluate_stats  # noqa: F401 (examples)
from jaxmetrics.results import Result

__all__ = [
    "PetersenEstimate",
    "SchnabelEstimate",
    "CaptureEstimate",
    "accuracy_score",
    "petersen_estimate",
    "schnabel_estimate",
    "capture_estimate",
    "m0_estimate",
]


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
    check_occasions(occasions)
    P = stats.population
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
