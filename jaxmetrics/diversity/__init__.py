"""Diversity metrics of generated text and Tevet & Berant's framework for evaluating them.

Layers (arrays are padded token ids ``ids [B, T]`` with ``lengths [B]``, built from texts or
token lists by :func:`encode_sequences`; texts are split into words by :func:`tevet_tokenize`):

* text-level metrics (Python floats): :func:`distinct_n`, :func:`averaged_distinct_n`,
  :func:`ngram_entropy`, :func:`self_bleu` (and per generation :func:`self_bleu_scores`),
  :func:`zipf_coefficient`, :func:`repetition_fraction`, :func:`termination_ratio`;
* kernels (jit, arrays in, arrays or a :class:`~jaxmetrics.Result` out): :func:`ngram_ids`,
  :func:`ngram_count_stats`, :func:`ngram_cosine_matrix`, :func:`self_bleu_stats`,
  :func:`bleu_from_stats`, :func:`zipf_stats`, :func:`repetition_flags`;
* the state :class:`NGramState` (exact pooled n-gram counts that merge across batches,
  devices and hosts);
* confidence intervals with the texts resampled (``intervals.py``): :func:`distinct_n_interval`,
  :func:`self_bleu_interval`, and their traceable statistics :func:`distinct_ngram_fraction`
  on :func:`ngram_rows` and :func:`resampled_self_bleu`;
* the similarity → diversity reduction :func:`similarity_to_diversity`,
  :func:`batched_set_diversity` and per-set metrics (``[S]``) :func:`distinct_n_sets`,
  :func:`ngram_entropy_sets`, :func:`self_bleu_sets`, :func:`ngram_cosine_diversity`,
  :func:`embedding_cosine_diversity`;
* neural set metrics on vectors from :mod:`jaxmetrics.models` (``neural.py``):
  :func:`embed_response_sets`, :func:`token_set_diversity`;
* Tevet & Berant's framework, one concern per module: the test statistics
  (``correlation.py``: :func:`decoding_test`, :func:`content_test`,
  :func:`optimal_classification_accuracy`), metrics by name (``set_metrics.py``:
  :func:`resolve_set_metric`, :func:`compute_set_metrics`), the multi-metric report
  (``report.py``: :func:`run_diversity_test`), generated sweeps (``generation.py``:
  :func:`self_decoding_test`, :func:`lm_generator`, :func:`unigram_generator`), McDiv files
  (``mcdiv.py``: :func:`read_mcdiv_csv`) and plots (``plot.py``:
  :func:`plot_metric_vs_parameter`).
"""
from jaxmetrics.diversity.encoding import (
    EncodedSequences,
    EncodedSets,
    encode_sequences,
    encode_sets,
    tevet_tokenize,
)
from jaxmetrics.diversity.ngrams import (
    NGramIds,
    NGramStats,
    averaged_distinct_n,
    check_orders,
    distinct_n,
    ngram_cosine_matrix,
    ngram_count_stats,
    ngram_entropy,
    ngram_ids,
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
from jaxmetrics.diversity.intervals import (
    NGramRows,
    distinct_n_interval,
    distinct_ngram_fraction,
    ngram_rows,
    resampled_self_bleu,
    self_bleu_interval,
)
from jaxmetrics.diversity.neural import SetEmbeddings, embed_response_sets, token_set_diversity
from jaxmetrics.diversity.correlation import (
    ContentTestScores,
    Correlation,
    content_test,
    decoding_test,
    optimal_classification_accuracy,
)
from jaxmetrics.diversity.set_metrics import (
    SetMetric,
    SetMetricValues,
    compute_set_metrics,
    resolve_set_metric,
    set_metric_names,
)
from jaxmetrics.diversity.report import DiversityTestReport, DiversityTestRow, run_diversity_test
from jaxmetrics.diversity.generation import (
    SelfDecodingTestResult,
    lm_generator,
    self_decoding_test,
    unigram_generator,
)
from jaxmetrics.diversity.mcdiv import McDivData, read_mcdiv_csv
from jaxmetrics.diversity.plot import plot_metric_vs_parameter

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
    "check_orders",
    "ngram_ids",
    "NGramIds",
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
    # confidence intervals (texts resampled; intervals.py)
    "distinct_n_interval",
    "self_bleu_interval",
    "ngram_rows",
    "NGramRows",
    "distinct_ngram_fraction",
    "resampled_self_bleu",
    # similarity -> diversity, per-set metrics
    "similarity_to_diversity",
    "batched_set_diversity",
    "distinct_n_sets",
    "ngram_entropy_sets",
    "self_bleu_sets",
    "ngram_cosine_diversity",
    "embedding_cosine_diversity",
    # neural metrics (vectors from jaxmetrics.models)
    "embed_response_sets",
    "SetEmbeddings",
    "token_set_diversity",
    # framework
    "decoding_test",
    "Correlation",
    "content_test",
    "ContentTestScores",
    "optimal_classification_accuracy",
    "compute_set_metrics",
    "SetMetricValues",
    "resolve_set_metric",
    "set_metric_names",
    "SetMetric",
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
