"""Embedding similarities with batch centering and tempered WMD (Chen et al. 2020), and BERTScore.

Layers (``docs/conventions.md``):

* :mod:`~jaxmetrics.similarity.centering` — centering + L2 normalisation of token vectors;
* :mod:`~jaxmetrics.similarity.kernels` — the normalised family (cosine, CKA, WMD, RWMD, TWMD,
  TRWMD) on padded token embeddings, and the :class:`PRF` result;
* :mod:`~jaxmetrics.similarity.sinkhorn` — fixed-iteration transport plans;
* :mod:`~jaxmetrics.similarity.greedy` — BERTScore's greedy matching, idf, baseline rescaling,
  ``bert_score``-compatible mode;
* :mod:`~jaxmetrics.similarity.state` — :class:`SimilarityState` (mergeable corpus means);
* :mod:`~jaxmetrics.similarity.chunks` — the pair layout shared by the pipeline and the sweep
  (token selection, per-pair centering means, length-bucketed chunks of the engine's ragged
  token vectors);
* :mod:`~jaxmetrics.similarity.settings` — :class:`SimilaritySettings`, the settings of a text
  similarity as one validated object, and the paper's defaults (:func:`default_layer`, ...);
* :mod:`~jaxmetrics.similarity.pipeline` — :func:`compute_similarity` (texts → scores);
* :mod:`~jaxmetrics.similarity.compat` — :func:`bertscore`, ``bert_score.score``'s signature.
* :mod:`~jaxmetrics.similarity.anisotropy` — :func:`compute_anisotropy` (per-layer baseline,
  self- and intra-sentence similarity before/after centering), :func:`layer_similarities`.
* :mod:`~jaxmetrics.similarity.grouped` — :func:`grouped_correlation` (per-group Pearson /
  Spearman with human scores, size-weighted means);
* :mod:`~jaxmetrics.similarity.grouped` — :func:`read_scored_pairs` (STS-style TSV) and the grouped correlations;
* :mod:`~jaxmetrics.similarity.sweep` — :func:`correlation_sweep` (correlation with human
  scores over a grid of settings, every setting equal to a :func:`compute_similarity` call);
* :mod:`~jaxmetrics.similarity.alignment` — :func:`token_alignments` (which tokens matched: the
  similarity matrix, greedy matches and transport plans behind each pair's score);
* :mod:`~jaxmetrics.similarity.plot` — the family's figures (``CorrelationSweep.plot``,
  ``AnisotropyResult.plot``, ``TokenAlignments.plot``).

Examples:
    >>> import jax, jax.numpy as jnp
    >>> from jaxmetrics.similarity import similarity_scores
    >>> x = jax.random.normal(jax.random.key(0), (2, 5, 8)); m = jnp.ones((2, 5), bool)
    >>> P, R, F = similarity_scores(candidates=x, references=x, candidates_mask=m,
    ...                             references_mask=m, metric="twmd")
    >>> [round(float(v), 4) for v in F]
    [1.0, 1.0]
"""
from jaxmetrics.similarity.alignment import ALIGNMENT_METRICS, AlignedTokens, PairAlignment, TokenAlignments, token_alignments
from jaxmetrics.similarity.anisotropy import (ANISOTROPY_STATISTICS, AnisotropyResult, LayerSimilarities,
                                              compute_anisotropy, layer_similarities)
from jaxmetrics.similarity.centering import CENTERING_METHODS, center_embeddings
from jaxmetrics.similarity.chunks import CENTERING_BATCHES
from jaxmetrics.similarity.compat import bertscore
from jaxmetrics.similarity.greedy import (batch_bertscore, bertscore_pair, bertscore_scores, idf_table,
                                          rescale_with_baseline)
from jaxmetrics.similarity.kernels import (METRICS, PRF, batch_similarity, emd_plan, pair_similarity,
                                           similarity_loss, similarity_scores)
from jaxmetrics.similarity.pipeline import SimilarityResult, compute_similarity, score_encoded
from jaxmetrics.similarity.settings import (SIMILARITY_METRICS, SPECIAL_TOKENS, SimilaritySettings, default_centering,
                                            default_layer, default_temperature)
from jaxmetrics.similarity.grouped import GroupedCorrelation, grouped_correlation
from jaxmetrics.similarity.grouped import ScoredPairs, read_scored_pairs
from jaxmetrics.similarity.sinkhorn import sinkhorn_plan
from jaxmetrics.similarity.state import SimilarityState
from jaxmetrics.similarity.sweep import CorrelationRow, CorrelationSweep, correlation_sweep

__all__ = ["CENTERING_BATCHES", "CENTERING_METHODS", "METRICS", "PRF", "SIMILARITY_METRICS", "SPECIAL_TOKENS", "SimilarityResult",
           "SimilaritySettings", "SimilarityState",
           "batch_bertscore", "batch_similarity", "bertscore", "bertscore_pair", "bertscore_scores",
           "center_embeddings", "compute_similarity", "default_centering", "default_layer",
           "default_temperature", "emd_plan", "idf_table", "pair_similarity", "rescale_with_baseline",
           "score_encoded", "similarity_loss", "similarity_scores", "sinkhorn_plan"]
__all__ += ["CorrelationRow", "CorrelationSweep", "GroupedCorrelation", "ScoredPairs", "correlation_sweep",
            "grouped_correlation", "read_scored_pairs"]
__all__ += ["ANISOTROPY_STATISTICS", "AnisotropyResult", "LayerSimilarities", "compute_anisotropy",
            "layer_similarities"]
__all__ += ["ALIGNMENT_METRICS", "AlignedTokens", "PairAlignment", "TokenAlignments", "token_alignments"]
