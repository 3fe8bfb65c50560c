"""The shared numerics against scipy / numpy on the same inputs (ties, constant sides, groups)."""
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxmetrics.numerics import (average_ranks, mean_std, pearson, segment_pearson, segment_ranks, spearman,
                                 trapezoid_area)


def test_mean_std_matches_numpy_and_single_value_is_zero():
    v = np.array([0.3, 0.9, 0.4, 0.7])
    assert mean_std(v) == pytest.approx((v.mean(), v.std(ddof=1)))
    assert mean_std([5.0]) == (5.0, 0.0)
    m, s = mean_std(np.arange(12.0).reshape(3, 4), axis=-1)
    np.testing.assert_allclose(s, np.arange(12.0).reshape(3, 4).std(axis=-1, ddof=1))
    m, s = mean_std(np.ones((3, 1)), axis=-1)
    np.testing.assert_array_equal(s, np.zeros(3))


def test_ranks_and_correlations_match_scipy_with_ties():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 5, 40).astype(float)
    y = x + rng.normal(size=40)
    np.testing.assert_allclose(average_ranks(x), stats.rankdata(x))
    np.testing.assert_allclose(average_ranks(x, descending=True), stats.rankdata(-x))
    np.testing.assert_allclose(average_ranks(np.stack([x, y])), np.stack([stats.rankdata(x), stats.rankdata(y)]))
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y).statistic, abs=1e-12)
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert np.isnan(pearson(np.ones(5), np.arange(5.0)))
    with pytest.raises(ValueError, match="y:"):
        pearson([1.0, 2.0], [1.0, 2.0, 3.0])


def test_segment_forms_equal_per_group_scipy():
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(3), [7, 5, 9])
    x = rng.integers(0, 4, groups.size).astype(np.float32)
    y = (x + rng.normal(size=groups.size)).astype(np.float32)
    sizes = np.bincount(groups)
    r = np.asarray(segment_pearson(jnp.asarray(x), jnp.asarray(y), jnp.asarray(groups), jnp.asarray(sizes), 3))
    ranks = np.asarray(segment_ranks(jnp.asarray(x), jnp.asarray(groups), 3))
    for g in range(3):
        sel = groups == g
        assert r[g] == pytest.approx(stats.pearsonr(x[sel], y[sel]).statistic, abs=1e-5)
        np.testing.assert_allclose(ranks[sel], stats.rankdata(x[sel]))


def test_trapezoid_area_in_given_order():
    x = np.linspace(1.0, 0.0, 11)
    curve = np.stack([x, 1 - x], axis=-1)
    assert float(trapezoid_area(curve)) == pytest.approx(0.5)
    assert float(trapezoid_area(curve[::-1])) == pytest.approx(-0.5)
