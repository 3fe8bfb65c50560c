"""Figures shared by the families: the leaderboard of systems compared on one score.

matplotlib is imported when a figure is drawn; figures are built without pyplot, so the user's
backend and pyplot's figure list are never touched. Each family's own figures are in its
``plot.py`` (:mod:`jaxmetrics.mauve.plot`, :mod:`jaxmetrics.similarity.plot`, ...).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["plot_leaderboard"]


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
