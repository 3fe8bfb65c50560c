"""The state of the decomposable n-gram statistics: exact pooled counts that merge.

:class:`NGramState` holds, for every order ``n = 1..max_n``, a table of the distinct n-grams of
a token stream with their occurrence counts (sufficient statistics: counts, never ratios). It
follows the CLU protocol of :mod:`jaxmetrics.state` (``empty / update / merge / compute``):
``update`` runs inside ``jax.jit``, ``merge`` combines batches, devices or hosts, and
``compute`` gives the same :class:`~jaxmetrics.diversity.NGramStats` as
:func:`~jaxmetrics.diversity.ngram_count_stats` on the whole corpus at once (distinct-n and
n-gram entropy); :meth:`NGramState.zipf` gives the Zipf coefficient.

Examples:
    >>> import jax.numpy as jnp
    >>> from jaxmetrics.diversity import NGramState
    >>> s = NGramState.empty(max_n=2, capacity=16).update(jnp.array([[1, 2, 1, 2]]), jnp.array([4]))
    >>> s.compute().distinct.tolist()
    [0.5, 0.6666666666666666]
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmetrics._ops import is_concrete
from jaxmetrics._validation import check_int, check_positive
from jaxmetrics.diversity.ngrams import NGramStats

__all__ = ["NGramState"]


_SENT = np.iinfo(np.int32).max  # empty slot / invalid window key


def _merge_table(keys, counts, capacity: int):
    """Sum the counts of equal keys. ``keys [R, n]``, ``counts [R]`` -> table of ``capacity``
    slots (distinct keys in lexicographic order, then empty slots) and the number of distinct
    keys (may exceed ``capacity``: the surplus is dropped and flagged by the caller)."""
    n = keys.shape[1]
    live = counts > 0
    keys = jnp.where(live[:, None], keys, _SENT)
    cols = [keys[:, j] for j in range(n)]
    out = jax.lax.sort((*cols, counts), num_keys=n)
    ks = jnp.stack(out[:n], axis=1)
    cs = out[n]
    live = cs > 0
    new = jnp.concatenate([jnp.ones((1,), bool), jnp.any(ks[1:] != ks[:-1], axis=1)]) & live
    gid = jnp.cumsum(new.astype(jnp.int32)) - 1
    n_groups = jnp.sum(new.astype(jnp.int32))
    seg = jnp.where(live & (gid < capacity), gid, capacity)
    table_counts = jax.ops.segment_sum(cs, seg, num_segments=capacity + 1)[:capacity]
    slot = jnp.where(new & (gid < capacity), gid, capacity)
    table_keys = jnp.full((capacity + 1, n), _SENT, keys.dtype).at[slot].set(ks)[:capacity]
    return table_keys, table_counts, n_groups


@functools.partial(jax.jit, static_argnames=("capacity",))
def _merge_tables(keys, counts, capacity: int):
    return jax.vmap(functools.partial(_merge_table, capacity=capacity))(keys, counts)


@functools.partial(jax.jit, static_argnames=("max_n",))
def _batch_windows(ids, lengths, max_n: int):
    """All n-gram windows of a padded batch as keys ``[max_n, B*T, max_n]`` (order ``n`` uses
    the first ``n`` columns, the rest 0) with counts ``[max_n, B*T]`` (1 valid, 0 invalid)."""
    B, T = ids.shape
    ids = ids.astype(jnp.int32)
    padded = jnp.concatenate([ids, jnp.zeros((B, max_n - 1), jnp.int32)], axis=1)
    shifted = jnp.stack([padded[:, j:j + T] for j in range(max_n)], axis=-1)  # [B, T, max_n]
    pos = jnp.arange(T)[None, :]
    col = jnp.arange(max_n)
    keys, cnts = [], []
    for n in range(1, max_n + 1):
        valid = pos + n <= lengths[:, None]
        keys.append(jnp.where(col < n, shifted, 0).reshape(B * T, max_n))
        cnts.append(valid.reshape(B * T).astype(jnp.int32))
    return jnp.stack(keys), jnp.stack(cnts)


class NGramState(struct.PyTreeNode):
    """Exact pooled n-gram counts (orders ``1..max_n``) of a token stream, mergeable.

    For each order a table of at most ``capacity`` distinct n-grams (keys = their token ids)
    with their occurrence counts ``c(g)``; ``merge`` sums the counts of equal keys (one sort, a
    static shape). From the tables: distinct-n ``#{g: c(g) > 0} / Σ c(g)``, the n-gram entropy
    ``-Σ (c/N) ln (c/N)`` and the Zipf coefficient of the unigram counts (via
    :func:`~jaxmetrics.diversity.zipf_stats`) — the same values as
    :func:`~jaxmetrics.diversity.distinct_n`, :func:`~jaxmetrics.diversity.ngram_entropy` and
    :func:`~jaxmetrics.diversity.zipf_coefficient` on the whole corpus at once.

    Fields: ``keys`` int32 ``[max_n, capacity, max_n]`` (order ``n`` uses the first ``n``
    columns; empty slots hold ``2**31 - 1``), ``counts`` int32 ``[max_n, capacity]``,
    ``overflow`` bool (set when a ``jit``-ted update or merge ran out of capacity).

    Token ids must lie in ``[0, 2**31 - 1)``. More distinct n-grams than ``capacity`` raise
    ``ValueError`` (inside ``jit`` the ``overflow`` flag is set instead and ``compute`` raises).

    Examples:
        >>> from jaxmetrics.diversity import NGramState
        >>> import jax.numpy as jnp
        >>> a = NGramState.empty(max_n=2, capacity=16).update(jnp.array([[1, 2, 1, 2]]), jnp.array([4]))
        >>> b = NGramState.empty(max_n=2, capacity=16).update(jnp.array([[1, 2, 3, 0]]), jnp.array([3]))
        >>> out = a.merge(b).compute()
        >>> out
        NGramStats(unique=i64[2], total=i64[2], distinct=f64[2], entropy=f64[2])
        >>> out.unique.tolist(), out.total.tolist()
        ([3, 3], [7, 5])
    """

    keys: jax.Array  # [max_n, capacity, max_n] int32
    counts: jax.Array  # [max_n, capacity] int32
    overflow: jax.Array  # bool scalar

    @classmethod
    def empty(cls, max_n: int = 4, capacity: int = 1 << 16) -> "NGramState":
        """Empty tables for orders ``1..max_n`` with room for ``capacity`` distinct n-grams each."""
        max_n = check_int(max_n, "max_n", minimum=1)
        capacity = check_int(capacity, "capacity", minimum=1)
        return cls(jnp.full((max_n, capacity, max_n), _SENT, jnp.int32),
                   jnp.zeros((max_n, capacity), jnp.int32), jnp.zeros((), bool))

    @property
    def max_n(self) -> int:
        """The largest n-gram order."""
        return int(self.keys.shape[0])

    @property
    def capacity(self) -> int:
        """The number of table slots per order."""
        return int(self.keys.shape[1])

    def _fold(self, keys, counts, what: str) -> "NGramState":
        k, c, groups = _merge_tables(keys, counts, self.capacity)
        over = jnp.any(groups > self.capacity)
        if is_concrete(over) and bool(over):
            raise ValueError(f"{what}: n-gram table capacity {self.capacity} exceeded "
                             f"({int(jnp.max(groups))} distinct n-grams); create the state with a "
                             f"larger capacity")
        return self.replace(keys=k, counts=c, overflow=self.overflow | over)

    def update(self, ids, lengths) -> "NGramState":
        """Count the n-grams of a padded batch ``ids [B, T]`` (token ``t`` of row ``b`` is real
        iff ``t < lengths[b]``, ``lengths [B]``; e.g. the fields of
        :func:`~jaxmetrics.diversity.encode_sequences` or model token ids)."""
        ids, lengths = jnp.asarray(ids), jnp.asarray(lengths)
        if ids.ndim != 2 or not jnp.issubdtype(ids.dtype, jnp.integer):
            raise ValueError(f"ids: expected an integer array [B, T], got {ids.dtype} {ids.shape}")
        if lengths.shape != ids.shape[:1]:
            raise ValueError(f"lengths: expected shape [{ids.shape[0]}], got {lengths.shape}")
        if is_concrete(ids, lengths):
            valid = np.arange(ids.shape[1])[None, :] < np.asarray(lengths)[:, None]
            v = np.asarray(ids)[valid]
            if v.size and (v.min() < 0 or v.max() >= _SENT):
                raise ValueError("ids: token ids must lie in [0, 2**31 - 1)")
        wk, wc = _batch_windows(ids, lengths.astype(jnp.int32), self.max_n)
        return self._fold(jnp.concatenate([self.keys, wk], axis=1),
                          jnp.concatenate([self.counts, wc], axis=1), "ids")

    def merge(self, other: "NGramState") -> "NGramState":
        """Sum the counts of both tables (same ``max_n`` and ``capacity``)."""
        if not isinstance(other, NGramState):
            raise TypeError(f"other: cannot merge {type(other).__name__} into NGramState")
        if other.keys.shape != self.keys.shape:
            raise ValueError(f"other: tables of shape {other.keys.shape} and {self.keys.shape} differ "
                             "(max_n and capacity must match)")
        st = self._fold(jnp.concatenate([self.keys, other.keys], axis=1),
                        jnp.concatenate([self.counts, other.counts], axis=1), "other")
        return st.replace(overflow=st.overflow | other.overflow)

    def _check(self):
        if bool(self.overflow):
            raise ValueError("state: the n-gram table overflowed inside jit (capacity "
                             f"{self.capacity}); counts are incomplete, use a larger capacity")

    def compute(self) -> NGramStats:
        """Per order ``n = 1..max_n``: :class:`~jaxmetrics.diversity.NGramStats` of numpy arrays
        ``[max_n]`` (``unique``, ``total`` int64; ``distinct`` = ``unique / total``, 0 when there
        are no n-grams, and ``entropy`` in nats, float64)."""
        self._check()
        c = np.asarray(self.counts, np.int64)
        unique = (c > 0).sum(axis=1)
        total = c.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = c / np.maximum(total, 1)[:, None]
            ent = -np.sum(np.where(c > 0, p * np.log(np.where(c > 0, p, 1.0)), 0.0), axis=1)
        return NGramStats(unique=unique, total=total,
                          distinct=np.where(total > 0, unique / np.maximum(total, 1), 0.0), entropy=ent)

    def zipf(self, *, max_num: int = 5000, stretch_factor: float = 15.0) -> float:
        """Zipf coefficient of the unigram counts (:func:`~jaxmetrics.diversity.zipf_stats`
        on the pooled tokens; raises with fewer than 3 distinct tokens)."""
        from jaxmetrics.diversity.stats import zipf_stats

        check_int(max_num, "max_num", minimum=3)
        check_positive(stretch_factor, "stretch_factor")
        self._check()
        c = np.asarray(self.counts[0], np.int64)
        n = int(c.sum())
        # zipf_stats depends only on the multiset of counts: rebuild a token stream of slot ids,
        # padded to a power of two so that streams of similar size share one compilation
        width = 1 << max(4, (max(n, 1) - 1).bit_length())
        stream = np.zeros((1, width), np.int32)
        stream[0, :n] = np.repeat(np.arange(c.size, dtype=np.int32), c)
        z = zipf_stats(jnp.asarray(stream), jnp.asarray([n], jnp.int32), max_num=int(max_num),
                       stretch_factor=float(stretch_factor))
        if int(z.num_points) < 2:
            raise ValueError("state: the Zipf fit needs at least 3 distinct tokens "
                             f"(got {int(z.num_points)} regression point(s))")
        return float(z.coefficient)
