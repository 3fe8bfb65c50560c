"""``jaxmetrics similarity``: per-pair embedding similarity (TWMD, BERTScore, ...) of two files."""
from __future__ import annotations

import argparse
import csv

from jaxmetrics.commands._util import (add_confidence_options, add_dtype_option, add_empty_option,
                                       add_model_option, add_progress_options, CENTERINGS,
                                       check_confidence_options, check_outputs, LibraryChoices, line_list,
                                       option_error, progress_enabled, read_input, SCORES, SIMILARITY_METRICS,
                                       SPECIAL_TOKENS, write_json)
from jaxmetrics._files import check_input_file

#: ``--centering-batches``' values: :data:`jaxmetrics.similarity.chunks.CENTERING_BATCHES`
CENTERING_BATCHES = LibraryChoices("jaxmetrics.similarity.chunks", "CENTERING_BATCHES")
#: what ``--help`` says about the batches of ``--centering batch`` (also ``similarity-eval``'s)
CENTERING_BATCHES_HELP = (
    "how --centering batch forms its batches of --center-batch-size pairs, one of %(choices)s: consecutive "
    "(default, the paper's, with which the authors' STS/WMT figures were made): consecutive pairs in file "
    "order, so each pair's score depends on its neighbours and shuffling the file changes the scores; "
    "hashed: the pairs sorted by a stable hash of their tokens, then cut into batches, so a pair gets the "
    "same partners and the same score whatever the file's order. Recorded in the output and its signature")

# Options bert_score.score has no equivalent of: refused with --bert-score-compat (attribute, flag).
_NOT_IN_BERT_SCORE = (("centering", "--centering"), ("temperature", "--temperature"),
                      ("num_iterations", "--num-iterations"), ("center_batch_size", "--center-batch-size"),
                      ("centering_batches", "--centering-batches"),
                      ("special_tokens", "--special-tokens"), ("max_length", "--max-length"))


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "similarity",
        help="per-pair embedding similarity (TWMD, TRWMD, BERTScore, WMD, RWMD, CKA, cosine)",
        description="Score candidate/reference pairs (line i of each file) with a token-embedding "
                    "similarity (Chen et al. 2020: batch-centred tempered WMD by default; BERTScore "
                    "uncentred unless --centering batch). Prints the corpus mean of precision, recall and F1 over the "
                    "n pairs (with --confidence, each mean's bootstrap interval); --per-pair also prints every "
                    "pair's scores, and --csv / --json write them. Batch centering depends on the order "
                    "of the pairs (consecutive batches, as in the paper); --centering-batches hashed "
                    "gives scores that do not. An empty candidate line (a model that generated nothing) keeps "
                    "its pair and scores P = R = F1 = 0, as bert_score does; the count and the lines are printed "
                    "(--empty error refuses it instead).",
        epilog="--bert-score-compat: BERTScore exactly as bert_score.score computes it, on its defaults "
               "(no centering, its tuned layer of the model, [CLS]/[SEP] matched with weight 0, "
               "truncation at the tokenizer's model_max_length). bert_score's own options --layer "
               "(num_layers), --idf, --baseline (rescaling) and --batch-size (batch_size) override its "
               "defaults; options it does not have (--centering, --temperature, --num-iterations, "
               "--center-batch-size, --centering-batches, --special-tokens, --max-length, a --metric other "
               "than bertscore) "
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
    p.add_argument("--centering-batches", default=None, choices=CENTERING_BATCHES, metavar="HOW",
                   help=CENTERING_BATCHES_HELP)
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
    p.add_argument("--per-pair", action="store_true",
                   help="also print every pair's precision, recall and F1 as a table before the summary "
                        "(default: the summary only)")
    p.add_argument("--csv", default=None,
                   help="write the per-pair scores as CSV (index,precision,recall,f1) here (default: none)")
    p.add_argument("--json", default=None,
                   help="also write the result (signature, settings, per-pair scores, corpus mean and, with "
                        "--confidence, its intervals) as JSON here (default: none)")
    add_confidence_options(p, what=(
        "the corpus means of precision, recall and F1 their BCa bootstrap interval, the pairs resampled: "
        "confidence_interval(jnp.mean, result.f1, key=jax.random.key(SEED)) for F1, the same draws for P and R"))
    p.add_argument("--alignments", default=None, metavar="DIR",
                   help="also write which tokens matched into DIR: pair_<i>.png per pair (the similarity "
                        "heatmap with the greedy matches marked, and the transport plans of twmd / wmd) and "
                        "alignments.json (tokens, similarity matrices, matches, plans, signature), for the "
                        "first --alignments-pairs pairs; metrics bertscore, rwmd, twmd, wmd, without "
                        "--bert-score-compat or --baseline (default: none)")
    p.add_argument("--alignments-pairs", type=int, default=None, metavar="N",
                   help="how many pairs, from the first, --alignments draws and writes (default 20)")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="save each finished chunk of pairs' scores in DIR, so that a long run that is stopped "
                        "resumes where it stopped when the same command is run again (the same scores as one "
                        "uninterrupted run); not with --alignments (default: none)")
    add_empty_option(p, per_pair=True)
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
                              centering_batches=args.centering_batches or "consecutive", idf=args.idf,
                              baseline=args.baseline, special_tokens=args.special_tokens,
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

    from jaxmetrics.similarity import token_alignments
    from jaxmetrics.similarity.pipeline import check_text_pairs, score_texts

    check_input_file(args.references, "--references")
    check_input_file(args.candidates, "--candidates")
    check_outputs(args, (("csv", "--csv"), ("json", "--json")))
    check_confidence_options(args)
    settings = _settings(args)
    num_aligned = _check_alignments(args)
    if args.cache_dir is not None:
        from jaxmetrics.models.cache import check_writable_dir

        if num_aligned is not None:
            raise ValueError("--cache-dir: --alignments encodes the whole corpus at once and caches nothing; "
                             "drop one of them")
        check_writable_dir(args.cache_dir, "--cache-dir")
    refs = read_input(args.references, "--references", command="similarity", kind="reference").texts
    cands_in = read_input(args.candidates, "--candidates", command="similarity", empty=args.empty, kind="pair")
    cands = cands_in.texts
    if args.confidence is not None and len(cands) < 2:
        raise ValueError(f"--confidence: needs at least 2 pairs to resample, got {len(cands)}")
    if num_aligned is not None and cands_in.empty_lines:
        raise ValueError(f"--alignments: an empty candidate has no tokens to align ({args.candidates!r}, "
                         f"{line_list(cands_in.empty_lines)}); drop --alignments or fill those lines")
    if num_aligned is None:   # compute_similarity's steps, with the resumable cache of score_texts
        from jaxmetrics.models import resolve_model

        refs, cands = check_text_pairs(refs, cands, empty_candidates=True)
        lm = resolve_model(args.model, purpose="similarity", dtype=args.dtype)
        res = score_texts(references=refs, candidates=cands, model=lm, settings=settings,
                          progress=progress_enabled(args), cache_dir=args.cache_dir)
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
    if args.per_pair:
        print("\n".join(["index\tprecision\trecall\tf1"] + [f"{i}\t{p:.6f}\t{r:.6f}\t{f:.6f}" for i, p, r, f in rows]))
    m = res.mean()
    intervals = None if args.confidence is None else _mean_intervals(res, args)
    if args.json:
        extra = {} if intervals is None else {"intervals": {k: ci.to_dict() for k, ci in intervals.items()}}
        write_json(args.json, {**res.to_dict(), "bert_score_compat": bool(args.bert_score_compat), "mean": m,
                               "empty_candidate_lines": cands_in.empty_lines, **extra})
    t = "" if res.temperature is None else f", T={res.temperature:g}"
    compat = ", bert_score compat" if args.bert_score_compat else ""
    batches = {"consecutive": f" in batches of {settings.center_batch_size} consecutive pairs (scores depend on "
                              "the pairs' order; --centering-batches hashed does not)",
               "hashed": f" in batches of {settings.center_batch_size} pairs by hash (independent of the pairs' "
                         "order)"}.get(res.centering_batches, "")
    zeros = f" ({len(cands_in.empty_lines)} with an empty candidate, scored 0)" if cands_in.empty_lines else ""
    print(f"{res.metric} (layer {res.layer}, centering {res.centering}{batches}{t}{compat}) over {len(rows)} pairs"
          f"{zeros}: "
          f"mean P={m.precision:.6f} R={m.recall:.6f} F1={m.f1:.6f}")
    if intervals is not None:
        ci = intervals["f1"]
        print(f"{ci.confidence:.0%} BCa intervals of the means (pairs resampled {ci.num_resamples} times, seed "
              f"{args.seed}): " + "  ".join(f"{name} [{float(intervals[k].low):.6f}, {float(intervals[k].high):.6f}]"
                                           for k, name in (("precision", "P"), ("recall", "R"), ("f1", "F1"))))
    return 0


def _mean_intervals(res, args: argparse.Namespace) -> dict:
    """``{precision, recall, f1: Interval}``: the BCa interval of each corpus mean, the pairs resampled
    with one key (the same draws for the three scores), as ``confidence_interval(jnp.mean, res.f1, ...)``."""
    import jax
    import jax.numpy as jnp

    from jaxmetrics.confidence import confidence_interval

    key = jax.random.key(args.seed)
    try:
        return {k: confidence_interval(jnp.mean, jnp.asarray(getattr(res, k)), key=key, confidence=args.confidence,
                                       num_resamples=args.num_resamples) for k in SCORES}
    except ValueError as e:   # a mean that is not finite: named by the option that asked for the interval
        raise option_error(e, {"statistic": "--confidence"}) from None
