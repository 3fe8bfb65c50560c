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
temperature first, then top-k, then top-p (nucleus) on the renormalised top-k distribution,
then locally typical filtering (``typical_p``, Meister et al. 2023); filtered tokens get
probability 0. Alternatively the distribution is α-entmax of the tempered logits
(:func:`entmax`, entmax sampling of Martins et al. 2020), sparse by itself. With
``temperature=1, top_k=None, top_p=None`` it is the model's own softmax.

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
import numpy as np

from jaxmetrics.results import Result

__all__ = [
    "TokenScores",
    "decoding_log_probs",
    "entmax",
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


# α-entmax is written here by hand: neither jax.nn nor optax (0.2.x) has it. optax has the α = 2
# case only, as a Euclidean projection (``optax.projections.projection_simplex``, sort-based);
# it is not used because α is a traced value here and one bisection serves every α > 1.
_ENTMAX_ITERS = 50


def _entmax_log(z, alpha, num_iters):
    """``log entmax_α(z)`` along the last axis of float ``z``; ``alpha`` broadcasts to ``z[..., :1]``."""
    soft = alpha == 1
    am1 = jnp.where(soft, 1.0, alpha - 1)  # the bisection runs on α = 2 where α == 1 (discarded)
    inv = 1.0 / am1
    zs = am1 * (z - jnp.max(z, axis=-1, keepdims=True))  # max 0; -inf logits stay -inf
    # p_i = [zs_i - τ]_+^{1/(α-1)}. τ = -1 gives p_max = 1 (Σp >= 1); τ = -V^{1-α} gives every
    # p_i <= 1/V (Σp <= 1), so τ* lies in [-1, -V^{1-α}]. Σp is decreasing in τ: bisect.
    lo = jnp.full(zs.shape[:-1] + (1,), -1.0, zs.dtype) + 0 * am1
    hi = -jnp.exp(-am1 * jnp.log(jnp.asarray(z.shape[-1], zs.dtype))) + 0 * lo

    def mass(tau):
        return jnp.sum(jnp.power(jnp.maximum(zs - tau, 0.0), inv), axis=-1, keepdims=True)

    def halve(_, bounds):
        lo, hi = bounds
        mid = 0.5 * (lo + hi)
        big = mass(mid) >= 1.0
        return jnp.where(big, mid, lo), jnp.where(big, hi, mid)

    lo, hi = jax.lax.fori_loop(0, num_iters, halve, (lo, hi))
    # τ* ∈ [lo, hi]: the support is {zs > hi} (a token exactly at the threshold gets 0, not a
    # rounding residue), its values [zs - lo]^{1/(α-1)} renormalised.
    logp = jnp.where(zs > hi, jnp.log(jnp.maximum(zs - lo, jnp.finfo(zs.dtype).tiny)) * inv, -jnp.inf)
    logp = logp - jax.nn.logsumexp(logp, axis=-1, keepdims=True)
    return jnp.where(soft, jax.nn.log_softmax(z, axis=-1), logp)


@partial(jax.jit, static_argnames=("axis", "num_iters"))
def _entmax(logits, alpha, axis, num_iters):
    z = jnp.moveaxis(_float(logits), axis, -1)
    a = jnp.asarray(alpha, z.dtype)
    if a.ndim:
        a = a[..., None]
    return jnp.moveaxis(jnp.exp(_entmax_log(z, a, num_iters)), -1, axis)


def entmax(logits, alpha, axis: int = -1, *, num_iters: int = _ENTMAX_ITERS) -> jax.Array:
    """α-entmax (Peters, Niculae & Martins 2019): a sparse generalisation of softmax.

    ``entmax_α(z)_i = [(α - 1) z_i - τ]_+^{1/(α-1)}`` with the scalar ``τ`` such that the
    result sums to 1 (``[x]_+ = max(x, 0)``). ``α = 1`` is softmax (computed as softmax, exactly),
    ``α = 2`` is sparsemax (the Euclidean projection of ``z`` onto the simplex), ``α = 1.5`` the
    paper's default; for ``α > 1`` tokens whose logit is far enough below the maximum get
    probability exactly 0. ``τ`` is found by ``num_iters`` bisection halvings of its bracket
    ``[max - 1, max - V^{1-α}]`` (in the scaled logits ``(α - 1) z``) and the result is
    renormalised; a token exactly at the threshold gets 0. Invariant to adding a constant to
    ``z``. Hand-written: neither ``jax.nn`` nor optax provides entmax (optax has only the
    α = 2 simplex projection).

    ``alpha`` is *traced* (changing it does not recompile): both the softmax and the bisection
    are evaluated and ``jnp.where(alpha == 1, ...)`` selects. Values of ``α`` just above 1 lose
    precision in float32 (the exponent ``1/(α-1)`` is large); use ``α = 1`` for softmax.

    Args:
      logits: ``[..., V, ...]`` real logits (at least one finite value per slice; ``-inf``
        entries get probability 0).
      alpha: ``α >= 1``, a scalar or an array broadcastable to ``logits`` without ``axis``
        (one α per slice); concrete values are checked.
      axis: the vocabulary axis (static).
      num_iters: number of bisection halvings (static; 50 reaches float32 resolution).

    Returns:
      Probabilities of the shape of ``logits``, summing to 1 along ``axis``.

    Examples:
      >>> import jax.numpy as jnp
      >>> z = jnp.array([1.0, 0.5, -1.0])
      >>> [round(float(v), 4) for v in entmax(z, 2.0)]  # sparsemax
      [0.75, 0.25, 0.0]
      >>> [round(float(v), 4) for v in entmax(z, 1.5)]
      [0.674, 0.326, 0.0]
      >>> bool(jnp.allclose(entmax(z, 1.0), jnp.exp(z) / jnp.exp(z).sum()))
      True
    """
    _check_alpha(alpha, "alpha")
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"axis: expected an int, got {type(axis).__name__}")
    return _entmax(logits, alpha, axis, int(num_iters))


def _check_alpha(alpha, name):
    if alpha is None:
        raise ValueError(f"{name}: expected a number >= 1, got None")
    if not isinstance(alpha, jax.core.Tracer):
        a = np.asarray(alpha)
        if not np.issubdtype(a.dtype, np.number) or a.dtype == bool:
            raise TypeError(f"{name}: expected a real number >= 1, got {a.dtype}")
        if not np.all(np.isfinite(a)) or np.any(a < 1):
            raise ValueError(f"{name}: must be finite and >= 1 (1 = softmax, 2 = sparsemax), got {alpha!r}")


def _mass_threshold(key, probs, thr, *, above):
    """Bisection over the order keys of a score: the smallest key value ``u`` such that
    ``mass(key > u) < thr`` (``above=True``) or ``mass(key <= u) >= thr`` (``above=False``),
    taking ``u = max(key)`` when no smaller value qualifies. One halving per bit, each a masked
    sum over the vocabulary (no sort)."""
    lo = jnp.zeros(key.shape[:-1] + (1,), key.dtype)
    hi = jnp.max(key, axis=-1, keepdims=True)

    def halve(_, bounds):
        lo, hi = bounds
        mid = lo + (hi - lo) // 2
        if above:
            ok = jnp.sum(jnp.where(key > mid, probs, 0.0), axis=-1, keepdims=True) < thr
        else:
            ok = jnp.sum(jnp.where(key <= mid, probs, 0.0), axis=-1, keepdims=True) >= thr
        return jnp.where(ok, lo, mid), jnp.where(ok, mid, hi)

    _, hi = jax.lax.fori_loop(0, jnp.iinfo(key.dtype).bits, halve, (lo, hi))
    return hi


@partial(jax.jit, static_argnames=("top_k",))
def decoding_log_probs(logits, *, temperature=1.0, top_k=None, top_p=None, typical_p=None,
                       entmax_alpha=None) -> jax.Array:
    """Log-probabilities of the distribution after a decoding transform.

    Order (as in generation, and as transformers applies its warpers): divide logits by
    ``temperature``; keep the ``top_k`` largest logits (ties with the k-th value kept, as in
    transformers' ``TopKLogitsWarper``); then keep the smallest set of most probable tokens
    whose renormalised probability mass reaches ``top_p`` (token ``i`` in descending order is
    kept iff the mass strictly before it is ``< top_p``; the most probable token is always
    kept); then locally typical filtering (Meister et al. 2023, as transformers'
    ``TypicalLogitsWarper``): with ``p`` the renormalised distribution so far and
    ``H = -Σ p_i ln p_i`` its entropy, tokens are ranked by ``|-ln p_i - H|`` ascending and kept
    up to and including the first rank at which the cumulative probability reaches
    ``typical_p`` (``>=``); tokens tied in that score are kept or removed together, the first
    ranked token is always kept, and ``typical_p = 1`` keeps everything. Removed tokens get
    ``-inf`` (probability 0); the rest are renormalised with a softmax.

    Entmax sampling (Martins et al. 2020): with ``entmax_alpha = α`` the distribution is
    :func:`entmax` ``(z / temperature, α)`` instead of the softmax (``-inf`` off its support).
    Entmax is its own truncation, so it cannot be combined with ``top_k`` / ``top_p`` /
    ``typical_p`` (``ValueError``).

    Args:
      logits: ``[..., V]`` logits.
      temperature: traced positive scalar (or array broadcastable to ``[...]``).
      top_k: static Python int in ``[1, V]`` or ``None`` (no top-k filter).
      top_p: traced scalar in ``(0, 1]`` or ``None`` (no nucleus filter; ``1.0`` keeps all).
      typical_p: traced scalar in ``(0, 1]`` or ``None`` (no typical filter; ``1.0`` keeps all).
      entmax_alpha: traced ``α >= 1`` or ``None`` (softmax); ``1.0`` is the softmax.

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
      >>> p = jnp.exp(decoding_log_probs(z, typical_p=0.5))  # H = 1.14: token 1 (-ln 0.3 = 1.20) first
      >>> [round(float(v), 3) for v in p]
      [0.625, 0.375, 0.0, 0.0]
      >>> p = jnp.exp(decoding_log_probs(z, entmax_alpha=2.0))  # sparsemax of the log-probs
      >>> [round(float(v), 3) for v in p]
      [0.755, 0.245, 0.0, 0.0]
    """
    z = _float(logits)
    t = jnp.asarray(temperature, dtype=z.dtype)
    z = z / t[..., None] if t.ndim else z / t
    neg_inf = jnp.array(-jnp.inf, dtype=z.dtype)
    if entmax_alpha is not None:
        if top_k is not None or top_p is not None or typical_p is not None:
            raise ValueError("entmax_alpha: entmax sampling is its own truncation and cannot be combined with "
                             "top_k, top_p or typical_p (leave them None)")
        a = jnp.asarray(entmax_alpha, dtype=z.dtype)
        return _entmax_log(z, a[..., None] if a.ndim else a, _ENTMAX_ITERS)
    if top_k is not None:
        # the k-th largest value v_k is the smallest u with count(z > u) < k; found by the same
        # bisection as top-p (counts instead of masses). XLA:CPU's lax.top_k took ~94 ms on
        # [128, 4096] logits, 20x this, and dominated top-k sampling.
        order = _order_key(z)
        kth = _mass_threshold(order, jnp.ones_like(z), jnp.asarray(top_k, z.dtype), above=True)
        z = jnp.where(order < kth, neg_inf, z)
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
        key = _order_key(z)
        z = jnp.where(key < _mass_threshold(key, jax.nn.softmax(z, axis=-1), p_thr, above=True), neg_inf, z)
    if typical_p is not None:
        y_thr = jnp.asarray(typical_p, dtype=z.dtype)
        if y_thr.ndim:
            y_thr = y_thr[..., None]
        # transformers sorts by the score s_i = |-ln p_i - H| ascending and keeps ranks up to
        # the first whose cumulative probability is >= typical_p, plus every token tied with
        # it: the kept set is {s <= s*} for the smallest s* with mass(s <= s*) >= typical_p
        # (tokens already filtered have s = inf and no mass). Same bisection as top_p.
        logp = jax.nn.log_softmax(z, axis=-1)
        probs = jnp.exp(logp)
        ent = -jnp.sum(jnp.where(probs > 0, probs * logp, 0.0), axis=-1, keepdims=True)
        key = _order_key(jnp.abs(-logp - ent))
        drop = key > _mass_threshold(key, probs, y_thr, above=False)
        z = jnp.where(drop & (y_thr < 1), neg_inf, z)
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
