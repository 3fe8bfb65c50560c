"""Mergeable state of the similarity family: corpus means of per-pair P, R and F1.

:class:`SimilarityState` holds sums and a pair count (never means), so states of batches,
devices or hosts merge by addition (:meth:`~jaxmetrics.state.SumState.merge`,
:func:`jaxmetrics.state.merge_all`) and the result does not depend on how the pairs were split.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxmetrics._ops import accumulator_dtype, index_dtype, is_concrete
from jaxmetrics._validation import check_choice, check_int, check_positive
from jaxmetrics.similarity.kernels import BACKENDS, METRICS, PRF
from jaxmetrics.state import SumState

__all__ = ["SimilarityState"]

_OPTION_KEYS = ("temperature", "num_iterations", "normalize", "backend", "bert_score_compat")


class SimilarityState(SumState):
    """Corpus means of pairwise similarity scores (BERTScore or the normalised family of
    :mod:`jaxmetrics.similarity.kernels`: cosine, CKA, RWMD, TWMD, TRWMD, ...).

    Holds ``Σ_b P_b``, ``Σ_b R_b``, ``Σ_b F_b`` and the pair count ``N``; :meth:`compute`
    returns the means ``Σ P / N`` etc. (the corpus score reported by ``bert_score``).
    :meth:`update` scores a batch with
    :func:`~jaxmetrics.similarity.greedy.batch_bertscore` (``metric='bertscore'``) or
    :func:`~jaxmetrics.similarity.kernels.batch_similarity`; :meth:`add` folds in per-pair
    scores computed elsewhere. The metric and its settings are static: states with different
    settings refuse to merge.

    Attributes:
      p_sum: sum of the per-pair precisions (accumulator dtype).
      r_sum: sum of the per-pair recalls.
      f_sum: sum of the per-pair F1 scores.
      count: number of pairs folded in.
      metric: ``'bertscore'`` or one of :data:`~jaxmetrics.similarity.METRICS` (static).
      options: ``(temperature, num_iterations, normalize, backend, bert_score_compat)`` (static).

    Examples:
        >>> from jaxmetrics.similarity.state import SimilarityState
        >>> import jax, jax.numpy as jnp
        >>> x = jax.random.normal(jax.random.key(0), (2, 3, 4)); m = jnp.ones((2, 3), bool)
        >>> s = SimilarityState.empty("bertscore").update(candidates=x, references=x,
        ...                                               candidates_mask=m, references_mask=m)
        >>> s.compute()
        PRF(precision=1, recall=1, f1=1)
    """

    p_sum: jax.Array
    r_sum: jax.Array
    f_sum: jax.Array
    count: jax.Array
    metric: str = struct.field(pytree_node=False, default="bertscore")
    options: tuple = struct.field(pytree_node=False, default=())

    @classmethod
    def empty(cls, metric: str = "bertscore", *, temperature: float = 0.1, num_iterations: int = 1,
              normalize: bool = True, backend: str = "log", bert_score_compat: bool = False) -> "SimilarityState":
        """Zero sums for ``metric`` and its settings (the identity of :meth:`merge`).

        Args:
          metric: ``'bertscore'`` or one of :data:`~jaxmetrics.similarity.METRICS`.
          temperature: T > 0 of the tempered metrics.
          num_iterations: Sinkhorn iterations of ``twmd`` (>= 1).
          normalize: the family normalisation (not BERTScore).
          backend: ``'log'`` or ``'ott'`` Sinkhorn.
          bert_score_compat: BERTScore in ``bert_score``'s conventions.

        Returns:
          an empty :class:`SimilarityState`.
        """
        check_choice(metric, "metric", ("bertscore",) + METRICS)
        check_choice(backend, "backend", BACKENDS)
        temperature = check_positive(temperature, "temperature")
        num_iterations = check_int(num_iterations, "num_iterations", minimum=1)
        opts = (temperature, num_iterations, bool(normalize), backend, bool(bert_score_compat))
        z = jnp.zeros((), accumulator_dtype())
        return cls(z, z, z, jnp.zeros((), index_dtype()), metric, opts)

    def update(self, *, candidates: Any, references: Any, candidates_mask: Any,
               references_mask: Any, candidates_weights: Any = None,
               references_weights: Any = None, pair_mask: Any = None) -> "SimilarityState":
        """Score ``B`` pairs and fold them in (runs inside ``jit``).

        Args:
          candidates: ``[B, L1, D]`` candidate token embeddings.
          references: ``[B, L2, D]`` reference token embeddings.
          candidates_mask, references_mask: bool ``[B, L1]`` / ``[B, L2]``.
          candidates_weights, references_weights: optional token weights (e.g. idf).
          pair_mask: optional bool ``[B]``, False for padding pairs (not counted).

        Returns:
          the updated state.
        """
        o = dict(zip(_OPTION_KEYS, self.options))
        cand, ref = jnp.asarray(candidates), jnp.asarray(references)
        cmask, rmask = jnp.asarray(candidates_mask, bool), jnp.asarray(references_mask, bool)
        if cand.ndim != 3 or ref.ndim != 3 or cand.shape[0] != ref.shape[0]:
            raise ValueError(f"candidates: expected [B, L1, D] and references [B, L2, D] embeddings, "
                             f"got {cand.shape} and {ref.shape}")
        if self.metric == "bertscore":
            from jaxmetrics.similarity.greedy import batch_bertscore

            prf = batch_bertscore(candidates=cand, references=ref, candidates_mask=cmask,
                                  references_mask=rmask, candidates_weights=candidates_weights,
                                  references_weights=references_weights, bert_score_compat=o["bert_score_compat"])
        else:
            from jaxmetrics.similarity.kernels import batch_similarity

            prf = batch_similarity(candidates=cand, references=ref, candidates_mask=cmask,
                                   references_mask=rmask, metric=self.metric,
                                   temperature=jnp.asarray(o["temperature"], cand.dtype),
                                   num_iterations=o["num_iterations"],
                                   candidates_weights=candidates_weights,
                                   references_weights=references_weights,
                                   normalize=o["normalize"], backend=o["backend"])
        return self.add(prf, pair_mask)

    def add(self, scores: PRF, pair_mask: Any = None) -> "SimilarityState":
        """Fold in per-pair scores computed elsewhere.

        Args:
          scores: :class:`~jaxmetrics.similarity.PRF` of ``[B]`` arrays.
          pair_mask: optional bool ``[B]``, False for pairs not to count.

        Returns:
          the updated state.
        """
        if not isinstance(scores, PRF):
            raise TypeError(f"scores: expected a PRF, got {type(scores).__name__}")
        p, r, f = (jnp.asarray(v, self.p_sum.dtype) for v in scores)
        m = jnp.ones(p.shape, bool) if pair_mask is None else jnp.asarray(pair_mask, bool)
        if m.shape != p.shape:
            raise ValueError(f"pair_mask: expected shape {p.shape}, got {m.shape}")

        def s(v):
            return jnp.sum(jnp.where(m, v, 0))

        return self.replace(p_sum=self.p_sum + s(p), r_sum=self.r_sum + s(r), f_sum=self.f_sum + s(f),
                            count=self.count + jnp.sum(m).astype(self.count.dtype))

    def compute(self) -> PRF:
        """Corpus means ``Σ P / N``, ``Σ R / N``, ``Σ F / N`` as a :class:`~jaxmetrics.similarity.PRF`
        of 0-d arrays; raises ``ValueError`` (outside ``jit``) if no pair was added."""
        if is_concrete(self.count) and int(self.count) <= 0:
            raise ValueError("state: no pairs were added; the corpus mean is undefined")
        n = self.count.astype(self.p_sum.dtype)
        return PRF(self.p_sum / n, self.r_sum / n, self.f_sum / n)
