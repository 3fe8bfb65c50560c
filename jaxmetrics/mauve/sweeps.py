"""MAUVE sweeps: MAUVE (mean ± s.d. over k-means seeds) as a function of one setting.

The MAUVE paper studies its score along several axes; each is one call here:

* ``over="n"`` (Figure 4): sample size. For seed ``s`` and size ``n``, ``n`` rows of P and ``n`` rows
  of each Q are drawn without replacement (nested: the first ``n`` of one random permutation per
  side and seed, kept in their original order) and quantized with ``k = max(2, round(n / 10))``
  clusters (``num_buckets='auto'``; an integer fixes ``k``).
* ``over="k"`` and ``over="c"`` (Table 6): the number of clusters and the scaling constant.
* ``over="quantizer"`` (Table 5): k-means, DRMM, lattice (names of
  :func:`~jaxmetrics.mauve.quantizers.get_quantizer`, or :class:`Quantizer` instances).
* :func:`mauve_length_sweep` (Figure 3): texts truncated to each maximum length, features
  recomputed, with the token length distribution of each side next to the scores.

**How it is computed.** Per system, the features are stacked ``[Q; P]``, L2-normalised and
projected by a PCA fitted once on all rows with ``key(seeds[0])`` (as
:func:`~jaxmetrics.mauve.compute_mauve_seeds`; the PCA is not refitted per subset). Every
(setting, system, seed) is then one k-means problem on a subset of those rows: the subsets are
padded to one row count and the cluster counts to one number of centroid slots, and all problems
run as **one** vmapped, jitted call of :func:`~jaxmetrics.mauve.kmeans` in its masked mode
(``x_mask``, ``num_active_clusters``), followed by one jitted float64 histogram stage (vmapped over
``c``). Shapes depend only on the largest subset, the largest ``k``, the feature width and the
number of problems (padded up to a multiple of 8), so a sweep compiles once and a rerun with new
values of the same shapes does not retrace. Memory: about
``problems x kmeans_num_redo x rows x k_max`` floats; ``mauve_sweep(batch_size=...)`` splits the
problems into chunks of one compiled shape when that is too much.

**Keys.** Seed ``s`` gives the k-means key ``fold_in(key(s), 2)`` (compute_mauve's convention) and
the subset permutations ``fold_in(key(s), 11)`` (P) and ``fold_in(key(s), 13)`` (Q). Keys do not
depend on the system, so for one seed all systems share P's subset, Q row indices (for equal
sizes) and k-means draws: the seeds pair the systems (see :func:`paired_mauve_difference`).
Because the masked k-means draws its random rows per position (see :mod:`.clustering`), a
sweep's value for seed ``s`` is not bit-identical to ``compute_mauve(seed=s)`` (same algorithm,
another random stream); it equals the single masked call
``kmeans(z[subset], fold_in(key(s), 2), num_clusters=k, x_mask=ones)`` on the same rows.

Reports: :func:`rank_agreement` (Spearman correlation of the systems' ranking between the
settings: Table 5 across quantizers, Table 6 across ``k`` or ``c``) and
:func:`paired_mauve_difference` (is a MAUVE gap larger than the seed noise?).
"""
from __future__ import annotations

import csv
import functools
import importlib
import math
import os
import warnings
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics.mauve.clustering import kmeans
from jaxmetrics.mauve.compute import _check_common, auto_num_buckets
from jaxmetrics.mauve.histograms import _mauve_core
from jaxmetrics.mauve.quantizers import KMeansQuantizer, get_quantizer
from jaxmetrics.results import Result, static_field

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "MauveSweepResult",
    "MauveSweepRow",
    "RankAgreement",
    "PairedMauveDifference",
    "SWEEP_AXES",
    "mauve_sweep",
    "mauve_length_sweep",
    "rank_agreement",
    "paired_mauve_difference",
]

#: The settings :func:`mauve_sweep` varies (``"length"`` is :func:`mauve_length_sweep`'s).
SWEEP_AXES = ("n", "k", "c", "quantizer")
_AXIS_LABELS = {"n": "sample size n (per side)", "k": "number of clusters k", "c": "scaling constant c",
                "quantizer": "quantizer", "length": "maximum text length (tokens)"}
_QUANTILES = (0.1, 0.5, 0.9)
_DEFAULT_SEEDS = (25, 26, 27, 28, 29)
#: The number of k-means problems is padded up to a multiple of this (copies of the first problem,
#: dropped afterwards), so that sweeps of slightly different sizes share one compiled program.
_PROBLEM_MULTIPLE = 8


# --------------------------------------------------------------------------- results


class MauveSweepRow(Result):
    """One row of a :class:`MauveSweepResult`: one setting and one system.

    Attributes:
      setting: the swept setting (``"n"``, ``"k"``, ``"c"``, ``"quantizer"`` or ``"length"``).
      value: its value in this row (an int, a float or a quantizer name).
      system: the candidate system's name.
      mauve_mean: mean MAUVE over the seeds.
      mauve_std: sample standard deviation over the seeds (``ddof=1``; 0 for one seed).
      mauve_star_mean: mean of the Krichevsky-Trofimov smoothed MAUVE.
      frontier_integral_mean: mean frontier integral.
      num_seeds: number of seeds.
      num_buckets: number of bins ``k`` used.
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
    mauve_star_mean: float
    frontier_integral_mean: float
    num_seeds: int
    num_buckets: int
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
      mauve_star: ``[V, M, S]`` Krichevsky-Trofimov smoothed MAUVE.
      frontier_integral: ``[V, M, S]`` frontier integral.
      mauve_mean: ``[V, M]`` mean over the seeds.
      mauve_std: ``[V, M]`` sample standard deviation over the seeds (``ddof=1``; 0 for one seed).
      num_buckets: ``[V, M]`` int number of bins used.
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
    """

    mauve: np.ndarray
    mauve_star: np.ndarray
    frontier_integral: np.ndarray
    mauve_mean: np.ndarray
    mauve_std: np.ndarray
    num_buckets: np.ndarray
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
                    mauve_star_mean=float(np.mean(self.mauve_star[v, m])),
                    frontier_integral_mean=float(np.mean(self.frontier_integral[v, m])),
                    num_seeds=len(self.seeds), num_buckets=int(self.num_buckets[v, m]),
                    num_references=int(self.num_references[v, m]),
                    num_candidates=int(self.num_candidates[v, m]), **extra))
        return out

    def to_csv(self, path: str | os.PathLike) -> None:
        """Write :meth:`rows` to ``path`` as CSV (a header line, then one line per row)."""
        rows = [r.to_dict() for r in self.rows()]
        if self.references_length_mean is None:
            rows = [{k: v for k, v in r.items() if not k.endswith(("_length_mean", "_length_median"))} for r in rows]
        with open(os.fspath(path), "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)

    def plot(self, path: str | os.PathLike | None = None, *, title: str | None = None, ax: Any = None) -> "Figure":
        """MAUVE (mean ± s.d. over seeds) against the setting, one line per system.

        A length sweep gets a second panel with the median token length of each side (bars:
        10-90 % quantiles). matplotlib is imported here; with ``path`` the figure is saved.

        Returns:
          the matplotlib ``Figure``.
        """
        import matplotlib

        if ax is None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        categorical = self.setting == "quantizer"
        x = np.arange(len(self.values)) if categorical else np.asarray(self.values, np.float64)
        length = self.references_length_mean is not None and ax is None
        if ax is None:
            if length:
                fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
            else:
                fig, ax = plt.subplots(figsize=(5, 3.6))
        else:
            fig = ax.figure
        for m, system in enumerate(self.systems):
            ax.errorbar(x, self.mauve_mean[:, m], yerr=self.mauve_std[:, m], marker="o", ms=4, capsize=3,
                        label=system, color=f"C{m}")
        if categorical:
            ax.set_xticks(x, [str(v) for v in self.values])
        elif self.setting in ("n", "k", "length") and len(x) > 1 and x.max() / max(x.min(), 1) >= 8:
            ax.set_xscale("log")
            ax.minorticks_off()
            ax.set_xticks(x, [f"{v:g}" for v in x])
        ax.set_xlabel(_AXIS_LABELS.get(self.setting, self.setting))
        ax.set_ylabel(f"MAUVE (mean ± s.d., {len(self.seeds)} seeds)")
        ax.set_ylim(0, 1.02)
        ax.set_title(title or f"MAUVE vs {_AXIS_LABELS.get(self.setting, self.setting)}", fontsize="medium")
        ax.legend(fontsize="small")
        if length:
            q = self.references_length_quantiles
            ax2.errorbar(x, q[:, 1], yerr=[q[:, 1] - q[:, 0], q[:, 2] - q[:, 1]], marker="s", ms=4, capsize=3,
                         label="references", color="black")
            for m, system in enumerate(self.systems):
                qc = self.candidates_length_quantiles[:, m]
                ax2.errorbar(x * (1.0 + 0.03 * (m + 1)), qc[:, 1], yerr=[qc[:, 1] - qc[:, 0], qc[:, 2] - qc[:, 1]],
                             marker="o", ms=3, capsize=2, label=system, color=f"C{m}")
            if ax.get_xscale() == "log":
                ax2.set_xscale("log")
                ax2.set_yscale("log")
                ax2.minorticks_off()
                ax2.set_xticks(x, [f"{v:g}" for v in x])
                ax2.set_yticks(x, [f"{v:g}" for v in x])
            ax2.set_xlabel(_AXIS_LABELS["length"])
            ax2.set_ylabel("tokens after truncation (median, 10-90 %)")
            ax2.set_title("text lengths", fontsize="medium")
            ax2.legend(fontsize="small")
        fig.tight_layout()
        if path is not None:
            fig.savefig(os.fspath(path), dpi=90)
        return fig


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


# --------------------------------------------------------------------------- compiled stages


@functools.partial(jax.jit, static_argnames=("num_clusters", "num_redo", "max_points_per_centroid"))
def _sweep_counts(z, problem_z, rows, rows_mask, rows_is_q, keys, num_active, max_iter, *, num_clusters, num_redo,
                  max_points_per_centroid):
    """Bin counts of P and Q ``[B, K]`` (int32) of ``B`` masked k-means problems in one vmapped call.

    ``z [Z, R, m]`` holds the projected rows of each feature stack; problem ``b`` clusters rows
    ``rows[b]`` (mask ``rows_mask[b]``; ``rows_is_q[b]`` marks Q's rows) of ``z[problem_z[b]]`` into
    ``num_active[b]`` of ``num_clusters`` slots with key ``keys[b]``."""

    def one(zi, r, rm, isq, key, k):
        x = z[zi][r]
        res = kmeans(x, key, num_clusters=num_clusters, num_redo=num_redo, max_iter=max_iter,
                     max_points_per_centroid=max_points_per_centroid, x_mask=rm, num_active_clusters=k)
        onehot = jax.nn.one_hot(res.labels, num_clusters, dtype=jnp.int32)
        p = jnp.sum(onehot * (rm & ~isq)[:, None].astype(jnp.int32), axis=0)
        q = jnp.sum(onehot * (rm & isq)[:, None].astype(jnp.int32), axis=0)
        return p, q

    return jax.vmap(one)(problem_z, rows, rows_mask, rows_is_q, keys, num_active)


@functools.partial(jax.jit, static_argnames=("num_points",))
def _sweep_scores(p_counts, q_counts, num_active, scaling, *, num_points):
    """MAUVE, FI and their KT-smoothed versions ``[C, B]`` of counts ``[B, K]`` (first
    ``num_active[b]`` bins real, the rest padding) for every scaling constant ``scaling [C]``."""
    active = jnp.arange(p_counts.shape[-1]) < num_active[:, None]
    pc = p_counts.astype(jnp.float64)
    qc = q_counts.astype(jnp.float64)
    p_hist = pc / jnp.sum(pc, axis=-1, keepdims=True)
    q_hist = qc / jnp.sum(qc, axis=-1, keepdims=True)
    ps = jnp.where(active, pc + 0.5, 0.0)
    qs = jnp.where(active, qc + 0.5, 0.0)
    ps = ps / jnp.sum(ps, axis=-1, keepdims=True)
    qs = qs / jnp.sum(qs, axis=-1, keepdims=True)

    def per_c(c):
        plain = _mauve_core(p_hist, q_hist, c, num_points)
        star = _mauve_core(ps, qs, c, num_points)
        return plain.mauve, plain.frontier_integral, star.mauve

    return jax.vmap(per_c)(scaling.astype(jnp.float64))


def _scores(p_counts, q_counts, num_active, scaling, num_points):
    with jax.enable_x64(True):
        m, fi, ms = _sweep_scores(jnp.asarray(np.asarray(p_counts)), jnp.asarray(np.asarray(q_counts)),
                                  jnp.asarray(np.asarray(num_active, np.int32)),
                                  jnp.asarray(np.asarray(scaling, np.float64)), num_points=num_points)
        return np.asarray(m), np.asarray(fi), np.asarray(ms)


# --------------------------------------------------------------------------- inputs


def _check_seeds(seeds: Any) -> tuple[int, ...]:
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(f"seeds: expected a sequence of integers, got {type(seeds).__name__}")
    seeds = tuple(V.check_int(s, "seeds") for s in seeds)
    if not seeds:
        raise ValueError("seeds: at least one seed is needed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds: repeated seeds in {seeds}")
    return seeds


def _check_systems(references: Any, candidates: Any) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    p = V.check_features(references, "references", min_rows=2)
    if not isinstance(candidates, Mapping) or not candidates:
        raise TypeError("candidates: expected a non-empty mapping {system name: features [n, d]}")
    systems = {}
    for name, feats in candidates.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"candidates: system names must be non-empty strings, got {name!r}")
        systems[name] = V.check_features(feats, f"candidates[{name!r}]", dim=p.shape[1], min_rows=2)
    return np.asarray(p, np.float32), {k: np.asarray(v, np.float32) for k, v in systems.items()}


def _resolve_k(num_buckets: Any, n_p: int, n_q: int) -> int:
    if isinstance(num_buckets, str):
        if num_buckets != "auto":
            raise ValueError(f"num_buckets: expected 'auto' or an integer, got {num_buckets!r}")
        k = auto_num_buckets(n_p, n_q)
    else:
        k = V.check_int(num_buckets, "num_buckets", minimum=2)
    if k > n_p + n_q:
        raise ValueError(f"num_buckets: {k} buckets for only {n_p + n_q} points")
    return k


class _Stacks:
    """Projected ``[Q; P]`` rows of several feature stacks, padded to one shape ``[Z, R, m]``."""

    def __init__(self, pairs: list[tuple[np.ndarray, np.ndarray]], key: jax.Array, *, explained_var: float,
                 pca_max_data: int):
        quant = KMeansQuantizer(2, explained_var=explained_var, pca_max_data=pca_max_data)
        zs, self.n_q, self.n_p = [], [], []
        for p, q in pairs:
            _, z = quant._preprocess_fit(np.concatenate([q, p], axis=0), key)
            zs.append(np.asarray(z))
            self.n_q.append(q.shape[0])
            self.n_p.append(p.shape[0])
        rows = max(z.shape[0] for z in zs)
        width = max(z.shape[1] for z in zs)
        self.z = np.zeros((len(zs), rows, width), np.float32)
        for i, z in enumerate(zs):
            self.z[i, :z.shape[0], :z.shape[1]] = z


class _Problems:
    """The k-means problems of a sweep: which stack, which rows (Q first, then P), k, key."""

    def __init__(self):
        self.stack, self.q_rows, self.p_rows, self.k, self.seed = [], [], [], [], []

    def add(self, stack: int, q_rows: np.ndarray, p_rows: np.ndarray, k: int, seed: int) -> None:
        self.stack.append(stack)
        self.q_rows.append(np.asarray(q_rows, np.int32))
        self.p_rows.append(np.asarray(p_rows, np.int32))
        self.k.append(int(k))
        self.seed.append(int(seed))

    def counts(self, stacks: _Stacks, *, num_redo: int, max_iter: int,
               batch_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        width = max(len(q) + len(p) for q, p in zip(self.q_rows, self.p_rows))
        real = len(self.k)
        step = _PROBLEM_MULTIPLE if batch_size is None else batch_size
        b = -(-real // step) * step  # padded: copies of problem 0, dropped
        chunk = b if batch_size is None else batch_size
        stack = np.asarray(self.stack + [self.stack[0]] * (b - real), np.int32)
        ks = np.asarray(self.k + [self.k[0]] * (b - real), np.int32)
        seeds = self.seed + [self.seed[0]] * (b - real)
        rows = np.zeros((b, width), np.int32)
        mask = np.zeros((b, width), bool)
        is_q = np.zeros((b, width), bool)
        for i in range(b):
            j = i if i < real else 0
            s, q, p = self.stack[j], self.q_rows[j], self.p_rows[j]
            r = np.concatenate([q, p + stacks.n_q[s]])  # [Q; P] order, as compute_mauve stacks them
            rows[i, :len(r)], mask[i, :len(r)], is_q[i, :len(q)] = r, True, True
        keys = jnp.stack([jax.random.fold_in(jax.random.key(s), 2) for s in seeds])
        z = jnp.asarray(stacks.z)
        pcs, qcs = [], []
        for lo in range(0, b, chunk):  # one call unless batch_size splits the problems
            sl = slice(lo, lo + chunk)
            pc, qc = _sweep_counts(z, jnp.asarray(stack[sl]), jnp.asarray(rows[sl]), jnp.asarray(mask[sl]),
                                   jnp.asarray(is_q[sl]), keys[sl], jnp.asarray(ks[sl]),
                                   jnp.asarray(max_iter, jnp.int32), num_clusters=max(self.k), num_redo=num_redo,
                                   max_points_per_centroid=256)
            pcs.append(np.asarray(pc))
            qcs.append(np.asarray(qc))
        return np.concatenate(pcs)[:real], np.concatenate(qcs)[:real]


def _subset(seed: int, salt: int, total: int, n: int) -> np.ndarray:
    perm = np.asarray(jax.random.permutation(jax.random.fold_in(jax.random.key(seed), salt), total))
    return np.sort(perm[:n])


def _mean_std(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = a.mean(axis=-1)
    std = a.std(axis=-1, ddof=1) if a.shape[-1] > 1 else np.zeros_like(mean)
    return mean, std


def _result(setting, values, systems, seeds, m, ms, fi, k, n_ref, n_cand, **extra) -> MauveSweepResult:
    shape = (len(values), len(systems), len(seeds))
    m, ms, fi = (np.asarray(a, np.float64).reshape(shape) for a in (m, ms, fi))
    mean, std = _mean_std(m)
    return MauveSweepResult(mauve=m, mauve_star=ms, frontier_integral=fi, mauve_mean=mean, mauve_std=std,
                            num_buckets=np.asarray(k, np.int64).reshape(shape[:2]),
                            num_references=np.asarray(n_ref, np.int64).reshape(shape[:2]),
                            num_candidates=np.asarray(n_cand, np.int64).reshape(shape[:2]), setting=setting,
                            values=tuple(values), systems=tuple(systems), seeds=tuple(seeds), **extra)


def _check_values(over: str, values: Any, n_min: int) -> tuple:
    if values is None:
        if over == "n":
            values = sorted({max(min(20, n_min), n_min // d) for d in (8, 4, 2, 1)})
        elif over == "k":
            values = ("auto",)
        elif over == "c":
            values = (1.0, 2.0, 5.0, 10.0)
        else:
            values = ("kmeans", "drmm", "lattice")
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"values: expected a sequence of {over} values, got {type(values).__name__}")
    values = tuple(values)
    if not values:
        raise ValueError("values: at least one value is needed")
    out = []
    for v in values:
        if over == "n":
            v = V.check_int(v, "values", minimum=2)
            if v > n_min:
                raise ValueError(f"values: sample size {v} exceeds the smallest set ({n_min} rows)")
        elif over == "k":
            if not (isinstance(v, str) and v == "auto"):
                v = V.check_int(v, "values", minimum=2)
        elif over == "c":
            v = float(V.check_positive(v, "values"))
        out.append(v)
    if over != "quantizer" and len(set(out)) != len(out):
        raise ValueError(f"values: repeated values in {tuple(out)}")
    return tuple(out)


# --------------------------------------------------------------------------- public API


def mauve_sweep(
    *,
    references: Any,
    candidates: Mapping[str, Any],
    over: str,
    values: Sequence[Any] | None = None,
    seeds: Sequence[int] = _DEFAULT_SEEDS,
    num_buckets: int | str = "auto",
    mauve_scaling_factor: float = 5.0,
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    pca_max_data: int = -1,
    divergence_curve_discretization_size: int = 25,
    quantizer_options: Mapping[str, Mapping[str, Any]] | None = None,
    batch_size: int | None = None,
) -> MauveSweepResult:
    """MAUVE of several candidate systems against one reference set, along one setting.

    For every value ``v`` of the setting ``over``, system ``m`` and seed ``s``:
    ``MAUVE(P_s, Q_{m,s})`` with the setting set to ``v`` (P = references = human text, Q =
    candidates); the result reports mean ± s.d. over the seeds. See the module doc for how
    the problems share one compiled computation and how keys are derived (``jax.random.key(s)``).

    * ``over="n"``: ``values`` are sample sizes per side (default: ``n_min / 8, / 4, / 2, n_min``,
      at least 20); P and every Q are subsampled to ``n`` rows per seed; ``k`` follows
      ``num_buckets`` (``'auto'``: ``max(2, round(n / 10))``, the paper's Figure 4).
    * ``over="k"``: ``values`` are cluster counts (ints, or ``'auto'``), all rows.
    * ``over="c"``: ``values`` are scaling constants (one quantization per seed, scored for every
      ``c``).
    * ``over="quantizer"``: ``values`` are quantizer names (``'kmeans'``, ``'drmm'``, ``'lattice'``
      or any registered name) or :class:`~jaxmetrics.mauve.quantizers.Quantizer` instances.
      k-means runs in the shared computation; the others are fitted on each ``[Q; P]`` with key
      ``jax.random.key(s)``, as ``compute_mauve_seeds(quantizer=...)`` does (DRMM and lattice train
      networks: minutes on a CPU). ``quantizer_options={name: kwargs}`` go to
      :func:`~jaxmetrics.mauve.quantizers.get_quantizer`.

    Args:
      references: ``[n_p, d]`` features of the human text (P).
      candidates: ``{system name: [n_m, d] features}`` of the model texts (Q).
      over: ``"n"``, ``"k"``, ``"c"`` or ``"quantizer"``.
      values: the setting's values (defaults above).
      seeds: integer seeds (default ``(25, ..., 29)``); the keys are ``jax.random.key(s)``.
      num_buckets: ``k`` where ``over`` is not ``"k"``: ``'auto'`` (``max(2, round(min(n_p, n_q) / 10))``
        of the rows used) or an integer.
      mauve_scaling_factor: ``c`` where ``over`` is not ``"c"``.
      kmeans_explained_var, kmeans_num_redo, kmeans_max_iter, pca_max_data,
      divergence_curve_discretization_size: as in :func:`~jaxmetrics.mauve.compute_mauve`.
      quantizer_options: extra keyword arguments per quantizer name (``over="quantizer"``).
      batch_size: k-means problems per compiled call; ``None`` (default) runs them all in one call.
        Set it when ``problems x kmeans_num_redo x rows x k_max`` floats do not fit in memory
        (the chunks share one compiled program).

    Returns:
      :class:`MauveSweepResult` (arrays ``[V, M, S]`` and ``[V, M]``; ``rows()``, ``to_csv()``,
      ``plot()``).

    Examples:
      >>> import numpy as np
      >>> from jaxmetrics.mauve import mauve_sweep, rank_agreement
      >>> rng = np.random.default_rng(0)
      >>> human = rng.normal(size=(100, 8))
      >>> systems = {f"shift {s}": rng.normal(size=(100, 8)) + s for s in (0.0, 0.5, 1.5)}
      >>> res = mauve_sweep(references=human, candidates=systems, over="k", values=(5, 10), seeds=(1, 2, 3, 4))
      >>> res.mauve.shape, res.mauve_mean.shape
      ((2, 3, 4), (2, 3))
      >>> bool(np.all(res.mauve_mean[:, 0] > res.mauve_mean[:, 2]))
      True
      >>> round(rank_agreement(res).min_spearman, 6)
      1.0
      >>> res.rows()[0]  # doctest: +ELLIPSIS
      MauveSweepRow(setting='k', value=5, system='shift 0.0', mauve_mean=..., num_buckets=5, ...)
    """
    if over not in SWEEP_AXES:
        raise ValueError(f"over: expected one of {SWEEP_AXES} (text length: mauve_length_sweep), got {over!r}")
    p, systems = _check_systems(references, candidates)
    seeds = _check_seeds(seeds)
    _check_common(kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
                  kmeans_max_iter=kmeans_max_iter, pca_max_data=pca_max_data,
                  num_points=divergence_curve_discretization_size, scaling=mauve_scaling_factor)
    n_min = min([p.shape[0]] + [q.shape[0] for q in systems.values()])
    values = _check_values(over, values, n_min)
    if batch_size is not None:
        V.check_int(batch_size, "batch_size", minimum=1)
    if quantizer_options is not None and not isinstance(quantizer_options, Mapping):
        raise TypeError("quantizer_options: expected a mapping {quantizer name: keyword arguments}")
    names = list(systems)
    stacks = _Stacks([(p, systems[m]) for m in names], jax.random.key(seeds[0]), explained_var=kmeans_explained_var,
                     pca_max_data=pca_max_data)
    common = dict(num_redo=kmeans_num_redo, max_iter=kmeans_max_iter, batch_size=batch_size)
    num_points = divergence_curve_discretization_size
    c_fixed = (float(mauve_scaling_factor),)

    if over in ("n", "k", "c"):
        probs, n_ref, n_cand = _Problems(), [], []
        settings = values if over != "c" else (None,)
        for v in settings:
            for i, m in enumerate(names):
                n_p, n_q = p.shape[0], systems[m].shape[0]
                if over == "n":
                    n_p = n_q = v
                k = _resolve_k(v if over == "k" else num_buckets, n_p, n_q)
                for s in seeds:
                    q_rows = _subset(s, 13, systems[m].shape[0], n_q) if over == "n" else np.arange(n_q)
                    p_rows = _subset(s, 11, p.shape[0], n_p) if over == "n" else np.arange(n_p)
                    probs.add(i, q_rows, p_rows, k, s)
                n_ref.append(n_p)
                n_cand.append(n_q)
        pc, qc = probs.counts(stacks, **common)
        scaling = values if over == "c" else c_fixed
        m_, fi, ms = _scores(pc, qc, probs.k, scaling, num_points)
        ks = np.asarray(probs.k).reshape(len(settings), len(names), len(seeds))[:, :, 0]
        if over == "c":  # one quantization scored for every c: [C, M*S] -> [V, M, S]
            ks = np.broadcast_to(ks, (len(values), len(names)))
            n_ref, n_cand = n_ref * len(values), n_cand * len(values)
        return _result(over, values, names, seeds, m_, ms, fi, ks, n_ref, n_cand)

    # over == "quantizer"
    opts = dict(quantizer_options or {})
    pcs, qcs, kact, ks = [], [], [], []
    labels = []
    for v in values:
        label = v if isinstance(v, str) else type(v).__name__
        labels.append(label)
        for i, m in enumerate(names):
            q = systems[m]
            k = _resolve_k(num_buckets, p.shape[0], q.shape[0])
            if isinstance(v, str) and v == "kmeans" and not opts.get("kmeans"):
                probs = _Problems()
                for s in seeds:
                    probs.add(i, np.arange(q.shape[0]), np.arange(p.shape[0]), k, s)
                pc, qc = probs.counts(stacks, **common)
                nb = k
            else:
                quant = get_quantizer(v, k, **opts.get(label, {})) if isinstance(v, str) else get_quantizer(v, k)
                stacked = np.concatenate([q, p], axis=0)
                pc, qc = [], []
                for s in seeds:
                    fitted = quant.fit(stacked, key=jax.random.key(s))
                    tl = getattr(fitted, "train_labels", None)
                    lab = np.asarray(tl if tl is not None and tl.shape[0] == stacked.shape[0]
                                     else fitted.assign(stacked))
                    nb = int(fitted.num_bins)
                    qc.append(np.bincount(lab[:q.shape[0]], minlength=nb))
                    pc.append(np.bincount(lab[q.shape[0]:], minlength=nb))
            for a, b in zip(pc, qc):
                pcs.append(np.asarray(a))
                qcs.append(np.asarray(b))
                kact.append(nb)
            ks.append(nb)
    width = max(kact)
    pad = lambda c: np.pad(c, (0, width - c.shape[0]))
    m_, fi, ms = _scores(np.stack([pad(c) for c in pcs]), np.stack([pad(c) for c in qcs]), kact, c_fixed, num_points)
    n_ref = [p.shape[0]] * (len(values) * len(names))
    n_cand = [systems[m].shape[0] for _ in values for m in names]
    return _result("quantizer", labels, names, seeds, m_, ms, fi, ks, n_ref, n_cand)


def _token_lengths(texts: list[str], lm: Any) -> np.ndarray:
    enc = lm.tokenizer(texts, truncation=False, return_attention_mask=False, return_token_type_ids=False,
                       verbose=False)
    return np.asarray([len(x) for x in enc["input_ids"]], np.int64)


def mauve_length_sweep(
    *,
    references: Sequence[str],
    candidates: Mapping[str, Sequence[str]],
    model: Any,
    lengths: Sequence[int],
    seeds: Sequence[int] = _DEFAULT_SEEDS,
    pooling: str = "auto",
    batch_size: int = 8,
    num_buckets: int | str = "auto",
    mauve_scaling_factor: float = 5.0,
    kmeans_explained_var: float = 0.9,
    kmeans_num_redo: int = 5,
    kmeans_max_iter: int = 500,
    divergence_curve_discretization_size: int = 25,
    progress: bool = False,
) -> MauveSweepResult:
    """MAUVE against the maximum text length (the paper's Figure 3), from texts.

    For every length ``L``, every text is truncated to its first ``L`` tokens and featurized
    again (a decoder: its last token's hidden state, mauve-text's convention; an encoder: the
    mean over its tokens; ``pooling`` chooses, as ``jaxmetrics mauve --pooling``); then MAUVE of
    each system is computed as in :func:`mauve_sweep` (all lengths, systems and seeds in one
    compiled k-means call). Next to the scores the result holds each side's token length
    distribution after truncation (mean and 10 / 50 / 90 % quantiles): when a side's texts are
    shorter than ``L`` the setting no longer changes them.

    Args:
      references: human texts (P).
      candidates: ``{system name: model texts}`` (Q).
      model: featurizer: a loaded model, a hub id or a local checkpoint directory
        (:func:`jaxmetrics.models.resolve_model`).
      lengths: maximum lengths in tokens (each at most the model's positions).
      seeds: integer seeds; keys ``jax.random.key(s)``.
      pooling: ``'auto'`` (mean for encoders, last token for decoders), ``'last'`` or ``'mean'``.
      batch_size: texts per forward pass.
      num_buckets, mauve_scaling_factor, kmeans_explained_var, kmeans_num_redo, kmeans_max_iter,
      divergence_curve_discretization_size: as in :func:`mauve_sweep`.
      progress: show the featurizer's progress bars.

    Returns:
      :class:`MauveSweepResult` with ``setting='length'`` and the length fields filled.

    Examples:
      >>> from jaxmetrics.data import demo_model_dir, load_shakespeare
      >>> from jaxmetrics.mauve import mauve_length_sweep
      >>> texts = load_shakespeare("heldout", min_words=12)
      >>> res = mauve_length_sweep(references=texts[:40], candidates={"other": texts[40:80]},
      ...                          model=demo_model_dir(), lengths=(8, 32), seeds=(1, 2))
      >>> res.mauve.shape, bool(res.references_length_mean[0] <= 8)
      ((2, 1, 2), True)
    """
    from jaxmetrics.models import featurize, resolve_model, sentence_embeddings

    refs = V.check_texts(references, "references", drop_empty=True)
    if not isinstance(candidates, Mapping) or not candidates:
        raise TypeError("candidates: expected a non-empty mapping {system name: list of texts}")
    cands = {}
    for name, texts in candidates.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"candidates: system names must be non-empty strings, got {name!r}")
        cands[name] = V.check_texts(texts, f"candidates[{name!r}]", drop_empty=True)
    if isinstance(lengths, (str, bytes)) or not hasattr(lengths, "__iter__") or not len(tuple(lengths)):
        raise TypeError("lengths: expected a non-empty sequence of token counts")
    lengths = tuple(V.check_int(v, "lengths", minimum=1) for v in lengths)
    if len(set(lengths)) != len(lengths):
        raise ValueError(f"lengths: repeated values in {lengths}")
    if pooling not in ("auto", "last", "mean"):
        raise ValueError(f"pooling: expected 'auto', 'last' or 'mean', got {pooling!r}")
    seeds = _check_seeds(seeds)
    V.check_int(batch_size, "batch_size", minimum=1)
    _check_common(kmeans_explained_var=kmeans_explained_var, kmeans_num_redo=kmeans_num_redo,
                  kmeans_max_iter=kmeans_max_iter, pca_max_data=-1,
                  num_points=divergence_curve_discretization_size, scaling=mauve_scaling_factor)
    lm = resolve_model(model)
    limit = getattr(lm, "max_positions", None)
    if limit is not None and max(lengths) > limit:
        raise ValueError(f"lengths: {max(lengths)} exceeds the model's {limit} positions")
    kind = pooling if pooling != "auto" else ("last" if getattr(lm, "is_causal", False) else "mean")
    pool = featurize if kind == "last" else sentence_embeddings
    names = list(cands)
    raw = {"references": _token_lengths(refs, lm)} | {m: _token_lengths(t, lm) for m, t in cands.items()}

    def feats(texts, length):
        with warnings.catch_warnings():  # truncation is the point of the sweep
            warnings.filterwarnings("ignore", message=r".*longer than max_length")
            return np.asarray(pool(texts, model=lm, max_length=length, batch_size=batch_size, progress=progress))

    pairs = []
    for length in lengths:
        p = feats(refs, length)
        for m in names:
            pairs.append((p, feats(cands[m], length)))
    stacks = _Stacks(pairs, jax.random.key(seeds[0]), explained_var=kmeans_explained_var, pca_max_data=-1)
    probs, n_ref, n_cand = _Problems(), [], []
    for j, (p, q) in enumerate(pairs):
        k = _resolve_k(num_buckets, p.shape[0], q.shape[0])
        for s in seeds:
            probs.add(j, np.arange(q.shape[0]), np.arange(p.shape[0]), k, s)
        n_ref.append(p.shape[0])
        n_cand.append(q.shape[0])
    pc, qc = probs.counts(stacks, num_redo=kmeans_num_redo, max_iter=kmeans_max_iter)
    m_, fi, ms = _scores(pc, qc, probs.k, (float(mauve_scaling_factor),), divergence_curve_discretization_size)
    ks = np.asarray(probs.k).reshape(len(lengths), len(names), len(seeds))[:, :, 0]

    def stats(n_tokens, length):
        cut = np.minimum(n_tokens, length).astype(np.float64)
        return cut.mean(), np.quantile(cut, _QUANTILES)

    ref_stats = [stats(raw["references"], L) for L in lengths]
    cand_stats = [[stats(raw[m], L) for m in names] for L in lengths]
    return _result(
        "length", lengths, names, seeds, m_, ms, fi, ks, n_ref, n_cand,
        references_length_mean=np.asarray([a for a, _ in ref_stats]),
        references_length_quantiles=np.asarray([b for _, b in ref_stats]),
        candidates_length_mean=np.asarray([[a for a, _ in row] for row in cand_stats]),
        candidates_length_quantiles=np.asarray([[b for _, b in row] for row in cand_stats]))


def _ranks(x: np.ndarray) -> np.ndarray:
    """Average ranks (1 = largest) along the last axis."""
    out = np.empty_like(x, dtype=np.float64)
    for idx in np.ndindex(x.shape[:-1]):
        v = -np.asarray(x[idx], np.float64)
        order = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        r[order] = np.arange(1, len(v) + 1)
        for val in np.unique(v):  # ties: average rank
            tie = v == val
            r[tie] = r[tie].mean()
        out[idx] = r
    return out


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
      >>> from jaxmetrics.mauve.sweeps import MauveSweepResult, rank_agreement
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
    ranks = _ranks(np.asarray(sweep.mauve_mean))
    centred = ranks - ranks.mean(axis=1, keepdims=True)
    norm = np.sqrt(np.sum(centred ** 2, axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = (centred @ centred.T) / np.outer(norm, norm)
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
    mean = d.mean(axis=1)
    sd = d.std(axis=1, ddof=1)
    se = sd / math.sqrt(s)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(se > 0, mean / np.where(se > 0, se, 1.0), np.where(mean == 0, 0.0, np.sign(mean) * np.inf))
        corr = np.asarray([np.corrcoef(x, y)[0, 1] if x.std() > 0 and y.std() > 0 else np.nan for x, y in zip(a, b)])
    p = 2.0 * stats.t.sf(np.abs(t), df=s - 1)
    unpaired = np.sqrt(a.var(axis=1, ddof=1) / s + b.var(axis=1, ddof=1) / s)
    return PairedMauveDifference(difference=mean, difference_std=sd, standard_error=se, t_statistic=t, p_value=p,
                                 exceeds_seed_noise=p < alpha, unpaired_standard_error=unpaired, correlation=corr,
                                 num_seeds=s, alpha=float(alpha), system=system, baseline=baseline,
                                 setting=sweep.setting, values=sweep.values)
