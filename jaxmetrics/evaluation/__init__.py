"""End-to-end evaluation of a model's generations: the MAUVE paper's protocol for any causal
LM, dataset and featurizer (:func:`evaluate_generation`), resumable and shardable, and its report
(:class:`GenerationReport`, :func:`write_report`; the demo prints the same table).

Its settings are one object per stage (``settings``): :class:`GenerationSettings`,
:class:`FeatureSettings` and :class:`ScoringSettings` (with :class:`MauveScoring` and
:class:`SimilarityScoring`).

Modules: ``pipeline`` (the call, in stages), ``settings`` (the stage objects), ``generation`` (prompts, generation runs),
``vectors`` (encoder passes), ``scores`` (per-run scores, per-setting rows), ``report`` (the
result, its table and files), ``plot`` (its figures), ``dataset``, ``decodings``, ``store``
(the resumable cache).

Examples:
    >>> from jaxmetrics.evaluation import parse_decoding
    >>> parse_decoding("top_p=0.9").kwargs
    {'top_p': 0.9}
"""
from jaxmetrics.evaluation.dataset import PromptDataset, load_prompt_dataset
from jaxmetrics.evaluation.decodings import Decoding, parse_decoding
from jaxmetrics.evaluation.pipeline import evaluate_generation
from jaxmetrics.evaluation.plot import CurveLegend, curve_legend
from jaxmetrics.evaluation.report import COLUMNS, HUMAN, GenerationReport, ReportFiles, format_markdown, write_report
from jaxmetrics.evaluation.settings import (FeatureSettings, GenerationSettings, MauveScoring, ScoringSettings,
                                            SimilarityScoring)

__all__ = ["COLUMNS", "HUMAN", "CurveLegend", "Decoding", "FeatureSettings", "GenerationReport", "GenerationSettings",
           "MauveScoring", "PromptDataset", "ReportFiles", "ScoringSettings", "SimilarityScoring", "curve_legend",
           "evaluate_generation", "format_markdown", "load_prompt_dataset", "parse_decoding", "write_report"]
