"""Train the demo's tokenizer and small GPT-2 on the bundled Shakespeare speeches.

Reproduces the packaged ``jaxmetrics/_demo_data/model/`` (seeded; CPU)::

    python examples/train_model.py                 # tokenizer + model, about 9 min on 2 busy cores
    python examples/train_model.py --steps 20      # a quick smoke run into --out

1. Tokenizer: a byte-level BPE (the ``tokenizers`` library, as GPT-2's) with
   ``<|endoftext|>`` as its only special token, saved as ``tokenizer.json`` +
   ``tokenizer_config.json`` so that ``transformers.AutoTokenizer`` loads it.
2. Model: the GPT-2 architecture (``jaxmetrics.models.gpt2.GPT2``, Flax NNX) trained with
   optax AdamW on ``jaxmetrics/_demo_data/data/train.txt`` (speeches joined by newlines, so the model
   writes a continuous stream of speeches), saved as ``config.json`` + ``model.safetensors``
   with transformers' GPT-2 tensor names and layout, so that both
   ``jaxmetrics.models.load_model`` and ``transformers.GPT2LMHeadModel`` load it.
"""
from __future__ import annotations

import argparse
import json
import math
import pathlib
import time

import numpy as np

DEMO_DATA = pathlib.Path(__file__).resolve().parent.parent / "jaxmetrics" / "_demo_data"  # the packaged demo data
EOS = "<|endoftext|>"


def train_tokenizer(texts_path: pathlib.Path, out: pathlib.Path, vocab_size: int, max_len: int):
    """Byte-level BPE trained on ``texts_path``; saved for ``AutoTokenizer`` in ``out``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=[EOS],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    tok.train([str(texts_path)], trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=EOS, eos_token=EOS, unk_token=EOS,
        model_max_length=max_len, clean_up_tokenization_spaces=False,
    )
    fast.save_pretrained(str(out))
    return fast


def gpt2_config(vocab_size: int, args):
    from transformers import GPT2Config

    return GPT2Config(
        vocab_size=vocab_size, n_positions=args.n_positions, n_embd=args.n_embd,
        n_layer=args.n_layer, n_head=args.n_head, bos_token_id=0, eos_token_id=0,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True,
        architectures=["GPT2LMHeadModel"],
    )


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(DEMO_DATA / "data" / "train.txt"))
    ap.add_argument("--out", default=str(DEMO_DATA / "model"))
    ap.add_argument("--vocab-size", type=int, default=4096)
    ap.add_argument("--n-layer", type=int, default=4)
    ap.add_argument("--n-embd", type=int, default=128)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-positions", type=int, default=128)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-minutes", type=float, default=15.0,
                    help="stop early (and still save) after this wall time")
    args = ap.parse_args(argv)

    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx
    from safetensors.numpy import save_file

    from jaxmetrics.models.saving import to_hf_state_dict
    from jaxmetrics.models.gpt2 import GPT2

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    tok = train_tokenizer(pathlib.Path(args.data), out, args.vocab_size, args.n_positions)
    text = pathlib.Path(args.data).read_text(encoding="utf-8")
    ids = np.asarray(tok.backend_tokenizer.encode(text).ids, dtype=np.int32)
    n_bytes = len(text.encode("utf-8"))
    print(f"tokenizer: vocab {len(tok)}, {len(ids)} training tokens "
          f"({n_bytes / len(ids):.2f} bytes/token), {time.time() - t0:.1f}s")

    cfg = gpt2_config(len(tok), args)
    model = GPT2(cfg, rngs=nnx.Rngs(args.seed))
    # GPT-2 initialisation: N(0, 0.02) everywhere, residual projections scaled by 1/sqrt(2L).
    key = jax.random.key(args.seed)
    for path, var in nnx.to_flat_state(nnx.state(model, nnx.Param)):
        if path[-1] in ("kernel", "embedding"):
            key, sub = jax.random.split(key)
            std = 0.02 / (math.sqrt(2 * cfg.n_layer) if path[-2] == "c_proj" else 1.0)
            var[...] = std * jax.random.normal(sub, var.shape, var.dtype)
    n_params = sum(v.size for v in jax.tree.leaves(nnx.state(model, nnx.Param)))
    print(f"model: {cfg.n_layer} layers, d={cfg.n_embd}, {n_params / 1e6:.2f}M parameters")

    schedule = optax.warmup_cosine_decay_schedule(0.0, args.lr, min(50, args.steps // 10 + 1),
                                                  args.steps, end_value=args.lr / 10)
    tx = optax.chain(optax.clip_by_global_norm(1.0),
                     optax.adamw(schedule, b1=0.9, b2=0.98, weight_decay=0.05))
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param)
    mask = jnp.ones((args.batch_size, args.seq_len), bool)

    def loss_fn(m, x):
        logits = m(x[:, :-1], mask).logits
        return optax.softmax_cross_entropy_with_integer_labels(logits, x[:, 1:]).mean()

    @nnx.jit
    def train_step(m, opt, x):
        loss, grads = nnx.value_and_grad(loss_fn)(m, x)
        opt.update(m, grads)
        return loss

    rng = np.random.default_rng(args.seed)
    starts_max = len(ids) - (args.seq_len + 1)
    t_train = time.time()
    losses = []
    for step in range(1, args.steps + 1):
        starts = rng.integers(0, starts_max, size=args.batch_size)
        batch = np.stack([ids[s:s + args.seq_len + 1] for s in starts])
        losses.append(float(train_step(model, optimizer, jnp.asarray(batch))))
        if step % 25 == 0 or step == 1:
            el = time.time() - t_train
            print(f"step {step:4d}  loss {np.mean(losses[-25:]):.3f}  {el:6.1f}s", flush=True)
        if time.time() - t_train > 60 * args.max_minutes:
            print(f"stopping at step {step}: --max-minutes reached")
            break

    cfg.save_pretrained(str(out))
    save_file(to_hf_state_dict(model, cfg), str(out / "model.safetensors"),
              metadata={"format": "pt"})
    info = {"steps": step, "final_loss_25": float(np.mean(losses[-25:])), "seed": args.seed,
            "train_tokens": int(len(ids)), "batch_size": args.batch_size, "seq_len": args.seq_len,
            "wall_s": round(time.time() - t0, 1)}
    (out / "training_info.json").write_text(json.dumps(info, indent=2) + "\n")
    print(json.dumps(info))


if __name__ == "__main__":
    main()
