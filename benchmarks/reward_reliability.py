"""How much of a MAUVE-PG reward is signal: the rewards of one batch of generations, computed as a
training step computes them, against the same generations' influence on MAUVE estimated from many
samples.

The policy gradient of MAUVE weights each sample's score function by its influence on MAUVE, a
function of the model's whole distribution. A training step only sees a sample of it: the batch
(``reward_pool=0``), or the batch and a pool of earlier generations. This script draws ``--samples``
pure-sampling continuations of training-play prompts from the starting model, featurizes them and
``--references`` human continuations (MiniLM, as the trainer does), and for ``--repeats`` random
batches of ``--batch`` generations compares:

* the "truth": the batch's rewards with every other generation pooled and every reference, under a
  codebook of ``--truth-buckets`` bins, averaged over ``--truth-seeds`` k-means seeds (its
  split-half reliability, the same with other seeds, is reported as the ceiling);
* the rewards a step would use: the batch alone against ``num_reward_references`` (256) references
  with 3 bins (MAUVE's automatic rule for 32 samples) or more, and the batch with a pool of
  ``--pools`` earlier generations.

Each row is the Pearson correlation between a configuration's rewards and the truth over the batch,
mean (min-max) over the repeats.

Usage:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/reward_reliability.py
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _report import save_json, save_table

RESULTS = Path(__file__).resolve().parent / "results"
PROMPT_LEN, GEN_LEN = 10, 40


def _texts(lm, rows) -> list[str]:
    out = [lm.tokenizer.decode(r.tolist()) for r in np.asarray(rows)]
    return [t if t.strip() else "." for t in out]


def features(model: str, featurizer: str, samples: int, references: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``[samples, d]`` features of the model's pure-sampling continuations and ``[references, d]``
    of human continuations of other training passages."""
    import jax

    from jaxmetrics.data import load_shakespeare
    from jaxmetrics.lm import generate
    from jaxmetrics.mauve.pipeline.inputs import featurize_texts
    from jaxmetrics.models.protocol import resolve_model
    from jaxmetrics.training import text_passages

    lm, enc = resolve_model(model, causal=True), resolve_model(featurizer)
    windows = text_passages(lm.tokenizer, load_shakespeare("train"), prompt_len=PROMPT_LEN, gen_len=GEN_LEN,
                            seed=seed).windows
    if windows.shape[0] < samples + references:
        raise SystemExit(f"--samples + --references: the training plays hold {windows.shape[0]} passages")
    idx = np.random.default_rng(seed).choice(windows.shape[0], samples + references, replace=False)
    gens = [np.asarray(generate(windows[idx[i:i + 64], :PROMPT_LEN], model=lm, key=jax.random.key(seed + i),
                                max_new_tokens=GEN_LEN, temperature=1.0, eos_token_id=None).tokens)
            for i in range(0, samples, 64)]
    feats = featurize_texts({"g": _texts(lm, np.concatenate(gens)),
                             "h": _texts(lm, windows[idx[samples:], PROMPT_LEN:])}, model=enc, progress=False).features
    return np.asarray(feats["g"]), np.asarray(feats["h"])


def measure(gen: np.ndarray, human: np.ndarray, *, batch: int, pools: list[int], buckets: list[int],
            step_references: int, truth_buckets: int, truth_seeds: int, repeats: int, seed: int) -> list[dict]:
    """One row per configuration: correlations with the truth over ``repeats`` random batches."""
    from jaxmetrics.training import mauve_influence_rewards as rewards

    rng = np.random.default_rng(seed + 1)
    corr = lambda a, b: float(np.corrcoef(a, b)[0, 1])   # noqa: E731
    got: dict[str, list[float]] = {}
    for rep in range(repeats):
        perm = rng.permutation(len(gen))
        b, rest = gen[perm[:batch]], gen[perm[batch:]]
        truth = [np.mean([rewards(references=human, candidates=b, pool=rest, seed=s, num_buckets=truth_buckets)
                          for s in range(first, first + truth_seeds)], axis=0)
                 for first in (100, 200)]
        got.setdefault("truth with other seeds (ceiling)", []).append(corr(truth[0], truth[1]))
        for pool in [0, *pools]:
            for k in buckets:
                r = rewards(references=human[:step_references], candidates=b, pool=rest[:pool], seed=rep,
                            num_buckets=k)
                got.setdefault(f"batch {batch} + pool {pool}, {k} bins", []).append(corr(r, truth[0]))
    return [{"rewards": name, "mean": float(np.mean(v)), "min": float(np.min(v)), "max": float(np.max(v))}
            for name, v in got.items()]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="the starting GPT-2 (default: the bundled demo model)")
    ap.add_argument("--featurizer", default=None, help="the rewards' encoder (default: all-MiniLM-L6-v2)")
    ap.add_argument("--samples", type=int, default=1600)
    ap.add_argument("--references", type=int, default=1024)
    ap.add_argument("--step-references", type=int, default=256, help="a step's references (num_reward_references)")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--pools", type=int, nargs="+", default=[224, 480])
    ap.add_argument("--buckets", type=int, nargs="+", default=[3, 8, 16, 32])
    ap.add_argument("--truth-buckets", type=int, default=64)
    ap.add_argument("--truth-seeds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(RESULTS / "reward_reliability.md"))
    args = ap.parse_args(argv)
    from jaxmetrics.data import demo_encoder_dir, demo_model_dir

    t0 = time.perf_counter()
    gen, human = features(args.model or str(demo_model_dir()), args.featurizer or str(demo_encoder_dir()),
                          args.samples, args.references, args.seed)
    rows = measure(gen, human, batch=args.batch, pools=args.pools, buckets=args.buckets,
                   step_references=args.step_references, truth_buckets=args.truth_buckets,
                   truth_seeds=args.truth_seeds, repeats=args.repeats, seed=args.seed)
    seconds = time.perf_counter() - t0
    table = "\n".join([
        "# MAUVE-PG rewards against the influence measured on many samples",
        "",
        f"`benchmarks/reward_reliability.py`, {seconds:.0f} s. {args.samples} pure-sampling continuations "
        f"({PROMPT_LEN}-token prompts of the training plays, {GEN_LEN} new tokens) of "
        f"{'the bundled demo GPT-2' if args.model is None else args.model}, {args.references} human continuations, "
        f"{'MiniLM' if args.featurizer is None else args.featurizer} features. Truth: a batch's rewards with "
        f"every other generation pooled and every reference, {args.truth_buckets} bins, mean over "
        f"{args.truth_seeds} k-means seeds. A step's rewards: {args.step_references} references. Pearson "
        f"correlation over the {args.batch} generations of a batch, mean (min-max) over {args.repeats} batches.",
        "",
        "| rewards | correlation with the truth | min | max |",
        "|---|---:|---:|---:|",
        *(f"| {r['rewards']} | {r['mean']:.3f} | {r['min']:.3f} | {r['max']:.3f} |" for r in rows),
    ])
    save_table(table, Path(args.out).with_suffix(".md"))
    save_json({"args": vars(args), "seconds": seconds, "rows": rows}, Path(args.out).with_suffix(".json"))


if __name__ == "__main__":
    main()
