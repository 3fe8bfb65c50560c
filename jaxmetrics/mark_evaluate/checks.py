"""Argument checks shared by the Mark-Evaluate family's public functions.

:func:`check_feature_pair` checks the two feature sets (and ``k``) of every estimator and
baseline; :func:`check_occasions` the ME-CAPTURE set-up. Errors name the argument.
"""
from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxmetrics._validation import check_choice, check_features, check_int
from jaxmetrics.results import Result

__all__ = ["FeaturePair", "OCCASIONS", "check_feature_pair", "check_occasions"]

#: The ME-CAPTURE set-ups: one occasion per sample (the paper) or the two Petersen visits.
OCCASIONS = ("samples", "visits")


class FeaturePair(Result):
    """Reference and candidate features checked by :func:`check_feature_pair`.

    Attributes:
      references: ``[n, d]`` JAX array.
      candidates: ``[m, d]`` JAX array of the same float dtype.

    Examples:
      >>> import numpy as np
      >>> check_feature_pair(references=np.zeros((3, 2), np.float32), candidates=np.ones((4, 2)), k=1)
      FeaturePair(references=f32[3,2], candidates=f32[4,2])
    """

    references: jax.Array
    candidates: jax.Array


def check_feature_pair(*, references: Any, candidates: Any, k: Any) -> FeaturePair:
    """Both feature sets as float JAX arrays of one dtype, and ``1 <= k < min(n, m)``.

    Raises ``ValueError`` / ``TypeError`` naming the argument: non-2-D, empty, NaN/inf,
    mismatched dimensions, a bad ``k``.

    Args:
      references: ``[n, d]`` features.
      candidates: ``[m, d]`` features.
      k: neighbourhood size (the k-th neighbour, self excluded, must exist in each set).

    Returns:
      :class:`FeaturePair` (the dtype is the promotion of both inputs' dtypes).

    Examples:
      >>> import numpy as np
      >>> check_feature_pair(references=np.zeros((3, 2)), candidates=np.zeros((3, 2)), k=3)
      Traceback (most recent call last):
      ...
      ValueError: k: must be smaller than the size of each set (k-th neighbour, self excluded); got k=3 with references of 3 and candidates of 3 samples
    """
    k = check_int(k, "k", minimum=1)
    ref = check_features(references, "references")
    cand = check_features(candidates, "candidates", dim=ref.shape[1])
    smallest = min(ref.shape[0], cand.shape[0])
    if k >= smallest:
        raise ValueError(
            f"k: must be smaller than the size of each set (k-th neighbour, self excluded); "
            f"got k={k} with references of {ref.shape[0]} and candidates of {cand.shape[0]} samples"
        )
    ref, cand = jnp.asarray(ref), jnp.asarray(cand)
    dtype = jnp.result_type(ref.dtype, cand.dtype)
    return FeaturePair(references=ref.astype(dtype), candidates=cand.astype(dtype))


def check_occasions(occasions: str) -> str:
    """``occasions`` if it is one of :data:`OCCASIONS` (``"samples"``, ``"visits"``), else
    ``ValueError`` naming ``occasions``.

    Examples:
      >>> check_occasions("visits")
      'visits'
    """
    return check_choice(occasions, "occasions", OCCASIONS)
