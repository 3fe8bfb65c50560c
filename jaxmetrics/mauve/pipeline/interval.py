"""MAUVE's confidence intervals (``compute_mauve_seeds(references=..., confidence=0.95)``): the sampling
spread and the quantization spread, apart.

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
reaches. It is centred on ``θ̄``, the mean over the seeds (``mauve_mean``). The deviation of
``θ̄`` from that target has a sampling part, approximated by the bootstrap deviations
``θ* - mean(θ*)`` and reflected (``θ̄ - q_{1-α/2}(θ* - mean θ*)`` below,
``θ̄ - q_{α/2}(θ* - mean θ*)`` above: the bootstrap's spread and skew around the estimate,
without its bias), and a quantization part ``z * seed_std / sqrt(S)`` (``z`` the normal
quantile of the confidence); each side of the interval adds the two in quadrature, and the
bounds are clipped to ``[0, 1]``, the range of both scores. A bias-correcting interval such as
BCa aims at the infinite-sample value instead, and with MAUVE's large bias at small ``n`` it
collapses onto the bootstrap's upper tail.

Coverage on real text (``tests/mauve/test_mauve_interval.py``, all-MiniLM-L6-v2 features of
Shakespeare sentences against a half-degraded set, 200 rows per side, k = 20, the target
estimated by the mean over all draws): three seeds covered it in 91 % of 45 disjoint draws
(nominal 95 %). With one seed there is no measure of the quantization spread and the interval
is too narrow (83 % of 60 draws): give three seeds or more.
"""
from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtri

from jaxmetrics.confidence import Interval, confidence_interval
from jaxmetrics.mauve.frontier.histograms import mauve_from_counts
from jaxmetrics.numerics import mean_std

__all__ = ["BOOTSTRAP_SALT", "seed_mean_intervals"]

#: folded into ``jax.random.key(seeds[0])`` for the bootstrap's resampling key
BOOTSTRAP_SALT = 0xB007


def seed_mean_intervals(labels: np.ndarray, sizes: tuple[int, int], num_bins: int, seed_mauve: Sequence[float],
                        seed_frontier_integral: Sequence[float], *, key: jax.Array, num_resamples: int,
                        confidence: float, scaling: float, num_points: int,
                        scoring: str) -> tuple[Interval, Interval, float]:
    """Intervals of the seed means of MAUVE and of the frontier integral (module docstring).

    Args:
      labels: ``[S, N]`` every seed's cluster of each stacked row, Q's ``n_q`` rows first.
      sizes: ``(n_q, n_p)``.
      num_bins: ``k``.
      seed_mauve, seed_frontier_integral: ``[S]`` each seed's values (float64, from the counts).
      key: the resampling key.
      num_resamples, confidence: as in :func:`~jaxmetrics.confidence_interval`.
      scaling, num_points, scoring: MAUVE's ``c``, ``m`` and scoring, as the values were computed.

    Returns:
      ``(mauve interval, frontier-integral interval, sampling standard error of the MAUVE mean)``;
      the intervals' ``method`` is ``'reflected'``.
    """
    n_q, n_p = sizes
    per_row = np.asarray(labels, np.int32).T               # [N, S]: rows are the items resampled

    def one_seed(p_lab, q_lab):
        r = mauve_from_counts(jnp.bincount(p_lab, length=num_bins), jnp.bincount(q_lab, length=num_bins),
                              pseudocount=0.0, scaling=scaling, num_points=num_points, scoring=scoring)
        return jnp.stack([r.mauve, r.frontier_integral])

    def statistic(p_lab, q_lab):                            # [n_p, S], [n_q, S] -> seed means [2]
        return jnp.mean(jax.vmap(one_seed, in_axes=1)(p_lab, q_lab), axis=0)

    with jax.enable_x64(True):   # the histogram stage in float64, as compute_mauve scores counts
        ci = confidence_interval(statistic, jnp.asarray(per_row[n_q:n_q + n_p]), jnp.asarray(per_row[:n_q]),
                                 key=key, num_resamples=num_resamples, confidence=confidence, method="percentile")
        q_lo, q_hi, se, bias = (np.asarray(a, np.float64) for a in (ci.low, ci.high, ci.standard_error, ci.bias))
        centre = np.asarray(ci.value, np.float64) + bias     # mean of the bootstrap values
    z = float(ndtri(0.5 + ci.confidence / 2))
    root_s = np.sqrt(len(seed_mauve))

    def interval(i: int, per_seed: Sequence[float]) -> Interval:
        estimate, seed_sd = mean_std(per_seed)
        quant_half = z * seed_sd / root_s                    # the seed mean's quantization error
        down = np.hypot(q_hi[i] - centre[i], quant_half)     # reflected: the upper deviations bound below
        up = np.hypot(centre[i] - q_lo[i], quant_half)
        return Interval(value=estimate, low=max(0.0, estimate - down), high=min(1.0, estimate + up),
                        standard_error=float(np.hypot(se[i], seed_sd / root_s)), bias=float(bias[i]),
                        confidence=ci.confidence, method="reflected", num_resamples=ci.num_resamples)

    return interval(0, seed_mauve), interval(1, seed_frontier_integral), float(se[0])
