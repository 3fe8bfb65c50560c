"""Fine-tuning the bundled Shakespeare GPT-2 with MLE, token-level OT, MAUVE-PG and TWMD-PG at an
equal budget, evaluated on held-out plays against tuned MLE.

Arms (``jaxmetrics.training.finetune``, the same steps, batch size and learning rate each; the
policy-gradient arms sample one continuation per prompt of the batch, the others read one human
passage per row): ``mle``, ``token_ot``, ``mauve_pg``, ``twmd_pg``, each from the demo model, with
``--seeds`` training seeds; ``base`` is the demo model untouched. Training reads the 33 training
plays only (the rewards' human text included).

Evaluation: passages of the four held-out plays (``jaxmetrics.training.text_passages``, 10-token
prompts, 40-token continuations, as the demo), split in two: the first ``--dev`` passages (dev:
decoding tuning) and the last ``--test`` (test: every reported number; other plays than most of
dev). For every model:

* decoding tuned on dev: pure sampling, each ``temperature=T`` and each ``top_p=P`` of the grid,
  one sampling run each, scored by dev MAUVE (MiniLM, two k-means seeds); the best is the arm's
  "tuned" decoding;
* on test, pure sampling and the tuned decoding through ``evaluate_generation`` (MiniLM features,
  ``--mauve-seeds`` fresh k-means seeds): MAUVE, Gen. PPL, distinct-4, Self-BLEU-4, REP, BERTScore
  and TWMD F1 against each prompt's human continuation;
* MAUVE under a second featurizer used by no reward: the *base* demo GPT-2's last-token features;
* held-out perplexity of the test passages' token stream (sliding windows).

Then ``compare_mauve`` between the arms' pure-sampling generations (all seeds pooled, one shared
quantizer, Holm-adjusted p-values) and a paired test of TWMD F1 (TWMD-PG against MLE,
``compare_systems``). The targets are checked and written under the table.

Everything a run computes is kept under ``--work`` (checkpoints resume; each evaluation is a JSON
file), so an interrupted run continues where it stopped.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/training_experiment.py
  ... --tiny        (minutes; what the test runs: every stage at toy size)
"""
from __future__ import annotations

import argparse
import datetime
import json
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
ARMS = ("mle", "token_ot", "mauve_pg", "twmd_pg")
PROMPT_LEN, GEN_LEN = 10, 40
FULL = dict(steps=150, batch_size=32, learning_rate=1e-4, kl_coef=0.05, seeds=(0, 1, 2), dev=250, test=500,
            mauve_seeds=(25, 26, 27, 28, 29), temperatures=(0.7, 0.8, 0.9), top_ps=(0.8, 0.9, 0.95))
TINY = dict(steps=2, batch_size=4, learning_rate=5e-5, kl_coef=0.05, seeds=(0,), dev=24, test=24,
            mauve_seeds=(25, 26), temperatures=(0.8,), top_ps=(0.9,))


def _passages(tokenizer, dev: int, test: int):
    from jaxmetrics.data import load_shakespeare
    from jaxmetrics.training import text_passages

    windows = text_passages(tokenizer, load_shakespeare("heldout"), prompt_len=PROMPT_LEN, gen_len=GEN_LEN).windows
    if len(windows) < dev + test:
        raise SystemExit(f"--dev + --test: only {len(windows)} held-out passages")
    split = lambda w: (list(w[:, :PROMPT_LEN]), list(w[:, PROMPT_LEN:]))   # noqa: E731
    return split(windows[:dev]), split(windows[len(windows) - test:]), windows[len(windows) - test:]


def train(arm: str, seed: int, cfg: dict, work: Path, progress: bool):
    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.training import finetune

    out = work / "models" / f"{arm}-seed{seed}"
    extra = {}
    if arm == "mauve_pg" and cfg.get("reward_num_buckets") is not None:
        extra["reward_num_buckets"] = cfg["reward_num_buckets"]
    if arm == "mauve_pg" and cfg.get("reward_pool") is not None:
        extra["reward_pool"] = cfg["reward_pool"]
    if arm in ("mauve_pg", "twmd_pg") and cfg.get("mle_coef", 0.0):
        extra["mle_coef"] = cfg["mle_coef"]
    res = finetune(model=demo_model_dir(), objective=arm, out_dir=out, steps=cfg["steps"], seed=seed, **extra,
                   batch_size=cfg["batch_size"], learning_rate=cfg["learning_rate"], kl_coef=cfg["kl_coef"],
                   prompt_len=PROMPT_LEN,
                   gen_len=GEN_LEN, progress=progress)
    curves = {"loss": np.asarray(res.loss).tolist(),
              "reward_mean": None if res.reward_mean is None else np.asarray(res.reward_mean).tolist(),
              "kl": None if res.kl is None else np.asarray(res.kl).tolist(),
              "seconds_per_step": res.seconds_per_step, "signature": res.signature}
    return out, curves


def _evaluate(model, dataset, decodings, encoder, mauve_seeds, *, sampling_seed: int, similarity: bool):
    from jaxmetrics.evaluation import GenerationSettings, MauveScoring, ScoringSettings, evaluate_generation

    return evaluate_generation(
        model=model, featurizer=encoder, dataset=dataset, similarity_model=encoder if similarity else None,
        generation=GenerationSettings(decodings=tuple(decodings), seeds=(sampling_seed,), max_new_tokens=GEN_LEN,
                                      eos_token_id=None),
        scoring=ScoringSettings(mauve=MauveScoring(seeds=tuple(mauve_seeds)), self_bleu_samples=100,
                                mark_evaluate=False), progress=False)


def tune(model, dev, encoder, cfg) -> tuple[str, dict]:
    """The decoding of the grid with the highest dev MAUVE, and every setting's dev MAUVE."""
    grid = ["sample"] + [f"temperature={t}" for t in cfg["temperatures"]] + [f"top_p={p}" for p in cfg["top_ps"]]
    rep = _evaluate(model, dev, grid, encoder, cfg["mauve_seeds"][:2], sampling_seed=101, similarity=False)
    scores = {d: float(rep.rows[d]["mauve"]) for d in grid}
    return max(scores, key=scores.get), scores


def evaluate_model(name: str, model_dir, data: dict, cfg: dict, work: Path) -> dict:
    """Dev tuning and the test metrics of one model, cached as ``work/eval/<name>.json``."""
    cache = work / "eval" / f"{name}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    from jaxmetrics.lm import perplexity
    from jaxmetrics.mauve import compute_mauve_seeds
    from jaxmetrics.models import featurize, load_model, sentence_embeddings
    from jaxmetrics.similarity import compute_similarity

    lm = load_model(model_dir)
    best, dev_scores = tune(lm, data["dev"], data["encoder"], cfg)
    decodings = ["sample"] if best == "sample" else ["sample", best]
    rep = _evaluate(lm, data["test"], decodings, data["encoder"], cfg["mauve_seeds"], sampling_seed=7, similarity=True)
    out = {"tuned": best, "dev_mauve": dev_scores, "rows": {}, "human": rep.rows["human"]}
    human_cont = [lm.tokenizer.decode(np.asarray(c).tolist()) for c in data["test"][1]]
    for role, dec in (("pure", "sample"), ("tuned", best)):
        texts = rep.texts[dec][0]
        full = [p + t for p, t in zip(rep.prompts, texts)]
        row = {k: rep.rows[dec][k] for k in ("mauve", "mauve_std", "gen_ppl", "distinct_4", "self_bleu_4", "rep",
                                             "bertscore_f1", "twmd_f1") if k in rep.rows[dec]}
        second = featurize(full, model=data["second"], max_length=128, progress=False)
        row["mauve_gpt2_features"] = float(compute_mauve_seeds(references=data["second_human"], candidates=second,
                                                               seeds=tuple(cfg["mauve_seeds"])).mauve_mean)
        row["twmd_f1_pairs"] = np.asarray(compute_similarity(references=human_cont, candidates=texts,
                                                             model=data["encoder"], metric="twmd").f1).tolist()
        row["features"] = np.asarray(sentence_embeddings(full, model=data["encoder"], progress=False)).tolist()
        out["rows"][role] = row
    out["heldout_ppl"] = float(perplexity(data["test_stream"], model=lm).perplexity)
    from _report import save_json   # the machine goes with the cached evaluation too

    cache.parent.mkdir(parents=True, exist_ok=True)
    return save_json(out, cache)


def _data(cfg):
    from jaxmetrics.data import demo_encoder_dir, demo_model_dir
    from jaxmetrics.models import featurize, load_model, sentence_embeddings

    base = load_model(demo_model_dir())
    dev, test, test_windows = _passages(base.tokenizer, cfg["dev"], cfg["test"])
    encoder = load_model(demo_encoder_dir())
    human_full = [base.tokenizer.decode(np.asarray(w).tolist()) for w in test_windows]
    return {"dev": dev, "test": test, "encoder": encoder, "second": base,
            "test_stream": np.concatenate([np.asarray(w) for w in test_windows]),
            "second_human": featurize(human_full, model=base, max_length=128, progress=False),
            "human_features": np.asarray(sentence_embeddings(human_full, model=encoder, progress=False))}


def summarize(evals: dict, curves: dict, cfg: dict) -> tuple[str, dict]:
    """The results table (mean ± s.d. over training seeds), the arms' comparisons and the targets."""
    import jax

    from jaxmetrics.mauve import compare_mauve

    cols = ("mauve", "mauve_gpt2_features", "gen_ppl", "distinct_4", "self_bleu_4", "rep", "twmd_f1")
    lines = ["| model | decoding | " + " | ".join(cols) + " | held-out PPL |", "|---|---|" + "---:|" * (len(cols) + 1)]
    summary = {}
    for arm in ("base",) + ARMS:
        runs = [evals[k] for k in evals if k.split("-seed")[0] == arm]
        if not runs:
            continue
        for role in ("pure", "tuned"):
            vals = {c: [r["rows"][role].get(c, np.nan) for r in runs] for c in cols}
            summary[(arm, role)] = {c: float(np.mean(v)) for c, v in vals.items()}
            dec = "pure sampling" if role == "pure" else "tuned: " + ", ".join(sorted({r["tuned"] for r in runs}))
            cells = [f"{np.mean(v):.3f} ± {np.std(v):.3f}" if len(v) > 1 else f"{v[0]:.3f}" for v in vals.values()]
            ppl = [r["heldout_ppl"] for r in runs]
            lines.append(f"| {arm} | {dec} | " + " | ".join(cells) + f" | {np.mean(ppl):.2f} |")
        summary[(arm, "ppl")] = float(np.mean([r["heldout_ppl"] for r in runs]))
    human = next(iter(evals.values()))["human"]
    lines.append(f"| human | — | — | — | {human.get('gen_ppl', float('nan')):.3f} | {human['distinct_4']:.3f} | "
                 f"{human['self_bleu_4']:.3f} | {human.get('rep', float('nan')):.3f} | — | — |")
    systems = {arm: np.concatenate([np.asarray(evals[k]["rows"]["pure"]["features"], np.float32)
                                    for k in evals if k.split("-seed")[0] == arm])
               for arm in ("base",) + ARMS if any(k.split("-seed")[0] == arm for k in evals)}
    ref = curves["_human_features"]
    cmp = compare_mauve(references=ref, systems=systems, key=jax.random.key(0), seeds=tuple(cfg["mauve_seeds"][:3]))
    names = list(cmp.names)
    lines += ["", "Pure sampling, all seeds pooled, one shared quantizer (compare_mauve, randomization, Holm):", "",
              "| A | B | MAUVE A − B | p | p (Holm, all pairs) |", "|---|---|---:|---:|---:|"]
    adj, raw = np.asarray(cmp.adjusted_p_value), np.asarray(cmp.p_value)
    for i, a in enumerate(names):
        for j, b in enumerate(names):
            if i < j:
                lines.append(f"| {a} | {b} | {float(cmp.difference[i, j]):+.4f} | {raw[i, j]:.4f} | {adj[i, j]:.4f} |")
    planned = None
    if "mauve_pg" in systems and "mle" in systems:   # the target's one planned comparison (no correction)
        planned = compare_mauve(references=ref, systems={"mauve_pg": systems["mauve_pg"], "mle": systems["mle"]},
                                key=jax.random.key(0), seeds=tuple(cfg["mauve_seeds"][:3]))
    checks = targets(summary, planned, evals, human)
    return "\n".join(lines + ["", "Targets:", ""] + [f"- {c}" for c in checks]), summary


def plot(evals: dict, curves: dict, out: Path) -> None:
    """Three panels: test MAUVE per arm under the reward featurizer (MiniLM) and under the second
    featurizer (base GPT-2), pure sampling and tuned decoding, one dot per training seed; and the
    policy-gradient arms' KL to the starting model over the steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = [a for a in ("base",) + ARMS if any(k.split("-seed")[0] == a for k in evals)]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    for ax, col, title in ((axes[0], "mauve", "MAUVE, MiniLM features (reward featurizer)"),
                           (axes[1], "mauve_gpt2_features", "MAUVE, base GPT-2 features (second)")):
        for r, (role, dx, color) in enumerate((("pure", -0.15, "tab:blue"), ("tuned", 0.15, "tab:orange"))):
            for i, arm in enumerate(arms):
                vals = [evals[k]["rows"][role][col] for k in evals if k.split("-seed")[0] == arm]
                ax.scatter([i + dx] * len(vals), vals, s=14, color=color, alpha=0.6)
                ax.plot([i + dx - 0.1, i + dx + 0.1], [np.mean(vals)] * 2, color=color, lw=2,
                        label=("pure sampling" if role == "pure" else "tuned decoding") if i == 0 else None)
        ax.set_xticks(range(len(arms)), arms, rotation=20)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower left")
    for name, c in sorted(curves.items()):
        if name.startswith("_") or c.get("kl") is None:
            continue
        arm = name.split("-seed")[0]
        axes[2].plot(c["kl"], color="tab:green" if arm == "mauve_pg" else "tab:purple", alpha=0.7, lw=1,
                     label=arm if name.endswith("seed0") else None)
    axes[2].set_xlabel("step")
    axes[2].set_title("KL(model || start) per sampled token", fontsize=9)
    axes[2].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def targets(summary, planned, evals, human) -> list[str]:
    """The targets, each with the measured numbers and met / not met. ``planned``: ``compare_mauve``
    of MAUVE-PG against MLE alone (pure sampling, seeds pooled), the one planned comparison."""
    import jax

    from jaxmetrics.confidence import compare_systems

    out = []
    if planned is not None:
        diff, p = float(planned.difference[0, 1]), float(planned.p_value[0, 1])
        mp, ml = summary[("mauve_pg", "pure")]["mauve"], summary[("mle", "pure")]["mauve"]
        base_nuc = summary.get(("base", "tuned"), {}).get("mauve", float("nan"))
        out.append(f"MAUVE-PG pure {mp:.3f} vs MLE pure {ml:.3f} (mean over seeds; pooled under one quantizer: "
                   f"difference {diff:+.4f}, p {p:.4f}): "
                   f"{'met' if mp >= ml + 0.02 and diff > 0 and p < 0.05 else 'NOT met'} (needs +0.02, p < 0.05)")
        out.append(f"MAUVE-PG pure {mp:.3f} vs the base model's tuned decoding {base_nuc:.3f}: "
                   f"{'met' if mp >= base_nuc else 'NOT met'}")
        g2 = summary[("mauve_pg", "pure")]["mauve_gpt2_features"] - summary[("mle", "pure")]["mauve_gpt2_features"]
        out.append(f"second featurizer (base GPT-2 features) MAUVE-PG − MLE: {g2:+.3f}: "
                   f"{'agrees' if np.sign(g2) == np.sign(mp - ml) else 'DISAGREES'} in direction")
        ppl = summary[("mauve_pg", "ppl")] / summary[("mle", "ppl")] - 1
        out.append(f"held-out perplexity MAUVE-PG vs MLE: {ppl:+.1%}: {'met' if abs(ppl) <= 0.10 else 'NOT met'} (within 10 %)")
        for k in ("distinct_4", "self_bleu_4"):
            rel = summary[("mauve_pg", "pure")][k] / human[k] - 1
            out.append(f"{k} MAUVE-PG vs human: {rel:+.1%}: {'met' if abs(rel) <= 0.10 else 'NOT met'} (within 10 %)")
    if ("twmd_pg", "pure") in summary and ("mle", "pure") in summary:
        pair = lambda arm: np.concatenate([evals[k]["rows"]["pure"]["twmd_f1_pairs"] for k in sorted(evals)  # noqa: E731
                                           if k.split("-seed")[0] == arm])
        a, b = pair("twmd_pg"), pair("mle")
        res = compare_systems(lambda x: x.mean(), {"twmd_pg": a, "mle": b}, key=jax.random.key(1))
        p = float(res.p_value[0, 1])
        rep_t, rep_m = summary[("twmd_pg", "pure")]["rep"], summary[("mle", "pure")]["rep"]
        out.append(f"TWMD-PG held-out TWMD F1 (continuation vs its prompt's human continuation, the reward's "
                   f"definition) {a.mean():.4f} vs MLE {b.mean():.4f} (paired, p {p:.4f}); REP "
                   f"{rep_t:.3f} vs {rep_m:.3f}: {'met' if a.mean() > b.mean() and p < 0.05 and rep_t <= rep_m else 'NOT met'}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tiny", action="store_true", help="every stage at toy size (the test's run)")
    ap.add_argument("--work", default="training_experiment_work", help="checkpoints and evaluations (resumable)")
    ap.add_argument("--out", default=str(RESULTS / "training_experiment.md"))
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    ap.add_argument("--steps", type=int, help="optimizer updates per arm (default: 150)")
    ap.add_argument("--learning-rate", type=float, help="AdamW rate of every arm (default: 1e-4)")
    ap.add_argument("--kl-coef", type=float, help="the policy-gradient arms' KL weight (default: 0.05)")
    ap.add_argument("--reward-num-buckets", type=int, help="MAUVE-PG's reward codebook size (default: the "
                                                           "library's, 8)")
    ap.add_argument("--reward-pool", type=int, help="MAUVE-PG's pool of earlier generations in its rewards' model "
                                                    "sample (default: the library's, 224)")
    ap.add_argument("--mle-coef", type=float, help="the policy-gradient arms' MLE term on their prompts' human "
                                                   "passages (default: 0)")
    ap.add_argument("--dev", type=int, help="held-out passages that tune the decoding (default: 250)")
    ap.add_argument("--test", type=int, help="held-out passages every reported number comes from (default: 500; the "
                                             "four held-out plays hold 1,157, dev included)")
    args = ap.parse_args(argv)
    from _report import save_json, save_table  # benchmarks/ is on sys.path when a script runs

    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.training import FinetuneSettings

    defaults = FinetuneSettings()
    cfg = dict(TINY if args.tiny else FULL)
    for key in ("steps", "learning_rate", "kl_coef", "reward_num_buckets", "reward_pool", "mle_coef", "dev",
                "test"):
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    work = Path(args.work)
    t0 = time.perf_counter()
    data = _data(cfg)
    curves, evals = {"_human_features": data["human_features"]}, {}
    evals["base"] = evaluate_model("base", demo_model_dir(), data, cfg, work)
    for arm in args.arms:
        for seed in cfg["seeds"]:
            name = f"{arm}-seed{seed}"
            model_dir, curves[name] = train(arm, seed, cfg, work, progress=not args.tiny)
            evals[name] = evaluate_model(name, model_dir, data, cfg, work)
    table, summary = summarize(evals, curves, cfg)
    head = (f"# Fine-tuning with MAUVE / TWMD against tuned MLE (bundled Shakespeare GPT-2)\n\n"
            f"{datetime.date.today()}; `benchmarks/training_experiment.py{' --tiny' if args.tiny else ''}`, "
            f"{time.perf_counter() - t0:.0f} s for this invocation (the checkpoints and evaluations it found under "
            f"`--work` were reused). Budget per arm: {cfg['steps']} steps × {cfg['batch_size']} "
            f"passages/prompts, learning rate {cfg['learning_rate']}, KL weight {cfg['kl_coef']} (policy "
            f"gradient), MLE term {cfg.get('mle_coef', 0.0)} (policy gradient), MAUVE-PG reward codebook "
            f"{cfg.get('reward_num_buckets', defaults.reward_num_buckets)} bins, pool "
            f"{cfg.get('reward_pool', defaults.reward_pool)} earlier generations; "
            f"training seeds "
            f"{cfg['seeds']}; dev "
            f"{cfg['dev']} / test {cfg['test']} held-out passages ({PROMPT_LEN}-token prompts, {GEN_LEN} new "
            f"tokens); MAUVE over k-means seeds {cfg['mauve_seeds']} (MiniLM features).\n\n"
            "Columns (test passages, mean ± s.d. over training seeds): `mauve` under MiniLM, the rewards' "
            "featurizer; `mauve_gpt2_features` under the base model's last-token features, which no reward "
            "used; `gen_ppl`, `distinct_4`, `self_bleu_4`, `rep`, `twmd_f1` as `evaluate_generation` reports "
            "them (TWMD of prompt + continuation against the human passage, batch-centred); held-out PPL: "
            "sliding-window perplexity of the test passages' token stream. 'tuned': the decoding of the grid "
            "(pure, temperature, top-p) with the best dev MAUVE, per training seed.\n\n")
    plot(evals, curves, Path(args.out).with_suffix(".png"))
    save_table(head + table + f"\n\nFigure: {Path(args.out).with_suffix('.png').name}.\n", args.out)
    save_json({"config": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
               "curves": {k: v for k, v in curves.items() if not k.startswith("_")},
               "summary": {f"{a}/{r}": v for (a, r), v in summary.items()},
               "tuned": {k: e["tuned"] for k, e in evals.items()}}, Path(args.out).with_suffix(".json"))
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
