"""Host side of the diversity family: texts or token lists → padded dense token ids.

A set of token sequences becomes a padded ``ids [B, T]`` int array plus ``lengths [B]``
(:func:`encode_sequences` → :class:`EncodedSequences`); ``S`` response sets become
``ids [S, R, T]``, ``lengths [S, R]`` and ``ids_mask [S, R]`` (:func:`encode_sets` →
:class:`EncodedSets`). Texts are split by :func:`tevet_tokenize` unless a ``tokenizer`` is
given; the family's text-level functions pad rows to :data:`ROW_MULTIPLE`.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from jaxmetrics.results import Result

__all__ = ["EncodedSequences", "EncodedSets", "tevet_tokenize", "encode_sequences", "encode_sets",
           "ROW_MULTIPLE"]


class EncodedSequences(Result):
    """A set of token sequences as padded dense ids (:func:`encode_sequences`).

    Attributes:
      ids: int32 ``[B, T]`` dense token ids ``0..V-1`` (equal tokens ↔ equal ids; 0 at padding).
      lengths: int32 ``[B]``; token ``t`` of row ``b`` is real iff ``t < lengths[b]``.

    Examples:
      >>> encode_sequences(["a b a", "b c"])
      EncodedSequences(ids=i32[2,16], lengths=i32[2])
    """

    ids: np.ndarray
    lengths: np.ndarray


class EncodedSets(Result):
    """``S`` response sets as padded dense ids (:func:`encode_sets`); sets may differ in size.

    Attributes:
      ids: int32 ``[S, R, T]`` dense token ids shared across all sets (0 at padding).
      lengths: int32 ``[S, R]`` real lengths (0 for padding responses).
      ids_mask: bool ``[S, R]``, true on the real responses of each set.

    Examples:
      >>> encode_sets([["a b", "b c"], ["a", "c", "d"]])
      EncodedSets(ids=i32[2,3,16], lengths=i32[2,3], ids_mask=bool[2,3])
    """

    ids: np.ndarray
    lengths: np.ndarray
    ids_mask: np.ndarray


def tevet_tokenize(text: str) -> list[str]:
    """Split ``text`` into words by Tevet & Berant's rule.

    Definition: remove every ``'.'`` and ``'\\n'``, split on single spaces, drop empty
    strings. Case is kept and other punctuation stays attached to its word.

    Args:
      text: a string.

    Returns:
      list of word strings.

    Examples:
      >>> tevet_tokenize("Hello there. How are  you?\\n")
      ['Hello', 'there', 'How', 'are', 'you?']
    """
    if not isinstance(text, str):
        raise TypeError(f"text: expected str, got {type(text).__name__}")
    return [w for w in text.replace(".", "").replace("\n", "").split(" ") if w != ""]


#: The text-level wrappers of the family (here, :mod:`~jaxmetrics.diversity.selfbleu`,
#: :mod:`~jaxmetrics.diversity.stats`, :mod:`~jaxmetrics.diversity.reduction`) pad the number of
#: rows (or sets) to a multiple of this, so batches of similar size share one compiled kernel.
ROW_MULTIPLE = 8


def _pad_len(t: int, multiple: int = 16) -> int:
    return max(multiple, -(-t // multiple) * multiple)


def _tokenize_all(sequences: Any, name: str, tokenizer: Callable[[str], list] | None,
                  allow_empty: bool) -> list[list]:
    if isinstance(sequences, (str, bytes)) or sequences is None:
        raise TypeError(f"{name}: expected a sequence of texts or token sequences, got "
                        f"{type(sequences).__name__}")
    if isinstance(sequences, np.ndarray) and sequences.ndim == 2 and sequences.dtype != object:
        return [list(r) for r in sequences]
    out = []
    for i, s in enumerate(sequences):
        if isinstance(s, str):
            toks = (tokenizer or tevet_tokenize)(s)
        elif isinstance(s, (list, tuple, np.ndarray)):
            toks = list(s)
            for t in toks:
                if not isinstance(t, (str, int, np.integer)) or isinstance(t, bool):
                    raise TypeError(f"{name}: item {i} contains a token of type "
                                    f"{type(t).__name__}; tokens must be str or int")
        else:
            raise TypeError(f"{name}: item {i} is {type(s).__name__}, expected str or a "
                            f"sequence of tokens")
        if not toks and not allow_empty:
            raise ValueError(f"{name}: item {i} is empty (no tokens)")
        out.append(toks)
    if not out:
        raise ValueError(f"{name}: no sequences (the list is empty)")
    return out


def _to_dense(token_lists: list[list], max_len: int | None = None,
              row_multiple: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Map arbitrary hashable tokens to dense int32 ids and pad to ``[B, T]``.

    With ``row_multiple > 1`` empty rows (length 0) are appended up to a multiple of it.
    """
    lengths = np.array([len(t) for t in token_lists], dtype=np.int64)
    flat = [tok for toks in token_lists for tok in toks]
    if flat and all(isinstance(t, (int, np.integer)) for t in flat):
        arr = np.asarray(flat, dtype=np.int64)
        _, dense = np.unique(arr, return_inverse=True)
    else:
        vocab: dict = {}
        # Strings need a host dictionary; this is the single Python pass over tokens.
        dense = np.fromiter((vocab.setdefault(tok, len(vocab)) for tok in flat),
                            dtype=np.int64, count=len(flat))
    T = _pad_len(int(lengths.max()) if max_len is None else max_len)
    B = -(-len(token_lists) // row_multiple) * row_multiple
    lengths = np.concatenate([lengths, np.zeros(B - len(lengths), np.int64)])
    ids = np.zeros((B, T), dtype=np.int32)
    mask = np.arange(T)[None, :] < lengths[:, None]
    ids[mask] = dense.reshape(-1).astype(np.int32)
    return ids, lengths.astype(np.int32)


def encode_sequences(sequences: Any, *, tokenizer: Callable[[str], list] | None = None,
                     allow_empty: bool = False, row_multiple: int = 1,
                     name: str = "sequences") -> EncodedSequences:
    """Turn texts or token sequences into padded dense ids ``[B, T]`` and ``lengths [B]``.

    Texts are split with ``tokenizer`` (default :func:`tevet_tokenize`); lists of str or int
    tokens (e.g. model token ids) are used as given. Tokens are mapped to dense ids
    ``0..V-1`` (equal tokens ↔ equal ids); ``T`` is rounded up to a multiple of 16 so that
    similar batches share one compiled kernel; ``row_multiple`` likewise appends empty
    rows (length 0) so that ``B`` is a multiple of it.

    Args:
      sequences: ``B`` texts or token sequences (str or int tokens).
      tokenizer: ``str -> list`` used for texts (default :func:`tevet_tokenize`).
      allow_empty: accept sequences without tokens (otherwise they raise).
      row_multiple: pad the number of rows to a multiple of this.
      name: the argument name used in error messages (callers pass their own, e.g.
        ``"generations"``).

    Returns:
      :class:`EncodedSequences` (``ids [B', T]`` int32, ``lengths [B']`` int32).

    Examples:
      >>> enc = encode_sequences(["a b a", "b c"])
      >>> enc.ids[:, :3].tolist(), enc.lengths.tolist()
      ([[0, 1, 0], [1, 2, 0]], [3, 2])
    """
    toks = _tokenize_all(sequences, name, tokenizer, allow_empty)
    ids, lengths = _to_dense(toks, row_multiple=row_multiple)
    return EncodedSequences(ids=ids, lengths=lengths)


def encode_sets(response_sets: Any, *, tokenizer: Callable[[str], list] | None = None,
                set_multiple: int = 1, name: str = "response_sets") -> EncodedSets:
    """Encode response sets into ``ids [S, R, T]``, ``lengths [S, R]`` and ``ids_mask [S, R]``.

    Every set must hold at least two non-empty responses; sets may differ in size
    (``ids_mask`` marks the real responses). Token ids are shared across all sets.
    ``set_multiple`` appends fully masked sets so that ``S`` is a multiple of it (fewer
    compilations).

    Args:
      response_sets: ``S`` lists of >= 2 texts or token sequences.
      tokenizer: ``str -> list`` used for texts (default :func:`tevet_tokenize`).
      set_multiple: pad the number of sets to a multiple of this.
      name: the argument name used in error messages.

    Returns:
      :class:`EncodedSets`.

    Examples:
      >>> enc = encode_sets([["a b", "b c"], ["a", "c", "d"]])
      >>> enc.ids.shape, enc.lengths.tolist(), enc.ids_mask.tolist()
      ((2, 3, 16), [[2, 2, 0], [1, 1, 1]], [[True, True, False], [True, True, True]])
    """
    if isinstance(response_sets, (str, bytes)) or response_sets is None:
        raise TypeError(f"{name}: expected a list of response sets, got {type(response_sets).__name__}")
    sets = list(response_sets)
    if not sets:
        raise ValueError(f"{name}: no response sets (the list is empty)")
    flat: list[list] = []
    sizes = []
    for i, s in enumerate(sets):
        if isinstance(s, (str, bytes)) or not isinstance(s, (list, tuple, np.ndarray)):
            raise TypeError(f"{name}: set {i} is {type(s).__name__}, expected a list of responses")
        if len(s) < 2:
            raise ValueError(f"{name}: set {i} has {len(s)} response(s); at least 2 are needed")
        flat.extend(_tokenize_all(s, f"{name}[{i}]", tokenizer, allow_empty=False))
        sizes.append(len(s))
    ids_flat, len_flat = _to_dense(flat)
    S, R, T = -(-len(sets) // set_multiple) * set_multiple, max(sizes), ids_flat.shape[1]
    ids = np.zeros((S, R, T), np.int32)
    lengths = np.zeros((S, R), np.int32)
    mask = np.zeros((S, R), bool)
    offs = np.concatenate([[0], np.cumsum(sizes)])
    for i, k in enumerate(sizes):
        ids[i, :k] = ids_flat[offs[i]:offs[i + 1]]
        lengths[i, :k] = len_flat[offs[i]:offs[i + 1]]
        mask[i, :k] = True
    return EncodedSets(ids=ids, lengths=lengths, ids_mask=mask)
