"""The Mark-Evaluate scores: ``1 - min(1, |P_hat - P| / P)`` of each estimator, in [0, 1].

:func:`mark_evaluate_scores` computes all four from one :func:`mark_evaluate_stats` (one set
of distance passes); :func:`me_petersen`, :func:`me_schnabel` and :func:`me_capture` one
estimator each. The estimators and the two readings (``literal``) are documented in
:mod:`jaxmetrics.mark_evaluate.estimators`.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax

from jaxmetrics.mark_evaluate.checks import check_occasions
from jaxmetrics.mark_evaluate.estimators import (
    accuracy_score,
    capture_estimate,
    petersen_estimate,
    schnabel_estimate,
)
from jaxmetrics.mark_evaluate.stats import MarkEvaluateStats, mark_evaluate_stats
from jaxmetrics.results import Result

__all__ = ["MarkEvaluateScores", "SchnabelScores", "mark_evaluate_scores", "me_petersen",
           "me_schnabel", "me_capture"]


class MarkEvaluateScores(Result):
    """The four Mark-Evaluate scores (:func:`mark_evaluate_scores`), each in [0, 1], 1 = best.

    Attributes:
      petersen: ME-Petersen (symmetric).
      schnabel_quality: ME-Schnabel(S_r, S_e): references marked first, candidates visited.
      schnabel_diversity: ME-Schnabel(S_e, S_r): candidates marked first, references visited.
      capture: ME-CAPTURE, model M0 (symmetric).

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(30, 4))
      >>> mark_evaluate_scores(references=x, candidates=x, k=3)
      MarkEvaluateScores(petersen=1, schnabel_quality=1, schnabel_diversity=1, capture=1)
    """

    petersen: jax.Array
    schnabel_quality: jax.Array
    schnabel_diversity: jax.Array
    capture: jax.Array


class SchnabelScores(Result):
    """ME-Schnabel in both directions (:func:`me_schnabel`), each in [0, 1], 1 = best.

    Attributes:
      quality: ME-Schnabel(S_r, S_e) (references marked first, candidates visited).
      diversity: ME-Schnabel(S_e, S_r) (candidates marked first, references visited).
    """

    quality: jax.Array
    diversity: jax.Array


def _petersen(stats: MarkEvaluateStats) -> jax.Array:
    pe = petersen_estimate(stats)
    return accuracy_score(pe.population, stats.population, (pe.recaptured > 0) & stats.defined)


def _schnabel(stats: MarkEvaluateStats, literal: bool) -> SchnabelScores:
    P = stats.population
    ok = stats.defined
    q = schnabel_estimate(stats, literal=literal)
    d = schnabel_estimate(stats.swap(), literal=literal)
    return SchnabelScores(quality=accuracy_score(q.population, P, (q.recaptured > 0) & ok),
                          diversity=accuracy_score(d.population, P, (d.recaptured > 0) & ok))


def _capture(stats: MarkEvaluateStats, occasions: str, literal: bool) -> jax.Array:
    est = capture_estimate(stats, occasions=occasions, literal=literal)
    return accuracy_score(est.population, stats.population, stats.defined)


@partial(jax.jit, static_argnames=("which", "occasions", "literal"))
def _score(stats: MarkEvaluateStats, which: str, occasions: str = "samples", literal: bool = False):
    """One compiled program per score (``which``: petersen, schnabel, capture or all)."""
    if which == "petersen":
        return _petersen(stats)
    if which == "schnabel":
        return _schnabel(stats, literal)
    if which == "capture":
        return _capture(stats, occasions, literal)
    s = _schnabel(stats, literal)
    return MarkEvaluateScores(petersen=_petersen(stats), schnabel_quality=s.quality,
                              schnabel_diversity=s.diversity,
                              capture=_capture(stats, occasions, literal))


def mark_evaluate_scores(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
                         occasions: str = "samples", block_size: int | None = None,
                         mesh: Any = None) -> MarkEvaluateScores:
    """All Mark-Evaluate scores from one set of distance passes.

    Every score is ``1 - min(1, |P_hat - P| / P)`` with ``P = n + m`` and ``P_hat`` the
    estimator's population size (see the module docstring): ME-Petersen, ME-Schnabel in both
    directions and ME-CAPTURE.

    Args:
      references: ``[n, d]`` reference features S_r.
      candidates: ``[m, d]`` candidate features S_e.
      k: neighbourhood size (``1 <= k < min(n, m)``).
      literal: the formulas of the paper as printed instead of the corrected default (see the
        module docstring: distinct rows as individuals, Schnabel marks of the first step only,
        CAPTURE occasions without the own-set neighbours).
      occasions: ME-CAPTURE set-up, ``"samples"`` (one occasion per sample, the paper;
        default) or ``"visits"`` (the two Petersen visits).
      block_size: rows per distance block.
      mesh: optional :class:`jax.sharding.Mesh` to shard the rows of both sets over (see
        :func:`mark_evaluate_stats`).

    Returns:
      :class:`MarkEvaluateScores` of scalar arrays in [0, 1] (1 = best): ``petersen``,
      ``schnabel_quality`` (= ME-Schnabel(S_r, S_e)), ``schnabel_diversity``
      (= ME-Schnabel(S_e, S_r)), ``capture``.

    Examples:
      >>> import numpy as np
      >>> rng = np.random.default_rng(0)
      >>> x = rng.normal(size=(30, 2))
      >>> mark_evaluate_scores(references=x, candidates=x, k=3).to_dict()
      {'petersen': 1.0, 'schnabel_quality': 1.0, 'schnabel_diversity': 1.0, 'capture': 1.0}
      >>> s = mark_evaluate_scores(references=x, candidates=x + 100.0, k=3)
      >>> float(s.petersen), float(s.schnabel_quality), float(s.capture)
      (0.0, 0.0, 0.0)
    """
    check_occasions(occasions)
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k,
                                literal=literal, block_size=block_size, mesh=mesh)
    return _score(stats, "all", occasions, bool(literal))


def me_petersen(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
                block_size: int | None = None) -> jax.Array:
    """ME-Petersen ``1 - min(1, |MC/R - P| / P)`` (0 when R = 0); symmetric.

    Args:
      references, candidates, k, block_size: as :func:`mark_evaluate_scores`.
      literal: every row an individual (the paper as printed) instead of every distinct row.

    Returns:
      0-d array in [0, 1] (:attr:`MarkEvaluateScores.petersen`).

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(30, 3))
      >>> float(me_petersen(references=x, candidates=x)), float(me_petersen(references=x, candidates=x + 100.0))
      (1.0, 0.0)
    """
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k,
                                literal=literal, block_size=block_size)
    return _score(stats, "petersen")


def me_schnabel(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
                block_size: int | None = None) -> SchnabelScores:
    """ME-Schnabel quality = ME-Schnabel(S_r, S_e) and diversity = ME-Schnabel(S_e, S_r).

    Args:
      references, candidates, k, block_size: S_r, S_e and settings as :func:`mark_evaluate_scores`.
      literal: the paper as printed (every row an individual, sequential marking by the
        visits) instead of the corrected default.

    Returns:
      :class:`SchnabelScores` (``quality``, ``diversity``: 0-d arrays in [0, 1]).

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(30, 3))
      >>> me_schnabel(references=x, candidates=x)
      SchnabelScores(quality=1, diversity=1)
    """
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k,
                                literal=literal, block_size=block_size)
    return _score(stats, "schnabel", literal=bool(literal))


def me_capture(*, references: Any, candidates: Any, k: int = 3, literal: bool = False,
               occasions: str = "samples", block_size: int | None = None) -> jax.Array:
    """ME-CAPTURE (model M0) score; symmetric. See the module docstring for ``occasions``.

    Args:
      references, candidates, k, occasions, block_size: as :func:`mark_evaluate_scores`.
      literal: the paper as printed (every row an individual, own-set neighbours counted as
        captures) instead of the corrected default.

    Returns:
      the 0-d :attr:`MarkEvaluateScores.capture` score in [0, 1].

    Examples:
      >>> import numpy as np
      >>> x = np.random.default_rng(0).normal(size=(30, 3))
      >>> float(me_capture(references=x, candidates=x)), float(me_capture(references=x, candidates=x + 100.0))
      (1.0, 0.0)
    """
    check_occasions(occasions)
    stats = mark_evaluate_stats(references=references, candidates=candidates, k=k,
                                literal=literal, block_size=block_size)
    return _score(stats, "capture", occasions, bool(literal))
