"""End-to-end evaluation of a model's generations: the MAUVE paper's protocol for any causal
LM, dataset and featurizer (:func:`evaluate_generation`), resumable and shardable.

Examples:
    >>> from jaxmetrics.evaluation import parse_decoding
    >>> parse_decoding("top_p=0.9").kwargs
    {'top_p': 0.9}
"""
from jaxmetrics.evaluation.core import COLUMNS, HUMAN, GenerationReport, evaluate_generation, format_markdown, write_report
from jaxmetrics.evaluation.dataset import PromptDataset, load_prompt_dataset
from jaxmetrics.evaluation.decodings import Decoding, parse_decoding

__all__ = ["COLUMNS", "HUMAN", "Decoding", "GenerationReport", "PromptDataset", "evaluate_generation",
           "format_markdown", "load_prompt_dataset", "parse_decoding", "write_report"]
