"""Diversity metrics of generated text and Tevet & Berant's framework for evaluating them.

Layers (arrays are padded token ids ``ids [B, T]`` with ``lengths [B]``, built from texts or
token lists by :func:`encode_sequences`; texts are split into words by :func:`tevet_tokenize`):

* text-level metrics (Python floats): :func:`distinct_n`, :func:`averaged_distinct_n`,
  :func:`ngram_entropy`, :func:`self_bleu` (and per generation :func:`self_bleu_scores`),
  :func:`zipf_coefficient`, :func:`repetition_fraction`, :func:`termination_ratio`;
* kernels (jit, arrays in, arrays or a :class:`~jaxmetrics.Result` out):
  :func:`ngram_count_stats`, :func:`ngram_cosine_matrix`, :func:`self_bleu_stats`,
  :func:`bleu_from_stats`, :func:`zipf_stats`, :func:`repetition_flags`;
* the state :class:`NGramState` (exact pooled n-gram counts that merge across batches,
  devices and hosts);
* the similarity → diversity reduction :func:`similarity_to_diversity`,
  :func:`batched_set_diversity` and per-set metrics (``[S]``) :func:`distinct_n_sets`,
  :func:`ngram_entropy_sets`, :func:`self_bleu_sets`, :func:`ngram_cosine_diversity`,
  :func:`embedding_cosine_diversity`;
* the framework: :func:`decoding_test`, :func:`content_test`,
  :func:`optimal_classification_accuracy`, :func:`compute_set_metrics`,
  :func:`run_diversity_test`, :func:`self_decoding_test` with the testers
  :func:`lm_generator` / :func:`unigram_generator`, McDiv files (:func:`read_mcdiv_csv`).
"""
from jaxmetrics.diversity.ngrams import (
    EncodedSequences,
    EncodedSets,
    NGramStats,
    averaged_distinct_n,
    distinct_n,
    encode_sequences,
    encode_sets,
    ngram_cosine_matrix,
    ngram_count_stats,
    ngram_entropy,
    tevet_tokenize,
)
from jaxmetrics.diversity.selfbleu import SelfBLEUStats, bleu_from_stats, self_bleu, self_bleu_scores, self_bleu_stats
from jaxmetrics.diversity.stats import (
    ZipfStats,
    repetition_flags,
    repetition_fraction,
    termination_ratio,
    zipf_coefficient,
    zipf_stats,
)
from jaxmetrics.diversity.reduction import (
    batched_set_diversity,
    distinct_n_sets,
    embedding_cosine_diversity,
    ngram_cosine_diversity,
    ngram_entropy_sets,
    self_bleu_sets,
    similarity_to_diversity,
)
from jaxmetrics.diversity.state import NGramState
from jaxmetrics.diversity.framework import (
    ContentTestScores,
    Correlation,
    DiversityTestReport,
    DiversityTestRow,
    McDivData,
    SelfDecodingTestResult,
    SetMetricValues,
    compute_set_metrics,
    content_test,
    decoding_test,
    lm_generator,
    optimal_classification_accuracy,
    plot_metric_vs_parameter,
    read_mcdiv_csv,
    run_diversity_test,
    self_decoding_test,
    unigram_generator,
)

__all__ = [
    # text-level metrics
    "distinct_n",
    "averaged_distinct_n",
    "ngram_entropy",
    "self_bleu",
    "self_bleu_scores",
    "zipf_coefficient",
    "repetition_fraction",
    "termination_ratio",
    # encoding and kernels
    "tevet_tokenize",
    "encode_sequences",
    "encode_sets",
    "EncodedSequences",
    "EncodedSets",
    "ngram_count_stats",
    "NGramStats",
    "ngram_cosine_matrix",
    "self_bleu_stats",
    "SelfBLEUStats",
    "bleu_from_stats",
    "zipf_stats",
    "ZipfStats",
    "repetition_flags",
    # state
    "NGramState",
    # similarity -> diversity, per-set metrics
    "similarity_to_diversity",
    "batched_set_diversity",
    "distinct_n_sets",
    "ngram_entropy_sets",
    "self_bleu_sets",
    "ngram_cosine_diversity",
    "embedding_cosine_diversity",
    # framework
    "decoding_test",
    "Correlation",
    "content_test",
    "ContentTestScores",
    "optimal_classification_accuracy",
    "compute_set_metrics",
    "SetMetricValues",
    "run_diversity_test",
    "DiversityTestReport",
    "DiversityTestRow",
    "self_decoding_test",
    "SelfDecodingTestResult",
    "lm_generator",
    "unigram_generator",
    "read_mcdiv_csv",
    "McDivData",
    "plot_metric_vs_parameter",
]
