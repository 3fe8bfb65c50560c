"""Subsampling intervals (``jaxmetrics.confidence.subsample_interval``).

* definition: for a mean, the rescaled spread of subsample means is the mean's standard error
  ``s / sqrt(n)`` at every fraction (finite-population correction), and the bounds are the
  rescaled quantiles of the centred subsample values, checked against numpy on the same draws;
* subsets are drawn without replacement (no item twice), independently per sample;
* reproducible for a key, jit == eager, chunking does not change the result;
* bad input raises ValueError naming the argument.
(Coverage on real data: tests/test_diversity_intervals.py, tests/test_mark_evaluate_interval.py.)
"""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.confidence import Interval, subsample_interval


def _data(n=200, seed=0):
    return jnp.asarray(np.random.default_rng(seed).lognormal(size=n), jnp.float32)


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.75, 0.9])
def test_mean_standard_error_is_s_over_sqrt_n_at_every_fraction(fraction):
    x = _data()
    ci = subsample_interval(jnp.mean, x, key=jax.random.key(0), num_resamples=20_000, fraction=fraction)
    want = float(jnp.std(x, ddof=1)) / np.sqrt(x.shape[0])
    assert float(ci.standard_error) == pytest.approx(want, rel=0.03)
    assert float(ci.value) == pytest.approx(float(jnp.mean(x)), rel=1e-6)
    assert abs(float(ci.bias)) < 0.1 * want          # a mean does not move with the set size
    assert float(ci.low) < float(ci.value) < float(ci.high)


def test_bounds_are_the_rescaled_quantiles_of_the_centred_subsample_values():
    x = _data(40)
    key = jax.random.key(3)
    B, m = 500, 30                                    # fraction 0.75 of 40
    ci = subsample_interval(jnp.mean, x, key=key, num_resamples=B, fraction=0.75, confidence=0.9)
    # the same subsets, drawn as the docstring says
    ks = jax.random.split(jax.random.split(key, 1)[0], B)
    idx = np.stack([np.sort(np.asarray(jax.random.permutation(k, 40))[:m]) for k in ks])
    vals = np.asarray(x)[idx].mean(axis=1)
    assert all(len(set(r)) == m for r in idx)        # without replacement
    c = np.sqrt(0.75 / 0.25)
    d = vals - vals.mean()
    assert float(ci.low) == pytest.approx(float(x.mean()) + c * np.quantile(d, 0.05), rel=1e-5)
    assert float(ci.high) == pytest.approx(float(x.mean()) + c * np.quantile(d, 0.95), rel=1e-5)
    assert float(ci.standard_error) == pytest.approx(c * vals.std(ddof=1), rel=1e-5)
    assert ci.method == "subsample" and ci.num_resamples == B and ci.confidence == 0.9


def test_subsets_never_repeat_an_item_and_samples_are_drawn_independently():
    n = 30
    ids = jnp.arange(n, dtype=jnp.float32)
    # the number of distinct items of a subset is its size: the statistic sees no repeat
    distinct = lambda v: jnp.sum(jnp.diff(jnp.sort(v)) > 0) + 1.0
    ci = subsample_interval(distinct, ids, key=jax.random.key(0), num_resamples=300, fraction=0.5)
    assert float(ci.standard_error) == 0.0 and float(ci.bias) == 15.0 - 30.0
    # two samples: the difference of their means varies (independent subsets), and pytrees pair up
    a, b = jnp.arange(40.0), jnp.arange(60.0)
    d = subsample_interval(lambda u, v: v["x"].mean() - u.mean(), a, {"x": b}, key=jax.random.key(1),
                           num_resamples=400)
    assert float(d.value) == pytest.approx(10.0) and float(d.standard_error) > 0
    paired = subsample_interval(lambda t: jnp.mean(t["y"] - 2 * t["x"]), {"x": a, "y": 2 * a},
                                key=jax.random.key(1), num_resamples=100)
    assert float(paired.standard_error) == 0.0       # leaves of one sample are subsampled together


def test_reproducible_jittable_and_chunking_does_not_matter():
    x = _data(60)
    a = subsample_interval(jnp.mean, x, key=jax.random.key(5), num_resamples=300)
    b = jax.jit(lambda v, k: subsample_interval(jnp.mean, v, key=k, num_resamples=300))(x, jax.random.key(5))
    c = subsample_interval(jnp.mean, x, key=jax.random.key(5), num_resamples=300, batch_size=7)
    other = subsample_interval(jnp.mean, x, key=jax.random.key(6), num_resamples=300)
    np.testing.assert_allclose([a.low, a.high], [b.low, b.high], rtol=1e-5)
    np.testing.assert_allclose([a.low, a.high], [c.low, c.high], rtol=1e-5)
    assert float(a.low) != float(other.low)
    many = jax.vmap(lambda v, k: subsample_interval(jnp.mean, v, key=k, num_resamples=100))(
        jnp.stack([x, 2 * x]), jax.random.split(jax.random.key(0), 2))
    assert isinstance(many, Interval) and many.low.shape == (2,)


@pytest.mark.parametrize("kwargs,args,match", [
    ({}, (), "samples: give at least one"),
    ({}, (jnp.ones(1),), "samples[0]: needs at least 2 items"),
    ({"fraction": 0.1}, (jnp.ones(4),), "fraction: 0.1 of the 4 items of samples[0]"),
    ({"fraction": 0.9}, (jnp.ones(4), jnp.ones(3)), "fraction: 0.9 of the 4 items of samples[0]"),
    ({"fraction": 1.0}, (jnp.ones(4),), "fraction"),
    ({"num_resamples": 1}, (jnp.ones(4),), "num_resamples"),
    ({"confidence": 0.0}, (jnp.ones(4),), "confidence"),
])
def test_bad_input_names_the_argument(kwargs, args, match):
    stat = jnp.mean if len(args) < 2 else (lambda a, b: a.mean() - b.mean())
    with pytest.raises(ValueError, match=re.escape(match)):
        subsample_interval(stat, *args, key=jax.random.key(0), **kwargs)


def test_non_finite_statistic_and_missing_key_are_refused():
    with pytest.raises(ValueError, match="statistic: not finite"):
        subsample_interval(jnp.mean, jnp.asarray([1.0, jnp.nan, 2.0]), key=jax.random.key(0))
    with pytest.raises(TypeError, match="statistic: expected a function"):
        subsample_interval(None, jnp.ones(3), key=jax.random.key(0))
    with pytest.raises(TypeError):
        subsample_interval(jnp.mean, jnp.ones(3))
