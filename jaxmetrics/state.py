"""The building blocks of every metric state, and the helpers that merge many states.

Every decomposable metric in jaxmetrics is written once as sufficient statistics (sums and
counts, never means) plus a ``compute`` step, in a state class that lives next to the metric's
kernel (``jaxmetrics.lm.state``, ``jaxmetrics.similarity.state``, ``jaxmetrics.diversity.state``,
``jaxmetrics.mark_evaluate.state``, ``jaxmetrics.mauve.pipeline.state``). States are small pytrees
(:class:`flax.struct.PyTreeNode`) with the CLU-style protocol

* ``empty(...)``   – the identity element (concrete dtypes, so ``jit`` never retraces),
* ``update(...)``  – a new state with one more batch folded in,
* ``merge(other)`` – associative and commutative combination of two states,
* ``compute()``    – the metric value.

Because a state is a pytree, it passes through ``jax.jit``/``vmap`` and can be reduced
across devices or hosts; because ``merge`` is associative, the result does not depend on
how the stream was split into batches or over how many devices.

Non-decomposable metrics (MAUVE, Mark-Evaluate, PRD) keep a fixed-capacity
:class:`FeatureBuffer`; FID keeps :class:`GaussianMoments` (running mean and scatter,
merged with Chan et al.'s pairwise formula).

Examples:
    >>> from jaxmetrics.state import FeatureBuffer
    >>> import jax.numpy as jnp
    >>> a = FeatureBuffer.empty(capacity=4, dim=2).update(jnp.ones((2, 2)))
    >>> b = FeatureBuffer.empty(capacity=4, dim=2).update(2 * jnp.ones((1, 2)))
    >>> a.merge(b).values().tolist()
    [[1.0, 1.0], [1.0, 1.0], [2.0, 2.0]]
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmetrics._ops import PRECISION, accumulator_dtype, is_concrete
from jaxmetrics._validation import concrete_value

__all__ = ["FeatureBuffer", "GaussianMoments", "PairBuffer", "SumState", "merge_all", "merge_stacked"]


class SumState(struct.PyTreeNode):
    """Base class for states whose every field is a sum: ``merge`` adds fieldwise."""

    def merge(self, other: "SumState") -> "SumState":
        """Fieldwise sum with a state of the same type and settings (associative)."""
        if type(other) is not type(self):
            raise TypeError(f"other: cannot merge {type(other).__name__} into {type(self).__name__}")
        if jax.tree.structure(other) != jax.tree.structure(self):
            raise ValueError(f"other: {type(self).__name__} states with different settings cannot be merged")
        return jax.tree.map(jnp.add, self, other)


@functools.partial(jax.jit, donate_argnums=())
def _buffer_write(features, count, x, x_mask):
    cap = features.shape[0]
    # Row i of x goes to slot count + rank(i) among the kept rows; dropped rows go nowhere.
    rank = jnp.cumsum(x_mask.astype(jnp.int32)) - 1
    slot = jnp.where(x_mask, count + rank, cap)  # cap = out of range -> dropped by mode='drop'
    features = features.at[slot].set(x.astype(features.dtype), mode="drop")
    return features, count + jnp.sum(x_mask.astype(jnp.int32))


@jax.jit
def _buffer_merge(f1, c1, f2, c2):
    cap = f1.shape[0]
    idx = jnp.arange(cap)
    src = jnp.clip(idx - c1, 0, f2.shape[0] - 1)
    take_other = (idx >= c1) & (idx < c1 + c2)
    merged = jnp.where(take_other[:, None], f2[src], f1)
    return merged, c1 + c2


class FeatureBuffer(struct.PyTreeNode):
    """A fixed-capacity buffer of feature rows ``[capacity, dim]`` and a fill count.

    The capacity is static (the array shape), so a buffer passes through ``jit`` without
    retracing however full it is. Writing past the capacity raises ``ValueError`` on the
    host before anything is lost.
    """

    features: jax.Array
    count: jax.Array

    @classmethod
    def empty(cls, capacity: int, dim: int, dtype=jnp.float32) -> "FeatureBuffer":
        if int(capacity) <= 0:
            raise ValueError(f"capacity: must be a positive integer, got {capacity}")
        if int(dim) <= 0:
            raise ValueError(f"dim: must be a positive integer, got {dim}")
        return cls(jnp.zeros((int(capacity), int(dim)), dtype), jnp.zeros((), jnp.int32))

    @property
    def capacity(self) -> int:
        return int(self.features.shape[0])

    def update(self, x, x_mask=None) -> "FeatureBuffer":
        """Append the rows of ``x`` ``[n, dim]`` (those with ``x_mask`` True)."""
        x = jnp.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.features.shape[1]:
            raise ValueError(f"x: expected shape [n, {self.features.shape[1]}], got {x.shape}")
        mask = jnp.ones(x.shape[0], bool) if x_mask is None else jnp.asarray(x_mask, bool)
        if mask.shape != (x.shape[0],):
            raise ValueError(f"x_mask: expected shape [{x.shape[0]}], got {mask.shape}")
        # Counted only on concrete values (also arrays a jitted function closed over); a
        # traced count or mask is unknown until run time, so the check is skipped.
        added = x.shape[0] if x_mask is None else concrete_value(lambda m: jnp.sum(jnp.asarray(m, bool)), x_mask)
        have = concrete_value(jnp.asarray, self.count)
        if added is not None and have is not None:
            need = int(have) + int(added)
            if need > self.capacity:
                raise ValueError(
                    f"x: buffer capacity {self.capacity} exceeded ({need} rows); create the state "
                    f"with a larger capacity")
        features, count = _buffer_write(self.features, self.count, x, mask)
        return self.replace(features=features, count=count)

    def merge(self, other: "FeatureBuffer") -> "FeatureBuffer":
        """Rows of ``self`` followed by the rows of ``other`` (same capacity and dim)."""
        if other.features.shape[1] != self.features.shape[1]:
            raise ValueError("other: buffers hold features of different dimension")
        if is_concrete(self.count, other.count):
            need = int(self.count) + int(other.count)
            if need > self.capacity:
                raise ValueError(f"other: merged buffers need {need} rows, capacity is {self.capacity}")
        features, count = _buffer_merge(self.features, self.count, other.features, other.count)
        return self.replace(features=features, count=count)

    def values(self) -> np.ndarray:
        """The filled rows as a host array ``[count, dim]``."""
        return np.asarray(self.features[: int(self.count)])


class GaussianMoments(struct.PyTreeNode):
    """Running count, mean ``[d]`` and scatter matrix ``[d, d]`` of a feature stream.

    ``merge`` uses the pairwise update of Chan, Golub & LeVeque (1979), which is exact and
    numerically stable (no subtraction of large raw second moments). ``covariance()`` is the
    unbiased sample covariance used by FID.
    """

    n: jax.Array
    mean: jax.Array
    scatter: jax.Array

    @classmethod
    def empty(cls, dim: int, dtype=None) -> "GaussianMoments":
        dt = accumulator_dtype() if dtype is None else dtype
        return cls(jnp.zeros((), dt), jnp.zeros((dim,), dt), jnp.zeros((dim, dim), dt))

    @classmethod
    def from_features(cls, x, dtype=None) -> "GaussianMoments":
        dt = accumulator_dtype() if dtype is None else dtype
        x = jnp.asarray(x, dt)
        mu = jnp.mean(x, axis=0)
        xc = x - mu
        return cls(jnp.asarray(x.shape[0], dt), mu, jnp.matmul(xc.T, xc, precision=PRECISION))

    def update(self, x) -> "GaussianMoments":
        return self.merge(type(self).from_features(x, self.mean.dtype))

    def merge(self, other: "GaussianMoments") -> "GaussianMoments":
        n = self.n + other.n
        safe_n = jnp.where(n > 0, n, 1)
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.n / safe_n)
        scatter = self.scatter + other.scatter + jnp.outer(delta, delta) * (self.n * other.n / safe_n)
        return self.replace(n=n, mean=mean, scatter=scatter)

    def covariance(self) -> jax.Array:
        return self.scatter / jnp.maximum(self.n - 1, 1)


def merge_all(states: Sequence[Any]) -> Any:
    """Merge a non-empty sequence of states left to right: ``s0.merge(s1).merge(s2)...``.

    Because ``merge`` is associative, any bracketing (e.g. a tree reduction over hosts) gives
    the same result.

    Examples:
        >>> from jaxmetrics.lm.state import PerplexityState
        >>> from jaxmetrics.state import merge_all
        >>> import jax.numpy as jnp
        >>> parts = [PerplexityState.empty().update(jnp.zeros((1, 2, 4)), jnp.zeros((1, 2), int))
        ...          for _ in range(3)]
        >>> int(merge_all(parts).count)
        6
    """
    states = list(states)
    if not states:
        raise ValueError("states: need at least one state to merge")
    return functools.reduce(lambda a, b: a.merge(b), states)


def merge_stacked(stacked: Any) -> Any:
    """Merge the states stacked along a leading axis of every leaf (``[P, ...]``), e.g. the
    output of ``jax.experimental.multihost_utils.process_allgather(state)`` (one state per host)
    or of ``jax.vmap`` over shards.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from jaxmetrics.lm.state import PerplexityState
        >>> from jaxmetrics.state import merge_stacked
        >>> s = PerplexityState.empty().update(jnp.zeros((2, 4)), jnp.array([0, 1]))
        >>> stacked = jax.tree.map(lambda *v: jnp.stack(v), s, s, s)
        >>> int(merge_stacked(stacked).count)
        6
    """
    leaves = jax.tree.leaves(stacked)
    if not leaves or any(np.ndim(v) == 0 for v in leaves):
        raise ValueError("stacked: expected states stacked along a leading axis of every leaf")
    n = int(np.shape(leaves[0])[0])
    if n == 0:
        raise ValueError("stacked: the leading axis is empty")
    return merge_all([jax.tree.map(lambda v, i=i: jnp.asarray(v[i]), stacked) for i in range(n)])


class PairBuffer(struct.PyTreeNode):
    """Two :class:`FeatureBuffer` s (``first``, ``second``) of the same capacity and dimension."""

    first: FeatureBuffer
    second: FeatureBuffer

    @classmethod
    def empty(cls, capacity: int, dim: int, dtype=jnp.float32) -> "PairBuffer":
        """Room for ``capacity`` rows of ``dim`` features on each side."""
        return cls(FeatureBuffer.empty(capacity, dim, dtype), FeatureBuffer.empty(capacity, dim, dtype))

    def _update(self, first, second, first_mask, second_mask):
        a, b = self.first, self.second
        if first is not None:
            a = a.update(first, first_mask)
        if second is not None:
            b = b.update(second, second_mask)
        return self.replace(first=a, second=b)

    def merge(self, other: "PairBuffer") -> "PairBuffer":
        """Rows of ``self`` then rows of ``other`` on each side (capacity checked)."""
        if type(other) is not type(self):
            raise TypeError(f"other: cannot merge {type(other).__name__} into {type(self).__name__}")
        return self.replace(first=self.first.merge(other.first), second=self.second.merge(other.second))

    def _values(self, names):
        a, b = self.first.values(), self.second.values()
        for v, nm in zip((a, b), names):
            if v.shape[0] == 0:
                raise ValueError(f"{nm}: no features were added")
        return a, b
