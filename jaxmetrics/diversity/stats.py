"""Text statistics of the MAUVE paper's tables: Zipf coefficient, REP, termination ratio.

Definitions follow the MAUVE experiments (``krishnap25/mauve-experiments``, after Holtzman
et al.'s ``degen``), on token ids (or words). Kernels (:func:`zipf_stats`,
:func:`repetition_flags`) take padded ``ids [B, T]`` and ``lengths [B]`` (see
:func:`~jaxmetrics.diversity.encode_sequences`); the host functions
(:func:`zipf_coefficient`, :func:`repetition_fraction`, :func:`termination_ratio`) accept
texts or token sequences and return Python floats.
"""
from __future__ import annotations

from functools import partial
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import accumulator_dtype
from jaxmetrics._validation import check_int, check_positive
from jaxmetrics.diversity.encoding import ROW_MULTIPLE, encode_sequences
from jaxmetrics.results import Result

__all__ = ["ZipfStats", "zipf_stats", "zipf_coefficient", "repetition_flags", "repetition_fraction",
           "termination_ratio"]


class ZipfStats(Result):
    """The log-binned Zipf regression of :func:`zipf_stats`.

    Attributes:
      coefficient: 0-d float, ``-slope`` of the fit (≈ 1 for natural text, the value papers
        report); meaningless when ``num_points < 2``.
      num_points: 0-d int, the number of regression points (< 2 means undefined).

    Examples:
      >>> import jax.numpy as jnp
      >>> zipf_stats(jnp.array([[1, 1, 1, 1, 2, 2, 3, 4]]), jnp.array([8]))
      ZipfStats(coefficient=1.27313, num_points=3)
    """

    coefficient: jax.Array
    num_points: jax.Array


@partial(jax.jit, static_argnames=("max_num",))
def zipf_stats(ids: jax.Array, lengths: jax.Array, max_num: int = 5000,
               stretch_factor: float = 15.0) -> ZipfStats:
    """Log-binned Zipf regression on pooled token counts.

    With token frequencies sorted in decreasing order ``f_1 >= f_2 >= ...`` (``V`` distinct
    tokens) and ranks ``r = 1 .. min(V, max_num) - 1`` (the MAUVE code's ``arange`` drops
    the last rank), bin ``x_r = round(s · ln r) / s`` (``s = stretch_factor``), keep the first
    rank of every bin, ``y_r = ln f_r``, and fit ``y = a + b x`` by least squares.

    Args:
      ids: ``[B, T]`` token ids.
      lengths: ``[B]`` real lengths.
      max_num: number of top frequencies used (static).
      stretch_factor: bin resolution ``s``.

    Returns:
      :class:`ZipfStats`: ``coefficient = -b`` and the number of regression points.

    Examples:
      >>> from jaxmetrics.diversity import encode_sequences
      >>> enc = encode_sequences([[1] * 8 + [2] * 4 + [3] * 2 + [4]])
      >>> z = zipf_stats(enc.ids, enc.lengths)
      >>> round(float(z.coefficient), 3), int(z.num_points)
      (1.273, 3)
    """
    B, T = ids.shape
    W = B * T
    fdt = accumulator_dtype()
    valid = (jnp.arange(T)[None, :] < lengths[:, None]).reshape(W)
    tok = jnp.where(valid, ids.reshape(W), jnp.iinfo(jnp.int32).max)
    s = jnp.sort(tok)
    ok = s != jnp.iinfo(jnp.int32).max
    start = jnp.concatenate([jnp.ones((1,), bool), s[1:] != s[:-1]]) & ok
    V = jnp.sum(start)
    run = jnp.cumsum(start.astype(jnp.int32)) - 1
    cnt = jax.ops.segment_sum(ok.astype(jnp.int32), jnp.where(ok, run, W), num_segments=W + 1)[:W]
    K = min(max_num, W)
    top = -jnp.sort(-cnt)[:K]
    r = jnp.arange(1, K + 1)
    x = jnp.round(stretch_factor * jnp.log(r.astype(fdt))) / stretch_factor
    first = jnp.concatenate([jnp.ones((1,), bool), x[1:] != x[:-1]])
    keep = first & (r < jnp.minimum(V, max_num))
    y = jnp.log(jnp.maximum(top, 1).astype(fdt))
    k = jnp.sum(keep)
    kf = jnp.maximum(k, 1).astype(fdt)
    xm = jnp.sum(jnp.where(keep, x, 0.0)) / kf
    ym = jnp.sum(jnp.where(keep, y, 0.0)) / kf
    sxy = jnp.sum(jnp.where(keep, (x - xm) * (y - ym), 0.0))
    sxx = jnp.sum(jnp.where(keep, (x - xm) ** 2, 0.0))
    slope = sxy / jnp.where(sxx > 0, sxx, 1.0)
    return ZipfStats(coefficient=-slope, num_points=k)


def zipf_coefficient(sequences: Sequence, *, max_num: int = 5000, stretch_factor: float = 15.0,
                     tokenizer: Callable | None = None) -> float:
    """Zipf coefficient of the pooled token distribution (MAUVE experiments' log-binned fit).

    See :func:`zipf_stats` for the definition; returns the positive coefficient ``-slope``.

    Args:
      sequences: texts (split by :func:`~jaxmetrics.diversity.tevet_tokenize` or
        ``tokenizer``) or token sequences.
      max_num: number of top frequencies used.
      stretch_factor: bins per unit of ``ln rank``.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      the coefficient as a Python float.

    Raises:
      ValueError: if fewer than 2 regression points exist (fewer than 3 distinct tokens).

    Examples:
      >>> round(zipf_coefficient(["the cat the dog the cat a", "the"]), 3)
      1.273
    """
    check_int(max_num, "max_num", minimum=3)
    check_positive(stretch_factor, "stretch_factor")
    enc = encode_sequences(sequences, tokenizer=tokenizer, allow_empty=True, row_multiple=ROW_MULTIPLE)
    z = zipf_stats(enc.ids, enc.lengths, max_num=max_num, stretch_factor=float(stretch_factor))
    if int(z.num_points) < 2:
        raise ValueError("sequences: the Zipf fit needs at least 3 distinct tokens "
                         f"(got {int(z.num_points)} regression point(s))")
    return float(z.coefficient)


def _rep_one(rev: jax.Array, L: jax.Array, max_n: int):
    T = rev.shape[0]
    ns = jnp.arange(1, max_n + 1)[:, None]
    p = jnp.arange(T)[None, :]
    match = (p < L) & (rev[None, :] == rev[p % ns])
    first_bad = jnp.argmax(jnp.concatenate([~match, jnp.ones((max_n, 1), bool)], axis=1), axis=1)
    copies = jnp.maximum(1, first_bad // ns[:, 0])
    best = jnp.argmax(copies)
    c = copies[best]
    return (c > 1) & ((best + 1 >= 3) | (c > 50))


@partial(jax.jit, static_argnames=("max_n", "batch_size"))
def repetition_flags(ids: jax.Array, lengths: jax.Array, max_n: int = 500,
                     batch_size: int = 16) -> jax.Array:
    """Whether each sequence ends in a repetition loop; ``[B, T], [B] -> [B] bool``.

    Reverse the sequence; for every n = 1..max_n count ``copies(n)``, the number of
    consecutive copies of the final n-gram at the end; ``n*`` = the first n maximising it.
    The sequence is repetitive iff ``copies(n*) > 1`` and (``n* >= 3`` or
    ``copies(n*) > 50``). Orders above ``T`` cannot repeat and are skipped.

    Args:
      ids: ``[B, T]`` token ids.
      lengths: ``[B]`` real lengths.
      max_n: largest loop length considered (static).
      batch_size: rows per step of the ``lax.map`` loop (static; bounds memory).

    Returns:
      ``[B]`` bool.

    Examples:
      >>> from jaxmetrics.diversity import encode_sequences
      >>> enc = encode_sequences([[9, 1, 2, 3, 1, 2, 3], [1, 2, 3, 4, 5, 6, 7]])
      >>> repetition_flags(enc.ids, enc.lengths).tolist()
      [True, False]
    """
    B, T = ids.shape
    n_eff = max(1, min(max_n, T))
    L = lengths.astype(jnp.int32)
    p = jnp.arange(T)[None, :]
    rev = jnp.take_along_axis(ids, jnp.clip(L[:, None] - 1 - p, 0, T - 1), axis=1)
    return jax.lax.map(lambda a: _rep_one(a[0], a[1], n_eff), (rev, L),
                       batch_size=min(batch_size, B))


def repetition_fraction(sequences: Sequence, *, max_n: int = 500,
                        tokenizer: Callable | None = None) -> float:
    """REP: fraction of generations that end in a repetition loop (see :func:`repetition_flags`).

    Args:
      sequences: texts or token sequences.
      max_n: largest loop length considered.
      tokenizer: ``str -> list`` used for texts.

    Returns:
      the fraction as a Python float.

    Examples:
      >>> repetition_fraction(["a b c a b c a b c", "a b c d e f"])
      0.5
    """
    check_int(max_n, "max_n", minimum=1)
    enc = encode_sequences(sequences, tokenizer=tokenizer, allow_empty=True, row_multiple=ROW_MULTIPLE)
    flags = np.asarray(repetition_flags(enc.ids, enc.lengths, max_n=max_n))[:len(sequences)]
    return float(np.mean(flags))


def termination_ratio(is_completed: Any = None, *, sequences: Sequence | None = None,
                      eos_id: int | None = None) -> float:
    """Fraction of generations that terminated (emitted EOS).

    ``ratio = Σ_i completed_i / B``. The MAUVE code calls it the "non-termination ratio"
    but computes this fraction of *completed* generations. Give either ``is_completed``
    (``[B]`` booleans) or token-id ``sequences`` plus ``eos_id`` (completed = contains EOS).

    Args:
      is_completed: ``[B]`` booleans, or None.
      sequences: token-id sequences (with ``eos_id``), used when ``is_completed`` is None.
      eos_id: the end-of-sequence token id.

    Returns:
      the ratio as a Python float.

    Examples:
      >>> termination_ratio([True, False, True, True])
      0.75
      >>> termination_ratio(sequences=[[5, 1, 0], [5, 2]], eos_id=0)
      0.5
    """
    if is_completed is None:
        if sequences is None or eos_id is None:
            raise ValueError("is_completed: give it, or both sequences and eos_id")
        check_int(eos_id, "eos_id")
        flags = []
        for i, s in enumerate(sequences):
            if isinstance(s, (str, bytes)):
                raise TypeError(f"sequences: item {i} is a string; expected token ids")
            flags.append(bool(np.any(np.asarray(s) == eos_id)))
        if not flags:
            raise ValueError("sequences: no sequences (the list is empty)")
        arr = np.asarray(flags)
    else:
        arr = np.asarray(is_completed)
        if arr.ndim != 1 or arr.size == 0:
            raise ValueError(f"is_completed: expected a non-empty 1-D array, got shape {arr.shape}")
        if arr.dtype != np.bool_:
            raise TypeError(f"is_completed: expected booleans, got dtype {arr.dtype}")
    return float(np.mean(arr))
