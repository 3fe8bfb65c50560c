"""Text -> MAUVE end to end: ``jaxmetrics.compute_mauve(p_text=..., q_text=...)`` vs mauve-text.

The reference is mauve-text as users run it: ``mauve.compute_mauve(p_text=P, q_text=Q,
featurize_model_name=<model directory>)`` with its defaults (each text tokenized and run through
the PyTorch model on its own, ``batch_size=1``; L2 normalisation, PCA to 90% of the variance,
faiss k-means with ``n / 10`` clusters and 5 restarts, 25-point divergence curve). jaxmetrics runs
the same pipeline with its own defaults: length-sorted batches through the Flax model, then PCA
and k-means in JAX. The same model weights serve both sides.

Texts: real speeches of the bundled Shakespeare text (mixed lengths, median ~10 words, up to
several hundred), P from the held-out plays and Q from the training plays, ``--n`` per side.
Models: the bundled demo GPT-2 (4 layers, 128 wide, 128 positions) and a random
GPT-2-small-sized model (124M parameters, 1024 positions). Features are compared row by row;
MAUVE values agree up to k-means seed noise (the two implementations draw different
initialisations), so the table also shows the spread of jaxmetrics over ``--seeds`` seeds.

Both sides are timed warm (models loaded; jaxmetrics' featurizer compiled on one batch per length
bucket of the run, PCA and k-means on the same features), one run each; the stage
columns split each side's time into featurize / PCA / k-means / histograms + curve, and "end to
end" is featurize + MAUVE from the features, which is what ``compute_mauve(p_text=..., q_text=...)``
runs.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/mauve_text_end_to_end.py
  ... --models demo,gpt2 --n 2000 --seeds 5
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from _report import causal_models, save_table  # noqa: E402


def texts(split: str, n: int, seed: int) -> list[str]:
    from jaxmetrics.data import load_shakespeare

    pool = load_shakespeare(split)
    rng = np.random.default_rng(seed)
    return [pool[i] for i in rng.choice(len(pool), size=min(n, len(pool)), replace=False)]


def reference(p_text, q_text, model_dir: str, max_len: int) -> dict:
    """mauve-text's pipeline, stage by stage, with exactly the calls ``compute_mauve`` makes."""
    import importlib

    import mauve
    from sklearn.decomposition import PCA
    from sklearn.preprocessing import normalize

    cm = importlib.import_module("mauve.compute_mauve")  # the module (the package exports the function)
    t = {}
    t0 = time.perf_counter()
    pf = cm.get_features_from_input(None, None, p_text, model_dir, max_len, -1, name="p", batch_size=1)
    qf = cm.get_features_from_input(None, None, q_text, model_dir, max_len, -1, name="q", batch_size=1)
    t["featurize"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out = mauve.compute_mauve(p_features=pf, q_features=qf, max_text_length=max_len)
    t["quantize_and_score"] = time.perf_counter() - t0
    # split the quantize-and-score time: PCA as cluster_feats runs it, then cluster_feats whole
    t0 = time.perf_counter()
    data = normalize(np.vstack([qf, pf]), norm="l2", axis=1)
    pca = PCA(n_components=None, whiten=False, random_state=26).fit(data)
    kept = int(np.argmax(np.cumsum(pca.explained_variance_ratio_) >= 0.9)) + 1
    pca.transform(data)[:, :kept].astype(np.float32)
    t["pca"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    cm.cluster_feats(pf, qf, num_clusters=out.num_buckets, norm="l2", whiten=False, seed=25)
    t["kmeans"] = max(time.perf_counter() - t0 - t["pca"], 0.0)
    t["hist"] = max(t["quantize_and_score"] - t["pca"] - t["kmeans"], 0.0)
    t["total"] = t["featurize"] + t["quantize_and_score"]
    t["mauve"] = float(out.mauve)
    t["features"] = (pf, qf)
    return t


def ours(p_text, q_text, lm, max_len: int, seeds: int) -> dict:
    """jaxmetrics' pipeline as ``compute_mauve(p_text=..., q_text=...)`` runs it: featurize each
    side (length-sorted batches), then MAUVE from the features; stages split as in
    ``mauve_vs_reference.py``."""
    from mauve_vs_reference import _staged

    from jaxmetrics.mauve import compute_mauve
    from jaxmetrics.models import featurize

    t = {}
    t0 = time.perf_counter()
    pf = featurize(p_text, model=lm, max_length=max_len, batch_size=16, progress=False)
    qf = featurize(q_text, model=lm, max_length=max_len, batch_size=16, progress=False)
    t["featurize"] = time.perf_counter() - t0
    compute_mauve(p_features=pf, q_features=qf)  # compiles PCA / k-means for these shapes
    t0 = time.perf_counter()
    out = compute_mauve(p_features=pf, q_features=qf)
    t["total"] = t["featurize"] + time.perf_counter() - t0
    t["mauve"] = float(out.mauve)
    st = _staged(pf, qf)
    t["pca"], t["kmeans"], t["hist"] = st["pca_fit"] + st["project"], st["kmeans"], st["hist"]
    t["features"] = (pf, qf)
    spread = [float(compute_mauve(p_features=pf, q_features=qf, seed=s).mauve) for s in range(seeds)]
    t["seed_mean"], t["seed_sd"] = float(np.mean(spread)), float(np.std(spread, ddof=1)) if seeds > 1 else 0.0
    return t


def warm_up(p_text, q_text, lm, max_len: int) -> None:
    """Compile jaxmetrics' featurizer shapes: one batch of 16 texts per length bucket that the
    real run will use (PCA / k-means are compiled on the real features before they are timed)."""
    from jaxmetrics.models import featurize
    from jaxmetrics.models import plan_batches

    for side in (p_text, q_text):
        lengths = np.array([len(x) for x in lm.tokenizer(side, truncation=True, max_length=max_len)["input_ids"]])
        shortest = list(np.argsort(lengths, kind="stable")[:16])
        seen = set()
        for b in plan_batches(lengths, batch_size=16, max_length=max_len):
            idx, t = b.items, b.length
            if t not in seen:
                seen.add(t)
                pick = list(idx) + [i for i in shortest if i not in set(idx)][: 16 - len(idx)]
                featurize([side[i] for i in pick], model=lm, max_length=max_len, batch_size=16, progress=False)


def bench(name: str, model_dir: str, n: int, seeds: int) -> dict:
    from jaxmetrics.models import load_model

    p_text, q_text = texts("heldout", n, 0), texts("train", n, 1)
    lm = load_model(model_dir)
    max_len = min(1024, int(lm.max_positions or 1024))
    # warm-up: load the PyTorch model once, compile every jaxmetrics shape once
    import importlib

    cm = importlib.import_module("mauve.compute_mauve")
    cm.get_features_from_input(None, None, p_text[:4], model_dir, max_len, -1, name="p", batch_size=1)
    warm_up(p_text, q_text, lm, max_len)
    mine = ours(p_text, q_text, lm, max_len, seeds=seeds)
    ref = reference(p_text, q_text, model_dir, max_len)
    diff = max(float(np.abs(a - b).max()) for a, b in zip(mine["features"], ref["features"]))
    scale = max(float(np.abs(b).max()) for b in ref["features"])
    n_tokens = sum(len(x) for x in lm.tokenizer(p_text + q_text, truncation=True, max_length=max_len)["input_ids"])
    return {"model": name, "n": n, "tokens": n_tokens, "ref": ref, "jax": mine, "diff": diff, "scale": scale,
            "speedup": ref["total"] / mine["total"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="demo,gpt2", help="comma-separated: demo, gpt2")
    ap.add_argument("--n", type=int, default=2000, help="texts per side")
    ap.add_argument("--seeds", type=int, default=5, help="k-means seeds for jaxmetrics' MAUVE spread")
    ap.add_argument("--quick", action="store_true", help="100 texts per side, demo model, 2 seeds")
    args = ap.parse_args(argv)
    if args.quick:
        args.models, args.n, args.seeds = "demo", 100, 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for _, label, model_dir in causal_models(args.models, tmp):
            rows.append(bench(label, model_dir, args.n, args.seeds))
            r = rows[-1]
            print({k: v for k, v in r.items() if k not in ("ref", "jax")}, flush=True)
    lines = ["| model | texts per side | tokens | side | featurize s | PCA s | k-means s | histograms + curve s | "
             "end to end s | MAUVE | speed-up |", "|" + "---|" * 11]
    for r in rows:
        for side, t in (("mauve-text", r["ref"]), ("jaxmetrics", r["jax"])):
            mv = f"{t['mauve']:.4f}"
            if side == "jaxmetrics":
                mv += f" ({t['seed_mean']:.4f} ± {t['seed_sd']:.4f} over seeds)"
            sp = f"{r['speedup']:.2f}x" if side == "jaxmetrics" else "1.00x"
            lines.append(f"| {r['model']} | {r['n']} | {r['tokens']} | {side} | {t['featurize']:.2f} | {t['pca']:.2f} | "
                         f"{t['kmeans']:.2f} | {t['hist']:.3f} | {t['total']:.2f} | {mv} | {sp} |")
    notes = "\n".join(f"- {r['model']}: largest feature difference {r['diff']:.1e} (features up to {r['scale']:.1f} "
                      f"in absolute value)." for r in rows)
    save_table("# Text -> MAUVE end to end: jaxmetrics vs mauve-text (CPU)\n\n" + "\n".join(lines) + "\n\n"
               + notes + "\n", HERE / "results" / (Path(__file__).stem + ".md"))


if __name__ == "__main__":
    main()
