"""Embedding similarities with batch centering and tempered WMD (Chen et al. 2020)."""
from jaxmetrics.similarity.centering import CENTERING_METHODS, center_embeddings, l2_normalize
from jaxmetrics.similarity.kernels import (METRICS, PRF, batch_similarity, emd_plan,
                                           pair_similarity, similarity_loss, similarity_scores)
from jaxmetrics.similarity.sinkhorn import sinkhorn_plan

__all__ = ["CENTERING_METHODS", "METRICS", "PRF", "batch_similarity", "center_embeddings",
           "emd_plan", "l2_normalize", "pair_similarity", "similarity_loss",
           "similarity_scores", "sinkhorn_plan"]
