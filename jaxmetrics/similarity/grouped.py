"""The evaluation protocol of similarity metrics against human scores, on arrays.

Chen et al. (2020) (and STS / WMT metric studies in general) judge a metric by the **Pearson**
(and **Spearman**) correlation between its per-pair score and the human scores, computed **per
group** (an STS year or sub-set, a WMT language pair), and by the **size-weighted mean** over
groups ``sum_g n_g r_g / sum_g n_g`` (the paper's per-year average over STS sub-sets).

:func:`grouped_correlation` is that protocol for scores ``[..., N]`` (one jitted program; ranks
and Pearson per group are :func:`jaxmetrics.numerics.segment_ranks` /
:func:`jaxmetrics.numerics.segment_pearson`); :func:`group_ids` and :func:`check_group_sizes`
turn group labels into ids and check them, for the reader
(:func:`~jaxmetrics.similarity.read_scored_pairs`), the sweep and the ``similarity-eval``
command.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.numerics import segment_pearson, segment_ranks
from jaxmetrics.results import Result, static_field

__all__ = ["GroupedCorrelation", "check_group_sizes", "group_ids", "grouped_correlation"]


class GroupedCorrelation(Result):
    """Pearson and Spearman correlations per group and their size-weighted means.

    Attributes:
      pearson: ``[..., G]`` Pearson r of each group (NaN where a side is constant).
      spearman: ``[..., G]`` Spearman rho of each group (Pearson of average ranks).
      weighted_pearson: ``[...]`` ``sum_g n_g r_g / sum_g n_g`` over the groups with pairs.
      weighted_spearman: ``[...]`` the same for Spearman.
      sizes: int ``[G]`` pairs per group ``n_g``.
      group_names: the G group labels (static).
    """

    pearson: Any
    spearman: Any
    weighted_pearson: Any
    weighted_spearman: Any
    sizes: Any
    group_names: tuple = static_field(default=())


@partial(jax.jit, static_argnames=("num_groups",))
def _grouped_core(scores, human, groups, *, num_groups: int):
    """``scores [M, N]`` → per-group Pearson/Spearman ``[M, G]`` and weighted means ``[M]``."""
    sizes = jax.ops.segment_sum(jnp.ones_like(groups), groups, num_segments=num_groups)
    h_rank = segment_ranks(human, groups, num_groups)

    def one(s):
        p = segment_pearson(s, human, groups, sizes, num_groups)
        r = segment_pearson(segment_ranks(s, groups, num_groups), h_rank, groups, sizes, num_groups)
        return p, r

    pearson, spearman = jax.vmap(one)(scores)
    w = sizes.astype(scores.dtype)
    has = sizes > 0

    def weighted(r):
        return jnp.sum(jnp.where(has, w * r, 0.0), axis=-1) / jnp.maximum(jnp.sum(w), 1.0)

    return pearson, spearman, weighted(pearson), weighted(spearman), sizes


def group_ids(groups: Any, n: int, name: str = "groups") -> tuple[np.ndarray, tuple]:
    """Group ids of ``n`` pairs and the group names: ``(ids int32 [n], names)``.

    ``groups``: ``None`` (one group ``'all'``), integer ids ``>= 0`` (names ``'0'``, ``'1'``, ...)
    or any labels (numbered in order of first appearance, names ``str(label)``). Errors name
    ``name``.
    """
    if groups is None:
        return np.zeros(n, np.int32), ("all",)
    arr = np.asarray(groups)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name}: expected {n} labels (one per pair), got shape {arr.shape}")
    if arr.dtype.kind in "iu":
        if n and arr.min() < 0:
            raise ValueError(f"{name}: integer group ids must be >= 0, got {int(arr.min())}")
        g = int(arr.max()) + 1 if n else 0
        return arr.astype(np.int32), tuple(str(i) for i in range(g))
    labels = [str(x) for x in arr.tolist()]
    names = tuple(dict.fromkeys(labels))
    where = {k: i for i, k in enumerate(names)}
    return np.array([where[x] for x in labels], np.int32), names


def check_group_sizes(ids: np.ndarray, names: tuple, name: str = "groups") -> None:
    """Raise ``ValueError`` naming ``name`` and the first group with fewer than 2 pairs (a
    correlation needs at least 2 per group); ``ids`` int ``[N]`` index ``names``."""
    sizes = np.bincount(ids, minlength=len(names))
    small = [(names[g], int(sizes[g])) for g in range(len(names)) if sizes[g] < 2]
    if small:
        label, k = small[0]
        raise ValueError(f"{name}: group {label!r} has {k} pair(s); a correlation needs at least 2 "
                         f"per group ({len(small)} group(s) too small)")


def grouped_correlation(scores: Any, human: Any, groups: Any = None, *,
                        num_groups: int | None = None) -> GroupedCorrelation:
    """Per-group Pearson and Spearman correlation of ``scores`` with ``human``, and their
    size-weighted means.

    Definition: for each group g with ``n_g`` pairs, ``r_g = pearson(scores_g, human_g)`` and
    ``rho_g = pearson(rank(scores_g), rank(human_g))`` (ranks within the group, ties get their
    average rank: ``scipy.stats.pearsonr`` / ``spearmanr``); the weighted means are
    ``sum_g n_g r_g / sum_g n_g``. A group where a side is constant has r = NaN (as scipy),
    and so has the weighted mean.

    Args:
      scores: float ``[..., N]`` metric scores (leading axes = settings, all correlated with
        the same ``human``).
      human: float ``[N]`` human scores (finite).
      groups: ``None`` (one group ``'all'``), integer ids ``[N]`` in ``[0, G)``, or ``[N]`` labels
        (strings; groups numbered in order of first appearance). Every group needs >= 2 pairs
        (checked when the values are concrete).
      num_groups: G; required only when ``groups`` is a traced array (under ``jit``).

    Returns:
      :class:`GroupedCorrelation` with ``pearson`` / ``spearman`` ``[..., G]``,
      ``weighted_pearson`` / ``weighted_spearman`` ``[...]`` and ``sizes`` ``[G]``.

    Examples:
      >>> import numpy as np
      >>> s = np.array([0.1, 0.4, 0.3, 0.9, 0.2, 0.6, 0.7])
      >>> h = np.array([1.0, 2.0, 3.0, 4.0, 1.0, 3.0, 2.0])
      >>> out = grouped_correlation(s, h, ["a", "a", "a", "a", "b", "b", "b"])
      >>> out
      GroupedCorrelation(pearson=f32[2], spearman=f32[2], weighted_pearson=0.8225..., weighted_spearman=0.6714..., sizes=i32[2], group_names=('a', 'b'))
      >>> [round(float(v), 4) for v in out.pearson], [round(float(v), 4) for v in out.spearman]
      ([0.8724, 0.7559], [0.8, 0.5])
    """
    from jaxmetrics._ops import is_concrete

    s = jnp.asarray(scores)
    if not jnp.issubdtype(s.dtype, jnp.floating):
        s = s.astype(jnp.float32)
    if s.ndim < 1:
        raise ValueError(f"scores: expected [..., N], got a scalar")
    n = s.shape[-1]
    h = jnp.asarray(human, s.dtype)
    if h.shape != (n,):
        raise ValueError(f"human: expected shape ({n},) to match scores [..., {n}], got {tuple(h.shape)}")
    if is_concrete(h) and not np.all(np.isfinite(np.asarray(h))):
        raise ValueError("human: contains NaN or infinite scores")
    if isinstance(groups, jax.Array) and not is_concrete(groups):
        if num_groups is None:
            raise ValueError("num_groups: required when groups is a traced array")
        ids, names = groups.astype(jnp.int32), tuple(str(i) for i in range(num_groups))
    else:
        ids, names = group_ids(groups, n)
        if num_groups is not None:
            if int(num_groups) < len(names):
                raise ValueError(f"num_groups: {num_groups} is less than the {len(names)} groups present")
            names = names + tuple(str(i) for i in range(len(names), int(num_groups)))
        check_group_sizes(ids, names)
    lead = s.shape[:-1]
    p, r, wp, wr, sizes = _grouped_core(s.reshape((-1, n)), h, jnp.asarray(ids), num_groups=len(names))
    g = len(names)
    return GroupedCorrelation(p.reshape(lead + (g,)), r.reshape(lead + (g,)), wp.reshape(lead),
                              wr.reshape(lead), sizes, group_names=names)
