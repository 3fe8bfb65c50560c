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
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import gammaln, xlogy

from jaxmetrics.mark_evaluate.hyperspheres import (
    CrossMembership,
    Hyperspheres,
    cross_membership,
    knn_hyperspheres,
)

__all__ = [
    "MarkEvaluateStats",
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
    "check_feature_pair",
]

_OCCASIONS = ("visits", "samples")


class MarkEvaluateStats(NamedTuple):
    """Everything the estimators need, from three distance passes.

    Attributes:
      ref: :class:`Hyperspheres` of S (``[n]``, ``[n, k]``).
      cand: :class:`Hyperspheres` of S' (``[m]``, ``[m, k]``).
      cross: :class:`CrossMembership` with ``a = S``, ``b = S'``.
    """

    ref: Hyperspheres
    cand: Hyperspheres
    cross: CrossMembership

    def swap(self) -> "MarkEvaluateStats":
        """The same statistics with the roles of S and S' exchanged."""
        c = self.cross
        return MarkEvaluateStats(
            self.cand, self.ref, CrossMembership(c.a_in_b, c.b_in_a, c.b_counts, c.a_counts)
        )


# --------------------------------------------------------------------------- validation
def _is_tracer(x) -> bool:
    return isinstance(x, jax.core.Tracer)


def _check_features(x, name: str) -> jax.Array:
    if x is None:
        raise ValueError(f"{name}: expected an array of shape [n, d], got None")
    if isinstance(x, (list, tuple)) or isinstance(x, np.ndarray) or np.isscalar(x):
        arr = np.asarray(x)
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise TypeError(f"{name}: expected a numeric array, got dtype {arr.dtype}")
        x = arr
    if not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise TypeError(f"{name}: expected an array of shape [n, d], got {type(x).__name__}")
    if len(x.shape) != 2:
        raise ValueError(f"{name}: expected a 2-D array [n, d], got shape {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise ValueError(f"{name}: the set is empty (shape {tuple(x.shape)})")
    if x.shape[1] == 0:
        raise ValueError(f"{name}: features have dimension 0 (shape {tuple(x.shape)})")
    if not (jnp.issubdtype(x.dtype, jnp.floating) or jnp.issubdtype(x.dtype, jnp.integer)
            or x.dtype == bool):
        raise TypeError(f"{name}: expected a numeric array, got dtype {x.dtype}")
    if not jnp.issubdtype(x.dtype, jnp.floating):
        x = jnp.asarray(x, jnp.float32)
    if not _is_tracer(x):
        finite = np.all(np.isfinite(x)) if isinstance(x, np.ndarray) else bool(jnp.all(jnp.isfinite(x)))
        if not finite:
            raise ValueError(f"{name}: contains NaN or infinite values")
    return jnp.asarray(x)


def check_feature_pair(ref, cand, k: int, *, ref_name: str = "references",
                       cand_name: str = "candidates"):
    """Validate two feature sets and k; return them as float JAX arrays of one dtype.

    Raises ``ValueError``/``TypeError`` naming the argument: non-2-D, empty, NaN/inf,
    mismatched feature dimensions, non-integer ``k``, ``k < 1`` or ``k >= set size`` (the k-th
    neighbour of a sample must exist in its own set, self excluded).

    Examples:
      >>> import numpy as np
      >>> r, c = check_feature_pair(np.zeros((4, 2)) + np.arange(4)[:, None], np.ones((3, 2)), 2)
      >>> r.shape, c.shape
      ((4, 2), (3, 2))
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"k: expected an integer, got {type(k).__name__} {k!r}")
    ref = _check_features(ref, ref_name)
    cand = _check_features(cand, cand_name)
    if ref.shape[1] != cand.shape[1]:
        raise ValueError(
            f"{cand_name}: feature dimension {cand.shape[1]} does not match {ref_name}' {ref.shape[1]}"
        )
    if k < 1:
        raise ValueError(f"k: must be >= 1, got {k}")
    smallest = min(ref.shape[0], cand.shape[0])
    if k >= smallest:
        raise ValueError(
            f"k: must be smaller than the size of each set (k-th neighbour, self excluded); "
            f"got k={k} with {ref_name} of {ref.shape[0]} and {cand_name} of {cand.shape[0]} samples"
        )
    dtype = jnp.result_type(ref.dtype, cand.dtype)
    return ref.astype(dtype), cand.astype(dtype)


def _check_occasions(occasions: str) -> None:
    if occasions not in _OCCASIONS:
        raise ValueError(f"occasions: expected one of {_OCCASIONS}, got {occasions!r}")


# --------------------------------------------------------------------------- statistics
@partial(jax.jit, static_argnames=("k", "block_size"))
def _stats(ref, cand, k: int, block_size: int | None) -> MarkEvaluateStats:
    # one common shift (translation invariant) keeps the matmul expansion well conditioned
    shift = jnp.mean(ref, axis=0)
    ref = ref - shift
    cand = cand - shift
    hr = knn_hyperspheres(ref, k, block_size)
    hc = knn_hyperspheres(cand, k, block_size)
    cross = cross_membership(ref, hr.radii_sq, cand, hc.radii_sq, block_size)
    return MarkEvaluateStats(hr, hc, cross)


def mark_evaluate_stats(references, candidates, k: int = 3, *,
                        block_size: int | None = None, mesh=None) -> MarkEvaluateStats:
    """Hyperspheres of both sets and their cross memberships (three blocked distance passes).

    Args:
      references: ``[n, d]`` features of S.  candidates: ``[m, d]`` features of S'.
      k: neighbourhood size, ``1 <= k < min(n, m)``.
      block_size: rows per distance block (static; default keeps tiles near 4M elements).
      mesh: optional :class:`jax.sharding.Mesh`: rows of each set are sharded over it (each
        set's size must be a multiple of the device count, else it runs replicated with a warning).

    Returns:
      :class:`MarkEvaluateStats`.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(np.eye(4), np.eye(4) + 0.01, k=1)
      >>> bool(s.cross.b_in_a.all())
      True
    """
    ref, cand = check_feature_pair(references, candidates, k)
    if mesh is not None:
        from jaxmetrics.sharding import place_rows

        ref = place_rows(ref, mesh, name="references")
        cand = place_rows(cand, mesh, name="candidates")
    return _stats(ref, cand, int(k), block_size)


# --------------------------------------------------------------------------- estimators
def accuracy_score(p_hat, population, valid=True) -> jax.Array:
    """``1 - min(1, |p_hat - P| / P)``, or 0 where ``valid`` is False (no recaptures).

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


def _float():
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def petersen_estimate(stats: MarkEvaluateStats):
    """Petersen counts ``(M, C, R, P_hat)`` (P_hat = M C / R, 0 when R = 0).

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(np.eye(4), np.eye(4), k=1)
      >>> [int(v) for v in petersen_estimate(s)]
      [8, 8, 8, 8]
    """
    n = stats.ref.radii_sq.shape[0]
    m = stats.cand.radii_sq.shape[0]
    fc = jnp.sum(stats.cross.b_in_a, dtype=jnp.int32)
    fr = jnp.sum(stats.cross.a_in_b, dtype=jnp.int32)
    M, C, R = n + fc, m + fr, fc + fr
    f = _float()
    p_hat = jnp.where(R > 0, M.astype(f) * C.astype(f) / jnp.maximum(R, 1).astype(f), 0.0)
    return M, C, R, p_hat


def schnabel_estimate(stats: MarkEvaluateStats, sequential: bool = True):
    """Schnabel sums ``(sum_i C_i M_i, sum_i R_i, P_hat)`` with S marked first, S' visited.

    See the module docstring for C_i, M_i, R_i. ``P_hat = 0`` when ``sum_i R_i = 0``.
    With ``sequential=False`` the caught neighbours are not marked after each visit (the
    marked set stays that of visit 1), which makes far-apart sets score 0.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(np.eye(4), np.eye(4), k=1)
      >>> float(schnabel_estimate(s)[2])
      8.0
    """
    n = stats.ref.radii_sq.shape[0]
    nbrs = stats.cand.neighbors
    m, k = nbrs.shape
    f = _float()
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
    return num, den, p_hat


def m0_estimate(n_captures, n_distinct, n_occasions, n_max: int):
    """Model-M0 maximum-likelihood population size on the integer grid ``[D, n_max]``.

    ``ln L(N) = lnΓ(N+1) - lnΓ(N-D+1) + n ln n + (tN-n) ln(tN-n) - tN ln(tN)`` (p profiled
    out as ``n / (tN)``), with ``0 ln 0 = 0``; grid points below D are excluded. Ties go to
    the smallest N.

    Args:
      n_captures: total captures ``n`` (scalar); n_distinct: ``D``; n_occasions: ``t``.
      n_max: static grid end (inclusive).

    Examples:
      >>> int(m0_estimate(20, 10, 2, 40))   # everyone caught twice in two occasions
      10
      >>> int(m0_estimate(10, 10, 2, 40))   # no recaptures: the grid end
      40
    """
    f = _float()
    N = jnp.arange(n_max + 1, dtype=f)
    n = jnp.asarray(n_captures, f)
    D = jnp.asarray(n_distinct, f)
    t = jnp.asarray(n_occasions, f)
    tN = t * N
    ll = (gammaln(N + 1.0) - gammaln(jnp.maximum(N - D, 0.0) + 1.0)
          + xlogy(n, n) + xlogy(tN - n, jnp.maximum(tN - n, 0.0)) - xlogy(tN, tN))
    ll = jnp.where((N >= D) & (tN >= n), ll, -jnp.inf)
    return jnp.argmax(ll).astype(f)


def capture_estimate(stats: MarkEvaluateStats, occasions: str = "visits"):
    """M0 (program CAPTURE) estimate ``(n_captures, n_distinct, n_occasions, P_hat)``.

    See the module docstring for the two set-ups of ``occasions``.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(np.eye(4), np.eye(4), k=1)
      >>> float(capture_estimate(s)[3])
      8.0
    """
    _check_occasions(occasions)
    n = stats.ref.radii_sq.shape[0]
    m = stats.cand.radii_sq.shape[0]
    k = stats.ref.neighbors.shape[1]
    P = n + m
    if occasions == "visits":
        M, C, R, _ = petersen_estimate(stats)
        n_cap = M + C
        distinct = M + C - R
        t = 2
    else:
        f = _float()
        n_cap = (P * (k + 1) + jnp.sum(stats.cross.a_counts.astype(f))
                 + jnp.sum(stats.cross.b_counts.astype(f)))
        distinct = P
        t = P
    return n_cap, distinct, t, m0_estimate(n_cap, distinct, t, 2 * P)


@jax.jit
def _petersen_score(stats: MarkEvaluateStats):
    P = stats.ref.radii_sq.shape[0] + stats.cand.radii_sq.shape[0]
    _, _, R, p_hat = petersen_estimate(stats)
    return accuracy_score(p_hat, P, R > 0)


@partial(jax.jit, static_argnames=("sequential",))
def _schnabel_scores(stats: MarkEvaluateStats, sequential: bool = True):
    P = stats.ref.radii_sq.shape[0] + stats.cand.radii_sq.shape[0]
    _, dq, pq = schnabel_estimate(stats, sequential)
    _, dd, pd = schnabel_estimate(stats.swap(), sequential)
    return accuracy_score(pq, P, dq > 0), accuracy_score(pd, P, dd > 0)


@partial(jax.jit, static_argnames=("occasions",))
def _capture_score(stats: MarkEvaluateStats, occasions: str = "visits"):
    P = stats.ref.radii_sq.shape[0] + stats.cand.radii_sq.shape[0]
    return accuracy_score(capture_estimate(stats, occasions)[3], P)


@partial(jax.jit, static_argnames=("occasions", "sequential"))
def _scores(stats: MarkEvaluateStats, occasions: str = "visits", sequential: bool = True):
    n = stats.ref.radii_sq.shape[0]
    m = stats.cand.radii_sq.shape[0]
    P = n + m
    _, _, R, pp = petersen_estimate(stats)
    _, den_q, pq = schnabel_estimate(stats, sequential)
    _, den_d, pd = schnabel_estimate(stats.swap(), sequential)
    _, _, _, pc = capture_estimate(stats, occasions)
    return {
        "petersen": accuracy_score(pp, P, R > 0),
        "schnabel_quality": accuracy_score(pq, P, den_q > 0),
        "schnabel_diversity": accuracy_score(pd, P, den_d > 0),
        "capture": accuracy_score(pc, P),
    }


def mark_evaluate_scores(references, candidates, k: int = 3, *, occasions: str = "visits",
                         sequential: bool = True, block_size: int | None = None, mesh=None) -> dict:
    """All Mark-Evaluate scores from one set of distance passes.

    Args:
      references: ``[n, d]`` reference features S_r.  candidates: ``[m, d]`` S_e.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      occasions: ME-CAPTURE set-up, ``"visits"`` (default) or ``"samples"``.
      sequential: ME-Schnabel marks the caught neighbours after each visit (paper; default).
      block_size: rows per distance block.
      mesh: optional :class:`jax.sharding.Mesh` to shard the rows of both sets over (see
        :func:`mark_evaluate_stats`).

    Returns:
      dict of scalar arrays in [0, 1] (1 = best): ``petersen``, ``schnabel_quality``
      (= ME-Schnabel(S_r, S_e)), ``schnabel_diversity`` (= ME-Schnabel(S_e, S_r)), ``capture``.

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(30, 4))
      >>> sorted((k, float(v)) for k, v in mark_evaluate_scores(x, x, k=3).items())
      [('capture', 1.0), ('petersen', 1.0), ('schnabel_diversity', 1.0), ('schnabel_quality', 1.0)]
    """
    _check_occasions(occasions)
    stats = mark_evaluate_stats(references, candidates, k, block_size=block_size, mesh=mesh)
    return _scores(stats, occasions, bool(sequential))


def me_petersen(references, candidates, k: int = 3, *, block_size: int | None = None):
    """ME-Petersen ``1 - min(1, |MC/R - P| / P)`` (0 when R = 0); symmetric.

    Args:
      references: ``[n, d]``; candidates: ``[m, d]``; k: neighbourhood size.

    Returns:
      scalar in [0, 1].

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(20, 3))
      >>> float(me_petersen(x, x)), float(me_petersen(x, x + 100.0))
      (1.0, 0.0)
    """
    stats = mark_evaluate_stats(references, candidates, k, block_size=block_size)
    return _petersen_score(stats)


def me_schnabel(references, candidates, k: int = 3, *, sequential: bool = True,
                block_size: int | None = None):
    """ME-Schnabel ``(quality, diversity)`` = (ME-Schnabel(S_r, S_e), ME-Schnabel(S_e, S_r)).

    Args:
      references: ``[n, d]`` S_r; candidates: ``[m, d]`` S_e; k: neighbourhood size.
      sequential: mark the caught neighbours after each visit (paper; default) or not.

    Returns:
      ``(quality, diversity)`` scalars in [0, 1].

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(20, 3))
      >>> [float(v) for v in me_schnabel(x, x)]
      [1.0, 1.0]
    """
    stats = mark_evaluate_stats(references, candidates, k, block_size=block_size)
    return _schnabel_scores(stats, bool(sequential))


def me_capture(references, candidates, k: int = 3, *, occasions: str = "visits",
               block_size: int | None = None):
    """ME-CAPTURE (model M0) score; symmetric. See the module docstring for ``occasions``.

    Args:
      references: ``[n, d]``; candidates: ``[m, d]``; k: neighbourhood size;
      occasions: ``"visits"`` (default) or ``"samples"``.

    Returns:
      scalar in [0, 1].

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(20, 3))
      >>> float(me_capture(x, x)), float(me_capture(x, x + 100.0))
      (1.0, 0.0)
    """
    _check_occasions(occasions)
    stats = mark_evaluate_stats(references, candidates, k, block_size=block_size)
    return _capture_score(stats, occasions)
