"""Plots of MAUVE: divergence curves and sweeps (matplotlib).

matplotlib is imported when a figure is drawn, not when this module is imported. Figures are
made with pyplot in the user's backend (so a notebook shows them), which is never switched: where
there is no display, matplotlib itself falls back to Agg, and the command line sets Agg at its
entry (:func:`jaxmetrics.cli.main`).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from jaxmetrics.numerics import trapezoid_area

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["plot_divergence_curves", "plot_sweep"]


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
    a stack ``[S, m + 2, 2]`` (e.g. ``compute_mauve_seeds(references=...).divergence_curve``), or a
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
    import matplotlib.pyplot as plt   # the user's backend, whatever it is (Agg where there is no display)

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
        area = float(trapezoid_area(arr))
        ax.plot(arr[:, 0], arr[:, 1], marker=".", label=f"{label} (MAUVE {area:.3f})")
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


#: Axis labels of the swept settings.
_AXIS_LABELS = {"n": "sample size n (per side)", "k": "number of clusters k", "c": "scaling constant c",
                "quantizer": "quantizer", "length": "maximum text length (tokens)"}


def _tick(sweep: Any, i: int, value: Any) -> str:
    """Tick label of setting ``i``: ``'auto'`` of a k sweep shows the k it gave (``auto (k=20)``)."""
    if sweep.setting == "k" and value == "auto":
        ks = sorted({int(k) for k in np.asarray(sweep.num_buckets)[i]})
        return f"auto (k={'/'.join(map(str, ks))})"
    return str(value)


def plot_sweep(sweep: Any, path: str | os.PathLike | None = None, *, title: str | None = None,
               ax: Any = None) -> "Figure":
    """MAUVE (mean ± s.d. over seeds) of a :class:`~jaxmetrics.mauve.MauveSweepResult` against
    its setting, one line per system (``sweep.plot(...)`` calls this).

    Quantizer names and a k sweep with ``'auto'`` among its values are drawn on a categorical
    axis (``'auto'`` labelled with the k it gave). A length sweep gets a second panel with the median token length of each side (bars:
    10-90 % quantiles). matplotlib is imported here; with ``path`` the figure is saved.

    Returns:
      the matplotlib ``Figure``.

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve import mauve_sweep
      >>> from jaxmetrics.mauve.plot import plot_sweep
      >>> rng = np.random.default_rng(0)
      >>> res = mauve_sweep(references=rng.normal(size=(60, 4)), candidates={"a": rng.normal(size=(60, 4))},
      ...                   over="c", values=(1.0, 5.0), seeds=(1, 2))
      >>> len(plot_sweep(res).axes[0].lines) >= 1
      True
    """
    import matplotlib.pyplot as plt   # the user's backend, whatever it is (Agg where there is no display)

    # a quantizer sweep, or one with a non-numeric value (k = 'auto'), is drawn on a categorical axis
    categorical = sweep.setting == "quantizer" or not all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in sweep.values)
    x = np.arange(len(sweep.values)) if categorical else np.asarray(sweep.values, np.float64)
    length = sweep.references_length_mean is not None and ax is None
    if ax is None:
        if length:
            fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
        else:
            fig, ax = plt.subplots(figsize=(5, 3.6))
    else:
        fig = ax.figure
    for m, system in enumerate(sweep.systems):
        ax.errorbar(x, sweep.mauve_mean[:, m], yerr=sweep.mauve_std[:, m], marker="o", ms=4, capsize=3,
                    label=system, color=f"C{m}")
    if categorical:
        ax.set_xticks(x, [_tick(sweep, i, v) for i, v in enumerate(sweep.values)])
    elif sweep.setting in ("n", "k", "length") and len(x) > 1 and x.max() / max(x.min(), 1) >= 8:
        ax.set_xscale("log")
        ax.minorticks_off()
        ax.set_xticks(x, [f"{v:g}" for v in x])
    ax.set_xlabel(_AXIS_LABELS.get(sweep.setting, sweep.setting))
    ax.set_ylabel(f"MAUVE (mean ± s.d., {len(sweep.seeds)} seeds)")
    ax.set_ylim(0, 1.02)
    ax.set_title(title or f"MAUVE vs {_AXIS_LABELS.get(sweep.setting, sweep.setting)}", fontsize="medium")
    ax.legend(fontsize="small")
    if length:
        q = sweep.references_length_quantiles
        ax2.errorbar(x, q[:, 1], yerr=[q[:, 1] - q[:, 0], q[:, 2] - q[:, 1]], marker="s", ms=4, capsize=3,
                     label="references", color="black")
        for m, system in enumerate(sweep.systems):
            qc = sweep.candidates_length_quantiles[:, m]
            ax2.errorbar(x * (1.0 + 0.03 * (m + 1)), qc[:, 1], yerr=[qc[:, 1] - qc[:, 0], qc[:, 2] - qc[:, 1]],
                         marker="o", ms=3, capsize=2, label=system, color=f"C{m}")
        if ax.get_xscale() == "log":
            ax2.set_xscale("log")
            ax2.set_yscale("log")
            ax2.minorticks_off()
            ax2.set_xticks(x, [f"{v:g}" for v in x])
            ax2.set_yticks(x, [f"{v:g}" for v in x])
        ax2.set_xlabel(_AXIS_LABELS["length"])
        ax2.set_ylabel("tokens after truncation (median, 10-90 %)")
        ax2.set_title("text lengths", fontsize="medium")
        ax2.legend(fontsize="small")
    fig.tight_layout()
    if path is not None:
        fig.savefig(os.fspath(path), dpi=90)
    return fig
