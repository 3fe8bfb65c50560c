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

Sentence pairs with human scores, read from the common STS-style TSV file.

``sentence1 <TAB> sentence2 <TAB> score [<TAB> group]`` (optional header) →
:class:`ScoredPairs`, the input of :func:`~jaxmetrics.similarity.correlation_sweep`.
``sentence1`` becomes the reference and ``sentence2`` the candidate.
"""
from __future__ import annotations

import math
import os
import re
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.numerics import segment_pearson, segment_ranks
from jaxmetrics.results import Result, static_field

__all__ = ["GroupedCorrelation", "ScoredPairs", "check_group_sizes", "group_ids", "grouped_correlation",
           "read_scored_pairs"]


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


class ScoredPairs(Result):
    """Sentence pairs with human scores and group labels (:func:`read_scored_pairs`).

    Attributes:
      references: the N first sentences (``sentence1``), static.
      candidates: the N second sentences (``sentence2``), static.
      human: float64 ``[N]`` human scores.
      groups: int32 ``[N]`` group index of each pair into ``group_names``.
      group_names: the group labels in order of first appearance (``('all',)`` without a
        group column), static.
      source: the file the pairs were read from (``''`` when built in memory), static.
    """

    human: Any
    groups: Any
    references: tuple = static_field()
    candidates: tuple = static_field()
    group_names: tuple = static_field()
    source: str = static_field(default="")

    def __len__(self) -> int:
        return len(self.references)


_HEADER_SCORE = re.compile(r"^(human[ _-]?)?(score|scores|gold|label|labels|sim|similarity|rating|"
                           r"relatedness|human|z|da|z[ _-]?score)$", re.IGNORECASE)


def read_scored_pairs(path: str | os.PathLike) -> ScoredPairs:
    """Read sentence pairs with human scores from an STS-style TSV file.

    Format: one pair per line, tab-separated ``sentence1, sentence2, score[, group]`` (UTF-8;
    blank lines are skipped). The first line is a header when its third field is a column
    name (``score``, ``gold``, ``label``, ``similarity``, ``rating``, ``human``, ``z``, ``da``,
    ...), otherwise it is data. Either every row has a group column or none has. Errors name the
    file and the line: a wrong number of fields, an empty sentence or group, a score that is not
    a finite number (NaN and inf are rejected).

    ``sentence1`` becomes the reference and ``sentence2`` the candidate.

    Args:
      path: the TSV file.

    Returns:
      :class:`ScoredPairs`.

    Examples:
      >>> import os, tempfile
      >>> p = os.path.join(tempfile.mkdtemp(), "pairs.tsv")
      >>> _ = open(p, "w").write("s1\\ts2\\tscore\\tgroup\\na cat\\ta cat\\t5\\tx\\na dog\\ta car\\t1.5\\ty\\n")
      >>> pairs = read_scored_pairs(p)
      >>> pairs.human.tolist(), pairs.group_names, pairs.candidates
      ([5.0, 1.5], ('x', 'y'), ('a cat', 'a car'))
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise ValueError(f"{name}: file does not exist") from None
    except IsADirectoryError:
        raise ValueError(f"{name}: is a directory, expected a TSV file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise ValueError(f"{name}:{line}: not valid UTF-8 ({e.reason}); re-save the file as UTF-8") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    refs, cands, human, labels = [], [], [], []
    ncols = None
    first = True
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (3, 4):
            raise ValueError(f"{name}:{lineno}: expected 3 or 4 tab-separated fields (sentence1, sentence2, "
                             f"score[, group]), got {len(fields)}")
        if first:
            first = False
            if _parse_score(fields[2]) is None and _HEADER_SCORE.match(fields[2].strip()):
                ncols = len(fields)
                continue
        if ncols is None:
            ncols = len(fields)
        elif len(fields) != ncols:
            raise ValueError(f"{name}:{lineno}: {len(fields)} fields, but earlier rows have {ncols} "
                             f"(every row has a group column or none has)")
        s1, s2 = fields[0].strip(), fields[1].strip()
        if not s1 or not s2:
            raise ValueError(f"{name}:{lineno}: empty sentence{'1' if not s1 else '2'}")
        v = _parse_score(fields[2])
        if v is None:
            hint = " (a header's third column is named e.g. 'score')" if lineno == 1 else ""
            raise ValueError(f"{name}:{lineno}: score {fields[2].strip()!r} is not a number{hint}")
        if not math.isfinite(v):
            raise ValueError(f"{name}:{lineno}: score {fields[2].strip()!r} is not finite (NaN/inf scores "
                             f"are rejected)")
        if len(fields) == 4:
            g = fields[3].strip()
            if not g:
                raise ValueError(f"{name}:{lineno}: empty group label")
            labels.append(g)
        refs.append(s1)
        cands.append(s2)
        human.append(v)
    if not refs:
        raise ValueError(f"{name}: no sentence pairs")
    ids, names = group_ids(labels if ncols == 4 else None, len(refs))
    return ScoredPairs(np.asarray(human, np.float64), ids, references=tuple(refs), candidates=tuple(cands),
                       group_names=names, source=name)


def _parse_score(field: str) -> float | None:
    try:
        return float(field.strip())
    except ValueError:
        return None
