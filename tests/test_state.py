"""Generic mergeable states: merge == one shot, associativity, capacity errors, no retrace."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.state import FeatureBuffer, GaussianMoments


def test_feature_buffer_merge_equals_one_shot_over_random_splits(rng):
    x = rng.standard_normal((23, 3)).astype(np.float32)
    one = FeatureBuffer.empty(32, 3).update(x)
    for trial in range(3):
        cuts = np.sort(rng.choice(np.arange(1, 23), size=3, replace=False))
        parts = np.split(x, cuts)
        states = [FeatureBuffer.empty(32, 3).update(p) for p in parts]
        merged = states[0]
        for s in states[1:]:
            merged = merged.merge(s)
        np.testing.assert_array_equal(merged.values(), one.values())
        # associativity: (a+b)+(c+d) == a+(b+(c+d))
        right = states[0].merge(states[1].merge(states[2].merge(states[3])))
        np.testing.assert_array_equal(right.values(), one.values())
    assert int(one.count) == 23


def test_feature_buffer_mask_and_capacity():
    buf = FeatureBuffer.empty(4, 2).update(jnp.arange(6.0).reshape(3, 2), x_mask=jnp.array([True, False, True]))
    np.testing.assert_array_equal(buf.values(), [[0, 1], [4, 5]])
    with pytest.raises(ValueError, match="capacity"):
        buf.update(jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="^x:"):
        buf.update(jnp.ones((3, 5)))
    with pytest.raises(ValueError, match="capacity"):
        FeatureBuffer.empty(0, 2)


def test_feature_buffer_passes_through_jit_without_retrace():
    traces = []

    @jax.jit
    def total(state):
        traces.append(1)
        return jnp.sum(state.features)

    s = FeatureBuffer.empty(8, 2)
    total(s)
    s = s.update(jnp.ones((3, 2)))
    assert float(total(s)) == 6.0
    assert len(traces) == 1


def test_gaussian_moments_merge_matches_numpy(rng, x64):
    x = rng.standard_normal((50, 4)) * 3 + 10
    parts = np.split(x, [7, 30, 31])
    st = GaussianMoments.empty(4)
    for p in parts:
        st = st.update(p)
    np.testing.assert_allclose(st.mean, x.mean(0), rtol=1e-12)
    np.testing.assert_allclose(st.covariance(), np.cov(x, rowvar=False), rtol=1e-10)
    assert int(st.n) == 50
