"""Learned MAUVE quantizers and soft MAUVE: agreement with k-means, bin usage, timings on this CPU.

* Agreement: MAUVE with k-means (the default quantizer), DRMM (3 x 10) and the lattice
  quantizer, mean +- std over ``--seeds`` seeds, and the bins that receive points (P and Q
  together), on two graded families: Gaussian P ~ N(0, I_d) vs Q = Z + delta * 1 (one draw Z
  shared by the deltas; ``--gauss-n`` points per side, ``d``) and the real-text family of
  ``tests/realtext_family.py`` (Shakespeare sentences vs 25/50/75/100% word-shuffled,
  truncated, looped; MiniLM features; ``--text-n`` per side). Spearman of each learned
  quantizer's MAUVE with k-means' over a family's members closes each block.

* DRMM (3 layers x 10 components, 20 epochs, batch 64, Adam 0.005) and the lattice learner
  (spreading net d -> 768 -> 768 -> 4, triplet + KoLeo, 20 epochs, batch 64) trained on
  ``[Q; P]`` with ``n`` points per side in ``d`` dimensions (default n = 5000, d = 1024:
  10 000 training rows), P ~ N(0, I), Q ~ N(0.1 * 1, I). First fit (includes XLA compilation)
  and a second fit with a new key (steady state); compile = first - second. The MAUVE of
  P vs Q with the fitted quantizer is printed for context.
* soft MAUVE forward + backward (``jax.value_and_grad`` of :func:`soft_mauve` with respect to
  the Q features) at n points per side and k centroids in d dimensions, jitted: first call
  and the mean of ``--repeats`` steady calls.
* Lattice time per epoch: the steady fit divided by its epochs.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/mauve_quantizers.py --quick
  ... --n 5000 --d 1024 --k 500 --num-epochs 20 --gauss-n 2000 --text-n 1000 --seeds 5
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

import numpy as np


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000, help="points per side")
    ap.add_argument("--d", type=int, default=1024, help="feature dimension")
    ap.add_argument("--k", type=int, default=500, help="centroids for soft MAUVE")
    ap.add_argument("--num-epochs", type=int, default=20, help="training epochs of DRMM and the lattice learner")
    ap.add_argument("--repeats", type=int, default=3, help="steady-state soft-MAUVE calls to average")
    ap.add_argument("--gauss-n", type=int, default=2000, help="points per side in the Gaussian family")
    ap.add_argument("--text-n", type=int, default=1000, help="sentences per side in the real-text family (0: skip)")
    ap.add_argument("--seeds", type=int, default=5, help="seeds per MAUVE value")
    ap.add_argument("--lattice-epochs", type=int, default=None, help="lattice epochs in the agreement table "
                    "(default: --num-epochs)")
    ap.add_argument("--quick", action="store_true", help="n=400, d=64, k=40, 2 epochs (smoke run)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "mauve_quantizers.md"))
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.d, args.k, args.num_epochs = 400, 64, 40, 2
        args.gauss_n, args.text_n, args.seeds = 300, 0, 2
    if args.lattice_epochs is None:
        args.lattice_epochs = args.num_epochs

    import jax
    import jax.numpy as jnp

    from jaxmetrics.mauve import DRMMQuantizer, LatticeQuantizer, hard_mauve, soft_mauve

    rng = np.random.default_rng(0)
    p = rng.standard_normal((args.n, args.d)).astype(np.float32)
    q = (rng.standard_normal((args.n, args.d)) + 0.1).astype(np.float32)
    stacked = np.concatenate([q, p])

    rows = []
    for name, quant in (
        ("DRMM 3x10", DRMMQuantizer(num_epochs=args.num_epochs)),
        ("Lattice (spreading net + Z8, lambda 0.1, default r2)", LatticeQuantizer(num_epochs=args.num_epochs)),
    ):
        fitted, t_first = _timed(lambda: jax.block_until_ready(quant.fit(stacked, key=jax.random.key(0))))
        fitted, t_steady = _timed(lambda: jax.block_until_ready(quant.fit(stacked, key=jax.random.key(1))))
        m = float(hard_mauve(references=p, candidates=q, quantizer=fitted).mauve)
        epochs_run = len(getattr(fitted, "losses", ())) or args.num_epochs  # DRMM stops at an EM fixed point
        rows.append((name, 2 * args.n, epochs_run, t_first, t_steady, max(t_first - t_steady, 0.0), m,
                     t_steady / epochs_run))

    cent = jnp.asarray(rng.standard_normal((args.k, args.d)), jnp.float32)
    pj, qj = jnp.asarray(p), jnp.asarray(q)
    # ||x - c||^2 varies across centroids by ~sqrt(6 d) for N(0, I) data and centroids: a
    # temperature of that order keeps the softmax informative (neither uniform nor one-hot).
    tau = float(np.sqrt(6.0 * args.d))

    @jax.jit
    def fwd_bwd(p_, q_, c_, t_):
        return jax.value_and_grad(lambda x: soft_mauve(references=p_, candidates=x, quantizer=c_, temperature=t_).mauve)(q_)

    (val, _), t_first_soft = _timed(lambda: jax.block_until_ready(fwd_bwd(pj, qj, cent, tau)))
    ts = []
    for _ in range(args.repeats):
        _, t = _timed(lambda: jax.block_until_ready(fwd_bwd(pj, qj, cent, tau)))
        ts.append(t)
    t_soft = float(np.mean(ts))

    lines = [
        "### MAUVE quantizers: DRMM / lattice training and soft-MAUVE gradients",
        "",
        f"P ~ N(0, I), Q ~ N(0.1, I), {args.n} points per side, d = {args.d}; jax {jax.__version__} on "
        f"{jax.devices()[0].platform}, {os.cpu_count()} CPUs.",
        "",
        "| quantizer | training rows | epochs run | first fit s | steady fit s | compile s | steady s / epoch "
        "| MAUVE(P, Q) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} | {r[7]:.3f} | {r[6]:.4f} |")
    lines += [
        "",
        "| soft MAUVE value_and_grad | n per side | k | d | first call s | steady ms (mean of "
        f"{args.repeats}) | soft MAUVE |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| w.r.t. Q features, tau = {tau:.1f} | {args.n} | {args.k} | {args.d} | {t_first_soft:.3f} | "
        f"{1e3 * t_soft:.1f} | {float(val):.4f} |",
    ]
    lines += ["", *_agreement(args)]
    table = "\n".join(lines) + "\n"
    return save_table(table, args.out)


def _gauss_family(n, d, deltas):
    rng = np.random.default_rng(0)
    p = rng.standard_normal((n, d)).astype(np.float32)
    z = rng.standard_normal((n, d)).astype(np.float32)
    return {f"delta = {delta:g}": (p, z + np.float32(delta)) for delta in deltas}


def _text_family(n):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from realtext_family import graded_family  # the tests' family (MiniLM features, cached on disk)

    cache = Path(__file__).resolve().parents[1] / ".pytest_cache" / "d" / "realtext_family"
    cache.mkdir(parents=True, exist_ok=True)
    return graded_family(n, 0, str(cache))


def _agreement(args) -> list[str]:
    """One table: MAUVE (mean +- std over seeds) and occupied bins per quantizer and pair."""
    from scipy.stats import spearmanr

    from jaxmetrics.mauve import DRMMQuantizer, LatticeQuantizer, compute_mauve

    quants = (("k-means", "kmeans"), ("DRMM 3x10", DRMMQuantizer(num_epochs=args.num_epochs)),
              ("Lattice (default: Z8, lambda 0.1)", LatticeQuantizer(num_epochs=args.lattice_epochs)))
    families = [(f"Gaussian d={args.d}, n={args.gauss_n}", _gauss_family(args.gauss_n, args.d, (0.0, 0.05, 0.1, 0.3)))]
    if args.text_n:
        families.append((f"real text (MiniLM), n={args.text_n}", _text_family(args.text_n)))
    seeds = list(range(1, args.seeds + 1))
    head = " | ".join(f"{q} MAUVE | {q} bins" for q, _ in quants)
    lines = [
        f"### MAUVE-DRMM and MAUVE-Lattice against k-means ({len(seeds)} seeds, mean ± std; bins = bins "
        "holding at least one point of P or Q, mean over seeds)",
        "",
        f"| family | pair | {head} |",
        "|---|---|" + "---:|---:|" * len(quants),
    ]
    for fam_name, fam in families:
        means = {q: [] for q, _ in quants}
        for pair, (p, q) in fam.items():
            cells = []
            for qname, quant in quants:
                outs = [compute_mauve(p_features=p, q_features=q, quantizer=quant, seed=s) for s in seeds]
                vals = np.array([o.mauve for o in outs])
                bins = np.mean([int(np.sum((np.asarray(o.p_counts) + np.asarray(o.q_counts)) > 0)) for o in outs])
                means[qname].append(vals.mean())
                cells.append(f"{vals.mean():.3f} ± {vals.std():.3f} | {bins:.0f}")
            lines.append(f"| {fam_name} | {pair} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
        cells = []
        for qname, _ in quants:
            cells += ["—", ""] if qname == "k-means" else [
                f"ρ = {spearmanr(means['k-means'], means[qname]).statistic:.3f}", ""]
        lines.append(f"| {fam_name} | Spearman with k-means | " + " | ".join(cells) + " |")
    return lines


if __name__ == "__main__":
    main()
