"""Language-model scores: log-prob kernels, sliding-window perplexity, generation
perplexity, decoding-transform scores (ε-PPL, sparsemax score, JS) and sampling."""
from jaxmetrics.lm.kernels import (
    LMScoreStats,
    PerplexityStats,
    decoding_log_probs,
    lm_score_stats,
    lm_scores,
    lm_scores_from_stats,
    perplexity_from_stats,
    perplexity_stats,
    token_log_probs,
    token_nll,
    token_scores,
)
