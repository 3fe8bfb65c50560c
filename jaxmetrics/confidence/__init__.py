"""Confidence intervals for corpus-level scores by resampling, as one vmapped computation.

A corpus-level score is a function of per-item data: the per-pair F1 of BERTScore (its mean),
each document's NLL and token count (corpus perplexity ``exp(Σ nll / Σ count)``), the feature
rows of MAUVE's two sides. :func:`confidence_interval` takes that function and the data, draws
``num_resamples`` bootstrap resamples of the items (with replacement, every sample on its own),
evaluates the function on all of them in one ``vmap`` (in chunks that bound the memory), and
returns the estimate with its interval:

* ``method="percentile"``: the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles
  of the bootstrap values;
* ``method="bca"`` (default): Efron's bias-corrected and accelerated interval. The bias
  correction is ``z0 = Φ⁻¹(#{θ*_b < θ̂} / B)`` (ties count half), the acceleration
  ``a = Σ d³ / (6 (Σ d²)^{3/2})`` with ``d`` the jackknife deviations (each item left out once,
  every sample's items in turn), and the quantile levels become
  ``Φ(z0 + (z0 + z_α) / (1 - a (z0 + z_α)))``. It is second-order accurate where the percentile
  interval is first-order, which matters for skewed scores such as a perplexity (an
  exponential of a mean). The jackknife costs one more evaluation per item.

What the interval covers: the value the same score would take on the population the items were
drawn from, at the same number of items. For a mean (BERTScore, a per-document average) that is
the population mean; for a statistic that is biased at a finite size (MAUVE, a corpus
perplexity of few documents) it is the expected value of the estimator at that size.

Several samples (``confidence_interval(stat, p, q, ...)``) are resampled independently (MAUVE's
human and model rows); the leaves of one sample are resampled together (a document's NLL and
its token count stay paired). Statistics must be traceable JAX functions of their arrays.

:func:`subsample_interval` resamples without replacement instead (subsets of a fraction of the
items, the spread rescaled to the full size): for set-level statistics that a repeated item
distorts — distinct-n (a repeated text adds no new n-gram), Self-BLEU, Mark-Evaluate's k-NN
balls (a repeated embedding is a zero-distance neighbour). The diversity and Mark-Evaluate
families build their intervals on it (``distinct_n_interval``, ``self_bleu_interval``,
``mark_evaluate_interval``), with coverage measured on real data.

The code: :mod:`jaxmetrics.confidence.intervals` (intervals and the resampling core),
:mod:`jaxmetrics.confidence.comparison` (systems compared, Holm's correction).
"""
from jaxmetrics.confidence.comparison import (COMPARISON_METHODS, SignificantDifference, SystemComparison,
                                              compare_systems, holm_adjust, pairwise_correction)
from jaxmetrics.confidence.intervals import (Interval, bootstrap_indices, confidence_interval, randomization_draws,
                                             resampling_p_values, resampling_signature, subsample_interval)

__all__ = ["COMPARISON_METHODS", "Interval", "SignificantDifference", "SystemComparison", "bootstrap_indices",
           "compare_systems", "confidence_interval", "holm_adjust", "pairwise_correction", "randomization_draws",
           "resampling_p_values", "resampling_signature", "subsample_interval"]
