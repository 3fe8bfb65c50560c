"""jaxmetrics: JAX metrics for evaluating open-ended text generation.

Every metric is a jit-compiled, vmappable JAX function on arrays (+ masks); smoothed variants
are differentiable; decomposable metrics have mergeable states next to their kernels
(``jaxmetrics.<family>.state``) and all kernels run on a device mesh (:mod:`jaxmetrics.sharding`).
The API conventions (``references=`` / ``candidates=``, ``model=``, ``key=``, ``Result``
types) are in ``docs/conventions.md``.

Sub-packages (imported lazily, so ``import jaxmetrics`` is cheap):

* :mod:`jaxmetrics.mauve` – MAUVE, frontier integral, quantizers (k-means, DRMM, lattice), soft MAUVE.
* :mod:`jaxmetrics.lm` – sliding-window perplexity, generation perplexity, ε-PPL, sparsemax, JS, sampling.
* :mod:`jaxmetrics.similarity` – BERTScore, WMD/RWMD, tempered WMD, TRWMD, CKA, batch centering.
* :mod:`jaxmetrics.mark_evaluate` – ME-Petersen/Schnabel/CAPTURE, IMPAR, PRD, FID.
* :mod:`jaxmetrics.diversity` – distinct-n, Self-BLEU, Zipf, REP, Tevet & Berant's tests.
* :mod:`jaxmetrics.models` – Flax NNX GPT-2 / BERT / RoBERTa / Llama and featurizers.
* :mod:`jaxmetrics.evaluation` – ``evaluate_generation``: generate with several decoding settings
  and seeds, featurize, and report every metric (the MAUVE paper's protocol), resumable.
* :mod:`jaxmetrics.meta` – meta-evaluation: correlations of metrics with human scores, with intervals,
  pairwise significance (permutation, Williams, Holm) and significance clusters.
* :mod:`jaxmetrics.confidence` – bootstrap confidence intervals (percentile, BCa) of any
  corpus-level score, all resamples in one vmapped computation.
* :mod:`jaxmetrics.compilation` – the persistent compilation cache (on by default), so later processes load the
  compiled programs instead of compiling them again.

Each family's main functions are also available at the top level, e.g.
``jaxmetrics.compute_mauve``, ``jaxmetrics.compute_similarity``, ``jaxmetrics.perplexity``.

Examples:
    >>> import jaxmetrics
    >>> float(jaxmetrics.mauve_from_histograms([0.5, 0.5], [0.5, 0.5]).mauve)
    1.0
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    # results and states
    "Result": "jaxmetrics.results",
    "merge_all": "jaxmetrics.state",
    "merge_stacked": "jaxmetrics.state",
    # confidence intervals
    "confidence_interval": "jaxmetrics.confidence",
    "compare_systems": "jaxmetrics.confidence",
    "Interval": "jaxmetrics.confidence",
    "subsample_interval": "jaxmetrics.confidence",
    # meta-evaluation
    "meta_evaluate": "jaxmetrics.meta",
    "MetaEvaluation": "jaxmetrics.meta",
    # MAUVE
    "compute_mauve": "jaxmetrics.mauve",
    "compute_mauve_seeds": "jaxmetrics.mauve",
    "mauve_from_histograms": "jaxmetrics.mauve",
    "mauve_from_counts": "jaxmetrics.mauve",
    "frontier_integral": "jaxmetrics.mauve",
    "fit_quantizer": "jaxmetrics.mauve",
    "mauve_shared_codebook": "jaxmetrics.mauve",
    "mauve_attribution": "jaxmetrics.mauve",
    "compare_mauve": "jaxmetrics.mauve",
    "estimate_mauve": "jaxmetrics.mauve",
    "KMeansQuantizer": "jaxmetrics.mauve",
    "register_quantizer": "jaxmetrics.mauve",
    "plot_divergence_curves": "jaxmetrics.mauve",
    "soft_mauve": "jaxmetrics.mauve",
    "hard_mauve": "jaxmetrics.mauve",
    "mauve_loss": "jaxmetrics.mauve",
    "DRMMQuantizer": "jaxmetrics.mauve",
    "LatticeQuantizer": "jaxmetrics.mauve",
    "MauveState": "jaxmetrics.mauve",
    # language-model scores
    "perplexity": "jaxmetrics.lm",
    "generation_perplexity": "jaxmetrics.lm",
    "text_perplexities": "jaxmetrics.lm",
    "decoding_scores": "jaxmetrics.lm",
    "lm_scores": "jaxmetrics.lm",
    "token_nll": "jaxmetrics.lm",
    "generate": "jaxmetrics.lm",
    "PerplexityState": "jaxmetrics.lm",
    "LMScoreState": "jaxmetrics.lm",
    # similarity
    "compute_similarity": "jaxmetrics.similarity",
    "bertscore": "jaxmetrics.similarity",
    "bertscore_scores": "jaxmetrics.similarity",
    "token_alignments": "jaxmetrics.similarity",
    "similarity_scores": "jaxmetrics.similarity",
    "batch_similarity": "jaxmetrics.similarity",
    "similarity_loss": "jaxmetrics.similarity",
    "center_embeddings": "jaxmetrics.similarity",
    "SimilarityState": "jaxmetrics.similarity",
    "SimilaritySettings": "jaxmetrics.similarity",
    # Mark-Evaluate
    "compute_mark_evaluate": "jaxmetrics.mark_evaluate",
    "mark_evaluate_scores": "jaxmetrics.mark_evaluate",
    "me_petersen": "jaxmetrics.mark_evaluate",
    "me_schnabel": "jaxmetrics.mark_evaluate",
    "me_capture": "jaxmetrics.mark_evaluate",
    "mark_evaluate_interval": "jaxmetrics.mark_evaluate",
    "improved_precision_recall": "jaxmetrics.mark_evaluate",
    "prd": "jaxmetrics.mark_evaluate",
    "fid": "jaxmetrics.mark_evaluate",
    "IMPARState": "jaxmetrics.mark_evaluate",
    "MarkEvaluateState": "jaxmetrics.mark_evaluate",
    "PRDState": "jaxmetrics.mark_evaluate",
    "FIDState": "jaxmetrics.mark_evaluate",
    # diversity
    "distinct_n": "jaxmetrics.diversity",
    "averaged_distinct_n": "jaxmetrics.diversity",
    "ngram_entropy": "jaxmetrics.diversity",
    "self_bleu": "jaxmetrics.diversity",
    "distinct_n_interval": "jaxmetrics.diversity",
    "self_bleu_interval": "jaxmetrics.diversity",
    "zipf_coefficient": "jaxmetrics.diversity",
    "repetition_fraction": "jaxmetrics.diversity",
    "termination_ratio": "jaxmetrics.diversity",
    "similarity_to_diversity": "jaxmetrics.diversity",
    "decoding_test": "jaxmetrics.diversity",
    "content_test": "jaxmetrics.diversity",
    "run_diversity_test": "jaxmetrics.diversity",
    "NGramState": "jaxmetrics.diversity",
    # models
    "load_model": "jaxmetrics.models",
    "resolve_model": "jaxmetrics.models",
    "featurize": "jaxmetrics.models",
    "token_embeddings": "jaxmetrics.models",
    "sentence_embeddings": "jaxmetrics.models",
    # end-to-end evaluation of generations
    "evaluate_generation": "jaxmetrics.evaluation",
    "GenerationReport": "jaxmetrics.evaluation",
    "GenerationSettings": "jaxmetrics.evaluation",
    "FeatureSettings": "jaxmetrics.evaluation",
    "ScoringSettings": "jaxmetrics.evaluation",
    "MauveScoring": "jaxmetrics.evaluation",
    "SimilarityScoring": "jaxmetrics.evaluation",
    # compile once per machine
    "enable_compilation_cache": "jaxmetrics.compilation",
    "disable_compilation_cache": "jaxmetrics.compilation",
    # scale-out
    "make_mesh": "jaxmetrics.sharding",
    "shard": "jaxmetrics.sharding",
    "place_rows": "jaxmetrics.sharding",
    "pad_and_shard": "jaxmetrics.sharding",
    "pad_to_multiple": "jaxmetrics.sharding",
}

_SUBMODULES = ("evaluation", "mauve", "lm", "similarity", "mark_evaluate", "diversity", "models", "meta", "sharding", "state",
               "results", "settings", "testing", "compilation")

__all__ = sorted(_EXPORTS) + list(_SUBMODULES)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"jaxmetrics.{name}")
    raise AttributeError(f"module 'jaxmetrics' has no attribute {name!r}")


def __dir__():
    return __all__
