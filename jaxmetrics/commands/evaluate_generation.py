"""``jaxmetrics evaluate-generation``: the MAUVE paper's protocol for any causal LM and dataset
(:func:`jaxmetrics.evaluate_generation`)."""
from __future__ import annotations

import argparse
import re
import sys

from jaxmetrics.commands._util import (add_dtype_option, add_model_option, add_pooling_option,
                                       add_progress_options, LibraryChoices, progress_enabled)
from jaxmetrics._files import check_input_file
from jaxmetrics.commands.mauve import add_estimator_options

#: The library's argument names in error messages, and the options they come from: those of
#: ``evaluate_generation`` and ``load_prompt_dataset``, then those of each stage object the
#: command builds (a field name such as ``seeds`` means another option in another object).
_OPTIONS = {"max_new_tokens": "--max-new-tokens", "prompt_tokens": "--prompt-tokens",
            "prompt_field": "--prompt-field", "reference_field": "--reference-field",
            "batch_size": "--batch-size", "cache_dir": "--cache-dir", "out_dir": "--out",
            "similarity_model": "--similarity-model", "model": "--model", "featurizer": "--featurizer",
            "scoring.mauve.estimator": "--mauve-estimator"}
_STAGE_OPTIONS = {
    "GenerationSettings": {"decodings": "--decodings", "seeds": "--seeds", "max_new_tokens": "--max-new-tokens",
                           "prompt_tokens": "--prompt-tokens"},
    "FeatureSettings": {"pooling": "--pooling", "max_length": "--max-length"},
    "MauveScoring": {"seeds": "--mauve-seeds", "scoring": "--mauve-scoring", "estimator": "--mauve-estimator",
                     "divergence": "--mauve-divergence"},
    "ScoringSettings": {"self_bleu_samples": "--self-bleu-samples"},
}


def _with_options(message: str, options: dict[str, str] = _OPTIONS) -> str:
    """A library error in the command's words: the argument it starts with, and every argument
    name with an underscore or a dot in it, replaced by its option (``max_new_tokens`` →
    ``--max-new-tokens``)."""
    head, sep, rest = message.partition(": ")
    if sep and head in options:
        head = options[head]
    names = [n for n in options if "_" in n or "." in n]
    if names:
        pattern = re.compile(r"(?<![\w/.-])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True)))
                             + r")(?![\w/-]|\.\w)")
        rest = pattern.sub(lambda m: options[m.group(1)], rest)
    return head + sep + rest


def _build(cls, **kwargs):
    """A stage object of the command's options; its error names the option."""
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as e:
        raise type(e)(_with_options(str(e), _STAGE_OPTIONS[cls.__name__])) from None


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate-generation",
        help="generate with several decoding settings and seeds, then report MAUVE, Gen. PPL, Zipf, REP, "
             "distinct-4, Self-BLEU, BERTScore / TWMD per setting",
        description="Continue every prompt of DATASET with MODEL under each decoding setting and sampling "
                    "seed, featurize human and model texts with FEATURIZER, and write report.md / .json / "
                    ".csv, generations.jsonl (every generated text with its prompt, setting and seed) and "
                    "plots to --out. Generations, features and scores are cached in --cache-dir as they are "
                    "produced: rerun the same command to resume after an interruption. Every option, the "
                    "dataset's size (at least 4 prompts: ME-Petersen's k = 3 needs k + 1 texts), --out and "
                    "--cache-dir are checked before any model is loaded.",
    )
    p.add_argument("dataset", nargs="+",
                   help="a .jsonl / .json / .csv file of prompts and human continuations, or two text files "
                        "PROMPTS REFERENCES (one item a line); at least 4 prompts")
    add_model_option(p, "causal LM that generates")
    add_model_option(p, "model whose features MAUVE quantizes (a GPT-2 as in mauve-text, or an encoder)",
                     option="--featurizer")
    add_dtype_option(p)
    p.add_argument("--decodings", nargs="+", default=["greedy", "sample", "top_p=0.9"],
                   help="decoding settings: greedy, sample, top_p=P, top_k=K, temperature=T, typical_p=P, "
                        "entmax=ALPHA, or comma-joined combinations (default: greedy sample top_p=0.9)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], metavar="S",
                   help="sampling seeds: each sampled setting runs once per seed; greedy runs once and has no "
                        "seed (default: 0 1 2)")
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="tokens generated per prompt; human continuations are cut to as many (default: what the "
                        "model's positions leave after the longest prompt, at most 128)")
    p.add_argument("--prompt-tokens", type=int, default=None,
                   help="keep the last N prompt tokens; with --prompt-field '' the prompt is the first N tokens "
                        "of each human text (the MAUVE paper: 35) (default: whole prompts)")
    p.add_argument("--prompt-field", default="prompt",
                   help="JSONL/CSV field of the prompt ('' = split the human text by tokens) (default: prompt)")
    p.add_argument("--reference-field", default="continuation",
                   help="JSONL/CSV field of the human continuation (default: continuation)")
    p.add_argument("--continuation-only", action="store_true",
                   help="MAUVE features and n-gram statistics on the continuation only (default: prompt + "
                        "continuation)")
    add_pooling_option(p)
    p.add_argument("--similarity-model", default="auto",
                   help="encoder for BERTScore / TWMD F1: 'auto' (the featurizer if it is an encoder), 'none' "
                        "(skip), or a checkpoint (default: auto)")
    p.add_argument("--mauve-seeds", type=int, nargs="+", default=[25, 26, 27, 28, 29], metavar="S",
                   help="k-means (or --mauve-estimator) seeds of each setting's first run; run j shifts them "
                        "by j times their span, so runs never share one (default: 25 26 27 28 29; run 2 then "
                        "uses 30..34)")
    p.add_argument("--mauve-scoring", choices=LibraryChoices("jaxmetrics.mauve.frontier.histograms", "SCORINGS"),
                   metavar="SCORING", default="mauve-text",
                   help="one of %(choices)s: divergence-curve scoring: mauve-text's or the NeurIPS 2021 paper code's "
                        "(default: mauve-text)")
    add_estimator_options(p, prefix="--mauve-", without="no --num-buckets")
    p.add_argument("--hf-perplexity", action="store_true",
                   help="add Hugging Face evaluate's per-text perplexity column (ppl_evaluate) (default: off)")
    p.add_argument("--self-bleu-samples", type=int, default=500, help="Self-BLEU hypotheses (default: 500)")
    p.add_argument("--no-eos", action="store_true",
                   help="never stop at EOS: always --max-new-tokens tokens (default: stop at the model's EOS)")
    p.add_argument("--batch-size", type=int, default=64, help="prompts per generation batch (default: 64: sampling advances every row of a "
                        "batch one token per step, so wide batches share the steps; each prompt has its own "
                        "sampling key, so the texts do not depend on it)")
    p.add_argument("--max-length", type=int, default=None,
                   help="featurizer truncation in tokens (default: 1024 for last-token pooling, 256 for mean "
                        "pooling, or the featurizer's positions if fewer)")
    p.add_argument("--cache-dir", default=None,
                   help="resumable cache of generations, features and scores; must exist or be creatable, and "
                        "be writable (default: OUT/cache)")
    p.add_argument("--out", default="evaluation_output",
                   help="output folder of the report, generations.jsonl and plots (default: evaluation_output)")
    p.add_argument("--devices", type=int, default=None,
                   help="shard prompts over this many devices (0 = all devices) (default: one device)")
    add_progress_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import os

    from jaxmetrics.models.cache import check_writable_dir

    if len(args.dataset) > 2:
        raise ValueError("dataset: give one .jsonl/.csv file or two text files (prompts, references)")
    for path in args.dataset:
        check_input_file(path, "dataset")
    dataset = args.dataset[0] if len(args.dataset) == 1 else tuple(args.dataset)
    check_writable_dir(args.out, "--out")
    if args.cache_dir is None:
        args.cache_dir = os.path.join(args.out, "cache")
    check_writable_dir(args.cache_dir, "--cache-dir")
    mesh = None
    if args.devices is not None:
        import jax

        from jaxmetrics.sharding import make_mesh

        n = len(jax.devices()) if args.devices == 0 else args.devices
        if n < 1 or n > len(jax.devices()):
            raise ValueError(f"--devices: {args.devices} requested, {len(jax.devices())} available")
        mesh = make_mesh(jax.devices()[:n])
    sim = None if args.similarity_model == "none" else args.similarity_model

    from jaxmetrics.evaluation import (FeatureSettings, GenerationSettings, MauveScoring, ScoringSettings,
                                       evaluate_generation, load_prompt_dataset)

    generation = _build(GenerationSettings, decodings=args.decodings, seeds=args.seeds,
                        max_new_tokens=args.max_new_tokens, prompt_tokens=args.prompt_tokens,
                        eos_token_id=None if args.no_eos else "default")
    features = _build(FeatureSettings, pooling=args.pooling, max_length=args.max_length,
                      include_prompt=not args.continuation_only)
    mauve = _build(MauveScoring, seeds=args.mauve_seeds, scoring=args.mauve_scoring, estimator=args.mauve_estimator,
                   divergence=args.mauve_divergence)
    scoring = _build(ScoringSettings, mauve=mauve, self_bleu_samples=args.self_bleu_samples,
                     hf_perplexity=args.hf_perplexity)
    try:
        data = load_prompt_dataset(dataset, prompt_field=args.prompt_field or None,
                                   reference_field=args.reference_field)
        rep = evaluate_generation(
            model=args.model, featurizer=args.featurizer, dataset=data, similarity_model=sim, generation=generation,
            features=features, scoring=scoring, batch_size=args.batch_size, cache_dir=args.cache_dir,
            out_dir=args.out, mesh=mesh, progress=progress_enabled(args), dtype=args.dtype)
    except (ValueError, TypeError) as e:
        raise type(e)(_with_options(str(e))) from None
    print(rep.to_markdown())
    files = [os.path.basename(p) for p in rep.files.to_dict().values() if p]
    print(f"jaxmetrics: saved {', '.join(files)} in {args.out}/ (cache: {args.cache_dir})", file=sys.stderr)
    return 0
