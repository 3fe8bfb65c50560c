"""Figures of the similarity family, drawn with matplotlib (imported when a figure is made;
figures are built without pyplot, so nothing global is touched).

* :func:`plot_correlation_sweep` — a :class:`~jaxmetrics.similarity.CorrelationSweep`'s weighted
  correlation against the temperature (``CorrelationSweep.plot``);
* :func:`plot_anisotropy` — Chen et al.'s Figures 1–2 for an
  :class:`~jaxmetrics.similarity.AnisotropyResult` (``AnisotropyResult.plot``);
* :func:`plot_token_alignment` — one pair's similarity matrix with its greedy matches, and the
  transport plans of TWMD / WMD (``TokenAlignments.plot``, ``PairAlignment.plot``).
"""
from __future__ import annotations

import collections
import os
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["plot_anisotropy", "plot_correlation_sweep", "plot_token_alignment"]

RANKINGS = ("weighted_pearson", "weighted_spearman")
_TITLES = {"baseline": "baseline similarity", "self_similarity": "self-similarity",
           "intra_similarity": "intra-sentence similarity"}
_STYLES = {"none": dict(color="black", marker="o"), "dimension": dict(color="tab:orange", marker="^"),
           "sentence": dict(color="tab:green", marker="s"), "corpus": dict(color="tab:blue", marker="D"),
           "batch": dict(color="tab:red", marker="x", linestyle="--")}


def plot_correlation_sweep(sweep: Any, path: str | os.PathLike | None = None, *, by: str = "weighted_pearson",
                           title: str | None = None) -> "Figure":
    """``by`` (weighted Pearson or Spearman) of a :class:`~jaxmetrics.similarity.CorrelationSweep`
    against the temperature: one line per (metric, layer, centering, num_iterations) of the
    tempered metrics (log T axis), one dotted horizontal line per setting of the other metrics.
    With no tempered metric, one bar per setting.

    Args:
      sweep: the :class:`~jaxmetrics.similarity.CorrelationSweep`.
      path: optional file to save the figure to (PNG, PDF, SVG, ... by suffix).
      by: ``'weighted_pearson'`` (default) or ``'weighted_spearman'``.
      title: figure title.

    Returns:
      the matplotlib ``Figure``.

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.similarity import CorrelationSweep
      >>> r = CorrelationSweep(np.zeros((3, 1)), np.zeros((3, 1)), np.array([0.5, 0.7, 0.6]),
      ...                      np.zeros(3), np.zeros((3, 2)), metric=("twmd", "twmd", "bertscore"),
      ...                      layer=(6, 6, 6), centering=("batch",) * 3, num_iterations=(1, 1, None),
      ...                      temperature=(0.05, 0.1, None), group_names=("all",), group_sizes=(2,))
      >>> [len(ax.lines) for ax in plot_correlation_sweep(r).axes]
      [2]
    """
    from matplotlib.figure import Figure

    if by not in RANKINGS:
        raise ValueError(f"by: expected one of {RANKINGS}, got {by!r}")
    values = np.asarray(getattr(sweep, by), np.float64)
    fig = Figure(figsize=(8.5, 4.0))
    ax = fig.subplots()
    lines = collections.OrderedDict()
    flat = []
    for i in range(len(sweep)):
        label = f"{sweep.metric[i]} L{sweep.layer[i]} {sweep.centering[i]}"
        if sweep.num_iterations[i] is not None:
            label += f" it={sweep.num_iterations[i]}"
        if sweep.temperature[i] is None:
            flat.append((label, values[i]))
        else:
            lines.setdefault(label, []).append((sweep.temperature[i], values[i]))
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
    ax.set_title(title or f"correlation of {sweep.score} with human scores ({sum(sweep.group_sizes)} pairs, "
                          f"{len(sweep.group_names)} group(s))", fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
    return fig


def plot_anisotropy(result: Any, path: str | os.PathLike | None = None, *, title: str | None = None) -> "Figure":
    """Chen et al.'s Figures 1–2 for an :class:`~jaxmetrics.similarity.AnisotropyResult`: one
    panel per statistic (baseline, self-similarity, intra-sentence similarity) against the layer,
    one line per centering.

    Args:
      result: the :class:`~jaxmetrics.similarity.AnisotropyResult`.
      path: optional file to save the figure to (PNG, PDF, SVG, ... by suffix).
      title: figure title (default: the model and the number of texts).

    Returns:
      the matplotlib ``Figure``.

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.similarity import AnisotropyResult
      >>> c = {"none": np.array([0.2, 0.6], np.float32), "corpus": np.zeros(2, np.float32)}
      >>> r = AnisotropyResult(c, c, c, centerings=("none", "corpus"), model="m", num_texts=2,
      ...                      num_tokens=4, num_word_types=1, num_pairs=10, seed=0,
      ...                      center_batch_size=32, max_length=8)
      >>> [len(ax.lines) for ax in plot_anisotropy(r).axes]
      [3, 3, 3]
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 3.4))
    axes = fig.subplots(1, 3)
    layers = np.arange(result.num_layers + 1)
    for ax, stat in zip(axes, _TITLES):
        curves = getattr(result, stat)
        for c in result.centerings:
            ax.plot(layers, np.asarray(curves[c]), label=c, markersize=4, **_STYLES.get(c, {}))
        ax.axhline(0.0, color="grey", linewidth=0.6)
        ax.set_title(_TITLES[stat])
        ax.set_xlabel("layer (0 = embeddings)")
        ax.set_xticks(layers)
        ax.set_ylim(min(-0.1, ax.get_ylim()[0]), 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("mean cosine similarity")
    axes[-1].legend(title="centering", fontsize="small")
    fig.suptitle(title or f"{os.path.basename(str(result.model).rstrip('/')) or result.model}: "
                 f"{result.num_texts} texts, {result.num_tokens} tokens")
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path), dpi=100)
    return fig


def _label(token: str) -> str:
    """A token as a tick label: ``$`` escaped so matplotlib never reads it as mathtext."""
    return token.replace("$", r"\$")


def plot_token_alignment(alignment: Any, path: str | os.PathLike | None = None, *, index: int = 0,
                         title: str | None = None) -> "Figure":
    """One pair's token alignment as heatmaps: the similarity matrix ``S [L1, L2]`` (candidate
    tokens down, reference tokens across) with the greedy matches marked — a circle at
    ``(i, argmax_j S_ij)`` for each candidate token (what P averages), a cross at
    ``(argmax_i S_ij, j)`` for each reference token (what R averages) — and, for ``twmd``, the
    precision and recall transport plans (one plan for ``wmd``, whose two are the same).

    Args:
      alignment: a :class:`~jaxmetrics.similarity.TokenAlignments` (its pair ``index``) or a
        :class:`~jaxmetrics.similarity.PairAlignment`.
      path: optional file to save the figure to (PNG, PDF, SVG, ... by suffix).
      index: which aligned pair of a ``TokenAlignments`` (``alignment.pair(index)``).
      title: figure title (default: the pair, metric and its P, R, F1).

    Returns:
      the matplotlib ``Figure``.

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.similarity.alignment import AlignedTokens, PairAlignment
      >>> s = np.array([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7]], np.float32)
      >>> side = lambda tokens, axis: AlignedTokens(np.ones(len(tokens), bool), np.full(len(tokens), 1 / len(tokens),
      ...                                           np.float32), s.argmax(axis), s.max(axis), tokens=tokens)
      >>> pa = PairAlignment(s, 0.8, 0.85, 0.82, side(("a", "cat", "$5"), 1), side(("a", "dog"), 0), index=0,
      ...                    metric="bertscore")
      >>> [len(ax.collections) for ax in plot_token_alignment(pa).axes[:1]]
      [2]
    """
    from matplotlib.figure import Figure

    pa = alignment.pair(index) if hasattr(alignment, "pair") else alignment
    sim = np.asarray(pa.similarity, np.float64)
    n1, n2 = sim.shape
    panels = [("similarity S (o: candidate's best, x: reference's best)", sim, "RdBu_r")]
    if pa.precision_plan is not None:
        if pa.recall_plan is None or pa.recall_plan is pa.precision_plan or \
                np.array_equal(np.asarray(pa.recall_plan), np.asarray(pa.precision_plan)):
            panels.append(("transport plan", np.asarray(pa.precision_plan, np.float64), "Greys"))
        else:
            panels.append(("precision plan (rows sum to a)", np.asarray(pa.precision_plan, np.float64), "Greys"))
            panels.append(("recall plan (columns sum to b)", np.asarray(pa.recall_plan, np.float64), "Greys"))
    width = min(6.0, max(2.5, 0.28 * n2 + 1.5))
    height = min(12.0, max(2.5, 0.28 * n1 + 1.8))
    fig = Figure(figsize=(width * len(panels) + 0.8, height))
    axes = np.atleast_1d(fig.subplots(1, len(panels)))
    ylabels = [_label(t) for t in pa.candidate.tokens]
    xlabels = [_label(t) for t in pa.reference.tokens]
    for k, (ax, (name, mat, cmap)) in enumerate(zip(axes, panels)):
        if k == 0:
            lim = max(1e-12, float(np.max(np.abs(mat))))
            im = ax.imshow(mat, cmap=cmap, vmin=-lim, vmax=lim, aspect="auto", interpolation="nearest")
            cm = np.asarray(pa.candidate.match)
            rm = np.asarray(pa.reference.match)
            ax.scatter(cm, np.arange(n1), s=60, marker="o", facecolors="none", edgecolors="black", linewidths=1.2)
            ax.scatter(np.arange(n2), rm, s=40, marker="x", color="darkorange", linewidths=1.2)
        else:
            im = ax.imshow(mat, cmap=cmap, vmin=0.0, aspect="auto", interpolation="nearest")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
        ax.set_title(name, fontsize=8)
        ax.set_xticks(np.arange(n2), xlabels, rotation=90, fontsize=7)
        ax.set_yticks(np.arange(n1), ylabels if k == 0 else [""] * n1, fontsize=7)
        ax.set_xlabel("reference tokens", fontsize=8)
    axes[0].set_ylabel("candidate tokens", fontsize=8)
    extra = "" if pa.temperature is None else f", T={pa.temperature:g}, {pa.num_iterations} it."
    fig.suptitle(title or f"pair {pa.index}: {pa.metric}{extra}  P={float(pa.precision):.4f} "
                          f"R={float(pa.recall):.4f} F1={float(pa.f1):.4f}", fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path), dpi=110)
    return fig
