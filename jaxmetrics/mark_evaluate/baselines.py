"""Baselines used by the Mark-Evaluate paper: IMPAR, PRD and FID, on embeddings.

* IMPAR (Kynkäänniemi et al. 2019): precision = mean_{x in S_e} f(x, S_r),
  recall = mean_{x in S_r} f(x, S_e), with the k-NN hyperspheres of
  :mod:`jaxmetrics.mark_evaluate.hyperspheres` (k = 3 by default).
* PRD (Sajjadi et al. 2018): cluster S_r ∪ S_e into 20 clusters, histograms P (refs) and
  Q (evals) over clusters, and for λ = tan(θ), θ in a 1001-point grid of (0, π/2):
  α(λ) = Σ_ω min(λ P(ω), Q(ω)) (precision), β(λ) = α(λ)/λ (recall); the curves are
  averaged over 10 clusterings; summaries max F_8 (recall-like) and max F_{1/8}
  (precision-like), F_b = (1 + b²) α β / (b² α + β + 1e-10). The clustering is the library's
  one k-means, :func:`jaxmetrics.mauve.kmeans` (best of ``num_redo`` Lloyd restarts;
  the PRD reference code picks the best of 10 initialisations of scikit-learn's
  ``MiniBatchKMeans``), one key per run.
* FID (Fréchet distance of Gaussian fits):
  ``||μ_r - μ_e||² + Tr Σ_r + Tr Σ_e - 2 Tr (Σ_r^{1/2} Σ_e Σ_r^{1/2})^{1/2}``, the trace of the
  square root taken from the eigenvalues of that symmetric PSD product (eigh), which is
  stabler than a general ``sqrtm(Σ_r Σ_e)``; computed in float64 by default.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import PRECISION, accumulator_dtype
from jaxmetrics._validation import check_features, check_int, check_key, check_positive
from jaxmetrics.mark_evaluate.checks import check_feature_pair
from jaxmetrics.mark_evaluate.stats import mark_evaluate_stats
from jaxmetrics.results import Result, key_id, make_signature, static_field

__all__ = [
    "PrecisionRecall",
    "PRDCurve",
    "PRDFBeta",
    "improved_precision_recall",
    "prd_curve",
    "prd",
    "prd_f_beta",
    "frechet_distance",
    "fid",
]


class PrecisionRecall(Result):
    """IMPAR precision and recall (:func:`improved_precision_recall`), each in [0, 1].

    Attributes:
      precision: fraction of candidates inside some k-NN hypersphere of the references.
      recall: fraction of references inside some k-NN hypersphere of the candidates.

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(20, 3))
      >>> improved_precision_recall(references=x, candidates=x)
      PrecisionRecall(precision=1, recall=1)
    """

    precision: jax.Array
    recall: jax.Array


class PRDCurve(Result):
    """A PRD curve (:func:`prd`, :func:`prd_curve`): one point per slope ``λ = tan θ``.

    Attributes:
      precision: ``[num_angles]`` ``α(λ)`` in [0, 1].
      recall: ``[num_angles]`` ``β(λ) = α(λ) / λ`` in [0, 1].
      signature: from :func:`prd`, what the numbers depend on (static, not in the repr;
        :mod:`jaxmetrics.results`): ``metric:prd``, the ``key`` and ``num_buckets``, ``num_runs``,
        ``num_angles``, ``num_redo``, ``max_iter``; ``''`` from :func:`prd_curve` (two histograms in).
    """

    precision: jax.Array
    recall: jax.Array
    signature: str = static_field(default="", repr=False)


class PRDFBeta(Result):
    """The two summaries of a PRD curve (:func:`prd_f_beta`).

    Attributes:
      f_beta: ``max F_β`` (β = 8 by default: weighs recall, i.e. diversity).
      f_beta_inv: ``max F_{1/β}`` (weighs precision, i.e. quality).
    """

    f_beta: jax.Array
    f_beta_inv: jax.Array


# --------------------------------------------------------------------------- IMPAR
def improved_precision_recall(*, references: Any, candidates: Any, k: int = 3,
                              block_size: int | None = None) -> PrecisionRecall:
    """IMPAR precision and recall (Kynkäänniemi et al. 2019).

    ``precision = mean_{x in S_e} f(x, S_r)``, ``recall = mean_{x in S_r} f(x, S_e)`` where
    ``f(x, S) = 1`` iff ``||x - s||² <= r_k(s, S)²`` for some s (ties inside, self excluded
    from the radius by row index; duplicates are separate samples).

    Args:
      references: ``[n, d]`` S_r.
      candidates: ``[m, d]`` S_e.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      block_size: rows per distance block.

    Returns:
      :class:`PrecisionRecall` of 0-d arrays.

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(20, 3))
      >>> r = improved_precision_recall(references=x, candidates=x + 100.0)
      >>> float(r.precision), float(r.recall)
      (0.0, 0.0)
    """
    s = mark_evaluate_stats(references=references, candidates=candidates, k=k, literal=True,
                            block_size=block_size)
    f = accumulator_dtype()
    return PrecisionRecall(precision=jnp.mean(s.cross.b_in_a.astype(f)),
                           recall=jnp.mean(s.cross.a_in_b.astype(f)))


# --------------------------------------------------------------------------- PRD
def prd_curve(*, references_hist: Any, candidates_hist: Any, num_angles: int = 1001,
              epsilon: float = 1e-10) -> PRDCurve:
    """PRD curve of two histograms over the same bins.

    ``λ_i = tan(θ_i)``, ``θ = linspace(ε, π/2 - ε, num_angles)``;
    ``α(λ) = Σ min(λ P, Q)``, ``β(λ) = α(λ)/λ``, both clipped to [0, 1].

    Args:
      references_hist: ``[c]`` reference distribution P (sums to 1).
      candidates_hist: ``[c]`` candidate (evaluation) distribution Q (sums to 1).
      num_angles: number of slopes (static).
      epsilon: angle margin at both ends of (0, π/2).

    Returns:
      :class:`PRDCurve` (``precision``, ``recall``: ``[num_angles]``).

    Examples:
      >>> import jax.numpy as jnp
      >>> c = prd_curve(references_hist=jnp.array([.5, .5]), candidates_hist=jnp.array([.5, .5]),
      ...               num_angles=3)
      >>> c
      PRDCurve(precision=f32[3], recall=f32[3])
      >>> round(float(c.precision[1]), 6), round(float(c.recall[1]), 6)
      (1.0, 1.0)
    """
    p = jnp.asarray(references_hist)
    q = jnp.asarray(candidates_hist)
    if p.ndim != 1:
        raise ValueError(f"references_hist: expected a 1-D histogram, got shape {tuple(p.shape)}")
    if q.shape != p.shape:
        raise ValueError(f"candidates_hist: expected shape {tuple(p.shape)} (as references_hist), "
                         f"got {tuple(q.shape)}")
    num_angles = check_int(num_angles, "num_angles", minimum=1)
    # angles on the host in float64: in float32, pi/2 - 1e-10 rounds past pi/2 and tan < 0
    slopes = jnp.asarray(np.tan(np.linspace(epsilon, np.pi / 2 - epsilon, num_angles)), p.dtype)
    prec = jnp.sum(jnp.minimum(slopes[:, None] * p[None, :], q[None, :]), axis=1)
    rec = prec / slopes
    return PRDCurve(precision=jnp.clip(prec, 0.0, 1.0), recall=jnp.clip(rec, 0.0, 1.0))


@partial(jax.jit, static_argnames=("n_ref", "num_buckets", "num_runs", "num_angles", "num_redo",
                                   "max_iter"))
def _prd(data, key, *, n_ref, num_buckets, num_runs, num_angles, num_redo, max_iter) -> PRDCurve:
    from jaxmetrics.mauve.quantize.clustering import kmeans

    def labels(k):
        return kmeans(data, k, num_clusters=num_buckets, num_redo=num_redo, max_iter=max_iter).labels

    lab = jax.vmap(labels)(jax.random.split(key, num_runs))

    def curve(lab):
        oh = jax.nn.one_hot(lab, num_buckets, dtype=data.dtype)
        return prd_curve(references_hist=jnp.mean(oh[:n_ref], axis=0),
                         candidates_hist=jnp.mean(oh[n_ref:], axis=0), num_angles=num_angles)

    c = jax.vmap(curve)(lab)
    return PRDCurve(precision=jnp.mean(c.precision, axis=0), recall=jnp.mean(c.recall, axis=0))


def prd(*, references: Any, candidates: Any, key: jax.Array, num_buckets: int = 20,
        num_runs: int = 10, num_angles: int = 1001, num_redo: int = 10, max_iter: int = 100,
        enforce_balance: bool = True) -> PRDCurve:
    """PRD precision/recall curve (Sajjadi et al. 2018) from embeddings.

    Clusters ``S_r ∪ S_e`` into ``num_buckets`` clusters ``num_runs`` times with
    :func:`jaxmetrics.mauve.kmeans` (one key per run, split from ``key``; each run keeps
    the best of ``num_redo`` Lloyd restarts), builds the cluster histograms P of the references
    and Q of the candidates, and averages the :func:`prd_curve` of the runs.

    Args:
      references: ``[n, d]`` S_r.
      candidates: ``[m, d]`` S_e (``n == m`` unless ``enforce_balance=False``, as in the
        reference code).
      key: ``jax.random`` key (required; all randomness of the clusterings).
      num_buckets: clusters per run, k (static).
      num_runs: clusterings averaged (static).
      num_angles: points of the curve (static).
      num_redo: k-means restarts per run, the best kept (static; the reference tries 10
        initialisations).
      max_iter: maximum Lloyd iterations per restart (static; k-means stops early when the
        objective repeats).
      enforce_balance: require ``n == m``.

    Returns:
      :class:`PRDCurve` (``precision``, ``recall``: ``[num_angles]``).

    Examples:
      >>> import numpy as np, jax
      >>> x = np.random.default_rng(0).normal(size=(40, 3))
      >>> c = prd(references=x, candidates=x, key=jax.random.key(0), num_buckets=4, num_runs=2,
      ...         num_angles=11)
      >>> c
      PRDCurve(precision=f32[11], recall=f32[11])
      >>> round(float(prd_f_beta(c.precision, c.recall).f_beta), 4)
      1.0
    """
    pair = check_feature_pair(references=references, candidates=candidates, k=1)
    ref, cand = pair.references, pair.candidates
    check_key(key, "key")
    if enforce_balance and ref.shape[0] != cand.shape[0]:
        raise ValueError(
            f"candidates: PRD needs equal set sizes (got {ref.shape[0]} references and "
            f"{cand.shape[0]} candidates); subsample or pass enforce_balance=False"
        )
    for name, v in (("num_buckets", num_buckets), ("num_runs", num_runs),
                    ("num_angles", num_angles), ("num_redo", num_redo), ("max_iter", max_iter)):
        check_int(v, name, minimum=1)
    if num_buckets > ref.shape[0] + cand.shape[0]:
        raise ValueError(f"num_buckets: {num_buckets} exceeds the number of samples "
                         f"({ref.shape[0] + cand.shape[0]})")
    data = jnp.concatenate([ref, cand], axis=0)
    settings = dict(num_buckets=int(num_buckets), num_runs=int(num_runs), num_angles=int(num_angles),
                    num_redo=int(num_redo), max_iter=int(max_iter))
    curve = _prd(data, key, n_ref=ref.shape[0], **settings)
    return curve.replace(signature=make_signature("prd", key=key_id(key), **settings))


def prd_f_beta(precision: Any, recall: Any, *, beta: float = 8.0,
               epsilon: float = 1e-10) -> PRDFBeta:
    """Max F_β and max F_{1/β} of a PRD curve: ``F_b = (1+b²) p r / (b² p + r + ε)``.

    F_8 weighs recall (diversity), F_{1/8} precision (quality).

    Args:
      precision: ``[num_angles]`` curve (``PRDCurve.precision``).
      recall: ``[num_angles]`` curve (``PRDCurve.recall``).
      beta: β > 0.
      epsilon: added to the denominator.

    Returns:
      :class:`PRDFBeta` (``f_beta`` = max F_β, ``f_beta_inv`` = max F_{1/β}: 0-d arrays).

    Examples:
      >>> import jax.numpy as jnp
      >>> prd_f_beta(jnp.array([1.0, 0.5]), jnp.array([0.5, 1.0]))
      PRDFBeta(f_beta=0.984848, f_beta_inv=0.984848)
    """
    beta = check_positive(beta, "beta")
    precision = jnp.asarray(precision)
    recall = jnp.asarray(recall)

    def f(b):
        return jnp.max((1 + b**2) * precision * recall / (b**2 * precision + recall + epsilon))

    return PRDFBeta(f_beta=f(beta), f_beta_inv=f(1.0 / beta))


# --------------------------------------------------------------------------- FID
@jax.jit
def frechet_distance(mu1: jax.Array, sigma1: jax.Array, mu2: jax.Array,
                     sigma2: jax.Array) -> jax.Array:
    """Fréchet distance between N(μ1, Σ1) and N(μ2, Σ2).

    ``||μ1 - μ2||² + Tr Σ1 + Tr Σ2 - 2 Σ_i sqrt(λ_i)`` with λ the eigenvalues of the
    symmetric PSD matrix ``Σ1^{1/2} Σ2 Σ1^{1/2}`` (same spectrum as ``Σ1 Σ2``; Σ1^{1/2} by
    eigh, negative rounding-level eigenvalues clipped to 0).

    Args:
      mu1, mu2: ``[d]`` means.
      sigma1, sigma2: ``[d, d]`` symmetric PSD covariances.

    Returns:
      0-d array (>= 0 up to rounding).

    Examples:
      >>> import jax.numpy as jnp
      >>> float(frechet_distance(jnp.zeros(2), jnp.eye(2), jnp.ones(2), 4 * jnp.eye(2)))
      4.0
    """
    hi = PRECISION
    w, v = jnp.linalg.eigh((sigma1 + sigma1.T) / 2)
    s1h = jnp.matmul(v * jnp.sqrt(jnp.clip(w, 0.0)), v.T, precision=hi)
    a = jnp.matmul(jnp.matmul(s1h, sigma2, precision=hi), s1h, precision=hi)
    lam = jnp.linalg.eigvalsh((a + a.T) / 2)
    tr_covmean = jnp.sum(jnp.sqrt(jnp.clip(lam, 0.0)))
    diff = mu1 - mu2
    return jnp.dot(diff, diff, precision=hi) + jnp.trace(sigma1) + jnp.trace(sigma2) - 2.0 * tr_covmean


@jax.jit
def _gauss(x):
    mu = jnp.mean(x, axis=0)
    xc = x - mu
    return mu, jnp.matmul(xc.T, xc, precision=PRECISION) / (x.shape[0] - 1)


def fid(*, references: Any, candidates: Any, use_float64: bool = True) -> jax.Array:
    """FID between two embedding sets (mean and ddof=1 covariance of each).

    ``||μ_r - μ_c||² + Tr Σ_r + Tr Σ_c - 2 Tr (Σ_r^{1/2} Σ_c Σ_r^{1/2})^{1/2}``
    (:func:`frechet_distance` of the two Gaussian fits).

    Args:
      references: ``[n, d]``, ``n >= 2``.
      candidates: ``[m, d]``, ``m >= 2``.
      use_float64: compute in float64 (inside ``jax.enable_x64``; default) or in the inputs'
        precision.

    Returns:
      0-d array (>= 0 up to rounding).

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(50, 3))
      >>> round(float(fid(references=x, candidates=x)), 8)
      0.0
    """
    ref = check_features(references, "references", min_rows=2)
    cand = check_features(candidates, "candidates", dim=ref.shape[1], min_rows=2)
    if use_float64:
        # host copies in float64 so float64 inputs keep their precision
        ref, cand = np.asarray(ref, np.float64), np.asarray(cand, np.float64)
        with jax.enable_x64(True):
            mu1, s1 = _gauss(jnp.asarray(ref))
            mu2, s2 = _gauss(jnp.asarray(cand))
            return frechet_distance(mu1, s1, mu2, s2)
    mu1, s1 = _gauss(jnp.asarray(ref))
    mu2, s2 = _gauss(jnp.asarray(cand))
    return frechet_distance(mu1, s1, mu2, s2)
