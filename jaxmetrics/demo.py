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

The demo is a thin composition of public functions: :func:`jaxmetrics.evaluate_generation` (the
same protocol for any model and dataset) on the bundled data and model, its report writer
(:func:`jaxmetrics.evaluation.write_report`: ``report.md`` / ``.json`` / ``.csv``,
``divergence_curves.png``, ``lengths.png``) and :func:`jaxmetrics.lm.perplexity`. The table —
the report's own Markdown formatter (:func:`jaxmetrics.evaluation.format_markdown`) in the
paper's column layout, :data:`TABLE_COLUMNS` — is printed and saved under ``demo_output/``
(``results.md``, ``results.json``), next to the report and ``evaluate_generation``'s resumable
cache (``cache/``: a rerun reuses the generations and features).

Usage (the command line, :mod:`jaxmetrics.commands.demo`, builds the options and calls
:func:`run_demo`)::

    jaxmetrics demo                 # full size (about 7.5 minutes from nothing on 2 CPU cores)
    jaxmetrics demo --small         # the test suite's run (also JAXMETRICS_DEMO_SIZE=small):
                                    # fewer k-means seeds, Self-BLEU samples and PPL tokens

Everything runs offline (``HF_HUB_OFFLINE=1`` is set here).
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from jaxmetrics.evaluation.plot import CurveLegend
from jaxmetrics.results import Result, static_field
from jaxmetrics.results import make_signature, model_id
from jaxmetrics.training.data import TextPassages, text_passages

__all__ = ["DemoConfig", "DemoResult", "HeldoutPassages", "SIZES", "SlidingWindowPPL", "TABLE_COLUMNS",
           "format_table", "heldout_passages", "run_demo"]


def _offline() -> None:
    # Everything the demo loads is a local directory; make sure nothing reaches for the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DECODINGS = ("greedy", "pure", "nucleus")
ROWS = ("human",) + DECODINGS
ROW_LABELS = {"human": "Human", "greedy": "Greedy", "pure": "Pure sampling", "nucleus": "Nucleus, p=0.9"}

# the columns of the MAUVE paper's Table 2 (keys of jaxmetrics.evaluation.COLUMNS), in its order
TABLE_COLUMNS = ("mauve", "frontier_integral", "gen_ppl", "distinct_4", "self_bleu_4", "zipf", "rep", "bertscore_f1",
                 "twmd_f1", "me_petersen")


@dataclass(frozen=True)
class DemoConfig:
    """Sizes and settings of one demo run.

    Attributes:
      num_prompts: number of held-out passages (prompts and human continuations) per decoding.
      prompt_len: prompt length in model tokens (the MAUVE paper: 10).
      gen_len: tokens generated after the prompt; human texts are cut to ``prompt_len + gen_len``.
      top_p: nucleus threshold.
      seed: seeds the passage choice, the sampling keys and the MAUVE k-means.
      self_bleu_samples: hypotheses drawn for Self-BLEU (the MAUVE experiments: 500).
      encoder_max_length: MiniLM truncation length (256, the model's own; no demo text is longer).
      ppl_max_length, ppl_stride: sliding-window perplexity settings.
      ppl_max_tokens: held-out tokens scored by the sliding-window perplexity (``None`` = all).
      num_mauve_seeds: k-means seeds averaged into each run's MAUVE (greedy: its ± is over these):
        ``seed + 25, ...`` for the first run, the next ones for each further run.
      sampling_runs: independent runs of pure and nucleus sampling (new sampling key and
        k-means seeds each, as the paper's 5 runs); the table shows their mean ± s.d.
      batch_size: prompts per generation batch.
    """

    num_prompts: int = 500
    prompt_len: int = 10
    gen_len: int = 118
    top_p: float = 0.9
    seed: int = 0
    self_bleu_samples: int = 500
    encoder_max_length: int = 256
    ppl_max_length: int = 128
    ppl_stride: int = 64
    ppl_max_tokens: int | None = 60_000
    num_mauve_seeds: int = 5
    sampling_runs: int = 3
    batch_size: int = 128


SIZES = {
    "full": DemoConfig(),
    # Reduced for the test suite, but not in what decides pure vs nucleus (500 prompts of 128
    # tokens, 3 runs each): at 250 prompts their MAUVE runs already overlap.
    "small": DemoConfig(num_mauve_seeds=3, self_bleu_samples=100, ppl_max_tokens=8_000),
}


#: passages of the held-out Shakespeare token stream (:func:`heldout_passages`): ``windows`` ``[n,
#: prompt_len + gen_len]`` and the whole ``stream``
HeldoutPassages = TextPassages


class SlidingWindowPPL(Result):
    """Sliding-window perplexity of the held-out human text.

    Attributes:
      perplexity: ``exp`` of the mean token NLL.
      num_tokens: tokens scored.
      max_length, stride: the window and its stride, in tokens.
    """

    perplexity: float
    num_tokens: int
    max_length: int
    stride: int


class DemoResult(Result):
    """Result of :func:`run_demo`; :meth:`to_dict` is ``results.json``.

    Attributes:
      rows: ``{'human' | 'greedy' | 'pure' | 'nucleus': {column: value}}``: the
        :class:`~jaxmetrics.evaluation.GenerationReport` rows under the paper's names.
      human_sliding_window_ppl: :class:`SlidingWindowPPL` of the held-out text.
      config: the :class:`DemoConfig` as a dict.
      notes: the report's notes (skipped metrics; empty when every metric was computed).
      samples: ``{row: [3 texts]}``: the first three passages and continuations (first run).
      seconds: wall time of the whole demo.
      stage_seconds: the report's time per stage.
      backend: the JAX backend.
      divergence_curves: the :class:`~jaxmetrics.evaluation.CurveLegend` of ``divergence_curves.png``.
      signature: what the numbers depend on (:mod:`jaxmetrics.results`): ``metric:demo``, the
        generating model and the encoder with their weights' hashes and dtypes, and every
        :class:`DemoConfig` setting (in ``results.json``).
    """

    rows: dict
    human_sliding_window_ppl: SlidingWindowPPL
    config: dict
    notes: list
    samples: dict
    seconds: float
    stage_seconds: dict
    backend: str
    divergence_curves: CurveLegend
    signature: str = static_field(default="", repr=False)


# ----------------------------------------------------------------------------------- data
def heldout_passages(tokenizer, cfg: DemoConfig) -> HeldoutPassages:
    """Choose ``cfg.num_prompts`` non-overlapping windows of the held-out token stream (at random,
    with ``numpy.random.default_rng(cfg.seed)``).

    The held-out speeches are joined by newlines (the training format). Windows start at a
    speech start and span ``prompt_len + gen_len`` tokens of ``tokenizer`` (a transformers fast
    tokenizer). Raises ``ValueError`` (``num_prompts``) when there are not enough of them.

    Returns:
      :class:`HeldoutPassages`.
    """
    from jaxmetrics.data import load_shakespeare

    return text_passages(tokenizer, load_shakespeare("heldout"), prompt_len=cfg.prompt_len, gen_len=cfg.gen_len,
                         num_passages=cfg.num_prompts, seed=cfg.seed, name="num_prompts")


# ---------------------------------------------------------------------------------- table
def _caption(rows: dict, cfg: DemoConfig, sliding_window: SlidingWindowPPL | None) -> list[str]:
    lines = [f"{cfg.num_prompts} held-out Shakespeare passages; prompt = first {cfg.prompt_len} tokens, "
             f"texts = {cfg.prompt_len + cfg.gen_len} tokens (prompt included); the bundled demo GPT-2.",
             f"MAUVE and FI: mean ± s.d. over {cfg.sampling_runs} runs of each sampling method "
             f"(a new sampling key per run, as the paper's runs; each run's value is the mean over "
             f"{cfg.num_mauve_seeds} k-means seeds) and over those seeds for greedy; the other "
             f"sampled columns are run means (features: all-MiniLM-L6-v2 sentence embeddings)."]
    pu, nu = rows.get("pure", {}), rows.get("nucleus", {})
    if {"mauve", "mauve_std"} <= set(pu) and {"mauve", "mauve_std"} <= set(nu):
        noise = 2.0 * max(pu["mauve_std"], nu["mauve_std"])
        if abs(pu["mauve"] - nu["mauve"]) <= noise:
            lines.append(f"Pure vs nucleus MAUVE: the gap ({abs(pu['mauve'] - nu['mauve']):.3f}) is within "
                         f"twice the run-to-run standard deviation ({noise:.3f}): a tie at this size.")
    if sliding_window is not None:
        sw = sliding_window
        line = (f"Sliding-window perplexity of the held-out human text: {sw.perplexity:.2f} (its first "
                f"{sw.num_tokens} tokens as one stream, window {sw.max_length}, stride {sw.stride}: every token "
                f"after the first window is read with at least {sw.max_length - sw.stride} tokens of context).")
        human = rows.get("human", {}).get("gen_ppl")
        if human is not None:
            line += (f" A different quantity from the Human row's Gen. PPL ({human:.2f}): that scores each of the "
                     f"{cfg.num_prompts} passages on its own from its first token and divides by all of a passage's "
                     f"tokens though the first is not predicted (the MAUVE experiments' convention).")
        lines.append(line)
    return lines


def format_table(rows: dict[str, dict], cfg: DemoConfig, notes: list[str] | tuple = (),
                 sliding_window: SlidingWindowPPL | None = None) -> str:
    """The demo's table: the report formatter (:func:`jaxmetrics.evaluation.format_markdown`) in
    the layout of the MAUVE paper's Table 2 (:data:`TABLE_COLUMNS`, the paper's row names) with
    the demo's caption.

    Args:
      rows: ``{'human' | 'greedy' | 'pure' | 'nucleus': {column: value}}`` (:attr:`DemoResult.rows`);
        missing metrics print as ``—``.
      cfg: the :class:`DemoConfig` of the run (the caption's sizes).
      notes: appended as ``Note: ...`` lines.
      sliding_window: the held-out perplexity line of the caption (``None``: no line).

    Returns:
      the Markdown text (header, separator, one line per row, then the caption).

    Examples:
        >>> rows = {"human": {}, "greedy": {"mauve": 0.25}, "pure": {}, "nucleus": {}}
        >>> print(format_table(rows, DemoConfig(num_prompts=2, gen_len=5)).splitlines()[3][:30])
        | Greedy | 0.250 | — | — | — |
    """
    from jaxmetrics.evaluation import format_markdown

    return format_markdown(rows, {}, notes, labels=ROW_LABELS, columns=TABLE_COLUMNS,
                           caption=_caption(rows, cfg, sliding_window))


# ---------------------------------------------------------------------------------- main
def run_demo(cfg: DemoConfig = SIZES["full"], out_dir: str | os.PathLike = "demo_output", *,
             model: str | os.PathLike | None = None, featurizer: str | os.PathLike | None = None,
             dtype: str | None = None) -> DemoResult:
    """Run the demo: print the table and write ``results.json``, ``results.md`` and the report.

    :func:`jaxmetrics.evaluate_generation` on the bundled data and model (decodings
    ``greedy``, ``sample`` and ``top_p=0.9`` under the paper's names ``greedy``, ``pure``,
    ``nucleus``; ``sampling_runs`` seeds; MiniLM features, mean-pooled), written by
    :func:`jaxmetrics.evaluation.write_report` (``report.md`` / ``.json`` / ``.csv``,
    ``divergence_curves.png``, ``lengths.png``) with its resumable cache (``cache/``), plus the
    sliding-window perplexity of the held-out text.

    Args:
      cfg: a :class:`DemoConfig` (``SIZES['full']`` or ``SIZES['small']``).
      out_dir: output folder (created).
      model: the generating GPT-2 directory (default: the bundled demo model,
        :func:`jaxmetrics.data.demo_model_dir`).
      featurizer: the MiniLM encoder directory (features, BERTScore / TWMD; default:
        :func:`jaxmetrics.data.demo_encoder_dir`).
      dtype: compute dtype of both models, ``'float32'`` (``None``, the default) or
        ``'bfloat16'`` (for accelerators; see :func:`jaxmetrics.models.load_model`).

    Returns:
      :class:`DemoResult` (its :meth:`~DemoResult.to_dict` is ``results.json``).

    Examples:
        >>> SIZES["small"].num_prompts, SIZES["small"].prompt_len, SIZES["small"].sampling_runs
        (500, 10, 3)
        >>> res = run_demo(SIZES["small"], out_dir="demo_output")  # doctest: +SKIP
        >>> res.rows["greedy"]["mauve"] < res.rows["nucleus"]["mauve"]  # doctest: +SKIP
        True
    """
    _offline()
    import jax

    from jaxmetrics.data import demo_encoder_dir, demo_model_dir
    from jaxmetrics.evaluation import (FeatureSettings, GenerationSettings, MauveScoring, ScoringSettings,
                                       SimilarityScoring, curve_legend, evaluate_generation, write_report)
    from jaxmetrics.lm import perplexity
    from jaxmetrics.models import load_model

    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if featurizer is None:
        featurizer = demo_encoder_dir()  # before any work: a missing encoder names its install command
    print("[demo] loading the demo GPT-2 and the MiniLM encoder", file=sys.stderr, flush=True)
    dtype = "float32" if dtype is None else dtype
    lm = load_model(model or demo_model_dir(), dtype=dtype)
    encoder = load_model(featurizer, dtype=dtype)

    passages = heldout_passages(lm.tokenizer, cfg)
    windows = passages.windows
    # the demo's rows are evaluate_generation's settings under the paper's names
    setting = {"greedy": "greedy", "pure": "sample", "nucleus": f"top_p={cfg.top_p}"}
    labels = {"human": ROW_LABELS["human"], **{setting[r]: ROW_LABELS[r] for r in DECODINGS}}
    generation = GenerationSettings(decodings=tuple(setting[r] for r in DECODINGS),
                                    seeds=tuple(cfg.seed + 1 + j for j in range(cfg.sampling_runs)),
                                    max_new_tokens=cfg.gen_len, eos_token_id=None)
    first_kmeans_seed = cfg.seed + 25
    scoring = ScoringSettings(
        mauve=MauveScoring(seeds=tuple(range(first_kmeans_seed, first_kmeans_seed + cfg.num_mauve_seeds))),
        similarity=SimilarityScoring(max_length=cfg.encoder_max_length), self_bleu_samples=cfg.self_bleu_samples)
    rep = evaluate_generation(
        model=lm, featurizer=encoder, dataset=(list(windows[:, :cfg.prompt_len]), list(windows[:, cfg.prompt_len:])),
        generation=generation, features=FeatureSettings(max_length=cfg.encoder_max_length), scoring=scoring,
        batch_size=cfg.batch_size, cache_dir=out_dir / "cache", progress=True, row_labels=labels)
    write_report(rep, out_dir, labels=labels, curves_title="Shakespeare (P) vs demo GPT-2 (Q)")
    rows = {"human": rep.rows["human"], **{r: rep.rows[setting[r]] for r in DECODINGS}}

    print("[demo] sliding-window perplexity of the held-out text", file=sys.stderr, flush=True)
    scored = passages.stream if cfg.ppl_max_tokens is None else passages.stream[:cfg.ppl_max_tokens]
    sw = perplexity(scored, model=lm, max_length=cfg.ppl_max_length, stride=cfg.ppl_stride, batch_size=32,
                    progress=True)
    sw_ppl = SlidingWindowPPL(perplexity=float(sw.perplexity), num_tokens=int(sw.num_tokens),
                              max_length=cfg.ppl_max_length, stride=cfg.ppl_stride)

    seconds = time.perf_counter() - t_start
    tok = lm.tokenizer
    samples = {"human": tok.batch_decode([w.tolist() for w in windows[:3]])}
    for r in DECODINGS:
        samples[r] = [tok.decode(c.tolist()) for c in rep.generations[setting[r]][0][:3]]
    sig = make_signature("demo", model=lm, dtype=getattr(lm, "dtype", None), featurizer=model_id(encoder),
                         featurizer_dtype=getattr(encoder, "dtype", None), **asdict(cfg))
    result = DemoResult(rows=rows, human_sliding_window_ppl=sw_ppl, config=asdict(cfg), notes=list(rep.notes),
                        samples=samples, seconds=round(seconds, 1), stage_seconds=rep.seconds,
                        backend=jax.default_backend(), divergence_curves=curve_legend(rep.curves, rep.rows, labels),
                        signature=sig)
    md = format_table(rows, cfg, result.notes, sw_ppl)
    print()
    print(md)
    result.write_json(out_dir / "results.json")
    (out_dir / "results.md").write_text(md + "\n")
    print(f"\nsaved {out_dir}/results.json, results.md, divergence_curves.png (and report.*, lengths.png)  "
          f"({seconds:.0f}s)", file=sys.stderr)
    return result
