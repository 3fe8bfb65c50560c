"""DRMM quantizer: definition, hard-EM training, bins, summary, soft assignment, registry, bad input."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.mauve import QUANTIZERS, compute_mauve
from jaxmetrics.mauve.quantize.drmm import (
    DRMMQuantizer,
    FittedDRMMQuantizer,
    _assign,
    drmm_layer_log_probs,
)

SMALL = dict(num_layers=2, num_components=4, num_epochs=40, batch_size=32)


def _clusters(seed=0, n_per=60, d=8):
    rng = np.random.default_rng(seed)
    centers = np.zeros((3, d))
    centers[0, 0], centers[1, 1], centers[2, 2] = 12.0, 12.0, 12.0
    x = np.concatenate([c + rng.standard_normal((n_per, d)) for c in centers]).astype(np.float32)
    return x, np.repeat(np.arange(3), n_per)


@pytest.fixture(scope="module")
def fitted():
    x, y = _clusters()
    return x, y, DRMMQuantizer(**SMALL).fit(x, key=jax.random.key(0))


def test_layer_log_probs_match_definition(x64):
    rng = np.random.default_rng(1)
    L, C, d, n = 3, 4, 5, 7
    means = rng.standard_normal((L, C, d))
    log_std = 0.3 * rng.standard_normal((L, C, d))
    logits = rng.standard_normal((L, C))
    x = rng.standard_normal((n, d)) * 2
    out = drmm_layer_log_probs(jnp.asarray(means), jnp.asarray(log_std), jnp.asarray(logits), jnp.asarray(x))
    lp, ks = out.log_probs, out.components
    r = x.copy()
    for l in range(L):
        logw = logits[l] - np.log(np.exp(logits[l]).sum())
        var = np.exp(2 * log_std[l])
        ref = logw[None] + np.sum(
            -0.5 * (r[:, None, :] - means[l][None]) ** 2 / var[None] - 0.5 * np.log(2 * np.pi * var[None]), axis=-1
        )
        np.testing.assert_allclose(lp[l], ref, rtol=1e-10, atol=1e-10)
        k = ref.argmax(1)
        np.testing.assert_array_equal(ks[l], k)
        r = r - means[l][k]

    # the fitted quantizer: one scale per layer, equal weights -> the nearest mean of each layer
    log_sigma = 0.3 * rng.standard_normal(L)
    bins = np.asarray(_assign(jnp.asarray(means), jnp.asarray(log_sigma), jnp.asarray(x)))
    r, ks = x.copy(), []
    for l in range(L):
        k = ((r[:, None, :] - means[l][None]) ** 2).sum(-1).argmin(1)
        ks.append(k)
        r = r - means[l][k]
    np.testing.assert_array_equal(bins, ks[0] * C * C + ks[1] * C + ks[2])  # base-C tuple index


def test_training_and_bins(fitted):
    x, y, fq = fitted
    assert isinstance(fq, FittedDRMMQuantizer)
    assert fq.num_bins == 4**2
    assert fq.losses[-1] < fq.losses[0]  # the squared residual goes down
    b = np.asarray(fq.assign(x))
    assert b.dtype == np.int32 and b.min() >= 0 and b.max() < fq.num_bins
    # well separated clusters never share a bin (bins refine the layer-1 choice)
    for j in np.unique(b):
        assert len(np.unique(y[b == j])) == 1
    ks = np.asarray(fq.components(x))
    np.testing.assert_array_equal(b, ks[0] * 4 + ks[1])


def test_em_fixed_point(fitted):
    """Training stops at a fixed point of hard EM: every point's path is its nearest-mean chain,
    and every mean is the mean of its members' residuals (the M-step)."""
    x, _, fq = fitted
    assert len(fq.losses) < SMALL["num_epochs"]  # stopped early: an epoch without any change
    z = (x - np.asarray(fq.mean)) / fq.scale
    means = np.asarray(fq.means)
    ks = np.asarray(fq.components(x))
    r = z.astype(np.float64)
    for l in range(means.shape[0]):
        np.testing.assert_array_equal(ks[l], ((r[:, None] - means[l][None]) ** 2).sum(-1).argmin(1))
        for k in np.unique(ks[l]):
            np.testing.assert_allclose(means[l, k], r[ks[l] == k].mean(0), atol=2e-4)
        r = r - means[l][ks[l]]
    np.testing.assert_allclose(np.asarray(fq.weights).sum(1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.exp(2 * np.asarray(fq.log_sigma[-1])), (r**2).mean(), rtol=1e-3)


def test_summary_counts_bins_and_components(fitted):
    x, _, fq = fitted
    s = fq.summarize(x)
    b = np.asarray(fq.assign(x))
    t = fq.train_summary
    assert (t.num_occupied_bins, t.components_used, t.largest_bin_fraction) == (
        s.num_occupied_bins, s.components_used, s.largest_bin_fraction)
    assert s.num_points == len(x) and s.num_bins == 16
    assert s.num_occupied_bins == len(np.unique(b))
    assert s.largest_bin_fraction == pytest.approx(np.bincount(b).max() / len(x))
    ks = np.asarray(fq.components(x))
    np.testing.assert_array_equal(np.asarray(s.component_counts), [np.bincount(k, minlength=4) for k in ks])
    assert s.components_used == tuple(int((np.bincount(k, minlength=4) > 0).sum()) for k in ks)


def test_no_collapse_on_isotropic_gaussian():
    """The failure this quantizer was rebuilt for: on N(0, I_d) features a DRMM whose components
    each have their own variance, or whose means move by Adam steps, puts ~99% of the points in
    one bin. Hard EM with one scale per layer spreads them over hundreds of bins."""
    x = np.random.default_rng(3).standard_normal((2000, 256)).astype(np.float32)
    fq = DRMMQuantizer().fit(x, key=jax.random.key(0))
    s = fq.train_summary
    assert s.components_used == (10, 10, 10)
    assert s.num_occupied_bins >= 300, s
    assert s.largest_bin_fraction < 0.02, s


def test_soft_assign_rows_and_zero_temperature_limit(fitted):
    x, _, fq = fitted
    s = np.asarray(fq.soft_assign(x, 1.0))
    assert s.shape == (x.shape[0], fq.num_bins)
    np.testing.assert_allclose(s.sum(1), 1.0, atol=1e-5)
    hard = np.asarray(fq.soft_assign(x, 1e-4))
    # float32 log-probabilities: allow the odd exact near-tie between two components
    assert np.mean(hard.argmax(1) == np.asarray(fq.assign(x))) >= 0.99
    assert np.mean(hard.max(1) > 1 - 1e-4) >= 0.99
    g = jax.grad(lambda z: fq.soft_assign(z, 5.0)[:, 0].sum())(jnp.asarray(x))
    assert np.all(np.isfinite(g))


def test_deterministic_and_no_retrace(fitted):
    x, _, fq = fitted
    again = DRMMQuantizer(**SMALL).fit(x, key=jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(again.assign(x)), np.asarray(fq.assign(x)))
    fq.assign(x)
    n0 = _assign._cache_size()
    fq.assign(x + 1.0)
    assert _assign._cache_size() == n0


def test_registered_and_usable_in_compute_mauve():
    assert "drmm" in QUANTIZERS
    x, _ = _clusters()  # [Q; P] stacks 180 rows: the same shapes as the fixture (no recompile)
    out = compute_mauve(p_features=x[:90], q_features=x[:90], quantizer=DRMMQuantizer(**SMALL))
    assert out.mauve == pytest.approx(1.0)
    assert out.num_buckets == 16
    far = compute_mauve(p_features=x[:90], q_features=x[90:], quantizer=DRMMQuantizer(**SMALL))
    assert far.mauve < 0.5


def test_bad_input(fitted):
    x, _, fq = fitted
    with pytest.raises(ValueError, match="^features"):
        DRMMQuantizer(**SMALL).fit(x[0], key=jax.random.key(0))
    with pytest.raises(ValueError, match="^features"):
        DRMMQuantizer(**SMALL).fit(np.full((10, 3), np.nan), key=jax.random.key(0))
    with pytest.raises(ValueError, match="^num_components"):
        DRMMQuantizer(num_components=1).fit(x, key=jax.random.key(0))
    with pytest.raises(ValueError, match="^batch_size"):
        DRMMQuantizer(batch_size=0).fit(x, key=jax.random.key(0))
    with pytest.raises(ValueError, match="^features"):
        DRMMQuantizer(num_components=10).fit(x[:5], key=jax.random.key(0))
    with pytest.raises(ValueError, match="^features"):
        fq.assign(x[:, :3])
