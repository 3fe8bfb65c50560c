"""Diversity metrics (n-gram, Self-BLEU, MAUVE-paper text statistics), the
similarity → diversity reduction and Tevet & Berant's decoding / content tests."""
from jaxmetrics.diversity.ngrams import (
    averaged_distinct_n,
    distinct_n,
    encode_sequences,
    encode_sets,
    ngram_count_stats,
    ngram_cosine_matrix,
    ngram_entropy,
    ngram_ids,
    tevet_tokenize,
)
from jaxmetrics.diversity.selfbleu import bleu_from_stats, self_bleu, self_bleu_scores, self_bleu_stats
from jaxmetrics.diversity.stats import (
    repetition_flags,
    repetition_fraction,
    termination_ratio,
    zipf_coefficient,
    zipf_stats,
)
from jaxmetrics.diversity.reduction import (
    batched_set_diversity,
    cosine_similarity,
    distinct_n_sets,
    embedding_cosine_diversity,
    ngram_cosine_diversity,
    ngram_entropy_sets,
    pairwise_similarity,
    self_bleu_sets,
    set_diversity,
    similarity_to_diversity,
)
from jaxmetrics.diversity.framework import (
    SET_METRICS,
    McDivData,
    compute_set_metrics,
    content_test,
    correlations,
    decoding_test,
    format_table,
    lm_generator,
    optimal_classification_accuracy,
    plot_metric_vs_parameter,
    read_mcdiv_csv,
    run_diversity_test,
    self_decoding_test,
    unigram_generator,
)
