"""Streaming metric states: accumulate a metric over a stream of batches, devices or hosts.

One implementation, two interfaces: every state below folds a batch in by calling the metric
area's own kernel (``perplexity_stats``, ``lm_score_stats``, ``batch_similarity``,
``batch_bertscore``, ``cross_membership``, ...) and finishes with the area's own ``compute``
function (``perplexity_from_stats``, ``compute_mauve``, ``mark_evaluate_scores``, ...). The
states only hold what those functions need, in the form that merges:

========================  ===============================  =====================================
state                     holds                            ``compute()``
========================  ===============================  =====================================
:class:`PerplexityState`  ``Σ -ln p``, token count         ``exp(Σ / N)``
:class:`LMScoreState`     sums of ε-log-prob, sparsemax,   ε-PPL, sparsemax score, JS, PPL
                          JS, NLL; token count
:class:`SimilarityState`  ``Σ P``, ``Σ R``, ``Σ F``,       corpus means of BERTScore / TWMD / ...
                          pair count
:class:`NGramState`       exact n-gram count tables        distinct-n, n-gram entropy, Zipf
                          (fixed capacity)
:class:`IMPARState`       fixed reference manifold,        IMPAR precision
                          ``Σ inside``, candidate count
:class:`MauveState`       two :class:`FeatureBuffer`       :func:`~jaxmetrics.mauve.compute_mauve`
:class:`MarkEvaluateState` two :class:`FeatureBuffer`      Mark-Evaluate scores, IMPAR P/R
:class:`PRDState`         two :class:`FeatureBuffer`       PRD curves
:class:`FIDState`         two :class:`GaussianMoments`     Fréchet distance
========================  ===============================  =====================================

Protocol (CLU style): ``State.empty(...)`` is the identity, ``s.update(batch...)`` returns a new
state, ``s.merge(other)`` is associative (and commutative up to the order of buffered rows), and
``s.compute()`` returns the metric. Decomposable states hold sums and counts, never means, so
a stream split over batches, devices or hosts in any way gives the same value. States are
pytrees (settings are static fields), so ``update`` runs inside ``jax.jit`` and a state passes
through ``jit`` without retracing; ``compute`` runs on the host at the end.

Examples:
    >>> from jaxmetrics.streaming import PerplexityState
    >>> import jax.numpy as jnp
    >>> logits, targets = jnp.zeros((2, 3, 5)), jnp.array([[0, 1, 2], [3, 4, 0]])
    >>> a = PerplexityState.empty().update(logits[:1], targets[:1])
    >>> b = PerplexityState.empty().update(logits[1:], targets[1:])
    >>> round(float(a.merge(b).compute()), 4), int(a.merge(b).count)
    (5.0, 6)
"""
from __future__ import annotations

import functools
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmetrics.state import FeatureBuffer, GaussianMoments, SumState, _acc_dtype

__all__ = [
    "PerplexityState",
    "LMScoreState",
    "SimilarityState",
    "NGramState",
    "IMPARState",
    "MauveState",
    "MarkEvaluateState",
    "PRDState",
    "FIDState",
    "merge_all",
    "merge_stacked",
]


def _int_dtype():
    return jnp.int64 if jax.config.jax_enable_x64 else jnp.int32


def _concrete(*xs) -> bool:
    return not any(isinstance(x, jax.core.Tracer) for x in jax.tree.leaves(xs))


def merge_all(states: Sequence[Any]):
    """Merge a non-empty sequence of states left to right: ``s0.merge(s1).merge(s2)...``.

    Because ``merge`` is associative, any bracketing (e.g. a tree reduction over hosts) gives
    the same result.

    Examples:
        >>> from jaxmetrics.streaming import PerplexityState, merge_all
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


def merge_stacked(stacked: Any):
    """Merge the states stacked along a leading axis of every leaf (``[P, ...]``), e.g. the
    output of ``jax.experimental.multihost_utils.process_allgather(state)`` (one state per host)
    or of ``jax.vmap`` over shards.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> from jaxmetrics.streaming import PerplexityState, merge_stacked
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


# ---------------------------------------------------------------------------------------------
# log-prob metrics


class PerplexityState(SumState):
    """Perplexity ``exp(Σ -ln p(y_t) / N)`` over every scored token of a stream.

    Fields: ``nll_sum`` (float32, float64 under x64) and ``count`` (int). ``update`` calls
    :func:`jaxmetrics.lm.perplexity_stats`; :meth:`add` folds precomputed per-window sums, e.g.
    the ``(nll_sum [B], count [B])`` of :func:`jaxmetrics.lm.score_windows`.

    Examples:
        >>> from jaxmetrics.streaming import PerplexityState
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
        return cls(jnp.zeros((), _acc_dtype()), jnp.zeros((), _int_dtype()))

    def update(self, logits, targets, mask=None) -> "PerplexityState":
        """Fold in ``logits [..., T, V]``, ``targets [..., T]``, optional ``mask [..., T]``."""
        from jaxmetrics.lm.kernels import perplexity_stats

        st = perplexity_stats(logits, targets, mask)
        return self.add(st.nll_sum, st.count)

    def add(self, nll_sum, count, mask=None) -> "PerplexityState":
        """Fold in precomputed NLL sums and token counts (any matching shapes; ``mask`` drops
        entries, e.g. padded windows)."""
        nll = jnp.asarray(nll_sum, self.nll_sum.dtype)
        cnt = jnp.asarray(count).astype(self.count.dtype)
        if mask is not None:
            m = jnp.asarray(mask, bool)
            nll, cnt = jnp.where(m, nll, 0), jnp.where(m, cnt, 0)
        return self.replace(nll_sum=self.nll_sum + jnp.sum(nll), count=self.count + jnp.sum(cnt))

    def compute(self) -> jax.Array:
        """``exp(nll_sum / count)`` (:func:`jaxmetrics.lm.perplexity_from_stats`; raises if no
        token was scored)."""
        from jaxmetrics.lm.kernels import PerplexityStats, perplexity_from_stats

        return perplexity_from_stats(PerplexityStats(self.nll_sum, self.count))


class LMScoreState(SumState):
    """ε-perplexity, sparsemax score, JS divergence and perplexity of the decoding-transformed
    distribution (see :mod:`jaxmetrics.lm.kernels`), accumulated as sums and a token count.

    The transform settings are static fields fixed by :meth:`empty`; states with different
    settings refuse to merge.

    Examples:
        >>> from jaxmetrics.streaming import LMScoreState
        >>> import jax.numpy as jnp
        >>> s = LMScoreState.empty(epsilon=0.0).update(jnp.zeros((2, 2)), jnp.array([0, 1]))
        >>> {k: round(v, 4) for k, v in s.compute().items()}
        {'epsilon_perplexity': 2.0, 'sparsemax_score': 0.75, 'js': 0.2158, 'perplexity': 2.0}
    """

    eps_log_sum: jax.Array
    sparsemax_sum: jax.Array
    js_sum: jax.Array
    nll_sum: jax.Array
    count: jax.Array
    epsilon: float = struct.field(pytree_node=False, default=0.0)
    temperature: float = struct.field(pytree_node=False, default=1.0)
    top_k: int | None = struct.field(pytree_node=False, default=None)
    top_p: float | None = struct.field(pytree_node=False, default=None)

    @classmethod
    def empty(cls, *, epsilon: float = 0.0, temperature: float = 1.0, top_k: int | None = None,
              top_p: float | None = None) -> "LMScoreState":
        """Zero sums for the given decoding transform (see :func:`jaxmetrics.lm.token_scores`)."""
        from jaxmetrics._validation import check_int, check_positive

        check_positive(epsilon, "epsilon", allow_zero=True)
        check_positive(temperature, "temperature")
        if top_k is not None:
            top_k = check_int(top_k, "top_k", minimum=1)
        if top_p is not None and not 0 < float(top_p) <= 1:
            raise ValueError(f"top_p: must be in (0, 1], got {top_p!r}")
        z = jnp.zeros((), _acc_dtype())
        return cls(z, z, z, z, jnp.zeros((), _int_dtype()), float(epsilon), float(temperature),
                   top_k, None if top_p is None else float(top_p))

    def update(self, logits, targets, mask=None) -> "LMScoreState":
        """Fold in ``logits [..., T, V]``, ``targets [..., T]``, optional ``mask [..., T]``
        (:func:`jaxmetrics.lm.lm_score_stats`)."""
        from jaxmetrics.lm.kernels import lm_score_stats

        st = lm_score_stats(logits, targets, mask, epsilon=self.epsilon, temperature=self.temperature,
                            top_k=self.top_k, top_p=self.top_p)
        f = self.nll_sum.dtype
        return self.replace(eps_log_sum=self.eps_log_sum + st.eps_log_sum.astype(f),
                            sparsemax_sum=self.sparsemax_sum + st.sparsemax_sum.astype(f),
                            js_sum=self.js_sum + st.js_sum.astype(f),
                            nll_sum=self.nll_sum + st.nll_sum.astype(f),
                            count=self.count + st.count.astype(self.count.dtype))

    def compute(self) -> dict:
        """:func:`jaxmetrics.lm.lm_scores_from_stats` of the sums (raises if no token)."""
        from jaxmetrics.lm.kernels import LMScoreStats, lm_scores_from_stats

        return lm_scores_from_stats(LMScoreStats(self.eps_log_sum, self.sparsemax_sum, self.js_sum,
                                                 self.nll_sum, self.count))


# ---------------------------------------------------------------------------------------------
# embedding similarities


_SIM_KEYS = ("temperature", "num_iterations", "normalize", "backend", "compat")


class SimilarityState(SumState):
    """Corpus means of pairwise similarity scores (BERTScore or the normalised family of
    :mod:`jaxmetrics.similarity.kernels`: cosine, CKA, RWMD, TWMD, TRWMD, ...).

    Holds ``Σ_b P_b``, ``Σ_b R_b``, ``Σ_b F_b`` and the pair count ``N``; ``compute`` returns the
    means ``Σ P / N`` etc. (the corpus score reported by ``bert_score``). ``update`` calls
    :func:`~jaxmetrics.similarity.bertscore.batch_bertscore` (``metric='bertscore'``) or
    :func:`~jaxmetrics.similarity.kernels.batch_similarity`; :meth:`add` folds per-pair scores
    computed elsewhere.

    Examples:
        >>> from jaxmetrics.streaming import SimilarityState
        >>> import jax, jax.numpy as jnp
        >>> x = jax.random.normal(jax.random.key(0), (2, 3, 4)); m = jnp.ones((2, 3), bool)
        >>> s = SimilarityState.empty("bertscore").update(x, x, m, m)
        >>> {k: round(v, 4) for k, v in s.compute().items()}
        {'precision': 1.0, 'recall': 1.0, 'f1': 1.0}
    """

    p_sum: jax.Array
    r_sum: jax.Array
    f_sum: jax.Array
    count: jax.Array
    metric: str = struct.field(pytree_node=False, default="bertscore")
    options: tuple = struct.field(pytree_node=False, default=())

    @classmethod
    def empty(cls, metric: str = "bertscore", *, temperature: float = 0.1, num_iterations: int = 1,
              normalize: bool = True, backend: str = "log", compat: bool = False) -> "SimilarityState":
        """Zero sums for ``metric`` (``'bertscore'`` or one of
        :data:`jaxmetrics.similarity.kernels.METRICS`) and its settings."""
        from jaxmetrics.similarity.kernels import METRICS

        if metric != "bertscore" and metric not in METRICS:
            raise ValueError(f"metric: expected 'bertscore' or one of {METRICS}, got {metric!r}")
        if backend not in ("log", "ott"):
            raise ValueError(f"backend: expected 'log' or 'ott', got {backend!r}")
        if not float(temperature) > 0:
            raise ValueError(f"temperature: must be > 0, got {temperature!r}")
        opts = (float(temperature), int(num_iterations), bool(normalize), backend, bool(compat))
        z = jnp.zeros((), _acc_dtype())
        return cls(z, z, z, jnp.zeros((), _int_dtype()), metric, opts)

    def update(self, cand, ref, cand_mask, ref_mask, cand_weights=None, ref_weights=None, *,
               pair_mask=None) -> "SimilarityState":
        """Score ``B`` pairs and fold them in.

        Args:
          cand: ``[B, L1, D]``; ref: ``[B, L2, D]``; cand_mask / ref_mask: bool ``[B, L1]`` /
            ``[B, L2]``; cand_weights / ref_weights: optional token weights (e.g. idf);
          pair_mask: optional bool ``[B]``, False for padding pairs (not counted).
        """
        o = dict(zip(_SIM_KEYS, self.options))
        cand, ref = jnp.asarray(cand), jnp.asarray(ref)
        cand_mask, ref_mask = jnp.asarray(cand_mask, bool), jnp.asarray(ref_mask, bool)
        if cand.ndim != 3 or ref.ndim != 3 or cand.shape[0] != ref.shape[0]:
            raise ValueError(f"cand: expected [B, L1, D] and [B, L2, D] embeddings, got {cand.shape} "
                             f"and {ref.shape}")
        if self.metric == "bertscore":
            from jaxmetrics.similarity.bertscore import batch_bertscore

            prf = batch_bertscore(cand, ref, cand_mask, ref_mask, cand_weights, ref_weights,
                                  compat=o["compat"])
        else:
            from jaxmetrics.similarity.kernels import batch_similarity

            prf = batch_similarity(cand, ref, cand_mask, ref_mask, metric=self.metric,
                                   temperature=jnp.asarray(o["temperature"], cand.dtype),
                                   num_iterations=o["num_iterations"], cand_weights=cand_weights,
                                   ref_weights=ref_weights, normalize=o["normalize"],
                                   backend=o["backend"])
        return self.add(prf, pair_mask)

    def add(self, scores, pair_mask=None) -> "SimilarityState":
        """Fold in per-pair scores ``(P [B], R [B], F [B])`` (a :class:`PRF` or a 3-tuple)."""
        p, r, f = (jnp.asarray(v, self.p_sum.dtype) for v in scores)
        m = jnp.ones(p.shape, bool) if pair_mask is None else jnp.asarray(pair_mask, bool)
        if m.shape != p.shape:
            raise ValueError(f"pair_mask: expected shape {p.shape}, got {m.shape}")

        def s(v):
            return jnp.sum(jnp.where(m, v, 0))

        return self.replace(p_sum=self.p_sum + s(p), r_sum=self.r_sum + s(r), f_sum=self.f_sum + s(f),
                            count=self.count + jnp.sum(m).astype(self.count.dtype))

    def compute(self) -> dict:
        """Corpus means ``{'precision', 'recall', 'f1'}``; raises if no pair was added."""
        n = int(self.count)
        if n <= 0:
            raise ValueError("state: no pairs were added; the corpus mean is undefined")
        return {"precision": float(self.p_sum) / n, "recall": float(self.r_sum) / n,
                "f1": float(self.f_sum) / n}


# ---------------------------------------------------------------------------------------------
# n-gram statistics

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
    :func:`jaxmetrics.diversity.stats.zipf_stats`) — the same values as
    :func:`~jaxmetrics.diversity.distinct_n`, :func:`~jaxmetrics.diversity.ngram_entropy` and
    :func:`~jaxmetrics.diversity.zipf_coefficient` on the whole corpus at once.

    Token ids must lie in ``[0, 2**31 - 1)``. More distinct n-grams than ``capacity`` raise
    ``ValueError`` (inside ``jit`` the ``overflow`` flag is set instead and ``compute`` raises).

    Examples:
        >>> from jaxmetrics.streaming import NGramState
        >>> import jax.numpy as jnp
        >>> a = NGramState.empty(max_n=2, capacity=16).update(jnp.array([[1, 2, 1, 2]]), jnp.array([4]))
        >>> b = NGramState.empty(max_n=2, capacity=16).update(jnp.array([[1, 2, 3, 0]]), jnp.array([3]))
        >>> s = a.merge(b)
        >>> s.compute()["unique"].tolist(), s.compute()["total"].tolist()
        ([3, 3], [7, 5])
    """

    keys: jax.Array  # [max_n, capacity, max_n] int32
    counts: jax.Array  # [max_n, capacity] int32
    overflow: jax.Array  # bool scalar

    @classmethod
    def empty(cls, max_n: int = 4, capacity: int = 1 << 16) -> "NGramState":
        """Empty tables for orders ``1..max_n`` with room for ``capacity`` distinct n-grams each."""
        from jaxmetrics._validation import check_int

        max_n = check_int(max_n, "max_n", minimum=1)
        capacity = check_int(capacity, "capacity", minimum=1)
        return cls(jnp.full((max_n, capacity, max_n), _SENT, jnp.int32),
                   jnp.zeros((max_n, capacity), jnp.int32), jnp.zeros((), bool))

    @property
    def max_n(self) -> int:
        return int(self.keys.shape[0])

    @property
    def capacity(self) -> int:
        return int(self.keys.shape[1])

    def _fold(self, keys, counts, what: str) -> "NGramState":
        k, c, groups = _merge_tables(keys, counts, self.capacity)
        over = jnp.any(groups > self.capacity)
        if _concrete(over) and bool(over):
            raise ValueError(f"{what}: n-gram table capacity {self.capacity} exceeded "
                             f"({int(jnp.max(groups))} distinct n-grams); create the state with a "
                             f"larger capacity")
        return self.replace(keys=k, counts=c, overflow=self.overflow | over)

    def update(self, ids, lengths) -> "NGramState":
        """Count the n-grams of a padded batch ``ids [B, T]`` (token ``t`` of row ``b`` is real
        iff ``t < lengths[b]``)."""
        ids, lengths = jnp.asarray(ids), jnp.asarray(lengths)
        if ids.ndim != 2 or not jnp.issubdtype(ids.dtype, jnp.integer):
            raise ValueError(f"ids: expected an integer array [B, T], got {ids.dtype} {ids.shape}")
        if lengths.shape != ids.shape[:1]:
            raise ValueError(f"lengths: expected shape [{ids.shape[0]}], got {lengths.shape}")
        if _concrete(ids, lengths):
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

    def compute(self) -> dict:
        """Per order ``n = 1..max_n`` (arrays ``[max_n]``): ``unique``, ``total``, ``distinct``
        (``unique / total``, 0 when there are no n-grams) and ``entropy`` (nats)."""
        self._check()
        c = np.asarray(self.counts, np.int64)
        unique = (c > 0).sum(axis=1)
        total = c.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = c / np.maximum(total, 1)[:, None]
            ent = -np.sum(np.where(c > 0, p * np.log(np.where(c > 0, p, 1.0)), 0.0), axis=1)
        return {"unique": unique, "total": total,
                "distinct": np.where(total > 0, unique / np.maximum(total, 1), 0.0), "entropy": ent}

    def zipf(self, *, max_num: int = 5000, stretch_factor: float = 15.0) -> float:
        """Zipf coefficient of the unigram counts (:func:`jaxmetrics.diversity.stats.zipf_stats`
        on the pooled tokens; raises with fewer than 3 distinct tokens)."""
        from jaxmetrics.diversity.stats import zipf_stats

        self._check()
        c = np.asarray(self.counts[0], np.int64)
        n = int(c.sum())
        # zipf_stats depends only on the multiset of counts: rebuild a token stream of slot ids,
        # padded to a power of two so that streams of similar size share one compilation
        width = 1 << max(4, (max(n, 1) - 1).bit_length())
        stream = np.zeros((1, width), np.int32)
        stream[0, :n] = np.repeat(np.arange(c.size, dtype=np.int32), c)
        coef, k = zipf_stats(jnp.asarray(stream), jnp.asarray([n], jnp.int32), max_num=int(max_num),
                             stretch_factor=float(stretch_factor))
        if int(k) < 2:
            raise ValueError("state: the Zipf fit needs at least 3 distinct tokens "
                             f"(got {int(k)} regression point(s))")
        return float(coef)


# ---------------------------------------------------------------------------------------------
# IMPAR precision against a fixed reference manifold


class IMPARState(struct.PyTreeNode):
    """IMPAR precision (Kynkäänniemi et al. 2019) of a candidate stream against a fixed
    reference manifold: ``precision = Σ_j f(c_j, S_r) / #candidates`` with ``f(x, S_r) = 1`` iff
    ``x`` lies in some k-NN hypersphere of the references.

    The reference hyperspheres are computed once in :meth:`empty`
    (:func:`~jaxmetrics.mark_evaluate.hyperspheres.knn_hyperspheres`); each batch adds its
    membership count (:func:`~jaxmetrics.mark_evaluate.hyperspheres.cross_membership`). IMPAR
    *recall* needs the candidates' own manifold and is not decomposable: use
    :class:`MarkEvaluateState` for it.

    Examples:
        >>> from jaxmetrics.streaming import IMPARState
        >>> import numpy as np
        >>> ref = np.random.default_rng(0).normal(size=(20, 3)).astype("float32")
        >>> s = IMPARState.empty(ref, k=3).update(ref[:5]).update(ref[5:] + 100.0)
        >>> round(float(s.compute()), 4)
        0.25
    """

    references: jax.Array  # [n, d], shifted by their mean
    radii_sq: jax.Array  # [n]
    shift: jax.Array  # [d]
    inside: jax.Array
    count: jax.Array

    @classmethod
    def empty(cls, references, k: int = 3) -> "IMPARState":
        """Hyperspheres of ``references [n, d]`` with neighbourhood size ``k`` (``1 <= k < n``)."""
        from jaxmetrics._validation import as_2d_features, check_int
        from jaxmetrics.mark_evaluate.hyperspheres import knn_hyperspheres

        ref = as_2d_features(references, "references")
        k = check_int(k, "k", minimum=1)
        if k >= ref.shape[0]:
            raise ValueError(f"k: must be < the number of references ({ref.shape[0]}), got {k}")
        ref = jnp.asarray(ref, jnp.promote_types(ref.dtype, jnp.float32))
        shift = jnp.mean(ref, axis=0)  # same translation as mark_evaluate_stats (conditioning)
        ref = ref - shift
        h = knn_hyperspheres(ref, k)
        return cls(ref, h.radii_sq, shift, jnp.zeros((), _int_dtype()), jnp.zeros((), _int_dtype()))

    def update(self, candidates, mask=None) -> "IMPARState":
        """Fold in ``candidates [m, d]`` (rows with ``mask`` False are ignored)."""
        from jaxmetrics.mark_evaluate.hyperspheres import cross_membership

        c = jnp.asarray(candidates)
        if c.ndim != 2 or c.shape[1] != self.references.shape[1]:
            raise ValueError(f"candidates: expected shape [m, {self.references.shape[1]}], got {c.shape}")
        if _concrete(c) and not bool(jnp.all(jnp.isfinite(c))):
            raise ValueError("candidates: contains NaN or infinite values")
        c = c.astype(self.references.dtype) - self.shift
        m = jnp.ones(c.shape[0], bool) if mask is None else jnp.asarray(mask, bool)
        if m.shape != (c.shape[0],):
            raise ValueError(f"mask: expected shape [{c.shape[0]}], got {m.shape}")
        cm = cross_membership(self.references, self.radii_sq, c, jnp.zeros(c.shape[0], c.dtype))
        dt = self.count.dtype
        return self.replace(inside=self.inside + jnp.sum(cm.b_in_a & m).astype(dt),
                            count=self.count + jnp.sum(m).astype(dt))

    def merge(self, other: "IMPARState") -> "IMPARState":
        """Add the counts of two states built on the same reference manifold."""
        if not isinstance(other, IMPARState):
            raise TypeError(f"other: cannot merge {type(other).__name__} into IMPARState")
        if other.references.shape != self.references.shape:
            raise ValueError("other: states were built on different reference sets")
        if _concrete(self.radii_sq, other.radii_sq) and not (
                bool(jnp.all(self.radii_sq == other.radii_sq))
                and bool(jnp.all(self.references == other.references))):
            raise ValueError("other: states were built on different reference sets")
        return self.replace(inside=self.inside + other.inside, count=self.count + other.count)

    def compute(self) -> jax.Array:
        """Precision ``inside / count``; raises if no candidate was added."""
        n = int(self.count)
        if n <= 0:
            raise ValueError("state: no candidates were added; precision is undefined")
        return jnp.asarray(int(self.inside) / n)


# ---------------------------------------------------------------------------------------------
# non-decomposable metrics: fixed-capacity feature buffers


class _PairBuffer(struct.PyTreeNode):
    """Two :class:`FeatureBuffer` s (``first``, ``second``) of the same capacity and dimension."""

    first: FeatureBuffer
    second: FeatureBuffer

    @classmethod
    def empty(cls, capacity: int, dim: int, dtype=jnp.float32):
        """Room for ``capacity`` rows of ``dim`` features on each side."""
        return cls(FeatureBuffer.empty(capacity, dim, dtype), FeatureBuffer.empty(capacity, dim, dtype))

    def _update(self, first, second, first_mask, second_mask):
        a, b = self.first, self.second
        if first is not None:
            a = a.update(first, first_mask)
        if second is not None:
            b = b.update(second, second_mask)
        return self.replace(first=a, second=b)

    def merge(self, other):
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


class MauveState(_PairBuffer):
    """Buffered features of P (model text) and Q (human text) for MAUVE.

    MAUVE quantizes the union of both sets, so it is not decomposable: features are kept in
    fixed-capacity buffers and :meth:`compute` calls :func:`jaxmetrics.mauve.compute_mauve`.

    Examples:
        >>> from jaxmetrics.streaming import MauveState
        >>> import numpy as np
        >>> x = np.random.default_rng(0).normal(size=(40, 4)).astype("float32")
        >>> s = MauveState.empty(capacity=64, dim=4).update(p_features=x[:20], q_features=x[:20])
        >>> s = s.merge(MauveState.empty(64, 4).update(p_features=x[20:], q_features=x[20:]))
        >>> s.compute(num_buckets=4).mauve
        1.0
    """

    def update(self, p_features=None, q_features=None, *, p_mask=None, q_mask=None) -> "MauveState":
        """Append ``p_features [n, d]`` and/or ``q_features [m, d]``."""
        return self._update(p_features, q_features, p_mask, q_mask)

    def compute(self, **kwargs):
        """:func:`jaxmetrics.mauve.compute_mauve` on the buffered features (``kwargs`` passed on)."""
        from jaxmetrics.mauve.compute import compute_mauve

        p, q = self._values(("p_features", "q_features"))
        return compute_mauve(p_features=p, q_features=q, **kwargs)


class MarkEvaluateState(_PairBuffer):
    """Buffered reference and candidate features for Mark-Evaluate and IMPAR (precision and
    recall); :meth:`compute` calls :func:`jaxmetrics.mark_evaluate.mark_evaluate_scores`.

    Examples:
        >>> from jaxmetrics.streaming import MarkEvaluateState
        >>> import numpy as np
        >>> x = np.random.default_rng(0).normal(size=(30, 4)).astype("float32")
        >>> s = MarkEvaluateState.empty(32, 4).update(references=x, candidates=x)
        >>> float(s.compute(k=3)["petersen"]), [float(v) for v in s.impar(k=3)]
        (1.0, [1.0, 1.0])
    """

    def update(self, references=None, candidates=None, *, references_mask=None,
               candidates_mask=None) -> "MarkEvaluateState":
        """Append ``references [n, d]`` and/or ``candidates [m, d]``."""
        return self._update(references, candidates, references_mask, candidates_mask)

    def compute(self, k: int = 3, **kwargs) -> dict:
        """:func:`jaxmetrics.mark_evaluate.mark_evaluate_scores` of the buffered sets."""
        from jaxmetrics.mark_evaluate.estimators import mark_evaluate_scores

        r, c = self._values(("references", "candidates"))
        return mark_evaluate_scores(r, c, k, **kwargs)

    def impar(self, k: int = 3, **kwargs):
        """:func:`jaxmetrics.mark_evaluate.baselines.improved_precision_recall` ``(P, R)``."""
        from jaxmetrics.mark_evaluate.baselines import improved_precision_recall

        r, c = self._values(("references", "candidates"))
        return improved_precision_recall(r, c, k, **kwargs)


class PRDState(_PairBuffer):
    """Buffered reference and candidate features for PRD (Sajjadi et al. 2018), which clusters
    their union; :meth:`compute` calls :func:`jaxmetrics.mark_evaluate.baselines.prd`.

    Examples:
        >>> from jaxmetrics.streaming import PRDState
        >>> import numpy as np, jax
        >>> x = np.random.default_rng(0).normal(size=(40, 3)).astype("float32")
        >>> s = PRDState.empty(40, 3).update(references=x, candidates=x)
        >>> p, r = s.compute(jax.random.key(0), num_clusters=4, num_runs=2, num_angles=11)
        >>> p.shape
        (11,)
    """

    def update(self, references=None, candidates=None, *, references_mask=None,
               candidates_mask=None) -> "PRDState":
        """Append ``references [n, d]`` and/or ``candidates [m, d]``."""
        return self._update(references, candidates, references_mask, candidates_mask)

    def compute(self, key=None, **kwargs):
        """``(precision [num_angles], recall [num_angles])`` of the buffered sets."""
        from jaxmetrics.mark_evaluate.baselines import prd

        r, c = self._values(("references", "candidates"))
        return prd(r, c, key, **kwargs)


class FIDState(struct.PyTreeNode):
    """Fréchet distance between Gaussians fitted to reference and candidate features, from
    running moments (:class:`GaussianMoments`, merged with Chan et al.'s exact formula), so no
    features are kept. ``compute`` calls
    :func:`jaxmetrics.mark_evaluate.baselines.frechet_distance` in float64.

    Examples:
        >>> from jaxmetrics.streaming import FIDState
        >>> import numpy as np
        >>> x = np.random.default_rng(0).normal(size=(50, 3))
        >>> s = FIDState.empty(3).update(references=x[:20]).update(references=x[20:], candidates=x)
        >>> round(float(s.compute()), 6)
        0.0
    """

    references: GaussianMoments
    candidates: GaussianMoments

    @classmethod
    def empty(cls, dim: int, dtype=None) -> "FIDState":
        """Zero moments of ``dim``-dimensional features (float32, float64 under x64)."""
        from jaxmetrics._validation import check_int

        dim = check_int(dim, "dim", minimum=1)
        return cls(GaussianMoments.empty(dim, dtype), GaussianMoments.empty(dim, dtype))

    def update(self, references=None, candidates=None) -> "FIDState":
        """Fold in ``references [n, d]`` and/or ``candidates [m, d]``."""
        r, c = self.references, self.candidates
        d = r.mean.shape[0]
        for x, nm in ((references, "references"), (candidates, "candidates")):
            if x is not None and (jnp.ndim(x) != 2 or jnp.shape(x)[1] != d or jnp.shape(x)[0] == 0):
                raise ValueError(f"{nm}: expected a non-empty array [n, {d}], got shape {jnp.shape(x)}")
        if references is not None:
            r = r.update(references)
        if candidates is not None:
            c = c.update(candidates)
        return self.replace(references=r, candidates=c)

    def merge(self, other: "FIDState") -> "FIDState":
        """Pairwise-merged moments of both sides."""
        if not isinstance(other, FIDState):
            raise TypeError(f"other: cannot merge {type(other).__name__} into FIDState")
        return self.replace(references=self.references.merge(other.references),
                            candidates=self.candidates.merge(other.candidates))

    def compute(self) -> jax.Array:
        """FID ``||μ_r - μ_c||² + Tr Σ_r + Tr Σ_c - 2 Tr (Σ_r Σ_c)^{1/2}`` (ddof = 1 covariances)."""
        from jaxmetrics.mark_evaluate.baselines import frechet_distance

        for g, nm in ((self.references, "references"), (self.candidates, "candidates")):
            if float(g.n) < 2:
                raise ValueError(f"{nm}: need at least 2 samples for a covariance, got {int(g.n)}")
        with jax.enable_x64(True):
            args = [np.asarray(a, np.float64) for a in (self.references.mean, self.references.covariance(),
                                                        self.candidates.mean, self.candidates.covariance())]
            return frechet_distance(*(jnp.asarray(a) for a in args))
