"""Plots of MAUVE divergence curves (matplotlib, Agg backend: works without a display).

matplotlib is imported when a figure is drawn, not when this module is imported.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["plot_divergence_curves"]


def _as_curve(c: Any) -> np.ndarray:
    curve = getattr(c, "divergence_curve", c)
    arr = np.asarray(curve, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"curves: each curve must have shape [m, 2], got {arr.shape}")
    return arr


def plot_divergence_curves(
    curves: Any,
    path: str | os.PathLike | None = None,
    *,
    labels: Sequence[str] | None = None,
    title: str = "MAUVE divergence curves",
    ax: Any = None,
) -> "Figure":
    """Plot one or several divergence curves ``[m + 2, 2]`` (or objects with ``divergence_curve``).

    Each curve is drawn as ``x = exp(-c KL(Q || R_w))`` against ``y = exp(-c KL(P || R_w))``; the
    legend shows the area (MAUVE) next to each label. ``curves`` may be a single curve, a list,
    a stack ``[S, m + 2, 2]`` (e.g. ``compute_mauve_seeds(...).divergence_curve``), or a
    ``{label: curve}`` mapping. With ``path`` the figure is saved (PNG, PDF, ... by suffix).

    Args:
      curves: the curve(s), as above; results with a ``divergence_curve`` field are accepted.
      path: optional file to save the figure to.
      labels: legend labels, one per curve (default: the mapping's keys, or ``curve i``).
      title: the axes' title.
      ax: optional matplotlib ``Axes`` to draw on (default: a new figure).

    Returns:
      the matplotlib ``Figure``.

    Examples:
      >>> from jaxmetrics.mauve.plot import plot_divergence_curves
      >>> import numpy as np
      >>> from jaxmetrics.mauve import mauve_from_histograms
      >>> r = mauve_from_histograms(np.array([0.7, 0.3]), np.array([0.4, 0.6]))
      >>> fig = plot_divergence_curves({"model": r})
      >>> len(fig.axes[0].lines)
      1
    """
    import matplotlib

    if ax is None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if isinstance(curves, Mapping):
        labels = list(curves.keys()) if labels is None else list(labels)
        items = list(curves.values())
    elif hasattr(curves, "divergence_curve"):
        items = [curves]
    elif isinstance(curves, (list, tuple)):
        items = list(curves)
    else:  # one array [m, 2], or a stack [S, m, 2]
        arr = np.asarray(curves)
        items = [arr] if arr.ndim == 2 else list(arr)
    if not items:
        raise ValueError("curves: nothing to plot")
    if labels is None:
        labels = [f"curve {i}" for i in range(len(items))] if len(items) > 1 else ["curve"]
    if len(labels) != len(items):
        raise ValueError(f"labels: {len(labels)} labels for {len(items)} curves")
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.5, 4.5))
    else:
        fig = ax.figure
    for item, label in zip(items, labels):
        arr = _as_curve(item)
        x, y = arr[:, 0], arr[:, 1]
        area = float(np.sum((x[:-1] - x[1:]) * (y[:-1] + y[1:])) / 2)
        ax.plot(x, y, marker=".", label=f"{label} (MAUVE {area:.3f})")
    ax.set_xlabel(r"$\exp(-c\,\mathrm{KL}(Q\,\|\,R_\lambda))$")
    ax.set_ylabel(r"$\exp(-c\,\mathrm{KL}(P\,\|\,R_\lambda))$")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend(loc="lower left", fontsize="small")
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path), dpi=120)
    return fig
