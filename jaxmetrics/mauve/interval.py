"""MAUVE with confidence intervals: the sampling spread and the quantization spread, apart.

A MAUVE value has two sources of spread, and users of mauve-text see only the second:

* **sampling**: another draw of ``n`` human and ``n`` model texts gives another value. Measured
  by the bootstrap (:func:`jaxmetrics.confidence_interval`): the rows of each side are
  resampled with replacement, each row keeping the cluster every seed's quantizer gave it, and
  the seed mean of MAUVE and of the frontier integral is computed from the resampled bin counts
  (float64, exactly as :func:`~jaxmetrics.mauve.compute_mauve` scores counts), all resamples in
  one vmapped computation. The quantizers are fitted once: refitting k-means per resample
  would cost ``num_resamples`` fits.
* **quantization**: another k-means seed on the same rows gives another value. Measured by
  fitting the quantizer once per seed of ``seeds`` (each value equals
  ``compute_mauve(..., seed=s)``); the seed mean carries ``seed_std / sqrt(S)`` of it.

What the interval covers: MAUVE is a plug-in estimator, biased at a finite ``n`` (fewer points
per bin inflate the divergences), so the interval is for the estimator's value at this ``n``
and this ``k`` — the mean MAUVE over many draws of ``n`` rows per side, the number two systems
evaluated at the same size are compared by — not for a population MAUVE that no finite sample
reaches. The reported value ``θ̄`` is the mean over the seeds (``compute_mauve_seeds``'
``mauve_mean``). Its deviation from that target has a sampling part, approximated by the
bootstrap deviations ``θ* - mean(θ*)`` and reflected (``θ̄ - q_{1-α/2}(θ* - mean θ*)`` below,
``θ̄ - q_{α/2}(θ* - mean θ*)`` above: the bootstrap's spread and skew around the estimate,
without its bias), and a quantization part ``z * seed_std / sqrt(S)`` (``z`` the normal
quantile of the confidence); each side of the interval adds the two in quadrature, and the
bounds are clipped to ``[0, 1]``, the range of both scores. A
bias-correcting interval such as BCa aims at the infinite-sample value instead, and with
MAUVE's large bias at small ``n`` it collapses onto the bootstrap's upper tail.

Coverage on real text (``tests/mauve/test_mauve_interval.py``, all-MiniLM-L6-v2 features of
Shakespeare sentences against a half-degraded set, 200 rows per side, k = 20, the target
estimated by the mean over all draws): three seeds covered it in 91 % of 45 disjoint draws
(nominal 95 %). With one seed there is no measure of the quantization spread and the interval
is too narrow (83 % of 60 draws): give three seeds or more.
"""
from __future__ import annotations

from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtri

from jaxmetrics import _validation as V
from jaxmetrics.confidence import Interval, confidence_interval
from jaxmetrics.mauve.compute import _prepare, _signature
from jaxmetrics.mauve.engine import fit_labels, mauve_scores, split_counts
from jaxmetrics.mauve.histograms import mauve_from_counts
from jaxmetrics.numerics import mean_std
from jaxmetrics.results import Result, static_field
from jaxmetrics.signature import extend_signature

__all__ = ["MauveInterval", "compute_mauve_interval"]

#: folded into ``jax.random.key(seeds[0])`` for the bootstrap's resampling key
BOOTSTRAP_SALT = 0xB007


class MauveInterval(Result):
    """MAUVE and the frontier integral with their sampling intervals, and the spread over k-means
    seeds (:func:`compute_mauve_interval`).

    Attributes:
      mauve: :class:`~jaxmetrics.confidence.Interval` of MAUVE: ``value`` is the mean over the
        seeds (``compute_mauve_seeds(...).mauve_mean``), the bounds combine both spreads.
      frontier_integral: the same for the frontier integral.
      seed_mauve: ``[S]`` MAUVE of each seed, ``compute_mauve(..., seed=s).mauve``, float64.
      seed_frontier_integral: ``[S]`` frontier integral of each seed.
      seed_std: sample standard deviation of ``seed_mauve`` (``ddof=1``; 0 for one seed): the
        quantization spread of one value.
      sampling_standard_error: the bootstrap standard error of the seed mean of MAUVE: the
        sampling spread.
      num_buckets: ``k`` (static).
      seeds: the seeds (static).
      pooling, signature: as in :class:`~jaxmetrics.mauve.MauveOutput` (static).
    """

    mauve: Interval
    frontier_integral: Interval
    seed_mauve: np.ndarray
    seed_frontier_integral: np.ndarray
    seed_std: float
    sampling_standard_error: float
    num_buckets: int = static_field()
    seeds: tuple[int, ...] = static_field()
    pooling: str | None = static_field(default=None)
    signature: str = static_field(default="", repr=False)


def compute_mauve_interval(
    p_features: Any = None,
    q_features: Any = None,
    *,
    seeds: Sequence[int] = (25, 26, 27, 28, 29),
    num_resamples: int = 1000,
    confidence: float = 0.95,
    p_tokens: Sequence[Any] | None = None,
    q_tokens: Sequence[Any] | None = None,
    p_text: Sequence[str] | None = None,
    q_text: Sequence[str] | None = None,
    num_buckets: int | str = "auto",
    pca_max_data: int = -1,
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    featurize_model_name: str = "gpt2-large",
    max_text_length: int = 1024,
    divergence_curve_discretization_size: int = 25,
    mauve_scaling_factor: float = 5,
    batch_size: int = 16,
    model: Any = None,
    quantizer: Any = "kmeans",
    scoring: str = "mauve-text",
    pooling: str = "last",
    dtype: Any = None,
) -> MauveInterval:
    """MAUVE with a bootstrap interval over the rows and its spread over k-means seeds.

    See the module docstring for what each spread measures and what the interval covers. The
    bootstrap (:func:`~jaxmetrics.confidence_interval`) resamples ``num_resamples`` times the
    ``n_p`` rows of P and, independently, the ``n_q`` rows of Q (key
    ``fold_in(jax.random.key(seeds[0]), BOOTSTRAP_SALT)``); each resample costs only a
    count-level MAUVE, so thousands are cheap next to one k-means.

    Args:
      p_features, q_features: as in :func:`~jaxmetrics.mauve.compute_mauve` (P = human text).
      seeds: integer seeds of the quantizer, one fit each; ``seeds[0]`` also labels the rows of
        the bootstrap and seeds its resampling.
      num_resamples: bootstrap resamples ``B >= 2``.
      confidence: nominal coverage in ``(0, 1)``.
      p_tokens, q_tokens, p_text, q_text, num_buckets, pca_max_data, kmeans_explained_var,
      kmeans_num_redo, kmeans_max_iter, featurize_model_name, max_text_length,
      divergence_curve_discretization_size, mauve_scaling_factor, batch_size, model, quantizer,
      scoring, pooling, dtype: as in :func:`~jaxmetrics.mauve.compute_mauve` (``dtype``: the
        featurizer's compute dtype, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own).

    Returns:
      :class:`MauveInterval` (the intervals' ``method`` is ``'reflected'``).

    Examples:
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> p = rng.normal(size=(300, 16)).astype("float32")
      >>> q = (rng.normal(size=(300, 16)) + 0.3).astype("float32")
      >>> out = compute_mauve_interval(p, q, seeds=(1, 2, 3), num_resamples=200)
      >>> ci = out.mauve
      >>> bool(ci.low < ci.value < ci.high), out.seed_mauve.shape, out.num_buckets
      (True, (3,), 30)
    """
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds: expected a sequence of integers, got {type(seeds).__name__}")
    seeds = tuple(V.check_int(s, "seeds") for s in seeds)
    if not seeds:
        raise ValueError("seeds: at least one seed is needed")
    B = V.check_int(num_resamples, "num_resamples", minimum=2)
    V.check_open_unit(confidence, "confidence")
    inputs, quant, scoring = _prepare(
        p_features, q_features, p_tokens, q_tokens, p_text, q_text, num_buckets=num_buckets,
        pca_max_data=pca_max_data, kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
        kmeans_max_iter=kmeans_max_iter, featurize_model_name=featurize_model_name, max_text_length=max_text_length,
        divergence_curve_discretization_size=divergence_curve_discretization_size,
        mauve_scaling_factor=mauve_scaling_factor, batch_size=batch_size, model=model, quantizer=quantizer,
        scoring=scoring, pooling=pooling, dtype=dtype)
    p, q = inputs.p_features, inputs.q_features
    n_p, n_q = p.shape[0], q.shape[0]
    stacked = np.concatenate([q, p], axis=0)
    c, m = float(mauve_scaling_factor), int(divergence_curve_discretization_size)

    seed_mauve, seed_fi, labels = [], [], []
    for s in seeds:
        fit = fit_labels(quant, stacked, key=jax.random.key(s))
        k = int(fit.fitted.num_bins)
        q_counts, p_counts = split_counts(fit.labels, (n_q, n_p), k)
        scores = mauve_scores(p_counts, q_counts, scaling=c, num_points=m, scoring=scoring)
        seed_mauve.append(float(scores.mauve))
        seed_fi.append(float(scores.frontier_integral))
        labels.append(np.asarray(fit.labels, np.int32))
    labels = np.stack(labels, axis=1)                       # [N, S]: rows are the items resampled

    def one_seed(p_lab, q_lab):
        r = mauve_from_counts(jnp.bincount(p_lab, length=k), jnp.bincount(q_lab, length=k), pseudocount=0.0,
                              scaling=c, num_points=m, scoring=scoring)
        return jnp.stack([r.mauve, r.frontier_integral])

    def statistic(p_lab, q_lab):                            # [n_p, S], [n_q, S] -> seed means [2]
        return jnp.mean(jax.vmap(one_seed, in_axes=1)(p_lab, q_lab), axis=0)

    key = jax.random.fold_in(jax.random.key(seeds[0]), BOOTSTRAP_SALT)
    with jax.enable_x64(True):   # the histogram stage in float64, as compute_mauve scores counts
        ci = confidence_interval(statistic, jnp.asarray(labels[n_q:]), jnp.asarray(labels[:n_q]), key=key,
                                 num_resamples=B, confidence=float(confidence), method="percentile")
        q_lo, q_hi, se, bias = (np.asarray(a, np.float64) for a in (ci.low, ci.high, ci.standard_error, ci.bias))
        centre = np.asarray(ci.value, np.float64) + bias     # mean of the bootstrap values
    z = float(ndtri(0.5 + ci.confidence / 2))
    S = len(seeds)

    def interval(i: int, per_seed: list[float]) -> Interval:
        estimate, seed_sd = mean_std(per_seed)
        quant_half = z * seed_sd / np.sqrt(S)                # the seed mean's quantization error
        down = np.hypot(q_hi[i] - centre[i], quant_half)     # reflected: the upper deviations bound below
        up = np.hypot(centre[i] - q_lo[i], quant_half)
        return Interval(value=estimate, low=max(0.0, estimate - down), high=min(1.0, estimate + up),
                        standard_error=float(np.hypot(se[i], seed_sd / np.sqrt(S))), bias=float(bias[i]),
                        confidence=ci.confidence, method="reflected", num_resamples=B)

    sig = extend_signature(_signature(inputs, quant, seeds=seeds, num_buckets=num_buckets, scaling=c, num_points=m,
                                      scoring=scoring), bootstrap="reflected", num_resamples=B,
                           confidence=ci.confidence)
    return MauveInterval(mauve=interval(0, seed_mauve), frontier_integral=interval(1, seed_fi),
                         seed_mauve=np.asarray(seed_mauve), seed_frontier_integral=np.asarray(seed_fi),
                         seed_std=mean_std(seed_mauve)[1], sampling_standard_error=float(se[0]), num_buckets=k,
                         seeds=seeds, pooling=inputs.pooling, signature=sig)
