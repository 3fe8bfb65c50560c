"""Plots of the diversity family (matplotlib): every metric against the parameter.

Figures are built without pyplot and saved to a file, so the user's matplotlib backend and
pyplot's figure list are never touched."""
from __future__ import annotations

from typing import Any

import numpy as np

from jaxmetrics.diversity.set_metrics import SetMetricValues

__all__ = ["plot_metric_vs_parameter"]


def plot_metric_vs_parameter(params: Any, values: SetMetricValues, path: str, *,
                             label_name: str = "parameter") -> str:
    """Save a scatter plot of every metric against the diversity parameter to ``path``.

    Each metric is z-scored so they share one axis.

    Args:
      params: ``[S]`` the diversity parameter of each set.
      values: :class:`SetMetricValues` of the sets (:func:`compute_set_metrics`).
      path: the image file to write (PNG).
      label_name: the x-axis label.

    Returns:
      ``path``.

    Examples:
      >>> import os, tempfile
      >>> from jaxmetrics.diversity import compute_set_metrics
      >>> vals = compute_set_metrics([["a b", "a b"], ["a b", "c d"], ["a c", "b d"]], ["distinct"])
      >>> out = plot_metric_vs_parameter([0.1, 0.5, 1.0], vals, os.path.join(tempfile.mkdtemp(), "p.png"))
      >>> os.path.getsize(out) > 0
      True
    """
    from matplotlib.figure import Figure

    if not isinstance(values, SetMetricValues):
        raise TypeError(f"values: expected SetMetricValues (compute_set_metrics), got {type(values).__name__}")
    p = np.asarray(params, np.float64)
    fig = Figure(figsize=(6, 4))
    ax = fig.subplots()
    for name in values.names:
        v = np.asarray(values[name], np.float64)
        z = (v - v.mean()) / (v.std() if v.std() > 0 else 1.0)
        order = np.argsort(p, kind="stable")
        ax.plot(p[order], z[order], ".", alpha=0.6, label=name)
    ax.set_xlabel(label_name)
    ax.set_ylabel("metric (z-score)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path
