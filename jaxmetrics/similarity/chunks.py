"""Pairs of texts as padded chunks of their selected token vectors: the one scoring layout
behind :func:`~jaxmetrics.similarity.compute_similarity` and
:func:`~jaxmetrics.similarity.correlation_sweep`.

Both start from the encoding engine's ragged token vectors (:func:`jaxmetrics.models.encode`,
``token_vectors [K, S, D]`` with ``offsets``) of the distinct texts, and score pair ``k`` =
(candidate text ``ci[k]``, reference text ``ri[k]``) as follows:

1. :func:`select_tokens` — which tokens take part (``special_tokens``: drop [CLS]/[SEP], keep
   only a leading [CLS], or keep all);
2. :meth:`PairLayout.means` — the centering mean of each pair's text on one side, token weighted
   over the selected tokens, from per-text float64 sums (:meth:`PairLayout.sums`): one row per
   pair for ``sentence | corpus | batch`` (``None`` for ``none | dimension``, which share nothing
   between texts);
3. pairs scored longest first in chunks of ``pair_chunk`` (:attr:`PairLayout.chunks`), each
   gathered front-packed and padded only to its own bucketed length (:meth:`PairLayout.gather`);
4. :func:`center_chunk` (subtract the mean, or the per-token scalar mean for ``dimension``, then
   L2-normalise) and :func:`score_chunk` (BERTScore's greedy matching or a metric of
   :mod:`~jaxmetrics.similarity.kernels`) inside one jitted program per chunk shape.

Because the sweep runs these same steps with the centering given as data (means and a
``dimension`` flag), each of its settings equals a separate ``compute_similarity`` call.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import l2_normalize
from jaxmetrics.similarity.greedy import batch_bertscore
from jaxmetrics.similarity.kernels import PRF, batch_similarity

if TYPE_CHECKING:
    from jaxmetrics.similarity.settings import SimilaritySettings

__all__ = ["CENTERING_BATCHES", "ChunkCache", "PairLayout", "batch_sums", "center_chunk", "centering_batch_ids", "centering_batches",
           "chunk_means", "compat_padding", "first_pass_means", "lookup_idf", "packed_selection", "packed_weights",
           "pad_rows", "pair_keys", "reference_idf", "refuse_zero_idf", "score_chunk", "select_tokens", "stream_chunks"]

#: How ``centering="batch"`` forms its batches (``centering_batches=``): ``consecutive`` pairs in
#: input order (the paper's; scores depend on the order of the pairs) or ``hashed``: pairs sorted
#: by a stable key of their tokens (:func:`pair_keys`), so scores do not depend on input order.
CENTERING_BATCHES = ("consecutive", "hashed")


def select_tokens(real: np.ndarray, special: np.ndarray, special_tokens: str, ci: np.ndarray,
                  ri: np.ndarray) -> np.ndarray:
    """bool ``[texts, T]``: the tokens a similarity scores.

    Real tokens (``real``), without special tokens (``"drop"``), without all but a leading [CLS]
    (``"cls"``), or all of them (``"keep"``). Raises ``ValueError`` naming the first candidate
    (rows ``ci``) or reference (rows ``ri``) left with no token.
    """
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


def centering_batches(n: int, center_batch_size: int | None, groups: np.ndarray | None = None,
                      keys: np.ndarray | None = None) -> np.ndarray:
    """int ``[n]``: the centering batch of each of ``n`` pairs.

    A batch is ``center_batch_size`` consecutive pairs of one group: the pairs of each group are taken
    in input order and cut into batches of ``center_batch_size`` (the last one of a group may be
    shorter), so no batch crosses a group boundary and a group's batches are the ones it would
    get on its own (the authors centre each STS sub-set separately). ``groups``: int ``[n]``
    group ids (``None``: one group); ``center_batch_size=None``: one batch per group (corpus centering
    per group). Batch ids are numbered in order of first appearance.

    With ``keys`` (uint64 ``[n]``, e.g. :func:`pair_keys`) the pairs of each group are taken in
    the order of their keys instead of input order (the ``hashed`` batching): a batch then
    depends only on the set of pairs, never on their order; pairs with equal keys (the same pair
    twice) share the batch of the first of them, so shuffling cannot separate them either.

    Examples:
      >>> centering_batches(5, 2).tolist()
      [0, 0, 1, 1, 2]
      >>> centering_batches(7, 2, np.array([0, 0, 0, 1, 1, 1, 1])).tolist()
      [0, 0, 1, 2, 2, 3, 3]
      >>> centering_batches(5, 2, keys=np.array([9, 1, 7, 3, 5], np.uint64)).tolist()  # by key: 1 3 | 5 7 | 9
      [0, 1, 2, 1, 2]
    """
    g = np.zeros(n, np.int64) if groups is None else np.asarray(groups, np.int64)
    if keys is None:
        order = np.argsort(g, kind="stable")
    else:
        keys = np.asarray(keys, np.uint64)
        if keys.shape != (n,):
            raise ValueError(f"keys: expected {n} pair keys, got shape {keys.shape}")
        order = np.lexsort((keys, g))                # by group, then by key
    sg = g[order]
    starts = np.flatnonzero(np.r_[True, sg[1:] != sg[:-1]]) if n else np.zeros(0, np.int64)
    pos = np.arange(n) - np.repeat(starts, np.diff(np.r_[starts, n]))   # place within its group
    if keys is not None and n:
        sk = keys[order]
        first = np.r_[True, (sk[1:] != sk[:-1]) | (sg[1:] != sg[:-1])]
        pos = pos[np.maximum.accumulate(np.where(first, np.arange(n), 0))]  # equal keys: the first's place
    rank = np.empty(n, np.int64)
    rank[order] = pos
    within = np.zeros(n, np.int64) if center_batch_size is None else rank // int(center_batch_size)
    key = g * (n + 1) + within
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    renumber = np.empty(first.size, np.int64)
    renumber[np.argsort(first, kind="stable")] = np.arange(first.size)
    return renumber[inverse.reshape(-1)]


def pair_keys(token_ids: np.ndarray, real: np.ndarray, ci: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """uint64 ``[N]``: a stable key of each pair, the first 8 bytes of the BLAKE2b digest of its
    candidate's token ids followed by its reference's (the real tokens of ``token_ids [texts, T]``
    under ``real [texts, T]``, special tokens included, after truncation).

    The key depends only on the pair's two token sequences -- not on its position, the process
    (unlike Python's salted ``hash``) or the platform -- and tells the two sides apart (a pair and
    its swap get different keys). The ``hashed`` centering batches sort by it.

    Examples:
      >>> ids = np.array([[5, 6, 0], [7, 0, 0]]); real = ids > 0
      >>> k = pair_keys(ids, real, np.array([0, 1, 0]), np.array([1, 0, 1]))
      >>> k.dtype, bool(k[0] == k[2]), bool(k[0] != k[1])
      (dtype('uint64'), True, True)
    """
    return _pair_keys(lambda t: token_ids[t][real[t]], ci, ri)


def _pair_keys(ids_of, ci: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """:func:`pair_keys` with ``ids_of(t)`` the real token ids of text ``t`` (any storage)."""
    import hashlib

    texts = {}
    for t in np.unique(np.concatenate([ci, ri])).tolist():
        texts[t] = hashlib.blake2b(np.asarray(ids_of(t), "<i8").tobytes(), digest_size=16).digest()
    out = np.empty(len(ci), np.uint64)
    for k, (c, r) in enumerate(zip(np.asarray(ci).tolist(), np.asarray(ri).tolist())):
        out[k] = int.from_bytes(hashlib.blake2b(texts[c] + texts[r], digest_size=8).digest(), "little")
    return out


def batch_sums(sums: np.ndarray, counts: np.ndarray, batch: np.ndarray, start=None):
    """float64 ``([B, D], [B])``: the vector sums and token counts of each centering batch, from
    the per-pair rows ``sums [n, D]`` and ``counts [n]`` and the pairs' batch ids ``batch [n]``
    (``0 .. B - 1``), each batch's rows added in their order (input order, as the pairs come).

    ``start``: optional running totals ``(sums [B, D], counts [B])`` of earlier pairs (all
    ``B`` batches), added before each batch's rows (so a batch split over several calls sums in
    the same order as in one); the result is then the updated totals of all ``B`` batches.
    """
    order = np.argsort(batch, kind="stable")      # each batch's pairs, in input order
    ids = batch[order]
    bounds = np.flatnonzero(np.r_[True, np.diff(ids) != 0])
    rows, cnt = sums[order].astype(np.float64), counts[order].astype(np.float64)
    if start is not None:
        rows[bounds] += start[0][ids[bounds]]
        cnt[bounds] += start[1][ids[bounds]]
    if start is None:
        size = int(batch.max()) + 1 if batch.size else 0
        out_s, out_c = np.zeros((size, sums.shape[1])), np.zeros(size)
    else:
        out_s, out_c = start[0].copy(), start[1].copy()
    out_s[ids[bounds]] = np.add.reduceat(rows, bounds, axis=0)
    out_c[ids[bounds]] = np.add.reduceat(cnt, bounds)
    return out_s, out_c


def pad_rows(a: np.ndarray, rows: int) -> np.ndarray:
    """``a`` with zero (False) rows appended up to ``rows``."""
    return np.pad(a, [(0, rows - a.shape[0])] + [(0, 0)] * (a.ndim - 1))


class PairLayout:
    """How ``N`` pairs of encoded texts are scored in chunks (see the module docstring).

    Args:
      offsets: int ``[texts + 1]`` row offsets of each text's tokens in the ragged vectors.
      real: bool ``[texts, T]`` real tokens (the engine's ``tokens_mask``).
      take: bool ``[texts, T]`` the tokens that take part (:func:`select_tokens`).
      ci, ri: int ``[N]`` the candidate and reference text of each pair.
      pair_chunk: pairs per chunk.
      width: the longest selected text, which caps the chunks' padded lengths (``None``: the
        longest of ``take``; a caller scoring a corpus a part at a time gives the corpus's, so the
        parts compile the same few lengths).
      chunk_tokens: optional cap on ``rows * length`` of a chunk: chunks of long pairs then hold
        fewer pairs (:meth:`rows_of`; one row count per length, so no more shapes), which bounds
        the gathered ``[rows, length, D]`` arrays whatever the texts' lengths (``None``:
        ``pair_chunk`` pairs at every length).

    Attributes:
      count: int ``[texts]`` selected tokens per text.
      rows: rows of every chunk (``min(N, pair_chunk)``; a short last chunk gets filler rows).
      chunks: ``(pairs, length)`` per chunk: the pair indices (longest pairs first) and the
        chunk's padded length (a bucket of :func:`jaxmetrics.models.bucket_length`, capped at
        the longest text).
    """

    def __init__(self, offsets: np.ndarray, real: np.ndarray, take: np.ndarray, ci: np.ndarray,
                 ri: np.ndarray, pair_chunk: int, width: int | None = None, chunk_tokens: int | None = None):
        from jaxmetrics.models import bucket_length

        self.offsets, self.real, self.take, self.ci, self.ri = offsets, real, take, ci, ri
        self.count = take.sum(axis=1)
        # positions of each text's selected tokens, first (a stable argsort keeps their order)
        self.pos = np.argsort(~take, axis=1, kind="stable").astype(np.int64)
        width = int(self.count.max()) if width is None else int(width)
        if self.pos.shape[1] < width:   # chunks may be padded past these texts' own longest
            self.pos = np.pad(self.pos, [(0, 0), (0, width - self.pos.shape[1])])
        n = len(ci)
        # Pairs are scored longest first, so each chunk is padded only to its own longest text.
        # Centering means are fixed per pair, so the order does not change any score.
        order = np.argsort(-np.maximum(self.count[ci], self.count[ri]), kind="stable")
        self.rows = min(n, pair_chunk)
        self.chunk_tokens = chunk_tokens
        self.chunks = []
        s = 0
        while s < n:      # the first pair of a chunk is its longest: it sets the chunk's length
            first = order[s]
            size = self.rows_of(bucket_length(int(max(self.count[ci[first]], self.count[ri[first]])), width))
            p = order[s:s + size]
            length = bucket_length(int(max(self.count[ci[p]].max(), self.count[ri[p]].max())), width)
            self.chunks.append((p, length))
            s += size

    def rows_of(self, length: int) -> int:
        """Rows of a chunk padded to ``length`` (``rows``, or fewer under ``chunk_tokens``)."""
        if self.chunk_tokens is None:
            return self.rows
        return max(1, min(self.rows, int(self.chunk_tokens) // int(length)))

    def side(self, side: str) -> np.ndarray:
        """The text of each pair on ``side`` (``"c"``: candidates, ``"r"``: references)."""
        return self.ci if side == "c" else self.ri

    def sums(self, flat: np.ndarray) -> np.ndarray:
        """float64 ``[texts, D]``: the sum of each text's selected token vectors, from the
        unpadded ``flat [S, D]``: all real tokens summed per text, minus the few unselected ones."""
        offsets, real, take = self.offsets, self.real, self.take
        sums = np.add.reduceat(flat, offsets[:-1], axis=0, dtype=np.float64)
        drop = (real & ~take)[real]                   # per row of `flat` (text-major, in order)
        if drop.any():
            text = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[drop]
            rows = flat[drop].astype(np.float64)
            first = np.flatnonzero(np.r_[True, text[1:] != text[:-1]])
            sums[text[first]] -= np.add.reduceat(rows, first, axis=0)
        return sums

    def means(self, sums: np.ndarray | None, side: str, centering: str, center_batch_size: int,
              groups: np.ndarray | None = None, keys: np.ndarray | None = None) -> np.ndarray | None:
        """float32 ``[N, D]``: the centering mean of each pair's text on ``side``, token weighted
        over the selected tokens as :func:`~jaxmetrics.similarity.center_embeddings` computes it
        (``batch``: the pair's batch of :func:`centering_batches`, ``center_batch_size`` consecutive
        pairs of its group, in input order, or in the order of ``keys`` (:func:`pair_keys`) for the
        ``hashed`` batching; ``corpus``: all pairs of its group); ``None`` for ``none`` /
        ``dimension``. ``groups``: int ``[N]`` group ids (``None``: one group)."""
        if centering not in ("sentence", "corpus", "batch"):
            return None
        idx = self.side(side)
        s, c = sums[idx], self.count[idx].astype(np.float64)
        if centering != "sentence":
            batch = centering_batches(len(idx), center_batch_size if centering == "batch" else None, groups,
                                      keys if centering == "batch" else None)
            s, c = batch_sums(s, c, batch)
            s, c = s[batch], c[batch]
        return (s / np.maximum(c, 1.0)[:, None]).astype(np.float32)

    def gather(self, flat: np.ndarray, side: str, pairs: np.ndarray, length: int, weights=None):
        """The selected token vectors of ``pairs``' texts on ``side``, front-packed and padded to
        ``[rows, length, D]``, with their mask (filler rows see one zero token) and weights
        (``None`` without ``weights [texts, T]``; filler rows weigh 1)."""
        u = self.side(side)[pairs]
        rows = self.rows_of(length)
        valid = pad_rows(np.arange(length) < self.count[u][:, None], rows)
        at = pad_rows(self.offsets[u][:, None] + self.pos[u, :length], rows)
        e = flat[np.where(valid, at, 0)]               # one gather: [rows, length, D]
        e[~valid] = 0.0
        m = valid.copy()
        m[len(u):, 0] = True
        w = None
        if weights is not None:
            w = np.where(valid[:len(u)], np.take_along_axis(weights[u], self.pos[u, :length], axis=1), 0.0)
            w = np.pad(w.astype(np.float32), [(0, rows - len(u)), (0, 0)], constant_values=1.0)
        return e, m, w


def center_chunk(embeddings, embeddings_mask, mean=None, dimension: Any = False):
    """Centred, L2-normalised token vectors of one chunk (traceable).

    ``v = w - mean`` with ``mean [B, D]`` one row per text (``None``: nothing subtracted), and
    with ``dimension`` (a bool, or a traced bool scalar) also the scalar mean of each vector's D
    coordinates; then ``v / ||v||`` on ``embeddings_mask``, 0 elsewhere. With ``mean=None`` and
    ``dimension`` this is :func:`~jaxmetrics.similarity.center_embeddings` ``"none"`` /
    ``"dimension"``; with a mean of :meth:`PairLayout.means`, its ``sentence | corpus | batch``.
    """
    e, m = embeddings, embeddings_mask
    v = e if mean is None else e - mean[:, None, :]
    if dimension is True:
        v = v - jnp.mean(e, axis=-1, keepdims=True)
    elif dimension is not False:
        v = v - jnp.where(dimension, jnp.mean(e, axis=-1, keepdims=True), 0.0)
    return l2_normalize(jnp.where(m[..., None], v, 0.0), m)


def score_chunk(candidates, references, candidates_mask, references_mask, *, metric: str,
                temperature=1.0, num_iterations: int = 1, candidates_weights=None, references_weights=None,
                bert_score_compat: bool = False, candidates_pad_zero=None, references_pad_zero=None,
                baseline=None) -> PRF:
    """P, R, F ``[B]`` of a chunk of centred unit token vectors (traceable): BERTScore's greedy
    matching (:func:`~jaxmetrics.similarity.batch_bertscore`) for ``metric="bertscore"``, else
    :func:`~jaxmetrics.similarity.batch_similarity` (no further normalisation of the tokens)."""
    if metric == "bertscore":
        return batch_bertscore(candidates=candidates, references=references, candidates_mask=candidates_mask,
                               references_mask=references_mask, candidates_weights=candidates_weights,
                               references_weights=references_weights, bert_score_compat=bert_score_compat,
                               candidates_pad_zero=candidates_pad_zero, references_pad_zero=references_pad_zero,
                               baseline=baseline)
    return batch_similarity(candidates=candidates, references=references, candidates_mask=candidates_mask,
                            references_mask=references_mask, metric=metric, temperature=temperature,
                            num_iterations=num_iterations, candidates_weights=candidates_weights,
                            references_weights=references_weights, normalize_tokens=False)


# ----------------------------------------------------------------------------- plans over packed token ids
# (what the streamed pipeline settles from the token ids alone, before any forward pass)

def chunk_means(flat: np.ndarray, layout: PairLayout, centering: str, batch: np.ndarray | None,
                table_means: dict | None) -> dict:
    """Per-pair centering means ``{"c": [n, D], "r": [n, D]}`` (``None`` entries for ``none`` /
    ``dimension``) of one chunk: ``sentence`` from its texts, ``batch`` / ``corpus`` from the
    chunk's whole batches (``batch``: the pairs' global batch ids, input order within each) or
    from ``table_means`` (``{side: [B, D]}`` of a first pass)."""
    if centering not in ("sentence", "corpus", "batch"):
        return {"c": None, "r": None}
    if table_means is not None:
        return {side: table_means[side][batch] for side in ("c", "r")}
    sums = layout.sums(flat)
    if centering == "sentence":
        return {side: layout.means(sums, side, "sentence", 0) for side in ("c", "r")}
    local = np.unique(batch, return_inverse=True)[1].reshape(-1)
    out = {}
    for side in ("c", "r"):
        idx = layout.side(side)
        bs, bc = batch_sums(sums[idx], layout.count[idx], local)
        out[side] = (bs[local] / np.maximum(bc[local], 1.0)[:, None]).astype(np.float32)
    return out


def first_pass_means(chunks: list, encode_chunk: Any, batch: np.ndarray) -> dict:
    """``{side: float32 [B, D]}``: each centering batch's token-weighted mean per side, summed over
    a pass of the encoder through ``chunks`` (the pairs in batch order, input order within each
    batch), running totals carried from chunk to chunk (the order of a sum over all pairs)."""
    num = int(batch.max()) + 1
    totals = {}
    for p in chunks:
        flat, layout, _ = encode_chunk(p)
        sums = layout.sums(flat)
        for side in ("c", "r"):
            idx = layout.side(side)
            start = totals.get(side)
            if start is None:
                start = (np.zeros((num, sums.shape[1])), np.zeros(num))
            totals[side] = batch_sums(sums[idx], layout.count[idx], batch[p], start=start)
        del flat, layout, sums
    return {side: (t[0] / np.maximum(t[1], 1.0)[:, None]).astype(np.float32) for side, t in totals.items()}


def stream_chunks(ci: np.ndarray, ri: np.ndarray, count: np.ndarray, batch: np.ndarray | None, size: int):
    """``(chunks, first_pass)``: the pair indices of each chunk that is encoded and scored, and
    ``None`` or the chunks of a first pass that sums the centering means (a batch larger than
    ``size``). See :func:`~jaxmetrics.similarity.pipeline.score_texts`."""
    n = len(ci)
    first = None
    if batch is not None:
        order = np.argsort(batch, kind="stable")        # batch by batch, input order within
        sizes = np.bincount(batch)
        if sizes.max() <= size:                          # whole batches per chunk
            ends, bounds = np.cumsum(sizes).tolist(), [0]
            for b, e in enumerate(ends):
                if e - bounds[-1] > size:
                    bounds.append(ends[b - 1])
            bounds.append(n)
            return [order[a:b] for a, b in zip(bounds[:-1], bounds[1:])], None
        first = [order[i:i + size] for i in range(0, n, size)]
    order = np.argsort(-np.maximum(count[ci], count[ri]), kind="stable")
    return [order[i:i + size] for i in range(0, n, size)], first


def packed_selection(table: Any, special_tokens: str, ci: np.ndarray, ri: np.ndarray):
    """``(take [S], count [texts])``: :func:`~jaxmetrics.similarity.chunks.select_tokens` over the
    packed token ids of a tokenization (one flag per token), and the selected tokens per text;
    the same ``ValueError`` for a text left with none."""
    special, offsets, lengths = table.special, table.offsets, table.lengths
    if special_tokens == "drop":
        take = ~special
    elif special_tokens == "cls":
        pos = np.arange(special.size) - np.repeat(offsets[:-1], lengths)
        take = ~(special & (pos > 0))
    else:
        take = np.ones(special.size, bool)
    count = np.add.reduceat(take.astype(np.int64), offsets[:-1]) if take.size else np.zeros(0, np.int64)
    empty = np.flatnonzero(count[np.concatenate([ci, ri])] == 0)
    if empty.size:
        k = int(empty[0])
        side, idx = ("candidates", k) if k < len(ci) else ("references", k - len(ci))
        raise ValueError(f"{side}: text {idx} has no tokens left after dropping special tokens")
    return take, count


def packed_weights(table: Any, take: np.ndarray, ci: np.ndarray, ri: np.ndarray, *, settings: SimilaritySettings,
                   idf_weights: Mapping | None, vocab_size: int | None) -> np.ndarray | None:
    """float32 ``[S]``: :func:`~jaxmetrics.similarity.pipeline.score_encoded`'s token weights over the packed token ids (one weight per token;
    ``None``: uniform), with the same zero-weight ``ValueError``."""
    ids, compat = table.ids, settings.bert_score_compat
    if idf_weights is not None:
        w = lookup_idf(idf_weights, ids[None], np.ones((1, ids.size), bool))[0]
    elif settings.idf:
        w = reference_idf(table, ri, max(vocab_size or 0, int(ids.max()) + 1))[ids]
    elif compat:
        w = (~table.special).astype(np.float32)
    else:
        return None
    if not compat:
        w = np.where(take, w, 0.0).astype(np.float32)
        refuse_zero_idf(np.add.reduceat(w, table.offsets[:-1])[np.concatenate([ci, ri])], len(ci))
    return w


def refuse_zero_idf(totals: np.ndarray, num_candidates: int) -> None:
    """Refuse the first text (candidates first, then references) whose idf weights sum to zero."""
    zero = np.flatnonzero(totals <= 0)
    if zero.size:
        k = int(zero[0])
        side, idx = ("candidates", k) if k < num_candidates else ("references", k - num_candidates)
        raise ValueError(f"{side}: text {idx} has zero total idf weight (all its tokens occur in "
                         f"every reference); use idf=False")


def reference_idf(table: Any, ri: np.ndarray, vocab_size: int) -> np.ndarray:
    """:func:`~jaxmetrics.similarity.idf_table` over the references of the pairs (each pair's
    reference one document, as there), from the packed token ids of the distinct texts."""
    n_texts = len(table.offsets) - 1
    mult = np.bincount(ri, minlength=n_texts)
    doc = np.repeat(np.arange(n_texts), table.lengths)
    sel = mult[doc] > 0
    key = np.unique(doc[sel] * np.int64(vocab_size) + table.ids[sel].astype(np.int64))
    df = np.bincount(key % vocab_size, weights=mult[key // vocab_size], minlength=vocab_size)
    return np.log((len(ri) + 1.0) / (df + 1.0)).astype(np.float32)


def compat_padding(lengths: np.ndarray, ci: np.ndarray, ri: np.ndarray, batch_size: int) -> tuple:
    """bool ``([N], [N])``: bert_score pads each batch of ``batch_size`` pairs (input order) to its
    longest sentence per side; a pair has padding iff it is shorter than that."""
    clen, rlen = lengths[ci], lengths[ri]
    batch = np.arange(len(ci)) // batch_size
    starts = np.arange(0, len(ci), batch_size)
    return (clen < np.maximum.reduceat(clen, starts)[batch], rlen < np.maximum.reduceat(rlen, starts)[batch])


def centering_batch_ids(table: Any, ci: np.ndarray, ri: np.ndarray, settings: SimilaritySettings,
                        group: np.ndarray | None) -> np.ndarray | None:
    """int ``[N]``: each pair's centering batch (:func:`~jaxmetrics.similarity.chunks.centering_batches`)
    for ``batch`` (with the ``hashed`` keys of its token ids when asked) and ``corpus`` (one
    batch per group) centering; ``None`` for the others."""
    s = settings
    if s.centering == "batch":
        keys = None
        if s.centering_batches == "hashed":
            o, ids = table.offsets, table.ids
            keys = _pair_keys(lambda t: ids[o[t]:o[t + 1]], ci, ri)
        return centering_batches(len(ci), s.center_batch_size, group, keys)
    if s.centering == "corpus":
        return centering_batches(len(ci), None, group)
    return None


def lookup_idf(idf: Mapping, ids: np.ndarray, real: np.ndarray) -> np.ndarray:
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


class ChunkCache:
    """The finished chunks of one :func:`~jaxmetrics.similarity.pipeline.score_texts` call on disk (a
    :class:`~jaxmetrics.evaluation.store.RunStore` under ``cache_dir``): ``similarity-<key>/`` holds
    ``chunk-<i>.npz`` (the chunk's pair indices and their P, R, F1) and, with a first pass,
    ``first-pass-means.npz``. ``<key>`` hashes everything the scores depend on (the model's
    fingerprint and dtype, the settings, the layer, ``max_length``, every text's token ids, the
    pairs, the groups, the idf weights, the chunk size and the package version), so a file is only
    ever read back by the same computation; each chunk file is also checked against its pairs."""

    def __init__(self, cache_dir: Any, *, model: Any, settings: SimilaritySettings, layers: tuple, max_length: int,
                 table: Any, ci: np.ndarray, ri: np.ndarray, group: Any, idf_weights: Mapping | None,
                 stream_pairs: int):
        from jaxmetrics import __version__
        from jaxmetrics.evaluation.store import RunStore, stable_hash

        idf = None if idf_weights is None else sorted((int(k), float(v)) for k, v in idf_weights.items())
        key = stable_hash({
            "model": model.fingerprint, "dtype": str(jnp.dtype(model.dtype)), "settings": settings.fingerprint(),
            "layers": list(map(int, layers)), "max_length": int(max_length), "version": __version__,
            "ids": stable_hash(table.ids, 16), "special": stable_hash(table.special, 16),
            "offsets": stable_hash(table.offsets, 16), "ci": stable_hash(ci, 16), "ri": stable_hash(ri, 16),
            "group": None if group is None else stable_hash(np.asarray(group), 16), "idf": idf,
            "stream_pairs": int(stream_pairs)}, 16)
        self.store, self.run = RunStore(cache_dir), ("similarity-" + key,)

    def load_chunk(self, i: int, pairs: np.ndarray, out: dict) -> bool:
        """Fill ``out[name][pairs]`` from chunk ``i``'s file; ``False`` when there is none (or it is
        damaged: then a warning names it)."""
        def check(z):
            if not np.array_equal(z["pairs"], pairs):
                raise ValueError("its pairs are not this chunk's")
            if any(np.shape(z[k]) != pairs.shape for k in out):
                raise ValueError("its scores do not have one value per pair")
        z = self.store.load_arrays(self.run, f"chunk-{i:06d}", check=check)
        if z is None:
            return False
        for k in out:
            out[k][pairs] = z[k]
        return True

    def save_chunk(self, i: int, pairs: np.ndarray, out: dict) -> None:
        self.store.save_arrays(self.run, f"chunk-{i:06d}", {"pairs": pairs, **{k: v[pairs] for k, v in out.items()}})

    def load_means(self) -> dict | None:
        def check(z):
            if set(z) != {"c", "r"} or any(v.ndim != 2 for v in z.values()):
                raise ValueError("expected the [batches, D] means of both sides")
        return self.store.load_arrays(self.run, "first-pass-means", check=check)

    def save_means(self, means: dict) -> None:
        self.store.save_arrays(self.run, "first-pass-means", means)
