"""compare_mauve: several systems under one shared quantizer, intervals and p-values.

Scores against mauve_shared_codebook with the same fitted quantizer; error rates on real text
(all-MiniLM-L6-v2 features of the bundled sentences): two human-text systems (type I) and a
system with 30 % of its rows degraded (power), at n = 500 per set.
"""
from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxmetrics.mauve import compare_mauve, fit_quantizer, mauve_shared_codebook
from realtext_family import realtext_family  # noqa: F401 (fixture)


def _sets(n=200, d=8, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.normal(size=(n, d)).astype(np.float32)
    a = rng.normal(size=(n, d)).astype(np.float32)
    b = (rng.normal(size=(n + 40, d)) + 0.5).astype(np.float32)
    return p, a, b


def test_scores_are_the_shared_codebook_scores_averaged_over_seeds():
    p, a, b = _sets()
    cmp = compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(0), seeds=(3, 4), num_resamples=50)
    per_seed = []
    for s in (3, 4):
        fitted = fit_quantizer([p, a, b], seed=s)
        outs = mauve_shared_codebook([(p, a), (p, b)], fitted=fitted)
        per_seed.append([o.mauve for o in outs])
    np.testing.assert_allclose(cmp.scores, np.mean(per_seed, axis=0), atol=1e-6)
    np.testing.assert_allclose(cmp.difference, cmp.scores[:, None] - cmp.scores[None, :], atol=1e-6)
    assert cmp.names == ("a", "b") and cmp.seeds == (3, 4) and cmp.num_buckets == 20
    assert np.all(cmp.score_low <= cmp.scores) and np.all(cmp.scores <= cmp.score_high)
    assert float(cmp.low[0, 1]) <= float(cmp.difference[0, 1]) <= float(cmp.high[0, 1])
    assert cmp.p_value[0, 1] == cmp.p_value[1, 0] and np.all(np.diag(np.asarray(cmp.p_value)) == 1.0)


def test_identical_systems_have_p_one_and_a_shifted_one_is_significant():
    p, a, b = _sets(n=300)
    for method in ("randomization", "bootstrap"):
        cmp = compare_mauve(references=p, systems={"system0": a, "system1": a.copy(), "system2": b[:300]}, key=jax.random.key(1),
                            num_resamples=200, method=method)
        assert cmp.names == ("system0", "system1", "system2") and cmp.method == method
        assert float(cmp.difference[0, 1]) == 0.0 and float(cmp.p_value[0, 1]) == 1.0
        assert float(cmp.p_value[0, 2]) < 0.01
        assert [(d.better, d.worse) for d in cmp.significant(0.05)] == [("system0", "system2"), ("system1", "system2")]
        assert all(d.p_value < 0.05 for d in cmp.significant(0.05))


def test_reproducible_and_bad_input_named():
    p, a, b = _sets(n=100)
    one = compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(5), num_resamples=40)
    two = compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(5), num_resamples=40)
    np.testing.assert_array_equal(one.p_value, two.p_value)
    np.testing.assert_array_equal(one.score_low, two.score_low)
    with pytest.raises(ValueError, match="^systems"):
        compare_mauve(references=p, systems={"a": a}, key=jax.random.key(0))
    with pytest.raises(ValueError, match=r"^systems\['b'\]"):
        compare_mauve(references=p, systems={"a": a, "b": b[:, :3]}, key=jax.random.key(0))
    with pytest.raises(TypeError, match="^systems"):
        compare_mauve(references=p, systems=a, key=jax.random.key(0))
    with pytest.raises(ValueError, match="^method"):
        compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(0), method="t-test")
    with pytest.raises(ValueError, match="^num_resamples"):
        compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(0), num_resamples=1)
    with pytest.raises(ValueError, match="^seeds"):
        compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(0), seeds=(1, 1))
    with pytest.raises(ValueError, match="^confidence"):
        compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(0), confidence=1.5)


def test_three_systems_are_holm_adjusted_and_two_are_not():
    """More than two systems: the pairwise p-values are Holm-adjusted over the pairs (the raw ones
    kept), the adjusted ones decide ``significant``, and the correction is named and signed."""
    from jaxmetrics.confidence import holm_adjust
    from jaxmetrics.results import parse_signature

    p, a, b = _sets(n=200)
    three = compare_mauve(references=p, systems={"a": a, "near": a[::-1] + 0.05, "b": b[:200]}, key=jax.random.key(2),
                          num_resamples=100)
    assert three.correction == "holm" and parse_signature(three.signature)["correction"] == "holm"
    np.testing.assert_allclose(three.adjusted_p_value, holm_adjust(np.asarray(three.p_value, np.float64)), rtol=1e-6)
    assert np.all(np.asarray(three.adjusted_p_value) >= np.asarray(three.p_value))
    for d in three.significant(0.05):
        assert d.adjusted_p_value < 0.05 and d.p_value <= d.adjusted_p_value
    two = compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(2), num_resamples=50)
    assert two.correction == "none"
    np.testing.assert_array_equal(two.adjusted_p_value, two.p_value)


@pytest.mark.parametrize("kw,match", [
    ({"estimator": "knn"}, r"^estimator: compare_mauve is defined for estimator='quantized' only .* 'knn'"),
    ({"estimator": "gaussian"}, r"^estimator: .*'gaussian' is a density-ratio estimator"),
    ({"estimator": "classifier"}, r"^estimator: .*'classifier' is a density-ratio estimator"),
    ({"quantizer": "knn"}, r"^quantizer: 'knn' is a density-ratio estimator, not a quantizer"),
    ({"estimator": "nearest"}, r"^estimator: unknown name 'nearest'"),
])
def test_density_ratio_estimators_are_refused_by_name_before_any_fit(monkeypatch, kw, match):
    import jaxmetrics.mauve.analysis.compare as compare

    def no_fit(*args, **kwargs):
        raise AssertionError("a quantizer was fitted before the estimator was refused")

    monkeypatch.setattr(compare, "fit_quantizer", no_fit)
    p, a, b = _sets(n=60)
    with pytest.raises(ValueError, match=match):
        compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(0), **kw)


def test_an_estimator_instance_is_refused_by_its_name():
    from jaxmetrics.mauve import GaussianEstimator, KNNEstimator

    p, a, b = _sets(n=60)
    with pytest.raises(ValueError, match=r"^estimator: .*'knn' is a density-ratio estimator"):
        compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(0), estimator=KNNEstimator(k=5))
    with pytest.raises(ValueError, match=r"^quantizer: 'gaussian' is a density-ratio estimator"):
        compare_mauve(references=p, systems={"a": a, "b": b}, key=jax.random.key(0), quantizer=GaussianEstimator())


def _error_rates(realtext_family, reps, n=500):
    """p-values of (human vs human) and (human vs 30 % repeated n-grams) over ``reps`` draws."""
    fam = realtext_family(1000, members=("human", "repeated"))
    ph, qh = fam["human"]
    qr = fam["repeated"][1]
    null, alt = [], []
    for r in range(reps):
        rng = np.random.default_rng(r)
        pi, qi = rng.permutation(1000), rng.permutation(1000)
        b_rows = qi[n:2 * n]
        bad = rng.random(n) < 0.3
        systems = {"a": qh[qi[:n]], "b": qh[b_rows], "degraded": np.where(bad[:, None], qr[b_rows], qh[b_rows])}
        cmp = compare_mauve(references=ph[pi[:n]], systems=systems, key=jax.random.key(r), num_resamples=500)
        null.append(float(cmp.p_value[0, 1]))
        alt.append(float(cmp.p_value[0, 2]))
    return np.asarray(null), np.asarray(alt)


def test_real_text_error_rates_small(realtext_family):
    """Four draws at n = 300 (the rates themselves: the slow test below and
    benchmarks/mauve_compare_error_rates.py)."""
    null, alt = _error_rates(realtext_family, 4, n=300)
    assert np.sum(null < 0.05) <= 1, null
    assert np.sum(alt < 0.05) >= 3, alt


@pytest.mark.slow
def test_real_text_error_rates(realtext_family):
    null, alt = _error_rates(realtext_family, 60)
    assert np.mean(null < 0.05) <= 0.1, null
    assert np.mean(alt < 0.05) >= 0.9, alt


def test_a_system_given_twice_gets_one_interval_on_real_text(realtext_family):
    """The systems' rows are drawn with one key: two copies of one system (real MiniLM features
    of the plays) get the same interval and a difference of exactly 0 with a zero-width interval."""
    fam = realtext_family(1000, members=("human", "repeated"))
    p, q = fam["human"]
    looped = fam["repeated"][1][:300]
    cmp = compare_mauve(references=p[:300], systems={"a": q[:300], "again": q[:300].copy(), "looped": looped},
                        key=jax.random.key(2), num_resamples=100, method="bootstrap")
    assert float(cmp.score_low[0]) == float(cmp.score_low[1]) and float(cmp.score_high[0]) == float(cmp.score_high[1])
    assert float(cmp.difference[0, 1]) == float(cmp.low[0, 1]) == float(cmp.high[0, 1]) == 0.0
    assert float(cmp.scores[2]) < float(cmp.scores[0])
