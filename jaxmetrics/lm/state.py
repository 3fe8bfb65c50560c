"""States of the log-probability metrics: sums and counts that merge across batches, devices and hosts.

=========================  ====================================  ==============================
state                      holds                                 ``compute()``
=========================  ====================================  ==============================
:class:`PerplexityState`   ``Σ -ln p(y_t)``, token count         ``exp(Σ / N)``
:class:`LMScoreState`      sums of ε-log-prob, sparsemax, JS,    :class:`LMScores` (ε-PPL,
                           NLL under a decoding transform; count sparsemax score, JS, PPL)
=========================  ====================================  ==============================

The array-level statistics functions return these states: :func:`perplexity_stats` and
:func:`lm_score_stats` compute one batch's sums with the per-token kernels of
:mod:`jaxmetrics.lm.kernels`, and ``state.update(batch)`` is ``state.merge(<stats>(batch))``.
States follow the CLU protocol (``empty / update / merge / compute``, see
:mod:`jaxmetrics.state`); ``update`` runs inside ``jax.jit``, ``compute`` on the host.

Examples:
    >>> import jax.numpy as jnp
    >>> from jaxmetrics.lm.state import PerplexityState, perplexity_stats
    >>> logits, targets = jnp.zeros((2, 3, 5)), jnp.array([[0, 1, 2], [3, 4, 0]])
    >>> a = PerplexityState.empty().update(logits[:1], targets[:1])
    >>> b = perplexity_stats(logits[1:], targets[1:])
    >>> round(float(a.merge(b).compute()), 4), int(a.merge(b).count)
    (5.0, 6)
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmetrics._ops import accumulator_dtype, index_dtype, is_concrete
from jaxmetrics._validation import check_int, check_positive, check_probability
from jaxmetrics.lm.kernels import _mask_like, token_nll, token_scores
from jaxmetrics.results import Result, static_field
from jaxmetrics.state import SumState

__all__ = ["LMScoreState", "LMScores", "PerplexityState", "lm_score_stats", "lm_scores", "perplexity_stats"]


class PerplexityState(SumState):
    """Perplexity ``exp(Σ -ln p(y_t) / N)`` over every scored token of a stream.

    Fields: ``nll_sum`` (float32, float64 under x64) and ``count`` (int). ``update`` merges
    :func:`perplexity_stats` of a batch; :meth:`add` folds per-window sums, e.g. the
    :class:`~jaxmetrics.lm.windows.WindowScores` of :func:`~jaxmetrics.lm.score_windows`.

    Examples:
        >>> from jaxmetrics.lm.state import PerplexityState
        >>> import jax.numpy as jnp
        >>> s = PerplexityState.empty().update(jnp.zeros((4, 8)), jnp.arange(4))
        >>> round(float(s.compute()), 4)
        8.0
    """

    nll_sum: jax.Array
    count: jax.Array

    @classmethod
    def empty(cls) -> "PerplexityState":
        """The identity element (zero sums, concrete dtypes)."""
        return cls(jnp.zeros((), accumulator_dtype()), jnp.zeros((), index_dtype()))

    def update(self, logits, targets, targets_mask=None) -> "PerplexityState":
        """Fold in ``logits [..., T, V]``, ``targets [..., T]``, optional ``targets_mask [..., T]``."""
        return self.merge(perplexity_stats(logits, targets, targets_mask))

    def add(self, scores: Any, scores_mask: Any = None) -> "PerplexityState":
        """Fold in precomputed per-window sums: ``scores`` has ``nll_sum`` and ``count`` arrays of one
        shape (a :class:`~jaxmetrics.lm.windows.WindowScores`); ``scores_mask`` (same shape) drops
        entries, e.g. padded windows."""
        nll = jnp.asarray(scores.nll_sum, self.nll_sum.dtype)
        cnt = jnp.asarray(scores.count).astype(self.count.dtype)
        if scores_mask is not None:
            m = jnp.asarray(scores_mask, bool)
            nll, cnt = jnp.where(m, nll, 0), jnp.where(m, cnt, 0)
        return self.replace(nll_sum=self.nll_sum + jnp.sum(nll), count=self.count + jnp.sum(cnt))

    def compute(self) -> jax.Array:
        """``exp(nll_sum / count)`` as a 0-d array; raises if no token was scored (never NaN)."""
        count = int(self.count)
        if count <= 0:
            raise ValueError("state: no scored tokens (count is 0); perplexity is undefined")
        return jnp.exp(jnp.asarray(self.nll_sum) / count)


@jax.jit
def _ppl_sums(logits, targets, targets_mask):
    m = _mask_like(targets_mask, targets)
    return jnp.sum(token_nll(logits, targets, m)), jnp.sum(m.astype(jnp.int32))


def perplexity_stats(logits, targets, targets_mask=None) -> PerplexityState:
    """The :class:`PerplexityState` of one batch: total NLL and token count over the masked positions.

    ``nll_sum = Σ_t mask_t · (-ln p(y_t))``, ``count = Σ_t mask_t``.

    Args:
      logits: ``[..., T, V]``; targets: ``[..., T]``; targets_mask: optional ``[..., T]`` boolean.

    Returns:
      :class:`PerplexityState` (jit-compatible; merge it with other states).

    Examples:
      >>> import jax.numpy as jnp
      >>> s = perplexity_stats(jnp.zeros((3, 5)), jnp.array([0, 1, 2]))
      >>> round(float(s.compute()), 4), int(s.count)
      (5.0, 3)
    """
    nll, cnt = _ppl_sums(logits, targets, targets_mask)
    return PerplexityState(nll.astype(accumulator_dtype()), cnt.astype(index_dtype()))


class LMScores(Result):
    """Corpus averages of the decoding-transform scores.

    Attributes:
      epsilon_perplexity: ``exp(-(1/N) Σ ln((p_y + ε)/(1 + ε|V|)))``.
      sparsemax_score: mean of ``p_y + ½(1 - ‖p‖²)`` (higher is better).
      js: mean Jensen–Shannon divergence to the one-hot target (nats, ``[0, ln 2]``).
      perplexity: perplexity of the transformed distribution; ``inf`` when a target was
        filtered out by top-k / top-p (it then has probability 0: use ``epsilon_perplexity``).
      num_tokens: number of scored tokens ``N``.
    """

    epsilon_perplexity: float
    sparsemax_score: float
    js: float
    perplexity: float
    num_tokens: int


class LMScoreState(struct.PyTreeNode):
    """ε-perplexity, sparsemax score, JS divergence and perplexity of the decoding-transformed
    distribution (see :mod:`jaxmetrics.lm.kernels`), accumulated as sums and a token count.

    The transform is part of the state: ``epsilon``, ``temperature`` and ``top_p`` are array
    leaves (so a state can be ``vmap``-ed over a grid of them), ``top_k`` and whether top-p is on
    are static. :meth:`merge` adds the sums of states with the same transform and refuses others.

    Examples:
        >>> from jaxmetrics.lm.state import LMScoreState
        >>> import jax.numpy as jnp
        >>> s = LMScoreState.empty(epsilon=0.0).update(jnp.zeros((2, 2)), jnp.array([0, 1]))
        >>> s.compute()
        LMScores(epsilon_perplexity=2, sparsemax_score=0.75, js=0.215762, perplexity=2, num_tokens=2)
    """

    eps_log_sum: jax.Array
    sparsemax_sum: jax.Array
    js_sum: jax.Array
    nll_sum: jax.Array
    count: jax.Array
    epsilon: jax.Array
    temperature: jax.Array
    top_p: jax.Array
    top_k: int | None = struct.field(pytree_node=False, default=None)
    use_top_p: bool = struct.field(pytree_node=False, default=False)

    @classmethod
    def empty(cls, *, epsilon: float = 0.0, temperature: float = 1.0, top_k: int | None = None,
              top_p: float | None = None) -> "LMScoreState":
        """Zero sums for the given decoding transform (see :func:`jaxmetrics.lm.token_scores`)."""
        epsilon, temperature, top_k, top_p = _check_transform(epsilon, temperature, top_k, top_p)
        f = accumulator_dtype()
        z = jnp.zeros((), f)
        return cls(z, z, z, z, jnp.zeros((), index_dtype()), jnp.asarray(epsilon, f), jnp.asarray(temperature, f),
                   jnp.asarray(1.0 if top_p is None else top_p, f), top_k, top_p is not None)

    def update(self, logits, targets, targets_mask=None) -> "LMScoreState":
        """Fold in ``logits [..., T, V]``, ``targets [..., T]``, optional ``targets_mask [..., T]``."""
        return self.merge(lm_score_stats(logits, targets, targets_mask, epsilon=self.epsilon,
                                         temperature=self.temperature, top_k=self.top_k,
                                         top_p=self.top_p if self.use_top_p else None))

    def merge(self, other: "LMScoreState") -> "LMScoreState":
        """Sums of two states of the same decoding transform (associative)."""
        if not isinstance(other, LMScoreState):
            raise TypeError(f"other: cannot merge {type(other).__name__} into LMScoreState")
        if (self.top_k, self.use_top_p) != (other.top_k, other.use_top_p):
            raise ValueError("other: LMScoreState with a different decoding transform (top_k / top_p)")
        settings = (self.epsilon, self.temperature, self.top_p, other.epsilon, other.temperature, other.top_p)
        if is_concrete(*settings) and not all(
                np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(settings[:3], settings[3:])):
            raise ValueError("other: LMScoreState with a different decoding transform (epsilon / temperature / "
                             "top_p)")
        return self.replace(eps_log_sum=self.eps_log_sum + other.eps_log_sum,
                            sparsemax_sum=self.sparsemax_sum + other.sparsemax_sum,
                            js_sum=self.js_sum + other.js_sum, nll_sum=self.nll_sum + other.nll_sum,
                            count=self.count + other.count)

    def compute(self) -> LMScores:
        """Corpus averages (:class:`LMScores`); raises if no token was scored."""
        n = int(self.count)
        if n <= 0:
            raise ValueError("state: no scored tokens (count is 0); the scores are undefined")
        return LMScores(epsilon_perplexity=float(np.exp(-float(self.eps_log_sum) / n)),
                        sparsemax_score=float(self.sparsemax_sum) / n, js=float(self.js_sum) / n,
                        perplexity=float(np.exp(float(self.nll_sum) / n)), num_tokens=n)


def _check_transform(epsilon, temperature, top_k, top_p):
    """Host checks of the transform; traced values (a vmapped grid) are passed through."""
    if is_concrete(epsilon):
        epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    if is_concrete(temperature):
        temperature = check_positive(temperature, "temperature")
    if top_k is not None:
        top_k = check_int(top_k, "top_k", minimum=1)
    if top_p is not None and is_concrete(top_p):
        top_p = check_probability(top_p, "top_p")
    return epsilon, temperature, top_k, top_p


@partial(jax.jit, static_argnames=("top_k",))
def _score_sums(logits, targets, targets_mask, epsilon, temperature, top_p, *, top_k):
    m = _mask_like(targets_mask, targets)
    tgt = jnp.where(m, jnp.asarray(targets), 0)
    s = token_scores(logits, tgt, epsilon=epsilon, temperature=temperature, top_k=top_k, top_p=top_p)
    zero = jnp.zeros((), s.js.dtype)

    def msum(v):
        return jnp.sum(jnp.where(m, v, zero))

    return (msum(s.eps_log_prob), msum(s.sparsemax), msum(s.js), msum(-s.log_prob),
            jnp.sum(m.astype(jnp.int32)))


def lm_score_stats(logits, targets, targets_mask=None, *, epsilon: float = 0.0, temperature: float = 1.0,
                   top_k: int | None = None, top_p: float | None = None) -> LMScoreState:
    """The :class:`LMScoreState` of one batch: masked sums of the per-token scores of
    :func:`~jaxmetrics.lm.kernels.token_scores`.

    Args:
      logits: ``[..., T, V]``; targets: ``[..., T]``; targets_mask: optional ``[..., T]`` boolean.
      epsilon, temperature, top_p: the decoding transform (traced: a grid can be ``vmap``-ed);
        top_k: static int or ``None``.

    Returns:
      :class:`LMScoreState`.

    Examples:
      >>> import jax.numpy as jnp
      >>> s = lm_score_stats(jnp.zeros((2, 2)), jnp.array([0, 1]), epsilon=0.0)
      >>> round(s.compute().sparsemax_score, 4)
      0.75
    """
    epsilon, temperature, top_k, top_p = _check_transform(epsilon, temperature, top_k, top_p)
    eps, sp, js, nll, cnt = _score_sums(logits, targets, targets_mask, epsilon, temperature,
                                        top_p, top_k=top_k)
    f = accumulator_dtype()
    return LMScoreState(eps.astype(f), sp.astype(f), js.astype(f), nll.astype(f), cnt.astype(index_dtype()),
                        jnp.asarray(epsilon, f), jnp.asarray(temperature, f),
                        jnp.asarray(1.0 if top_p is None else top_p, f), top_k, top_p is not None)


def lm_scores(logits, targets, targets_mask=None, *, epsilon: float = 0.0, temperature: float = 1.0,
              top_k: int | None = None, top_p: float | None = None) -> LMScores:
    """ε-perplexity, sparsemax score and JS divergence of a batch (corpus averages), validated.

    ``lm_score_stats(...).compute()`` with argument checks: ``top_k`` an int in ``[1, V]``,
    ``top_p`` in ``(0, 1]``, ``temperature > 0``, ``epsilon >= 0``, finite logits, target ids in
    range at masked-in positions.

    Args:
      logits: ``[..., T, V]``; targets: ``[..., T]``; targets_mask: optional ``[..., T]``.

    Returns:
      :class:`LMScores`.

    Examples:
      >>> import jax.numpy as jnp
      >>> out = lm_scores(jnp.array([[2.0, 0.0, 0.0]]), jnp.array([1]), top_k=1, epsilon=0.1)
      >>> round(out.epsilon_perplexity, 4), out.perplexity
      (13.0, inf)
    """
    z = np.shape(logits)
    if len(z) < 2:
        raise ValueError(f"logits: expected shape [..., T, V], got {z}")
    if tuple(np.shape(targets)) != tuple(z[:-1]):
        raise ValueError(f"targets: expected shape {tuple(z[:-1])}, got {tuple(np.shape(targets))}")
    if targets_mask is not None and tuple(np.shape(targets_mask)) != tuple(z[:-1]):
        raise ValueError(f"targets_mask: expected shape {tuple(z[:-1])}, got {tuple(np.shape(targets_mask))}")
    if top_k is not None:
        check_int(top_k, "top_k", minimum=1, maximum=z[-1])
    t = np.asarray(targets)
    if not np.issubdtype(t.dtype, np.integer):
        raise TypeError(f"targets: expected integer token ids, got dtype {t.dtype}")
    valid = np.ones(t.shape, bool) if targets_mask is None else np.asarray(targets_mask, bool)
    if np.any((t[valid] < 0) | (t[valid] >= z[-1])):
        raise ValueError(f"targets: ids must lie in [0, {z[-1]}) at masked-in positions")
    if not np.all(np.isfinite(np.asarray(logits, dtype=np.float64))):
        raise ValueError("logits: contains NaN or infinite values")
    return lm_score_stats(logits, targets, targets_mask, epsilon=epsilon, temperature=temperature,
                          top_k=top_k, top_p=top_p).compute()
