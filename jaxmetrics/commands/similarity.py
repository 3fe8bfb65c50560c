"""``jaxmetrics similarity``: per-pair embedding similarity (TWMD, BERTScore, ...) of two files."""
from __future__ import annotations

import argparse
import json

from jaxmetrics._cli_util import add_progress_options, check_outputs, progress_enabled
from jaxmetrics._validation import check_input_file


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "similarity",
        help="per-pair embedding similarity (TWMD, TRWMD, BERTScore, WMD, RWMD, CKA, cosine)",
        description="Score candidate/reference pairs (line i of each file) with a token-embedding "
                    "similarity (Chen et al. 2020: batch centering + tempered WMD by default). "
                    "Writes per-pair precision/recall/F1 and prints the corpus mean.",
    )
    p.add_argument("--references", required=True,
                   help="reference texts: one per line (or .jsonl with 'text')")
    p.add_argument("--candidates", required=True,
                   help="candidate texts: same number of texts (pair i = line i of each file)")
    p.add_argument("--model", required=True, help="encoder: local HF directory or hub id")
    p.add_argument("--metric", default="twmd",
                   choices=("twmd", "trwmd", "trwmd_lse", "bertscore", "wmd", "rwmd", "cka", "cosine"))
    p.add_argument("--layer", type=int, default=None,
                   help="hidden_states index (0 = embeddings); default 10 base / 19 large / last")
    p.add_argument("--centering", default="batch",
                   choices=("batch", "corpus", "sentence", "dimension", "none"))
    p.add_argument("--temperature", type=float, default=None,
                   help="T (default 0.10 TWMD / 0.15 TRWMD centred, 0.02 uncentred)")
    p.add_argument("--num-iterations", type=int, default=1, help="Sinkhorn iterations for TWMD")
    p.add_argument("--center-batch-size", type=int, default=32, help="pairs per centering batch")
    p.add_argument("--idf", action="store_true", help="idf weights from the references")
    p.add_argument("--baseline", type=float, nargs=3, default=None, metavar=("P", "R", "F"),
                   help="BERTScore baseline for rescaling")
    p.add_argument("--bert-score-compat", action="store_true",
                   help="reproduce the bert_score package's conventions (BERTScore only)")
    p.add_argument("--special-tokens", default="drop", choices=("drop", "cls", "keep"))
    p.add_argument("--batch-size", type=int, default=64, help="texts per forward pass")
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--output", default=None,
                   help="per-pair scores file (.tsv, or .jsonl); default: print TSV to stdout")
    p.add_argument("--json", default=None,
                   help="also write the result (settings, per-pair scores, corpus mean) as JSON here")
    add_progress_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from jaxmetrics.models.io import read_texts
    from jaxmetrics.similarity import compute_similarity

    check_input_file(args.references, "references")
    check_input_file(args.candidates, "candidates")
    check_outputs(args, (("output", "--output"), ("json", "--json")))
    refs = read_texts(args.references, name="references")
    cands = read_texts(args.candidates, name="candidates")
    res = compute_similarity(references=refs, candidates=cands, model=args.model, layer=args.layer,
                             metric=args.metric, centering=args.centering,
                             temperature=args.temperature, num_iterations=args.num_iterations,
                             center_batch_size=args.center_batch_size, idf=args.idf,
                             baseline=args.baseline, special_tokens=args.special_tokens,
                             bert_score_compat=args.bert_score_compat, max_length=args.max_length,
                             batch_size=args.batch_size, progress=progress_enabled(args))
    rows = [(i, float(p), float(r), float(f))
            for i, (p, r, f) in enumerate(zip(res.precision, res.recall, res.f1))]
    if args.output and args.output.endswith(".jsonl"):
        with open(args.output, "w") as fh:
            for i, p, r, f in rows:
                fh.write(json.dumps({"index": i, "precision": p, "recall": r, "f1": f}) + "\n")
    else:
        lines = ["index\tprecision\trecall\tf1"] + [f"{i}\t{p:.6f}\t{r:.6f}\t{f:.6f}" for i, p, r, f in rows]
        if args.output:
            with open(args.output, "w") as fh:
                fh.write("\n".join(lines) + "\n")
        else:
            print("\n".join(lines))
    m = res.mean()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({**res.to_dict(), "mean": m.to_dict()}, fh, indent=2)
            fh.write("\n")
    t = "" if res.temperature is None else f", T={res.temperature:g}"
    print(f"{args.metric} (layer {res.layer}, centering {res.centering}{t}) over {len(rows)} pairs: "
          f"mean P={m.precision:.6f} R={m.recall:.6f} F1={m.f1:.6f}")
    return 0
