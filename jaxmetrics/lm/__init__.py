"""Language-model scores: log-prob kernels and their states, sliding-window perplexity,
generation perplexity, decoding-transform scores (ε-PPL, sparsemax score, JS) and sampling.

Modules: :mod:`~jaxmetrics.lm.kernels` (per-token kernels), :mod:`~jaxmetrics.lm.state`
(perplexity / LM-score states and the statistics functions returning them),
:mod:`~jaxmetrics.lm.windows` (the sliding-window pipeline), :mod:`~jaxmetrics.lm.generation_ppl`
(generation perplexity),
:mod:`~jaxmetrics.lm.text_ppl` (per-text perplexity in Hugging Face ``evaluate``'s convention),
:mod:`~jaxmetrics.lm.scores` (decoding scores of reference text), :mod:`~jaxmetrics.lm.sampling`
(KV-cache generation). Every function that needs a model takes ``model=``.
"""
from jaxmetrics.lm.kernels import TokenScores, decoding_log_probs, entmax, token_log_probs, token_nll, token_scores
from jaxmetrics.lm.sampling import GenerationOutput, generate
from jaxmetrics.lm.scores import DecodingScores, decoding_scores
from jaxmetrics.lm.text_ppl import TextPerplexities, text_perplexities
from jaxmetrics.lm.state import (
    LMScores, LMScoreState, PerplexityState, lm_score_stats, lm_scores, perplexity_stats,
)
from jaxmetrics.lm.generation_ppl import GenerationPerplexity, generation_perplexity
from jaxmetrics.lm.windows import PerplexityResult, WindowLayout, WindowScores, perplexity, score_windows, window_layout

__all__ = [
    "DecodingScores",
    "GenerationOutput",
    "GenerationPerplexity",
    "LMScoreState",
    "LMScores",
    "PerplexityResult",
    "PerplexityState",
    "TextPerplexities",
    "TokenScores",
    "WindowLayout",
    "WindowScores",
    "decoding_log_probs",
    "decoding_scores",
    "entmax",
    "generate",
    "generation_perplexity",
    "lm_score_stats",
    "lm_scores",
    "perplexity",
    "perplexity_stats",
    "score_windows",
    "text_perplexities",
    "token_log_probs",
    "token_nll",
    "token_scores",
    "window_layout",
]
