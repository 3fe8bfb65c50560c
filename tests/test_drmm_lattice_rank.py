"""MAUVE-DRMM and MAUVE-Lattice rank graded distribution pairs like MAUVE-k-means (paper Table 5).

Family: P ~ N(0, I_d) against Q_delta ~ N(delta * 1, I_d) for increasing delta. The default
run uses small models (DRMM 2 x 5, lattice r^2 = 3 with 32 atoms, a narrow spreading net);
the slow run uses the paper's settings (DRMM 3 x 10, lattice r^2 = 50 with 744 atoms, width 768).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from jaxmetrics.mauve import compute_mauve
from jaxmetrics.mauve.drmm import DRMMQuantizer
from jaxmetrics.mauve.lattice import LatticeQuantizer

DELTAS = (0.0, 0.15, 0.3, 0.45, 0.6, 0.9)


def _family(n, d, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.standard_normal((n, d)).astype(np.float32)
    qs = [(rng.standard_normal((n, d)) + delta).astype(np.float32) for delta in DELTAS]
    return p, qs


def _scores(p, qs, quantizer, **kw):
    return [compute_mauve(p_features=p, q_features=q, quantizer=quantizer, **kw).mauve for q in qs]


def _check(n, d, drmm, lattice, redo):
    p, qs = _family(n, d)
    km = _scores(p, qs, "kmeans", kmeans_num_redo=redo)
    assert km[0] > 0.9 and km[-1] < 0.2  # the family really is graded
    for quant in (drmm, lattice):
        s = _scores(p, qs, quant)
        rho = spearmanr(km, s).statistic
        assert rho >= 0.9, (type(quant).__name__, km, s)


def test_rank_correlation_with_kmeans_small():
    _check(
        250,
        16,
        DRMMQuantizer(num_layers=2, num_components=5, num_epochs=10),
        LatticeQuantizer(hidden=64, r2=3, num_epochs=5),
        redo=2,
    )


@pytest.mark.slow
def test_rank_correlation_with_kmeans_paper_settings():
    _check(1000, 64, DRMMQuantizer(), LatticeQuantizer(num_epochs=20), redo=5)
