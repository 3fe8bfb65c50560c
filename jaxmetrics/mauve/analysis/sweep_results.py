"""Results of the MAUVE sweeps: :class:`MauveSweepResult` (a tidy table) and its rows."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Mapping

import numpy as np

from jaxmetrics.results import Result, static_field

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["MauveSweepRow", "MauveSweepResult"]


class MauveSweepRow(Result):
    """One row of a :class:`MauveSweepResult`: one setting and one system.

    Attributes:
      setting: the swept setting (``"n"``, ``"k"``, ``"c"``, ``"quantizer"`` or ``"length"``).
      value: its value in this row (an int, a float or a quantizer name).
      system: the candidate system's name.
      mauve_mean: mean MAUVE over the seeds.
      mauve_std: sample standard deviation over the seeds (``ddof=1``; 0 for one seed).
      mauve_star_mean: mean of the Krichevsky-Trofimov smoothed MAUVE (``None`` for a density-ratio
        estimator, which has no histograms to smooth).
      frontier_integral_mean: mean frontier integral.
      num_seeds: number of seeds.
      num_buckets: number of bins ``k`` used (``None`` for a density-ratio estimator).
      num_references: rows of P used.
      num_candidates: rows of Q used.
      references_length_mean: length sweep only: mean token length of P after truncation (else None).
      references_length_median: length sweep only: median token length of P after truncation.
      candidates_length_mean: length sweep only: mean token length of Q after truncation.
      candidates_length_median: length sweep only: median token length of Q after truncation.
    """

    setting: str
    value: Any
    system: str
    mauve_mean: float
    mauve_std: float
    mauve_star_mean: float | None
    frontier_integral_mean: float
    num_seeds: int
    num_buckets: int | None
    num_references: int
    num_candidates: int
    references_length_mean: float | None = None
    references_length_median: float | None = None
    candidates_length_mean: float | None = None
    candidates_length_median: float | None = None



class MauveSweepResult(Result):
    """Result of :func:`mauve_sweep` / :func:`mauve_length_sweep`: a tidy table of MAUVE.

    Arrays are indexed ``[setting, system, seed]`` (or ``[setting, system]``); :meth:`rows` gives
    one :class:`MauveSweepRow` per setting and system, :meth:`to_csv` writes them, :meth:`plot`
    draws MAUVE (mean ± s.d.) against the setting.

    Attributes:
      mauve: ``[V, M, S]`` float64 MAUVE per setting, system and seed.
      mauve_star: ``[V, M, S]`` Krichevsky-Trofimov smoothed MAUVE (``None`` for a density-ratio
        estimator).
      frontier_integral: ``[V, M, S]`` frontier integral.
      mauve_mean: ``[V, M]`` mean over the seeds.
      mauve_std: ``[V, M]`` sample standard deviation over the seeds (``ddof=1``; 0 for one seed).
      num_buckets: ``[V, M]`` int number of bins used (``None`` for a density-ratio estimator).
      num_references: ``[V, M]`` int rows of P used.
      num_candidates: ``[V, M]`` int rows of Q used.
      references_length_quantiles: length sweep: ``[V, 3]`` 10 / 50 / 90 % quantiles of P's token
        lengths after truncation (``None`` for other sweeps).
      references_length_mean: length sweep: ``[V]`` mean token length of P after truncation.
      candidates_length_quantiles: length sweep: ``[V, M, 3]`` the same for each Q.
      candidates_length_mean: length sweep: ``[V, M]``.
      setting: the swept setting (static): ``"n"``, ``"k"``, ``"c"``, ``"quantizer"`` or ``"length"``.
      values: the ``V`` setting values, in order (static).
      systems: the ``M`` system names, in order (static).
      seeds: the ``S`` seeds (static).
      pooling: length sweep: the named pooling that featurized the texts (static; ``None`` for
        sweeps of given features).
      estimator: how the frontier was estimated (static, not in the repr): ``'quantized'`` (k-means
        histograms) or a density-ratio estimator's name (:mod:`jaxmetrics.mauve.frontier.estimators`).
      signature: what the numbers depend on (static; :mod:`jaxmetrics.results`):
        ``metric:mauve-sweep``, the swept setting (``over``) and its ``values`` (``default`` for
        the data-derived default sample sizes), the seeds and every fixed MAUVE setting (the
        k-means quantizer's, ``num_buckets``, ``mauve_scaling_factor``, ...); the length sweep
        adds the featurizer with its weights' hash, its layer, pooling and dtype.
    """

    mauve: np.ndarray
    mauve_star: np.ndarray | None
    frontier_integral: np.ndarray
    mauve_mean: np.ndarray
    mauve_std: np.ndarray
    num_buckets: np.ndarray | None
    num_references: np.ndarray
    num_candidates: np.ndarray
    references_length_quantiles: np.ndarray | None = None
    references_length_mean: np.ndarray | None = None
    candidates_length_quantiles: np.ndarray | None = None
    candidates_length_mean: np.ndarray | None = None
    setting: str = static_field(default="n")
    values: tuple = static_field(default=())
    systems: tuple = static_field(default=())
    seeds: tuple = static_field(default=())
    pooling: str | None = static_field(default=None)
    signature: str = static_field(default="", repr=False)
    estimator: str = static_field(default="quantized", repr=False)

    def rows(self) -> list[MauveSweepRow]:
        """One :class:`MauveSweepRow` per (setting value, system), settings outer; ``row.to_dict()``
        is a flat dict of plain Python (a CSV line)."""
        out = []
        length = self.references_length_mean is not None
        for v, value in enumerate(self.values):
            for m, system in enumerate(self.systems):
                extra = {}
                if length:
                    extra = dict(references_length_mean=float(self.references_length_mean[v]),
                                 references_length_median=float(self.references_length_quantiles[v, 1]),
                                 candidates_length_mean=float(self.candidates_length_mean[v, m]),
                                 candidates_length_median=float(self.candidates_length_quantiles[v, m, 1]))
                out.append(MauveSweepRow(
                    setting=self.setting, value=value, system=system,
                    mauve_mean=float(self.mauve_mean[v, m]), mauve_std=float(self.mauve_std[v, m]),
                    mauve_star_mean=None if self.mauve_star is None else float(np.mean(self.mauve_star[v, m])),
                    frontier_integral_mean=float(np.mean(self.frontier_integral[v, m])),
                    num_seeds=len(self.seeds),
                    num_buckets=None if self.num_buckets is None else int(self.num_buckets[v, m]),
                    num_references=int(self.num_references[v, m]),
                    num_candidates=int(self.num_candidates[v, m]), **extra))
        return out

    def csv_rows(self) -> list[Mapping[str, Any]]:
        """:meth:`rows` as dicts for :meth:`to_csv` (``Result.to_csv(path=None) -> str``); the length
        columns only for a length sweep."""
        rows = [r.to_dict() for r in self.rows()]
        if self.references_length_mean is None:
            rows = [{k: v for k, v in r.items() if not k.endswith(("_length_mean", "_length_median"))} for r in rows]
        return rows

    def plot(self, path: str | os.PathLike | None = None, *, title: str | None = None, ax: Any = None) -> "Figure":
        """MAUVE (mean ± s.d. over seeds) against the setting: :func:`jaxmetrics.mauve.plot.plot_sweep`."""
        from jaxmetrics.mauve.plot import plot_sweep

        return plot_sweep(self, path, title=title, ax=ax)
