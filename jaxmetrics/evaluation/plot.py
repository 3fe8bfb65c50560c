"""Figures of a :class:`~jaxmetrics.evaluation.GenerationReport` (written by
:func:`~jaxmetrics.evaluation.write_report`, the demo's too).

* :func:`curve_legend` — legend labels and caption of the divergence-curve figure: each curve is
  one sampling run and one k-means seed, so its area is a single MAUVE while the table shows a
  mean; every label gives both, named;
* :func:`plot_report_curves` — the divergence curves of every decoding setting;
* :func:`plot_report_lengths` — the continuation-length histograms of every row.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from jaxmetrics.results import Result

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["CurveLegend", "curve_legend", "plot_leaderboard", "plot_report_curves", "plot_report_lengths"]


class CurveLegend(Result):
    """Legend of the divergence-curve figure.

    Attributes:
      labels: one label per curve, in the figure's order.
      caption: the figure's caption (what a curve is, what the table's value is).
    """

    labels: list
    caption: str


def _row_label(key: str, labels: dict[str, str]) -> str:
    from jaxmetrics.evaluation.report import HUMAN

    return labels.get(key, "Human" if key == HUMAN else key)


def curve_legend(curves: dict[str, Any], rows: dict[str, dict], labels: dict[str, str] | None = None) -> CurveLegend:
    """Legend labels and caption of the divergence-curve figure.

    Each setting's curve is one quantisation of one run (its first sampling run, its first
    k-means seed), so its area is that single MAUVE; the table shows means over runs and seeds.
    The labels give both, and the caption says which is which.

    Args:
      curves: ``{row: [m, 2] curve}`` (the figure's curves, in legend order).
      rows: the table rows (``mauve``, ``mauve_std``, optional ``mauve_runs``).
      labels: display names of the rows (default: the row names).

    Returns:
      :class:`CurveLegend`.

    Examples:
      >>> c = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])   # x decreasing, as MAUVE returns it
      >>> curve_legend({"pure": c}, {"pure": {"mauve": 0.33, "mauve_std": 0.01, "mauve_runs": [0.3, 0.33, 0.36]}},
      ...              {"pure": "Pure sampling"}).labels
      ['Pure sampling: this curve 0.500 (run 1 of 3, 1st k-means seed); table 0.330 ± 0.010']
    """
    from jaxmetrics.numerics import trapezoid_area

    labels = labels or {}
    out = []
    for d, c in curves.items():
        area = float(trapezoid_area(np.asarray(c, np.float32)))
        row = rows.get(d, {})
        n_runs = len(row.get("mauve_runs", [])) or 1
        which = f"run 1 of {n_runs}, 1st k-means seed" if n_runs > 1 else "1st k-means seed"
        label = f"{_row_label(d, labels)}: this curve {area:.3f} ({which})"
        if "mauve" in row:
            label += f"; table {row['mauve']:.3f}" + (f" ± {row['mauve_std']:.3f}" if "mauve_std" in row else "")
        out.append(label)
    caption = ("Each curve: one sampling run and one k-means quantisation; 'this curve' is its area (its MAUVE).\n"
               "'table': the MAUVE of the results table, mean ± s.d. over the sampling runs "
               "(each run averaged over its k-means seeds; greedy: over the seeds).")
    return CurveLegend(labels=out, caption=caption)


def _figure(figsize: tuple[float, float]):
    """A figure and its axes, built without pyplot: saving it touches neither the user's matplotlib
    backend nor pyplot's list of open figures."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    return fig, fig.subplots()


def plot_report_curves(report: Any, path: str | os.PathLike, labels: dict[str, str] | None = None, *,
                       title: str | None = None) -> CurveLegend:
    """Save the divergence curves of ``report`` (one per decoding setting: first run, first
    k-means seed) with the :func:`curve_legend` labels and caption to ``path``; returns the legend.

    The legend sits below the axes, outside them: a curve near an axis (greedy decoding's hugs
    both) is never hidden behind it."""
    fig, legend = _curves_figure(report, labels, title)
    fig.savefig(path, dpi=120)
    return legend


def _curves_figure(report: Any, labels: dict[str, str] | None, title: str | None) -> tuple["Figure", CurveLegend]:
    """The figure of :func:`plot_report_curves`, and its legend."""
    from jaxmetrics.mauve.plot import plot_divergence_curves

    legend = curve_legend(report.curves, report.rows, labels)
    n = len(legend.labels)
    fig, ax = _figure((7.5, 6.5 + 0.22 * n))
    plot_divergence_curves(list(report.curves.values()), labels=legend.labels, ax=ax,
                           title=title or "Divergence curves: human (P) vs model (Q)")
    ax.get_legend().remove()
    # the areas are in the labels; below the axes, so that no curve is covered
    fig.legend(ax.lines, legend.labels, loc="lower center", bbox_to_anchor=(0.5, 0.075), fontsize="small",
               frameon=False)
    fig.text(0.01, 0.01, legend.caption, fontsize="x-small", va="bottom", ha="left")
    bottom = (0.09 + 0.045 * n) * 6.5 / (6.5 + 0.22 * n)
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig, legend


def plot_report_lengths(report: Any, path: str | os.PathLike, labels: dict[str, str] | None = None) -> "Figure":
    """Save the histograms of the continuation lengths of every row of ``report`` to ``path``;
    returns the figure.

    The rows' bars stand side by side in each length bin (one colour per row, never on top of
    one another), so rows with the same lengths -- a demo whose every text has exactly the
    requested length -- show one bar each; the bins span the lengths that occur."""
    labels = labels or {}
    fig, ax = _figure((7, 4.5))
    series = [(k, np.asarray(v)) for k, v in report.lengths.items()]
    filled = [v for _, v in series if v.size]
    lo = min(int(np.min(v)) for v in filled) if filled else 0
    hi = max(int(np.max(v)) for v in filled) + 1 if filled else 1
    edges = np.linspace(lo, hi, min(hi - lo, 40) + 1)
    width = (edges[1] - edges[0]) / max(len(series), 1)
    top = 1
    for i, (k, v) in enumerate(series):
        counts = np.histogram(v, bins=edges)[0] if v.size else np.zeros(len(edges) - 1, np.int64)
        top = max(top, int(counts.max()))
        mean = f"mean {np.mean(v):.1f}" if v.size else "no texts"
        ax.bar(edges[:-1] + i * width, counts, width=width, align="edge", label=f"{_row_label(k, labels)} ({mean})")
    ax.set_ylim(0, 1.1 * top + 0.08 * top * len(series))   # room for the legend above the bars
    ax.set_xlabel("continuation length (tokens, EOS excluded)")
    ax.set_ylabel("texts")
    title = "Length distribution (first run of each setting)"
    if filled and hi - lo == 1:
        title += f": every text has {lo} tokens"
        ax.set_xticks([lo + 0.5], [str(lo)])
    ax.set_title(title)
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return fig


def plot_leaderboard(board: Mapping[str, Any], path: str | os.PathLike | None = None, *,
                     xlabel: str = "score") -> "Figure":
    """Each system's score with its confidence interval, one row per system, the highest on top.

    Args:
      board: ``{system: interval}``, each interval an object or mapping with ``value``, ``low``
        and ``high`` (a :class:`~jaxmetrics.confidence.Interval`, or a row of the ``--json`` of
        ``jaxmetrics compare``).
      path: save the figure here (any format matplotlib writes) when given.
      xlabel: the score's name, under the axis.

    Returns:
      the matplotlib ``Figure``.

    Examples:
      >>> fig = plot_leaderboard({"a": {"value": 0.5, "low": 0.4, "high": 0.6},
      ...                         "b": {"value": 0.7, "low": 0.6, "high": 0.8}})
      >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]   # from the top: the highest first
      ['b', 'a']
    """
    from matplotlib.figure import Figure

    if not isinstance(board, Mapping) or not board:
        raise ValueError("board: expected a non-empty mapping {system: interval}")

    def field(ci: Any, k: str) -> float:
        return float(ci[k] if isinstance(ci, Mapping) else getattr(ci, k))

    names = list(board)
    vals = np.array([[field(board[n], k) for k in ("value", "low", "high")] for n in names], np.float64)
    order = sorted(range(len(names)), key=lambda i: -vals[i, 0])   # stable: ties keep the given order
    vals = vals[order]
    fig = Figure(figsize=(6, 0.5 + 0.45 * len(names)))
    ax = fig.subplots()
    ys = np.arange(len(order))[::-1]   # the first (best) row at the top
    ax.errorbar(vals[:, 0], ys, xerr=[vals[:, 0] - vals[:, 1], vals[:, 2] - vals[:, 0]], fmt="o", capsize=3)
    ax.set_yticks(ys, [names[i] for i in order])
    ax.set_xlabel(xlabel)
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path))
    return fig
