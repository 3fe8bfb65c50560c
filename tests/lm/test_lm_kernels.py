"""Log-prob kernels: parity with torch / transformers logits warpers, definitions, jit."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch

from jaxmetrics.lm import kernels as K
from jaxmetrics.lm import state as S

V = 11


def _data(rng, b=3, t=5, v=V):
    logits = rng.normal(size=(b, t, v)) * 2.0
    targets = rng.integers(0, v, size=(b, t))
    mask = rng.random((b, t)) > 0.3
    mask[0, 0] = True
    return logits, targets, mask


def _hf_transform(logits, temperature, top_k, top_p):
    from transformers.generation.logits_process import (
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    z = torch.tensor(logits.reshape(-1, logits.shape[-1]), dtype=torch.float64)
    z = TemperatureLogitsWarper(temperature)(None, z)
    if top_k is not None:
        z = TopKLogitsWarper(top_k)(None, z)
    if top_p is not None:
        z = TopPLogitsWarper(top_p)(None, z)
    return torch.log_softmax(z, -1).numpy().reshape(logits.shape)


def test_token_nll_matches_torch_cross_entropy(rng, x64):
    logits, targets, mask = _data(rng)
    ours = np.asarray(K.token_nll(jnp.asarray(logits), jnp.asarray(targets), jnp.asarray(mask)))
    ce = torch.nn.functional.cross_entropy(
        torch.tensor(logits).permute(0, 2, 1), torch.tensor(targets), reduction="none"
    ).numpy()
    np.testing.assert_allclose(ours, np.where(mask, ce, 0.0), rtol=1e-12, atol=1e-12)
    st = S.perplexity_stats(jnp.asarray(logits), jnp.asarray(targets), jnp.asarray(mask))
    assert int(st.count) == mask.sum()
    np.testing.assert_allclose(float(st.nll_sum), ce[mask].sum(), rtol=1e-12)
    np.testing.assert_allclose(float(st.compute()), np.exp(ce[mask].mean()), rtol=1e-12)


@pytest.mark.parametrize(
    "temperature,top_k,top_p",
    [(1.0, None, None), (0.7, None, None), (1.0, 3, None), (0.9, None, 0.8), (1.3, 5, 0.9), (1.0, 1, None)],
)
def test_decoding_transform_matches_transformers_warpers(rng, x64, temperature, top_k, top_p):
    logits = rng.normal(size=(4, V)) * 2.0
    ours = np.asarray(K.decoding_log_probs(jnp.asarray(logits), temperature=temperature, top_k=top_k, top_p=top_p))
    ref = _hf_transform(logits, temperature, top_k, top_p)
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(ref))
    fin = np.isfinite(ref)
    np.testing.assert_allclose(ours[fin], ref[fin], rtol=1e-10, atol=1e-12)


def _definition_scores(logp, targets, mask, eps):
    """Direct definitions in numpy: JS via the two KL terms (not the closed form)."""
    p = np.exp(logp)
    v = p.shape[-1]
    eps_l, sp, js, n = 0.0, 0.0, 0.0, 0
    for idx in zip(*np.nonzero(mask)):
        pr = p[idx]
        y = targets[idx]
        d = np.zeros(v)
        d[y] = 1.0
        m = 0.5 * (pr + d)
        kl_pm = sum(pr[i] * np.log(pr[i] / m[i]) for i in range(v) if pr[i] > 0)
        kl_dm = np.log(1.0 / m[y])
        js += 0.5 * kl_pm + 0.5 * kl_dm
        sp += pr[y] + 0.5 * (1 - np.sum(pr**2))
        eps_l += np.log((pr[y] + eps) / (1 + eps * v))
        n += 1
    return np.exp(-eps_l / n), sp / n, js / n


@pytest.mark.parametrize("top_k,top_p,eps", [(None, None, 0.0), (3, None, 1e-3), (None, 0.6, 1e-2)])
def test_scores_match_definitions(rng, x64, top_k, top_p, eps):
    logits, targets, mask = _data(rng)
    out = S.lm_scores(logits, targets, mask, epsilon=eps, temperature=0.8, top_k=top_k, top_p=top_p)
    logp = _hf_transform(logits, 0.8, top_k, top_p)
    e, sp, js = _definition_scores(logp, targets, mask, eps)
    assert out.epsilon_perplexity == pytest.approx(e, rel=1e-10)
    assert out.sparsemax_score == pytest.approx(sp, rel=1e-10)
    assert out.js == pytest.approx(js, rel=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_top_p_set_equals_sorted_cumulative_mass(x64, dtype):
    # the nucleus is found by bisection on the logit values, not by a sort: the kept set must be
    # the sort-based one (mass strictly before a token < p), ties (also -0.0 vs 0.0) kept together
    rng = np.random.default_rng(3)
    for trial in range(40):
        z = rng.normal(size=(4, 50)) * rng.uniform(0.3, 4.0)
        if trial % 2 == 0:
            z = np.round(z, 1)  # many ties, and -0.0 beside 0.0
        if trial % 5 == 0:
            z[:, :10] = -np.inf  # already filtered (e.g. by top-k)
        z = z.astype(dtype)
        p = float(rng.uniform(0.05, 1.0))
        zs = -np.sort(-z.astype(np.float64), axis=-1)
        pr = np.exp(zs - zs[:, :1])
        pr /= pr.sum(-1, keepdims=True)
        keep = (np.cumsum(pr, -1) - pr) < p
        keep[:, 0] = True
        want = z >= np.where(keep, zs, np.inf).min(-1, keepdims=True)
        got = np.isfinite(np.asarray(K.decoding_log_probs(jnp.asarray(z), top_p=p)))
        np.testing.assert_array_equal(got, want, err_msg=f"trial {trial}, p = {p}")


def test_hand_computed_case():
    # p = [0.5, 0.25, 0.25], target 1: SP = 0.25 + 0.5(1 - 0.375) = 0.5625
    z = jnp.log(jnp.array([[0.5, 0.25, 0.25]]))
    s = K.token_scores(z, jnp.array([1]), epsilon=0.5)
    assert float(s.sparsemax[0]) == pytest.approx(0.5625, rel=1e-6)
    assert float(s.eps_log_prob[0]) == pytest.approx(np.log(0.75 / 2.5), rel=1e-6)
    # one-hot correct prediction: SP = 1, JS = 0; one-hot wrong: SP = 0.5... JS = ln 2
    onehot = jnp.array([[0.0, -jnp.inf, -jnp.inf]])
    s = K.token_scores(onehot, jnp.array([0]))
    assert float(s.sparsemax[0]) == pytest.approx(1.0)
    assert float(s.js[0]) == pytest.approx(0.0, abs=1e-7)
    s = K.token_scores(onehot, jnp.array([2]), epsilon=0.0)
    assert float(s.js[0]) == pytest.approx(np.log(2.0), rel=1e-6)
    assert float(s.sparsemax[0]) == pytest.approx(0.0, abs=1e-7)
    assert not np.isnan(float(s.js[0]))


def test_jit_equals_eager_and_no_retrace(rng):
    logits, targets, mask = (jnp.asarray(a) for a in _data(rng))
    jitted = S.lm_score_stats(logits, targets, mask, epsilon=1e-3, temperature=0.9, top_k=4, top_p=0.9)
    with jax.disable_jit():
        eager = S.lm_score_stats(logits, targets, mask, epsilon=1e-3, temperature=0.9, top_k=4, top_p=0.9)
    for a, b in zip(jax.tree.leaves(jitted), jax.tree.leaves(eager)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5)
    n = S._score_sums._cache_size()
    # new data values, new traced temperature / epsilon / top_p: no retrace
    S.lm_score_stats(logits + 1.0, targets, mask, epsilon=1e-2, temperature=0.7, top_k=4, top_p=0.5)
    assert S._score_sums._cache_size() == n


def test_merge_equals_one_shot_and_vmap_over_epsilon(rng):
    logits, targets, mask = (jnp.asarray(a) for a in _data(rng, b=4))
    one = S.lm_score_stats(logits, targets, mask, epsilon=1e-2)
    a = S.lm_score_stats(logits[:2], targets[:2], mask[:2], epsilon=1e-2)
    b = S.lm_score_stats(logits[2:], targets[2:], mask[2:], epsilon=1e-2)
    for x, y in zip(jax.tree.leaves(one), jax.tree.leaves(a.merge(b))):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5)
    with pytest.raises(ValueError, match="^other"):
        a.merge(S.lm_score_stats(logits[2:], targets[2:], mask[2:], epsilon=1e-3))
    eps = jnp.array([0.0, 1e-3, 1e-1])
    vm = jax.vmap(lambda e: S.lm_score_stats(logits, targets, mask, epsilon=e))(eps)
    for i, e in enumerate([0.0, 1e-3, 1e-1]):
        single = S.lm_score_stats(logits, targets, mask, epsilon=e)
        np.testing.assert_allclose(np.asarray(vm.eps_log_sum[i]), np.asarray(single.eps_log_sum), rtol=1e-5)
    # larger epsilon smooths more: eps-PPL is non-increasing... at least finite
    assert np.all(np.isfinite(np.asarray(vm.eps_log_sum)))


def test_truncation_gives_inf_not_nan():
    z = jnp.array([[3.0, 0.0, 0.0]])
    out = S.lm_scores(z, jnp.array([2]), top_k=1, epsilon=0.0)
    assert out.epsilon_perplexity == np.inf and out.perplexity == np.inf
    assert not np.isnan(out.js) and not np.isnan(out.sparsemax_score)


def test_bad_input():
    z = np.zeros((2, 3))
    t = np.array([0, 1])
    with pytest.raises(ValueError, match="^top_k"):
        S.lm_scores(z, t, top_k=4)
    with pytest.raises(ValueError, match="^top_p"):
        S.lm_scores(z, t, top_p=1.5)
    with pytest.raises(ValueError, match="^temperature"):
        S.lm_scores(z, t, temperature=0.0)
    with pytest.raises(ValueError, match="^epsilon"):
        S.lm_scores(z, t, epsilon=-1.0)
    with pytest.raises(ValueError, match="^targets"):
        S.lm_scores(z, np.array([0, 3]))
    with pytest.raises(ValueError, match="^targets"):
        S.lm_scores(z, np.array([0]))
    with pytest.raises(TypeError, match="^targets"):
        S.lm_scores(z, np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="^logits"):
        S.lm_scores(np.array([[np.nan, 0, 0], [0, 0, 0]]), t)
    with pytest.raises(ValueError, match="^state"):
        S.lm_scores(z, t, np.zeros(2, bool))
    with pytest.raises(ValueError, match="^state"):
        S.PerplexityState.empty().compute()
