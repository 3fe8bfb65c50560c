"""``jaxmetrics finetune``: fine-tune a GPT-2 with MLE, token-level OT, or MAUVE / TWMD as a
policy-gradient reward (:func:`jaxmetrics.training.finetune`), resumably, into a checkpoint folder.

A package rather than a module because ``commands/`` holds the 15 modules a folder may hold
(``tests/test_api_conventions.py``); the command line registers it like any command module."""
from __future__ import annotations

import argparse
import sys

from jaxmetrics.commands._util import (LibraryChoices, add_dtype_option, add_model_option, add_progress_options,
                                       check_output_file, option_error, progress_enabled, read_input, write_json)

#: the library's argument names in error messages, and the options they come from
_OPTIONS = {"out_dir": "--out", "train_texts": "--train-file", "dev_texts": "--dev-file", "featurizer": "--featurizer",
            "batch_size": "--batch-size", "learning_rate": "--learning-rate", "kl_coef": "--kl-coef",
            "eval_every": "--eval-every", "grad_accum": "--grad-accum", "prompt_len": "--prompt-len",
            "gen_len": "--gen-len", "checkpoint_every": "--checkpoint-every", "steps": "--steps", "seed": "--seed",
            "objective": "--objective", "model": "--model", "dtype": "--dtype", "temperature": "--temperature",
            "reward_num_buckets": "--reward-num-buckets", "mle_coef": "--mle-coef",
            "reward_pool": "--reward-pool"}


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "finetune",
        help="fine-tune a GPT-2 with MLE, token-level OT, or MAUVE / TWMD as a policy-gradient reward",
        description="Fine-tune a GPT-2 checkpoint on text passages (default: the bundled plays' training split) "
                    "and write the result to --out as a checkpoint folder that load_model and "
                    "`jaxmetrics evaluate-generation --model OUT` take as-is. --out also keeps the training "
                    "state: rerunning the same command resumes an interrupted run (the same seed gives the "
                    "same final parameters); --out holding a run with other settings is refused. Every option "
                    "is checked before the model is loaded.",
    )
    add_model_option(p, "the starting GPT-2")
    p.add_argument("--objective", required=True, choices=LibraryChoices("jaxmetrics.training.settings",
                                                                        "command_line_objectives"),
                   metavar="OBJECTIVE", help="one of %(choices)s: maximum likelihood, EMO's token-level optimal "
                   "transport mixed with MLE, or REINFORCE with each sample's influence on MAUVE / its TWMD F1 "
                   "against the human continuation as reward (with a KL penalty towards the starting model)")
    p.add_argument("--out", required=True, metavar="DIR", help="the run's folder: training state, then the checkpoint")
    p.add_argument("--steps", type=int, default=100, help="optimizer updates")
    p.add_argument("--seed", type=int, default=0, help="seeds the data order, the samples and the k-means of the rewards (default: 0)")
    p.add_argument("--batch-size", type=int, default=32,
                   help="passages (MLE, token OT) or prompts (policy gradient) per micro-batch (default: 32, a "
                        "training setting: the parameters depend on it)")
    p.add_argument("--grad-accum", type=int, default=1, help="micro-batches averaged into one update")
    p.add_argument("--learning-rate", type=float, default=1e-4, help="AdamW's (constant) learning rate")
    p.add_argument("--kl-coef", type=float, default=0.05, help="weight of KL(model || starting model) (policy gradient)")
    p.add_argument("--mle-coef", type=float, default=0.0,
                   help="weight of MLE on the batch prompts' human passages added to the policy-gradient loss "
                        "(default: 0, the reward and the KL alone)")
    p.add_argument("--reward-num-buckets", type=_buckets, default=8,
                   help="k-means bins of each MAUVE-PG step's reward codebook: an integer >= 2, or auto (MAUVE's "
                        "rule over the batch, the pool and the references: 26 for 32 prompts and a pool of 224) "
                        "(default: 8)")
    p.add_argument("--reward-pool", type=int, default=224,
                   help="features of the latest earlier generations pooled with the batch's as MAUVE's model "
                        "sample for the MAUVE-PG rewards (default: 224; 0: the batch alone)")
    p.add_argument("--prompt-len", type=int, default=10, help="prompt tokens of each passage")
    p.add_argument("--gen-len", type=int, default=40, help="continuation tokens of each passage (sampled for the policy gradient)")
    p.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (policy gradient)")
    p.add_argument("--eval-every", type=int, default=0, help="dev MAUVE every this many steps; needs --dev-file (default: 0, never)")
    p.add_argument("--checkpoint-every", type=int, default=10, help="training state written every this many steps")
    p.add_argument("--train-file", default=None, help="training texts, one per line (default: the bundled plays' training split)")
    p.add_argument("--dev-file", default=None, help="dev texts, one per line, for --eval-every (default: none)")
    p.add_argument("--featurizer", default=None, help="encoder of the rewards and the dev MAUVE (default: all-MiniLM-L6-v2)")
    p.add_argument("--json", default=None, metavar="PATH", help="also write the curves and the signature as JSON (default: none)")
    add_dtype_option(p)
    add_progress_options(p)
    p.set_defaults(func=run)


def _buckets(value: str) -> int | str:
    """``--reward-num-buckets``: ``auto`` or an integer (its bounds are the settings' check)."""
    if value == "auto":
        return value
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or an integer, got {value!r}") from None


def _settings(args: argparse.Namespace):
    from jaxmetrics.training import FinetuneSettings

    try:
        return FinetuneSettings(objective=args.objective, steps=args.steps, seed=args.seed, batch_size=args.batch_size,
                                grad_accum=args.grad_accum, learning_rate=args.learning_rate, kl_coef=args.kl_coef,
                                mle_coef=args.mle_coef, prompt_len=args.prompt_len, gen_len=args.gen_len,
                                temperature=args.temperature,
                                eval_every=args.eval_every, checkpoint_every=args.checkpoint_every,
                                reward_num_buckets=args.reward_num_buckets, reward_pool=args.reward_pool)
    except (TypeError, ValueError) as e:
        raise option_error(e, _OPTIONS) from None


def run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    if args.json:
        check_output_file(args.json, "--json")
    if args.eval_every and args.dev_file is None:
        raise ValueError("--eval-every: needs --dev-file (the dev prompts and human continuations)")
    train = read_input(args.train_file, "--train-file", command="finetune", empty="drop").texts if args.train_file else None
    dev = read_input(args.dev_file, "--dev-file", command="finetune", empty="drop").texts if args.dev_file else None
    from jaxmetrics.training import finetune

    try:
        res = finetune(model=args.model, train_texts=train, dev_texts=dev, out_dir=args.out, settings=settings,
                       featurizer=args.featurizer, progress=progress_enabled(args), dtype=args.dtype)
    except ValueError as e:
        raise option_error(e, _OPTIONS) from None
    print(f"model        {args.model} -> {res.checkpoint}")
    print(f"objective    {settings.objective}, {settings.steps} steps"
          + (f" (resumed after step {res.resumed_from})" if res.resumed_from else ""))
    print(f"loss         {res.loss[0]:.4f} (step 1) -> {res.loss[-1]:.4f} (step {len(res.loss)})")
    if res.reward_mean is not None:
        print(f"reward mean  {res.reward_mean[0]:.4f} -> {res.reward_mean[-1]:.4f}; KL {res.kl[-1]:.4f}")
    for step, m in zip(res.eval_steps.tolist(), res.dev_mauve.tolist()):
        print(f"dev MAUVE    step {step}: {m:.4f}")
    print(f"time         {res.seconds_per_step:.2f} s per step")
    if args.json:
        write_json(args.json, res.to_dict())
    sys.stdout.flush()
    return 0
