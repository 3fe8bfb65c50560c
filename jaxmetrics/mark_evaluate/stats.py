"""Mark-Evaluate's statistics: both sets' hyperspheres, cross memberships and catches.

:func:`mark_evaluate_stats` runs the three blocked distance passes of
:mod:`~jaxmetrics.mark_evaluate.hyperspheres` once (k-NN spheres of each set's individuals,
both-way membership, neighbourhood catches); the estimators
(:mod:`~jaxmetrics.mark_evaluate.estimators`) and scores (:mod:`~jaxmetrics.mark_evaluate.scores`)
read everything from the :class:`MarkEvaluateStats` it returns. See the estimators' module
docstring for the two readings (``literal``).
"""
from __future__ import annotations

import warnings
from functools import partial
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from jaxmetrics.mark_evaluate.checks import check_feature_pair
from jaxmetrics.mark_evaluate.hyperspheres import (
    CrossMembership,
    Hyperspheres,
    cross_membership,
    individual_hyperspheres,
    neighborhood_counts,
)
from jaxmetrics.results import Result
from jaxmetrics.sharding import host_readable

__all__ = ["MarkEvaluateStats", "mark_evaluate_stats"]


class MarkEvaluateStats(Result):
    """Everything the estimators need, from three distance passes (:func:`mark_evaluate_stats`).

    Attributes:
      references: :class:`~jaxmetrics.mark_evaluate.Hyperspheres` of S, the references
        (``radii_sq [n]``, ``neighbors [n, k]``).
      candidates: :class:`~jaxmetrics.mark_evaluate.Hyperspheres` of S', the candidates
        (``radii_sq [m]``, ``neighbors [m, k]``).
      cross: :class:`~jaxmetrics.mark_evaluate.CrossMembership` with ``a = S``, ``b = S'``.
      references_mask: ``[n]`` bool, the rows of S that are individuals (all rows with
        ``literal=True``; the first occurrence of each distinct row otherwise).
      candidates_mask: ``[m]`` bool, the same for S'.
      references_catches: ``[n]`` int32, ``g_s = sum_{s'} f(s', NN_k(s, S))``.
      candidates_catches: ``[m]`` int32, ``g_{s'} = sum_s f(s, NN_k(s', S'))``.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4) + 0.01, k=1)
      >>> s.references
      Hyperspheres(radii_sq=f32[4], neighbors=i32[4,1])
    """

    references: Hyperspheres
    candidates: Hyperspheres
    cross: CrossMembership
    references_mask: jax.Array
    candidates_mask: jax.Array
    references_catches: jax.Array
    candidates_catches: jax.Array

    @property
    def population(self) -> int:
        """The true population ``P = n + m``: the row counts of both sets (static)."""
        return self.references.radii_sq.shape[0] + self.candidates.radii_sq.shape[0]

    @property
    def defined(self) -> jax.Array:
        """Bool: both sets have more than k individuals, so every individual has k neighbours
        (with ``literal=True`` every row is one and ``k < min(n, m)`` is checked on input)."""
        k = self.references.neighbors.shape[1]
        return ((jnp.sum(self.references_mask, dtype=jnp.int32) > k)
                & (jnp.sum(self.candidates_mask, dtype=jnp.int32) > k))

    def swap(self) -> "MarkEvaluateStats":
        """The same statistics with the roles of S and S' exchanged."""
        c = self.cross
        return MarkEvaluateStats(
            references=self.candidates,
            candidates=self.references,
            cross=CrossMembership(b_in_a=c.a_in_b, a_in_b=c.b_in_a, a_counts=c.b_counts,
                                  b_counts=c.a_counts),
            references_mask=self.candidates_mask, candidates_mask=self.references_mask,
            references_catches=self.candidates_catches, candidates_catches=self.references_catches,
        )


def _distinct_up_to(a: np.ndarray, limit: int) -> int:
    """Number of distinct rows of ``a``, counted up to ``limit`` (``O(limit n d)``)."""
    count = 0
    while a.shape[0] and count < limit:
        a = a[~np.all(a == a[:1], axis=1)]
        count += 1
    return count


def _warn_degenerate(ref: Any, cand: Any, k: int, literal: bool = False) -> None:
    """Warn (host side, concrete inputs only) when a score cannot mean much: a set with fewer
    than ``10 k`` rows, a set whose rows are all one point, or (``literal=False``) a set with
    at most ``k`` distinct rows, whose scores are all 0. Skipped for global arrays spanning
    several processes (their values are not on this host)."""
    if not host_readable(ref, cand):
        return
    for x, name in ((ref, "references"), (cand, "candidates")):
        n = x.shape[0]
        if n < 10 * k:
            warnings.warn(
                f"{name}: only {n} samples for k={k} (fewer than 10*k = {10 * k}); the k-NN "
                f"hyperspheres are too few for the Mark-Evaluate scores to mean much",
                UserWarning, stacklevel=4)
        a = np.asarray(x)
        if n > 1 and bool(np.all(a == a[:1])):
            warnings.warn(
                f"{name}: all {n} samples are the same point (one distinct row); the set is a "
                f"single individual and every sphere of it has radius 0"
                + ("" if literal else "; with distinct rows as individuals every score is 0"),
                UserWarning, stacklevel=4)
        elif not literal and n > k:
            distinct = _distinct_up_to(a, k + 1)
            if distinct <= k:
                warnings.warn(
                    f"{name}: only {distinct} distinct rows for k={k}; with distinct rows as "
                    f"individuals (literal=False) no individual has k neighbours and every "
                    f"score is 0", UserWarning, stacklevel=4)


@partial(jax.jit, static_argnames=("k", "block_size", "dedup"))
def _stats(ref, cand, k: int, block_size: int | None, dedup: bool = True) -> MarkEvaluateStats:
    # one common shift (translation invariant) keeps the matmul expansion well conditioned
    shift = jnp.mean(ref, axis=0)
    ref = ref - shift
    cand = cand - shift
    ir = individual_hyperspheres(ref, k, distinct=dedup, block_size=block_size)
    ic = individual_hyperspheres(cand, k, distinct=dedup, block_size=block_size)
    hr, mr = ir.spheres, ir.individuals_mask
    hc, mc = ic.spheres, ic.individuals_mask
    cross = cross_membership(ref, hr.radii_sq, cand, hc.radii_sq, a_mask=mr, b_mask=mc,
                             block_size=block_size)
    gc = neighborhood_counts(ref, cand, hc.radii_sq, hc.neighbors, a_mask=mr, b_mask=mc)
    gr = neighborhood_counts(cand, ref, hr.radii_sq, hr.neighbors, a_mask=mc, b_mask=mr)
    return MarkEvaluateStats(references=hr, candidates=hc, cross=cross, references_mask=mr,
                             candidates_mask=mc, references_catches=gr, candidates_catches=gc)


def mark_evaluate_stats(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
                        block_size: int | None = None, mesh: Any = None) -> MarkEvaluateStats:
    """Hyperspheres of both sets, their cross memberships and neighbourhood catches.

    ``r_k(s, S)`` is the distance from ``s`` to its k-th nearest other row of its own set and
    ``f(x, S) = 1`` iff ``||x - s|| <= r_k(s, S)`` for some ``s in S`` (see
    :mod:`jaxmetrics.mark_evaluate.hyperspheres`). With ``literal=False`` each set is first
    reduced to its distinct rows (a repeated row is the same individual; see the module
    docstring), which costs a second k-NN pass only for a set that has duplicates.

    Warns (concrete inputs only) when a set has fewer than ``10 k`` rows or one distinct row.

    Args:
      references: ``[n, d]`` features of S.
      candidates: ``[m, d]`` features of S'.
      k: neighbourhood size, ``1 <= k < min(n, m)``.
      literal: every row is an individual (the paper as printed) instead of every distinct row.
      block_size: rows per distance block (static; default keeps tiles near 4M elements).
      mesh: optional :class:`jax.sharding.Mesh`: rows of each set are sharded over it (each
        set's size must be a multiple of the device count, else it runs replicated with a warning).

    Returns:
      :class:`MarkEvaluateStats`: ``references`` / ``candidates`` hyperspheres (``[n]``,
      ``[n, k]`` / ``[m]``, ``[m, k]``), their ``cross`` membership, the individuals' masks and
      the neighbourhood catches ``g``.

    Examples:
      >>> import numpy as np
      >>> s = mark_evaluate_stats(references=np.eye(4), candidates=np.eye(4) + 0.01, k=1)
      >>> s.cross
      CrossMembership(b_in_a=bool[4], a_in_b=bool[4], a_counts=i32[4], b_counts=i32[4])
      >>> bool(s.cross.b_in_a.all())
      True
    """
    pair = check_feature_pair(references=references, candidates=candidates, k=k)
    ref, cand = pair.references, pair.candidates
    _warn_degenerate(references, candidates, int(k), bool(literal))
    if mesh is not None:
        from jaxmetrics.sharding import place_rows

        ref = place_rows(ref, mesh, name="references")
        cand = place_rows(cand, mesh, name="candidates")
    return _stats(ref, cand, int(k), block_size, not bool(literal))
