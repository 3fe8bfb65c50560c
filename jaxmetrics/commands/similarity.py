"""``jaxmetrics similarity``: per-pair embedding similarity (TWMD, BERTScore, ...) of two files."""
from __future__ import annotations

import argparse
import csv

from jaxmetrics.commands._util import (add_model_option, add_progress_options, check_outputs, progress_enabled,
                                       read_input_texts, write_json)
from jaxmetrics._files import check_input_file
from jaxmetrics.commands._options import CENTERINGS, SIMILARITY_METRICS, SPECIAL_TOKENS, add_dtype_option

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
                   choices=SIMILARITY_METRICS, metavar="METRIC",
                   help="the similarity, one of %(choices)s (default twmd; bertscore with --bert-score-compat)")
    p.add_argument("--layer", type=int, default=None,
                   help="hidden_states index (0 = embeddings); default: the paper's layer, 10 of 12 / 19 of "
                        "24 / else the last; with --bert-score-compat bert_score's tuned layer of the model, or "
                        "for a sentence-transformers encoder without one the paper's layer (required otherwise)")
    p.add_argument("--centering", default=None,
                   choices=CENTERINGS, metavar="CENTERING",
                   help="one of %(choices)s; default: none for bertscore, batch for the other metrics (the paper's "
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
    p.add_argument("--special-tokens", default=None, choices=SPECIAL_TOKENS, metavar="HOW",
                   help="special tokens in the matching, one of %(choices)s (default drop)")
    p.add_argument("--batch-size", type=int, default=None,
                   help="texts per forward pass (default 64, bert_score's batch_size; speed and memory only, except "
                        "with --bert-score-compat, where it is also bert_score's padding group of pairs, which "
                        "its numbers depend on)")
    p.add_argument("--max-length", type=int, default=None,
                   help="truncation in tokens (default 512, or the model's positions when fewer; "
                        "bert_score's model_max_length with --bert-score-compat)")
    p.add_argument("--csv", default=None,
                   help="write the per-pair scores as CSV (index,precision,recall,f1) here "
                        "(default: print them as a table)")
    p.add_argument("--json", default=None,
                   help="also write the result (signature, settings, per-pair scores, corpus mean) as JSON here "
                        "(default: none)")
    p.add_argument("--alignments", default=None, metavar="DIR",
                   help="also write which tokens matched into DIR: pair_<i>.png per pair (the similarity "
                        "heatmap with the greedy matches marked, and the transport plans of twmd / wmd) and "
                        "alignments.json (tokens, similarity matrices, matches, plans, signature), for the "
                        "first --alignments-pairs pairs; metrics bertscore, rwmd, twmd, wmd, without "
                        "--bert-score-compat or --baseline (default: none)")
    p.add_argument("--alignments-pairs", type=int, default=None, metavar="N",
                   help="how many pairs, from the first, --alignments draws and writes (default 20)")
    add_progress_options(p)
    p.set_defaults(func=run)


def _settings(args: argparse.Namespace):
    """The :class:`~jaxmetrics.similarity.SimilaritySettings` of the options (checked before any
    work); with --bert-score-compat, options bert_score has no equivalent of are refused
    (ValueError naming the option)."""
    from jaxmetrics.similarity import SimilaritySettings

    if args.bert_score_compat:
        if args.metric not in (None, "bertscore"):
            raise ValueError(f"--metric: --bert-score-compat computes bertscore, got {args.metric!r}")
        for attr, flag in _NOT_IN_BERT_SCORE:
            if getattr(args, attr) is not None:
                raise ValueError(f"{flag}: not a bert_score setting; --bert-score-compat follows bert_score "
                                 f"(drop {flag} or --bert-score-compat)")
        batch = 64 if args.batch_size is None else args.batch_size
        return SimilaritySettings(metric="bertscore", layer=args.layer, idf=args.idf, baseline=args.baseline,
                                  bert_score_compat=True, batch_size=batch, compat_batch_size=batch)
    return SimilaritySettings(metric=args.metric or "twmd", layer=args.layer, centering=args.centering,
                              temperature=args.temperature,
                              num_iterations=1 if args.num_iterations is None else args.num_iterations,
                              center_batch_size=32 if args.center_batch_size is None else args.center_batch_size,
                              idf=args.idf, baseline=args.baseline, special_tokens=args.special_tokens,
                              max_length=args.max_length, batch_size=64 if args.batch_size is None else args.batch_size)


def _check_alignments(args: argparse.Namespace) -> int | None:
    """The number of pairs to align (``None`` without --alignments); --alignments' folder and
    its metric and options checked (ValueError naming the option) before any work."""
    if args.alignments is None:
        if args.alignments_pairs is not None:
            raise ValueError("--alignments-pairs: only applies with --alignments DIR")
        return None
    from jaxmetrics.models.cache import check_writable_dir

    if args.bert_score_compat:
        raise ValueError("--alignments: not available with --bert-score-compat (its [CLS]/[SEP] and padding "
                         "quirks have no per-pair alignment); drop one of them")
    if args.baseline is not None:
        raise ValueError("--alignments: the matches are raw similarities; drop --baseline to draw them")
    metric = args.metric or "twmd"
    if metric not in ("bertscore", "rwmd", "twmd", "wmd"):
        raise ValueError(f"--alignments: --metric {metric} has no token alignment (bertscore, rwmd, twmd, wmd do)")
    num = 20 if args.alignments_pairs is None else args.alignments_pairs
    if num < 1:
        raise ValueError(f"--alignments-pairs: expected a positive number of pairs, got {num}")
    check_writable_dir(args.alignments, "--alignments")
    return num


def _write_alignments(al, folder: str) -> None:
    """pair_<i>.png per aligned pair and alignments.json (every pair's alignment) into ``folder``."""
    import os

    os.makedirs(folder, exist_ok=True)
    pairs = []
    for k in range(len(al)):
        pa = al.pair(k)
        pa.plot(os.path.join(folder, f"pair_{pa.index}.png"))
        pairs.append(pa.to_dict())
    write_json(os.path.join(folder, "alignments.json"),
               {"signature": al.signature, "metric": al.metric, "temperature": al.temperature,
                "num_iterations": al.num_iterations, "pairs": pairs})


def run(args: argparse.Namespace) -> int:
    from jaxmetrics.similarity import compute_similarity, token_alignments

    check_input_file(args.references, "--references")
    check_input_file(args.candidates, "--candidates")
    check_outputs(args, (("csv", "--csv"), ("json", "--json")))
    settings = _settings(args)
    num_aligned = _check_alignments(args)
    pairs = "remove those lines from both files (line i of each file is pair i)"
    refs = read_input_texts(args.references, "--references", command="similarity", fix=pairs)
    cands = read_input_texts(args.candidates, "--candidates", command="similarity", fix=pairs)
    if num_aligned is None:
        res = compute_similarity(references=refs, candidates=cands, model=args.model, settings=settings,
                                 progress=progress_enabled(args), dtype=args.dtype)
    else:  # one encoding: the alignments' scores are compute_similarity's, signature included
        al = token_alignments(references=refs, candidates=cands, model=args.model, settings=settings,
                              indices=list(range(min(num_aligned, len(cands)))),
                              progress=progress_enabled(args), dtype=args.dtype)
        res = al.scores
        _write_alignments(al, args.alignments)
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
        write_json(args.json, {**res.to_dict(), "bert_score_compat": bool(args.bert_score_compat), "mean": m})
    t = "" if res.temperature is None else f", T={res.temperature:g}"
    compat = ", bert_score compat" if args.bert_score_compat else ""
    print(f"{res.metric} (layer {res.layer}, centering {res.centering}{t}{compat}) over {len(rows)} pairs: "
          f"mean P={m.precision:.6f} R={m.recall:.6f} F1={m.f1:.6f}")
    return 0
