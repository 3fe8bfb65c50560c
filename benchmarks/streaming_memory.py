"""Peak memory of BERTScore (``compute_similarity``) and featurization (``featurize``) now that they
stream their inputs, against the same points measured before (``results/input_scaling.json``).

Each point is one fresh process of ``input_scaling.py``'s worker, jaxmetrics side only (the
inputs, model, settings and measurement of that script: imports and model loading, the RSS then
is the baseline; a warm-up call; the inputs; the timed call; growth = ``ru_maxrss`` minus the
baseline, the input texts included). Targets: BERTScore growth at most 1.5 GiB at 100,000 pairs;
featurization growth at most the features' own size + 0.5 GiB at 100,000 texts. Times are shown
as measured (a busy machine slows them; memory is not disturbed by other load).

Output: ``benchmarks/results/streaming_memory.md`` and ``.json``.

Usage:
    .venv/bin/python benchmarks/streaming_memory.py --bertscore-sizes 1000 10000 30000 \\
        --featurize-sizes 1000 10000 30000
    ... --bertscore-sizes 10000 --featurize-sizes --merge     # re-measure one point, keep the rest
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import input_scaling
from _report import save_json, save_table

HERE = Path(__file__).resolve().parent
FEATURE_DIM = 384        # all-MiniLM-L6-v2


def _fit(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of growth (MiB) on size, in MiB per 1,000 units."""
    import numpy as np

    if len(points) < 2:
        return None
    x, y = (np.array(v, float) for v in zip(*points))
    return float(np.polyfit(x / 1000.0, y, 1)[0])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bertscore-sizes", type=int, nargs="*", default=[1000, 10000, 30000])
    ap.add_argument("--featurize-sizes", type=int, nargs="*", default=[1000, 10000, 30000])
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per point (default: 1800)")
    ap.add_argument("--before", default=str(HERE / "results" / "input_scaling.json"),
                    help="the earlier measurements (input_scaling.py's JSON)")
    ap.add_argument("--out", default=str(HERE / "results" / "streaming_memory"))
    ap.add_argument("--merge", action="store_true",
                    help="keep the points of the existing OUT.json that this run does not measure again")
    args = ap.parse_args(argv)

    old = json.loads(Path(args.before).read_text())["records"]
    before = {(r["path"], r["size"]): r for r in old if r["side"] == "jaxmetrics" and r.get("status") == "ok"}
    redo = {("bertscore", n) for n in args.bertscore_sizes} | {("featurize", n) for n in args.featurize_sizes}
    records, kept = [], []
    if args.merge and Path(args.out).with_suffix(".json").is_file():
        kept = [r for r in json.loads(Path(args.out).with_suffix(".json").read_text())["records"]
                if (r["path"], r["size"]) not in redo]
    for path, sizes in (("bertscore", args.bertscore_sizes), ("featurize", args.featurize_sizes)):
        for n in sizes:
            rec = input_scaling.run_point({"path": path, "side": "jaxmetrics", "size": n}, args.timeout)
            records.append(rec)
            print(f"{path:10s} {n:>8,}  {rec.get('status')}  growth {rec.get('growth_mib', float('nan')):.0f} MiB  "
                  f"{rec.get('seconds', float('nan')):.1f} s", flush=True)
            save_json({"records": kept + records}, Path(args.out).with_suffix(".json"))
    records = sorted(kept + records, key=lambda r: (r["path"], r["size"]))

    lines = ["# streaming_memory: peak memory growth before / after streaming", "",
             "One fresh process per point (input_scaling.py's worker, jaxmetrics side): growth = peak RSS "
             "(ru_maxrss) minus the RSS after imports and model loading, input texts included. Before: "
             "results/input_scaling.json (the same worker, the same machine, before the pipelines streamed). "
             "After: this run (its times were taken on a busy machine; memory is not disturbed by load).", "",
             "| path | size | growth before (MiB) | growth after (MiB) | peak after (MiB) | outputs (MiB) | "
             "time after (s) | value before | value after |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    slopes = {}
    for rec in records:
        path, n = rec["path"], rec["size"]
        b = before.get((path, n), {})
        out_mib = n * FEATURE_DIM * 4 / 2**20 if path == "featurize" else n * 3 * 4 / 2**20
        ok = rec.get("status") == "ok"
        cell = (lambda r, k, f="{:,.0f}": f.format(r[k]) if k in r else "–")
        lines.append(f"| {path} | {n:,} | {cell(b, 'growth_mib')} | "
                     f"{cell(rec, 'growth_mib') if ok else rec.get('status')} | {cell(rec, 'peak_rss_mib')} | "
                     f"{out_mib:,.1f} | {cell(rec, 'seconds', '{:.1f}')} | {cell(b, 'value', '{:.6g}')} | "
                     f"{cell(rec, 'value', '{:.6g}')} |")
        if ok:
            slopes.setdefault(path, {"after": [], "before": []})["after"].append((n, rec["growth_mib"]))
            if b:
                slopes[path]["before"].append((n, b["growth_mib"]))
    fmt = (lambda v: "–" if v is None else f"{v:.2f}")
    lines += ["", "Memory slope over these sizes (least squares, MiB per 1,000 pairs or texts): "
              + "; ".join(f"{p}: before {fmt(_fit(v['before']))}, after {fmt(_fit(v['after']))}"
                          for p, v in slopes.items()), ""]
    save_table("\n".join(lines), Path(args.out).with_suffix(".md"))


if __name__ == "__main__":
    main()
