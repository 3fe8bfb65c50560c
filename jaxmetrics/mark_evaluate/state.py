"""States of the Mark-Evaluate family: IMPAR precision, Mark-Evaluate, PRD and FID.

* :class:`IMPARState` — IMPAR precision of a candidate stream against a fixed reference
  manifold: sums of memberships and counts (decomposable).
* :class:`MarkEvaluateState`, :class:`PRDState` — the metrics need every sample of both sets
  (k-NN hyperspheres, a clustering of the union), so they keep fixed-capacity feature buffers
  (:class:`jaxmetrics.state.PairBuffer`) and compute with the array functions.
* :class:`FIDState` — running Gaussian moments of both sets (:class:`jaxmetrics.state.GaussianMoments`).

Every state follows the CLU protocol ``empty / update / merge / compute``; ``update`` takes
``references=`` / ``candidates=`` keyword-only.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxmetrics._ops import index_dtype
from jaxmetrics._validation import check_features, check_int, check_mask, concrete_value
from jaxmetrics.mark_evaluate.baselines import PRDCurve, PrecisionRecall
from jaxmetrics.mark_evaluate.scores import MarkEvaluateScores
from jaxmetrics.state import GaussianMoments, PairBuffer

__all__ = ["IMPARState", "MarkEvaluateState", "PRDState", "FIDState"]


class IMPARState(struct.PyTreeNode):
    """IMPAR precision (Kynkäänniemi et al. 2019) of a candidate stream against a fixed
    reference manifold: ``precision = Σ_j f(c_j, S_r) / #candidates`` with ``f(x, S_r) = 1`` iff
    ``x`` lies in some k-NN hypersphere of the references.

    The reference hyperspheres are computed once in :meth:`empty`
    (:func:`~jaxmetrics.mark_evaluate.knn_hyperspheres`); each batch adds its membership count
    (:func:`~jaxmetrics.mark_evaluate.cross_membership`). IMPAR *recall* needs the candidates'
    own manifold and is not decomposable: use :class:`MarkEvaluateState` for it.

    Attributes:
      references: ``[n, d]`` reference features, shifted by their mean.
      radii_sq: ``[n]`` squared k-NN radii of the references.
      shift: ``[d]`` the reference mean (subtracted from every candidate batch).
      inside: number of candidates inside the reference manifold so far.
      count: number of candidates so far.

    Examples:
        >>> import numpy as np
        >>> ref = np.random.default_rng(0).normal(size=(20, 3)).astype("float32")
        >>> s = IMPARState.empty(references=ref, k=3)
        >>> s = s.update(candidates=ref[:5]).update(candidates=ref[5:] + 100.0)
        >>> round(float(s.compute()), 4)
        0.25
    """

    references: jax.Array
    radii_sq: jax.Array
    shift: jax.Array
    inside: jax.Array
    count: jax.Array

    @classmethod
    def empty(cls, *, references: Any, k: int = 3) -> "IMPARState":
        """Hyperspheres of ``references [n, d]`` with neighbourhood size ``k`` (``1 <= k < n``)."""
        from jaxmetrics.mark_evaluate.hyperspheres import knn_hyperspheres

        ref = check_features(references, "references")
        k = check_int(k, "k", minimum=1)
        if k >= ref.shape[0]:
            raise ValueError(f"k: must be < the number of references ({ref.shape[0]}), got {k}")
        ref = jnp.asarray(ref, jnp.promote_types(ref.dtype, jnp.float32))
        shift = jnp.mean(ref, axis=0)  # same translation as mark_evaluate_stats (conditioning)
        ref = ref - shift
        h = knn_hyperspheres(ref, k)
        zero = jnp.zeros((), index_dtype())
        return cls(references=ref, radii_sq=h.radii_sq, shift=shift, inside=zero, count=zero)

    def update(self, *, candidates: Any, candidates_mask: Any = None) -> "IMPARState":
        """Fold in ``candidates [m, d]`` (rows where ``candidates_mask [m]`` is False are ignored)."""
        from jaxmetrics.mark_evaluate.hyperspheres import cross_membership

        c = jnp.asarray(check_features(candidates, "candidates", dim=self.references.shape[1]))
        m = check_mask(candidates_mask, (c.shape[0],), "candidates_mask")
        m = jnp.ones(c.shape[0], bool) if m is None else jnp.asarray(m)
        c = c.astype(self.references.dtype) - self.shift
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
        same = concrete_value(lambda a, b, c, d: jnp.all(a == b) & jnp.all(c == d), self.radii_sq,
                              other.radii_sq, self.references, other.references)
        if same is not None and not bool(same):
            raise ValueError("other: states were built on different reference sets")
        return self.replace(inside=self.inside + other.inside, count=self.count + other.count)

    def compute(self) -> jax.Array:
        """Precision ``inside / count`` (0-d array); raises if no candidate was added."""
        n = int(self.count)
        if n <= 0:
            raise ValueError("state: no candidates were added; precision is undefined")
        return jnp.asarray(int(self.inside) / n)


class _ReferenceCandidateBuffer(PairBuffer):
    """A :class:`~jaxmetrics.state.PairBuffer` whose sides are ``references`` (``first``) and
    ``candidates`` (``second``): the buffers of the states that need every sample."""

    @classmethod
    def empty(cls, capacity: int, dim: int, dtype: Any = jnp.float32) -> "_ReferenceCandidateBuffer":
        """Room for ``capacity`` rows of ``dim`` features on each side."""
        return super().empty(capacity, dim, dtype)

    def update(self, *, references: Any = None, candidates: Any = None, references_mask: Any = None,
               candidates_mask: Any = None) -> "_ReferenceCandidateBuffer":
        """Append ``references [n, d]`` and/or ``candidates [m, d]`` (masked rows skipped)."""
        return self._update(references, candidates, references_mask, candidates_mask)

    def merge(self, other: "_ReferenceCandidateBuffer") -> "_ReferenceCandidateBuffer":
        """Rows of ``self`` then rows of ``other`` on each side (capacity checked; same type)."""
        return super().merge(other)


class MarkEvaluateState(_ReferenceCandidateBuffer):
    """Buffered reference and candidate features for Mark-Evaluate and IMPAR (precision and
    recall); :meth:`compute` calls :func:`jaxmetrics.mark_evaluate.mark_evaluate_scores` and
    :meth:`impar` :func:`jaxmetrics.mark_evaluate.improved_precision_recall`.

    ``MarkEvaluateState.empty(capacity, dim)`` holds up to ``capacity`` rows of ``dim``
    features on each side; ``merge`` appends the rows of another state.

    Attributes:
      first: :class:`~jaxmetrics.state.FeatureBuffer` of the references.
      second: :class:`~jaxmetrics.state.FeatureBuffer` of the candidates.

    Examples:
        >>> import numpy as np
        >>> x = np.random.default_rng(0).normal(size=(30, 4)).astype("float32")
        >>> s = MarkEvaluateState.empty(32, 4).update(references=x, candidates=x)
        >>> s.compute(k=3)
        MarkEvaluateScores(petersen=1, schnabel_quality=1, schnabel_diversity=1, capture=1)
        >>> s.impar(k=3)
        PrecisionRecall(precision=1, recall=1)
    """

    def compute(self, k: int = 3, **kwargs: Any) -> MarkEvaluateScores:
        """:func:`jaxmetrics.mark_evaluate.mark_evaluate_scores` of the buffered sets
        (``kwargs``: ``literal``, ``occasions``, ``block_size``, ``mesh``)."""
        from jaxmetrics.mark_evaluate.scores import mark_evaluate_scores

        r, c = self._values(("references", "candidates"))
        return mark_evaluate_scores(references=r, candidates=c, k=k, **kwargs)

    def impar(self, k: int = 3, **kwargs: Any) -> PrecisionRecall:
        """:func:`jaxmetrics.mark_evaluate.improved_precision_recall` of the buffered sets
        (``kwargs``: ``block_size``)."""
        from jaxmetrics.mark_evaluate.baselines import improved_precision_recall

        r, c = self._values(("references", "candidates"))
        return improved_precision_recall(references=r, candidates=c, k=k, **kwargs)


class PRDState(_ReferenceCandidateBuffer):
    """Buffered reference and candidate features for PRD (Sajjadi et al. 2018), which clusters
    their union; :meth:`compute` calls :func:`jaxmetrics.mark_evaluate.prd`.

    Attributes:
      first: :class:`~jaxmetrics.state.FeatureBuffer` of the references.
      second: :class:`~jaxmetrics.state.FeatureBuffer` of the candidates.

    Examples:
        >>> import numpy as np, jax
        >>> x = np.random.default_rng(0).normal(size=(40, 3)).astype("float32")
        >>> s = PRDState.empty(40, 3).update(references=x, candidates=x)
        >>> s.compute(key=jax.random.key(0), num_buckets=4, num_runs=2, num_angles=11)
        PRDCurve(precision=f32[11], recall=f32[11])
    """

    def compute(self, *, key: jax.Array, **kwargs: Any) -> PRDCurve:
        """:func:`jaxmetrics.mark_evaluate.prd` of the buffered sets (``key`` required;
        ``kwargs``: ``num_buckets``, ``num_runs``, ``num_angles``, ``num_redo``, ``max_iter``,
        ``enforce_balance``)."""
        from jaxmetrics.mark_evaluate.baselines import prd

        r, c = self._values(("references", "candidates"))
        return prd(references=r, candidates=c, key=key, **kwargs)


class FIDState(struct.PyTreeNode):
    """Fréchet distance between Gaussians fitted to reference and candidate features, from
    running moments (:class:`~jaxmetrics.state.GaussianMoments`, merged with Chan et al.'s
    exact formula), so no features are kept. :meth:`compute` calls
    :func:`jaxmetrics.mark_evaluate.frechet_distance` in float64.

    Attributes:
      references: :class:`~jaxmetrics.state.GaussianMoments` of the references.
      candidates: :class:`~jaxmetrics.state.GaussianMoments` of the candidates.

    Examples:
        >>> import numpy as np
        >>> x = np.random.default_rng(0).normal(size=(50, 3))
        >>> s = FIDState.empty(3).update(references=x[:20]).update(references=x[20:], candidates=x)
        >>> round(float(s.compute()), 6)
        0.0
    """

    references: GaussianMoments
    candidates: GaussianMoments

    @classmethod
    def empty(cls, dim: int, dtype: Any = None) -> "FIDState":
        """Zero moments of ``dim``-dimensional features (float32, float64 under x64)."""
        dim = check_int(dim, "dim", minimum=1)
        return cls(references=GaussianMoments.empty(dim, dtype), candidates=GaussianMoments.empty(dim, dtype))

    def update(self, *, references: Any = None, candidates: Any = None) -> "FIDState":
        """Fold in ``references [n, d]`` and/or ``candidates [m, d]``."""
        r, c = self.references, self.candidates
        d = r.mean.shape[0]
        if references is not None:
            r = r.update(check_features(references, "references", dim=d))
        if candidates is not None:
            c = c.update(check_features(candidates, "candidates", dim=d))
        return self.replace(references=r, candidates=c)

    def merge(self, other: "FIDState") -> "FIDState":
        """Pairwise-merged moments of both sides."""
        if not isinstance(other, FIDState):
            raise TypeError(f"other: cannot merge {type(other).__name__} into FIDState")
        return self.replace(references=self.references.merge(other.references),
                            candidates=self.candidates.merge(other.candidates))

    def compute(self) -> jax.Array:
        """FID ``||μ_r - μ_c||² + Tr Σ_r + Tr Σ_c - 2 Tr (Σ_r Σ_c)^{1/2}`` (ddof = 1 covariances),
        a 0-d float64 array."""
        from jaxmetrics.mark_evaluate.baselines import frechet_distance

        for g, nm in ((self.references, "references"), (self.candidates, "candidates")):
            if float(g.n) < 2:
                raise ValueError(f"{nm}: need at least 2 samples for a covariance, got {int(g.n)}")
        with jax.enable_x64(True):
            args = [np.asarray(a, np.float64) for a in (self.references.mean, self.references.covariance(),
                                                        self.candidates.mean, self.candidates.covariance())]
            return frechet_distance(*(jnp.asarray(a) for a in args))
