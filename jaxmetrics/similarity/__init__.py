"""Embedding similarities with batch centering and tempered WMD (Chen et al. 2020).

Layers: :mod:`~jaxmetrics.similarity.centering` (centering + L2 normalisation),
:mod:`~jaxmetrics.similarity.kernels` (the normalised family: cosine, CKA, WMD, RWMD, TWMD,
TRWMD), :mod:`~jaxmetrics.similarity.sinkhorn` (fixed-iteration plans),
:mod:`~jaxmetrics.similarity.bertscore` (BERTScore, idf, baseline, bert_score-compatible
mode) and :mod:`~jaxmetrics.similarity.pipeline` (text → scores).
"""
from jaxmetrics.similarity.bertscore import (batch_bertscore, bertscore, bertscore_pair, idf_table,
                                             rescale_with_baseline)
from jaxmetrics.similarity.centering import CENTERING_METHODS, center_embeddings, l2_normalize
from jaxmetrics.similarity.kernels import (METRICS, PRF, batch_similarity, emd_plan,
                                           pair_similarity, similarity_loss, similarity_scores)
from jaxmetrics.similarity.pipeline import (SimilarityResult, default_layer, default_temperature,
                                            similarity)
from jaxmetrics.similarity.sinkhorn import sinkhorn_plan

__all__ = ["CENTERING_METHODS", "METRICS", "PRF", "SimilarityResult", "batch_bertscore",
           "batch_similarity", "bertscore", "bertscore_pair", "center_embeddings",
           "default_layer", "default_temperature", "emd_plan", "idf_table", "l2_normalize",
           "pair_similarity", "rescale_with_baseline", "similarity", "similarity_loss",
           "similarity_scores", "sinkhorn_plan"]
