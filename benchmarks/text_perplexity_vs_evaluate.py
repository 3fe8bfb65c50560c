"""Per-text perplexity: jaxmetrics ``text_perplexities`` vs Hugging Face ``evaluate``'s ``perplexity``.

What users run today is ``evaluate.load("perplexity").compute(predictions=texts, model_id=...)``:
it tokenizes the whole list with ``padding=True`` (every text padded to the longest one), adds
the BOS token, and runs PyTorch forward passes of ``batch_size`` (16) texts in input order.
The reference here is the transcription of that code used by the parity tests
(``tests/lm/test_text_perplexity.py``: the metric script itself is fetched from the Hub at run
time, which this offline machine cannot do), on the same transformers model and tokenizer.
jaxmetrics sorts the texts by length and pads each batch of 16 to a length bucket.

Texts: real speeches of the bundled Shakespeare text (mixed lengths: median ~10 words, a long
tail), a fixed random sample. Models: the bundled demo GPT-2 (4 layers, 128 wide) and a random
GPT-2-small-sized model (124M parameters, 50257-word vocabulary). Both sides are timed warm
(best of ``--repeats``); values are compared per text.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/text_perplexity_vs_evaluate.py
  ... --models demo,gpt2 --n-demo 1000 --n-gpt2 128 --repeats 2
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
sys.path.insert(0, str(HERE.parent / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402

from _report import causal_models, save_table  # noqa: E402


def speeches(n: int, seed: int = 0) -> list[str]:
    from jaxmetrics.data import load_shakespeare

    pool = load_shakespeare("heldout")
    rng = np.random.default_rng(seed)
    return [pool[i] for i in sorted(rng.choice(len(pool), size=min(n, len(pool)), replace=False))]


def best_of(fn, repeats: int):
    out, best = None, float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def bench(name: str, model_dir: str, n: int, repeats: int) -> dict:
    import torch
    from test_text_perplexity import evaluate_perplexity
    from transformers import AutoTokenizer, GPT2LMHeadModel

    from jaxmetrics.lm import text_perplexities
    from jaxmetrics.models import load_model

    texts = speeches(n)
    lm = load_model(model_dir)
    ctx = lm.max_positions
    t0 = time.perf_counter()
    text_perplexities(texts, model=lm, max_length=ctx)
    first = time.perf_counter() - t0
    ours, jax_s = best_of(lambda: text_perplexities(texts, model=lm, max_length=ctx), repeats)

    ref_model = GPT2LMHeadModel.from_pretrained(model_dir).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    evaluate_perplexity(texts[:16], ref_model, tok, max_length=ctx)  # warm-up
    ref, ref_s = best_of(lambda: evaluate_perplexity(texts, ref_model, tok, max_length=ctx), repeats)
    ref_ppl = np.asarray(ref["perplexities"])
    rel = np.abs(ours.perplexities - ref_ppl) / ref_ppl
    lengths = ours.num_tokens + 1
    return {
        "model": name, "texts": len(texts), "tokens": int(lengths.sum()), "longest": int(lengths.max()),
        "ref_padding": 1.0 - float(lengths.sum()) / (len(texts) * int(lengths.max())),
        "ref_s": ref_s, "jax_s": jax_s, "speedup": ref_s / jax_s, "compile_s": max(first - jax_s, 0.0),
        "mean_ref": float(ref["mean_perplexity"]), "mean_jax": ours.mean_perplexity,
        "max_rel": float(rel.max()), "threads": torch.get_num_threads(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="demo,gpt2", help="comma-separated: demo, gpt2")
    ap.add_argument("--n-demo", type=int, default=1000, help="texts for the bundled demo model")
    ap.add_argument("--n-gpt2", type=int, default=128, help="texts for the GPT-2-small-sized model")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="32 texts, demo model only, one repeat")
    args = ap.parse_args(argv)
    if args.quick:
        args.models, args.n_demo, args.repeats = "demo", 32, 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for key, label, model_dir in causal_models(args.models, tmp):
            rows.append(bench(label, model_dir, args.n_demo if key == "demo" else args.n_gpt2, args.repeats))
            print(rows[-1], flush=True)
    lines = ["| model | texts | tokens (BOS incl.) | longest | evaluate padding | evaluate s | jaxmetrics s | "
             "speed-up | jaxmetrics compile s | mean PPL evaluate | mean PPL jaxmetrics | max rel. diff | "
             "torch threads |", "|" + "---|" * 13]
    for r in rows:
        lines.append(f"| {r['model']} | {r['texts']} | {r['tokens']} | {r['longest']} | {r['ref_padding']:.0%} | "
                     f"{r['ref_s']:.2f} | {r['jax_s']:.2f} | {r['speedup']:.2f}x | {r['compile_s']:.1f} | "
                     f"{r['mean_ref']:.4f} | {r['mean_jax']:.4f} | {r['max_rel']:.1e} | {r['threads']} |")
    save_table("# Per-text perplexity: jaxmetrics vs Hugging Face evaluate (CPU)\n\n" + "\n".join(lines) + "\n",
               HERE / "results" / (Path(__file__).stem + ".md"))


if __name__ == "__main__":
    main()
