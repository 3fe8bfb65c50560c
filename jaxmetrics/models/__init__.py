"""Text and models: Flax NNX GPT-2 / BERT / RoBERTa loaded from Hugging Face safetensors
checkpoints, and featurizers that turn texts into arrays.

This is the only layer of jaxmetrics that touches strings, files or the network.
"""
from jaxmetrics.models._base import ModelOutput
from jaxmetrics.models.cache import FeatureCache
from jaxmetrics.models.featurize import (
    bucket_length, featurize, featurize_tokens, sentence_embeddings, token_embeddings, tokenize,
)
from jaxmetrics.models.io import read_texts
from jaxmetrics.models.loader import LoadedModel, load_model
from jaxmetrics.models.registry import ARCHITECTURES, Architecture, known_model_types, register_architecture

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "FeatureCache",
    "LoadedModel",
    "ModelOutput",
    "bucket_length",
    "featurize",
    "featurize_tokens",
    "known_model_types",
    "load_model",
    "read_texts",
    "register_architecture",
    "sentence_embeddings",
    "token_embeddings",
    "tokenize",
]
