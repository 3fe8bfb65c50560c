"""DRMM quantizer: definition, training, bins, soft assignment, registry, bad input."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.mauve import QUANTIZERS, compute_mauve
from jaxmetrics.mauve.drmm import (
    DRMMQuantizer,
    FittedDRMMQuantizer,
    _assign,
    drmm_layer_log_probs,
)

SMALL = dict(num_layers=2, num_components=4, num_epochs=40, batch_size=32, init_batch_size=64)


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
    bins = np.asarray(_assign(jnp.asarray(means), jnp.asarray(log_std), jnp.asarray(logits), jnp.asarray(x)))
    np.testing.assert_array_equal(bins, ks[0] * C * C + ks[1] * C + ks[2])  # base-C tuple index


def test_training_and_bins(fitted):
    x, y, fq = fitted
    assert isinstance(fq, FittedDRMMQuantizer)
    assert fq.num_bins == 4**2
    assert fq.losses[-1] < fq.losses[0]  # NLL goes down
    b = np.asarray(fq.assign(x))
    assert b.dtype == np.int32 and b.min() >= 0 and b.max() < fq.num_bins
    # well separated clusters never share a bin (bins refine the layer-1 choice)
    for j in np.unique(b):
        assert len(np.unique(y[b == j])) == 1
    ks = np.asarray(fq.components(x))
    np.testing.assert_array_equal(b, ks[0] * 4 + ks[1])


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
    with pytest.raises(ValueError, match="^learning_rate"):
        DRMMQuantizer(learning_rate=0.0).fit(x, key=jax.random.key(0))
    with pytest.raises(ValueError, match="^features"):
        fq.assign(x[:, :3])
