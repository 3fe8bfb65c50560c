"""Sliding-window perplexity: the Hugging Face doc's PyTorch loop vs jaxmetrics, same CPU.

Same random GPT-2-small-sized model (124M parameters: 12 layers, 768 wide, 50257 vocabulary,
1024 context; transformers ``GPT2LMHeadModel`` saved with ``save_pretrained`` and loaded by
both libraries), same random token stream, ``max_length = 1024``, strides 512 and 1024.

* reference: the loop of "Perplexity of fixed-length models" (one window per forward pass,
  ``labels`` with ``-100`` context, the doc's ``- batch_size`` count);
* jaxmetrics: :func:`jaxmetrics.lm.perplexity` with ``convention='document'``
  (identical windows and count, so the values must agree) — all windows laid out as one
  padded batch, ``--batch-size`` windows per jitted forward. The ``'exact'`` convention's value
  is reported too (it scores every token after the first once).

Wall times: the reference loop; jaxmetrics' first call (includes XLA compilation) and a
second, steady-state call; compile = first - second. Ratio = reference / jaxmetrics steady.

Where a speed-up can come from: both sides do the same transformer FLOPs per window (about
2 × 124M × 1024 ≈ 0.25 TFLOP, of which the 50257-way LM head is a third), and on a small CPU
both run near its matmul peak. jaxmetrics evaluates the LM head only on each window's scored
positions (half of them at stride 512), skips the masked half of causal attention (query blocks
against the keys up to each block's end) and has no per-window Python/dispatch overhead; the
rest is XLA vs PyTorch kernel efficiency (see benchmarks/RESULTS.md for the breakdown).

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/perplexity_vs_reference.py --quick
  ... --tokens 20000 --strides 512,1024 --batch-size 4
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np  # noqa: E402


def gpt2_small_dir(root: Path, layers: int = 12) -> str:
    import torch
    import transformers as tf

    from jaxmetrics.testing import _bpe_tokenizer

    d = root / f"gpt2-small-random-{layers}"
    if not (d / "model.safetensors").exists():
        torch.manual_seed(0)
        tok = _bpe_tokenizer("gpt2", 2000)
        cfg = tf.GPT2Config(vocab_size=50257, n_layer=layers, bos_token_id=tok.eos_token_id,
                            eos_token_id=tok.eos_token_id)
        tf.GPT2LMHeadModel(cfg).eval().save_pretrained(str(d))
        tok.save_pretrained(str(d))
    return str(d)


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=20000, help="length of the random token stream")
    ap.add_argument("--strides", default="512,1024")
    ap.add_argument("--max-length", type=int, default=1024)
    ap.add_argument("--batch-size", type=int, default=4, help="jaxmetrics windows per forward")
    ap.add_argument("--layers", type=int, default=12, help="GPT-2 layers (12 = 124M parameters)")
    ap.add_argument("--quick", action="store_true", help="2048 tokens (smoke run)")
    ap.add_argument("--cache-dir", default=None, help="where the random checkpoint is written (default: tmp)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "perplexity_vs_reference.md"))
    args = ap.parse_args(argv)
    n_tokens = 2048 if args.quick else args.tokens
    strides = [int(s) for s in args.strides.split(",") if s.strip()]

    import torch
    from transformers import GPT2LMHeadModel

    from jaxmetrics.lm import perplexity
    from jaxmetrics.models import load_model
    from jaxmetrics.testing import hf_doc_perplexity_loop

    root = Path(args.cache_dir) if args.cache_dir else Path(tempfile.mkdtemp(prefix="jm_ppl_bench_"))
    path = gpt2_small_dir(root, args.layers)
    ref_model = GPT2LMHeadModel.from_pretrained(path).eval()
    n_params = sum(p.numel() for p in ref_model.parameters())
    lm = load_model(path)
    ids = np.random.default_rng(0).integers(0, 50257, size=n_tokens)

    rows = []
    for stride in strides:
        t0 = time.perf_counter()
        nll_ref, n_ref = hf_doc_perplexity_loop(ref_model, ids, args.max_length, stride)
        t_ref = time.perf_counter() - t0
        ppl_ref = float(np.exp(nll_ref / n_ref))

        kw = dict(max_length=args.max_length, stride=stride, batch_size=args.batch_size, convention="document")
        t0 = time.perf_counter()
        first = perplexity(ids, model=lm, **kw)
        t_first = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = perplexity(ids, model=lm, **kw)
        t_jm = time.perf_counter() - t0
        exact = perplexity(ids, model=lm, **{**kw, "convention": "exact"})
        assert abs(first.nll - res.nll) <= 1e-9 * abs(res.nll)
        rows.append(dict(stride=stride, ppl_ref=ppl_ref, n_ref=n_ref, ppl_jm=res.perplexity, n_jm=res.num_tokens,
                         rel=abs(res.perplexity - ppl_ref) / ppl_ref, ppl_exact=exact.perplexity,
                         n_exact=exact.num_tokens, t_ref=t_ref, t_jm=t_jm, compile=max(t_first - t_jm, 0.0),
                         windows=res.num_windows))

    lines = [
        f"### Sliding-window perplexity: HF doc loop (PyTorch) vs jaxmetrics",
        "",
        f"Random GPT-2 ({n_params / 1e6:.0f}M parameters, {args.layers} layers), {n_tokens}-token stream, "
        f"max_length {args.max_length}, jaxmetrics batch {args.batch_size} windows; torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads.",
        "",
        "| stride | windows | PPL reference | PPL jaxmetrics (document) | rel. diff | tokens | PPL exact (tokens) "
        "| reference s | jaxmetrics s | speed-up | compile s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['stride']} | {r['windows']} | {r['ppl_ref']:.4f} | {r['ppl_jm']:.4f} | {r['rel']:.1e} | "
            f"{r['n_jm']} | {r['ppl_exact']:.4f} ({r['n_exact']}) | {r['t_ref']:.2f} | {r['t_jm']:.2f} | "
            f"{r['t_ref'] / r['t_jm']:.2f}x | {r['compile']:.2f} |")
    table = "\n".join(lines) + "\n"
    return save_table(table, args.out)


if __name__ == "__main__":
    main()
