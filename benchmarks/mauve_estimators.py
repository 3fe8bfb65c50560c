"""MAUVE estimators of the journal paper side by side: agreement with k-means, seed spread, time, sample size.

On the graded real-text family (all-MiniLM-L6-v2 mean-pooled features of the bundled
Shakespeare sentences, ``tests/realtext_family.py``): P is ``n`` human sentences; Q is ``n`` other
sentences of which 0 / 25 / 50 / 75 / 100 % are replaced by their looping version (first third
repeated to the original length). For each estimator (k-means quantization = ``compute_mauve``,
k-NN, classifier, Gaussian) and each ``n`` in ``--sizes``: MAUVE mean +- s.d. over ``--seeds``
keys of every member, the Spearman correlation of the means with k-means', and the mean wall
time of one call (after a warm-up call of the same shapes, so compilation is excluded).

The sample-size table (``--sweep``, written to ``--sweep-out``) runs
``mauve_sweep(over="n", estimator=...)`` for every estimator on the largest family's
identical-distribution pair and 50 % member: each seed draws its own ``n`` rows per side from the
pool, so the s.d. over seeds is the spread a user sees from one sample of ``n`` texts (sampling
and the estimator's own randomness), i.e. how many samples each estimator needs for a stable
value. One sweep call per ``n`` (k-means pads every problem of a call to the largest one).

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mauve_estimators.py
  ... --sizes 1000 --seeds 2 --sweep 250,1000   (quick run)
  ... --sizes '' --sweep 250,1000,2500,10000 --seeds 5   (the sample-size table only)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

import numpy as np

SHARES = (0, 25, 50, 75, 100)
ESTIMATORS = ("kmeans", "knn", "classifier", "gaussian")


def family(n: int, cache: str | None) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from realtext_family import graded_family

    fam = graded_family(n, 0, cache, ("human", "repeated"))
    p, q_human = fam["human"]
    q_rep = fam["repeated"][1]
    order = np.random.default_rng(1).permutation(n)
    return p, {s: np.where((order < round(s / 100 * n))[:, None], q_rep, q_human) for s in SHARES}


def score(name: str, p, q, seed: int) -> float:
    import jax

    from jaxmetrics.mauve import compute_mauve
    from jaxmetrics.mauve.frontier.estimate import estimate_mauve

    if name == "kmeans":
        return compute_mauve(p_features=p, q_features=q, seed=seed).mauve
    return estimate_mauve(references=p, candidates=q, key=jax.random.key(seed), estimator=name).mauve


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000", help="points per side of the agreement tables")
    ap.add_argument("--seeds", type=int, default=3, help="seeds (keys) per value")
    ap.add_argument("--sweep", default="250,500,1000,2000,5000,10000", help="sizes of the sample-size table ('' skips)")
    ap.add_argument("--cache-dir", default=str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "d" / "realtext_family"))
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "mauve_estimators.md"))
    ap.add_argument("--sweep-out", default=str(Path(__file__).parent / "results" / "mauve_estimators_sample_size.md"))
    args = ap.parse_args(argv)
    from scipy.stats import spearmanr

    sizes = [int(s) for s in args.sizes.split(",") if s]
    seeds = list(range(args.seeds))
    lines = ["# MAUVE estimators: agreement with k-means, seed spread, time", "",
             f"Real-text family (MiniLM features, P = n human sentences, Q with 0-100 % looping rows); "
             f"mean ± s.d. over {len(seeds)} seeds; time = mean seconds per call after a warm-up of the same "
             f"shapes. Run on a 2-core CPU that other jobs may have been sharing: compare times within "
             f"one table only.", ""]
    for n in sizes:
        p, qs = family(n, args.cache_dir)
        lines += [f"## n = {n} per side", "",
                  "| estimator | " + " | ".join(f"{s} %" for s in SHARES) + " | Spearman vs k-means | s / call |",
                  "|---|" + "---:|" * (len(SHARES) + 2)]
        means = {}
        for name in ESTIMATORS:
            score(name, p, qs[50], seeds[0])  # warm-up (compilation)
            vals, t0 = [], time.perf_counter()
            for s in SHARES:
                vals.append([score(name, p, qs[s], seed) for seed in seeds])
            dt = (time.perf_counter() - t0) / (len(SHARES) * len(seeds))
            vals = np.asarray(vals)
            means[name] = vals.mean(axis=1)
            rho = spearmanr(means["kmeans"], means[name]).statistic
            cells = [f"{m:.3f} ± {sd:.3f}" for m, sd in zip(vals.mean(axis=1), vals.std(axis=1, ddof=1) if len(seeds) > 1
                                                          else np.zeros(len(SHARES)))]
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {rho:.2f} | {dt:.2f} |")
            print(lines[-1], flush=True)
        lines.append("")
    command = (f"Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mauve_estimators.py "
               f"--sizes '{args.sizes}' --seeds {args.seeds} --sweep '{args.sweep}'`")
    out = None
    if sizes:
        out = save_table("\n".join(lines + [command]) + "\n", args.out)
    sweep = [int(s) for s in args.sweep.split(",") if s]
    if sweep:
        out = sample_size_table(sweep, seeds, args.cache_dir, args.sweep_out, command)
    return out


def sample_size_table(sweep: list[int], seeds: list[int], cache_dir: str, path: str, command: str) -> str:
    from jaxmetrics.mauve import mauve_sweep

    big_p, big_qs = family(max(sweep), cache_dir)
    systems = {"0 %": big_qs[0], "50 %": big_qs[50]}
    lines = ["# MAUVE estimators: how many samples for a stable value", "",
             f"`mauve_sweep(over='n', estimator=...)` on the real-text family (MiniLM features; pool of "
             f"{max(sweep)} rows per side; Q identical in distribution (0 %) or with 50 % looping rows). Each of "
             f"{len(seeds)} seeds draws its own n rows per side, so mean ± s.d. is the spread of one sample of n "
             f"texts (sampling and the estimator's randomness); at n = {max(sweep)} every seed keeps the whole "
             f"pool, so only the estimator's own randomness is left. k-means is `estimator='quantized'` "
             f"(k = n / 10).", "",
             "| estimator | member | " + " | ".join(f"n = {n}" for n in sweep) + " |",
             "|---|---|" + "---:|" * len(sweep)]
    for name in ESTIMATORS:
        est = "quantized" if name == "kmeans" else name
        cells: dict[str, list[str]] = {m: [] for m in systems}
        for n in sweep:  # one call per n: k-means pads every problem of a call to the largest
            res = mauve_sweep(references=big_p, candidates=systems, over="n", values=(n,), seeds=seeds, estimator=est)
            for j, m in enumerate(systems):
                cells[m].append(f"{res.mauve_mean[0, j]:.3f} ± {res.mauve_std[0, j]:.3f}")
        for m in systems:
            lines.append(f"| {name} | {m} | " + " | ".join(cells[m]) + " |")
            print(lines[-1], flush=True)
    lines += ["", command]
    return save_table("\n".join(lines) + "\n", path)


if __name__ == "__main__":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    main()
