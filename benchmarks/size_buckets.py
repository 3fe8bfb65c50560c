"""Sample-size buckets: how many programs a typical MAUVE session compiles, this checkout
against the revision before the buckets, side by side in one run.

The session (one fresh process per tree, the persistent compilation cache off so every
program is compiled): human text against three systems whose generations number slightly
differently after empty ones are dropped, MAUVE from 768-d features with all defaults
(k = n/10), then the three systems again with three seeds each (``compute_mauve_seeds``).
Counted: programs compiled (JAX's compile events), seconds spent compiling, and each call's
wall time; the last call of each kind runs again warm, to show what the padding costs.

Usage (idle machine, OpenBLAS variables unset as in ``make bench``)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/size_buckets.py
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _report import save_json, save_table  # benchmarks/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "4a344a2"   # the last commit before the sample-size buckets

SESSION = r"""
import json, sys, time
import numpy as np
import jax
import jaxmetrics
from jaxmetrics.mauve import compute_mauve, compute_mauve_seeds

human_n, sizes, dim = int(sys.argv[1]), [int(s) for s in sys.argv[2].split(",")], int(sys.argv[3])
rng = np.random.default_rng(0)
human = rng.normal(size=(human_n, dim)).astype(np.float32)
systems = [(rng.normal(size=(n, dim)) + 0.1 * (i + 1)).astype(np.float32) for i, n in enumerate(sizes)]
compiled = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, secs, **kw: compiled.append(secs) if event == "/jax/core/compile/backend_compile_duration" else None)
calls = []

def timed(name, fn):
    before = len(compiled)
    t0 = time.perf_counter()
    value = fn()
    calls.append({"call": name, "seconds": time.perf_counter() - t0, "programs": len(compiled) - before,
                  "compile_seconds": sum(compiled[before:]), "value": value})

for n, q in zip(sizes, systems):
    timed(f"compute_mauve n_q={n}", lambda: float(compute_mauve(p_features=human, q_features=q).mauve))
timed(f"compute_mauve n_q={sizes[-1]} again (warm)",
      lambda: float(compute_mauve(p_features=human, q_features=systems[-1]).mauve))
for n, q in zip(sizes, systems):
    timed(f"compute_mauve_seeds n_q={n}, 3 seeds",
          lambda: float(compute_mauve_seeds(references=human, candidates=q, seeds=(1, 2, 3)).mauve_mean))
timed(f"compute_mauve_seeds n_q={sizes[-1]} again (warm)",
      lambda: float(compute_mauve_seeds(references=human, candidates=systems[-1], seeds=(1, 2, 3)).mauve_mean))
print(json.dumps({"calls": calls, "programs": len(compiled), "compile_seconds": sum(compiled)}))
"""


def run_session(tree: Path, args) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "JAXMETRICS_COMPILATION_CACHE": "off"}
    out = subprocess.run([sys.executable, "-c", SESSION, str(args.human), ",".join(map(str, args.sizes)),
                          str(args.dim)], capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if out.returncode:
        raise SystemExit(f"session in {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=BEFORE, help="revision to compare with (default: %(default)s)")
    ap.add_argument("--human", type=int, default=5000, help="human rows (default: 5000)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[4930, 4965, 5000],
                    help="generations of each system (default: 4930 4965 5000)")
    ap.add_argument("--dim", type=int, default=768, help="feature dimension (default: 768)")
    args = ap.parse_args(argv)
    before = Path(tempfile.mkdtemp(prefix="jaxmetrics-before-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(before), args.before],
                   check=True, capture_output=True)
    try:
        old = run_session(before, args)
        new = run_session(ROOT, args)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], capture_output=True)
    lines = [f"Human {args.human} rows against systems of {', '.join(map(str, args.sizes))} rows, {args.dim}-d "
             f"Gaussian features, MAUVE defaults (k = n/10), one fresh process per tree, compilation cache off, "
             f"CPU: {os.cpu_count()} cores. Before: {args.before} (exact sizes). After: this checkout (bucketed).", "",
             "| call | before s | before programs | after s | after programs | MAUVE before | MAUVE after |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for a, b in zip(old["calls"], new["calls"]):
        lines.append(f"| {a['call']} | {a['seconds']:.2f} | {a['programs']} | {b['seconds']:.2f} | {b['programs']} "
                     f"| {a['value']:.4f} | {b['value']:.4f} |")
    total_old = sum(c["seconds"] for c in old["calls"])
    total_new = sum(c["seconds"] for c in new["calls"])
    lines += [f"| **session** | **{total_old:.2f}** | **{old['programs']}** | **{total_new:.2f}** | "
              f"**{new['programs']}** | | |", "",
              f"Compile time: before {old['compile_seconds']:.2f} s, after {new['compile_seconds']:.2f} s."]
    results = Path(__file__).parent / "results"
    save_table("\n".join(lines) + "\n", results / "size_buckets.md")
    save_json({"before": old, "after": new, "args": vars(args)}, results / "size_buckets.json")


if __name__ == "__main__":
    main()
