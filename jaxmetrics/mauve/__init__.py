"""MAUVE in JAX: histogram stage, quantizers, the ``compute_mauve`` pipeline and soft MAUVE.

P is the human text (the references), Q the model text (the candidates); MAUVE keeps the
paper's ``p`` / ``q`` names in its kernels and states.

Layers: :mod:`.engine` (the stages every MAUVE goes through: project, quantize, count, score),
:mod:`.histograms` (pure kernels: divergence curve, area, frontier integral, smoothing),
:mod:`.pca` and :mod:`.clustering` (quantization kernels; :func:`kmeans` is the library's one
k-means), :mod:`.quantizers` (the ``Quantizer`` interface and registry), :mod:`.inputs` (features
from text or tokens), :mod:`.sizes` (the number of buckets, MAUVE's minimum sizes and the
few-points warning), :mod:`.compute` (mauve-text-compatible pipeline), :mod:`.interval` (the
intervals of ``compute_mauve_seeds(confidence=...)``: sampling and seed spreads), :mod:`.codebook` (one
codebook for several pairs), :mod:`.compare` (systems compared under one quantizer, with intervals and p-values), :mod:`.attribution` (each sample's influence on MAUVE), :mod:`.soft` (differentiable MAUVE), :mod:`.state`
(:class:`MauveState`, feature buffers), :mod:`.plot` (every MAUVE figure), :mod:`.loss_recipe`
(:func:`fit_to_mauve`, MAUVE as a training loss), :mod:`.drmm` and :mod:`.lattice` (learned
quantizers), :mod:`.sweeps` with :mod:`.sweep_stages` and :mod:`.sweep_results` (MAUVE along
sample size, text length, k, c and quantizer) and :mod:`.sweep_stats` (rank agreement and paired
seed comparisons).

``DRMMQuantizer``, ``LatticeQuantizer`` (Flax NNX and optax), ``fit_to_mauve`` (optax) and ``MauveState`` are
imported on first access, so ``import jaxmetrics.mauve`` stays light; ``plot_divergence_curves``
imports matplotlib only when it draws.
"""
from __future__ import annotations

import importlib

from jaxmetrics.mauve.histograms import (
    MauveResult,
    area_under_divergence_curve,
    divergence_curve,
    frontier_integral,
    mauve_from_counts,
    mauve_from_histograms,
    smooth_counts,
)
from jaxmetrics.mauve.clustering import KMeansResult, kmeans
from jaxmetrics.mauve.pca import PCAProjection, fit_pca, pca_transform
from jaxmetrics.mauve.quantizers import (
    QUANTIZERS,
    FittedKMeansQuantizer,
    FittedQuantizer,
    KMeansQuantizer,
    Quantizer,
    available_quantizers,
    bin_counts,
    get_quantizer,
    register_quantizer,
    soft_bin_counts,
)
from jaxmetrics.mauve.engine import (
    LabelledRows,
    MauveScores,
    ProblemCounts,
    ProjectedFeatures,
    apply_projection,
    fit_labels,
    kmeans_labels,
    masked_kmeans_counts,
    mauve_scores,
    project_features,
    split_counts,
)
from jaxmetrics.mauve.compute import MauveOutput, MauveSeedsOutput, auto_num_buckets, compute_mauve, compute_mauve_seeds
from jaxmetrics.mauve.codebook import fit_quantizer, mauve_shared_codebook
from jaxmetrics.mauve.attribution import MauveAttribution, RankedSample, mauve_attribution
from jaxmetrics.mauve.compare import MauveComparison, compare_mauve
from jaxmetrics.mauve.soft import CentroidQuantizer, hard_mauve, mauve_loss, soft_mauve
from jaxmetrics.mauve.plot import plot_divergence_curves, plot_sweep
from jaxmetrics.mauve.sweep_results import MauveSweepResult, MauveSweepRow
from jaxmetrics.mauve.sweep_stages import SWEEP_AXES
from jaxmetrics.mauve.sweep_stats import PairedMauveDifference, RankAgreement, paired_mauve_difference, rank_agreement
from jaxmetrics.mauve.sweeps import mauve_length_sweep, mauve_sweep
from jaxmetrics.mauve.frontiers import DIVERGENCES, f_mauve, gaussian_frontier, mauve_from_log_ratios
from jaxmetrics.mauve.estimate import estimate_mauve
from jaxmetrics.mauve.estimators import (
    ESTIMATORS,
    ClassifierEstimator,
    DensityRatioEstimator,
    GaussianEstimator,
    KNNEstimator,
    LogRatios,
    MauveEstimate,
    QuantizedEstimator,
    available_estimators,
    get_estimator,
    register_estimator,
)

#: Exported names whose modules are imported on first access (Flax NNX / optax / flax.struct).
_LAZY = {
    "DRMMQuantizer": "jaxmetrics.mauve.drmm",
    "LatticeQuantizer": "jaxmetrics.mauve.lattice",
    "MauveState": "jaxmetrics.mauve.state",
    "MauveFitResult": "jaxmetrics.mauve.loss_recipe",
    "fit_to_mauve": "jaxmetrics.mauve.loss_recipe",
}

__all__ = [
    # histogram stage
    "MauveResult",
    "area_under_divergence_curve",
    "divergence_curve",
    "frontier_integral",
    "mauve_from_counts",
    "mauve_from_histograms",
    "smooth_counts",
    # quantization kernels
    "KMeansResult",
    "kmeans",
    "PCAProjection",
    "fit_pca",
    "pca_transform",
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
    "soft_bin_counts",
    "DRMMQuantizer",
    "LatticeQuantizer",
    # the engine's stages
    "LabelledRows",
    "MauveScores",
    "ProblemCounts",
    "ProjectedFeatures",
    "apply_projection",
    "fit_labels",
    "kmeans_labels",
    "masked_kmeans_counts",
    "mauve_scores",
    "project_features",
    "split_counts",
    # pipeline
    "MauveOutput",
    "MauveSeedsOutput",
    "auto_num_buckets",
    "compute_mauve",
    "compute_mauve_seeds",
    "fit_quantizer",
    "mauve_shared_codebook",
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
    "MauveEstimate",
    "QuantizedEstimator",
    "available_estimators",
    "estimate_mauve",
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
