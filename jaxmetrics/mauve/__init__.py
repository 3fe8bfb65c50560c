"""MAUVE in JAX: quantize, score the divergence frontier, and the analyses built on both.

P is the human text (the references), Q the model text (the candidates); MAUVE keeps the
paper's ``p`` / ``q`` names in its kernels and states.

The sub-packages follow the stages of one MAUVE computation:

* :mod:`.engine` — the stages every MAUVE goes through (project, quantize, count, score) and
  :mod:`.sizes` (the number of buckets, minimum sizes, the few-points warning);
* :mod:`.quantize` — PCA, the library's one k-means, the ``Quantizer`` interface, DRMM and
  lattice quantizers;
* :mod:`.frontier` — divergence curves of histograms, f-divergence frontiers of density ratios
  and the density-ratio estimators (``estimate_mauve``);
* :mod:`.pipeline` — features from text or tokens, ``compute_mauve`` (mauve-text's API) and
  ``compute_mauve_seeds``, their intervals, shared codebooks, ``MauveState``;
* :mod:`.analysis` — sweeps along n, length, k, c and quantizer, rank agreement, ``compare_mauve``
  and ``mauve_attribution``;
* :mod:`.training` — soft and hard MAUVE, ``mauve_loss`` and ``fit_to_mauve``;
* :mod:`.plot` — every MAUVE figure.

``__all__`` is the user-facing API (entry points, ``FrontierSettings``, quantizers, result types,
estimators, plots); the stages' building blocks are imported from their modules.

``DRMMQuantizer``, ``LatticeQuantizer`` (Flax NNX and optax), ``fit_to_mauve`` (optax) and ``MauveState`` are
imported on first access, so ``import jaxmetrics.mauve`` stays light; ``plot_divergence_curves``
imports matplotlib only when it draws.
"""
from __future__ import annotations

import importlib

from jaxmetrics.mauve.frontier.histograms import (
    MauveResult,
    divergence_curve,
    frontier_integral,
    mauve_from_counts,
    mauve_from_histograms,
)
from jaxmetrics.mauve.frontier.settings import FrontierSettings
from jaxmetrics.mauve.quantize.quantizers import (
    QUANTIZERS,
    FittedKMeansQuantizer,
    FittedQuantizer,
    KMeansQuantizer,
    Quantizer,
    available_quantizers,
    bin_counts,
    get_quantizer,
    register_quantizer,
)
from jaxmetrics.mauve.pipeline.compute import MauveOutput, MauveSeedsOutput, auto_num_buckets, compute_mauve, compute_mauve_seeds
from jaxmetrics.mauve.pipeline.codebook import fit_quantizer, mauve_shared_codebook
from jaxmetrics.mauve.analysis.attribution import MauveAttribution, RankedSample, mauve_attribution
from jaxmetrics.mauve.analysis.compare import MauveComparison, compare_mauve
from jaxmetrics.mauve.training.soft import CentroidQuantizer, hard_mauve, mauve_loss, soft_mauve
from jaxmetrics.mauve.plot import plot_divergence_curves, plot_sweep
from jaxmetrics.mauve.analysis.sweep_results import MauveSweepResult, MauveSweepRow
from jaxmetrics.mauve.analysis.sweep_stages import SWEEP_AXES
from jaxmetrics.mauve.analysis.sweep_stats import PairedMauveDifference, RankAgreement, paired_mauve_difference, rank_agreement
from jaxmetrics.mauve.analysis.sweeps import mauve_length_sweep, mauve_sweep
from jaxmetrics.mauve.frontier.divergences import DIVERGENCES, f_mauve, gaussian_frontier, mauve_from_log_ratios
from jaxmetrics.mauve.frontier.estimate import IndistinguishableWarning, estimate_mauve
from jaxmetrics.mauve.frontier.results import HistogramDetails, RatioDetails
from jaxmetrics.mauve.frontier.estimators import (
    ESTIMATORS,
    ClassifierEstimator,
    DensityRatioEstimator,
    GaussianEstimator,
    KNNEstimator,
    LogRatios,
    QuantizedEstimator,
    available_estimators,
    get_estimator,
    register_estimator,
)

#: Exported names whose modules are imported on first access (Flax NNX / optax / flax.struct).
_LAZY = {
    "DRMMQuantizer": "jaxmetrics.mauve.quantize.drmm",
    "LatticeQuantizer": "jaxmetrics.mauve.quantize.lattice",
    "MauveState": "jaxmetrics.mauve.pipeline.state",
    "MauveFitResult": "jaxmetrics.mauve.training.fit",
    "fit_to_mauve": "jaxmetrics.mauve.training.fit",
}

# The user-facing API. The stages' building blocks (PCA, the one k-means, the engine's projection,
# labels and counts, the histogram helpers) stay importable from their modules
# (``jaxmetrics.mauve.engine``, ``.quantize.clustering``, ``.quantize.pca``, ``.frontier.histograms``).
__all__ = [
    # entry points: text, tokens or features in
    "compute_mauve",
    "compute_mauve_seeds",
    "estimate_mauve",
    "IndistinguishableWarning",
    "auto_num_buckets",
    # the frontier's settings
    "FrontierSettings",
    # array kernels: histograms or counts in
    "mauve_from_histograms",
    "mauve_from_counts",
    "divergence_curve",
    "frontier_integral",
    # quantizers
    "QUANTIZERS",
    "FittedKMeansQuantizer",
    "FittedQuantizer",
    "KMeansQuantizer",
    "Quantizer",
    "available_quantizers",
    "bin_counts",
    "get_quantizer",
    "register_quantizer",
    "DRMMQuantizer",
    "LatticeQuantizer",
    "fit_quantizer",
    "mauve_shared_codebook",
    # result types
    "MauveResult",
    "MauveOutput",
    "MauveSeedsOutput",
    "HistogramDetails",
    "RatioDetails",
    # several systems under one quantizer, with intervals and significance
    "MauveComparison",
    "compare_mauve",
    # which samples pull MAUVE down
    "MauveAttribution",
    "RankedSample",
    "mauve_attribution",
    # differentiable MAUVE
    "CentroidQuantizer",
    "hard_mauve",
    "mauve_loss",
    "soft_mauve",
    "MauveFitResult",
    "fit_to_mauve",
    # state and plots
    "MauveState",
    "plot_divergence_curves",
    "plot_sweep",
    # sweeps and their reports (the paper's Figures 3-4, Tables 5-6)
    "SWEEP_AXES",
    "MauveSweepResult",
    "MauveSweepRow",
    "PairedMauveDifference",
    "RankAgreement",
    "mauve_length_sweep",
    "mauve_sweep",
    "paired_mauve_difference",
    "rank_agreement",
    # the journal paper's family: f-divergence frontiers from density ratios, and their estimators
    "DIVERGENCES",
    "f_mauve",
    "gaussian_frontier",
    "mauve_from_log_ratios",
    "ESTIMATORS",
    "ClassifierEstimator",
    "DensityRatioEstimator",
    "GaussianEstimator",
    "KNNEstimator",
    "LogRatios",
    "QuantizedEstimator",
    "available_estimators",
    "get_estimator",
    "register_estimator",
]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jaxmetrics.mauve' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
