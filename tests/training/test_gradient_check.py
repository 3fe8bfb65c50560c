"""The policy-gradient estimate of MAUVE's gradient with influence rewards (the idea behind the
``mauve_pg`` training objective) against the exact gradient, on a finite model over real MiniLM
features of the plays: the check of benchmarks/training_gradient_check.py at toy size."""
from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from realtext_family import realtext_family  # noqa: F401 (fixture)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import training_gradient_check as gc  # noqa: E402

SIZES = (8, 128)


@pytest.fixture(scope="module")
def result(realtext_family):
    fam = realtext_family(60, members=("human", "repeated"))
    p, q_human = fam["human"]
    pool = np.concatenate([q_human[:30], fam["repeated"][1][30:]])   # half human, half looping
    return gc.check(pool, p, batch_sizes=SIZES, draws=2000, k=4)


def _row(res, reward, n):
    return next(r for r in res["rows"] if r["reward"] == reward and r["n"] == n)


def test_exact_gradient_is_the_derivative_of_mauve_of_the_expected_histogram(result):
    from jaxmetrics.mauve import mauve_from_histograms

    theta, p_hist, assign = (np.asarray(result[k], np.float64) for k in ("theta", "p_hist", "assign"))

    def f(t):
        pi = np.exp(t - t.max())
        pi /= pi.sum()
        return float(mauve_from_histograms(p_hist.astype(np.float32), (pi @ assign).astype(np.float32),
                                           scaling=gc.SCALING, num_points=gc.NUM_POINTS).mauve)

    i = int(np.argmax(np.abs(result["exact"])))   # the largest coordinate, central difference
    e = np.zeros_like(theta)
    e[i] = 0.05
    fd = (f(theta + e) - f(theta - e)) / 0.1
    assert fd == pytest.approx(result["exact"][i], rel=0.05), (fd, result["exact"][i])


def test_mean_estimate_approaches_the_exact_gradient_as_the_batch_grows(result):
    small, large = (_row(result, "influence", n) for n in SIZES)
    assert large["cosine"] >= 0.99, large
    # the plug-in bias shrinks with n: the gap at 8 lies well above the gap at 128
    assert small["relative_gap"] > large["relative_gap"] + 2 * (small["gap_se"] + large["gap_se"]), (small, large)
    # the variance falls about as 1/n (16x fewer batches' worth of noise; allow a factor 2)
    assert large["variance"] < small["variance"] / 8, (small, large)


def test_influence_rewards_carry_their_own_baseline(result):
    for n in SIZES:
        plain, loo = _row(result, "influence", n), _row(result, "influence, leave-one-out baseline", n)
        # the influences sum to zero, so the leave-one-out mean only rescales by n / (n - 1)
        assert loo["variance"] / plain["variance"] == pytest.approx((n / (n - 1)) ** 2, rel=1e-3)
        naive, naive_loo = _row(result, "MAUVE + influence", n), _row(result, "MAUVE + influence, leave-one-out baseline", n)
        # an uncentred reward: the baseline removes the constant and its variance
        assert naive_loo["variance"] == pytest.approx(loo["variance"], rel=1e-3)
        assert naive["variance"] > 1.3 * naive_loo["variance"], (naive, naive_loo)   # measured 1.5x, 1.8x
