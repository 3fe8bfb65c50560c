"""A million BERTScore pairs with all-MiniLM-L6-v2 through ``jaxmetrics similarity --cache-dir``,
interrupted and resumed as a long job on a small machine is.

The pairs are ``input_scaling.text_pairs`` (consecutive spans of the bundled text, lengths drawn
from its sentences' word counts), written once to ``WORK/candidates.txt`` and
``WORK/references.txt``. Each invocation of this script runs the command (BERTScore, layer 6, no
centering, progress bar on) in a child process with ``--cache-dir WORK/cache``; with
``--max-seconds`` it stops the child with SIGKILL after that long, as ``kill -9`` (or a machine
that goes away) would: the chunks it finished stay in the cache and the next invocation scores only
the rest. Every invocation is a segment in ``WORK/segments.json``: wall time, the child's peak RSS,
chunks finished before and after.

When the command completes, ``--check N`` recomputes N pairs drawn at random with
``compute_similarity`` in this process (BERTScore without centering or idf scores each pair on
its own) and compares them with the command's; then the table is written: pairs, tokens,
segments, total time, pairs per second, the largest peak RSS of any segment, the mean P/R/F1.

Usage:
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/million_pairs.py \\
        --pairs 1000000 --max-seconds 3600      # as many times as it takes; each run resumes
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from _report import save_json, save_lines, save_table

HERE = Path(__file__).resolve().parent
CHUNK_GLOB = "similarity-*/chunk-*.npz"


def _write_pairs(work: Path, n: int) -> None:
    from input_scaling import text_pairs

    meta = work / "pairs.json"
    if meta.is_file() and json.loads(meta.read_text())["pairs"] == n:
        return
    cands, refs = text_pairs(n)
    for name, texts in (("candidates", cands), ("references", refs)):
        save_lines(texts, work / f"{name}.txt")
    save_json({"pairs": n, "words": sum(len(t.split()) for t in cands + refs)}, meta)


def _chunks(work: Path) -> int:
    return len(list((work / "cache").glob(CHUNK_GLOB)))


def _segment(work: Path, model: str, layer: int, max_seconds: float | None, kill_after_chunks: int | None) -> dict:
    """Run the command once (SIGKILLed after ``max_seconds``, or once it has finished
    ``kill_after_chunks`` more chunks); the segment's record."""
    cmd = [sys.executable, "-c", "import sys; from jaxmetrics.cli import main; sys.exit(main(sys.argv[1:]))",
           "similarity", "--references", str(work / "references.txt"), "--candidates", str(work / "candidates.txt"),
           "--model", model, "--metric", "bertscore", "--layer", str(layer), "--centering", "none",
           "--cache-dir", str(work / "cache"), "--json", str(work / "result.json")]
    before, start = _chunks(work), time.time()
    with open(work / "command.log", "a") as log:
        child = subprocess.Popen(cmd, stdout=log, stderr=log)
        while child.poll() is None:
            late = max_seconds is not None and time.time() - start > max_seconds
            if late or (kill_after_chunks is not None and _chunks(work) >= before + kill_after_chunks):
                child.send_signal(signal.SIGKILL)
                child.wait()
                break
            time.sleep(0.2)
    status = ("complete" if child.returncode == 0 else "killed (SIGKILL)" if child.returncode == -signal.SIGKILL
              else f"failed ({child.returncode})")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start)), "seconds": time.time() - start,
            "peak_rss_mib": peak, "chunks_before": before, "chunks_after": _chunks(work), "status": status}


def _check(work: Path, model: str, layer: int, n: int, num: int) -> dict:
    """``num`` random pairs scored again by ``compute_similarity``: the largest difference."""
    import numpy as np

    from jaxmetrics.similarity import compute_similarity

    rng = np.random.default_rng(1)
    idx = np.sort(rng.choice(n, size=min(num, n), replace=False))
    read = lambda name: (work / f"{name}.txt").read_text(encoding="utf-8").split("\n")[:n]   # noqa: E731
    cands, refs = read("candidates"), read("references")
    got = json.loads((work / "result.json").read_text())
    want = compute_similarity(references=[refs[i] for i in idx], candidates=[cands[i] for i in idx], model=model,
                              metric="bertscore", layer=layer, centering="none")
    diff = max(float(np.max(np.abs(np.asarray(got[k])[idx] - np.asarray(getattr(want, k)))))
               for k in ("precision", "recall", "f1"))
    return {"pairs": int(idx.size), "max_abs_diff": diff}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=1_000_000)
    ap.add_argument("--work", default=str(HERE / "million_pairs_work"),
                    help="texts, cache, segments and the command's output (kept between invocations)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="SIGKILL the command after this long (the next invocation resumes); default: no limit")
    ap.add_argument("--kill-after-chunks", type=int, default=None,
                    help="SIGKILL the command once it has finished this many more chunks (default: never)")
    ap.add_argument("--check", type=int, default=2000, help="pairs recomputed in-process at the end (default 2000)")
    ap.add_argument("--model", default=None, help="encoder folder (default: the bundled all-MiniLM-L6-v2)")
    ap.add_argument("--layer", type=int, default=6, help="hidden_states index scored (default 6, MiniLM's last)")
    ap.add_argument("--out", default=str(HERE / "results" / "million_pairs"))
    args = ap.parse_args(argv)

    from input_scaling import minilm_dir

    work, model = Path(args.work), args.model or minilm_dir()
    _write_pairs(work, args.pairs)
    log = work / "segments.json"
    segments = json.loads(log.read_text())["segments"] if log.is_file() else []
    if not segments or segments[-1]["status"] != "complete":
        segments.append(_segment(work, model, args.layer, args.max_seconds, args.kill_after_chunks))
        save_json({"segments": segments}, log)
    last = segments[-1]
    print(f"segment {len(segments)}: {last['status']} after {last['seconds']:.0f} s, chunks "
          f"{last['chunks_before']} -> {last['chunks_after']}, peak RSS {last['peak_rss_mib']:.0f} MiB", flush=True)
    if last["status"] != "complete":
        return
    result = json.loads((work / "result.json").read_text())
    check = _check(work, model, args.layer, args.pairs, args.check)
    meta = json.loads((work / "pairs.json").read_text())
    total = sum(s["seconds"] for s in segments)
    record = {"pairs": args.pairs, "words": meta["words"], "segments": segments, "total_seconds": total,
              "pairs_per_second": args.pairs / total, "max_peak_rss_mib": max(s["peak_rss_mib"] for s in segments),
              "mean": result["mean"], "signature": result["signature"], "check": check}
    save_json(record, Path(args.out).with_suffix(".json"))
    rows = "\n".join(f"| {i + 1} | {s['started']} | {s['status']} | {s['seconds']:,.0f} | {s['chunks_before']} → "
                     f"{s['chunks_after']} | {s['peak_rss_mib']:,.0f} |" for i, s in enumerate(segments))
    m = result["mean"]
    table = (f"# million_pairs: {args.pairs:,} BERTScore pairs (all-MiniLM-L6-v2) through `similarity --cache-dir`\n\n"
             f"{meta['words']:,} words. `benchmarks/million_pairs.py`; each segment one invocation (a child process "
             f"of the command, SIGKILLed after `--max-seconds` unless it finished), resuming from the cache.\n\n"
             "| segment | started | status | seconds | chunks | peak RSS (MiB) |\n|---:|---|---|---:|---|---:|\n"
             f"{rows}\n\n"
             f"Total {total:,.0f} s ({args.pairs / total:,.1f} pairs/s); largest peak RSS "
             f"{record['max_peak_rss_mib']:,.0f} MiB; mean P {m['precision']:.6f}, R {m['recall']:.6f}, "
             f"F1 {m['f1']:.6f}. {check['pairs']:,} random pairs scored again by `compute_similarity`: "
             f"largest difference {check['max_abs_diff']:.1e}.\n")
    save_table(table, Path(args.out).with_suffix(".md"))


if __name__ == "__main__":
    main()
