"""Encoder passes of :func:`~jaxmetrics.evaluation.evaluate_generation`, all through the one
encoding engine (:func:`jaxmetrics.models.encode`): the features of each run's texts (pooled
vectors) and the token vectors behind the per-pair BERTScore / TWMD, which are scored by the
similarity pipeline's own scorer (:func:`jaxmetrics.similarity.score_encoded`), so the report's
columns equal :func:`~jaxmetrics.similarity.compute_similarity` on the same pairs. Empty texts
(a continuation that is only EOS) get NaN features and a similarity of 0. The engine's truncation
warnings become counts (one note in the report).
"""
from __future__ import annotations

import re
import warnings
from typing import Any

import numpy as np


def _count_truncations(caught, truncated: dict[int, int]) -> None:
    """Turn the engine's "longer than max_length" warnings into counts per length in
    ``truncated`` (one note in the report); re-issue every other warning."""
    for w in caught:
        m = re.match(r"texts: (\d+) text\(s\) longer than max_length=(\d+)", str(w.message))
        if m:
            truncated[int(m.group(2))] = truncated.get(int(m.group(2)), 0) + int(m.group(1))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


class _Vectors:
    """One encoder pass over the non-empty texts of a list (``rows``: their positions among ``n``)."""

    def __init__(self, encoding, rows: np.ndarray, n: int, dim: int):
        self.encoding, self.rows, self.n, self.dim = encoding, rows, n, dim

    def features(self, k: int, normalize: bool) -> np.ndarray:
        """``[n, D]`` pooled vectors of the ``k``-th encoded layer (L2-normalised with
        ``normalize``); NaN rows for empty texts."""
        out = np.full((self.n, self.dim), np.nan, np.float32)
        if self.encoding is not None:
            e = self.encoding.pooled[k]
            if normalize:
                e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
            out[self.rows] = e
        return out


def _encode(texts: list[str], model: Any, *, layers: tuple, pooling: str | None, tokens: bool, max_length,
            batch_size: int, mesh, progress: bool, truncated: dict, desc: str = "encode") -> _Vectors:
    from jaxmetrics.models import encode

    rows = np.asarray([i for i, t in enumerate(texts) if t.strip()], np.int64)
    if rows.size == 0:
        return _Vectors(None, rows, len(texts), model.hidden_size)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        e = encode([texts[i] for i in rows], model=model, layers=layers, pooling=pooling, tokens=tokens,
                   max_length=max_length, batch_size=batch_size, progress=progress, mesh=mesh, desc=desc)
    _count_truncations(caught, truncated)
    return _Vectors(e, rows, len(texts), model.hidden_size)


def _similarity(cand: _Vectors, ref: _Vectors, *, temperature: float) -> np.ndarray:
    """``[2, N]``: per-pair BERTScore F1 (uncentred) and TWMD F1 (batch-centred, ``temperature``)
    of the model texts against the human text of the same prompt, from the first encoded layer's
    token vectors with special tokens dropped (the defaults of
    :func:`~jaxmetrics.similarity.compute_similarity`); 0 where either text is empty."""
    from jaxmetrics.models import concat_encodings
    from jaxmetrics.similarity import SimilaritySettings, score_encoded

    out = np.zeros((2, cand.n))
    pos = {int(r): j for j, r in enumerate(ref.rows)}
    pairs = [(j, pos[int(r)]) for j, r in enumerate(cand.rows) if int(r) in pos]
    if not pairs:
        return out
    both = concat_encodings(cand.encoding, ref.encoding)
    ci = np.asarray([p[0] for p in pairs])
    ri = len(cand.rows) + np.asarray([p[1] for p in pairs])
    sel = cand.rows[ci]
    for k, settings in enumerate((SimilaritySettings(metric="bertscore", centering="none"),
                                  SimilaritySettings(metric="twmd", centering="batch", temperature=temperature))):
        out[k, sel] = score_encoded(both, candidates=ci, references=ri, settings=settings).f1
    return out
