"""Mark-Evaluate (Mordido & Meinel 2020): population-estimation metrics on embeddings,
with the IMPAR, PRD and FID baselines and their states.

Layers: kernels (:func:`knn_hyperspheres`, :func:`cross_membership`,
:func:`neighborhood_counts`), statistics
(:func:`mark_evaluate_stats`), estimators and scores (:func:`mark_evaluate_scores`,
:func:`me_petersen`, ...), baselines (:func:`improved_precision_recall`, :func:`prd`,
:func:`fid`), states (:class:`MarkEvaluateState`, ...) and the text pipeline
(:func:`compute_mark_evaluate`). Arrays are ``references=`` / ``candidates=``, keyword-only.
"""
from jaxmetrics.mark_evaluate.hyperspheres import (
    CrossMembership,
    Hyperspheres,
    cross_membership,
    knn_hyperspheres,
    neighborhood_counts,
)
from jaxmetrics.mark_evaluate.estimators import (
    CaptureEstimate,
    MarkEvaluateScores,
    MarkEvaluateStats,
    PetersenEstimate,
    SchnabelEstimate,
    SchnabelScores,
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
    PRDCurve,
    PRDFBeta,
    PrecisionRecall,
    fid,
    frechet_distance,
    improved_precision_recall,
    prd,
    prd_curve,
    prd_f_beta,
)
from jaxmetrics.mark_evaluate.state import FIDState, IMPARState, MarkEvaluateState, PRDState
from jaxmetrics.mark_evaluate.pipeline import MarkEvaluateResult, compute_mark_evaluate, embed_texts

__all__ = [
    # results
    "CaptureEstimate", "CrossMembership", "Hyperspheres", "MarkEvaluateResult",
    "MarkEvaluateScores", "MarkEvaluateStats", "PRDCurve", "PRDFBeta", "PetersenEstimate",
    "PrecisionRecall", "SchnabelEstimate", "SchnabelScores",
    # states
    "FIDState", "IMPARState", "MarkEvaluateState", "PRDState",
    # functions
    "accuracy_score", "capture_estimate", "compute_mark_evaluate", "cross_membership",
    "embed_texts", "fid", "frechet_distance", "improved_precision_recall", "knn_hyperspheres",
    "m0_estimate", "mark_evaluate_scores", "mark_evaluate_stats", "me_capture", "me_petersen",
    "me_schnabel", "neighborhood_counts", "petersen_estimate", "prd", "prd_curve", "prd_f_beta",
    "schnabel_estimate",
]
