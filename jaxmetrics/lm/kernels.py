"""Log-probability kernels: pure functions of logits, targets and a mask.

Every kernel here takes next-token logits ``[..., T, V]`` (already aligned with their
targets: ``logits[..., t, :]`` is the model's prediction for ``targets[..., t]``), integer
targets ``[..., T]`` and an optional boolean ``targets_mask [..., T]``, and returns per-token
values. Their sums and counts (the sufficient statistics) are the states of
:mod:`jaxmetrics.lm.state` (``perplexity_stats``, ``lm_score_stats``). They are jit-compiled, vmappable
and work on any leading batch shape. Arithmetic is done in float32 at least (float64 under
``jax.enable_x64(True)`` with float64 logits).

Decoding transforms (MAUVE paper comparison, after Martins et al. 2020): the distribution
scored is the model's distribution *after* the decoding transform used for generation —
temperature first, then top-k, then top-p (nucleus) on the renormalised top-k distribution;
filtered tokens get probability 0. With ``temperature=1, top_k=None, top_p=None`` it is the
model's own softmax.

Definitions (``p`` the transformed distribution over the vocabulary ``V``, ``y`` the target):

* token NLL: ``-ln p_y``;
* ε-perplexity: ``exp(-(1/N) Σ ln((p_y + ε) / (1 + ε|V|)))``;
* sparsemax score: ``p_y + ½(1 - ‖p‖²)`` (higher is better, 1 for a one-hot correct
  prediction);
* Jensen–Shannon divergence to the one-hot target ``δ_y`` in nats, stable closed form
  ``½[ln 2 + p_y(ln p_y - ln(1 + p_y))] + ½[ln 2 - ln(1 + p_y)]`` (range ``[0, ln 2]``).
"""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp

from jaxmetrics.results import Result

__all__ = [
    "TokenScores",
    "decoding_log_probs",
    "token_log_probs",
    "token_nll",
    "token_scores",
]

_LN2 = 0.6931471805599453


def _float(x):
    """Upcast to at least float32 (keeps float64 under x64)."""
    x = jnp.asarray(x)
    return x.astype(jnp.promote_types(x.dtype, jnp.float32))


def _mask_like(targets_mask, targets):
    if targets_mask is None:
        return jnp.ones(jnp.shape(targets), dtype=bool)
    return jnp.asarray(targets_mask).astype(bool)


@jax.jit
def token_log_probs(logits, targets) -> jax.Array:
    """Log-probability of each target under the softmax of its logits.

    ``log p(y_t) = z_{t, y_t} - logsumexp_v z_{t, v}``.

    Args:
      logits: ``[..., T, V]`` next-token logits aligned with ``targets``.
      targets: ``[..., T]`` integer token ids in ``[0, V)``.

    Returns:
      ``[..., T]`` float log-probabilities (<= 0).

    Examples:
      >>> import jax.numpy as jnp
      >>> lp = token_log_probs(jnp.zeros((1, 2, 4)), jnp.array([[0, 3]]))
      >>> bool(jnp.allclose(lp, jnp.log(0.25)))
      True
    """
    z = _float(logits)
    tgt = jnp.asarray(targets).astype(jnp.int32)
    z_y = jnp.take_along_axis(z, tgt[..., None], axis=-1)[..., 0]
    return z_y - jax.nn.logsumexp(z, axis=-1)


@jax.jit
def token_nll(logits, targets, targets_mask=None) -> jax.Array:
    """Per-token negative log-likelihood ``-ln p(y_t)``, zero where ``targets_mask`` is False.

    Args:
      logits: ``[..., T, V]`` next-token logits aligned with ``targets``.
      targets: ``[..., T]`` integer token ids.
      targets_mask: optional ``[..., T]`` boolean; positions that are False contribute 0 (also
        if their target id is a padding value outside the vocabulary range it is never read
        into the result).

    Returns:
      ``[..., T]`` float NLL in nats.

    Examples:
      >>> import jax.numpy as jnp
      >>> nll = token_nll(jnp.zeros((2, 4)), jnp.array([1, 2]), jnp.array([True, False]))
      >>> [round(float(v), 4) for v in nll]
      [1.3863, 0.0]
    """
    m = _mask_like(targets_mask, targets)
    tgt = jnp.where(m, jnp.asarray(targets), 0)
    return jnp.where(m, -token_log_probs(logits, tgt), 0.0)


def _order_key(x):
    """Floats -> unsigned ints of the same width and order (``-inf`` lowest, ``-0.0`` and
    ``0.0`` equal); NaN-free input."""
    ut = jnp.uint64 if x.dtype == jnp.float64 else jnp.uint32
    x = jnp.where(x == 0, jnp.zeros((), x.dtype), x)
    bits = jax.lax.bitcast_convert_type(x if x.dtype == jnp.float64 else x.astype(jnp.float32), ut)
    width = jnp.iinfo(ut).bits
    neg = (bits >> (width - 1)) == 1
    return jnp.where(neg, ~bits, bits | (ut(1) << (width - 1)))


@partial(jax.jit, static_argnames=("top_k",))
def decoding_log_probs(logits, *, temperature=1.0, top_k=None, top_p=None) -> jax.Array:
    """Log-probabilities of the distribution after a decoding transform.

    Order (as in generation): divide logits by ``temperature``; keep the ``top_k`` largest
    logits (ties with the k-th value kept, as in transformers' ``TopKLogitsWarper``); then
    keep the smallest set of most probable tokens whose renormalised probability mass
    reaches ``top_p`` (token ``i`` in descending order is kept iff the mass strictly before
    it is ``< top_p``; the most probable token is always kept). Removed tokens get
    ``-inf`` (probability 0); the rest are renormalised with a softmax.

    Args:
      logits: ``[..., V]`` logits.
      temperature: traced positive scalar (or array broadcastable to ``[...]``).
      top_k: static Python int in ``[1, V]`` or ``None`` (no top-k filter).
      top_p: traced scalar in ``(0, 1]`` or ``None`` (no nucleus filter; ``1.0`` keeps all).

    Returns:
      ``[..., V]`` log-probabilities, ``-inf`` at filtered tokens.

    Examples:
      >>> import jax.numpy as jnp
      >>> z = jnp.log(jnp.array([0.5, 0.3, 0.15, 0.05]))
      >>> p = jnp.exp(decoding_log_probs(z, top_p=0.7))
      >>> [round(float(v), 3) for v in p]
      [0.625, 0.375, 0.0, 0.0]
      >>> p = jnp.exp(decoding_log_probs(z, top_k=1))
      >>> [round(float(v), 3) for v in p]
      [1.0, 0.0, 0.0, 0.0]
    """
    z = _float(logits)
    t = jnp.asarray(temperature, dtype=z.dtype)
    z = z / t[..., None] if t.ndim else z / t
    neg_inf = jnp.array(-jnp.inf, dtype=z.dtype)
    if top_k is not None:
        kth = jax.lax.top_k(z, top_k)[0][..., -1:]
        z = jnp.where(z < kth, neg_inf, z)
    if top_p is not None:
        p_thr = jnp.asarray(top_p, dtype=z.dtype)
        if p_thr.ndim:
            p_thr = p_thr[..., None]
        # Token i (descending order) is kept iff the mass strictly before it is < top_p, so a
        # logit value v is kept iff mass(z > v) < top_p, and the kept set is {z >= u*} for the
        # smallest u* with mass(z > u*) < top_p. u* is found by bisection over the float32
        # values in their order-preserving unsigned encoding (one halving per bit, each a masked sum),
        # instead of sorting the vocabulary: XLA:CPU's sort made nucleus sampling ~4x slower
        # than pure sampling. Ties are kept together, as before.
        probs = jax.nn.softmax(z, axis=-1)
        key = _order_key(z)
        lo = jnp.zeros(z.shape[:-1] + (1,), key.dtype)
        hi = jnp.max(key, axis=-1, keepdims=True)  # mass(z > max) = 0 < top_p

        def halve(_, bounds):
            lo, hi = bounds
            mid = lo + (hi - lo) // 2
            ok = jnp.sum(jnp.where(key > mid, probs, 0.0), axis=-1, keepdims=True) < p_thr
            return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

        _, hi = jax.lax.fori_loop(0, jnp.iinfo(key.dtype).bits, halve, (lo, hi))
        z = jnp.where(key < hi, neg_inf, z)
    return jax.nn.log_softmax(z, axis=-1)


class TokenScores(Result):
    """Per-token scores of :func:`token_scores`, each ``[..., T]``.

    Attributes:
      log_prob: ``ln p_y`` under the transformed distribution (``-inf`` after truncation).
      eps_log_prob: ``ln((p_y + ε)/(1 + ε|V|))``.
      sparsemax: ``p_y + ½(1 - ‖p‖²)``.
      js: Jensen–Shannon divergence ``JS(p, δ_y)`` in nats.
    """

    log_prob: jax.Array
    eps_log_prob: jax.Array
    sparsemax: jax.Array
    js: jax.Array


@partial(jax.jit, static_argnames=("top_k",))
def token_scores(logits, targets, *, epsilon=0.0, temperature=1.0, top_k=None, top_p=None) -> TokenScores:
    """Per-token LM scores under a decoding transform (see module docstring).

    Args:
      logits: ``[..., T, V]`` next-token logits aligned with ``targets``.
      targets: ``[..., T]`` integer token ids.
      epsilon: traced ε >= 0 of the ε-perplexity.
      temperature, top_k, top_p: the decoding transform (:func:`decoding_log_probs`).

    Returns:
      :class:`TokenScores` of ``[..., T]`` arrays.

    Examples:
      >>> import jax.numpy as jnp
      >>> s = token_scores(jnp.array([[0.0, 0.0]]), jnp.array([0]))
      >>> round(float(s.sparsemax[0]), 4), round(float(s.js[0]), 4)
      (0.75, 0.2158)
    """
    logp = decoding_log_probs(logits, temperature=temperature, top_k=top_k, top_p=top_p)
    vocab = logp.shape[-1]
    tgt = jnp.asarray(targets).astype(jnp.int32)
    lp_y = jnp.take_along_axis(logp, tgt[..., None], axis=-1)[..., 0]
    p = jnp.exp(logp)
    p_y = jnp.exp(lp_y)
    eps = jnp.asarray(epsilon, dtype=p.dtype)
    eps_lp = jnp.log(p_y + eps) - jnp.log1p(eps * vocab)
    sp = p_y + 0.5 * (1.0 - jnp.sum(p * p, axis=-1))
    # JS(p, δ_y) = ½KL(p‖m) + ½KL(δ_y‖m), m = (p + δ_y)/2, in closed form; xlogy guards p_y = 0.
    log1p_py = jnp.log1p(p_y)
    js = 0.5 * (_LN2 + jax.scipy.special.xlogy(p_y, p_y) - p_y * log1p_py) + 0.5 * (_LN2 - log1p_py)
    js = jnp.clip(js, 0.0, _LN2)
    return TokenScores(lp_y, eps_lp, sp, js)
