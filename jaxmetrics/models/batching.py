"""The batch planner: how texts of different lengths are laid out for forward passes.

Every forward pass over texts in jaxmetrics — the encoding engine (:func:`~jaxmetrics.models.encode`),
the per-text perplexity's logits passes, the LM scores' passes (:func:`plan_batches`) and the
sliding-window perplexity's fixed-width windows (:func:`plan_rows`) — is planned here, so a layout improvement reaches
every caller at once. Two layouts:

* **padded**: texts sorted longest first, cut into batches of ``batch_size`` rows, each right-padded
  to a *length bucket* (:func:`bucket_length`: four per octave), so a corpus compiles a few shapes
  rather than one per batch;
* **packed**: texts of at most :data:`PACK_LENGTH` tokens laid back to back in rows of
  :data:`PACK_LENGTH` positions (best-fit decreasing, :func:`pack_rows`), :data:`PACK_ROWS` rows
  per pass, with *segment ids* that give each text its own positions and an attention mask
  confined to itself (for models with ``supports_packing``). No position is spent on padding
  beyond the rows' last free slots.

Packing pays where lengths vary (real sentences: 96 % of the computed positions are tokens packed,
83 % padded); where they are nearly equal it can lose (texts of 46-52 tokens: one per 64-position
row, 77 % packed against 88 % padded in length buckets). :func:`plan_batches` therefore lays out
the packable texts both ways and keeps the plan that computes fewer positions.

Examples:
    >>> import numpy as np
    >>> lengths = np.array([3, 40, 5, 70, 2])
    >>> [(b.kind, b.items.tolist(), b.length) for b in plan_batches(lengths, batch_size=2, max_length=128)]
    [('padded', [3, 1], 80), ('padded', [2, 0], 8), ('padded', [4], 8)]
    >>> [(b.kind, b.items.tolist()) for b in plan_batches(lengths, batch_size=2, max_length=128,
    ...                                                  packable=lengths <= PACK_LENGTH)]
    [('padded', [3]), ('packed', [1, 2, 0, 4])]
"""
from __future__ import annotations

import numpy as np

from jaxmetrics.results import Result, static_field

__all__ = ["PACK_LENGTH", "PACK_ROWS", "Batch", "BatchArrays", "bucket_length", "layout_batch", "pack_rows",
           "plan_batches", "plan_rows"]

_MIN_BUCKET = 8

#: Packed batches: texts of at most ``PACK_LENGTH`` tokens are laid back to back in rows of
#: ``PACK_LENGTH`` positions (each attends only to itself), ``PACK_ROWS`` rows per forward pass.
#: Measured on this project's 2-core CPU with all-MiniLM-L6-v2: full [32, 64] batches run at
#: about the model's best rate per position, while padded batches of short sentences lose
#: 15-20% to padding and more to small shapes.
PACK_LENGTH = 64
PACK_ROWS = 32


class Batch(Result):
    """One forward pass of a plan (:func:`plan_batches`).

    Attributes:
      kind: ``"padded"`` or ``"packed"``.
      items: int ``[n]`` indices of the texts it holds, in the order their results come back
        (padded: row order; packed: row by row, left to right).
      length: padded length ``T`` of its rows (:data:`PACK_LENGTH` when packed).
      num_rows: rows of the compiled batch (filler rows included): the batch size, or for a
        short last pass the next power of two above its texts.
      rows: packed only: the items of each row, left to right (``None`` when padded).
    """

    items: np.ndarray
    kind: str = static_field()
    length: int = static_field()
    num_rows: int = static_field()
    rows: tuple | None = static_field(default=None)


class BatchArrays(Result):
    """The arrays of one planned pass (:func:`layout_batch`).

    Attributes:
      input_ids: int32 ``[rows, T]`` (the pad id at padding).
      attention_mask: bool ``[rows, T]`` of a padded pass (filler rows see one token), else ``None``.
      segment_ids: int32 ``[rows, T]`` of a packed pass (``k >= 1`` on the row's k-th text, 0 on
        padding), else ``None``.
      spans: packed only: each item's ``(row, start, length)`` in ``Batch.items`` order.
    """

    input_ids: np.ndarray
    attention_mask: np.ndarray | None = None
    segment_ids: np.ndarray | None = None
    spans: tuple | None = static_field(default=None)


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


def pack_rows(lengths: np.ndarray, items: np.ndarray, row_length: int = PACK_LENGTH) -> list[list[int]]:
    """Best-fit decreasing: ``items`` (longest first) placed into rows of ``row_length``
    positions, each into the row with the least room that still fits it.

    Examples:
      >>> pack_rows(np.array([5, 3, 4, 2]), np.array([0, 2, 1, 3]), row_length=8)
      [[0, 1], [2, 3]]
    """
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


def plan_batches(lengths, *, batch_size: int, max_length: int, packable=None, devices: int = 1) -> list[Batch]:
    """The forward passes over texts of token counts ``lengths [N]``, longest first.

    Args:
      lengths: int ``[N]`` token counts (after truncation).
      batch_size: rows per padded pass.
      max_length: the truncation length (caps the length buckets).
      packable: optional bool ``[N]``: texts that may be packed (``lengths <= PACK_LENGTH`` for
        a model that supports packing); the rest are padded.
      devices: rows of every pass are rounded up to a multiple of this (a mesh's data axis).

    Returns:
      ``list[Batch]``: padded passes first, then packed ones; every text in exactly one. With
      ``packable``, the plan with packing is kept only when it computes fewer positions
      (``sum rows * length`` over the passes) than the all-padded plan.
    """
    lengths = np.asarray(lengths)
    if packable is None or not np.any(packable):
        return _plan(lengths, batch_size, max_length, None, devices)
    with_packing = _plan(lengths, batch_size, max_length, packable, devices)
    padded_only = _plan(lengths, batch_size, max_length, None, devices)
    cost = lambda plan: sum(b.num_rows * b.length for b in plan)
    return with_packing if cost(with_packing) <= cost(padded_only) else padded_only


def plan_rows(items, *, batch_size: int, devices: int = 1) -> list[np.ndarray]:
    """The passes over rows of one fixed width (perplexity's windows): the fewest batches of at
    most ``batch_size`` rows, made as even as possible (less padding than there are batches),
    every batch of the same row count (one compiled shape), a multiple of ``devices``.

    Args:
      items: int ``[N]`` indices of the rows, in the order they are to be laid out.
      batch_size: most rows per pass (before rounding up to ``devices``).
      devices: rows of every pass are rounded up to a multiple of this (a mesh's data axis).

    Returns:
      ``list`` of int ``[rows]`` index arrays; the last one padded with ``-1`` (filler rows).

    Examples:
      >>> [b.tolist() for b in plan_rows(np.arange(5), batch_size=4)]
      [[0, 1, 2], [3, 4, -1]]
    """
    items = np.asarray(items)
    if items.size == 0:
        return []
    n_batches = -(-items.size // batch_size)
    rows = -(-items.size // n_batches)
    rows = -(-rows // devices) * devices
    padded = np.concatenate([items, np.full((-items.size) % rows, -1)])
    return [padded[b:b + rows] for b in range(0, padded.size, rows)]


def _plan(lengths: np.ndarray, batch_size: int, max_length: int, packable, devices: int) -> list[Batch]:
    packed = np.zeros(len(lengths), bool) if packable is None else np.asarray(packable, bool)
    jobs: list[Batch] = []
    padded = np.flatnonzero(~packed)
    if padded.size:
        rows = -(-min(batch_size, padded.size) // devices) * devices
        order = padded[np.argsort(-lengths[padded], kind="stable")]
        for s in range(0, len(order), rows):
            idx = order[s:s + rows]
            jobs.append(Batch(idx, kind="padded", length=bucket_length(int(lengths[idx].max()), max_length),
                              num_rows=_tail_rows(len(idx), rows, devices)))
    if packed.any():
        short = np.flatnonzero(packed)
        short = short[np.argsort(-lengths[short], kind="stable")]
        row_items = pack_rows(lengths, short, PACK_LENGTH)
        rows = -(-min(PACK_ROWS, len(row_items)) // devices) * devices
        for s in range(0, len(row_items), rows):
            chunk = tuple(tuple(r) for r in row_items[s:s + rows])
            items = np.array([i for r in chunk for i in r], np.int64)
            jobs.append(Batch(items, kind="packed", length=PACK_LENGTH, num_rows=_tail_rows(len(chunk), rows, devices),
                              rows=chunk))
    return jobs


def _tail_rows(n: int, rows: int, devices: int) -> int:
    """Rows of a pass holding ``n`` of at most ``rows`` rows: ``rows`` when full, else the next
    power of two (a multiple of ``devices``), so a short last pass does not compute a full batch
    of filler rows while the shapes to compile stay few (at most log2(rows) more)."""
    if n >= rows:
        return rows
    r = 1 << max(n - 1, 0).bit_length()
    return min(rows, -(-r // devices) * devices)


def _pad_batch(seqs: list[np.ndarray], rows: int, length: int, pad_id: int):
    """``(input_ids, attention_mask)`` ``[rows, length]`` of right-padded sequences; filler rows
    (past ``len(seqs)``) see one token, so nothing is fully masked."""
    ids = np.full((rows, length), pad_id, np.int32)
    mask = np.zeros((rows, length), bool)
    mask[:, 0] = True
    for r, s in enumerate(seqs):
        ids[r, :len(s)] = s
        mask[r, :] = False
        mask[r, :len(s)] = True
    return ids, mask


def layout_batch(batch: Batch, ids: list[np.ndarray], pad_id: int) -> BatchArrays:
    """The arrays of one planned pass over the token-id sequences ``ids``.

    Padded: right-padded ``input_ids`` and the bool ``attention_mask`` (filler rows see one
    token, so nothing is fully masked). Packed: the rows' ``input_ids``, int32 ``segment_ids``
    and each item's ``(row, start, length)`` span.

    Examples:
      >>> b = plan_batches(np.array([3, 1]), batch_size=2, max_length=16)[0]
      >>> a = layout_batch(b, [np.array([7, 8, 9]), np.array([5])], pad_id=0)
      >>> a.input_ids.tolist(), a.attention_mask.sum(1).tolist()
      ([[7, 8, 9, 0, 0, 0, 0, 0], [5, 0, 0, 0, 0, 0, 0, 0]], [3, 1])
    """
    if batch.kind == "padded":
        b_ids, mask = _pad_batch([ids[i] for i in batch.items], batch.num_rows, batch.length, pad_id)
        return BatchArrays(b_ids, attention_mask=mask)
    b_ids = np.full((batch.num_rows, PACK_LENGTH), pad_id, np.int32)
    seg = np.zeros((batch.num_rows, PACK_LENGTH), np.int32)
    where = []
    for r, items in enumerate(batch.rows):
        pos = 0
        for k, i in enumerate(items, start=1):
            n = len(ids[i])
            b_ids[r, pos:pos + n] = ids[i]
            seg[r, pos:pos + n] = k
            where.append((r, pos, n))
            pos += n
    return BatchArrays(b_ids, segment_ids=seg, spans=tuple(where))
