"""The training objectives against their definitions on tiny hand-built cases."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.training import advantages, mle, policy_gradient, token_kl, token_ot


def _log_softmax(z):
    z = np.asarray(z, np.float64)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_mle_is_the_masked_mean_nll():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 5)).astype(np.float32)
    targets = np.array([[1, 4, 0], [2, 2, 3]])
    mask = np.array([[True, True, False], [True, False, False]])
    lp = _log_softmax(logits)
    want = -np.mean([lp[b, t, targets[b, t]] for b in range(2) for t in range(3) if mask[b, t]])
    assert float(mle(jnp.asarray(logits), targets, mask)) == pytest.approx(want, rel=1e-5)


def test_token_ot_is_the_expected_cosine_cost_mixed_with_mle():
    """``sum_v p(v) (1 - cos(e_v, e_y))`` with the cost matrix written out, then the MLE mixture."""
    e = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 2.0]], np.float32)
    logits = np.array([[[0.5, -1.0, 2.0], [0.0, 0.3, -0.2]]], np.float32)
    targets = np.array([[0, 2]])
    mask = np.array([[True, True]])
    unit = e / np.linalg.norm(e, axis=1, keepdims=True)
    cost = 1.0 - unit @ unit.T                                    # C[v, y]
    p = np.exp(_log_softmax(logits))
    ot = np.mean([sum(p[0, t, v] * cost[v, targets[0, t]] for v in range(3)) for t in range(2)])
    got = float(token_ot(jnp.asarray(logits), targets, mask, jnp.asarray(e), mle_weight=0.0))
    assert got == pytest.approx(ot, rel=1e-5)
    nll = float(mle(jnp.asarray(logits), targets, mask))
    mixed = float(token_ot(jnp.asarray(logits), targets, mask, jnp.asarray(e), mle_weight=0.3))
    assert mixed == pytest.approx(0.3 * nll + 0.7 * ot, rel=1e-5)
    # the cost is held fixed: no gradient reaches the embeddings
    g = jax.grad(lambda emb: token_ot(jnp.asarray(logits), targets, mask, emb, mle_weight=0.0))(jnp.asarray(e))
    assert float(jnp.abs(g).max()) == 0.0


def test_policy_gradient_gradient_is_reinforce():
    """d/dz of the surrogate = -(1/n) A_i (onehot(x_it) - softmax(z_it)) on sampled positions."""
    rng = np.random.default_rng(1)
    n, m, v = 3, 4, 5
    z = rng.normal(size=(n, m, v)).astype(np.float32)
    tokens = rng.integers(0, v, size=(n, m))
    mask = np.ones((n, m), bool)
    mask[2, 3] = False                                     # a position after the row stopped
    rewards = np.array([0.2, -0.5, 1.0], np.float32)
    adv = np.asarray(advantages(rewards))
    assert adv == pytest.approx(rewards - (rewards.sum() - rewards) / (n - 1))
    grad = np.asarray(jax.grad(lambda q: policy_gradient(q, tokens, mask, adv))(jnp.asarray(z)))
    p = np.exp(_log_softmax(z))
    want = -(adv[:, None, None] / n) * (np.eye(v)[tokens] - p) * mask[..., None]
    np.testing.assert_allclose(grad, want, atol=1e-6)


def test_kl_penalty_is_exact_and_weighted():
    rng = np.random.default_rng(2)
    z, r = rng.normal(size=(2, 3, 4)).astype(np.float32), rng.normal(size=(2, 3, 4)).astype(np.float32)
    mask = np.array([[True, True, False], [True, False, False]])
    lp, lq = _log_softmax(z), _log_softmax(r)
    kl = (np.exp(lp) * (lp - lq)).sum(-1)
    assert float(token_kl(jnp.asarray(z), jnp.asarray(r), mask)) == pytest.approx(kl[mask].mean(), rel=1e-5)
    assert float(token_kl(jnp.asarray(z), jnp.asarray(z), mask)) == 0.0
    tokens = np.zeros((2, 3), int)
    adv = np.zeros(2, np.float32)
    loss = policy_gradient(jnp.asarray(z), tokens, mask, adv, ref_logits=jnp.asarray(r), kl_coef=0.5)
    assert float(loss) == pytest.approx(0.5 * kl[mask].mean(), rel=1e-5)


def test_advantages_refuse_bad_input():
    with pytest.raises(ValueError, match="^baseline:"):
        advantages(jnp.ones(3), baseline="median")
    with pytest.raises(ValueError, match="^rewards:"):
        advantages(jnp.ones(1))
    assert advantages(jnp.array([1.0, 3.0]), baseline="mean").tolist() == [-1.0, 1.0]
