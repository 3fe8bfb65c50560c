"""The stages of the MAUVE sweeps: checked inputs, projected feature stacks, the batch of
k-means problems (the engine's :func:`~jaxmetrics.mauve.engine.masked_kmeans_counts`), scores
(:func:`~jaxmetrics.mauve.engine.mauve_scores`) and the result table."""
from __future__ import annotations

from typing import Any, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics import _validation as V
from jaxmetrics.mauve.sizes import _warn_at_caller, auto_num_buckets, check_sample_sizes, default_sample_sizes, few_points_message
from jaxmetrics.mauve.engine import KMEANS_SALT, masked_kmeans_counts, mauve_scores, project_features
from jaxmetrics.mauve.frontier.settings import FrontierSettings
from jaxmetrics.mauve.analysis.sweep_results import MauveSweepResult
from jaxmetrics.numerics import mean_std

__all__ = ["DEFAULT_SEEDS", "SWEEP_AXES", "Problems", "Stacks", "check_systems", "check_values", "resolve_k",
           "score_problems", "subset_rows", "sweep_result", "warn_thin"]

#: The settings :func:`~jaxmetrics.mauve.mauve_sweep` varies (``"length"`` is :func:`~jaxmetrics.mauve.mauve_length_sweep`'s).
SWEEP_AXES = ("n", "k", "c", "quantizer")
DEFAULT_SEEDS = (25, 26, 27, 28, 29)
#: The number of k-means problems is padded up to a multiple of this (copies of the first problem,
#: dropped afterwards), so that sweeps of slightly different sizes share one compiled program.
_PROBLEM_MULTIPLE = 8


def check_systems(references: Any, candidates: Any) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    p = V.check_features(references, "references", min_rows=2)
    if not isinstance(candidates, Mapping) or not candidates:
        raise TypeError("candidates: expected a non-empty mapping {system name: features [n, d]}")
    systems = {}
    for name, feats in candidates.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"candidates: system names must be non-empty strings, got {name!r}")
        systems[name] = V.check_features(feats, f"candidates[{name!r}]", dim=p.shape[1], min_rows=2)
    return np.asarray(p, np.float32), {k: np.asarray(v, np.float32) for k, v in systems.items()}


def resolve_k(num_buckets: Any, n_p: int, n_q: int, system: str = "candidates", thin: list | None = None,
               where: str = "") -> int:
    """k for ``n_p`` / ``n_q`` rows; MAUVE's minimum sizes raise (:func:`check_sample_sizes`), and a
    few-points message (:func:`few_points_message`) is appended to ``thin`` (one warning per sweep)."""
    if isinstance(num_buckets, str):
        if num_buckets != "auto":
            raise ValueError(f"num_buckets: expected 'auto' or an integer, got {num_buckets!r}")
        k = auto_num_buckets(n_p, n_q)
    else:
        k = V.check_int(num_buckets, "num_buckets", minimum=2)
    check_sample_sizes((n_p, n_q), k, (f"references{where}", f"candidates[{system!r}]{where}"),
                       blame_buckets=not isinstance(num_buckets, str))
    msg = few_points_message(min(n_p, n_q), k, name=f"num_buckets{where} ({system!r})")
    if msg and thin is not None:
        thin.append(msg)
    return k


def warn_thin(thin: list) -> None:
    """One warning for all the sweep's problems with few points per bucket."""
    if thin:
        more = f" (and {len(thin) - 1} more setting(s) and system(s))" if len(thin) > 1 else ""
        _warn_at_caller(thin[0].replace("; use more", f"{more}; use more", 1))


class Stacks:
    """Projected ``[Q; P]`` rows of several feature stacks, padded to one shape ``[Z, R, m]``.

    Each pair is projected as :func:`~jaxmetrics.mauve.compute_mauve` projects it (the engine's
    :func:`~jaxmetrics.mauve.engine.project_features` on all its rows with ``key(seed)``). The
    PCA depends on the seed only when it fits on a random subsample (``pca_max_data``); then
    there is one stack per (pair, seed), else one per pair. ``index[(pair, seed)]`` is the stack."""

    def __init__(self, pairs: list[tuple[np.ndarray, np.ndarray]], seeds: tuple[int, ...], *, explained_var: float,
                 pca_max_data: int):
        zs, self.n_q, self.n_p, self.index = [], [], [], {}
        for i, (p, q) in enumerate(pairs):
            stacked = np.concatenate([q, p], axis=0)
            per_seed = 0 < pca_max_data < stacked.shape[0]
            for s in (seeds if per_seed else seeds[:1]):
                z = project_features(stacked, key=jax.random.key(s), explained_var=explained_var,
                                     pca_max_data=pca_max_data).z
                zs.append(np.asarray(z))
                self.n_q.append(q.shape[0])
                self.n_p.append(p.shape[0])
            for j, s in enumerate(seeds):
                self.index[(i, s)] = len(zs) - (len(seeds) - j if per_seed else 1)
        rows = max(z.shape[0] for z in zs)
        width = max(z.shape[1] for z in zs)
        self.z = np.zeros((len(zs), rows, width), np.float32)
        for i, z in enumerate(zs):
            self.z[i, :z.shape[0], :z.shape[1]] = z


class Problems:
    """The k-means problems of a sweep: which stack, which rows (Q first, then P), k, key."""

    def __init__(self):
        self.stack, self.q_rows, self.p_rows, self.k, self.seed = [], [], [], [], []

    def add(self, stack: int, q_rows: np.ndarray, p_rows: np.ndarray, k: int, seed: int) -> None:
        self.stack.append(stack)
        self.q_rows.append(np.asarray(q_rows, np.int32))
        self.p_rows.append(np.asarray(p_rows, np.int32))
        self.k.append(int(k))
        self.seed.append(int(seed))

    def counts(self, stacks: Stacks, *, num_redo: int, max_iter: int,
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
        keys = jnp.stack([jax.random.fold_in(jax.random.key(s), KMEANS_SALT) for s in seeds])
        z = jnp.asarray(stacks.z)
        pcs, qcs = [], []
        for lo in range(0, b, chunk):  # one call unless batch_size splits the problems
            sl = slice(lo, lo + chunk)
            c = masked_kmeans_counts(z, jnp.asarray(stack[sl]), jnp.asarray(rows[sl]), jnp.asarray(mask[sl]),
                                     jnp.asarray(is_q[sl]), keys[sl], jnp.asarray(ks[sl]),
                                     jnp.asarray(max_iter, jnp.int32), num_clusters=max(self.k), num_redo=num_redo,
                                     max_points_per_centroid=256)
            pcs.append(np.asarray(c.p_counts))
            qcs.append(np.asarray(c.q_counts))
        return np.concatenate(pcs)[:real], np.concatenate(qcs)[:real]


def subset_rows(seed: int, salt: int, total: int, n: int) -> np.ndarray:
    """Rows kept for ``seed``: all of them in order when ``n == total``, else the first ``n`` of a
    permutation from ``fold_in(key(seed), salt)``, sorted."""
    if n == total:
        return np.arange(total)
    perm = np.asarray(jax.random.permutation(jax.random.fold_in(jax.random.key(seed), salt), total))
    return np.sort(perm[:n])


def score_problems(p_counts, q_counts, num_active, scaling, num_points):
    """MAUVE, FI and smoothed MAUVE ``[C, B]`` of counts ``[B, K]`` (the first ``num_active[b]``
    bins real) for every scaling constant of ``scaling [C]``: the engine's :func:`mauve_scores`."""
    out = [mauve_scores(p_counts, q_counts, scaling=float(c), num_points=num_points, num_active=num_active)
           for c in scaling]
    return tuple(np.stack([getattr(o, f) for o in out]) for f in ("mauve", "frontier_integral", "mauve_star"))


def sweep_result(setting, values, systems, seeds, m, ms, fi, k, n_ref, n_cand, **extra) -> MauveSweepResult:
    shape = (len(values), len(systems), len(seeds))
    m, ms, fi = (np.asarray(a, np.float64).reshape(shape) for a in (m, ms, fi))
    mean, std = mean_std(m, axis=-1)
    return MauveSweepResult(mauve=m, mauve_star=ms, frontier_integral=fi, mauve_mean=mean, mauve_std=std,
                            num_buckets=np.asarray(k, np.int64).reshape(shape[:2]),
                            num_references=np.asarray(n_ref, np.int64).reshape(shape[:2]),
                            num_candidates=np.asarray(n_cand, np.int64).reshape(shape[:2]), setting=setting,
                            values=tuple(values), systems=tuple(systems), seeds=tuple(seeds), **extra)


def check_values(over: str, values: Any, n_min: int) -> tuple:
    if values is None:
        if over == "n":
            values = default_sample_sizes(n_min)
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
        elif over == "c":  # the one check of c (FrontierSettings: c >= 1), reported as values
            v = FrontierSettings.resolve(None, names={"scaling": "values"}, scaling=v).scaling
        out.append(v)
    if over != "quantizer" and len(set(out)) != len(out):
        raise ValueError(f"values: repeated values in {tuple(out)}")
    return tuple(out)
