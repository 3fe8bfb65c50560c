"""Batch-centred TWMD: correlation with human scores of the two centering batchings, and how much
each depends on the order of the pairs.

Input: a scored-pairs file, the format ``jaxmetrics similarity-eval`` reads
(``sentence1 <TAB> sentence2 <TAB> score [<TAB> group]``, optional header; sentence1 is the
reference). Without one, the bundled STS-style pairs are used: ``--synthetic N`` pairs of real
held-out Shakespeare sentences and their partly word-replaced copies, scored by the fraction of
words kept (``jaxmetrics.data.synthetic_scored_pairs``; a synthetic task that measures word
overlap, not meaning). The STS and WMT17 figures of Chen et al. need those data sets, which this
machine does not have (offline): run this script on their scored-pairs files to get them.

For each batching (``consecutive``: ``--center-batch-size`` consecutive pairs in file order, the
paper's and the library's default; ``hashed``: the pairs of each group sorted by a stable hash of
their tokens, then cut into batches) the script runs ``correlation_sweep`` (TWMD, the paper's
layer and temperature, batch centering restarting at every group, as ``similarity-eval``) on the
file's order and on ``--shuffles`` random orders of the same pairs, and reports the size-weighted
Pearson r and Spearman rho on the file's order, their range over the orders, and the largest
change of a pair's F1 between the file's order and a shuffled one.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/centering_batches.py
  ... benchmarks/centering_batches.py sts-b.tsv --model <encoder dir>   (real data)
"""
from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

import numpy as np

BATCHINGS = ("consecutive", "hashed")


def _bundled_pairs(num_pairs: int):
    """``num_pairs`` of the bundled STS-style pairs as :class:`~jaxmetrics.similarity.ScoredPairs`
    (built in memory, as :func:`~jaxmetrics.similarity.read_scored_pairs` reads a file)."""
    from jaxmetrics.data import synthetic_scored_pairs
    from jaxmetrics.similarity import ScoredPairs

    rows = synthetic_scored_pairs(num_pairs)
    if len(rows) < num_pairs:
        raise SystemExit(f"--synthetic: only {len(rows)} bundled pairs, asked for {num_pairs}")
    names = tuple(dict.fromkeys(g for *_, g in rows))
    return ScoredPairs(human=np.asarray([r[2] for r in rows], np.float64),
                       groups=np.asarray([names.index(r[3]) for r in rows], np.int32),
                       references=tuple(r[0] for r in rows), candidates=tuple(r[1] for r in rows),
                       group_names=names)


def _sweep(pairs, order, batching, args, lm):
    """(weighted Pearson, weighted Spearman, per-pair F1 in the file's order) of ``pairs`` taken in ``order``."""
    from jaxmetrics.similarity import SimilaritySettings, correlation_sweep

    names = np.asarray(pairs.group_names)
    res = correlation_sweep(references=[pairs.references[i] for i in order],
                            candidates=[pairs.candidates[i] for i in order],
                            human=np.asarray(pairs.human)[order], groups=list(names[np.asarray(pairs.groups)[order]]),
                            model=lm, metric="twmd", layers=args.layers,
                            settings=SimilaritySettings(center_batch_size=args.center_batch_size,
                                                        centering_batches=batching, max_length=args.max_length))
    f1 = np.empty(len(order), np.float64)
    f1[order] = res.scores[0]
    return float(res.weighted_pearson[0]), float(res.weighted_spearman[0]), f1, res


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="?", default=None, help="scored-pairs TSV (default: the bundled pairs)")
    ap.add_argument("--synthetic", type=int, default=300, help="bundled pairs used without a file (default 300)")
    ap.add_argument("--model", default=None, help="encoder (default: the bundled all-MiniLM-L6-v2)")
    ap.add_argument("--layers", type=int, nargs="*", default=None, help="layer (default: the paper's)")
    ap.add_argument("--center-batch-size", type=int, default=32)
    ap.add_argument("--max-length", type=int, default=None)
    ap.add_argument("--shuffles", type=int, default=3, help="random orders of the pairs (default 3)")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "centering_batches.md"))
    args = ap.parse_args(argv)

    from jaxmetrics.data import demo_encoder_dir
    from jaxmetrics.models import load_model
    from jaxmetrics.results import model_id
    from jaxmetrics.similarity import read_scored_pairs

    if args.pairs is None:
        pairs = _bundled_pairs(args.synthetic)
        label = (f"the bundled STS-style pairs (`synthetic_scored_pairs({args.synthetic})`: real held-out "
                 "Shakespeare sentences against partly word-replaced copies, scored by the fraction of words kept)")
    else:
        pairs = read_scored_pairs(args.pairs)
        label = f"`{args.pairs}`"
    model = args.model or str(demo_encoder_dir())
    lm = load_model(model)
    n = len(pairs.human)
    orders = [np.arange(n)] + [np.random.default_rng(s).permutation(n) for s in range(args.shuffles)]
    rows, sig = [], {}
    t0 = time.perf_counter()
    for batching in BATCHINGS:
        runs = [_sweep(pairs, order, batching, args, lm) for order in orders]
        r = [x[0] for x in runs]
        rho = [x[1] for x in runs]
        moved = max(float(np.abs(x[2] - runs[0][2]).max()) for x in runs[1:]) if len(runs) > 1 else 0.0
        mean_f1 = [float(x[2].mean()) for x in runs]
        sig[batching] = runs[0][3].signature
        rows.append((batching, r[0], min(r), max(r), rho[0], min(rho), max(rho), moved, min(mean_f1), max(mean_f1)))
        print(f"{batching}: r {r[0]:.4f} [{min(r):.4f}, {max(r):.4f}], rho {rho[0]:.4f} [{min(rho):.4f}, "
              f"{max(rho):.4f}], max |dF1| {moved:.4f}", flush=True)
    seconds = time.perf_counter() - t0
    sizes = ", ".join(f"{g}: {int(c)}" for g, c in zip(pairs.group_names, np.bincount(pairs.groups)))
    lines = [
        f"# Centering batches: correlation with human scores and order dependence ({datetime.date.today()})",
        "",
        f"Pairs: {label}; {n} pairs in {len(pairs.group_names)} group(s) ({sizes}). Encoder: `{model_id(lm)}`, "
        f"TWMD at the paper's layer and T = 0.10, batch centering with {args.center_batch_size} pairs per batch, "
        "restarting at every group. Orders: the file's and "
        f"{args.shuffles} random permutations (`numpy.random.default_rng(0..{args.shuffles - 1})`). "
        f"Correlations: size-weighted over groups. Run time {seconds:.0f} s.",
        "",
        "| batching | Pearson r (file order) | r over the orders | Spearman rho (file order) | rho over the orders "
        "| largest change of a pair's F1 | mean F1 over the orders |",
        "|---|---|---|---|---|---|---|",
    ]
    for b, r0, rlo, rhi, s0, slo, shi, moved, flo, fhi in rows:
        lines.append(f"| {b} | {r0:.4f} | {rlo:.4f} – {rhi:.4f} | {s0:.4f} | {slo:.4f} – {shi:.4f} | {moved:.2e} "
                     f"| {flo:.4f} – {fhi:.4f} |")
    lines += ["", "Signatures:", ""] + [f"- {b}: `{sig[b]}`" for b in BATCHINGS]
    lines += ["", "The STS and WMT17 figures of the paper need those data sets (not on this machine); run "
              "`benchmarks/centering_batches.py FILE.tsv --model ENCODER` on their scored-pairs files.", ""]
    return save_table("\n".join(lines), args.out)


if __name__ == "__main__":
    main()
