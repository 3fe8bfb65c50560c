"""``jaxmetrics similarity``: per-pair embedding similarity (TWMD, BERTScore, ...) of two files."""
from __future__ import annotations

import argparse
import csv
import json

from jaxmetrics._cli_util import add_model_option, add_progress_options, check_outputs, progress_enabled
from jaxmetrics._files import check_input_file
from jaxmetrics._options import add_dtype_option

# Options bert_score.score has no equivalent of: refused with --bert-score-compat (attribute, flag).
_NOT_IN_BERT_SCORE = (("centering", "--centering"), ("temperature", "--temperature"),
                      ("num_iterations", "--num-iterations"), ("center_batch_size", "--center-batch-size"),
                      ("special_tokens", "--special-tokens"), ("max_length", "--max-length"))


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "similarity",
        help="per-pair embedding similarity (TWMD, TRWMD, BERTScore, WMD, RWMD, CKA, cosine)",
        description="Score candidate/reference pairs (line i of each file) with a token-embedding "
                    "similarity (Chen et al. 2020: batch-centred tempered WMD by default; BERTScore "
                    "uncentred unless --centering batch). Prints per-pair precision/recall/F1 (or "
                    "writes them with --csv) and the corpus mean.",
        epilog="--bert-score-compat: BERTScore exactly as bert_score.score computes it, on its defaults "
               "(no centering, its tuned layer of the model, [CLS]/[SEP] matched with weight 0, "
               "truncation at the tokenizer's model_max_length). bert_score's own options --layer "
               "(num_layers), --idf, --baseline (rescaling) and --batch-size (batch_size) override its "
               "defaults; options it does not have (--centering, --temperature, --num-iterations, "
               "--center-batch-size, --special-tokens, --max-length, a --metric other than bertscore) "
               "are refused.",
    )
    p.add_argument("--references", required=True,
                   help="reference texts: one per line (or .jsonl with 'text')")
    p.add_argument("--candidates", required=True,
                   help="candidate texts: same number of texts (pair i = line i of each file)")
    add_model_option(p, "encoder whose token vectors are compared")
    add_dtype_option(p)
    p.add_argument("--metric", default=None,
                   choices=("twmd", "trwmd", "trwmd_lse", "bertscore", "wmd", "rwmd", "cka", "cosine"),
                   help="the similarity (default twmd; bertscore with --bert-score-compat)")
    p.add_argument("--layer", type=int, default=None,
                   help="hidden_states index (0 = embeddings); default: the paper's layer, 10 of 12 / 19 of "
                        "24 / else the last; with --bert-score-compat bert_score's tuned layer of the model "
                        "(required when it has none)")
    p.add_argument("--centering", default=None,
                   choices=("batch", "corpus", "sentence", "dimension", "none"),
                   help="default: none for bertscore, batch for the other metrics (the paper's "
                        "recommendation); none with --bert-score-compat")
    p.add_argument("--temperature", type=float, default=None,
                   help="T of the tempered metrics (default 0.10 TWMD / 0.15 TRWMD centred, 0.02 uncentred)")
    p.add_argument("--num-iterations", type=int, default=None, help="Sinkhorn iterations for TWMD (default 1)")
    p.add_argument("--center-batch-size", type=int, default=None,
                   help="pairs per centering batch (default 32)")
    p.add_argument("--idf", action="store_true", help="idf weights from the references (default off)")
    p.add_argument("--baseline", type=float, nargs=3, default=None, metavar=("P", "R", "F"),
                   help="BERTScore baseline for rescaling (s - b) / (1 - b) (default: none)")
    p.add_argument("--bert-score-compat", action="store_true",
                   help="BERTScore as the bert_score package computes it, on its defaults (default off; "
                        "see below)")
    p.add_argument("--special-tokens", default=None, choices=("drop", "cls", "keep"),
                   help="special tokens in the matching (default drop)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="texts per forward pass (default 64; with --bert-score-compat also bert_score's "
                        "batch_size)")
    p.add_argument("--max-length", type=int, default=None,
                   help="truncation in tokens (default 512, or the model's positions when fewer; "
                        "bert_score's model_max_length with --bert-score-compat)")
    p.add_argument("--csv", default=None,
                   help="write the per-pair scores as CSV (index,precision,recall,f1) here "
                        "(default: print them as a table)")
    p.add_argument("--json", default=None,
                   help="also write the result (signature, settings, per-pair scores, corpus mean) as JSON here "
                        "(default: none)")
    add_progress_options(p)
    p.set_defaults(func=run)


def _settings(args: argparse.Namespace) -> dict:
    """compute_similarity's settings from the options; with --bert-score-compat, options
    bert_score has no equivalent of are refused (ValueError naming the option)."""
    if args.bert_score_compat:
        if args.metric not in (None, "bertscore"):
            raise ValueError(f"--metric: --bert-score-compat computes bertscore, got {args.metric!r}")
        for attr, flag in _NOT_IN_BERT_SCORE:
            if getattr(args, attr) is not None:
                raise ValueError(f"{flag}: not a bert_score setting; --bert-score-compat follows bert_score "
                                 f"(drop {flag} or --bert-score-compat)")
        batch = 64 if args.batch_size is None else args.batch_size
        return dict(metric="bertscore", layer=args.layer, idf=args.idf, baseline=args.baseline,
                    bert_score_compat=True, batch_size=batch, compat_batch_size=batch)
    return dict(metric=args.metric or "twmd", layer=args.layer, centering=args.centering,
                temperature=args.temperature,
                num_iterations=1 if args.num_iterations is None else args.num_iterations,
                center_batch_size=32 if args.center_batch_size is None else args.center_batch_size,
                idf=args.idf, baseline=args.baseline, special_tokens=args.special_tokens,
                max_length=args.max_length, batch_size=64 if args.batch_size is None else args.batch_size)


def run(args: argparse.Namespace) -> int:
    from jaxmetrics.models.io import read_texts
    from jaxmetrics.similarity import compute_similarity

    check_input_file(args.references, "references")
    check_input_file(args.candidates, "candidates")
    check_outputs(args, (("csv", "--csv"), ("json", "--json")))
    settings = _settings(args)
    refs = read_texts(args.references, name="references")
    cands = read_texts(args.candidates, name="candidates")
    res = compute_similarity(references=refs, candidates=cands, model=args.model,
                             progress=progress_enabled(args), dtype=args.dtype, **settings)
    rows = [(i, float(p), float(r), float(f))
            for i, (p, r, f) in enumerate(zip(res.precision, res.recall, res.f1))]
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(["index", "precision", "recall", "f1"])
            w.writerows([i, repr(p), repr(r), repr(f)] for i, p, r, f in rows)
    else:
        print("\n".join(["index\tprecision\trecall\tf1"] + [f"{i}\t{p:.6f}\t{r:.6f}\t{f:.6f}" for i, p, r, f in rows]))
    m = res.mean()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({**res.to_dict(), "bert_score_compat": bool(args.bert_score_compat), "mean": m.to_dict()},
                      fh, indent=2)
            fh.write("\n")
    t = "" if res.temperature is None else f", T={res.temperature:g}"
    compat = ", bert_score compat" if args.bert_score_compat else ""
    print(f"{res.metric} (layer {res.layer}, centering {res.centering}{t}{compat}) over {len(rows)} pairs: "
          f"mean P={m.precision:.6f} R={m.recall:.6f} F1={m.f1:.6f}")
    return 0
