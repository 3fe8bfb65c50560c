"""Error rates of ``compare_mauve``'s p-values on real text, over many draws.

The protocol of ``tests/mauve/test_mauve_compare.py`` (which runs 6 draws in ``make test`` and 60
behind the ``slow`` marker), repeated here ``--draws`` times: all-MiniLM-L6-v2 features of 1,000
bundled human sentences (P) and 1,000 other ones (Q pool; ``tests/realtext_family.py``). Draw
``r`` (``numpy.random.default_rng(r)``, key ``jax.random.key(r)``) takes n = 500 rows of P and
three systems of 500 rows from the Q pool: ``a`` and ``b`` (disjoint human rows: the null) and
``degraded`` (``b``'s rows with 30 % replaced by their looping version). One ``compare_mauve``
call per draw (one quantizer fitted on all four sets, 500 randomization resamples) gives the
p-values of a-vs-b (false alarm when < 0.05) and a-vs-degraded (detection when < 0.05).

The draws share one pool of 1,000 rows, so they are not independent: the binomial interval below
is a guide, not exact.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/mauve_compare_error_rates.py
  ... --draws 50   (quick run)
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

import numpy as np


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--method", default="randomization", choices=("randomization", "bootstrap"))
    ap.add_argument("--cache-dir", default=str(Path(__file__).resolve().parents[1] / ".pytest_cache" / "d" / "realtext_family"))
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "mauve_compare_error_rates.md"))
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import jax
    from realtext_family import graded_family
    from scipy.stats import binomtest

    from jaxmetrics.mauve import compare_mauve

    fam = graded_family(1000, 0, args.cache_dir, ("human", "repeated"))
    ph, qh = fam["human"]
    qr = fam["repeated"][1]
    n = 500
    null, alt = [], []
    t0 = time.perf_counter()
    for r in range(args.draws):
        rng = np.random.default_rng(r)
        pi, qi = rng.permutation(1000), rng.permutation(1000)
        b_rows = qi[n:2 * n]
        bad = rng.random(n) < 0.3
        systems = {"a": qh[qi[:n]], "b": qh[b_rows], "degraded": np.where(bad[:, None], qr[b_rows], qh[b_rows])}
        cmp = compare_mauve(references=ph[pi[:n]], systems=systems, key=jax.random.key(r), num_resamples=500, method=args.method)
        null.append(float(cmp.p_value[0, 1]))
        alt.append(float(cmp.p_value[0, 2]))
        if (r + 1) % 100 == 0:
            print(f"{r + 1} draws: {np.sum(np.asarray(null) < 0.05)} false alarms, "
                  f"{np.sum(np.asarray(alt) < 0.05)} detections", flush=True)
    null, alt = np.asarray(null), np.asarray(alt)
    lines = [f"# compare_mauve error rates on real text ({args.method})", "",
             f"{args.draws} draws, n = 500 per set, 500 resamples, one quantizer per draw on all four sets "
             f"(see the script's docstring); {time.perf_counter() - t0:.0f} s on a 2-core CPU.", "",
             "| p < 0.05 in | count | rate | 95 % binomial interval |", "|---|---:|---:|---|"]
    for label, p in (("two human-text systems (type I, nominal 5 %)", null),
                     ("a system with 30 % of its rows looping (power)", alt)):
        k = int(np.sum(p < 0.05))
        ci = binomtest(k, len(p)).proportion_ci(0.95)
        lines.append(f"| {label} | {k} of {len(p)} | {k / len(p):.3f} | {ci.low:.3f} – {ci.high:.3f} |")
    for lo, hi in ((0, 100), (100, 300), (300, args.draws)):
        if hi <= args.draws and hi > lo:
            lines.append(f"\nDraws {lo}–{hi - 1}: {int(np.sum(null[lo:hi] < 0.05))} false alarms in {hi - lo}.")
    lines += ["", f"Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python "
                  f"benchmarks/mauve_compare_error_rates.py --draws {args.draws} --method {args.method}`"]
    return save_table("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    main()
