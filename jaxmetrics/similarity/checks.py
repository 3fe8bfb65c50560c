"""The input checks of the family: validated pairs of padded token embeddings and the device sharding
behind the validated entries :func:`~jaxmetrics.similarity.similarity_scores` and
:func:`~jaxmetrics.similarity.bertscore_scores` (one path, :func:`score_checked_pairs`), and the
text-pair checks of the text pipelines (:func:`check_text_pairs`, :func:`warn_empty_candidates`)."""
from __future__ import annotations

from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._validation import check_mask
from jaxmetrics.sharding import host_readable, replicate_global, spans_processes

__all__ = ["check_text_pairs", "score_checked_pairs", "warn_empty_candidates", "warn_opposite_signs"]


def _check_embeddings(emb, mask, name: str):
    """Validate a padded embedding batch ``[B, L, D]`` and its mask ``[B, L]`` (host side).

    Returns ``(emb, mask)`` as ``jax.Array`` (mask boolean). Raises ``ValueError`` naming
    ``name`` (or ``name_mask``) for a wrong rank or shape, NaN/inf among the masked-in vectors,
    or a row with no tokens after masking. Under ``jit``, and for global arrays spanning several
    processes (their values are not on this host), only the shapes are checked.
    """
    if emb is None:
        raise ValueError(f"{name}: expected embeddings [B, L, D], got None")
    emb = jnp.asarray(emb)
    if emb.ndim != 3:
        raise ValueError(f"{name}: expected embeddings [B, L, D], got shape {tuple(emb.shape)}")
    if mask is None:
        raise ValueError(f"{name}_mask: expected a bool array [B, L], got None")
    mask = jnp.asarray(check_mask(mask, tuple(emb.shape[:2]), f"{name}_mask"))
    if not host_readable(emb, mask):
        return emb, mask
    e = np.asarray(emb)
    mk = np.asarray(mask, bool)
    if not np.all(np.isfinite(e[mk])):
        raise ValueError(f"{name}: contains NaN or infinite values in real (unmasked) tokens")
    empty = np.flatnonzero(~mk.any(axis=1))
    if empty.size:
        raise ValueError(f"{name}_mask: {empty.size} row(s) have no tokens after masking, "
                         f"first at index {int(empty[0])}")
    return emb, mask


def _check_pairs(candidates, references, candidates_mask, references_mask):
    """Both sides checked by :func:`_check_embeddings` and paired (same B and D)."""
    cand, cmask = _check_embeddings(candidates, candidates_mask, "candidates")
    ref, rmask = _check_embeddings(references, references_mask, "references")
    if cand.shape[0] != ref.shape[0] or cand.shape[2] != ref.shape[2]:
        raise ValueError(f"references: shape {tuple(ref.shape)} does not pair with candidates "
                         f"{tuple(cand.shape)} (same number of pairs B and width D)")
    return cand, ref, cmask, rmask


def _check_weights(weights, mask, name: str, *, positive_rows: bool):
    """``None`` or finite non-negative weights of ``mask``'s shape (host checks when concrete)."""
    if weights is None:
        return None
    if jnp.shape(weights) != mask.shape:
        raise ValueError(f"{name}: expected shape {tuple(mask.shape)}, got {jnp.shape(weights)}")
    if host_readable(weights, mask):
        wn = np.asarray(weights)
        if not np.all(np.isfinite(wn)) or np.any(wn < 0):
            raise ValueError(f"{name}: must be finite and non-negative")
        if positive_rows and np.any(np.where(np.asarray(mask), wn, 0).sum(axis=1) <= 0):
            raise ValueError(f"{name}: a row has zero total weight over its tokens")
    return weights


def _prepare_pairs(candidates, references, candidates_mask, references_mask, candidates_weights,
                   references_weights, mesh, *, positive_rows: bool):
    """Checked pairs, masks and weights (see :func:`_check_pairs`, :func:`_check_weights`),
    sharded over ``mesh`` when one is given: ``((cand, ref, cmask, rmask, cw, rw), n)`` with ``n``
    the number of pairs before padding."""
    cand, ref, cmask, rmask = _check_pairs(candidates, references, candidates_mask, references_mask)
    cw = _check_weights(candidates_weights, cmask, "candidates_weights", positive_rows=positive_rows)
    rw = _check_weights(references_weights, rmask, "references_weights", positive_rows=positive_rows)
    arrays = (cand, ref, cmask, rmask, cw, rw)
    if mesh is None and any(spans_processes(a) for a in arrays):
        raise ValueError("mesh: the inputs are global arrays spanning several processes; pass the "
                         "mesh they are sharded over (mesh=...)")
    return (arrays if mesh is None else _shard_pairs(arrays, mesh)), cand.shape[0]


def score_checked_pairs(kernel: Callable, *, candidates, references, candidates_mask, references_mask,
                        candidates_weights=None, references_weights=None, mesh=None,
                        positive_rows: bool) -> Any:
    """The path of the validated entries (:func:`similarity_scores`,
    :func:`~jaxmetrics.similarity.bertscore_scores`): check the pairs (shapes, finite vectors,
    rows with tokens, non-negative weights; with ``positive_rows`` every row needs a positive
    total weight), shard them over ``mesh`` when one is given (see :func:`similarity_scores`),
    run ``kernel(cand, ref, cand_mask, ref_mask, cand_weights, ref_weights) -> PRF`` and drop the
    padding pairs again (outputs replicated on every process)."""
    (cand, ref, cmask, rmask, cw, rw), n = _prepare_pairs(candidates, references, candidates_mask,
                                                           references_mask, candidates_weights,
                                                           references_weights, mesh, positive_rows=positive_rows)
    out = kernel(cand, ref, cmask, rmask, cw, rw)
    return out if mesh is None else replicate_global(jax.tree.map(lambda v: v[:n], out), mesh)


def _shard_pairs(arrays, mesh):
    """``arrays`` (a tuple; ``None`` kept) padded with copies of the last pair and sharded over
    the mesh's ``'data'`` axis (or its first axis when it has none of that name). Global arrays
    spanning processes are not padded: their row count must divide over the devices."""
    from jaxmetrics.sharding import DATA_AXIS, pad_and_shard

    axis = DATA_AXIS if DATA_AXIS in mesh.axis_names else mesh.axis_names[0]
    return pad_and_shard(arrays, mesh, axis, edge=True).values


def check_text_pairs(references: Any, candidates: Any, *, empty_candidates: bool = False) -> Any:
    """``(references, candidates)`` as lists of non-empty strings that pair up (as many of each);
    ``ValueError`` naming the argument otherwise. The text check of every pipeline of the family.
    With ``empty_candidates`` an empty candidate is accepted (its pair scores 0: :func:`score_texts`),
    as long as one candidate is not empty."""
    from jaxmetrics._validation import check_texts

    if empty_candidates:
        cands = check_texts(candidates, "candidates", allow_empty=True)
        if all(not t.strip() for t in cands):
            raise ValueError(f"candidates: all {len(cands)} texts are empty (blank or whitespace-only); "
                             "nothing to score")
    else:
        cands = check_texts(candidates, "candidates")
    refs = check_texts(references, "references")
    if len(cands) != len(refs):
        raise ValueError(f"references: {len(refs)} texts do not pair with {len(cands)} candidates")
    return refs, cands


def warn_empty_candidates(indices: Sequence[int], n: int, name: str) -> None:
    """The one ``UserWarning`` about empty candidates scored 0 (``indices`` among ``n``, ``name``
    the argument), issued by every function that scores them (nothing when there are none)."""
    if len(indices):
        from jaxmetrics.models.tokens import warn_at_caller

        shown = ", ".join(map(str, list(indices)[:10])) + (" ..." if len(indices) > 10 else "")
        warn_at_caller(f"{name}: {len(indices)} of {n} texts are empty (pairs {shown}): scored P = R = F1 = 0, "
                       "as bert_score does")


def warn_opposite_signs(precision: np.ndarray, recall: np.ndarray, settings: Any) -> None:
    """A ``UserWarning`` counting the pairs with ``P·R <= 0`` (P and R before baseline
    rescaling; ``settings``: the :class:`~jaxmetrics.similarity.SimilaritySettings` they were
    scored with): their ``F = 2PR/(P+R)`` is not between P and R and can leave ``[-1, 1]``."""
    from jaxmetrics.models.tokens import warn_at_caller

    metric, centering, baseline = settings.metric, settings.centering, settings.baseline
    p, r = precision.astype(np.float64), recall.astype(np.float64)
    if baseline is not None:
        b = np.asarray(baseline, np.float64)
        p, r = p * (1.0 - b[0]) + b[0], r * (1.0 - b[1]) + b[1]
    bad = int(np.sum(p * r <= 0))
    if bad:
        how = "without centering" if centering == "none" else f"under {centering} centering"
        hint = ""
        if metric == "bertscore" and centering != "none":
            hint = " (BERTScore without centering: centering='none')"
        warn_at_caller(f"{bad} of {p.size} pairs have precision and recall of opposite "
                       f"signs (P·R <= 0) {how}; their F1 is outside [P, R]{hint}")
