"""``jaxmetrics evaluate-generation``: the MAUVE paper's protocol for any causal LM and dataset
(:func:`jaxmetrics.evaluate_generation`)."""
from __future__ import annotations

import argparse

from jaxmetrics._cli_util import add_pooling_option, add_progress_options, progress_enabled
from jaxmetrics._validation import check_input_file


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate-generation",
        help="generate with several decoding settings and seeds, then report MAUVE, Gen. PPL, Zipf, REP, "
             "distinct-4, Self-BLEU, BERTScore / TWMD per setting",
        description="Continue every prompt of DATASET with MODEL under each decoding setting and sampling "
                    "seed, featurize human and model texts with FEATURIZER, and write report.md / .json / "
                    ".csv and plots to --out. Generations, features and scores are cached in --cache-dir "
                    "as they are produced: rerun the same command to resume after an interruption.",
    )
    p.add_argument("dataset", nargs="+",
                   help="a .jsonl / .json / .csv file of prompts and human continuations, or two text files "
                        "PROMPTS REFERENCES (one item a line)")
    p.add_argument("--model", required=True, help="causal LM that generates: local checkpoint directory or hub id")
    p.add_argument("--featurizer", required=True,
                   help="model whose features MAUVE quantizes (a GPT-2 as in mauve-text, or an encoder)")
    p.add_argument("--decodings", nargs="+", default=["greedy", "sample", "top_p=0.9"],
                   help="decoding settings: greedy, sample, top_p=P, top_k=K, temperature=T, typical_p=P, "
                        "entmax=ALPHA, or comma-joined combinations (default: greedy sample top_p=0.9)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="sampling seeds (default 0 1 2)")
    p.add_argument("--max-new-tokens", type=int, default=128, help="tokens generated per prompt (default 128)")
    p.add_argument("--prompt-tokens", type=int, default=None,
                   help="keep the last N prompt tokens; with --prompt-field '' the prompt is the first N tokens "
                        "of each human text (the MAUVE paper: 35)")
    p.add_argument("--prompt-field", default="prompt",
                   help="JSONL/CSV field of the prompt (default 'prompt'; '' = split the human text by tokens)")
    p.add_argument("--reference-field", default="continuation",
                   help="JSONL/CSV field of the human continuation (default 'continuation')")
    p.add_argument("--continuation-only", action="store_true",
                   help="MAUVE features and n-gram statistics on the continuation only (default: prompt + "
                        "continuation)")
    add_pooling_option(p)
    p.add_argument("--similarity-model", default="auto",
                   help="encoder for BERTScore / TWMD F1 ('auto': the featurizer if it is an encoder; 'none' skips)")
    p.add_argument("--mauve-seeds", type=int, default=5, help="k-means seeds per run (default 5)")
    p.add_argument("--mauve-scoring", choices=("mauve-text", "paper"), default="mauve-text",
                   help="divergence-curve scoring: mauve-text's (default) or the NeurIPS 2021 paper code's")
    p.add_argument("--hf-perplexity", action="store_true",
                   help="add Hugging Face evaluate's per-text perplexity column (ppl_evaluate)")
    p.add_argument("--self-bleu-samples", type=int, default=500, help="Self-BLEU hypotheses (default 500)")
    p.add_argument("--no-eos", action="store_true", help="never stop at EOS (always max-new-tokens tokens)")
    p.add_argument("--batch-size", type=int, default=64, help="prompts per generation batch (default 64)")
    p.add_argument("--feature-max-length", type=int, default=None, help="featurizer truncation in tokens")
    p.add_argument("--cache-dir", default=None,
                   help="resumable cache of generations, features and scores (default: OUT/cache)")
    p.add_argument("--out", default="evaluation_output", help="output folder (default evaluation_output)")
    p.add_argument("--devices", type=int, default=None,
                   help="shard prompts over this many devices (default: one device; 0 = all devices)")
    add_progress_options(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import os

    from jaxmetrics.evaluation import evaluate_generation

    if len(args.dataset) > 2:
        raise ValueError("dataset: give one .jsonl/.csv file or two text files (prompts, references)")
    for path in args.dataset:
        check_input_file(path, "dataset")
    dataset = args.dataset[0] if len(args.dataset) == 1 else tuple(args.dataset)
    if os.path.exists(args.out) and not os.path.isdir(args.out):
        raise ValueError(f"--out: {args.out!r} exists and is not a directory")
    mesh = None
    if args.devices is not None:
        import jax

        from jaxmetrics.sharding import make_mesh

        n = len(jax.devices()) if args.devices == 0 else args.devices
        if n < 1 or n > len(jax.devices()):
            raise ValueError(f"--devices: {args.devices} requested, {len(jax.devices())} available")
        mesh = make_mesh(jax.devices()[:n])
    if args.cache_dir is None:
        args.cache_dir = os.path.join(args.out, "cache")
    sim = None if args.similarity_model == "none" else args.similarity_model
    rep = evaluate_generation(
        model=args.model, featurizer=args.featurizer, dataset=dataset, decodings=args.decodings, seeds=args.seeds,
        max_new_tokens=args.max_new_tokens, prompt_tokens=args.prompt_tokens,
        prompt_field=args.prompt_field or None, reference_field=args.reference_field,
        include_prompt=not args.continuation_only, pooling=args.pooling, similarity_model=sim,
        mauve_seeds=args.mauve_seeds, mauve_scoring=args.mauve_scoring, hf_perplexity=args.hf_perplexity, self_bleu_samples=args.self_bleu_samples,
        eos_token_id=None if args.no_eos else "default", batch_size=args.batch_size,
        featurize_max_length=args.feature_max_length, cache_dir=args.cache_dir, out_dir=args.out, mesh=mesh,
        progress=progress_enabled(args))
    print(rep.to_markdown())
    print(f"\nsaved {', '.join(os.path.basename(p) for p in rep.files.to_dict().values())} in {args.out}/ "
          f"(cache: {args.cache_dir})")
    return 0
