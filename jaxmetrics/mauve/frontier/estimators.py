"""MAUVE estimators beyond quantization: k-NN, classifier and Gaussian density ratios.

The MAUVE journal paper (Pillutla et al., "MAUVE Scores for Generative Models: Theory and
Practice", JMLR 2023, arXiv 2212.14578) estimates the divergence frontier by vector quantization
(the library's quantizers), by non-parametric nearest-neighbour estimation, by classifier-based
estimation and (arXiv v1) by a parametric Gaussian approximation. Its full text could not be
read here; each estimator below is derived from the definitions and its assumptions are stated.

Every estimator returns the same thing, the log density ratio ``l = log dP/dQ`` at each sample of
both sides (:class:`LogRatios`); :func:`~jaxmetrics.mauve.frontier.divergences.mauve_from_log_ratios` turns
it into the frontier, MAUVE_f and the frontier integral (sample averages over the mixtures
``R_w = w P + (1 - w) Q``). So the engine reads: project -> estimate ``l`` -> frontier -> summary,
and the quantizers fit in as one estimator among others (:class:`QuantizedEstimator`: every row
carries its bin's ``log(p_i / q_i)``, which reproduces the histogram MAUVE exactly).

**Calibration** (``calibrate=True``, the default of the three): a noisy estimate of ``l`` inflates
every divergence (the frontier terms are convex in the ratio), so two samples of one
distribution would score well below 1. Each estimator's raw ``l`` (out-of-sample: leave-one-out
or cross-fitted) is therefore recalibrated by logistic regression of the side labels on it
(Platt scaling: ``a l + b``, ``a >= 0``, balanced sides), which estimates ``E[l | raw l]``: pure
noise gets ``a ~ 0`` (MAUVE ~ 1), a clean but shrunk estimate (k-NN's ``+1/2``) gets ``a > 1``.
Two parameters fitted on all ``N`` rows: their in-sample optimism is ``O(1/N)``.

Like the k-means quantizer, every estimator first L2-normalises the rows and projects them on
the PCA directions reaching ``explained_var`` of the variance (fitted on P and Q stacked, ``[Q;
P]``; ``normalize=False`` / ``explained_var=None`` switch these off).

* :class:`KNNEstimator` (``'knn'``): among the ``k`` nearest other rows of the pooled sample
  (Euclidean, projected space), ``k_p`` are P's and ``k_q`` Q's. The k-NN density estimates
  ``p(x) ~ k_p / (n_p' V)``, ``q(x) ~ k_q / (n_q' V)`` share the ball's volume ``V``, so
  ``l(x) = log((k_p + 1/2) / n_p') - log((k_q + 1/2) / n_q')``, with leave-one-out sizes
  (``n_p' = n_p - 1`` for a row of P) and the Krichevsky-Trofimov ``+1/2`` (as ``mauve_star``) so
  that a neighbourhood of one side gives a large finite ratio. Assumes the densities are nearly
  constant over a ball holding ``k`` points; bias grows with ``k``, variance falls as ``1/k``.
  Deterministic (no key used).
* :class:`ClassifierEstimator` (``'classifier'``): L2-penalised logistic regression telling P's
  rows (label 1) from Q's, each side weighted to half the total mass, so the logit estimates
  ``log dP/dQ`` directly (Bayes: posterior odds = prior odds x ratio; equal priors). Cross-fitted:
  the rows are split at random (``key``) into ``num_folds`` folds, stratified by side, and each
  row's logit comes from the model fitted on the other folds. Fitted by Newton's method (IRLS, a
  fixed number of steps) on standardised features. Assumes ``l`` is linear in the projected
  features (exact for two Gaussians with one covariance).
* :class:`GaussianEstimator` (``'gaussian'``): P and Q approximated by Gaussians (means and a
  pooled covariance, shrunk towards a scaled identity by ``shrinkage``; ``shared_covariance=False``
  fits one covariance per side), ``l`` the log ratio of the two Gaussian densities, cross-fitted
  like the classifier. With a shared covariance the frontier of two Gaussians depends only on
  their Mahalanobis distance and has a one-dimensional closed form
  (:func:`~jaxmetrics.mauve.frontier.divergences.gaussian_frontier`); :meth:`GaussianEstimator.mahalanobis`
  gives the fitted distance. Differentiable in the features (without the PCA).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Protocol, runtime_checkable

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import PRECISION
from jaxmetrics import _validation as V
from jaxmetrics.mark_evaluate.hyperspheres import knn_hyperspheres
from jaxmetrics.mauve.engine import fit_labels, project_features, split_counts
from jaxmetrics.mauve.frontier.divergences import mauve_from_log_ratios
from jaxmetrics.results import Result, static_field

__all__ = [
    "LogRatios",
    "MauveEstimate",
    "DensityRatioEstimator",
    "KNNEstimator",
    "ClassifierEstimator",
    "GaussianEstimator",
    "QuantizedEstimator",
    "ESTIMATORS",
    "register_estimator",
    "get_estimator",
    "available_estimators",
]

#: ``fold_in`` salt of the cross-fitting folds' key.
FOLD_SALT = 11


class LogRatios(Result):
    """Output of an estimator's ``log_ratios``: ``l = log dP/dQ`` at every sample.

    Attributes:
      p_log_ratio: ``[n_p]`` at P's rows.
      q_log_ratio: ``[n_q]`` at Q's rows.
    """

    p_log_ratio: jax.Array
    q_log_ratio: jax.Array


class MauveEstimate(Result):
    """Result of :func:`estimate_mauve`.

    Attributes:
      mauve: float, area under the divergence curve of ``divergence``.
      frontier_integral: float, Liu et al.'s (KL-based) frontier integral of the same ratios.
      divergence_curve: ``[m + 2, 2]`` float64 (end points included).
      p_log_ratio: ``[n_p]`` estimated ``log dP/dQ`` at P's rows.
      q_log_ratio: ``[n_q]`` at Q's rows.
      estimator: the estimator's name (static; ``'knn'``, ``'classifier'``, ``'gaussian'``,
        ``'quantized'``).
      divergence: the f-divergence of the curve (static).
      signature: the settings (static; :mod:`jaxmetrics.results`).
    """

    mauve: float
    frontier_integral: float
    divergence_curve: np.ndarray
    p_log_ratio: np.ndarray
    q_log_ratio: np.ndarray
    estimator: str = static_field()
    divergence: str = static_field()
    signature: str = static_field(default="", repr=False)


@runtime_checkable
class DensityRatioEstimator(Protocol):
    """Settings of an estimator; ``log_ratios`` estimates ``log dP/dQ`` at both sides' rows."""

    def log_ratios(self, *, references: Any, candidates: Any, key: jax.Array) -> LogRatios: ...


# --------------------------------------------------------------------------- shared steps


def _project(p, q, key, normalize, explained_var):
    """``[Q; P]`` stacked, L2-normalised and PCA-projected (or as given): ``z [N, m]``, ``is_p [N]``."""
    p = V.check_features(p, "references")
    q = V.check_features(q, "candidates", dim=p.shape[1])
    stacked = jnp.concatenate([jnp.asarray(q), jnp.asarray(p)], axis=0)
    if explained_var is None:
        z = stacked / jnp.linalg.norm(stacked, axis=1, keepdims=True) if normalize else stacked
        if not jnp.issubdtype(z.dtype, jnp.floating):
            z = z.astype(jnp.float32)
    else:
        z = project_features(stacked, key=key, explained_var=explained_var, normalize=normalize).z
    is_p = np.arange(stacked.shape[0]) >= q.shape[0]
    return z, jnp.asarray(is_p), int(p.shape[0]), int(q.shape[0])


def _split(l, n_q):
    return LogRatios(p_log_ratio=l[n_q:], q_log_ratio=l[:n_q])


def _folds(key, n_p, n_q, num_folds):
    """Fold id of each row of ``[Q; P]``, stratified by side (each side's rows dealt in turn)."""
    kq, kp = jax.random.split(jax.random.fold_in(key, FOLD_SALT))
    fq = jnp.argsort(jax.random.permutation(kq, n_q)) % num_folds
    fp = jnp.argsort(jax.random.permutation(kp, n_p)) % num_folds
    return jnp.concatenate([fq, fp]).astype(jnp.int32)


def _check_common(normalize, explained_var):
    if not isinstance(normalize, bool):
        raise TypeError(f"normalize: expected a bool, got {type(normalize).__name__}")
    if explained_var is not None:
        V.check_open_unit(explained_var, "explained_var")


@jax.jit
def _platt(l, is_p):
    """``a l + b`` with ``(a, b)`` minimising the side-balanced log-loss of ``sigmoid(a l + b)`` against
    the side labels (logistic recalibration, Platt 1999), ``a >= 0``. Newton on two parameters from
    ``(0, 0)`` on the standardised ratios, each step capped at length 1 (so saturated logits cannot
    throw it off)."""
    y = is_p.astype(l.dtype)
    w = jnp.where(is_p, 0.5 / jnp.sum(y), 0.5 / jnp.sum(1.0 - y))
    scale = jnp.std(l) + 1e-12
    x = jnp.stack([l / scale, jnp.ones_like(l)], axis=1)

    def step(_, ab):
        pi = jax.nn.sigmoid(jnp.matmul(x, ab, precision=PRECISION))
        g = jnp.matmul(x.T, w * (pi - y), precision=PRECISION) + 1e-8 * ab
        h = jnp.matmul((x * (w * pi * (1.0 - pi))[:, None]).T, x, precision=PRECISION) + 1e-8 * jnp.eye(2, dtype=l.dtype)
        d = jnp.linalg.solve(h, g)
        return ab - d / jnp.maximum(1.0, jnp.linalg.norm(d))

    a, b = jax.lax.fori_loop(0, 50, step, jnp.zeros(2, l.dtype))
    # a negative slope would turn the ratios' order round: an uninformative estimate gets a = b = 0
    # (with balanced sides the best intercept at a = 0 is 0)
    informative = a > 0
    return jnp.where(informative, a * x[:, 0] + b, 0.0)


def _finish(l, is_p, n_q, calibrate):
    return _split(_platt(l, is_p) if calibrate else l, n_q)


# --------------------------------------------------------------------------- k-NN


@functools.partial(jax.jit, static_argnames=("k",))
def _knn_counts(z, is_p, k):
    """Number of P rows among the ``k`` nearest other rows of every row: ``[N]`` int32 (the
    library's one k-NN pass, :func:`jaxmetrics.mark_evaluate.hyperspheres.knn_hyperspheres`)."""
    return jnp.sum(is_p[knn_hyperspheres(z, k).neighbors], axis=1, dtype=jnp.int32)


@dataclasses.dataclass(frozen=True)
class KNNEstimator:
    """k-nearest-neighbour density ratio on the pooled rows (see the module docstring).

    Args:
      k: neighbours per row (default 50: the paper's default could not be checked; the bias
        measured against the closed form falls with ``k``, see ``docs/mauve.md``).
      normalize: L2-normalise rows first.
      explained_var: PCA to this fraction of the variance (``None``: no PCA).

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve.frontier.estimators import KNNEstimator
      >>> rng = np.random.default_rng(0)
      >>> lr = KNNEstimator(k=5).log_ratios(references=rng.normal(size=(30, 4)),
      ...                                   candidates=rng.normal(size=(20, 4)) + 3, key=jax.random.key(0))
      >>> lr.p_log_ratio.shape, bool(lr.p_log_ratio.mean() > 0 > lr.q_log_ratio.mean())
      ((30,), True)
    """

    k: int = 50
    calibrate: bool = True
    normalize: bool = True
    explained_var: float | None = 0.9

    def __post_init__(self) -> None:
        V.check_int(self.k, "k", minimum=1)
        _check_common(self.normalize, self.explained_var)

    def log_ratios(self, *, references: Any, candidates: Any, key: jax.Array) -> LogRatios:
        """``log dP/dQ`` at P's rows ``[n_p]`` and Q's rows ``[n_q]``. Deterministic: ``key`` is
        required like every estimator's but draws nothing (the PCA uses all rows)."""
        V.check_key(key)
        z, is_p, n_p, n_q = _project(references, candidates, key, self.normalize, self.explained_var)
        if self.k > n_p + n_q - 1:
            raise ValueError(f"k: {self.k} neighbours for only {n_p + n_q} rows")
        kp = _knn_counts(z, is_p, self.k).astype(jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
        kq = self.k - kp
        isp = is_p.astype(kp.dtype)
        l = (jnp.log(kp + 0.5) - jnp.log(n_p - isp)) - (jnp.log(kq + 0.5) - jnp.log(n_q - (1.0 - isp)))
        return _finish(l, is_p, n_q, self.calibrate)


# --------------------------------------------------------------------------- classifier


def _standardize(z):
    mu = jnp.mean(z, axis=0)
    sd = jnp.std(z, axis=0)
    return (z - mu) / jnp.where(sd > 0, sd, 1.0)


@functools.partial(jax.jit, static_argnames=("num_folds", "num_iterations"))
def _crossfit_logistic(z, is_p, folds, l2, num_folds, num_iterations):
    x = jnp.concatenate([_standardize(z), jnp.ones((z.shape[0], 1), z.dtype)], axis=1)  # intercept last
    y = is_p.astype(z.dtype)
    n_p, n_q = jnp.sum(y), jnp.sum(1.0 - y)
    side_w = jnp.where(is_p, 0.5 / n_p, 0.5 / n_q)
    pen = jnp.ones(x.shape[1], z.dtype).at[-1].set(0.0) * l2

    def fit(f):
        w = side_w * (folds != f)
        w = w / jnp.sum(w)

        def step(_, beta):
            s = jnp.matmul(x, beta, precision=PRECISION)
            pi = jax.nn.sigmoid(s)
            g = jnp.matmul(x.T, w * (pi - y), precision=PRECISION) + pen * beta
            h = jnp.matmul((x * (w * pi * (1.0 - pi))[:, None]).T, x, precision=PRECISION) + jnp.diag(pen) + 1e-10 * jnp.eye(x.shape[1], dtype=z.dtype)
            return beta - jnp.linalg.solve(h, g)

        beta = jax.lax.fori_loop(0, num_iterations, step, jnp.zeros(x.shape[1], z.dtype))
        return jnp.matmul(x, beta, precision=PRECISION)

    logits = jax.vmap(fit)(jnp.arange(num_folds))  # [F, N]
    return jnp.take_along_axis(logits, folds[None, :], axis=0)[0]


@dataclasses.dataclass(frozen=True)
class ClassifierEstimator:
    """Cross-fitted logistic regression; its logit is the log density ratio (module docstring).

    Args:
      num_folds: cross-fitting folds (>= 2); each row is scored by the model fitted without its fold.
      l2: L2 penalty on the weights (not the intercept), added to the balanced mean log-loss, on
        standardised features.
      num_iterations: Newton steps (fixed count; the penalised log-loss is strictly convex).
      normalize, explained_var: as :class:`KNNEstimator`.

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve.frontier.estimators import ClassifierEstimator
      >>> rng = np.random.default_rng(0)
      >>> est = ClassifierEstimator(num_folds=2)
      >>> lr = est.log_ratios(references=rng.normal(size=(40, 4)), candidates=rng.normal(size=(40, 4)) + 2,
      ...                     key=jax.random.key(0))
      >>> bool(lr.p_log_ratio.mean() > 0 > lr.q_log_ratio.mean())
      True
    """

    num_folds: int = 5
    l2: float = 0.01
    num_iterations: int = 15
    calibrate: bool = True
    normalize: bool = True
    explained_var: float | None = 0.9

    def __post_init__(self) -> None:
        V.check_int(self.num_folds, "num_folds", minimum=2)
        V.check_positive(self.l2, "l2")
        V.check_int(self.num_iterations, "num_iterations", minimum=1)
        _check_common(self.normalize, self.explained_var)

    def log_ratios(self, *, references: Any, candidates: Any, key: jax.Array) -> LogRatios:
        """Cross-fitted logits at P's rows ``[n_p]`` and Q's rows ``[n_q]``; ``key`` draws the folds."""
        V.check_key(key)
        z, is_p, n_p, n_q = _project(references, candidates, key, self.normalize, self.explained_var)
        if min(n_p, n_q) < self.num_folds:
            raise ValueError(f"num_folds: {self.num_folds} folds for only {min(n_p, n_q)} rows on a side")
        folds = _folds(key, n_p, n_q, self.num_folds)
        l = _crossfit_logistic(z, is_p, folds, jnp.asarray(self.l2, z.dtype), self.num_folds, self.num_iterations)
        return _finish(l, is_p, n_q, self.calibrate)


# --------------------------------------------------------------------------- Gaussian


def _shrunk(cov, s):
    m = cov.shape[0]
    scale = jnp.trace(cov) / m
    return (1.0 - s) * cov + s * scale * jnp.eye(m, dtype=cov.dtype)


def _gauss_fit(z, is_p, w_rows, shrinkage, shared):
    """Means, (shrunk) covariances of the weighted rows of each side."""
    wp = w_rows * is_p
    wq = w_rows * (~is_p)
    wp, wq = wp / jnp.sum(wp), wq / jnp.sum(wq)
    mp, mq = jnp.matmul(wp, z, precision=PRECISION), jnp.matmul(wq, z, precision=PRECISION)
    cp = jnp.matmul(((z - mp) * wp[:, None]).T, z - mp, precision=PRECISION)
    cq = jnp.matmul(((z - mq) * wq[:, None]).T, z - mq, precision=PRECISION)
    if shared:
        cp = cq = 0.5 * (cp + cq)
    return mp, mq, _shrunk(cp, shrinkage), _shrunk(cq, shrinkage)


def _gauss_log_ratio(x, mp, mq, cp, cq):
    def logpdf(m, c):
        chol = jnp.linalg.cholesky(c)
        sol = jax.scipy.linalg.solve_triangular(chol, (x - m).T, lower=True)
        return -0.5 * jnp.sum(sol * sol, axis=0) - jnp.sum(jnp.log(jnp.diag(chol)))

    return logpdf(mp, cp) - logpdf(mq, cq)


@functools.partial(jax.jit, static_argnames=("num_folds", "shared"))
def _crossfit_gaussian(z, is_p, folds, shrinkage, num_folds, shared):
    def fit(f):
        mp, mq, cp, cq = _gauss_fit(z, is_p, (folds != f).astype(z.dtype), shrinkage, shared)
        return _gauss_log_ratio(z, mp, mq, cp, cq)

    l = jax.lax.map(fit, jnp.arange(num_folds))  # [F, N]
    return jnp.take_along_axis(l, folds[None, :], axis=0)[0]


@dataclasses.dataclass(frozen=True)
class GaussianEstimator:
    """Parametric: P and Q as Gaussians, ``l`` the log ratio of their densities (module docstring).

    Args:
      shrinkage: covariance shrinkage ``s`` in (0, 1) (> 0: the PCA's padding columns are
        constant): ``(1 - s) S + s tr(S)/m I``.
      shared_covariance: one pooled covariance (linear ``l``, the closed-form frontier of
        :func:`~jaxmetrics.mauve.frontier.divergences.gaussian_frontier`) or one per side (quadratic ``l``).
      num_folds: cross-fitting folds (>= 2), or 1 to score the rows with the Gaussians fitted on
        all of them (in-sample: biased towards larger divergences).
      normalize, explained_var: as :class:`KNNEstimator`.

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve.frontier.estimators import GaussianEstimator
      >>> rng = np.random.default_rng(0)
      >>> est = GaussianEstimator(normalize=False, explained_var=None)
      >>> lr = est.log_ratios(references=rng.normal(size=(400, 3)),
      ...                     candidates=rng.normal(size=(400, 3)) + [1.0, 0, 0], key=jax.random.key(0))
      >>> round(float(est.mahalanobis(references=rng.normal(size=(4000, 3)),
      ...                             candidates=rng.normal(size=(4000, 3)) + [1.0, 0, 0])), 1)
      1.0
    """

    shrinkage: float = 0.1
    shared_covariance: bool = True
    num_folds: int = 5
    calibrate: bool = True
    normalize: bool = True
    explained_var: float | None = 0.9

    def __post_init__(self) -> None:
        if not (isinstance(self.shrinkage, (int, float)) and 0.0 < self.shrinkage < 1.0):
            raise ValueError(f"shrinkage: expected a number in (0, 1), got {self.shrinkage!r}")
        if not isinstance(self.shared_covariance, bool):
            raise TypeError(f"shared_covariance: expected a bool, got {type(self.shared_covariance).__name__}")
        V.check_int(self.num_folds, "num_folds", minimum=1)
        _check_common(self.normalize, self.explained_var)

    def log_ratios(self, *, references: Any, candidates: Any, key: jax.Array) -> LogRatios:
        """Cross-fitted Gaussian log ratios at P's rows ``[n_p]`` and Q's ``[n_q]``; ``key`` draws the folds."""
        V.check_key(key)
        z, is_p, n_p, n_q = _project(references, candidates, key, self.normalize, self.explained_var)
        if min(n_p, n_q) < max(2, self.num_folds):
            raise ValueError(f"num_folds: {self.num_folds} folds for only {min(n_p, n_q)} rows on a side")
        folds = _folds(key, n_p, n_q, self.num_folds) if self.num_folds > 1 else jnp.full(n_p + n_q, -1, jnp.int32)
        if self.num_folds == 1:
            mp, mq, cp, cq = _gauss_fit(z, is_p, jnp.ones(z.shape[0], z.dtype), self.shrinkage, self.shared_covariance)
            l = _gauss_log_ratio(z, mp, mq, cp, cq)
        else:
            l = _crossfit_gaussian(z, is_p, folds, jnp.asarray(self.shrinkage, z.dtype), self.num_folds,
                                   self.shared_covariance)
        return _finish(l, is_p, n_q, self.calibrate)

    def mahalanobis(self, *, references: Any, candidates: Any) -> jax.Array:
        """Mahalanobis distance of the two fitted means under the pooled (shrunk) covariance, on all
        rows, as a 0-d array; with it :func:`~jaxmetrics.mauve.frontier.divergences.gaussian_frontier` gives the
        Gaussian approximation's frontier in closed form."""
        z, is_p, _, _ = _project(references, candidates, jax.random.key(0), self.normalize, self.explained_var)
        mp, mq, c, _ = _gauss_fit(z, is_p, jnp.ones(z.shape[0], z.dtype), self.shrinkage, True)
        d = mp - mq
        return jnp.sqrt(jnp.matmul(d, jnp.linalg.solve(c, d), precision=PRECISION))


# --------------------------------------------------------------------------- quantized


@dataclasses.dataclass(frozen=True)
class QuantizedEstimator:
    """Vector quantization as a density-ratio estimator: each row carries its bin's ``log(p_i / q_i)``.

    The quantizer (``'kmeans'`` or another registered name, or an instance) is fitted on ``[Q; P]``
    with ``key`` exactly as :func:`~jaxmetrics.mauve.compute_mauve` fits it with
    ``key = jax.random.key(seed)``, so the frontier of these ratios is ``compute_mauve``'s
    (``mauve``, not the smoothed ``mauve_star``).

    Args:
      quantizer: a registered quantizer name or a :class:`~jaxmetrics.mauve.Quantizer`.
      num_buckets: ``'auto'`` (``max(2, round(min(n_p, n_q) / 10))``) or a number of bins; used
        when ``quantizer`` is a name.

    Examples:
      >>> import jax, numpy as np
      >>> from jaxmetrics.mauve.frontier.estimators import QuantizedEstimator
      >>> rng = np.random.default_rng(0)
      >>> lr = QuantizedEstimator().log_ratios(references=rng.normal(size=(50, 4)),
      ...                                      candidates=rng.normal(size=(50, 4)), key=jax.random.key(0))
      >>> lr.p_log_ratio.shape
      (50,)
    """

    quantizer: Any = "kmeans"
    num_buckets: int | str = "auto"

    def log_ratios(self, *, references: Any, candidates: Any, key: jax.Array) -> LogRatios:
        """Per-row ``log(p_hist[bin] / q_hist[bin])`` (``+-inf`` in a bin one side leaves empty)."""
        from jaxmetrics.mauve.quantize.quantizers import get_quantizer
        from jaxmetrics.mauve.sizes import resolve_num_buckets

        V.check_key(key)
        p = np.asarray(V.check_features(references, "references"))
        q = np.asarray(V.check_features(candidates, "candidates", dim=p.shape[1]))
        k = resolve_num_buckets(self.num_buckets, (p.shape[0], q.shape[0]), ("references", "candidates"))
        quant = get_quantizer(self.quantizer, k)
        fit = fit_labels(quant, np.concatenate([q, p]), key=key)
        nb = int(fit.fitted.num_bins)
        labels = np.asarray(fit.labels)
        q_counts, p_counts = split_counts(labels, (q.shape[0], p.shape[0]), nb)
        with np.errstate(divide="ignore"):
            per_bin = np.log(p_counts / p.shape[0]) - np.log(q_counts / q.shape[0])
        l = per_bin[labels]
        return _split(jnp.asarray(l), q.shape[0])


# --------------------------------------------------------------------------- registry and pipeline

ESTIMATORS: dict[str, Callable[..., Any]] = {
    "knn": KNNEstimator,
    "classifier": ClassifierEstimator,
    "gaussian": GaussianEstimator,
    "quantized": QuantizedEstimator,
}


def register_estimator(name: str, factory: Callable[..., Any]) -> None:
    """Register ``factory(**kwargs) -> estimator`` (an object with
    ``log_ratios(*, references, candidates, key)``) under ``name``.

    Examples:
      >>> from jaxmetrics.mauve.frontier.estimators import register_estimator, get_estimator, KNNEstimator, ESTIMATORS
      >>> register_estimator("knn5", lambda **kw: KNNEstimator(k=5, **kw))
      >>> get_estimator("knn5").k
      5
      >>> _ = ESTIMATORS.pop("knn5")
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name: expected a non-empty string, got {name!r}")
    if not callable(factory):
        raise TypeError(f"factory: expected a callable, got {type(factory).__name__}")
    ESTIMATORS[name] = factory


def available_estimators() -> list[str]:
    """Names :func:`get_estimator` accepts, sorted.

    Examples:
      >>> from jaxmetrics.mauve.frontier.estimators import available_estimators
      >>> available_estimators()
      ['classifier', 'gaussian', 'knn', 'quantized']
    """
    return sorted(ESTIMATORS)


def get_estimator(estimator: Any, **kwargs: Any) -> Any:
    """Resolve ``estimator`` (a registered name, with ``kwargs`` for its settings, or an instance).

    Examples:
      >>> from jaxmetrics.mauve.frontier.estimators import get_estimator
      >>> get_estimator("knn", k=10)
      KNNEstimator(k=10, calibrate=True, normalize=True, explained_var=0.9)
    """
    if isinstance(estimator, str):
        if estimator not in ESTIMATORS:
            raise ValueError(f"estimator: unknown name {estimator!r}; registered: {available_estimators()}")
        return ESTIMATORS[estimator](**kwargs)
    if not callable(getattr(estimator, "log_ratios", None)):
        raise TypeError("estimator: expected a name or an object with log_ratios(*, references, candidates, key), "
                        f"got {type(estimator).__name__}")
    return estimator

