"""Self-BLEU-4: nltk's per-hypothesis loop vs jaxmetrics' vectorised kernel, same CPU.

Generations: ``N`` random token sequences of ~50 tokens (lengths 40-60) over a Zipf-like
vocabulary of 2000 words (seeded), so n-grams repeat as in real text.

* reference: ``[sentence_bleu(gens[:i] + gens[i+1:], gens[i], (0.25,)*4,
  smoothing_function=SmoothingFunction().method1) for i in range(N)]`` (nltk; this is what
  the MAUVE experiments and Holtzman et al. run);
* jaxmetrics: :func:`jaxmetrics.diversity.self_bleu_scores` — all hypotheses at once (sort-based
  n-gram ids, top-2 clipping, jit). First call includes XLA compilation; the second is
  steady state. Ratio = nltk / jaxmetrics steady.

Values: max |difference| over the N per-hypothesis scores (float64 host arithmetic on
exact integer counts, so expect 0 or ~1e-16).

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/diversity_vs_reference.py --quick
  ... --sizes 200,1000
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

import numpy as np


def make_generations(n: int, seed: int = 0, vocab: int = 2000) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, vocab + 1) ** 1.1
    p /= p.sum()
    return [[f"w{t}" for t in rng.choice(vocab, size=int(rng.integers(40, 61)), p=p)]
            for _ in range(n)]


def nltk_self_bleu(gens: list[list[str]]) -> np.ndarray:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    sm = SmoothingFunction().method1
    return np.array([sentence_bleu(gens[:i] + gens[i + 1:], gens[i], (0.25,) * 4,
                                   smoothing_function=sm) for i in range(len(gens))])


def run(n: int) -> dict:
    from jaxmetrics.diversity import self_bleu_scores
    gens = make_generations(n)
    t0 = time.perf_counter()
    ref = nltk_self_bleu(gens)
    t_ref = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = self_bleu_scores(gens, 4)
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = self_bleu_scores(gens, 4)
    t_steady = time.perf_counter() - t0
    return {"n": n, "tokens": sum(map(len, gens)), "nltk_s": t_ref, "first_s": t_first,
            "steady_s": t_steady, "ratio": t_ref / t_steady,
            "max_diff": float(np.max(np.abs(ref - ours))), "self_bleu": float(ours.mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000", help="comma-separated numbers of generations")
    ap.add_argument("--quick", action="store_true", help="only 200 generations")
    args = ap.parse_args()
    sizes = [200] if args.quick else [int(s) for s in args.sizes.split(",")]
    import jax
    rows = [run(n) for n in sizes]
    lines = [
        "Self-BLEU-4 (nltk sentence_bleu, method1, each generation vs all others) — "
        f"jax {jax.__version__}, {jax.devices()[0].platform}",
        "",
        "| generations | tokens | nltk (s) | jaxmetrics first call (s) | jaxmetrics steady (s) "
        "| speed-up (steady) | max abs diff | Self-BLEU-4 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['n']} | {r['tokens']} | {r['nltk_s']:.2f} | {r['first_s']:.2f} | "
                     f"{r['steady_s']:.3f} | {r['ratio']:.0f}x | {r['max_diff']:.1e} | "
                     f"{r['self_bleu']:.4f} |")
    table = "\n".join(lines)
    save_table(table + "\n", Path(__file__).parent / "results" / "diversity_vs_reference.md")


if __name__ == "__main__":
    main()
