"""The MAUVE family through the library's entry points: ``compute_mauve(estimator=, divergence=)``,
``compute_mauve_seeds`` and ``mauve_sweep`` give, for every estimator, the value of
:func:`estimate_mauve` with the same key; ``divergence=`` on the histogram path is
:func:`f_mauve` on the plain and smoothed histograms; the KL default is unchanged.
"""
from __future__ import annotations

import jax
import numpy as np
import pytest
from realtext_family import realtext_family  # noqa: F401 (session fixture)
from scipy import stats

from jaxmetrics.mauve import FrontierSettings, RatioDetails, compute_mauve, compute_mauve_seeds, mauve_sweep
from jaxmetrics.mauve.frontier.estimate import estimate_mauve
from jaxmetrics.mauve.frontier.estimators import GaussianEstimator
from jaxmetrics.mauve.frontier.divergences import f_mauve

RATIO = ("knn", "classifier", "gaussian")


PQ = dict(n=160, d=6, shift=np.array([0.6, 0, 0, 0, 0, 0]), seed=3)  # the pq fixture: tests/conftest.py


@pytest.mark.parametrize("name", RATIO)
def test_compute_mauve_estimator_is_estimate_mauve(pq, name):
    p, q = pq
    out = compute_mauve(p_features=p, q_features=q, estimator=name, seed=7)
    ref = estimate_mauve(references=p, candidates=q, key=jax.random.key(7), estimator=name)
    assert out.mauve == pytest.approx(ref.mauve, abs=1e-12)
    assert out.frontier_integral == pytest.approx(ref.frontier_integral, abs=1e-12)
    np.testing.assert_allclose(out.divergence_curve, ref.divergence_curve, atol=1e-12)
    np.testing.assert_allclose(out.p_log_ratio, ref.p_log_ratio, atol=1e-12)
    assert out.estimator == name and out.divergence == "kl"
    assert isinstance(out.details, RatioDetails) and out.details.estimator == name
    assert not hasattr(out, "mauve_star") and not hasattr(out, "p_hist") and not hasattr(out, "num_buckets")
    assert f"estimator:{name}" in out.signature and "seeds:7" in out.signature
    assert 0.0 < out.mauve < 0.999  # the shifted side is told apart


def test_an_estimator_instance_carries_its_settings(pq):
    p, q = pq
    est = GaussianEstimator(shrinkage=0.5)
    out = compute_mauve(p_features=p, q_features=q, estimator=est, seed=1)
    assert out.mauve == pytest.approx(estimate_mauve(references=p, candidates=q, key=jax.random.key(1), estimator=est).mauve, abs=1e-12)
    assert "gaussian_shrinkage:0.5" in out.signature
    assert out.mauve != pytest.approx(compute_mauve(p_features=p, q_features=q, estimator="gaussian", seed=1).mauve)


def test_kl_default_unchanged_and_other_divergences_are_f_mauve(pq):
    p, q = pq
    base = compute_mauve(p_features=p, q_features=q, seed=3)
    kl = compute_mauve(p_features=p, q_features=q, seed=3, divergence="kl")
    assert (kl.mauve, kl.mauve_star, kl.frontier_integral) == (base.mauve, base.mauve_star, base.frontier_integral)
    assert kl.signature == base.signature and "|divergence:" not in base.signature
    with jax.enable_x64(True):
        for div in ("js", "hellinger"):
            out = compute_mauve(p_features=p, q_features=q, seed=3, divergence=div)
            np.testing.assert_array_equal(out.p_counts, base.p_counts)  # same quantization
            assert out.mauve == pytest.approx(float(f_mauve(base.p_hist, base.q_hist, divergence=div).mauve), abs=1e-12)
            sp, sq = (np.asarray(c, np.float64) + 0.5 for c in (base.p_counts, base.q_counts))
            star = float(f_mauve(sp / sp.sum(), sq / sq.sum(), divergence=div).mauve)
            assert out.mauve_star == pytest.approx(star, abs=1e-12)
            assert out.frontier_integral == base.frontier_integral  # KL-based whatever the divergence
            assert out.divergence == div and f"divergence:{div}" in out.signature
            assert out.mauve != pytest.approx(base.mauve, abs=1e-3)


def test_kl_through_f_mauve_equals_the_histogram_stage(pq):
    """The smoothing of the divergence path is the histogram stage's own: KL through it is mauve_star."""
    p, q = pq
    base = compute_mauve(p_features=p, q_features=q, seed=3)
    with jax.enable_x64(True):
        sp, sq = (np.asarray(c, np.float64) + 0.5 for c in (base.p_counts, base.q_counts))
        assert float(f_mauve(sp / sp.sum(), sq / sq.sum()).mauve) == pytest.approx(base.mauve_star, abs=1e-10)


@pytest.mark.parametrize("name", ["gaussian", "knn"])
def test_seeds_with_an_estimator(pq, name):
    p, q = pq
    out = compute_mauve_seeds(references=p, candidates=q, seeds=(4, 5), estimator=name)
    each = [compute_mauve(p_features=p, q_features=q, estimator=name, seed=s).mauve for s in (4, 5)]
    np.testing.assert_allclose(out.mauve, each, atol=1e-12)
    assert out.mauve_mean == pytest.approx(np.mean(each), abs=1e-12)
    assert isinstance(out.details, RatioDetails) and out.details.p_log_ratio.shape[0] == 2
    assert not hasattr(out, "mauve_star") and not hasattr(out, "mauve_star_mean") and out.estimator == name
    if name == "knn":  # deterministic: no seed spread
        assert out.mauve_std == 0.0


def test_seeds_with_a_divergence_match_single_calls(pq):
    p, q = pq
    out = compute_mauve_seeds(references=p, candidates=q, seeds=(4, 5), frontier=FrontierSettings(divergence="tv"))
    for i, s in enumerate((4, 5)):
        one = compute_mauve(p_features=p, q_features=q, seed=s, divergence="tv")
        assert out.mauve[i] == pytest.approx(one.mauve, abs=1e-6)
        assert out.mauve_star[i] == pytest.approx(one.mauve_star, abs=1e-6)
    assert out.divergence == "tv"


@pytest.mark.parametrize("name", RATIO)
def test_sweep_over_n_with_every_estimator(pq, name):
    p, q = pq
    systems = {"shifted": q, "same": p[::-1].copy()}
    res = mauve_sweep(references=p, candidates=systems, over="n", values=(80, 160), seeds=(2, 3), estimator=name)
    assert res.mauve.shape == (2, 2, 2) and res.estimator == name
    assert res.mauve_star is None and res.num_buckets is None
    for j, s in enumerate((2, 3)):  # n = all rows: compute_mauve with that seed
        one = compute_mauve(p_features=p, q_features=q, estimator=name, seed=s)
        assert res.mauve[1, 0, j] == pytest.approx(one.mauve, abs=1e-9)
    assert np.all(res.mauve_mean[:, 1] > res.mauve_mean[:, 0])
    rows = res.rows()
    assert rows[0].num_buckets is None and rows[0].mauve_star_mean is None
    assert f"estimator:{name}" in res.signature


def test_sweep_over_c_with_an_estimator(pq):
    p, q = pq
    res = mauve_sweep(references=p, candidates={"shifted": q}, over="c", values=(1.0, 5.0), seeds=(2,),
                      estimator="gaussian")
    one = compute_mauve(p_features=p, q_features=q, estimator="gaussian", seed=2)
    assert res.mauve[1, 0, 0] == pytest.approx(one.mauve, abs=1e-9)
    assert res.mauve[0, 0, 0] > res.mauve[1, 0, 0]  # a smaller c shrinks every divergence less


def test_bad_combinations_name_the_argument(pq):
    p, q = pq
    with pytest.raises(ValueError, match="num_buckets"):
        compute_mauve(p_features=p, q_features=q, estimator="knn", num_buckets=8)
    with pytest.raises(ValueError, match="quantizer"):
        compute_mauve(p_features=p, q_features=q, estimator="knn", quantizer="lattice")
    with pytest.raises(ValueError, match="estimator"):
        compute_mauve(p_features=p, q_features=q, estimator="nearest")
    with pytest.raises(TypeError, match="estimator"):
        compute_mauve(p_features=p, q_features=q, estimator=3)
    with pytest.raises(ValueError, match="divergence"):
        compute_mauve(p_features=p, q_features=q, divergence="kullback")
    with pytest.raises(ValueError, match="confidence"):
        compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2), estimator="gaussian", confidence=0.95)
    with pytest.raises(ValueError, match="confidence"):
        compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2), frontier=FrontierSettings(divergence="js"), confidence=0.95)
    with pytest.raises(ValueError, match="over"):
        mauve_sweep(references=p, candidates={"a": q}, over="k", values=(5,), seeds=(1,), estimator="knn")


def test_real_text_family_through_compute_mauve(realtext_family):
    """MiniLM features of the bundled sentences (0 / 50 / 100 % of Q's rows looping), n = 300: every
    estimator called through compute_mauve_seeds orders the family as k-means does (n = 1,000 through
    estimate_mauve: tests/mauve/test_mauve_estimators.py)."""
    n = 300
    fam = realtext_family(n, members=("human", "repeated"))
    p, q_human = fam["human"]
    q_rep = fam["repeated"][1]
    half = np.where((np.arange(n) % 2 == 0)[:, None], q_rep, q_human)
    qs = (q_human, half, q_rep)
    km = [compute_mauve_seeds(references=p, candidates=q, seeds=(1,)).mauve_mean for q in qs]
    assert km[0] > km[1] > km[2]
    for name in RATIO:
        vals = [compute_mauve_seeds(references=p, candidates=q, seeds=(1,), estimator=name).mauve_mean for q in qs]
        assert stats.spearmanr(km, vals).statistic == pytest.approx(1.0), (name, km, vals)
        assert vals[0] >= 0.95 and vals[-1] <= 0.1, (name, vals)
