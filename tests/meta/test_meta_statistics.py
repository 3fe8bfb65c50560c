"""The closed forms of meta-evaluation, by their definitions: Kendall tau-b (scipy on real scores
with ties), tau-like, the Williams test (its formula by hand), Holm, significance clusters."""
import math

import numpy as np
import pytest
import scipy.stats

from jaxmetrics.data import synthetic_scored_pairs
from jaxmetrics.meta import kendall_tau_b, significance_clusters, tau_like, williams_test


@pytest.fixture(scope="module")
def real_scores():
    """Real play sentences: the word-overlap "human" score (few distinct values: many ties) and
    two crude metrics with ties of their own (shared word counts, length of the copy)."""
    rows = synthetic_scored_pairs(80)
    human = np.array([r[2] for r in rows])
    shared = np.array([len(set(r[0].split()) & set(r[1].split())) for r in rows], float)
    length = np.array([len(r[1].split()) for r in rows], float)
    return human, shared, length


def test_kendall_tau_b_equals_scipy_on_real_scores_with_ties(real_scores):
    human, shared, length = real_scores
    assert len(np.unique(human)) < len(human) and len(np.unique(shared)) < len(shared)   # ties on both sides
    for metric in (shared, length):
        want = scipy.stats.kendalltau(metric, human, variant="b").statistic
        assert kendall_tau_b(metric, human) == pytest.approx(want, abs=1e-12)


def test_tau_like_by_its_definition(real_scores):
    human, shared, _ = real_scores
    conc = disc = 0
    for k in range(len(human)):
        for l in range(k + 1, len(human)):
            if abs(human[k] - human[l]) > 0.1:
                same = np.sign(shared[k] - shared[l]) == np.sign(human[k] - human[l])
                conc += same
                disc += not same          # a metric tie is discordant
    assert tau_like(shared, human, threshold=0.1) == pytest.approx((conc - disc) / (conc + disc), abs=1e-12)


def test_williams_equals_its_formula_by_hand():
    for r12, r13, r23, n in ((0.6, 0.5, 0.7, 100), (0.31, 0.45, 0.2, 12), (0.9, 0.88, 0.95, 3000)):
        k = 1 - r12 ** 2 - r13 ** 2 - r23 ** 2 + 2 * r12 * r13 * r23
        t = (r12 - r13) * math.sqrt((n - 1) * (1 + r23)) / math.sqrt(
            2 * k * (n - 1) / (n - 3) + (r12 + r13) ** 2 / 4 * (1 - r23) ** 3)
        w = williams_test(r12, r13, r23, n)
        assert float(w.statistic) == pytest.approx(t, rel=1e-12)
        assert float(w.p_value) == pytest.approx(2 * scipy.stats.t.sf(abs(t), n - 3), rel=1e-7, abs=1e-12)
        assert float(w.p_greater) == pytest.approx(scipy.stats.t.sf(t, n - 3), rel=1e-7, abs=1e-12)
        assert w.df == n - 3


def test_williams_refuses_bad_input():
    with pytest.raises(ValueError, match="n: "):
        williams_test(0.5, 0.4, 0.3, 3)
    with pytest.raises(ValueError, match="r23: "):
        williams_test(0.5, 0.4, 1.3, 30)


def test_clusters_on_a_constructed_case():
    values = [0.70, 0.80, 0.79, 0.50, 0.49]
    p = np.ones((5, 5))
    sig = lambda i, j, v: (p.__setitem__((i, j), v), p.__setitem__((j, i), v))   # noqa: E731
    sig(1, 0, 0.01)      # top (1) beats 0
    sig(1, 3, 0.001)
    sig(1, 4, 0.001)
    sig(2, 3, 0.001)
    sig(0, 4, 0.2)       # 0 and 4 not separable: 4 joins 0's cluster
    sig(0, 3, 0.3)
    assert significance_clusters(values, p).tolist() == [2, 1, 1, 2, 2]
    assert significance_clusters([0.5, np.nan], np.ones((2, 2))).tolist() == [1, 0]
