"""BERTScore's greedy matching (Zhang et al. 2020) on padded token embeddings, with idf weights
and baseline rescaling, plus a mode that reproduces the ``bert_score`` package's conventions.

The text-level function with ``bert_score.score``'s signature is
:func:`jaxmetrics.similarity.bertscore`; this module holds the array kernels.

Definition, for unit token vectors ``x_i`` (candidate) and ``y_j`` (reference) and token
weights ``w`` (idf, or 1):

    P = sum_i w_i max_j x_i.y_j / sum_i w_i      (over candidate tokens)
    R = sum_j w_j max_i x_i.y_j / sum_j w_j      (over reference tokens)
    F = 2 P R / (P + R)

Default mode: the max runs over the *real* tokens of the other sentence only (padding is
masked out with -inf), and the tokens that take part are those in the mask.

``bert_score_compat=True`` reproduces ``bert_score`` 0.3.13 exactly: the mask should hold every real
token *including* [CLS]/[SEP] (they take part in the matching) while their weight is 0;
and the padded similarity matrix is multiplied by the mask, so when the other sentence is
shorter than its padded batch, padded positions contribute a similarity of **0** to the max
— a token whose similarities are all negative then scores 0 instead of its true maximum.
This quirk is switched on per side by ``candidate(s)_pad_zero`` / ``reference(s)_pad_zero``
(default: whether that side's array holds padding). Also as in ``bert_score``: a sentence
with zero total weight gives P = R = 0, and a NaN F becomes 0.

idf (``idf_table``): ``idf(t) = log((N + 1) / (df(t) + 1))`` over the N reference texts,
``log(N + 1)`` for unseen ids — the ``bert_score`` formula. Rescaling with a baseline ``b``:
``(s - b) / (1 - b)`` for each of P, R, F (the baseline is user-supplied; nothing is
downloaded).
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._ops import is_concrete, l2_normalize, product_dtype, row_products
from jaxmetrics._validation import check_int
from jaxmetrics.similarity.checks import score_checked_pairs
from jaxmetrics.similarity.kernels import PRF, greedy_match, harmonic_f

__all__ = ["batch_bertscore", "bertscore_pair", "bertscore_scores", "check_baseline", "idf_table",
           "rescale_with_baseline"]


def bertscore_pair(*, candidate: jax.Array, reference: jax.Array, candidate_mask: jax.Array,
                   reference_mask: jax.Array, candidate_weights=None, reference_weights=None,
                   bert_score_compat: bool = False, candidate_pad_zero=None, reference_pad_zero=None) -> PRF:
    """BERTScore of one pair (see the module docstring); a kernel, no checks.

    Args:
      candidate: ``[L1, D]`` candidate token vectors; reference: ``[L2, D]`` reference token
        vectors (both L2-normalised inside).
      candidate_mask, reference_mask: bool ``[L1]`` / ``[L2]``: tokens that take part in the
        matching.
      candidate_weights, reference_weights: optional ``[L1]`` / ``[L2]`` weights (idf);
        default 1 on the mask.
      bert_score_compat: reproduce ``bert_score``'s padding-scores-zero and empty-sentence conventions.
      candidate_pad_zero, reference_pad_zero: bert_score_compat only — whether padded positions of the
        candidate (for R) / the reference (for P) score 0 inside the max; default
        ``not all(mask)``.

    Returns:
      :class:`~jaxmetrics.similarity.PRF` of scalars.

    Examples:
      >>> import jax.numpy as jnp
      >>> x = jnp.array([[1.0, 0.0], [0.0, 1.0]]); y = jnp.array([[1.0, 0.0]])
      >>> out = bertscore_pair(candidate=x, reference=y, candidate_mask=jnp.ones(2, bool),
      ...                      reference_mask=jnp.ones(1, bool))
      >>> [round(float(v), 4) for v in out]
      [0.5, 1.0, 0.6667]
    """
    x_mask, y_mask = candidate_mask, reference_mask
    x = l2_normalize(candidate, x_mask)
    y = l2_normalize(reference, y_mask)
    valid = x_mask[:, None] & y_mask[None, :]
    s = jnp.where(valid, row_products(x, y), 0.0)  # bfloat16 vectors: bfloat16 operands, float32 sums
    wx = jnp.where(x_mask, 1.0 if candidate_weights is None else candidate_weights, 0.0)
    wy = jnp.where(y_mask, 1.0 if reference_weights is None else reference_weights, 0.0)
    best_x, best_y = greedy_match(s, valid)  # per candidate token, per reference token
    if bert_score_compat:
        xz = jnp.any(~x_mask) if candidate_pad_zero is None else candidate_pad_zero
        yz = jnp.any(~y_mask) if reference_pad_zero is None else reference_pad_zero
        best_x = jnp.where(yz, jnp.maximum(best_x, 0.0), best_x)
        best_y = jnp.where(xz, jnp.maximum(best_y, 0.0), best_y)
    sx, sy = jnp.sum(wx), jnp.sum(wy)
    ok = (sx > 0) & (sy > 0)
    p = jnp.where(ok, jnp.sum(wx * best_x) / jnp.where(sx > 0, sx, 1.0), 0.0)
    r = jnp.where(ok, jnp.sum(wy * best_y) / jnp.where(sy > 0, sy, 1.0), 0.0)
    return PRF(p, r, harmonic_f(p, r))


@partial(jax.jit, static_argnames=("bert_score_compat",))
def batch_bertscore(*, candidates: jax.Array, references: jax.Array, candidates_mask: jax.Array,
                    references_mask: jax.Array, candidates_weights=None, references_weights=None,
                    bert_score_compat: bool = False, candidates_pad_zero=None, references_pad_zero=None,
                    baseline=None) -> PRF:
    """:func:`bertscore_pair` vmapped over B pairs, optionally baseline-rescaled (jitted, no checks).

    Args:
      candidates: ``[B, L1, D]``; references: ``[B, L2, D]``.
      candidates_mask, references_mask: bool ``[B, L1]`` / ``[B, L2]``.
      candidates_weights, references_weights: optional ``[B, L1]`` / ``[B, L2]``.
      bert_score_compat: static, see :func:`bertscore_pair`.
      candidates_pad_zero, references_pad_zero: optional bool ``[B]`` (bert_score_compat only).
      baseline: optional ``[3]`` (P, R, F) for ``(s - b) / (1 - b)``.

    Returns:
      :class:`~jaxmetrics.similarity.PRF` of ``[B]`` arrays.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jax.random.normal(jax.random.key(0), (2, 3, 4)); m = jnp.ones((2, 3), bool)
      >>> out = batch_bertscore(candidates=x, references=x, candidates_mask=m, references_mask=m)
      >>> [round(float(v), 4) for v in out.f1]
      [1.0, 1.0]
    """
    b = candidates.shape[0]
    cw = (jnp.ones(candidates_mask.shape, product_dtype(candidates)) if candidates_weights is None
          else candidates_weights)
    rw = (jnp.ones(references_mask.shape, product_dtype(references)) if references_weights is None
          else references_weights)
    cz = (jnp.any(~candidates_mask, axis=1) if candidates_pad_zero is None
          else jnp.asarray(candidates_pad_zero))
    rz = (jnp.any(~references_mask, axis=1) if references_pad_zero is None
          else jnp.asarray(references_pad_zero))
    out = jax.vmap(lambda x, y, mx, my, wx, wy, zx, zy: bertscore_pair(
        candidate=x, reference=y, candidate_mask=mx, reference_mask=my, candidate_weights=wx,
        reference_weights=wy, bert_score_compat=bert_score_compat, candidate_pad_zero=zx, reference_pad_zero=zy))(
        candidates, references, candidates_mask, references_mask, cw, rw,
        jnp.broadcast_to(cz, (b,)), jnp.broadcast_to(rz, (b,)))
    if baseline is not None:
        out = rescale_with_baseline(out, baseline)
    return out


def rescale_with_baseline(scores: PRF, baseline: Any) -> PRF:
    """``(s - b) / (1 - b)`` for P, R and F with a user-supplied baseline ``b = (bP, bR, bF)``.

    Args:
      scores: :class:`~jaxmetrics.similarity.PRF` (any shape).
      baseline: three values (P, R, F), each < 1.

    Returns:
      :class:`~jaxmetrics.similarity.PRF` of the same shapes.

    Examples:
      >>> import jax.numpy as jnp
      >>> from jaxmetrics.similarity import PRF
      >>> out = rescale_with_baseline(PRF(jnp.array(0.9), jnp.array(0.8), jnp.array(0.85)),
      ...                             [0.8, 0.8, 0.8])
      >>> [round(float(v), 4) for v in out]
      [0.5, 0.0, 0.25]
    """
    b = jnp.asarray(baseline)
    return PRF(*[(s - b[k]) / (1.0 - b[k]) for k, s in enumerate(scores)])


def idf_table(ids: Any, ids_mask: Any, vocab_size: int) -> np.ndarray:
    """idf of every token id over a reference corpus (host computation, ``bert_score`` formula).

    ``idf(t) = log((N + 1) / (df(t) + 1))`` where ``df(t)`` counts the reference texts that
    contain id ``t`` (special tokens included, so [CLS]/[SEP] get ``log 1 = 0``); ids never
    seen get ``log(N + 1)``.

    Args:
      ids: int ``[N, L]`` token ids of the N reference texts.
      ids_mask: bool ``[N, L]``, True on real tokens.
      vocab_size: size of the id space (table length).

    Returns:
      float32 ``[vocab_size]`` table; gather with ``table[ids]``.

    Examples:
      >>> import numpy as np
      >>> t = idf_table(np.array([[0, 1, 1], [0, 2, 3]]), np.ones((2, 3), bool), 5)
      >>> [round(float(v), 4) for v in t]
      [0.0, 0.4055, 0.4055, 0.4055, 1.0986]
    """
    vocab_size = check_int(vocab_size, "vocab_size", minimum=1)
    ids = np.asarray(ids, np.int64)
    mask = np.asarray(ids_mask, bool)
    if ids.ndim != 2:
        raise ValueError(f"ids: expected [N, L] token ids, got shape {ids.shape}")
    if mask.shape != ids.shape:
        raise ValueError(f"ids_mask: expected shape {list(ids.shape)}, got {list(mask.shape)}")
    n = ids.shape[0]
    if ids[mask].size and (ids[mask].min() < 0 or ids[mask].max() >= vocab_size):
        raise ValueError(f"ids: ids must lie in [0, {vocab_size})")
    doc = np.broadcast_to(np.arange(n)[:, None], ids.shape)[mask]
    pairs = np.unique(doc * vocab_size + ids[mask])
    df = np.bincount(pairs % vocab_size, minlength=vocab_size)
    return np.log((n + 1.0) / (df + 1.0)).astype(np.float32)


def check_baseline(baseline: Any) -> Any:
    """``baseline`` (``None`` or three finite values < 1: P, R, F), checked when concrete;
    ``ValueError`` naming ``baseline`` otherwise."""
    if baseline is not None and is_concrete(baseline):
        bl = np.asarray(baseline, np.float64)
        if bl.shape != (3,) or not np.all(np.isfinite(bl)) or np.any(bl >= 1):
            raise ValueError(f"baseline: expected three finite values < 1 (P, R, F), got {baseline!r}")
    return baseline


def bertscore_scores(*, candidates: Any, references: Any, candidates_mask: Any,
                     references_mask: Any, candidates_weights=None, references_weights=None,
                     bert_score_compat: bool = False, baseline=None, mesh=None) -> PRF:
    """Validated BERTScore on padded token embeddings (see the module docstring).

    ``P = Σ_i w_i max_j x_i·y_j / Σ_i w_i`` over candidate tokens, ``R`` the mirror over
    reference tokens, ``F = 2PR/(P+R)``; token vectors are L2-normalised inside.

    Args:
      candidates: ``[B, L1, D]`` candidate token embeddings.
      references: ``[B, L2, D]`` reference token embeddings (pair b = row b of each).
      candidates_mask, references_mask: bool ``[B, L1]`` / ``[B, L2]``: tokens taking part
        in the matching.
      candidates_weights, references_weights: optional non-negative ``[B, L]`` (e.g.
        ``idf_table(...)[ids]``).
      bert_score_compat: reproduce the ``bert_score`` package (see module docstring).
      baseline: optional (P, R, F) baseline for rescaling.
      mesh: optional :class:`jax.sharding.Mesh` to shard the B pairs over, as in
        :func:`~jaxmetrics.similarity.similarity_scores`.

    Returns:
      :class:`~jaxmetrics.similarity.PRF` of ``[B]`` arrays.

    Raises:
      ValueError: bad shapes, NaN embeddings, a row with no tokens, negative weights, a bad
        baseline.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jax.random.normal(jax.random.key(1), (1, 4, 8)); m = jnp.ones((1, 4), bool)
      >>> out = bertscore_scores(candidates=x, references=x, candidates_mask=m, references_mask=m)
      >>> round(float(out.f1[0]), 4)
      1.0
    """
    check_baseline(baseline)

    def kernel(cand, ref, cmask, rmask, cw, rw):
        return batch_bertscore(candidates=cand, references=ref, candidates_mask=cmask, references_mask=rmask,
                               candidates_weights=cw, references_weights=rw, bert_score_compat=bert_score_compat,
                               baseline=None if baseline is None else jnp.asarray(baseline, cand.dtype))

    return score_checked_pairs(kernel, candidates=candidates, references=references, candidates_mask=candidates_mask,
                               references_mask=references_mask, candidates_weights=candidates_weights,
                               references_weights=references_weights, mesh=mesh, positive_rows=False)
