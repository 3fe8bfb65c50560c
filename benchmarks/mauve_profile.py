"""MAUVE from features, stage by stage, at large sizes: where the time goes and at what fraction
of this machine's matrix-product rate the k-means runs.

Each size runs in a fresh process (as ``input_scaling.py`` does, same Gaussian rows: ``[n, 768]``
per side, Q shifted by 0.1, k = n / 10 clusters, seed 25) and calls the stages that
``compute_mauve(p_features=..., q_features=..., num_buckets=k)`` runs, one by one, so each can be
timed: the streamed PCA projection (``project_bucketed``), the k-means (``kmeans`` with mauve-text's
5 restarts of up to 500 Lloyd steps; it reports the steps each restart ran), the bin counts and
the score. Peak memory is the process's. At the smallest size the script also calls
``compute_mauve`` itself and fails unless both give the same MAUVE, so the stages are the real
path.

The k-means' rate is counted two ways over its time without compilation. "Searches done":
``2 · K · m`` flops for each row whose nearest centroid a Lloyd step searched for
(``KMeansResult.rows_searched``; the distance bounds skip the others) and for the final
assignment of every row (``K`` padded clusters, ``m`` PCA dimensions). "As dense steps":
``2 · N · K · m`` for every Lloyd step, as if each searched all ``N`` rows; it can exceed what a
product reaches, and its ratio to the first is what the bounds save. The matrix-product rates
are measured in the same process: XLA float32 on ``[2048, 2048]²`` and on the k-means' own shape
(a 1,024-row search tile of ``[N, m]`` times ``[m, K]``), and numpy's (OpenBLAS sgemm, the product
faiss calls) on that shape, best of 5.

Usage:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mauve_profile.py \\
        --sizes 2500 50000 200000
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from _report import save_json, save_table  # benchmarks/ is on sys.path when a script runs
from input_scaling import MAUVE_SHIFT, CompileClock, environment, mauve_features, peak_rss_mib, rss_mib

HERE = Path(__file__).resolve().parent
SEED = 25


def _best(fn, repeats: int = 5) -> float:
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def matmul_rate(rows: int, inner: int, cols: int) -> float:
    """Best-of-5 XLA float32 GFLOP/s of ``[rows, inner] @ [inner, cols]``."""
    import jax
    import jax.numpy as jnp

    a = jax.random.normal(jax.random.key(0), (rows, inner), jnp.float32)
    b = jax.random.normal(jax.random.key(1), (inner, cols), jnp.float32)
    f = jax.jit(jnp.matmul)
    return 2 * rows * inner * cols / _best(lambda: f(a, b).block_until_ready()) / 1e9


def sgemm_rate(rows: int, inner: int, cols: int) -> float:
    """Best-of-5 numpy (OpenBLAS sgemm, what faiss calls) GFLOP/s of the same product."""
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, inner), dtype=np.float32)
    b = rng.standard_normal((inner, cols), dtype=np.float32)
    return 2 * rows * inner * cols / _best(lambda: a @ b) / 1e9


def worker(n: int, check: bool) -> dict:
    import jax
    import numpy as np

    from jaxmetrics.mauve import compute_mauve
    from jaxmetrics.mauve.engine import KMEANS_SALT, mauve_scores, project_bucketed, split_counts
    from jaxmetrics.mauve.quantize.clustering import kmeans
    from jaxmetrics.mauve.sizes import bucket_size

    clock = CompileClock()
    k = max(2, round(n / 10))
    base = rss_mib()
    p, q = mauve_features(n, 1, 0.0), mauve_features(n, 2, MAUVE_SHIFT)
    key = jax.random.key(SEED)
    clock.active = True
    t0 = time.perf_counter()
    proj, z_mask = project_bucketed((q, p), key=key, explained_var=0.9, pca_max_data=-1, normalize=True)
    proj.z.block_until_ready()
    t1 = time.perf_counter()
    compile_pca = clock.seconds
    res = kmeans(proj.z, jax.random.fold_in(key, KMEANS_SALT), num_clusters=bucket_size(k), num_redo=5,
                 max_iter=500, max_points_per_centroid=256, x_mask=z_mask, num_active_clusters=k)
    labels = np.asarray(res.labels)[: 2 * n]
    t2 = time.perf_counter()
    compile_kmeans = clock.seconds - compile_pca
    q_counts, p_counts = split_counts(labels, (n, n), k)
    mauve = float(mauve_scores(p_counts, q_counts, scaling=5.0, num_points=25).mauve)
    t3 = time.perf_counter()
    clock.active = False
    peak = peak_rss_mib()
    steps = [int(s) for s in np.asarray(res.num_iter)]
    searched = [int(s) for s in np.asarray(res.rows_searched)]
    rows, m, kk = int(proj.z.shape[0]), int(proj.z.shape[1]), int(bucket_size(k))
    run_s = max(t2 - t1 - compile_kmeans, 1e-9)
    # the Lloyd steps as dense searches, and the searches done (plus the final assignment of every row)
    full_flops = 2.0 * rows * kk * m * (sum(steps) + 1)
    done_flops = 2.0 * kk * m * (sum(searched) + rows)
    rec = {"size": n, "k": k, "rows": rows, "pca_dims": m, "padded_clusters": kk, "lloyd_steps": steps,
           "rows_searched": searched, "searched_share": sum(searched) / (rows * sum(steps)),
           "pca_s": t1 - t0, "pca_compile_s": compile_pca, "kmeans_s": t2 - t1, "kmeans_compile_s": compile_kmeans,
           "score_s": t3 - t2, "total_s": t3 - t0, "mauve": mauve, "peak_rss_mib": peak, "base_rss_mib": base,
           "kmeans_full_search_gflops": full_flops / run_s / 1e9, "kmeans_done_gflops": done_flops / run_s / 1e9,
           "xla_matmul_2048_gflops": matmul_rate(2048, 2048, 2048),
           "xla_matmul_kmeans_shape_gflops": matmul_rate(1024, m, kk),
           "sgemm_kmeans_shape_gflops": sgemm_rate(1024, m, kk)}
    if check:
        ref = float(compute_mauve(p_features=p, q_features=q, num_buckets=k, seed=SEED).mauve)
        if abs(ref - mauve) > 1e-9:
            raise SystemExit(f"stages give MAUVE {mauve}, compute_mauve {ref}: the profile is not the real path")
        rec["compute_mauve_equal"] = True
    return rec


def table(records: list[dict], env: str) -> str:
    head = ("| rows per side | k | PCA dims | Lloyd steps (5 restarts) | rows searched | PCA s | k-means s (compile) "
            "| score s | total s | peak RSS MiB | k-means GFLOP/s: searches done / as dense steps "
            "| XLA product GFLOP/s: 2048² / k-means shape | sgemm GFLOP/s, k-means shape "
            "| fraction of the k-means-shape rate: done / dense | MAUVE |")
    lines = ["# mauve_profile: MAUVE from features stage by stage", "", env, "", head,
             "|" + "---:|" * (head.count("|") - 1)]
    for r in sorted(records, key=lambda r: r["size"]):
        rate = r["xla_matmul_kmeans_shape_gflops"]
        done = r.get("kmeans_done_gflops")
        share = "–" if done is None else f"{r['searched_share']:.0%}"
        sgemm = f"{r['sgemm_kmeans_shape_gflops']:.0f}" if "sgemm_kmeans_shape_gflops" in r else "–"
        lines.append(
            f"| {r['size']:,} | {r['k']:,} | {r['pca_dims']} | {' / '.join(map(str, r['lloyd_steps']))} | {share} "
            f"| {r['pca_s']:.1f} | {r['kmeans_s']:.1f} ({r['kmeans_compile_s']:.1f}) | {r['score_s']:.2f} "
            f"| {r['total_s']:.1f} | {r['peak_rss_mib']:,.0f} "
            f"| {'–' if done is None else f'{done:.0f}'} / {r['kmeans_full_search_gflops']:.0f} "
            f"| {r['xla_matmul_2048_gflops']:.0f} / {rate:.0f} "
            f"| {sgemm} "
            f"| {'–' if done is None else f'{done / rate:.2f}'} / {r['kmeans_full_search_gflops'] / rate:.2f} "
            f"| {r['mauve']:.4f} |")
    lines += ["", "Rows searched: the share of the Lloyd steps' row searches the distance bounds left to do "
              "(`KMeansResult.rows_searched`). GFLOP/s over the k-means' time without its compilation: "
              "\"searches done\" counts 2·K·m flops per row searched (and the final assignment of every row), "
              "\"as dense steps\" every Lloyd step as the full product 2·N·K·m, so it can exceed the product rate; "
              "the ratio of the two is what the bounds save. \"–\": measured before the k-means counted its "
              "searches."]
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    ap.add_argument("--sizes", type=int, nargs="+", default=[2500, 50000])
    ap.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(HERE / "results" / "mauve_profile"))
    ap.add_argument("--merge", action="store_true",
                    help="keep the sizes of the existing OUT.json that this run does not measure again")
    args = ap.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(args.worker, args.check)), flush=True)
        return
    env = environment()
    print(env, flush=True)
    records = []
    out_json = Path(args.out).with_suffix(".json")
    if args.merge and out_json.is_file():
        records = [r for r in json.loads(out_json.read_text())["records"] if r["size"] not in args.sizes]
    smallest = min(args.sizes)
    for n in sorted(args.sizes):
        cmd = [sys.executable, __file__, "--worker", str(n)] + (["--check"] if n == smallest else [])
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(f"size {n} failed:\n{out.stderr[-3000:]}")
        rec = json.loads(out.stdout.strip().splitlines()[-1])
        print(json.dumps(rec), flush=True)
        records.append(rec)
        save_json({"environment": env, "records": records}, out_json)
    save_table(table(records, env), Path(args.out).with_suffix(".md"))


if __name__ == "__main__":
    main()
