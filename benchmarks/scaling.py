"""Scaling: k-means and perplexity time on 1, 2, 4, 8 simulated CPU devices, and the memory of a
streaming evaluation vs loading everything at once.

Time. Each device count runs in its own subprocess started with
``XLA_FLAGS=--xla_force_host_platform_device_count=D`` (the flag is read once, when JAX starts).
The inputs are sharded over a 1-D mesh of the ``D`` devices (``jaxmetrics.sharding.shard``) and
the unchanged jitted kernels run on them — XLA's SPMD partitioner inserts the collectives:

* k-means: :func:`jaxmetrics.mauve.kmeans` (``--kmeans-n`` rows of 64 features, 50
  clusters, 1 restart, 20 Lloyd steps; assignment and centroid updates inside one jit);
* perplexity: :func:`jaxmetrics.lm.score_windows` on a random GPT-2 (4 layers, 128
  wide, 1000 tokens of vocabulary), ``--windows`` windows of 128 tokens sharded over devices.

Simulated devices share the machine's cores, so the curve shows the partitioning overhead and
whatever parallelism the cores allow, not the speed-up of real accelerators. Times are the
median of ``--reps`` steady-state calls (compilation excluded).

Memory. Perplexity and LM scores over ``--tokens`` tokens with a ``--vocab`` vocabulary, each mode
in its own subprocess, peak resident set size (``ru_maxrss``) of that process:

* streaming: logits made batch by batch (``--batch-tokens`` at a time) and folded into a
  :class:`~jaxmetrics.lm.PerplexityState` and :class:`~jaxmetrics.lm.LMScoreState`;
* all at once: the whole ``[tokens, vocab]`` logits array in memory, one call of
  ``perplexity_stats`` / ``lm_score_stats``.

Both modes draw the same logits (one key per batch) and must give the same perplexity.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/scaling.py --quick
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/scaling.py   # 1M tokens
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------ workers
def _median_time(fn, reps: int) -> float:
    import jax

    jax.block_until_ready(fn())  # compile + warm up
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        ts.append(time.perf_counter() - t0)
    return sorted(ts)[len(ts) // 2]


def worker_time(args) -> dict:
    import tempfile

    import jax
    import numpy as np

    from jaxmetrics.lm import score_windows
    from jaxmetrics.mauve.quantize.clustering import kmeans
    from jaxmetrics.models import load_model
    from jaxmetrics.testing import tiny_checkpoint
    from jaxmetrics.sharding import make_mesh, shard

    assert len(jax.devices()) == args.devices
    mesh = make_mesh()
    rng = np.random.default_rng(0)
    x = shard(rng.normal(size=(args.kmeans_n, 64)).astype(np.float32), mesh)
    km = jax.jit(lambda a: kmeans(a, jax.random.key(0), num_clusters=50, num_redo=1, max_iter=20,
                                  max_points_per_centroid=1 << 20).centroids)
    t_km = _median_time(lambda: km(x), args.reps)

    lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp(), num_layers=4, hidden=128, heads=4,
                                    max_positions=128, vocab_size=1000))
    W, T = args.windows, 128
    ids = rng.integers(0, 1000, size=(W, T)).astype(np.int32)
    am = np.ones((W, T), bool)
    sids, sam = shard((ids, am), mesh)
    t_ppl = _median_time(lambda: score_windows(sids, sam, sids, model=lm), args.reps)
    return {"devices": args.devices, "kmeans_s": t_km, "perplexity_s": t_ppl,
            "perplexity_tokens": W * (T - 1)}


def worker_memory(args) -> dict:
    import jax
    import jax.numpy as jnp

    from jaxmetrics.lm import LMScoreState, PerplexityState, lm_score_stats, perplexity_stats

    B, V = args.batch_tokens, args.vocab
    n_batches = -(-args.tokens // B)
    keys = jax.random.split(jax.random.key(0), n_batches)

    @jax.jit
    def batch(k):
        kl, kt = jax.random.split(k)
        return jax.random.normal(kl, (B, V)) * 3, jax.random.randint(kt, (B,), 0, V)

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if args.memory == "stream":
        ppl, sc = PerplexityState.empty(), LMScoreState.empty(epsilon=1e-3, top_p=0.9)
        step = jax.jit(lambda p, s, lg, tg: (p.update(lg, tg), s.update(lg, tg)))
        for k in keys:
            ppl, sc = step(ppl, sc, *batch(k))
        value = float(ppl.compute())
        eps = sc.compute().epsilon_perplexity
    else:
        parts = [batch(k) for k in keys]
        logits = jnp.concatenate([p[0] for p in parts])
        targets = jnp.concatenate([p[1] for p in parts])
        del parts
        st = perplexity_stats(logits, targets)
        value = float(jnp.exp(st.nll_sum / st.count))
        s2 = lm_score_stats(logits, targets, epsilon=1e-3, top_p=0.9)
        eps = float(jnp.exp(-s2.eps_log_sum / s2.count))
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"mode": args.memory, "tokens": n_batches * B, "perplexity": value, "eps_ppl": eps,
            "peak_rss_mib": peak / 1024, "growth_mib": (peak - base) / 1024, "seconds": seconds}


# ------------------------------------------------------------------------------ driver
def _run(extra: list[str], env_extra: dict) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", **env_extra)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, __file__, *extra], capture_output=True, text=True, env=env)
    if res.returncode:
        raise RuntimeError(res.stderr[-3000:])
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--devices", default="1,2,4,8", help="device counts, comma separated")
    ap.add_argument("--kmeans-n", type=int, default=32768)
    ap.add_argument("--windows", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=1_000_000)
    ap.add_argument("--vocab", type=int, default=128)
    ap.add_argument("--batch-tokens", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "scaling.md"))
    ap.add_argument("--worker", choices=["time"], help=argparse.SUPPRESS)
    ap.add_argument("--memory", choices=["stream", "full"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.kmeans_n, args.windows, args.tokens, args.reps = 4096, 16, 100_000, 2
    if args.worker == "time":
        args.devices = len(__import__("jax").devices())
        print(json.dumps(worker_time(args)))
        return
    if args.memory:
        print(json.dumps(worker_memory(args)))
        return

    common = ["--kmeans-n", str(args.kmeans_n), "--windows", str(args.windows), "--reps", str(args.reps),
              "--tokens", str(args.tokens), "--vocab", str(args.vocab), "--batch-tokens", str(args.batch_tokens)]
    rows = []
    for d in [int(v) for v in args.devices.split(",")]:
        r = _run(["--worker", "time", *common], {"XLA_FLAGS": f"--xla_force_host_platform_device_count={d}"})
        rows.append(r)
        print(f"devices={d}: k-means {r['kmeans_s']:.3f} s, perplexity {r['perplexity_s']:.3f} s", flush=True)
    mem = [_run(["--memory", m, *common], {}) for m in ("stream", "full")]

    t1 = rows[0]
    lines = [
        "# Scaling: simulated devices and streaming memory",
        "",
        f"CPU cores: {os.cpu_count()}; devices are simulated CPU devices sharing those cores "
        "(`--xla_force_host_platform_device_count`), one subprocess per count.",
        "",
        f"k-means: {args.kmeans_n} x 64 features, 50 clusters, 20 Lloyd steps. Perplexity: "
        f"{args.windows} windows x 128 tokens, random GPT-2 (4 layers, 128 wide). Median of {args.reps}.",
        "",
        "| devices | k-means (s) | speed-up | perplexity windows (s) | tokens/s | speed-up |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['devices']} | {r['kmeans_s']:.3f} | {t1['kmeans_s'] / r['kmeans_s']:.2f}x | "
                     f"{r['perplexity_s']:.3f} | {r['perplexity_tokens'] / r['perplexity_s']:,.0f} | "
                     f"{t1['perplexity_s'] / r['perplexity_s']:.2f}x |")
    lines += [
        "",
        f"Streaming vs all at once: perplexity + LM scores over {mem[0]['tokens']:,} tokens, vocabulary "
        f"{args.vocab} (full logits = {mem[0]['tokens'] * args.vocab * 4 / 2**20:,.0f} MiB in float32), "
        f"batches of {args.batch_tokens} tokens. Peak RSS of each process.",
        "",
        "| mode | peak RSS (MiB) | growth during evaluation (MiB) | time (s) | perplexity | eps-PPL |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for m in mem:
        name = "streaming states" if m["mode"] == "stream" else "all at once"
        lines.append(f"| {name} | {m['peak_rss_mib']:,.0f} | {m['growth_mib']:,.0f} | {m['seconds']:.2f} | "
                     f"{m['perplexity']:.6f} | {m['eps_ppl']:.6f} |")
    table = "\n".join(lines) + "\n"
    save_table(table, args.out)


if __name__ == "__main__":
    main()
