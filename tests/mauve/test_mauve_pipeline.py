"""Full MAUVE pipeline vs mauve-text 0.4.0 on Gaussian features (means over 5 k-means seeds).

P ~ N(0, I), Q ~ N(delta * 1, I), d = 1024 (the parity protocol of docs/mauve.md). k-means cannot
match faiss bit for bit (different random streams), so the check is on the mean over 5 seeds:
within 0.02.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

from jaxmetrics.mauve import compute_mauve_seeds

pytest.importorskip("mauve")
pytest.importorskip("faiss")
import mauve  # noqa: E402

D = 1024
SEEDS = (25, 26, 27, 28, 29)


def _feats(n, shift, seed):
    return (np.random.default_rng(seed).standard_normal((n, D)) + shift).astype(np.float32)


def _compare(n, delta):
    p = _feats(n, 0.0, 1)
    q = _feats(n, delta, 2 + int(delta * 100))
    ref = [mauve.compute_mauve(p_features=p, q_features=q, seed=s) for s in SEEDS]
    ours = compute_mauve_seeds(references=p, candidates=q, seeds=SEEDS)
    ref_mauve = float(np.mean([r.mauve for r in ref]))
    ref_star = float(np.mean([r.mauve_star for r in ref]))
    ref_fi = float(np.mean([r.frontier_integral for r in ref]))
    assert ours.num_buckets == ref[0].num_buckets
    assert abs(ours.mauve_mean - ref_mauve) < 0.02, (n, delta, ours.mauve, [r.mauve for r in ref])
    assert abs(ours.mauve_star_mean - ref_star) < 0.02, (n, delta, ours.mauve_star, ref_star)
    assert abs(ours.frontier_integral_mean - ref_fi) < 0.02, (n, delta, ours.frontier_integral, ref_fi)


# make test keeps the two ends (same distribution, well separated); the rest is `slow`.
@pytest.mark.parametrize("delta", [0.0, pytest.param(0.05, marks=pytest.mark.slow),
                                   pytest.param(0.1, marks=pytest.mark.slow), 0.3])
def test_gaussian_parity_n1000(delta):
    _compare(1000, delta)


@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.0, 0.05, 0.1, 0.3])
def test_gaussian_parity_n2000(delta):
    _compare(2000, delta)
