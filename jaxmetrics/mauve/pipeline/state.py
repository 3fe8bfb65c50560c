"""The state of MAUVE: fixed-capacity feature buffers of P and Q.

MAUVE quantizes the union of both feature sets, so it is not decomposable: a state keeps the
feature rows themselves (:class:`jaxmetrics.state.PairBuffer`) and :meth:`MauveState.compute`
runs :func:`jaxmetrics.mauve.compute_mauve` on them.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax.numpy as jnp

from jaxmetrics.state import PairBuffer

if TYPE_CHECKING:  # pragma: no cover
    from jaxmetrics.mauve.pipeline.compute import MauveOutput

__all__ = ["MauveState"]


class MauveState(PairBuffer):
    """Buffered features of P (human text, the references) and Q (model text, the candidates).

    ``references`` are the human-text features (P), ``candidates`` the model-text features (Q),
    keyword-only as everywhere in the library. The rows of P are held in
    ``first`` and those of Q in ``second`` (:class:`~jaxmetrics.state.FeatureBuffer` s of
    ``capacity`` rows each); :meth:`update` appends rows and runs under ``jax.jit``,
    :meth:`merge` concatenates the rows of two states (batches, devices, hosts), and
    :meth:`compute` runs :func:`~jaxmetrics.mauve.compute_mauve` on all buffered rows.

    Examples:
        >>> from jaxmetrics.mauve import MauveState
        >>> import numpy as np
        >>> x = np.random.default_rng(0).normal(size=(40, 4)).astype("float32")
        >>> s = MauveState.empty(capacity=64, dim=4).update(references=x[:20], candidates=x[:20])
        >>> s = s.merge(MauveState.empty(64, 4).update(references=x[20:], candidates=x[20:]))
        >>> s.compute(num_buckets=4).mauve
        1.0
    """

    @classmethod
    def empty(cls, capacity: int, dim: int, dtype: Any = jnp.float32) -> "MauveState":
        """Empty buffers with room for ``capacity`` rows of ``dim`` features on each side."""
        return super().empty(capacity, dim, dtype)

    def update(self, *, references: Any = None, candidates: Any = None, references_mask: Any = None,
               candidates_mask: Any = None) -> "MauveState":
        """Append ``references [n, d]`` (human text, P) and/or ``candidates [m, d]`` (model text, Q).

        ``references_mask [n]`` / ``candidates_mask [m]`` (optional, boolean) keep only the rows
        where they are true.
        """
        return self._update(references, candidates, references_mask, candidates_mask)

    def merge(self, other: "MauveState") -> "MauveState":
        """The rows of ``self`` then those of ``other`` on each side (capacity checked)."""
        return super().merge(other)

    def compute(self, **compute_mauve_kwargs: Any) -> "MauveOutput":
        """:func:`jaxmetrics.mauve.compute_mauve` on the buffered features (keyword arguments passed on)."""
        from jaxmetrics.mauve.pipeline.compute import compute_mauve

        p, q = self._values(("references", "candidates"))
        return compute_mauve(p_features=p, q_features=q, **compute_mauve_kwargs)
