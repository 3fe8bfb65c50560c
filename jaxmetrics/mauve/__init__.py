"""MAUVE in JAX: histogram stage, quantizers and the ``compute_mauve`` pipeline."""
from jaxmetrics.mauve.histograms import (
    MauveResult,
    area_under_divergence_curve,
    divergence_curve,
    frontier_integral,
    mauve_from_counts,
    mauve_from_histograms,
    smooth_counts,
)

__all__ = [
    "MauveResult",
    "area_under_divergence_curve",
    "divergence_curve",
    "frontier_integral",
    "mauve_from_counts",
    "mauve_from_histograms",
    "smooth_counts",
]
