"""Baselines used by the Mark-Evaluate paper: IMPAR, PRD and FID, on embeddings.

* IMPAR (Kynkäänniemi et al. 2019): precision = mean_{x in S_e} f(x, S_r),
  recall = mean_{x in S_r} f(x, S_e), with the k-NN hyperspheres of
  :mod:`jaxmetrics.mark_evaluate.hyperspheres` (k = 3 by default).
* PRD (Sajjadi et al. 2018): cluster S_r ∪ S_e into 20 clusters, histograms P (refs) and
  Q (evals) over clusters, and for λ = tan(θ), θ in a 1001-point grid of (0, π/2):
  α(λ) = Σ_ω min(λ P(ω), Q(ω)) (precision), β(λ) = α(λ)/λ (recall); the curves are
  averaged over 10 clusterings; summaries max F_8 (recall-like) and max F_{1/8}
  (precision-like), F_b = (1 + b²) α β / (b² α + β + 1e-10).
* FID (Fréchet distance of Gaussian fits):
  ``||μ_r - μ_e||² + Tr Σ_r + Tr Σ_e - 2 Tr (Σ_r^{1/2} Σ_e Σ_r^{1/2})^{1/2}``, the trace of the
  square root taken from the eigenvalues of that symmetric PSD product (eigh), which is
  stabler than a general ``sqrtm(Σ_r Σ_e)``; computed in float64 by default.
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmetrics._validation import as_2d_features
from jaxmetrics.mark_evaluate.estimators import (
    _check_features,
    _float,
    check_feature_pair,
    mark_evaluate_stats,
)
from jaxmetrics.mark_evaluate.hyperspheres import squared_distances

__all__ = [
    "improved_precision_recall",
    "kmeans",
    "prd_curve",
    "prd",
    "prd_f_beta",
    "frechet_distance",
    "fid",
]


# --------------------------------------------------------------------------- IMPAR
def improved_precision_recall(references, candidates, k: int = 3, *,
                              block_size: int | None = None):
    """IMPAR precision and recall (Kynkäänniemi et al. 2019).

    ``precision = mean_{x in S_e} f(x, S_r)``, ``recall = mean_{x in S_r} f(x, S_e)`` where
    ``f(x, S) = 1`` iff ``||x - s||² <= r_k(s, S)²`` for some s (ties inside, self excluded
    from the radius by row index; duplicates are separate samples).

    Args:
      references: ``[n, d]``; candidates: ``[m, d]``; k: neighbourhood size (< n, m).

    Returns:
      ``(precision, recall)`` scalar arrays.

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(20, 3))
      >>> [float(v) for v in improved_precision_recall(x, x)]
      [1.0, 1.0]
    """
    s = mark_evaluate_stats(references, candidates, k, block_size=block_size)
    f = _float()
    return jnp.mean(s.cross.b_in_a.astype(f)), jnp.mean(s.cross.a_in_b.astype(f))


# --------------------------------------------------------------------------- k-means
# A small seeded k-means written here: the PRD reference uses scikit-learn's unseeded
# MiniBatchKMeans, we need a pure, jit-able, key-driven one; ott-jax has no k-means, and the
# MAUVE helper's k-means was not committed when this module was written.
@partial(jax.jit, static_argnames=("num_clusters", "num_iters"))
def kmeans(x: jax.Array, key: jax.Array, num_clusters: int, num_iters: int = 50):
    """Lloyd k-means with k-means++ seeding; returns ``(centroids [c, d], labels [n])``.

    Seeding picks each next centre with probability proportional to the squared distance to
    the nearest chosen centre; then ``num_iters`` Lloyd steps (empty clusters keep their
    centre). Deterministic for a given key.

    Args:
      x: ``[n, d]`` data; key: ``jax.random`` key; num_clusters, num_iters: static.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jnp.array([[0.], [0.1], [10.], [10.1]])
      >>> c, lab = kmeans(x, jax.random.key(0), num_clusters=2)
      >>> bool(lab[0] == lab[1]) and bool(lab[2] == lab[3]) and bool(lab[0] != lab[2])
      True
    """
    n = x.shape[0]
    x_sq = jnp.sum(x * x, axis=-1)
    k0, key = jax.random.split(key)
    first = jax.random.randint(k0, (), 0, n)
    cent = jnp.zeros((num_clusters, x.shape[1]), x.dtype).at[0].set(x[first])
    dmin = squared_distances(x, x[first][None, :], x_sq)[:, 0]

    def seed(i, state):
        cent, dmin, key = state
        key, sub = jax.random.split(key)
        total = jnp.sum(dmin)
        p = jnp.where(total > 0, dmin / jnp.where(total > 0, total, 1.0), 1.0 / n)
        j = jax.random.choice(sub, n, p=p)
        cent = cent.at[i].set(x[j])
        dmin = jnp.minimum(dmin, squared_distances(x, x[j][None, :], x_sq)[:, 0])
        return cent, dmin, key

    cent, _, _ = lax.fori_loop(1, num_clusters, seed, (cent, dmin, key))

    def lloyd(_, cent):
        lab = jnp.argmin(squared_distances(x, cent, x_sq), axis=1)
        onehot = jax.nn.one_hot(lab, num_clusters, dtype=x.dtype)
        cnt = jnp.sum(onehot, axis=0)
        s = onehot.T @ x
        return jnp.where(cnt[:, None] > 0, s / jnp.maximum(cnt, 1)[:, None], cent)

    cent = lax.fori_loop(0, num_iters, lloyd, cent)
    lab = jnp.argmin(squared_distances(x, cent, x_sq), axis=1)
    return cent, lab


# --------------------------------------------------------------------------- PRD
def prd_curve(ref_hist: jax.Array, eval_hist: jax.Array, num_angles: int = 1001,
              epsilon: float = 1e-10):
    """PRD curve of two histograms: ``(precision [num_angles], recall [num_angles])``.

    ``λ_i = tan(θ_i)``, ``θ = linspace(ε, π/2 - ε, num_angles)``;
    ``α(λ) = Σ min(λ P, Q)``, ``β(λ) = α(λ)/λ``, both clipped to [0, 1].

    Args:
      ref_hist: ``[c]`` reference distribution P; eval_hist: ``[c]`` evaluation
      distribution Q (each summing to 1); num_angles: static.

    Examples:
      >>> import jax.numpy as jnp
      >>> p, r = prd_curve(jnp.array([.5, .5]), jnp.array([.5, .5]), num_angles=3)
      >>> round(float(p[1]), 6), round(float(r[1]), 6)
      (1.0, 1.0)
    """
    # angles on the host in float64: in float32, pi/2 - 1e-10 rounds past pi/2 and tan < 0
    slopes = jnp.asarray(np.tan(np.linspace(epsilon, np.pi / 2 - epsilon, num_angles)),
                         ref_hist.dtype)
    prec = jnp.sum(jnp.minimum(slopes[:, None] * ref_hist[None, :], eval_hist[None, :]), axis=1)
    rec = prec / slopes
    return jnp.clip(prec, 0.0, 1.0), jnp.clip(rec, 0.0, 1.0)


@partial(jax.jit, static_argnames=("n_ref", "num_clusters", "num_runs", "num_angles", "num_iters"))
def _prd(data, key, n_ref, num_clusters, num_runs, num_angles, num_iters):
    keys = jax.random.split(key, num_runs)
    _, labels = jax.vmap(lambda kk: kmeans(data, kk, num_clusters, num_iters))(keys)

    def curve(lab):
        oh = jax.nn.one_hot(lab, num_clusters, dtype=data.dtype)
        p = jnp.mean(oh[:n_ref], axis=0)
        q = jnp.mean(oh[n_ref:], axis=0)
        return prd_curve(p, q, num_angles)

    prec, rec = jax.vmap(curve)(labels)
    return jnp.mean(prec, axis=0), jnp.mean(rec, axis=0)


def prd(references, candidates, key=None, *, num_clusters: int = 20, num_runs: int = 10,
        num_angles: int = 1001, num_iters: int = 50, enforce_balance: bool = True):
    """PRD precision/recall curves (Sajjadi et al. 2018) from embeddings.

    Clusters ``S_r ∪ S_e`` ``num_runs`` times (seeded k-means, one key per run), builds the
    cluster histograms, and averages the :func:`prd_curve` of each run.

    Args:
      references: ``[n, d]``; candidates: ``[m, d]`` (``n == m`` unless
        ``enforce_balance=False``, as in the reference code).
      key: ``jax.random`` key (default ``jax.random.key(0)``).
      num_clusters, num_runs, num_angles, num_iters: static settings.

    Returns:
      ``(precision [num_angles], recall [num_angles])``.

    Examples:
      >>> import numpy as np, jax
      >>> x = np.random.default_rng(0).normal(size=(40, 3))
      >>> p, r = prd(x, x, jax.random.key(0), num_clusters=4, num_runs=2, num_angles=11)
      >>> round(float(prd_f_beta(p, r)[0]), 4)
      1.0
    """
    ref, cand = check_feature_pair(references, candidates, 1)
    if enforce_balance and ref.shape[0] != cand.shape[0]:
        raise ValueError(
            f"candidates: PRD needs equal set sizes (got {ref.shape[0]} references and "
            f"{cand.shape[0]} candidates); subsample or pass enforce_balance=False"
        )
    for name, v in (("num_clusters", num_clusters), ("num_runs", num_runs),
                    ("num_angles", num_angles), ("num_iters", num_iters)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name}: must be a positive integer, got {v!r}")
    if num_clusters > ref.shape[0] + cand.shape[0]:
        raise ValueError(f"num_clusters: {num_clusters} exceeds the number of samples")
    if key is None:
        key = jax.random.key(0)
    data = jnp.concatenate([ref, cand], axis=0)
    return _prd(data, key, ref.shape[0], int(num_clusters), int(num_runs), int(num_angles),
                int(num_iters))


def prd_f_beta(precision, recall, beta: float = 8.0, epsilon: float = 1e-10):
    """Max F_β and max F_{1/β} of a PRD curve: ``F_b = (1+b²) p r / (b² p + r + ε)``.

    F_8 weighs recall (diversity), F_{1/8} precision (quality).

    Args:
      precision, recall: ``[num_angles]`` curves; beta: β > 0.

    Returns:
      ``(max F_β, max F_{1/β})``.

    Examples:
      >>> import jax.numpy as jnp
      >>> [round(float(v), 4) for v in prd_f_beta(jnp.array([1.0, 0.5]), jnp.array([0.5, 1.0]))]
      [0.9848, 0.9848]
    """
    if not beta > 0:
        raise ValueError(f"beta: must be > 0, got {beta!r}")
    precision = jnp.asarray(precision)
    recall = jnp.asarray(recall)

    def f(b):
        return jnp.max((1 + b**2) * precision * recall / (b**2 * precision + recall + epsilon))

    return f(beta), f(1.0 / beta)


# --------------------------------------------------------------------------- FID
@jax.jit
def frechet_distance(mu1, sigma1, mu2, sigma2):
    """Fréchet distance between N(μ1, Σ1) and N(μ2, Σ2).

    ``||μ1 - μ2||² + Tr Σ1 + Tr Σ2 - 2 Σ_i sqrt(λ_i)`` with λ the eigenvalues of the
    symmetric PSD matrix ``Σ1^{1/2} Σ2 Σ1^{1/2}`` (same spectrum as ``Σ1 Σ2``; Σ1^{1/2} by
    eigh, negative rounding-level eigenvalues clipped to 0).

    Args:
      mu1, mu2: ``[d]``; sigma1, sigma2: ``[d, d]`` symmetric PSD.

    Examples:
      >>> import jax.numpy as jnp
      >>> float(frechet_distance(jnp.zeros(2), jnp.eye(2), jnp.ones(2), 4 * jnp.eye(2)))
      4.0
    """
    hi = lax.Precision.HIGHEST
    w, v = jnp.linalg.eigh((sigma1 + sigma1.T) / 2)
    s1h = (v * jnp.sqrt(jnp.clip(w, 0.0))) @ v.T
    a = jnp.matmul(jnp.matmul(s1h, sigma2, precision=hi), s1h, precision=hi)
    lam = jnp.linalg.eigvalsh((a + a.T) / 2)
    tr_covmean = jnp.sum(jnp.sqrt(jnp.clip(lam, 0.0)))
    diff = mu1 - mu2
    return diff @ diff + jnp.trace(sigma1) + jnp.trace(sigma2) - 2.0 * tr_covmean


@jax.jit
def _gauss(x):
    mu = jnp.mean(x, axis=0)
    xc = x - mu
    return mu, jnp.matmul(xc.T, xc, precision=lax.Precision.HIGHEST) / (x.shape[0] - 1)


def fid(references, candidates, *, float64: bool = True):
    """FID between two embedding sets (mean and ddof=1 covariance of each).

    Args:
      references: ``[n, d]``; candidates: ``[m, d]``; n, m >= 2.
      float64: compute in float64 (inside ``jax.enable_x64``; default) or in the inputs'
        precision.

    Returns:
      scalar array (>= 0 up to rounding).

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(50, 3))
      >>> round(float(fid(x, x)), 8)
      0.0
    """
    if float64:
        # validated on the host so float64 inputs keep their precision
        ref = as_2d_features(references, "references").astype(np.float64)
        cand = as_2d_features(candidates, "candidates").astype(np.float64)
    else:
        ref, cand = _check_features(references, "references"), _check_features(candidates, "candidates")
    if ref.shape[1] != cand.shape[1]:
        raise ValueError(f"candidates: feature dimension {cand.shape[1]} does not match "
                         f"references' {ref.shape[1]}")
    for name, a in (("references", ref), ("candidates", cand)):
        if a.shape[0] < 2:
            raise ValueError(f"{name}: need at least 2 samples for a covariance, got {a.shape[0]}")
    if float64:
        with jax.enable_x64(True):
            mu1, s1 = _gauss(jnp.asarray(ref))
            mu2, s2 = _gauss(jnp.asarray(cand))
            return frechet_distance(mu1, s1, mu2, s2)
    mu1, s1 = _gauss(ref)
    mu2, s2 = _gauss(cand)
    return frechet_distance(mu1, s1, mu2, s2)
