"""Language-model scores: log-prob kernels, sliding-window perplexity, generation
perplexity, decoding-transform scores (ε-PPL, sparsemax score, JS) and sampling.

The sliding-window perplexity function is :func:`jaxmetrics.lm.perplexity.perplexity`
(not re-exported here, so that ``jaxmetrics.lm.perplexity`` stays the module)."""
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
from jaxmetrics.lm.perplexity import (
    PerplexityResult,
    WindowLayout,
    generation_perplexity,
    score_windows,
    window_layout,
)
from jaxmetrics.lm.sampling import GenerationOutput, generate
from jaxmetrics.lm.scores import decoding_scores

__all__ = [
    "GenerationOutput",
    "LMScoreStats",
    "PerplexityResult",
    "PerplexityStats",
    "WindowLayout",
    "decoding_log_probs",
    "decoding_scores",
    "generate",
    "generation_perplexity",
    "lm_score_stats",
    "lm_scores",
    "lm_scores_from_stats",
    "perplexity_from_stats",
    "perplexity_stats",
    "score_windows",
    "token_log_probs",
    "token_nll",
    "token_scores",
    "window_layout",
]
