"""Mark-Evaluate (Mordido & Meinel 2020): population-estimation metrics on embeddings,
with the IMPAR, PRD and FID baselines and their states.

Layers, one concern per module: kernels (``hyperspheres.py``: :func:`knn_hyperspheres`,
:func:`individual_hyperspheres`, :func:`cross_membership`, :func:`neighborhood_counts`), the
shared argument checks (``checks.py``: :func:`check_feature_pair`, :func:`check_occasions`),
statistics (``stats.py``: :func:`mark_evaluate_stats`), the population estimators
(``estimators.py``: :func:`petersen_estimate`, :func:`schnabel_estimate`,
:func:`capture_estimate`, :func:`m0_estimate`), the scores (``scores.py``:
:func:`mark_evaluate_scores`, :func:`me_petersen`, :func:`me_schnabel`, :func:`me_capture`),
baselines (``baselines.py``: :func:`improved_precision_recall`, :func:`prd`, :func:`fid`),
states (``state.py``: :class:`MarkEvaluateState`, ...), the text pipeline (``pipeline.py``:
:func:`compute_mark_evaluate`, vectors from :mod:`jaxmetrics.models`) and confidence intervals
with both sets subsampled (``intervals.py``: :func:`mark_evaluate_interval`). Arrays are
``references=`` / ``candidates=``, keyword-only.
"""
from jaxmetrics.mark_evaluate.hyperspheres import (
    CrossMembership,
    Hyperspheres,
    Individuals,
    cross_membership,
    individual_hyperspheres,
    knn_hyperspheres,
    neighborhood_counts,
)
from jaxmetrics.mark_evaluate.checks import FeaturePair, check_feature_pair, check_occasions
from jaxmetrics.mark_evaluate.stats import MarkEvaluateStats, mark_evaluate_stats
from jaxmetrics.mark_evaluate.estimators import (
    CaptureEstimate,
    PetersenEstimate,
    SchnabelEstimate,
    accuracy_score,
    capture_estimate,
    m0_estimate,
    petersen_estimate,
    schnabel_estimate,
)
from jaxmetrics.mark_evaluate.scores import (
    MarkEvaluateScores,
    SchnabelScores,
    mark_evaluate_scores,
    me_capture,
    me_petersen,
    me_schnabel,
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
from jaxmetrics.mark_evaluate.pipeline import MarkEvaluateResult, compute_mark_evaluate, embed_texts
from jaxmetrics.mark_evaluate.intervals import mark_evaluate_interval

__all__ = [
    # results
    "CaptureEstimate", "CrossMembership", "FeaturePair", "Hyperspheres", "Individuals",
    "MarkEvaluateResult",
    "MarkEvaluateScores", "MarkEvaluateStats", "PRDCurve", "PRDFBeta", "PetersenEstimate",
    "PrecisionRecall", "SchnabelEstimate", "SchnabelScores",
    # states
    "FIDState", "IMPARState", "MarkEvaluateState", "PRDState",
    # functions
    "accuracy_score", "capture_estimate", "check_feature_pair", "check_occasions",
    "compute_mark_evaluate", "cross_membership", "embed_texts", "individual_hyperspheres", "fid", "frechet_distance", "improved_precision_recall", "knn_hyperspheres",
    "m0_estimate", "mark_evaluate_interval", "mark_evaluate_scores", "mark_evaluate_stats", "me_capture", "me_petersen",
    "me_schnabel", "neighborhood_counts", "petersen_estimate", "prd", "prd_curve", "prd_f_beta",
    "schnabel_estimate",
]

#: The metric states (flax.struct) are imported on first access, so that the k-NN kernel this
#: package owns (``knn_hyperspheres``, which MAUVE's k-NN estimator and lattice quantizer use)
#: loads no Flax.
_LAZY_STATES = ("FIDState", "IMPARState", "MarkEvaluateState", "PRDState")


def __getattr__(name: str):
    if name in _LAZY_STATES:
        from jaxmetrics.mark_evaluate import state

        value = getattr(state, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jaxmetrics.mark_evaluate' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

