"""BERTScore (Zhang et al. 2020) on padded token embeddings, with idf weights and baseline
rescaling, plus a mode that reproduces the ``bert_score`` package's conventions.

Definition, for unit token vectors ``x_i`` (candidate) and ``y_j`` (reference) and token
weights ``w`` (idf, or 1):

    P = sum_i w_i max_j x_i.y_j / sum_i w_i      (over candidate tokens)
    R = sum_j w_j max_i x_i.y_j / sum_j w_j      (over reference tokens)
    F = 2 P R / (P + R)

Default mode: the max runs over the *real* tokens of the other sentence only (padding is
masked out with -inf), and the tokens that take part are those in the mask.

``compat=True`` reproduces ``bert_score`` 0.3.13 exactly: the mask should hold every real
token *including* [CLS]/[SEP] (they take part in the matching) while their weight is 0;
and the padded similarity matrix is multiplied by the mask, so when the other sentence is
shorter than its padded batch, padded positions contribute a similarity of **0** to the max
— a token whose similarities are all negative then scores 0 instead of its true maximum.
This quirk is switched on per side by ``*_pad_zero`` (default: whether that side's array
holds padding). Also as in ``bert_score``: a sentence with zero total weight gives P = R = 0,
and a NaN F becomes 0.

idf (``idf_table``): ``idf(t) = log((N + 1) / (df(t) + 1))`` over the N reference texts,
``log(N + 1)`` for unseen ids — the ``bert_score`` formula. Rescaling with a baseline ``b``:
``(s - b) / (1 - b)`` for each of P, R, F (the baseline is user-supplied; nothing is
downloaded).
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.similarity.centering import l2_normalize
from jaxmetrics.similarity.kernels import PRF, _is_concrete, check_embeddings, harmonic_f


def _masked_max(s, valid, axis):
    m = jnp.max(jnp.where(valid, s, -jnp.inf), axis=axis)
    return jnp.where(jnp.isfinite(m), m, 0.0)


def bertscore_pair(x, y, x_mask, y_mask, x_weights=None, y_weights=None, *,
                   compat: bool = False, x_pad_zero=None, y_pad_zero=None) -> PRF:
    """BERTScore of one pair (see the module docstring).

    Args:
      x: ``[L1, D]`` candidate token vectors; y: ``[L2, D]`` reference token vectors
        (L2-normalised inside).
      x_mask, y_mask: bool ``[L1]`` / ``[L2]``: tokens that take part in the matching.
      x_weights, y_weights: optional ``[L1]`` / ``[L2]`` weights (idf); default 1 on the mask.
      compat: reproduce ``bert_score``'s padding-scores-zero and empty-sentence conventions.
      x_pad_zero, y_pad_zero: compat only — whether padded positions of x (for R) / y (for
        P) score 0 inside the max; default ``not all(mask)``.

    Returns:
      :class:`PRF` of scalars.

    Examples:
      >>> import jax.numpy as jnp
      >>> x = jnp.array([[1.0, 0.0], [0.0, 1.0]]); y = jnp.array([[1.0, 0.0]])
      >>> [round(float(v), 4) for v in bertscore_pair(x, y, jnp.ones(2, bool), jnp.ones(1, bool))]
      [0.5, 1.0, 0.6667]
    """
    x = l2_normalize(x, x_mask)
    y = l2_normalize(y, y_mask)
    valid = x_mask[:, None] & y_mask[None, :]
    s = jnp.where(valid, x @ y.T, 0.0)
    wx = jnp.where(x_mask, 1.0 if x_weights is None else x_weights, 0.0)
    wy = jnp.where(y_mask, 1.0 if y_weights is None else y_weights, 0.0)
    best_x = _masked_max(s, valid, 1)  # per candidate token
    best_y = _masked_max(s, valid, 0)  # per reference token
    if compat:
        xz = jnp.any(~x_mask) if x_pad_zero is None else x_pad_zero
        yz = jnp.any(~y_mask) if y_pad_zero is None else y_pad_zero
        best_x = jnp.where(yz, jnp.maximum(best_x, 0.0), best_x)
        best_y = jnp.where(xz, jnp.maximum(best_y, 0.0), best_y)
    sx, sy = jnp.sum(wx), jnp.sum(wy)
    ok = (sx > 0) & (sy > 0)
    p = jnp.where(ok, jnp.sum(wx * best_x) / jnp.where(sx > 0, sx, 1.0), 0.0)
    r = jnp.where(ok, jnp.sum(wy * best_y) / jnp.where(sy > 0, sy, 1.0), 0.0)
    return PRF(p, r, harmonic_f(p, r))


@partial(jax.jit, static_argnames=("compat",))
def batch_bertscore(cand, ref, cand_mask, ref_mask, cand_weights=None, ref_weights=None, *,
                    compat: bool = False, cand_pad_zero=None, ref_pad_zero=None,
                    baseline=None) -> PRF:
    """:func:`bertscore_pair` vmapped over B pairs, optionally baseline-rescaled.

    Args:
      cand: ``[B, L1, D]``; ref: ``[B, L2, D]``; cand_mask / ref_mask: bool ``[B, L1]`` /
      ``[B, L2]``; cand_weights / ref_weights: optional ``[B, L1]`` / ``[B, L2]``;
      compat: static, see :func:`bertscore_pair`; cand_pad_zero / ref_pad_zero: optional
      bool ``[B]``; baseline: optional ``[3]`` (P, R, F) for ``(s - b) / (1 - b)``.

    Returns:
      :class:`PRF` of ``[B]`` arrays.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jax.random.normal(jax.random.key(0), (2, 3, 4)); m = jnp.ones((2, 3), bool)
      >>> [round(float(v), 4) for v in batch_bertscore(x, x, m, m).f1]
      [1.0, 1.0]
    """
    b = cand.shape[0]
    cw = jnp.ones(cand_mask.shape, cand.dtype) if cand_weights is None else cand_weights
    rw = jnp.ones(ref_mask.shape, ref.dtype) if ref_weights is None else ref_weights
    cz = jnp.any(~cand_mask, axis=1) if cand_pad_zero is None else jnp.asarray(cand_pad_zero)
    rz = jnp.any(~ref_mask, axis=1) if ref_pad_zero is None else jnp.asarray(ref_pad_zero)
    out = jax.vmap(lambda x, y, mx, my, wx, wy, zx, zy: bertscore_pair(
        x, y, mx, my, wx, wy, compat=compat, x_pad_zero=zx, y_pad_zero=zy))(
        cand, ref, cand_mask, ref_mask, cw, rw, jnp.broadcast_to(cz, (b,)), jnp.broadcast_to(rz, (b,)))
    if baseline is not None:
        out = rescale_with_baseline(out, baseline)
    return out


def rescale_with_baseline(scores: PRF, baseline) -> PRF:
    """``(s - b) / (1 - b)`` for P, R and F with a user-supplied baseline ``b = (bP, bR, bF)``.

    Examples:
      >>> import jax.numpy as jnp
      >>> out = rescale_with_baseline(PRF(jnp.array(0.9), jnp.array(0.8), jnp.array(0.85)), [0.8, 0.8, 0.8])
      >>> [round(float(v), 4) for v in out]
      [0.5, 0.0, 0.25]
    """
    b = jnp.asarray(baseline)
    return PRF(*[(s - b[k]) / (1.0 - b[k]) for k, s in enumerate(scores)])


def idf_table(ref_ids, ref_mask, vocab_size: int) -> np.ndarray:
    """idf of every token id over a reference corpus (host computation, ``bert_score`` formula).

    ``idf(t) = log((N + 1) / (df(t) + 1))`` where ``df(t)`` counts the reference texts that
    contain id ``t`` (special tokens included, so [CLS]/[SEP] get ``log 1 = 0``).

    Args:
      ref_ids: int ``[N, L]`` token ids; ref_mask: bool ``[N, L]`` real tokens.
      vocab_size: size of the id space (table length).

    Returns:
      float32 ``[vocab_size]`` table; gather with ``table[ids]``.

    Examples:
      >>> import numpy as np
      >>> t = idf_table(np.array([[0, 1, 1], [0, 2, 3]]), np.ones((2, 3), bool), 5)
      >>> [round(float(v), 4) for v in t]
      [0.0, 0.4055, 0.4055, 0.4055, 1.0986]
    """
    ids = np.asarray(ref_ids, np.int64)
    mask = np.asarray(ref_mask, bool)
    if ids.shape != mask.shape or ids.ndim != 2:
        raise ValueError(f"ref_ids: expected [N, L] matching ref_mask, got {ids.shape} and {mask.shape}")
    n = ids.shape[0]
    if ids[mask].size and (ids[mask].min() < 0 or ids[mask].max() >= vocab_size):
        raise ValueError(f"ref_ids: ids must lie in [0, {vocab_size})")
    doc = np.broadcast_to(np.arange(n)[:, None], ids.shape)[mask]
    pairs = np.unique(doc * vocab_size + ids[mask])
    df = np.bincount(pairs % vocab_size, minlength=vocab_size)
    return np.log((n + 1.0) / (df + 1.0)).astype(np.float32)


def bertscore(cand, ref, cand_mask, ref_mask, cand_weights=None, ref_weights=None, *,
              compat: bool = False, baseline=None, mesh=None) -> PRF:
    """Validated BERTScore on padded token embeddings (see the module docstring).

    Args:
      cand: ``[B, L1, D]`` candidate token embeddings; ref: ``[B, L2, D]``.
      cand_mask, ref_mask: bool ``[B, L]``: tokens taking part in the matching.
      cand_weights, ref_weights: optional non-negative ``[B, L]`` (e.g. ``idf_table(...)[ids]``).
      compat: reproduce the ``bert_score`` package (see module docstring).
      baseline: optional (P, R, F) baseline for rescaling.
      mesh: optional :class:`jax.sharding.Mesh`: the B pairs are padded to a multiple of the
        device count (copies of the last pair, dropped from the output) and sharded over it.

    Returns:
      :class:`PRF` of ``[B]`` arrays.

    Raises:
      ValueError: bad shapes, NaN embeddings, a row with no tokens (default mode), a bad
        baseline.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> x = jax.random.normal(jax.random.key(1), (1, 4, 8)); m = jnp.ones((1, 4), bool)
      >>> round(float(bertscore(x, x, m, m).f1[0]), 4)
      1.0
    """
    cand, ref = jnp.asarray(cand), jnp.asarray(ref)
    cand_mask, ref_mask = jnp.asarray(cand_mask, bool), jnp.asarray(ref_mask, bool)
    check_embeddings(cand, cand_mask, "cand")
    check_embeddings(ref, ref_mask, "ref")
    if cand.shape[0] != ref.shape[0] or cand.shape[2] != ref.shape[2]:
        raise ValueError(f"ref: shape {tuple(ref.shape)} does not pair with cand {tuple(cand.shape)}")
    if baseline is not None and _is_concrete(baseline):
        bl = np.asarray(baseline, np.float64)
        if bl.shape != (3,) or not np.all(np.isfinite(bl)) or np.any(bl >= 1):
            raise ValueError(f"baseline: expected three finite values < 1 (P, R, F), got {baseline!r}")
    for w, nm, mk in ((cand_weights, "cand_weights", cand_mask), (ref_weights, "ref_weights", ref_mask)):
        if w is not None and jnp.shape(w) != mk.shape:
            raise ValueError(f"{nm}: expected shape {tuple(mk.shape)}, got {jnp.shape(w)}")
        if w is not None and _is_concrete(w):
            wn = np.asarray(w)
            if not np.all(np.isfinite(wn)) or np.any(wn < 0):
                raise ValueError(f"{nm}: must be finite and non-negative")
    n = cand.shape[0]
    if mesh is not None:
        from jaxmetrics.sharding import pad_and_shard

        (cand, ref, cand_mask, ref_mask, cand_weights, ref_weights), _ = pad_and_shard(
            (cand, ref, cand_mask, ref_mask, cand_weights, ref_weights), mesh, edge=True)
    out = batch_bertscore(cand, ref, cand_mask, ref_mask, cand_weights, ref_weights,
                          compat=compat, baseline=None if baseline is None else jnp.asarray(baseline, cand.dtype))
    return out if mesh is None else PRF(*(v[:n] for v in out))
