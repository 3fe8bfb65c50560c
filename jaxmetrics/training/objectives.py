"""Training objectives of :func:`~jaxmetrics.training.finetune`: pure JAX functions of logits and token
ids, jit-able and differentiable, one scalar loss each.

* :func:`mle`: the masked mean token negative log-likelihood (maximum likelihood).
* :func:`token_ot`: EMO-style token-level optimal transport (Ren et al., ICLR 2024): the expected
  transport cost between the model's next-token distribution and the one-hot target, with the cost
  ``C(v, y) = 1 - cos(e_v, e_y)`` from the model's own output embeddings, mixed with MLE.
* :func:`policy_gradient`: REINFORCE with per-sample rewards over sampled continuations, plus an
  exact per-position ``KL(p_theta || p_start)`` penalty towards the frozen starting model
  (:func:`token_kl`); :func:`advantages` turns rewards into advantages (leave-one-out baseline).

Shapes: ``B`` rows, ``T`` positions, ``V`` vocabulary, ``D`` embedding width. ``logits[b, t]`` are
the model's next-token logits that predict ``targets[b, t]`` (already shifted by the caller).
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxmetrics._ops import PRECISION, l2_normalize
from jaxmetrics.lm.kernels import token_log_probs, token_nll

__all__ = ["BASELINES", "DEFAULT_MLE_WEIGHT", "advantages", "mle", "policy_gradient", "token_kl", "token_ot"]

#: the baselines of :func:`advantages`
BASELINES = ("leave_one_out", "mean", "none")
#: the weight of MLE in :func:`token_ot`'s mixture ``w * MLE + (1 - w) * OT`` (the two terms have
#: comparable scales at the start of fine-tuning: a few nats against a cost in ``[0, 2]``)
DEFAULT_MLE_WEIGHT = 0.5


def _masked_mean(values: jax.Array, mask: Any) -> jax.Array:
    m = jnp.asarray(mask).astype(jnp.float32)
    return jnp.sum(values * m) / jnp.maximum(jnp.sum(m), 1.0)


def mle(logits: jax.Array, targets: jax.Array, targets_mask: jax.Array) -> jax.Array:
    """Masked mean token negative log-likelihood.

    ``L = sum_{b,t} m_bt * (-log p_theta(y_bt | y_b<t)) / sum_{b,t} m_bt`` (0 when no position is real).

    Args:
      logits: ``[B, T, V]`` next-token logits.
      targets: ``[B, T]`` int token ids predicted by ``logits``.
      targets_mask: ``[B, T]`` bool, true on the positions that count.

    Returns:
      scalar float32 loss (nats per token).

    Examples:
      >>> import jax.numpy as jnp
      >>> round(float(mle(jnp.zeros((1, 2, 4)), jnp.array([[1, 2]]), jnp.array([[True, False]]))), 4)
      1.3863
    """
    nll = token_nll(logits.astype(jnp.float32), targets, targets_mask)
    return _masked_mean(nll, targets_mask)


def token_ot(logits: jax.Array, targets: jax.Array, targets_mask: jax.Array, embeddings: jax.Array, *,
             mle_weight: float = DEFAULT_MLE_WEIGHT) -> jax.Array:
    """EMO-style token-level optimal transport loss, mixed with MLE.

    The transport cost between tokens ``v`` and ``y`` is ``C(v, y) = 1 - cos(e_v, e_y)`` with ``e``
    the model's output embeddings (the rows of its LM head), held fixed (``stop_gradient``). Moving
    the model's next-token distribution ``p_theta(. | prefix)`` onto the one-hot target ``y_t`` costs

        ``OT_t = sum_v p_theta(v | prefix) C(v, y_t) = 1 - (sum_v p_theta(v) ê_v) · ê_{y_t}``

    (``ê`` the unit-normalised embeddings: one ``[V, D]`` product per position, no ``[V, V]`` cost
    matrix). The loss is ``w * MLE + (1 - w) * masked_mean_t(OT_t)``.

    Args:
      logits: ``[B, T, V]`` next-token logits.
      targets: ``[B, T]`` int token ids.
      targets_mask: ``[B, T]`` bool.
      embeddings: ``[V, D]`` output embeddings (GPT-2: the tied ``wte``).
      mle_weight: ``w`` in ``[0, 1]`` (default :data:`DEFAULT_MLE_WEIGHT`; 0: the transport term alone).

    Returns:
      scalar float32 loss.

    Examples:
      >>> import jax.numpy as jnp
      >>> e = jnp.array([[1.0, 0.0], [0.0, 1.0]])            # orthogonal: C = 1 off the diagonal
      >>> logits = jnp.zeros((1, 1, 2))                       # p = (1/2, 1/2)
      >>> round(float(token_ot(logits, jnp.array([[0]]), jnp.array([[True]]), e, mle_weight=0.0)), 4)
      0.5
    """
    z = logits.astype(jnp.float32)
    e = jax.lax.stop_gradient(l2_normalize(jnp.asarray(embeddings, jnp.float32)))
    p = jax.nn.softmax(z, axis=-1)
    expected = jnp.einsum("btv,vd->btd", p, e, precision=PRECISION)
    tgt = jnp.where(jnp.asarray(targets_mask), targets, 0)
    cost = 1.0 - jnp.sum(expected * e[tgt], axis=-1)
    ot = _masked_mean(cost, targets_mask)
    if mle_weight == 0:
        return ot
    return mle_weight * mle(z, targets, targets_mask) + (1.0 - mle_weight) * ot


def advantages(rewards: jax.Array, *, baseline: str = "leave_one_out") -> jax.Array:
    """Advantages ``A_i = r_i - b_i`` of a batch of ``n`` rewards.

    ``baseline``: ``'leave_one_out'`` (``b_i = (sum_j r_j - r_i) / (n - 1)``, the mean of the *other*
    rewards: unbiased, as it does not depend on sample ``i``), ``'mean'`` (``b_i = mean_j r_j``) or
    ``'none'`` (``b_i = 0``).

    Args:
      rewards: ``[n]`` float rewards (``n >= 2`` for the leave-one-out baseline).

    Returns:
      ``[n]`` float32 advantages.

    Examples:
      >>> import jax.numpy as jnp
      >>> advantages(jnp.array([1.0, 2.0, 3.0])).tolist()
      [-1.5, 0.0, 1.5]
    """
    r = jnp.asarray(rewards, jnp.float32)
    if r.ndim != 1:
        raise ValueError(f"rewards: expected a [n] array, got shape {r.shape}")
    if baseline not in BASELINES:
        raise ValueError(f"baseline: expected one of {', '.join(map(repr, BASELINES))}, got {baseline!r}")
    n = r.shape[0]
    if baseline == "leave_one_out":
        if n < 2:
            raise ValueError("rewards: the leave-one-out baseline needs at least 2 samples")
        return r - (jnp.sum(r) - r) / (n - 1)
    if baseline == "mean":
        return r - jnp.mean(r)
    return r


def token_kl(logits: jax.Array, ref_logits: jax.Array, logits_mask: jax.Array) -> jax.Array:
    """Mean exact ``KL(p_theta || p_start)`` over the vocabulary at the real positions.

    ``KL_t = sum_v p_theta(v | x_<t) (log p_theta(v | x_<t) - log p_start(v | x_<t))``; the result is
    ``sum_{b,t} m_bt KL_bt / sum m``. ``ref_logits`` (the frozen starting model's) get no gradient.

    Args:
      logits: ``[B, T, V]`` the trained model's logits.
      ref_logits: ``[B, T, V]`` the starting model's logits at the same positions.
      logits_mask: ``[B, T]`` bool.

    Returns:
      scalar float32 (>= 0, 0 when the two models agree).
    """
    lp = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    lq = jax.nn.log_softmax(jax.lax.stop_gradient(ref_logits).astype(jnp.float32), axis=-1)
    kl = jnp.sum(jnp.exp(lp) * (lp - lq), axis=-1)
    return _masked_mean(kl, logits_mask)


def policy_gradient(logits: jax.Array, tokens: jax.Array, tokens_mask: jax.Array, advantage: jax.Array, *,
                    ref_logits: jax.Array | None = None, kl_coef: float = 0.0) -> jax.Array:
    """REINFORCE surrogate with a KL penalty towards the starting model.

    ``L = -(1/n) sum_i A_i sum_t m_it log p_theta(x_it | prompt_i, x_i<t) + beta * KL``, with the
    sum over the sampled continuation tokens only (``tokens_mask``), the advantages ``A_i`` held
    fixed (``stop_gradient``; :func:`advantages`), and ``KL`` = :func:`token_kl` at the sampled
    positions. Its gradient is the REINFORCE estimate ``-(1/n) sum_i A_i grad log p_theta(x_i)`` plus
    ``beta * grad KL``.

    Args:
      logits: ``[n, M, V]`` logits predicting each continuation token.
      tokens: ``[n, M]`` the sampled continuation tokens.
      tokens_mask: ``[n, M]`` bool, true on sampled tokens.
      advantage: ``[n]`` advantages.
      ref_logits: ``[n, M, V]`` the frozen starting model's logits (needed when ``kl_coef > 0``).
      kl_coef: ``beta >= 0``.

    Returns:
      scalar float32 loss.
    """
    m = jnp.asarray(tokens_mask)
    lp = jnp.where(m, token_log_probs(logits.astype(jnp.float32), jnp.where(m, tokens, 0)), 0.0)
    a = jax.lax.stop_gradient(jnp.asarray(advantage, jnp.float32))
    loss = -jnp.mean(a * jnp.sum(lp, axis=-1))
    if ref_logits is None:
        if kl_coef:
            raise ValueError("ref_logits: needed for kl_coef > 0")
        return loss
    return loss + kl_coef * token_kl(logits, ref_logits, m)
