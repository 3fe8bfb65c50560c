"""Per-sample rewards for the policy-gradient objectives of :func:`~jaxmetrics.training.finetune`.

* :func:`mauve_influence_rewards`: a generation's reward is ``n * dM/dw_i``, ``n`` times its
  influence on MAUVE (the derivative of the smoothed MAUVE of the batch against the human reference
  features in the sample's weight, :func:`jaxmetrics.mauve.mauve_attribution`). For ``J(theta) =
  MAUVE(P, Q_theta)`` the policy gradient is ``E_{x ~ Q_theta}[IF(x) grad log q_theta(x)]`` with ``IF``
  MAUVE's influence function; ``n dM/dw_i`` is its plug-in estimate on the batch (``O(1/n)`` bias).
  The influences of one batch sum to about 0 (the histograms are normalised): a reward says which
  generations pull the batch's MAUVE up and which pull it down.
* :func:`twmd_rewards`: each generation's TWMD F1 against the human continuation of its own prompt
  (:func:`jaxmetrics.similarity.compute_similarity` with ``metric='twmd'``).
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from jaxmetrics import _validation as V

__all__ = ["mauve_influence_rewards", "twmd_rewards"]


def mauve_influence_rewards(*, references: Any, candidates: Any, seed: int, num_buckets: int | str = "auto",
                            temperature: float | str | None = "auto", num_nearest_bins: int = 10,
                            pool: Any = None) -> np.ndarray:
    """Rewards ``N * dM/dw_i`` of ``n`` generations: their influences on MAUVE, times the size ``N``
    of the model sample.

    The model sample is ``[candidates; pool]`` (``N = n + m``): ``pool`` holds features of earlier
    generations of the same model, so the model's histogram, and with it every influence, is
    estimated from ``N`` samples rather than the batch's ``n``. On the demo model's samples (MiniLM
    features, ``benchmarks/reward_reliability.py``) the rewards of a batch of 32 alone correlate
    0.30 with the same generations' influence estimated from 1,600 of them under 8 bins (0.02
    under the 3 bins of MAUVE's rule for 32 samples); with 224 pooled generations, 0.63 (the
    estimate's own ceiling, the same with other k-means seeds: 0.82).
    One k-means codebook is fitted on ``[candidates; pool; references]`` with ``seed`` and the
    influences are read under it (:func:`~jaxmetrics.mauve.mauve_attribution` with ``seeds=(seed,)``,
    its soft assignment over the ``num_nearest_bins`` nearest bins at ``temperature``). The trainer
    draws a fresh seed every step, so no codebook's quirks are optimised for long.

    Args:
      references: keyword-only, ``[n_p, d]`` human reference features (featurized once).
      candidates: keyword-only, ``[n, d]`` features of the batch's generations (same featurizer).
      seed: the k-means seed.
      pool: ``[m, d]`` features of earlier generations pooled with ``candidates`` as the model
        sample (``None`` or ``m = 0``: the batch alone); they get no reward.
      num_buckets, temperature, num_nearest_bins: as :func:`~jaxmetrics.mauve.mauve_attribution`.

    Returns:
      ``[n]`` float32 rewards of the candidates (finite; about zero-sum over the whole model sample).

    Examples:
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> refs = rng.normal(size=(100, 8)).astype("float32")
      >>> gens = rng.normal(size=(40, 8)).astype("float32")
      >>> gens[:8] = 0.1 * gens[:8] + 3.0 * np.eye(8, dtype="float32")[0]   # a tight mode the references lack
      >>> r = mauve_influence_rewards(references=refs, candidates=gens, seed=0)
      >>> bool(r[:8].max() < r[8:].min())
      True
    """
    from jaxmetrics.mauve import mauve_attribution

    seed = V.check_int(seed, "seed", minimum=0)
    n = len(candidates)
    if pool is not None and len(pool):
        if np.ndim(pool) != 2 or np.shape(pool)[1] != np.shape(candidates)[1]:
            raise ValueError(f"pool: expected [m, {np.shape(candidates)[1]}] features like candidates, "
                             f"got shape {np.shape(pool)}")
        candidates = np.concatenate([np.asarray(candidates, np.float32), np.asarray(pool, np.float32)])
    att = mauve_attribution(references=references, candidates=candidates, seeds=(seed,), num_buckets=num_buckets,
                            temperature=temperature, num_nearest_bins=num_nearest_bins)
    q = np.asarray(att.q_influence, np.float32)
    return q[:n] * np.float32(q.shape[0])


def twmd_rewards(*, references: Sequence[str], candidates: Sequence[str], model: Any,
                 dtype: Any = None) -> np.ndarray:
    """Rewards: the TWMD F1 of each generation against the human continuation of its prompt.

    Pair ``i`` is ``(candidates[i], references[i])``, scored by
    :func:`~jaxmetrics.similarity.compute_similarity` (``metric='twmd'``, its default settings for
    ``model``); an empty generation scores 0, as there.

    Args:
      references: keyword-only, ``n`` human continuations (one per prompt).
      candidates: keyword-only, ``n`` generations, in the same order.
      model: the encoder whose token embeddings are compared (a loaded model or a directory).
      dtype: its compute dtype (``None``: a loaded model's own).

    Returns:
      ``[n]`` float32 rewards.
    """
    from jaxmetrics.similarity import compute_similarity

    references, candidates = list(references), list(candidates)
    if len(references) != len(candidates):
        raise ValueError(f"references: {len(references)} texts for {len(candidates)} candidates; "
                         "one human continuation per generation is needed")
    res = compute_similarity(references=references, candidates=candidates, model=model, metric="twmd",
                             progress=False, dtype=dtype)
    return np.asarray(res.f1, np.float32)
