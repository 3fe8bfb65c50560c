"""Texts to token ids with the model's own tokenizer, and the checks every text-consuming path
shares: the one rule for ``max_length`` against the model's positions, ``batch_size``, and warnings
attributed to the user's call.

:func:`tokenize` calls the tokenizer like mauve-text (its special tokens kept, the *first*
``max_length`` tokens kept, one warning counting the truncated texts);
:func:`tokenize_packed` returns the same ids packed end to end (:class:`PackedTokens`), calling the
tokenizer on :data:`ENCODE_CHUNK` texts at a time. The encoding engine
(:mod:`jaxmetrics.models.encoding`) starts from them.
"""
from __future__ import annotations

import os
import sys
import warnings
from typing import Any

import numpy as np

from jaxmetrics.results import Result, static_field

__all__ = ["ENCODE_CHUNK", "PackedTokens", "Tokenized", "check_batch_size", "check_max_length", "pack_token_lists",
           "tokenize", "tokenize_packed", "warn_at_caller"]


class Tokenized(Result):
    """Token ids of ``N`` texts (:func:`tokenize`).

    Attributes:
      ids: ``N`` int32 arrays, each text's ids (truncated).
      special: ``N`` bool arrays, true on the tokenizer's special tokens.
      num_truncated: texts that were longer than ``max_length``.
    """

    ids: list
    special: list
    num_truncated: int = static_field(default=0)


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warn_at_caller(message: str) -> None:
    """``warnings.warn`` attributed to the first frame outside the jaxmetrics package (the
    user's call), not to library source."""
    frame, level = sys._getframe(0), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def check_max_length(model: Any, max_length: Any, default: int, *, name: str = "max_length") -> int:
    """The truncation length for ``model``: the library's one rule for a length against the
    model's positions (every pipeline and command calls it).

    * ``None``: ``min(default, the model's positions)``, silently (the default was not the
      caller's choice);
    * an explicit value above the model's positions: clipped to them with a warning naming
      ``name``;
    * anything else but a positive integer raises naming ``name``.

    Examples:
      >>> import types, warnings
      >>> lm = types.SimpleNamespace(max_positions=128, name="tiny", kind="gpt2")
      >>> check_max_length(lm, None, 1024), check_max_length(lm, 64, 1024)
      (128, 64)
      >>> with warnings.catch_warnings(record=True) as rec:
      ...     warnings.simplefilter("always")
      ...     capped = check_max_length(lm, 512, 1024, name="--max-length")
      >>> capped, str(rec[0].message).split(";")[0]
      (128, '--max-length: 512 exceeds the 128 positions of tiny')
    """
    limit = getattr(model, "max_positions", None)
    if max_length is None:
        return default if limit is None else min(default, int(limit))
    if isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer or None, got {type(max_length).__name__}")
    max_length = int(max_length)
    if max_length < 1:
        raise ValueError(f"{name}: must be >= 1, got {max_length}")
    if limit is not None and max_length > limit:
        who = getattr(model, "name", None) or getattr(model, "kind", "the model")
        warn_at_caller(f"{name}: {max_length} exceeds the {limit} positions of {who}; "
                       f"using {limit} (leave {name} unset for the model's own limit)")
        max_length = int(limit)
    return max_length


def check_batch_size(batch_size: Any, name: str = "batch_size") -> int:
    """``batch_size`` as a positive ``int``, or a ``TypeError`` / ``ValueError`` naming it."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise TypeError(f"{name}: expected an integer, got {type(batch_size).__name__}")
    if batch_size < 1:
        raise ValueError(f"{name}: must be >= 1, got {batch_size}")
    return int(batch_size)


#: texts per tokenizer call: the engine holds the tokenizer's Python objects of this many texts at
#: a time, never of the whole corpus (the token ids of all texts are kept packed, about 5 bytes a
#: token)
ENCODE_CHUNK = 4096


class PackedTokens(Result):
    """Token ids of ``N`` texts packed end to end (:func:`tokenize_packed`: what :func:`tokenize`
    returns, without one array object per text).

    Attributes:
      ids: int32 ``[S]`` the texts' token ids one after the other: text ``i`` is
        ``ids[offsets[i]:offsets[i + 1]]``.
      special: bool ``[S]``, true on the tokenizer's special tokens.
      offsets: int64 ``[N + 1]``.
      num_truncated: texts that were longer than ``max_length``.
    """

    ids: np.ndarray
    special: np.ndarray
    offsets: np.ndarray
    num_truncated: int = static_field(default=0)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def seqs(self, items) -> tuple[list, list]:
        """``(ids, special)``: lists of views of the texts ``items`` (an index range or array)."""
        o = self.offsets
        return ([self.ids[o[i]:o[i + 1]] for i in items], [self.special[o[i]:o[i + 1]] for i in items])


def pack_token_lists(ids: list, special: list, num_truncated: int = 0) -> PackedTokens:
    """Per-text id and special-token arrays packed end to end (:class:`PackedTokens`)."""
    lengths = np.array([len(x) for x in ids], np.int64)
    offsets = np.zeros(len(ids) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    cat = (lambda xs, dt: np.concatenate(xs).astype(dt, copy=False) if xs else np.zeros(0, dt))
    return PackedTokens(cat(ids, np.int32), cat(special, bool), offsets, num_truncated=int(num_truncated))


def tokenize_packed(texts: list[str], model: Any, *, max_length: int, name: str = "texts") -> PackedTokens:
    """:func:`tokenize`, packed (:class:`PackedTokens`), calling the tokenizer on
    :data:`ENCODE_CHUNK` texts at a time (its per-text Python objects never exist for the whole
    corpus at once). One truncation warning; a text with no token raises naming ``name``."""
    tok = model.tokenizer
    parts, n_trunc, empty = [], 0, []
    for s in range(0, len(texts), ENCODE_CHUNK):
        part = texts[s:s + ENCODE_CHUNK]
        enc = tok(part, truncation=True, max_length=max_length, return_special_tokens_mask=True,
                  return_attention_mask=False, return_token_type_ids=False, verbose=False)
        ids = [np.asarray(x, np.int32) for x in enc["input_ids"]]
        special = [np.asarray(x, bool) for x in enc["special_tokens_mask"]]
        del enc
        at_limit = [i for i, x in enumerate(ids) if len(x) >= max_length]
        if at_limit:
            longer = tok([part[i] for i in at_limit], truncation=True, max_length=max_length + 1,
                         return_attention_mask=False, return_token_type_ids=False, verbose=False)["input_ids"]
            n_trunc += sum(len(x) > max_length for x in longer)
        empty += [s + i for i, x in enumerate(ids) if len(x) == 0]
        parts.append(pack_token_lists(ids, special))
    if n_trunc:
        warn_at_caller(f"{name}: {n_trunc} text(s) longer than max_length={max_length} tokens were "
                       f"truncated to their first {max_length} tokens")
    if empty:
        raise ValueError(f"{name}: {len(empty)} text(s) tokenize to no tokens (indices {empty[:10]})")
    if not parts:
        return pack_token_lists([], [])
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(np.concatenate([p.lengths for p in parts]), out=offsets[1:])
    return PackedTokens(np.concatenate([p.ids for p in parts]), np.concatenate([p.special for p in parts]),
                       offsets, num_truncated=int(n_trunc))


def tokenize(texts: list[str], model: Any, *, max_length: int, name: str = "texts") -> Tokenized:
    """Tokenize like mauve-text: ``tokenizer(text, truncation=True, max_length=max_length)``.

    The tokenizer's own special tokens are kept and truncation keeps the first tokens. Warns with
    the number of texts that were truncated. Returns a :class:`Tokenized` (int32 ids and bool
    special-token masks, one array per text, and the count). A text with no token raises
    ``ValueError`` naming ``name``. The tokenizer is called on :data:`ENCODE_CHUNK` texts at a time.
    """
    t = tokenize_packed(texts, model, max_length=max_length, name=name)
    ids, special = t.seqs(range(len(t.offsets) - 1))
    return Tokenized(ids, special, num_truncated=t.num_truncated)
