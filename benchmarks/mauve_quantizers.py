"""Learned MAUVE quantizers and soft MAUVE: training and gradient timings on this CPU.

* DRMM (3 layers x 10 components, 20 epochs, batch 64, Adam 0.005) and the lattice learner
  (spreading net d -> 768 -> 768 -> 4, triplet + KoLeo, 20 epochs, batch 64) trained on
  ``[Q; P]`` with ``n`` points per side in ``d`` dimensions (default n = 5000, d = 1024:
  10 000 training rows), P ~ N(0, I), Q ~ N(0.1 * 1, I). First fit (includes XLA compilation)
  and a second fit with a new key (steady state); compile = first - second. The MAUVE of
  P vs Q with the fitted quantizer is printed for context.
* soft MAUVE forward + backward (``jax.value_and_grad`` of :func:`soft_mauve` with respect to
  the Q features) at n points per side and k centroids in d dimensions, jitted: first call
  and the mean of ``--repeats`` steady calls.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/mauve_quantizers.py --quick
  ... --n 5000 --d 1024 --k 500 --num-epochs 20
"""
from __future__ import annotations

import argparse
import os
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
    ap.add_argument("--quick", action="store_true", help="n=400, d=64, k=40, 2 epochs (smoke run)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "mauve_quantizers.md"))
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.d, args.k, args.num_epochs = 400, 64, 40, 2

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
        ("Lattice (spreading net + Z4, r2=50)", LatticeQuantizer(num_epochs=args.num_epochs)),
    ):
        fitted, t_first = _timed(lambda: jax.block_until_ready(quant.fit(stacked, key=jax.random.key(0))))
        fitted, t_steady = _timed(lambda: jax.block_until_ready(quant.fit(stacked, key=jax.random.key(1))))
        m = float(hard_mauve(p, q, fitted).mauve)
        rows.append((name, 2 * args.n, args.num_epochs, t_first, t_steady, max(t_first - t_steady, 0.0), m))

    cent = jnp.asarray(rng.standard_normal((args.k, args.d)), jnp.float32)
    pj, qj = jnp.asarray(p), jnp.asarray(q)
    # ||x - c||^2 varies across centroids by ~sqrt(6 d) for N(0, I) data and centroids: a
    # temperature of that order keeps the softmax informative (neither uniform nor one-hot).
    tau = float(np.sqrt(6.0 * args.d))

    @jax.jit
    def fwd_bwd(p_, q_, c_, t_):
        return jax.value_and_grad(lambda x: soft_mauve(p_, x, c_, temperature=t_).mauve)(q_)

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
        "| quantizer | training rows | epochs | first fit s | steady fit s | compile s | MAUVE(P, Q) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.4f} |")
    lines += [
        "",
        "| soft MAUVE value_and_grad | n per side | k | d | first call s | steady ms (mean of "
        f"{args.repeats}) | soft MAUVE |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| w.r.t. Q features, tau = {tau:.1f} | {args.n} | {args.k} | {args.d} | {t_first_soft:.3f} | "
        f"{1e3 * t_soft:.1f} | {float(val):.4f} |",
    ]
    table = "\n".join(lines) + "\n"
    return save_table(table, args.out)


if __name__ == "__main__":
    main()
