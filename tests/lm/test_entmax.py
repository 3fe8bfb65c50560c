"""α-entmax against its definition: α = 1 is softmax, α = 2 is sparsemax (sort-based closed form),
α = 1.5 matches the exact sort-based algorithm of Peters et al. (2019), the threshold equation
holds for other α, shift invariance, extreme logits, and bad input."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.lm import entmax


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _sparsemax(z):
    """Closed form: sort descending; support size k* = max{k : 1 + k z_(k) > Σ_{j<=k} z_(j)};
    τ = (Σ_{j<=k*} z_(j) - 1) / k*; p = [z - τ]_+."""
    zs = np.sort(z)[::-1]
    k = np.arange(1, z.size + 1)
    cs = np.cumsum(zs)
    kstar = k[1 + k * zs > cs].max()
    tau = (cs[kstar - 1] - 1) / kstar
    return np.maximum(z - tau, 0.0)


def _entmax15(z):
    """Exact 1.5-entmax (Peters et al. 2019, sort-based): with x = z / 2 sorted descending, a
    support of the k largest gives Σ_{j<=k} (x_(j) - τ)^2 = 1, i.e.
    τ_k = mean_k - sqrt((1 - ss_k) / k) (ss_k the sum of squared deviations from the mean);
    the support is the largest k with τ_k <= x_(k), and p = [x - τ_k*]_+^2."""
    x = z / 2.0
    xs = np.sort(x)[::-1]
    k = np.arange(1, x.size + 1)
    mean = np.cumsum(xs) / k
    ss = np.cumsum(xs ** 2) - k * mean ** 2
    delta = np.maximum((1 - ss) / k, 0.0)
    tau = mean - np.sqrt(delta)
    kstar = k[tau <= xs].max()
    return np.maximum(x - tau[kstar - 1], 0.0) ** 2


HAND = [np.array([1.0, 0.5, -1.0]), np.array([3.0, 2.9, 0.0, -2.0, 2.5]), np.array([0.0, 0.0, 0.0, 0.0]),
        np.array([10.0, -10.0]), np.array([0.3, 0.2, 0.1, -0.4, 1.2, 0.9])]


def _support_margin_ok(z, ref_p, alpha):
    """True when no logit sits within 1e-4 of the exact threshold (support well defined)."""
    x = (alpha - 1) * z
    p = ref_p
    tau = np.mean(x[p > 0] - p[p > 0] ** (alpha - 1))
    return np.all(np.abs(x - tau) > 1e-4)


@pytest.mark.parametrize("z", HAND + [np.random.default_rng(s).normal(size=9) * 2 for s in range(4)])
def test_alpha_1_2_15_match_softmax_sparsemax_and_exact_15(z):
    z32 = jnp.asarray(z, jnp.float32)
    np.testing.assert_allclose(entmax(z32, 1.0), _softmax(z), rtol=1e-6, atol=1e-7)
    for alpha, ref in ((2.0, _sparsemax(z)), (1.5, _entmax15(z))):
        p = np.asarray(entmax(z32, alpha))
        assert abs(p.sum() - 1) < 1e-6
        np.testing.assert_allclose(p, ref, atol=1e-5)
        if _support_margin_ok(z, ref, alpha):
            np.testing.assert_array_equal(p > 0, ref > 0)


def test_hand_values():
    # 1.5-entmax of [1, .5, -1]: x = [0, -.25, -1], u = -τ solves u² + (u - .25)² = 1
    u = (0.5 + np.sqrt(7.75)) / 4
    np.testing.assert_allclose(entmax(jnp.array([1.0, 0.5, -1.0]), 1.5), [u ** 2, (u - 0.25) ** 2, 0.0], atol=1e-6)
    np.testing.assert_allclose(entmax(jnp.array([1.0, 0.5, -1.0]), 2.0), [0.75, 0.25, 0.0], atol=1e-6)
    np.testing.assert_array_equal(entmax(jnp.array([1.0, 0.0]), 2.0), [1.0, 0.0])  # exactly at the threshold


@pytest.mark.parametrize("alpha", [1.2, 1.5, 2.0, 3.0])
def test_threshold_equation_holds(x64, alpha):
    """p_i = [(α-1) z_i - τ]_+^{1/(α-1)}: one τ for the whole support, and τ >= (α-1) z_i off it."""
    z = np.random.default_rng(1).normal(size=(5, 13)) * 1.5
    p = np.asarray(entmax(jnp.asarray(z), alpha))
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-12)
    for zi, pi in zip(z, p):
        on = pi > 0
        tau = (alpha - 1) * zi[on] - pi[on] ** (alpha - 1)
        np.testing.assert_allclose(tau, tau.mean(), atol=1e-10)
        assert np.all((alpha - 1) * zi[~on] <= tau.mean() + 1e-10)


def test_shift_invariance_axis_and_batched_alpha():
    z = jnp.asarray(np.random.default_rng(2).normal(size=(3, 8)), jnp.float32)
    alphas = jnp.array([1.0, 1.5, 2.0])
    p = entmax(z, alphas)
    for c in (100.0, -37.5):
        np.testing.assert_allclose(entmax(z + c, alphas), p, atol=2e-5)
    for i, a in enumerate([1.0, 1.5, 2.0]):
        np.testing.assert_allclose(p[i], entmax(z[i], a), atol=1e-7)
    np.testing.assert_allclose(entmax(z.T, 1.5, axis=0), entmax(z, 1.5).T, atol=1e-7)


def test_traced_alpha_no_retrace():
    z = jnp.asarray(np.random.default_rng(3).normal(size=(2, 6)), jnp.float32)
    f = jax.jit(lambda z, a: entmax(z, a))
    np.testing.assert_allclose(f(z, 1.5), entmax(z, 1.5), atol=1e-7)
    n = f._cache_size()
    np.testing.assert_allclose(f(z, 1.0), jax.nn.softmax(z), atol=1e-7)
    assert f._cache_size() == n


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0])
def test_tiny_huge_and_masked_logits_are_finite(alpha):
    base = np.array([1.0, 0.2, -0.7, 0.5], np.float32)
    for scale in (1e-30, 1e-8, 1e8, 1e30):
        p = np.asarray(entmax(jnp.asarray(base * scale), alpha))
        assert np.all(np.isfinite(p)) and abs(p.sum() - 1) < 1e-6, (scale, p)
    p = np.asarray(entmax(jnp.array([2.0, -jnp.inf, 1.0, -jnp.inf]), alpha))
    assert np.all(np.isfinite(p)) and p[1] == p[3] == 0 and abs(p.sum() - 1) < 1e-6
    np.testing.assert_allclose(entmax(jnp.asarray(base * 1e-30), alpha), 0.25, atol=1e-6)
    np.testing.assert_allclose(entmax(jnp.asarray(base * 1e30), alpha), [1, 0, 0, 0], atol=1e-6)


def test_bad_input():
    z = jnp.zeros(3)
    for bad in (0.5, -1.0, float("nan"), float("inf"), np.array([1.5, 0.9])):
        with pytest.raises(ValueError, match="^alpha"):
            entmax(z, bad)
    with pytest.raises(ValueError, match="^alpha"):
        entmax(z, None)
    with pytest.raises(TypeError, match="^axis"):
        entmax(z, 1.5, axis=1.0)
