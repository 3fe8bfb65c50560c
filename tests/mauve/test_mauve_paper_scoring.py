"""``scoring='paper'``: MAUVE scored as in the NeurIPS 2021 paper's code (krishnap25/mauve-experiments).

The reference below transcribes, in numpy + sklearn, that repository's ``src/mauve_metrics.py``
scoring (``kl_multinomial`` and ``get_mauve_score``): the angular grid
``cos(linspace(1e-6, pi/2 - 1e-6, 25))`` sorted ascending, ``r = w p + (1 - w) q``, the curve
``[(0, inf)] + [(KL(q||r), KL(p||r))] + [(inf, 0)]`` mapped by ``exp(-c .)`` and
``sklearn.metrics.auc(x, y)`` on it as built (no sorting, no symmetrisation).
"""
from __future__ import annotations

import numpy as np
import pytest
import sklearn.metrics

import jax.numpy as jnp

from jaxmetrics.mauve import FrontierSettings, compute_mauve, compute_mauve_seeds, mauve_from_histograms
from jaxmetrics.mauve.frontier import histograms as H
from jaxmetrics.mauve.pipeline.codebook import mauve_shared_codebook


def _kl_multinomial(p, q):
    if np.logical_and(p != 0, q == 0).any():
        return np.inf
    idx = np.logical_and(p != 0, q != 0)
    return np.sum(p[idx] * np.log(p[idx] / q[idx]))


def paper_score(p, q, num_points=25, scaling=5.0):
    """(mauve, curve) as mauve-experiments computes them.

    sklearn's ``auc`` raises when ``x`` is not monotone; on identical histograms the rounding of
    ``w p + (1 - w) q`` makes ``x`` wobble by ~1e-16 around 1 and the paper's code raises there.
    For that case only (non-monotone by < 1e-12) we take what ``auc`` computes once the
    direction is known (``-trapezoid(y, x)``), which is the value the option returns.
    """
    angles = np.linspace(1e-6, np.pi / 2 - 1e-6, num_points)
    weights = np.cos(angles)
    curve = [[0, np.inf]]
    for w in np.sort(weights):
        r = w * p + (1 - w) * q
        curve.append([_kl_multinomial(q, r), _kl_multinomial(p, r)])
    curve.append([np.inf, 0])
    curve = np.exp(-scaling * np.asarray(curve))
    try:
        area = sklearn.metrics.auc(curve[:, 0], curve[:, 1])
    except ValueError:
        dx = np.diff(curve[:, 0])
        assert dx.max() < 1e-12, "curve non-monotone beyond rounding"
        area = -np.trapezoid(curve[:, 1], curve[:, 0])
    return area, curve


def _pairs():
    rng = np.random.default_rng(7)
    out = []
    for k in (2, 10, 50, 300):  # random, full support
        out.append(("random", rng.dirichlet(np.ones(k)), rng.dirichlet(np.full(k, 0.5))))
    for k in (10, 100):  # random counts with empty bins on both sides
        pc = rng.multinomial(500, rng.dirichlet(np.full(k, 0.3))).astype(float)
        qc = rng.multinomial(400, rng.dirichlet(np.full(k, 0.3))).astype(float)
        out.append(("empty bins", pc / pc.sum(), qc / qc.sum()))
    p = rng.dirichlet(np.ones(20))
    out.append(("identical", p, p.copy()))
    out.append(("identical uniform", np.full(8, 1 / 8), np.full(8, 1 / 8)))
    out.append(("disjoint", np.array([0.5, 0.5, 0.0, 0.0]), np.array([0.0, 0.0, 0.3, 0.7])))
    near = np.r_[rng.dirichlet(np.ones(10)) * (1 - 1e-6), np.full(10, 1e-7)]
    out.append(("near-disjoint", near, near[::-1].copy()))
    return out


@pytest.mark.parametrize("case", _pairs(), ids=lambda c: c[0])
def test_paper_scoring_matches_transcription(x64, case):
    _, p, q = case
    ref_area, ref_curve = paper_score(p, q)
    out = mauve_from_histograms(jnp.asarray(p), jnp.asarray(q), scoring="paper")
    assert out.divergence_curve.dtype == jnp.float64 and out.divergence_curve.shape == (27, 2)
    np.testing.assert_allclose(np.asarray(out.divergence_curve), ref_curve, rtol=0, atol=1e-10)
    assert abs(float(out.mauve) - ref_area) < 1e-10
    # the frontier integral does not depend on the scoring
    assert float(out.frontier_integral) == float(mauve_from_histograms(jnp.asarray(p), jnp.asarray(q)).frontier_integral)


@pytest.mark.parametrize("m,c", [(7, 5.0), (25, 2.0), (100, 5.0)])
def test_paper_scoring_other_grid_sizes_and_scalings(x64, m, c):
    rng = np.random.default_rng(m)
    for _ in range(3):
        p, q = rng.dirichlet(np.full(30, 0.4)), rng.dirichlet(np.full(30, 0.4))
        ref_area, ref_curve = paper_score(p, q, num_points=m, scaling=c)
        out = mauve_from_histograms(jnp.asarray(p), jnp.asarray(q), scaling=c, num_points=m, scoring="paper")
        np.testing.assert_allclose(np.asarray(out.divergence_curve), ref_curve, rtol=0, atol=1e-10)
        assert abs(float(out.mauve) - ref_area) < 1e-10


def test_paper_scoring_batched_and_smoothed(x64):
    rng = np.random.default_rng(3)
    P, Q = rng.dirichlet(np.ones(12), size=4), rng.dirichlet(np.ones(12), size=4)
    out = mauve_from_histograms(jnp.asarray(P), jnp.asarray(Q), scoring="paper")
    np.testing.assert_allclose(np.asarray(out.mauve), [paper_score(P[i], Q[i])[0] for i in range(4)],
                               rtol=0, atol=1e-10)
    pc, qc = np.array([5.0, 0.0, 5.0]), np.array([5.0, 5.0, 0.0])
    star = H.mauve_from_counts(jnp.asarray(pc), jnp.asarray(qc), pseudocount=0.5, scoring="paper")
    ref, _ = paper_score((pc + 0.5) / (pc + 0.5).sum(), (qc + 0.5) / (qc + 0.5).sum())
    assert abs(float(star.mauve) - ref) < 1e-10
    curve = H.divergence_curve(jnp.asarray(P[0]), jnp.asarray(Q[0]), scoring="paper")
    np.testing.assert_allclose(np.asarray(curve), paper_score(P[0], Q[0])[1], rtol=0, atol=1e-10)


def test_paper_scoring_float32_keeps_the_last_grid_point():
    """cos(1e-6) rounds to 1 in float32; 1 - w is carried separately so R keeps q's mass."""
    p = np.array([0.6, 0.4, 0.0])
    q = np.array([0.3, 0.3, 0.4])
    ref, _ = paper_score(p, q)
    out = mauve_from_histograms(jnp.asarray(p, jnp.float32), jnp.asarray(q, jnp.float32), scoring="paper")
    assert abs(float(out.mauve) - ref) < 1e-5


# golden values of the default scoring, computed with the code before the option existed
_DEFAULT_GOLDEN = [(0.3385715950782647, 0.2714538514584069), (0.43882289106731726, 0.22343141976110004),
                   (0.24348824846541067, 0.33203795442062795)]


def _golden_cases():
    rng = np.random.default_rng(2021)
    out = []
    for k in (5, 40):
        out.append((rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))))
    p = rng.dirichlet(np.ones(20))
    p[:5] = 0
    p /= p.sum()
    q = rng.dirichlet(np.ones(20))
    q[10:14] = 0
    q /= q.sum()
    out.append((p, q))
    return out


def test_default_is_unchanged(x64):
    for (p, q), (m_ref, fi_ref) in zip(_golden_cases(), _DEFAULT_GOLDEN):
        d = mauve_from_histograms(jnp.asarray(p), jnp.asarray(q))
        e = mauve_from_histograms(jnp.asarray(p), jnp.asarray(q), scoring="mauve-text")
        assert float(d.mauve) == float(e.mauve)
        assert abs(float(d.mauve) - m_ref) < 1e-15 and abs(float(d.frontier_integral) - fi_ref) < 1e-15
        np.testing.assert_array_equal(np.asarray(d.divergence_curve), np.asarray(e.divergence_curve))
        paper = mauve_from_histograms(jnp.asarray(p), jnp.asarray(q), scoring="paper")
        assert float(paper.mauve) != float(d.mauve)  # the option does change the value
        assert abs(float(paper.mauve) - float(d.mauve)) < 5e-3  # by the grid's discretisation error


@pytest.fixture(scope="module")
def features():
    rng = np.random.default_rng(11)
    p = rng.normal(size=(120, 8)).astype(np.float32)
    q = (rng.normal(size=(100, 8)) + 0.6).astype(np.float32)
    return p, q


def test_compute_mauve_paper_scoring(features):
    p, q = features
    base = compute_mauve(p_features=p, q_features=q, seed=3)
    paper = compute_mauve(p_features=p, q_features=q, seed=3, scoring="paper")
    text = compute_mauve(p_features=p, q_features=q, seed=3, scoring="mauve-text")
    assert (text.mauve, text.mauve_star) == (base.mauve, base.mauve_star)
    # same quantization: histograms and frontier integrals are unchanged
    np.testing.assert_array_equal(paper.p_hist, base.p_hist)
    np.testing.assert_array_equal(paper.q_hist, base.q_hist)
    assert paper.frontier_integral == base.frontier_integral
    assert paper.frontier_integral_star == base.frontier_integral_star
    ref, ref_curve = paper_score(paper.p_hist, paper.q_hist)
    assert abs(paper.mauve - ref) < 1e-10
    np.testing.assert_allclose(paper.divergence_curve, ref_curve, rtol=0, atol=1e-10)
    pc, qc = paper.p_counts.astype(float), paper.q_counts.astype(float)
    ref_star, _ = paper_score((pc + 0.5) / (pc + 0.5).sum(), (qc + 0.5) / (qc + 0.5).sum())
    assert abs(paper.mauve_star - ref_star) < 1e-10
    assert paper.mauve != base.mauve


def test_compute_mauve_seeds_and_shared_codebook_paper_scoring(features):
    p, q = features
    out = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2), frontier=FrontierSettings(scoring="paper"))
    for s in range(2):
        ref, _ = paper_score(out.p_hist[s], out.q_hist[s])
        assert abs(float(out.mauve[s]) - ref) < 1e-10
    one = compute_mauve(p_features=p, q_features=q, seed=1, scoring="paper")
    assert float(out.mauve[0]) == pytest.approx(one.mauve, abs=1e-12)
    shared = mauve_shared_codebook([(p, q)], scoring="paper", num_buckets=8)
    ref, _ = paper_score(shared[0].p_hist, shared[0].q_hist)
    assert abs(shared[0].mauve - ref) < 1e-10


@pytest.mark.parametrize("bad", ["Paper", "sklearn", None, 1])
def test_bad_scoring(features, bad):
    p, q = features
    with pytest.raises(ValueError, match="scoring"):
        mauve_from_histograms(jnp.array([0.5, 0.5]), jnp.array([0.5, 0.5]), scoring=bad)
    with pytest.raises(ValueError, match="scoring"):
        H.divergence_curve(jnp.array([0.5, 0.5]), jnp.array([0.5, 0.5]), scoring=bad)
    with pytest.raises(ValueError, match="scoring"):
        compute_mauve(p_features=p, q_features=q, scoring=bad)
    with pytest.raises(ValueError, match="scoring"):
        compute_mauve_seeds(references=p, candidates=q, seeds=(1,), frontier=FrontierSettings(scoring=bad))
