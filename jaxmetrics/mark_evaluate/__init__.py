"""Mark-Evaluate (Mordido & Meinel 2020): population-estimation metrics on embeddings,
with the IMPAR, PRD and FID baselines."""
from jaxmetrics.mark_evaluate.hyperspheres import (
    CrossMembership,
    Hyperspheres,
    cross_membership,
    knn_hyperspheres,
    squared_distances,
)
from jaxmetrics.mark_evaluate.estimators import (
    MarkEvaluateStats,
    accuracy_score,
    capture_estimate,
    m0_estimate,
    mark_evaluate_scores,
    mark_evaluate_stats,
    me_capture,
    me_petersen,
    me_schnabel,
    petersen_estimate,
    schnabel_estimate,
)
from jaxmetrics.mark_evaluate.baselines import (
    fid,
    frechet_distance,
    improved_precision_recall,
    kmeans,
    prd,
    prd_curve,
    prd_f_beta,
)
from jaxmetrics.mark_evaluate.pipeline import embed_texts, mark_evaluate

__all__ = [
    "CrossMembership", "Hyperspheres", "MarkEvaluateStats",
    "accuracy_score", "capture_estimate", "cross_membership", "embed_texts", "fid",
    "frechet_distance", "improved_precision_recall", "kmeans", "knn_hyperspheres",
    "m0_estimate", "mark_evaluate", "mark_evaluate_scores", "mark_evaluate_stats",
    "me_capture", "me_petersen", "me_schnabel", "petersen_estimate", "prd", "prd_curve",
    "prd_f_beta", "schnabel_estimate", "squared_distances",
]
