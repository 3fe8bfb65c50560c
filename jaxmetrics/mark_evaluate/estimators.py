"""Mark-Evaluate population estimators (Mordido & Meinel, COLING 2020).

S = reference set (``n`` rows), S' = evaluation / candidate set (``m`` rows), true population
``P = n + m``. Membership ``f`` and the k-NN hyperspheres are those of
:mod:`jaxmetrics.mark_evaluate.hyperspheres`. Every score is

    ME = 1 - A(P, P_hat),   A = min(1, |P_hat - P| / P),                 in [0, 1], 1 = best

and an estimator whose denominator (recaptures) is 0 gives ME = 0.

ME-Petersen (certain, from the paper):
    M = n + sum_{s'} f(s', S),  C = m + sum_s f(s, S'),  R = sum_{s'} f(s', S) + sum_s f(s, S'),
    P_hat = M C / R.   Symmetric in (S, S').  For n == m with IMPAR precision p and recall r,
    ME = 1 - min(1, (1-p)(1-r) / (2(p+r))).

ME-Schnabel(S, S') (the visit order is a reconstruction; this reading gives ME(S,S) = 1 and
convergence to 1 as k grows): visit 1 marks S and every s' with f(s', S) = 1. Then, for
i = 1..m in input order, visit i+1 catches ``NN_k(s'_i, S')`` (s'_i and its k neighbours:
k + 1 samples) and the samples of S inside the sphere of s'_i:

    C_i = (k + 1) + #{s in S : ||s - s'_i||^2 <= r_k(s'_i)^2}
    R_i = #{s in S inside the sphere of s'_i} + |marked_i ∩ NN_k(s'_i, S')|
    M_i = |marked_i|   (marked before visit i+1; all of S is marked)

after which ``NN_k(s'_i, S')`` is marked. ``P_hat = sum_i C_i M_i / sum_i R_i``.
This literal reading has a blind spot: for far-apart sets the own-set neighbours are still
recaptured once marked, and ``P_hat`` tends to ``(k+1)(n + m/2)/k`` (score well above 0, e.g.
about 0.85 for n = m, k = 3). ``sequential=False`` keeps the marked set of visit 1 (Petersen
with many recapture visits, ``P_hat = M_1 sum_i C_i / sum_i R_i``), which gives 0 there and
keeps ME(S, S) = 1.
Quality = ME-Schnabel(S_r, S_e) (references marked first, candidates visited); diversity =
ME-Schnabel(S_e, S_r). The marking is a ``lax.scan`` over the visited set.

ME-CAPTURE (model M0 of program CAPTURE, Otis et al. 1978): with ``t`` capture occasions,
``n_dot`` total captures and ``D`` distinct samples caught, the M0 profile log-likelihood is

    ln L(N) = lnΓ(N+1) - lnΓ(N-D+1) + n_dot ln n_dot + (tN - n_dot) ln(tN - n_dot) - tN ln(tN)

maximised over the integers N in [D, 2P] (``gammaln``/``xlogy``; above 2P the score is 0
anyway, so the grid is static in size). Two set-ups of the occasions are offered:

* ``occasions="visits"`` (default): the two visits of ME-Petersen are the occasions (t = 2,
  occasion 1 catches the M marked samples, occasion 2 the C captured ones; n_dot = M + C,
  D = M + C - R = P). This reading satisfies every property the paper states: symmetric,
  ME(S, S) = 1 exactly (then every sample is caught on both occasions, p_hat = 1), far-apart
  sets give 0 (no recaptures: the likelihood increases to the end of the grid), and it
  converges to 1 as k grows.
* ``occasions="samples"``: the paper's literal set-up, one occasion per sample of S ∪ S'
  (t = P), the occasion of x catching ``NN_k(x, own set)`` (k + 1 samples) and the samples of
  the other set inside x's sphere, so ``n_dot = P (k+1) + sum_s #(S' in sphere s) +
  sum_s' #(S in sphere s')`` and D = P. Symmetric and converging to 1 as k grows, but under
  M0 an individual caught about 2(k+1) times is still "missed" with probability about
  exp(-2(k+1)), so ME(S, S) = 1 only while ln(P + 1) < 2(k+1) (about P < 3000 for k = 3),
  and far-apart sets score about 1 - exp(-(k+1)), not 0. Offered for comparison.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import gammaln, xlogy

from jaxmetrics._ops import accumulator_dtype
from jaxmetrics._validation import check_choice, check_features, check_int
from jaxmetrics.mark_evaluate.hyperspheres import (
    CrossMembership,
    Hyperspheres,
    cross_membership,
    knn_hyperspheres,
)
from jaxmetrics.results import Result

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

_OCCASIONS = ("visits", "samples")


# --------------------------------------------------------------------------- results
class MarkEvaluateStats(Result):
    """Everything the estimators need, from three distance passes (:func:`mark_evaluate_stats`).

    Attributes:
      references: :class:`~jaxmetrics.mark_evaluate.Hyperspheres` of S, the references
        (``radii_sq [n]``, ``neighbors [n, k]``).
      candidates: :class:`~jaxmetrics.mark_evaluate.Hyperspheres` of S', the candidates
        (``radii_sq [m]``, ``neighbors [m, k]``).
      cross: :class:`~jaxmetrics.mark_evaluate.CrossMembership` with ``a = S``, ``b = S'``.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4) + 0.01, k=1)
      >>> s.references
      Hyperspheres(radii_sq=f32[4], neighbors=i32[4,1])
    """

    references: Hyperspheres
    candidates: Hyperspheres
    cross: CrossMembership

    def swap(self) -> "MarkEvaluateStats":
        """The same statistics with the roles of S and S' exchanged."""
        c = self.cross
        return MarkEvaluateStats(
            references=self.candidates,
            candidates=self.references,
            cross=CrossMembership(b_in_a=c.a_in_b, a_in_b=c.b_in_a, a_counts=c.b_counts,
                                  b_counts=c.a_counts),
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


# --------------------------------------------------------------------------- statistics
@partial(jax.jit, static_argnames=("k", "block_size"))
def _stats(ref, cand, k: int, block_size: int | None) -> MarkEvaluateStats:
    # one common shift (translation invariant) keeps the matmul expansion well conditioned
    shift = jnp.mean(ref, axis=0)
    ref = ref - shift
    cand = cand - shift
    hr = knn_hyperspheres(ref, k, block_size=block_size)
    hc = knn_hyperspheres(cand, k, block_size=block_size)
    cross = cross_membership(ref, hr.radii_sq, cand, hc.radii_sq, block_size=block_size)
    return MarkEvaluateStats(references=hr, candidates=hc, cross=cross)


def mark_evaluate_stats(*, references: Any, candidates: Any, k: int = 3,
                        block_size: int | None = None, mesh: Any = None) -> MarkEvaluateStats:
    """Hyperspheres of both sets and their cross memberships (three blocked distance passes).

    ``r_k(s, S)`` is the distance from ``s`` to its k-th nearest other row of its own set and
    ``f(x, S) = 1`` iff ``||x - s|| <= r_k(s, S)`` for some ``s in S`` (see
    :mod:`jaxmetrics.mark_evaluate.hyperspheres`).

    Args:
      references: ``[n, d]`` features of S.
      candidates: ``[m, d]`` features of S'.
      k: neighbourhood size, ``1 <= k < min(n, m)``.
      block_size: rows per distance block (static; default keeps tiles near 4M elements).
      mesh: optional :class:`jax.sharding.Mesh`: rows of each set are sharded over it (each
        set's size must be a multiple of the device count, else it runs replicated with a warning).

    Returns:
      :class:`MarkEvaluateStats`: ``references`` / ``candidates`` hyperspheres (``[n]``,
      ``[n, k]`` / ``[m]``, ``[m, k]``) and their ``cross`` membership.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4) + 0.01, k=1)
      >>> s.cross
      CrossMembership(b_in_a=bool[4], a_in_b=bool[4], a_counts=i32[4], b_counts=i32[4])
      >>> bool(s.cross.b_in_a.all())
      True
    """
    ref, cand = _check_pair(references, candidates, k)
    if mesh is not None:
        from jaxmetrics.sharding import place_rows

        ref = place_rows(ref, mesh, name="references")
        cand = place_rows(cand, mesh, name="candidates")
    return _stats(ref, cand, int(k), block_size)


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


def petersen_estimate(stats: MarkEvaluateStats) -> PetersenEstimate:
    """Lincoln-Petersen counts of the two visits and ``P_hat = M C / R`` (0 when ``R = 0``).

    ``M = n + sum_{s'} f(s', S)``, ``C = m + sum_s f(s, S')``,
    ``R = sum_{s'} f(s', S) + sum_s f(s, S')``.

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
    n = stats.references.radii_sq.shape[0]
    m = stats.candidates.radii_sq.shape[0]
    fc = jnp.sum(stats.cross.b_in_a, dtype=jnp.int32)
    fr = jnp.sum(stats.cross.a_in_b, dtype=jnp.int32)
    M, C, R = n + fc, m + fr, fc + fr
    f = accumulator_dtype()
    p_hat = jnp.where(R > 0, M.astype(f) * C.astype(f) / jnp.maximum(R, 1).astype(f), 0.0)
    return PetersenEstimate(marked=M, captured=C, recaptured=R, population=p_hat)


def schnabel_estimate(stats: MarkEvaluateStats, *, sequential: bool = True) -> SchnabelEstimate:
    """Schnabel sums ``sum_i C_i M_i``, ``sum_i R_i`` and ``P_hat`` with S marked first, S' visited.

    See the module docstring for C_i, M_i, R_i. ``P_hat = 0`` when ``sum_i R_i = 0``.
    With ``sequential=False`` the caught neighbours are not marked after each visit (the
    marked set stays that of visit 1), which makes far-apart sets score 0.

    Args:
      stats: :class:`MarkEvaluateStats` (use ``stats.swap()`` to visit the references).
      sequential: mark the caught neighbours after each visit (the paper's reading).

    Returns:
      :class:`SchnabelEstimate` of scalars.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4), k=1)
      >>> float(schnabel_estimate(s).population)
      8.0
    """
    n = stats.references.radii_sq.shape[0]
    nbrs = stats.candidates.neighbors
    m, k = nbrs.shape
    f = accumulator_dtype()
    catch = jnp.concatenate([jnp.arange(m, dtype=jnp.int32)[:, None], nbrs], axis=1)  # [m, k+1]
    in_sphere = stats.cross.b_counts  # samples of S inside the sphere of each s'
    marked0 = stats.cross.b_in_a
    count0 = n + jnp.sum(marked0, dtype=jnp.int32)

    def visit(carry, x):
        marked, n_marked = carry
        idx, s_in = x
        already = jnp.sum(marked[idx], dtype=jnp.int32)
        c_t = (k + 1) + s_in
        r_t = s_in + already
        cm = c_t.astype(f) * n_marked.astype(f)
        if not sequential:
            return (marked, n_marked), (cm, r_t)
        marked = marked.at[idx].set(True)
        return (marked, n_marked + (k + 1) - already), (cm, r_t)

    _, (cm, r) = lax.scan(visit, (marked0, count0), (catch, in_sphere))
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


def capture_estimate(stats: MarkEvaluateStats, *, occasions: str = "visits") -> CaptureEstimate:
    """M0 (program CAPTURE) estimate: captures, distinct samples, occasions and ``P_hat``.

    See the module docstring for the two set-ups of ``occasions``.

    Args:
      stats: :class:`MarkEvaluateStats`.
      occasions: ``"visits"`` (the two Petersen visits; default) or ``"samples"`` (one
        occasion per sample of S ∪ S').

    Returns:
      :class:`CaptureEstimate` of scalars.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4), k=1)
      >>> capture_estimate(s)
      CaptureEstimate(num_captures=16, num_distinct=8, num_occasions=2, population=8)
    """
    _check_occasions(occasions)
    n = stats.references.radii_sq.shape[0]
    m = stats.candidates.radii_sq.shape[0]
    k = stats.references.neighbors.shape[1]
    P = n + m
    if occasions == "visits":
        pe = petersen_estimate(stats)
        n_cap = pe.marked + pe.captured
        distinct = pe.marked + pe.captured - pe.recaptured
        t = 2
    else:
        f = accumulator_dtype()
        n_cap = (P * (k + 1) + jnp.sum(stats.cross.a_counts.astype(f))
                 + jnp.sum(stats.cross.b_counts.astype(f)))
        distinct = P
        t = P
    p_hat = m0_estimate(n_cap, distinct, t, 2 * P)
    return CaptureEstimate(num_captures=jnp.asarray(n_cap), num_distinct=jnp.asarray(distinct, jnp.int32),
                           num_occasions=jnp.asarray(t, jnp.int32), population=p_hat)


# --------------------------------------------------------------------------- scores
def _population(stats: MarkEvaluateStats) -> int:
    return stats.references.radii_sq.shape[0] + stats.candidates.radii_sq.shape[0]


def _petersen(stats: MarkEvaluateStats) -> jax.Array:
    pe = petersen_estimate(stats)
    return accuracy_score(pe.population, _population(stats), pe.recaptured > 0)


def _schnabel(stats: MarkEvaluateStats, sequential: bool) -> SchnabelScores:
    P = _population(stats)
    q = schnabel_estimate(stats, sequential=sequential)
    d = schnabel_estimate(stats.swap(), sequential=sequential)
    return SchnabelScores(quality=accuracy_score(q.population, P, q.recaptured > 0),
                          diversity=accuracy_score(d.population, P, d.recaptured > 0))


def _capture(stats: MarkEvaluateStats, occasions: str) -> jax.Array:
    return accuracy_score(capture_estimate(stats, occasions=occasions).population, _population(stats))


_petersen_score = jax.jit(_petersen)
_schnabel_scores = jax.jit(_schnabel, static_argnames=("sequential",))
_capture_score = jax.jit(_capture, static_argnames=("occasions",))


@partial(jax.jit, static_argnames=("occasions", "sequential"))
def _scores(stats: MarkEvaluateStats, occasions: str, sequential: bool) -> MarkEvaluateScores:
    s = _schnabel(stats, sequential)
    return MarkEvaluateScores(petersen=_petersen(stats), schnabel_quality=s.quality,
                              schnabel_diversity=s.diversity, capture=_capture(stats, occasions))


def mark_evaluate_scores(*, references: Any, candidates: Any, k: int = 3, occasions: str = "visits",
                         sequential: bool = True, block_size: int | None = None,
                         mesh: Any = None) -> MarkEvaluateScores:
    """All Mark-Evaluate scores from one set of distance passes.

    Every score is ``1 - min(1, |P_hat - P| / P)`` with ``P = n + m`` and ``P_hat`` the
    estimator's population size (see the module docstring): ME-Petersen, ME-Schnabel in both
    directions and ME-CAPTURE.

    Args:
      references: ``[n, d]`` reference features S_r.
      candidates: ``[m, d]`` candidate features S_e.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      occasions: ME-CAPTURE set-up, ``"visits"`` (default) or ``"samples"``.
      sequential: ME-Schnabel marks the caught neighbours after each visit (paper; default).
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
      >>> x = rng.normal(size=(30, 4))
      >>> mark_evaluate_scores(references=x, candidates=x, k=3).to_dict()
      {'petersen': 1.0, 'schnabel_quality': 1.0, 'schnabel_diversity': 1.0, 'capture': 1.0}
      >>> s = mark_evaluate_scores(references=x, candidates=x + 100.0, k=3)
      >>> float(s.petersen), float(s.capture)
      (0.0, 0.0)
    """
    _check_occasions(occasions)
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k,
                                block_size=block_size, mesh=mesh)
    return _scores(stats, occasions, bool(sequential))


def me_petersen(*, references: Any, candidates: Any, k: int = 3,
                block_size: int | None = None) -> jax.Array:
    """ME-Petersen ``1 - min(1, |MC/R - P| / P)`` (0 when R = 0); symmetric.

    Args:
      references: ``[n, d]``.
      candidates: ``[m, d]``.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      block_size: rows per distance block.

    Returns:
      0-d array in [0, 1].

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(20, 3))
      >>> float(me_petersen(references=x, candidates=x)), float(me_petersen(references=x, candidates=x + 100.0))
      (1.0, 0.0)
    """
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k, block_size=block_size)
    return _petersen_score(stats)


def me_schnabel(*, references: Any, candidates: Any, k: int = 3, sequential: bool = True,
                block_size: int | None = None) -> SchnabelScores:
    """ME-Schnabel quality = ME-Schnabel(S_r, S_e) and diversity = ME-Schnabel(S_e, S_r).

    Args:
      references: ``[n, d]`` S_r.
      candidates: ``[m, d]`` S_e.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      sequential: mark the caught neighbours after each visit (paper; default) or not.
      block_size: rows per distance block.

    Returns:
      :class:`SchnabelScores` (``quality``, ``diversity``: 0-d arrays in [0, 1]).

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(20, 3))
      >>> me_schnabel(references=x, candidates=x)
      SchnabelScores(quality=1, diversity=1)
    """
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k, block_size=block_size)
    return _schnabel_scores(stats, sequential=bool(sequential))


def me_capture(*, references: Any, candidates: Any, k: int = 3, occasions: str = "visits",
               block_size: int | None = None) -> jax.Array:
    """ME-CAPTURE (model M0) score; symmetric. See the module docstring for ``occasions``.

    Args:
      references: ``[n, d]``.
      candidates: ``[m, d]``.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      occasions: ``"visits"`` (default) or ``"samples"``.
      block_size: rows per distance block.

    Returns:
      0-d array in [0, 1].

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(20, 3))
      >>> float(me_capture(references=x, candidates=x)), float(me_capture(references=x, candidates=x + 100.0))
      (1.0, 0.0)
    """
    _check_occasions(occasions)
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k, block_size=block_size)
    return _capture_score(stats, occasions=occasions)
