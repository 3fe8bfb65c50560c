"""MAUVE in JAX: histogram stage, quantizers and the ``compute_mauve`` pipeline.

Layers: :mod:`.histograms` (pure kernels: divergence curve, area, frontier integral,
smoothing), :mod:`.pca` and :mod:`.kmeans` (quantization kernels), :mod:`.quantizers`
(the ``Quantizer`` interface and registry), :mod:`.compute` (mauve-text-compatible pipeline),
:mod:`.plot` (divergence-curve figures).
"""
from jaxmetrics.mauve.histograms import (
    MauveResult,
    area_under_divergence_curve,
    divergence_curve,
    frontier_integral,
    mauve_from_counts,
    mauve_from_histograms,
    smooth_counts,
)
from jaxmetrics.mauve.kmeans import KMeansResult, kmeans
from jaxmetrics.mauve.pca import PCAProjection, fit_pca, l2_normalize, pca_transform
from jaxmetrics.mauve.quantizers import (
    QUANTIZERS,
    FittedKMeansQuantizer,
    FittedQuantizer,
    KMeansQuantizer,
    Quantizer,
    bin_counts,
    get_quantizer,
    register_quantizer,
    soft_bin_counts,
)
from jaxmetrics.mauve.compute import (
    MauveOutput,
    MauveSeedsOutput,
    auto_num_buckets,
    compute_mauve,
    compute_mauve_seeds,
    fit_quantizer,
    histogram,
    mauve_shared_codebook,
)
from jaxmetrics.mauve.plot import plot_divergence_curves

__all__ = [
    "MauveResult",
    "area_under_divergence_curve",
    "divergence_curve",
    "frontier_integral",
    "mauve_from_counts",
    "mauve_from_histograms",
    "smooth_counts",
    "KMeansResult",
    "kmeans",
    "PCAProjection",
    "fit_pca",
    "l2_normalize",
    "pca_transform",
    "QUANTIZERS",
    "FittedKMeansQuantizer",
    "FittedQuantizer",
    "KMeansQuantizer",
    "Quantizer",
    "bin_counts",
    "get_quantizer",
    "register_quantizer",
    "soft_bin_counts",
    "MauveOutput",
    "MauveSeedsOutput",
    "auto_num_buckets",
    "compute_mauve",
    "compute_mauve_seeds",
    "fit_quantizer",
    "histogram",
    "mauve_shared_codebook",
    "plot_divergence_curves",
]
