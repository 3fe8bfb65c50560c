"""Text and models: Flax NNX GPT-2 / BERT / RoBERTa / Llama-family models loaded from Hugging Face
safetensors checkpoints, the causal-LM protocol, and featurizers that turn texts into arrays.

This is the only layer of jaxmetrics that touches strings, files or the network. Every
function that needs a model takes ``model=`` (a :class:`LoadedModel`, a hub id or a local
directory) and resolves it with :func:`resolve_model`.
"""
from jaxmetrics.models._base import ModelOutput
from jaxmetrics.models.featurizers import (
    RaggedTokenEmbeddings, TokenEmbeddings, bucket_length, featurize, featurize_tokens, ragged_token_embeddings, sentence_embeddings,
    token_embeddings,
)
from jaxmetrics.models.io import read_texts
from jaxmetrics.models.loader import LoadedModel, load_model
from jaxmetrics.models.protocol import CausalLM, resolve_model
from jaxmetrics.models.registry import ARCHITECTURES, Architecture, known_model_types, register_architecture

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "CausalLM",
    "LoadedModel",
    "ModelOutput",
    "RaggedTokenEmbeddings",
    "TokenEmbeddings",
    "bucket_length",
    "featurize",
    "featurize_tokens",
    "known_model_types",
    "load_model",
    "ragged_token_embeddings",
    "read_texts",
    "register_architecture",
    "resolve_model",
    "sentence_embeddings",
    "token_embeddings",
]
