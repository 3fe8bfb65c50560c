"""Histogram stage of MAUVE vs mauve-text 0.4.0 (float64), definitions, jit, gradients."""
from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.mauve import divergence_curve, frontier_integral, mauve_from_counts, mauve_from_histograms
from jaxmetrics.mauve.frontier.histograms import area_under_divergence_curve, smooth_counts
from jaxmetrics.mauve.frontier import histograms as H

pytest.importorskip("mauve")
import mauve  # noqa: E402,F401  (mauve-text)

MT = sys.modules["mauve.compute_mauve"]  # the module; mauve.compute_mauve is the function


def _reference(p, q, m=25, c=5.0):
    """mauve-text's own code path for the histogram stage (compute_mauve's body)."""
    w = np.linspace(1e-6, 1 - 1e-6, m)
    curve = MT.get_divergence_curve_for_multinomials(p, q, w, c)
    x, y = curve.T
    i1, i2 = np.argsort(x), np.argsort(y)
    area = 0.5 * (MT.compute_area_under_curve(x[i1], y[i1]) + MT.compute_area_under_curve(y[i2], x[i2]))
    return area, MT.get_fronter_integral(p, q), curve


def _random_counts(rng, k, n, empty_frac):
    probs = rng.dirichlet(np.full(k, 0.5))
    probs[rng.random(k) < empty_frac] = 0.0
    if probs.sum() == 0:
        probs[0] = 1.0
    return rng.multinomial(n, probs / probs.sum()).astype(np.float64)


@pytest.mark.parametrize("k,m,c", [(2, 25, 5.0), (37, 25, 5.0), (200, 25, 5.0), (50, 7, 2.0), (64, 3, 5.0)])
def test_parity_with_mauve_text_random_histograms(x64, k, m, c):
    rng = np.random.default_rng(k * 31 + m)
    for trial in range(4):
        pc = _random_counts(rng, k, 1000, empty_frac=0.3 * (trial % 2))
        qc = _random_counts(rng, k, 700, empty_frac=0.3)
        p, q = pc / pc.sum(), qc / qc.sum()
        if np.array_equal(p, q):  # exact ties: see test_identical_histograms_tie_deviation
            qc = qc + 1.0
            q = qc / qc.sum()
        ref_area, ref_fi, ref_curve = _reference(p, q, m, c)
        out = mauve_from_histograms(jnp.asarray(p), jnp.asarray(q), scaling=c, num_points=m)
        assert out.divergence_curve.dtype == jnp.float64
        np.testing.assert_allclose(np.asarray(out.divergence_curve), ref_curve, rtol=0, atol=1e-12)
        assert abs(float(out.mauve) - ref_area) < 1e-9
        assert abs(float(out.frontier_integral) - ref_fi) < 1e-9
        # smoothed variants (mauve_star / frontier_integral_star) from counts
        ps, qs = (pc + 0.5) / (pc + 0.5).sum(), (qc + 0.5) / (qc + 0.5).sum()
        ref_star, ref_fi_star, _ = _reference(ps, qs, m, c)
        star = mauve_from_counts(jnp.asarray(pc), jnp.asarray(qc), pseudocount=0.5, scaling=c, num_points=m)
        assert abs(float(star.mauve) - ref_star) < 1e-9
        assert abs(float(star.frontier_integral) - ref_fi_star) < 1e-9


def test_parity_near_equal_bins_fi_guard(x64):
    # bins with |p - q| just under / over the 1e-8 guard
    p = np.array([0.25, 0.25 + 5e-9, 0.2, 0.3 - 5e-9])
    q = np.array([0.25, 0.25, 0.2 + 2e-8, 0.3 - 2e-8])
    ref_area, ref_fi, _ = _reference(p, q)
    out = mauve_from_histograms(p, q)
    assert abs(float(out.mauve) - ref_area) < 1e-12
    assert abs(float(out.frontier_integral) - ref_fi) < 1e-15


def test_identical_and_disjoint_definition(x64):
    p = jnp.array([0.1, 0.0, 0.6, 0.3])
    same = mauve_from_histograms(p, p)
    assert float(same.mauve) == 1.0
    assert float(same.frontier_integral) == 0.0
    dis = mauve_from_histograms(jnp.array([0.5, 0.5, 0.0, 0.0]), jnp.array([0.0, 0.0, 0.2, 0.8]))
    assert abs(float(dis.mauve) - 0.0040720962619613) < 1e-15
    assert abs(float(dis.frontier_integral) - 1.0) < 1e-15
    # disjoint: KL(q || R_w) = -log(1 - w), KL(p || R_w) = -log(w), so the curve is ((1-w)^5, w^5)
    w = np.linspace(1e-6, 1 - 1e-6, 25)
    expected = np.concatenate([[[1, 0]], np.stack([(1 - w) ** 5, w**5], 1), [[0, 1]]])
    np.testing.assert_allclose(np.asarray(dis.divergence_curve), expected, atol=1e-14)


def test_identical_histograms_tie_deviation(x64):
    """Documented deviation: with exactly tied curve points mauve-text's area depends on
    numpy's unstable argsort (p = q = [1, 0] gives 0.75 there); the tie-free natural-order
    trapezoid gives the definition's value 1. Without exact ties both agree (see above)."""
    p = np.array([1.0, 0.0])
    ref_area, ref_fi, ref_curve = _reference(p, p)
    out = mauve_from_histograms(p, p)
    np.testing.assert_allclose(np.asarray(out.divergence_curve), ref_curve, atol=1e-15)
    assert float(out.mauve) == 1.0 and float(out.frontier_integral) == ref_fi == 0.0


def test_hand_computed_frontier_integral(x64):
    p, q = 0.6, 0.2
    f = (p + q) / 2 - p * q * (np.log(p) - np.log(q)) / (p - q)
    # two bins: (0.6, 0.2) general, (0.4, 0.8) general
    g = (0.4 + 0.8) / 2 - 0.32 * (np.log(0.4) - np.log(0.8)) / (0.4 - 0.8)
    assert abs(float(frontier_integral(jnp.array([0.6, 0.4]), jnp.array([0.2, 0.8]))) - (f + g)) < 1e-15
    # one zero side contributes (p + q)/2
    assert abs(float(frontier_integral(jnp.array([0.5, 0.5, 0.0]), jnp.array([0.5, 0.3, 0.2]))) -
               (float(frontier_integral(jnp.array([0.5]), jnp.array([0.3]))) + 0.1)) < 1e-15


def test_smoothing_definition():
    c = jnp.array([4.0, 0.0, 1.0])
    np.testing.assert_allclose(smooth_counts(c, pseudocount=0.5), np.array([4.5, 0.5, 1.5]) / 6.5, rtol=1e-6)
    np.testing.assert_allclose(smooth_counts(c, pseudocount=1.0), np.array([5.0, 1.0, 2.0]) / 8.0, rtol=1e-6)
    np.testing.assert_allclose(smooth_counts(c, pseudocount=0.0), np.array([0.8, 0.0, 0.2]), rtol=1e-6)


def test_area_matches_sklearn_on_curve(x64):
    rng = np.random.default_rng(3)
    p, q = rng.dirichlet(np.ones(10)), rng.dirichlet(np.ones(10))
    curve = divergence_curve(p, q)
    ref_area, _, _ = _reference(p, q)
    assert abs(float(area_under_divergence_curve(curve)) - ref_area) < 1e-12


def test_jit_equals_eager_and_no_retrace():
    rng = np.random.default_rng(1)
    p = jnp.asarray(rng.dirichlet(np.ones(16)), jnp.float32)
    q = jnp.asarray(rng.dirichlet(np.ones(16)), jnp.float32)
    eager = mauve_from_histograms(p, q)
    jitted = jax.jit(mauve_from_histograms, static_argnames="num_points")
    out = jitted(p, q, scaling=5.0)
    for a, b in zip(jax.tree.leaves(eager), jax.tree.leaves(out), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)
    n0 = H._mauve_core._cache_size()
    mauve_from_histograms(q, p, scaling=3.0)  # same shapes, different scaling value
    mauve_from_histograms(p * 0.5 + q * 0.5, q)
    assert H._mauve_core._cache_size() == n0


def test_vmap_matches_loop():
    rng = np.random.default_rng(2)
    P = jnp.asarray(rng.dirichlet(np.ones(8), size=3), jnp.float32)
    Q = jnp.asarray(rng.dirichlet(np.ones(8), size=3), jnp.float32)
    batched = jax.vmap(lambda a, b: mauve_from_histograms(a, b).mauve)(P, Q)
    loop = [float(mauve_from_histograms(P[i], Q[i]).mauve) for i in range(3)]
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-6)
    # leading batch axes are also accepted directly
    np.testing.assert_allclose(np.asarray(mauve_from_histograms(P, Q).mauve), loop, rtol=1e-6)


def test_gradients_finite_with_empty_bins_and_fd(x64):
    pc = jnp.array([5.0, 0.0, 3.0, 2.0, 0.0])
    qc = jnp.array([0.0, 4.0, 3.0, 2.0 + 1e-12, 0.0])  # one near-equal bin hits the FI guard

    def loss(a, b):
        r = mauve_from_counts(a, b, pseudocount=0.5)
        return r.mauve + r.frontier_integral

    g = jax.grad(loss, argnums=(0, 1))(pc, qc)
    for gi in g:
        assert np.all(np.isfinite(np.asarray(gi)))
    # central finite differences
    eps = 1e-6
    for i in (0, 2, 3):  # bins with positive counts (two-sided differences stay >= 0)
        e = jnp.zeros(5).at[i].set(eps)
        fd = (loss(pc + e, qc) - loss(pc - e, qc)) / (2 * eps)
        assert abs(float(fd) - float(g[0][i])) < 1e-5
    # unsmoothed histograms with empty bins and exactly equal bins: still finite gradients
    p = jnp.array([0.5, 0.0, 0.25, 0.25])
    q = jnp.array([0.0, 0.5, 0.25, 0.25])
    gp, gq = jax.grad(lambda a, b: mauve_from_histograms(a, b).mauve + frontier_integral(a, b), argnums=(0, 1))(p, q)
    assert np.all(np.isfinite(np.asarray(gp))) and np.all(np.isfinite(np.asarray(gq)))


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(p_hist=[0.5, 0.5], q_hist=[1.0]), "q_hist"),
        (dict(p_hist=[], q_hist=[]), "p_hist"),
        (dict(p_hist=[0.5, np.nan], q_hist=[0.5, 0.5]), "p_hist"),
        (dict(p_hist=[0.5, 0.5], q_hist=[1.5, -0.5]), "q_hist"),
        (dict(p_hist=[0.0, 0.0], q_hist=[0.5, 0.5]), "p_hist"),
        (dict(p_hist=[0.5, 0.5], q_hist=[0.5, 0.5], scaling=0.0), "scaling"),
        (dict(p_hist=[0.5, 0.5], q_hist=[0.5, 0.5], scaling=-1.0), "scaling"),
        (dict(p_hist=[0.5, 0.5], q_hist=[0.5, 0.5], num_points=0), "num_points"),
    ],
)
def test_bad_input(kwargs, name):
    p = kwargs.pop("p_hist")
    q = kwargs.pop("q_hist")
    with pytest.raises(ValueError, match=f"^{name}"):
        mauve_from_histograms(np.asarray(p, float), np.asarray(q, float), **kwargs)


def test_bad_counts():
    with pytest.raises(ValueError, match="^pseudocount"):
        smooth_counts(jnp.array([1.0, 2.0]), pseudocount=-0.5)
    with pytest.raises(ValueError, match="^counts"):
        smooth_counts(jnp.array([0.0, 0.0]), pseudocount=0.0)
    with pytest.raises(ValueError, match="^q_counts"):
        mauve_from_counts(jnp.array([1.0, 2.0]), jnp.array([1.0, 2.0, 3.0]))


def test_frontier_integral_float32_near_equal_bins_is_nonnegative():
    """The textbook FI term cancels catastrophically as p -> q; ours stays >= 0 in float32."""
    import jax.numpy as jnp

    from jaxmetrics.mauve.frontier.histograms import frontier_integral

    p = jnp.array([0.3, 0.7], jnp.float32)
    for eps in (1e-4, 1e-6, 3e-8):
        q = jnp.array([0.3 + eps, 0.7 - eps], jnp.float32)
        v = float(frontier_integral(p, q))
        assert 0.0 <= v < 1e-6
