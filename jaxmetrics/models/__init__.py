"""Text and models: Flax NNX GPT-2 / BERT / RoBERTa / Llama-family models loaded from Hugging Face
safetensors checkpoints, the causal-LM protocol, and the one encoding engine (:func:`encode`:
tokenize, plan batches, one forward pass for any set of layers, named pooling, feature cache)
behind every text-consuming metric, and :func:`save_pretrained` to write a (fine-tuned) GPT-2 back
as a Hugging Face checkpoint; :func:`featurize`, :func:`sentence_embeddings` and
:func:`token_embeddings` are its named views.

This is the only layer of jaxmetrics that touches strings, files or the network. Every
function that needs a model takes ``model=`` (a :class:`LoadedModel`, a hub id or a local
directory) and resolves it with :func:`resolve_model`.
"""
from jaxmetrics.models._base import ModelOutput
from jaxmetrics.models.batching import (
    PACK_LENGTH, PACK_ROWS, Batch, BatchArrays, bucket_length, layout_batch, pack_rows, plan_batches,
)
from jaxmetrics.models.encoding import Encoding, concat_encodings, encode, run_encoder
from jaxmetrics.models.featurizers import TokenEmbeddings, featurize, featurize_tokens, sentence_embeddings, token_embeddings
from jaxmetrics.models.pooling import DEFAULT_MAX_LENGTH, POOLINGS, resolve_layers, resolve_pooling
from jaxmetrics.models.io import read_texts
from jaxmetrics.models.loader import LoadedModel, load_model
from jaxmetrics.models.protocol import CausalLM, resolve_model
from jaxmetrics.models.saving import SavedCheckpoint, save_pretrained
from jaxmetrics.models.tokens import Tokenized, check_batch_size, check_max_length, tokenize
from jaxmetrics.models.registry import ARCHITECTURES, Architecture, known_model_types, register_architecture

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "Batch",
    "BatchArrays",
    "CausalLM",
    "DEFAULT_MAX_LENGTH",
    "Encoding",
    "LoadedModel",
    "ModelOutput",
    "PACK_LENGTH",
    "PACK_ROWS",
    "POOLINGS",
    "TokenEmbeddings",
    "SavedCheckpoint",
    "Tokenized",
    "bucket_length",
    "check_batch_size",
    "check_max_length",
    "concat_encodings",
    "encode",
    "featurize",
    "featurize_tokens",
    "known_model_types",
    "layout_batch",
    "load_model",
    "pack_rows",
    "plan_batches",
    "read_texts",
    "register_architecture",
    "resolve_layers",
    "resolve_model",
    "resolve_pooling",
    "run_encoder",
    "save_pretrained",
    "sentence_embeddings",
    "token_embeddings",
    "tokenize",
]
