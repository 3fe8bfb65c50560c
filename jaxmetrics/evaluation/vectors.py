"""Encoder passes of :func:`~jaxmetrics.evaluation.evaluate_generation`: pooled features of
texts (``_features``), their token embeddings (``_token_embeddings`` / ``_Tokens``) and the
per-pair BERTScore / TWMD F1 of model texts against the human text of the same prompt
(``_similarity``). The featurizers' truncation warnings become counts (one report note).
"""
from __future__ import annotations

import warnings

import numpy as np


def _count_truncations(caught, truncated: dict[int, int]) -> None:
    """Turn the featurizers' "longer than max_length" warnings into counts per length in
    ``truncated`` (one note in the report); re-issue every other warning."""
    import re

    for w in caught:
        m = re.match(r"texts: (\d+) text\(s\) longer than max_length=(\d+)", str(w.message))
        if m:
            truncated[int(m.group(2))] = truncated.get(int(m.group(2)), 0) + int(m.group(1))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _features(texts: list[str], enc, *, pooling: str, max_length, batch_size: int, mesh, progress: bool, truncated):
    """Features of ``texts``; the featurizer's truncation warning becomes a count in
    ``truncated`` (one note in the report instead of one warning per run)."""
    from jaxmetrics.models import featurize, sentence_embeddings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if pooling == "last":
            f = featurize(texts, model=enc, max_length=max_length, batch_size=batch_size, progress=progress, mesh=mesh)
        else:
            f = sentence_embeddings(texts, model=enc, max_length=max_length, batch_size=batch_size, normalize=True,
                                    progress=progress, mesh=mesh)
    _count_truncations(caught, truncated)
    return f


class _Tokens:
    """Token embeddings of the non-empty texts of a list (``rows``: their positions)."""

    def __init__(self, emb, real, content, rows, n):
        self.emb, self.real, self.content, self.rows, self.n = emb, real, content, rows, n

    def mean_pooled(self) -> np.ndarray:
        """``[n, D]`` L2-normalised mean over all real tokens (special ones included, the
        sentence-transformers pooling); NaN rows for empty texts."""
        m = self.real[..., None].astype(np.float32)
        e = (self.emb * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
        out = np.full((self.n, self.emb.shape[-1]), np.nan, np.float32)
        out[self.rows] = e
        return out


def _token_embeddings(texts: list[str], enc, *, max_length, batch_size, mesh, progress, truncated) -> _Tokens:
    from jaxmetrics.models import token_embeddings

    rows = np.asarray([i for i, t in enumerate(texts) if t.strip()], np.int64)
    if rows.size == 0:
        d = enc.hidden_size
        return _Tokens(np.zeros((0, 1, d), np.float32), np.zeros((0, 1), bool), np.zeros((0, 1), bool), rows,
                       len(texts))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = token_embeddings([texts[i] for i in rows], model=enc, max_length=max_length, batch_size=batch_size,
                               progress=progress, mesh=mesh)
    _count_truncations(caught, truncated)
    return _Tokens(out.embeddings, out.embeddings_mask, out.embeddings_mask & ~out.special_mask, rows, len(texts))


def _pad_tokens(emb, mask, L):
    n, l, d = emb.shape
    if l == L:
        return emb, mask
    e = np.zeros((n, L, d), emb.dtype)
    m = np.zeros((n, L), bool)
    e[:, :l], m[:, :l] = emb, mask
    return e, m


def _similarity(cand: _Tokens, ref: _Tokens, *, temperature, mesh) -> np.ndarray:
    """``[2, N]``: per-pair BERTScore F1 and TWMD F1 of the model texts against the human text of
    the same prompt (content tokens: special tokens dropped); 0 where either text is empty.

    The human texts are batch-centred together, the model texts together (TWMD only)."""
    from jaxmetrics.similarity import bertscore_scores, center_embeddings, similarity_scores

    out = np.zeros((2, cand.n))
    pos = {int(r): j for j, r in enumerate(ref.rows)}
    pairs = [(j, pos[int(r)]) for j, r in enumerate(cand.rows) if int(r) in pos]
    if not pairs:
        return out
    ci, ri = np.asarray([p[0] for p in pairs]), np.asarray([p[1] for p in pairs])
    L = max(cand.emb.shape[1], ref.emb.shape[1])
    emb, mask = _pad_tokens(cand.emb, cand.content, L)
    r_emb, r_mask = _pad_tokens(ref.emb, ref.content, L)
    r_cent = np.asarray(center_embeddings(r_emb, r_mask, method="batch"))
    c_cent = np.asarray(center_embeddings(emb, mask, method="batch"))
    sel = cand.rows[ci]
    prf = bertscore_scores(candidates=emb[ci], references=r_emb[ri], candidates_mask=mask[ci],
                           references_mask=r_mask[ri], mesh=mesh)
    out[0, sel] = np.asarray(prf.f1)
    prf = similarity_scores(candidates=c_cent[ci], references=r_cent[ri], candidates_mask=mask[ci],
                            references_mask=r_mask[ri], metric="twmd", temperature=temperature, mesh=mesh)
    out[1, sel] = np.asarray(prf.f1)
    return out
