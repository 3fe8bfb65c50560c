"""The library's plot functions never switch the user's matplotlib backend (a notebook keeps its
inline backend, a desktop session its window backend): each is called here under a backend the
test chose, which must still be the backend afterwards. Only the command line picks Agg, at its
entry (``jaxmetrics.cli.main``)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")


@pytest.fixture
def svg_backend():
    """The ``svg`` backend (non-interactive, always available) for the test, then the one before."""
    before = matplotlib.get_backend()
    matplotlib.use("svg", force=True)
    yield "svg"
    import matplotlib.pyplot as plt

    plt.close("all")
    matplotlib.use(before, force=True)


def _curve(shift: float) -> np.ndarray:
    t = np.linspace(0.0, 1.0, 9)
    return np.stack([t, np.clip(1.0 - t ** (1.0 + shift), 0.0, 1.0)], axis=1)


def test_mauve_plots_keep_the_backend(svg_backend, tmp_path):
    from jaxmetrics.mauve.plot import plot_divergence_curves

    plot_divergence_curves({"a": _curve(0.5), "b": _curve(1.0)}, tmp_path / "c.png")
    assert matplotlib.get_backend() == svg_backend
    assert (tmp_path / "c.png").stat().st_size > 0


def test_diversity_plot_keeps_the_backend(svg_backend, tmp_path):
    from jaxmetrics.diversity import compute_set_metrics
    from jaxmetrics.diversity.plot import plot_metric_vs_parameter

    vals = compute_set_metrics([["a b", "a b"], ["a b", "c d"], ["a c", "b d"]], ["distinct"])
    plot_metric_vs_parameter([0.1, 0.5, 1.0], vals, str(tmp_path / "d.png"))
    assert matplotlib.get_backend() == svg_backend


def test_report_plots_keep_the_backend(svg_backend, tmp_path):
    from jaxmetrics.evaluation.plot import plot_report_curves, plot_report_lengths

    report = SimpleNamespace(curves={"greedy": _curve(2.0), "top_p=0.9": _curve(0.3)},
                             rows={"greedy": {"mauve": 0.2}, "top_p=0.9": {"mauve": 0.8}},
                             lengths={"human": np.array([5, 7, 9]), "greedy": np.array([3, 4, 4])})
    plot_report_curves(report, tmp_path / "r.png")
    plot_report_lengths(report, tmp_path / "l.png")
    assert matplotlib.get_backend() == svg_backend
    assert (tmp_path / "r.png").exists() and (tmp_path / "l.png").exists()


def test_compare_leaderboard_plot_keeps_the_backend(svg_backend, tmp_path):
    from jaxmetrics.evaluation.plot import plot_leaderboard

    board = {"a": {"value": 0.5, "low": 0.4, "high": 0.6}, "b": {"value": 0.7, "low": 0.65, "high": 0.8}}
    fig = plot_leaderboard(board, tmp_path / "b.png", xlabel="score")
    assert matplotlib.get_backend() == svg_backend
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["b", "a"]   # from the top: the highest first
