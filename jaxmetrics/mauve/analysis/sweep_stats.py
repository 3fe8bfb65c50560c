"""Statistics of MAUVE sweeps: does a ranking of systems depend on the setting
(:func:`rank_agreement`), and is a MAUVE gap larger than the seed noise
(:func:`paired_mauve_difference`)?"""
from __future__ import annotations

import math

import numpy as np

from jaxmetrics.mauve.analysis.sweep_results import MauveSweepResult
from jaxmetrics.numerics import average_ranks, mean_std, pearson
from jaxmetrics.results import Result, static_field

__all__ = ["RankAgreement", "PairedMauveDifference", "rank_agreement", "paired_mauve_difference"]


class RankAgreement(Result):
    """Result of :func:`rank_agreement`: how alike the settings rank the systems.

    Attributes:
      spearman: ``[V, V]`` Spearman correlation between the settings' rankings of the systems
        (rankings by mean MAUVE; ties get average ranks).
      ranks: ``[V, M]`` rank of each system under each setting (1 = highest MAUVE).
      min_spearman: the smallest off-diagonal correlation (1.0 for one setting).
      mean_spearman: the mean off-diagonal correlation.
      setting: the swept setting (static).
      values: the ``V`` setting values (static).
      systems: the ``M`` systems (static).
    """

    spearman: np.ndarray
    ranks: np.ndarray
    min_spearman: float
    mean_spearman: float
    setting: str = static_field(default="")
    values: tuple = static_field(default=())
    systems: tuple = static_field(default=())



class PairedMauveDifference(Result):
    """Result of :func:`paired_mauve_difference`, one entry per setting of the sweep.

    With ``d_s = MAUVE_system(s) - MAUVE_baseline(s)`` over the ``S`` seeds (same k-means key and
    same subsets of P for both): ``difference = mean(d)``, ``standard_error = sd(d) / sqrt(S)``,
    ``t_statistic = difference / standard_error`` (Student's t with ``S - 1`` degrees of freedom;
    ``p_value`` two-sided), ``exceeds_seed_noise = p_value < alpha``.

    Attributes:
      difference: ``[V]`` mean paired difference.
      difference_std: ``[V]`` sample standard deviation of the differences (``ddof=1``).
      standard_error: ``[V]`` ``difference_std / sqrt(S)``.
      t_statistic: ``[V]`` (``±inf`` when the differences are all equal and non-zero, 0 when all 0).
      p_value: ``[V]`` two-sided p-value.
      exceeds_seed_noise: ``[V]`` bool, ``p_value < alpha``.
      unpaired_standard_error: ``[V]`` ``sqrt(var_a / S + var_b / S)``, what the same seeds would give
        without pairing (for comparison).
      correlation: ``[V]`` Pearson correlation of the two systems' per-seed MAUVE (pairing helps
        when it is positive; NaN when a side is constant).
      num_seeds: ``S``.
      alpha: the test level.
      system: the system (static).
      baseline: the system it is compared with (static).
      setting: the swept setting (static).
      values: the ``V`` setting values (static).
    """

    difference: np.ndarray
    difference_std: np.ndarray
    standard_error: np.ndarray
    t_statistic: np.ndarray
    p_value: np.ndarray
    exceeds_seed_noise: np.ndarray
    unpaired_standard_error: np.ndarray
    correlation: np.ndarray
    num_seeds: int
    alpha: float
    system: str = static_field(default="")
    baseline: str = static_field(default="")
    setting: str = static_field(default="")
    values: tuple = static_field(default=())



def rank_agreement(sweep: MauveSweepResult) -> RankAgreement:
    """Spearman correlation of the systems' ranking between every pair of settings of a sweep.

    The ranking under setting ``v`` orders the systems by mean MAUVE over the seeds; Spearman's
    rho of two settings is the Pearson correlation of their (average) ranks. On a
    ``over="quantizer"`` sweep this is the MAUVE paper's Table 5 (do k-means, DRMM and lattice
    rank the systems alike?), on ``over="k"`` or ``over="c"`` its Table 6. Needs at least 2
    systems (3 or more for a meaningful value); a constant ranking (all tied) gives NaN.

    Args:
      sweep: a :class:`MauveSweepResult`.

    Returns:
      :class:`RankAgreement`: ``spearman [V, V]``, ``ranks [V, M]``, ``min_spearman``,
      ``mean_spearman``.

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve import MauveSweepResult, rank_agreement
      >>> mean = np.array([[0.9, 0.5, 0.1], [0.8, 0.6, 0.2], [0.5, 0.9, 0.1]])  # [settings, systems]
      >>> z = np.zeros((3, 3, 1))
      >>> sweep = MauveSweepResult(mauve=z, mauve_star=z, frontier_integral=z, mauve_mean=mean,
      ...     mauve_std=mean * 0, num_buckets=np.ones((3, 3)), num_references=np.ones((3, 3)),
      ...     num_candidates=np.ones((3, 3)), setting="k", values=(5, 10, 20), systems=("a", "b", "c"), seeds=(1,))
      >>> rank_agreement(sweep).spearman.round(2).tolist()
      [[1.0, 1.0, 0.5], [1.0, 1.0, 0.5], [0.5, 0.5, 1.0]]
    """
    if not isinstance(sweep, MauveSweepResult):
        raise TypeError(f"sweep: expected a MauveSweepResult, got {type(sweep).__name__}")
    if len(sweep.systems) < 2:
        raise ValueError("sweep: rank agreement needs at least 2 systems")
    ranks = average_ranks(np.asarray(sweep.mauve_mean), descending=True)
    rho = np.asarray([[pearson(a, b) for b in ranks] for a in ranks])  # Spearman: Pearson of the ranks
    v = rho.shape[0]
    off = rho[~np.eye(v, dtype=bool)] if v > 1 else np.array([1.0])
    return RankAgreement(spearman=rho, ranks=ranks, min_spearman=float(np.min(off)), mean_spearman=float(np.mean(off)),
                         setting=sweep.setting, values=sweep.values, systems=sweep.systems)


def paired_mauve_difference(
    sweep: MauveSweepResult, *, system: str, baseline: str, alpha: float = 0.05
) -> PairedMauveDifference:
    """Is ``system``'s MAUVE different from ``baseline``'s by more than the seed noise?

    Pairing: in a sweep, seed ``s`` fixes the k-means key and the subsets of P (and the Q row
    indices, for equal sizes) for every system, so the per-seed difference
    ``d_s = MAUVE_system(s) - MAUVE_baseline(s)`` removes what the two runs share. The two
    systems are still quantized with separate codebooks (each on its own ``P ∪ Q``, as
    compute_mauve does), so their quantization noise is only partly shared; ``correlation``
    reports how much (pairing shrinks the standard error when it is positive, compare
    ``standard_error`` with ``unpaired_standard_error``). A paired t-test over the ``S`` seeds
    (``S - 1`` degrees of freedom) says whether ``mean(d)`` is beyond that noise. It covers the
    noise of the quantization (and of the subsets in an ``over="n"`` sweep) only, not the
    sampling of new texts from the systems: for that, run the generation several times.

    Args:
      sweep: a :class:`MauveSweepResult` holding both systems (at least 2 seeds).
      system, baseline: names of two of its systems.
      alpha: level of the two-sided test (``exceeds_seed_noise = p_value < alpha``).

    Returns:
      :class:`PairedMauveDifference` with one entry per setting of the sweep.

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve import mauve_sweep, paired_mauve_difference
      >>> rng = np.random.default_rng(0)
      >>> human = rng.normal(size=(100, 8))
      >>> systems = {name: rng.normal(size=(100, 8)) + s for name, s in (("close", 0.1), ("mid", 0.5), ("far", 1.5))}
      >>> res = mauve_sweep(references=human, candidates=systems, over="k", values=(5, 10), seeds=(1, 2, 3, 4))
      >>> d = paired_mauve_difference(res, system="close", baseline="far")
      >>> bool(d.difference[1] > 0), bool(d.exceeds_seed_noise[1])
      (True, True)
    """
    from scipy import stats

    if not isinstance(sweep, MauveSweepResult):
        raise TypeError(f"sweep: expected a MauveSweepResult, got {type(sweep).__name__}")
    for arg, name in (("system", system), ("baseline", baseline)):
        if name not in sweep.systems:
            raise ValueError(f"{arg}: {name!r} is not a system of the sweep {sweep.systems}")
    if system == baseline:
        raise ValueError("baseline: must differ from system")
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha: expected a level in (0, 1), got {alpha!r}")
    s = len(sweep.seeds)
    if s < 2:
        raise ValueError("sweep: a paired comparison needs at least 2 seeds")
    a = np.asarray(sweep.mauve[:, sweep.systems.index(system)], np.float64)  # [V, S]
    b = np.asarray(sweep.mauve[:, sweep.systems.index(baseline)], np.float64)
    d = a - b
    mean, sd = mean_std(d, axis=1)
    se = sd / math.sqrt(s)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se > 0, mean / np.where(se > 0, se, 1.0), np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
        corr = np.asarray([pearson(x, y) for x, y in zip(a, b)])
    p = 2.0 * stats.t.sf(np.abs(t), df=s - 1)
    unpaired = np.sqrt(a.var(axis=1, ddof=1) / s + b.var(axis=1, ddof=1) / s)
    return PairedMauveDifference(difference=mean, difference_std=sd, standard_error=se, t_statistic=t, p_value=p,
                                 exceeds_seed_noise=p < alpha, unpaired_standard_error=unpaired, correlation=corr,
                                 num_seeds=s, alpha=float(alpha), system=system, baseline=baseline,
                                 setting=sweep.setting, values=sweep.values)
