"""Texts cut into (prompt, human continuation) token pairs: the passages that fine-tuning trains on
and that the demo evaluates (:func:`jaxmetrics.demo.heldout_passages` is :func:`text_passages` on the
held-out plays).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics.results import Result

__all__ = ["TextPassages", "text_passages"]


class TextPassages(Result):
    """Passages of a token stream (:func:`text_passages`).

    Attributes:
      windows: ``[n, prompt_len + gen_len]`` int32: the chosen passages, in stream order; the first
        ``prompt_len`` tokens of a row are its prompt, the rest its human continuation.
      stream: ``[N]`` int32: the whole stream (the texts joined by newlines).
    """

    windows: np.ndarray
    stream: np.ndarray

    def prompts(self, prompt_len: int) -> np.ndarray:
        """``[n, prompt_len]`` the prompts (the first ``prompt_len`` tokens of each passage)."""
        return self.windows[:, :prompt_len]

    def continuations(self, prompt_len: int) -> np.ndarray:
        """``[n, gen_len]`` the human continuations (what follows each prompt)."""
        return self.windows[:, prompt_len:]


def text_passages(tokenizer: Any, texts: Sequence[str], *, prompt_len: int, gen_len: int,
                  num_passages: int | None = None, seed: int = 0, name: str = "num_passages") -> TextPassages:
    """Non-overlapping passages of ``prompt_len + gen_len`` tokens of ``texts``, each starting at
    the start of a text.

    The texts are joined by newlines (the format the demo GPT-2 was trained on) and tokenized
    with ``tokenizer`` (a transformers fast tokenizer); a passage may run on into the next texts.
    Candidate starts are visited in the order of ``numpy.random.default_rng(seed).permutation`` and
    a start is kept when its window overlaps no kept one, until ``num_passages`` are kept (``None``:
    every one that fits); the kept passages are returned in stream order.

    Args:
      tokenizer: the model's fast tokenizer.
      texts: the texts (e.g. ``jaxmetrics.data.load_shakespeare("train")``).
      prompt_len, gen_len: prompt and continuation lengths in tokens (``>= 1`` each).
      num_passages: how many passages (``None``: as many as fit).
      seed: the order in which starts are tried.
      name: the argument named when too few passages exist.

    Returns:
      :class:`TextPassages`.

    Raises:
      ValueError: fewer than ``num_passages`` passages (naming ``name``), no text, or bad lengths.
    """
    texts = V.check_texts(texts, "texts", allow_empty=True)  # an empty text still adds its newline
    prompt_len = V.check_int(prompt_len, "prompt_len", minimum=1)
    gen_len = V.check_int(gen_len, "gen_len", minimum=1)
    if num_passages is not None:
        num_passages = V.check_int(num_passages, name, minimum=1)
    nl = tokenizer.backend_tokenizer.encode("\n").ids
    enc = tokenizer.backend_tokenizer.encode_batch(list(texts))
    starts, stream = [], []
    for e in enc:
        starts.append(len(stream))
        stream.extend(e.ids)
        stream.extend(nl)
    stream = np.asarray(stream, np.int32)
    T = prompt_len + gen_len
    rng = np.random.default_rng(seed)
    cand = np.asarray([s for s in starts if s + T <= len(stream)], np.int64)
    chosen: list[int] = []
    taken = np.zeros(len(stream) + T, bool)
    for s in rng.permutation(cand):
        if not taken[s:s + T].any():
            taken[s:s + T] = True
            chosen.append(int(s))
            if len(chosen) == num_passages:
                break
    if not chosen or (num_passages is not None and len(chosen) < num_passages):
        raise ValueError(f"{name}: only {len(chosen)} non-overlapping passages of {T} tokens exist")
    chosen.sort()
    return TextPassages(windows=np.stack([stream[s:s + T] for s in chosen]), stream=stream)
