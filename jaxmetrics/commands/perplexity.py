"""``jaxmetrics perplexity``: strided sliding-window perplexity of a text file."""
from __future__ import annotations

import argparse
import sys

from jaxmetrics.commands._util import (add_dtype_option, add_length_and_batch_options, add_model_option,
                                       add_progress_options, check_length_and_batch, check_output_file,
                                       LibraryChoices, progress_enabled, read_input, write_json)
from jaxmetrics._files import check_input_file


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "perplexity",
        help="sliding-window perplexity of a causal LM on a text corpus",
        description="Tokenize a text file with the model's tokenizer and compute its strided "
                    "sliding-window perplexity (every token after the first scored once, with the "
                    "longest context the window allows). Prints perplexity, total NLL, token count "
                    "and throughput. Every option and --json are checked before the model is loaded.",
    )
    p.add_argument("corpus", help="UTF-8 text file")
    add_model_option(p, "causal LM that scores the corpus")
    add_dtype_option(p)
    p.add_argument("--stride", type=int, default=None,
                   help="step between windows, 1 <= stride <= --max-length; smaller strides give every scored "
                        "token more context (default: the window size, i.e. non-overlapping windows)")
    add_length_and_batch_options(p, max_length_help="window size in tokens, at least 2 and at most the model's "
                                 "context (default: the model's context, e.g. 1024 for GPT-2)",
                                 batch_size=8, batch_help="windows per forward pass (default: 8: each window is "
                                 "--max-length tokens with a logit row over the vocabulary per token; speed and "
                                 "memory only)")
    p.add_argument("--per-line", action="store_true",
                   help="treat each line as a separate document; blank lines have no tokens and are dropped, "
                        "their count and lines printed on stderr (default: the whole file is one stream)")
    p.add_argument("--convention", choices=LibraryChoices("jaxmetrics.lm.windows", "CONVENTIONS"),
                   metavar="CONVENTION", default="exact", help="'exact' or 'document' (reproduce the Hugging Face doc's loop and count) (default: exact)")
    p.add_argument("--reduction", choices=LibraryChoices("jaxmetrics.lm.windows", "REDUCTIONS"),
                   metavar="REDUCTION", default="corpus", help="corpus (token-weighted) or sequence (mean of per-document perplexities) "
                        "(default: corpus)")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="also write the result and its signature as JSON to this file (default: none)")
    add_progress_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import time

    import numpy as np

    from jaxmetrics.lm import perplexity
    from jaxmetrics.models import load_model

    from jaxmetrics._validation import check_int

    check_input_file(args.corpus, "corpus")
    if args.json:
        check_output_file(args.json, "--json")
    check_length_and_batch(args, min_length=2)
    if args.stride is not None:
        check_int(args.stride, "--stride", minimum=1)
        if args.max_length is not None and args.stride > args.max_length:
            raise ValueError(f"--stride: must be <= --max-length ({args.max_length}), got {args.stride}")
    if args.per_line:   # the commands' one reader: blank lines (no tokens) are dropped and counted
        docs_text = read_input(args.corpus, "corpus", command="perplexity", kind="document").texts
    else:
        with open(args.corpus, encoding="utf-8") as f:
            docs_text = [f.read()]
        if not docs_text[0].strip():
            raise ValueError(f"corpus: {args.corpus!r} is empty")
    t0 = time.perf_counter()
    lm = load_model(args.model, dtype=args.dtype)
    if not lm.is_causal:
        raise ValueError(f"--model: {args.model!r} ({lm.kind}) has no causal LM head")
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    enc = lm.tokenizer(docs_text, add_special_tokens=False, verbose=False)["input_ids"]
    docs = [np.asarray(e, dtype=np.int64) for e in enc]
    t_tok = time.perf_counter() - t0
    try:
        res = perplexity(docs, model=lm, max_length=args.max_length, stride=args.stride, batch_size=args.batch_size,
                         reduction=args.reduction, convention=args.convention, progress=progress_enabled(args))
    except ValueError as e:   # a window that the model's context cannot hold: name the options
        head, sep, rest = str(e).partition(": ")
        if head in ("max_length", "stride"):
            raise ValueError(f"--{head.replace('_', '-')}{sep}{rest.replace('max_length', '--max-length')}") from None
        raise
    print(f"model        {args.model} ({lm.kind}, {args.dtype})")
    print(f"corpus       {args.corpus}: {len(docs)} document(s), {sum(d.size for d in docs)} tokens")
    print(f"window       max_length={res.max_length} stride={res.stride} convention={res.convention} "
          f"windows={res.num_windows}")
    print(f"perplexity   {res.perplexity:.4f} ({res.reduction})")
    print(f"nll          {res.nll:.4f} nats total, {res.nll / res.num_tokens:.6f} per token")
    print(f"tokens       {res.num_tokens} scored")
    print(f"throughput   {res.tokens_per_second:.1f} tokens/s (scoring {res.seconds:.2f} s incl. compile; "
          f"load {t_load:.2f} s, tokenize {t_tok:.2f} s)")
    if args.json:
        write_json(args.json, {"model": args.model, "dtype": args.dtype, "corpus": args.corpus, **res.to_dict()})
    sys.stdout.flush()
    return 0
