"""Worked example: evaluate on 8 devices with a mesh, sharded inputs and mergeable states.

Simulates 8 devices on the CPU (``--xla_force_host_platform_device_count=8``, set before JAX
starts). On a GPU node or a TPU pod slice the same code runs unchanged on the real devices;
across several hosts call ``jax.distributed.initialize()`` first (see the README section
"Running across hosts").

Steps:

1. a 1-D mesh over all devices (``jaxmetrics.sharding.make_mesh``);
2. a stream of batches: each batch's example axis is sharded over the mesh
   (``jaxmetrics.sharding.shard``; ``pad_to_multiple`` + a mask for a ragged last batch) and
   folded into the metrics' states by one jitted step — XLA inserts the cross-device reductions;
3. two simulated "hosts" (4 devices each) accumulate their own halves of the data, and the
   states are merged at the end (``merge_all``) — equal to the single-stream value;
4. the non-decomposable metrics (MAUVE, Mark-Evaluate) on features sharded over the mesh.

Usage:
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/multi_device_example.py [--quick]
"""
from __future__ import annotations

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

from jaxmetrics.sharding import make_mesh, pad_to_multiple, shard  # noqa: E402
from jaxmetrics.diversity import NGramState  # noqa: E402
from jaxmetrics.lm import PerplexityState  # noqa: E402
from jaxmetrics.mark_evaluate import MarkEvaluateState  # noqa: E402
from jaxmetrics.mauve import MauveState  # noqa: E402
from jaxmetrics.similarity import SimilarityState  # noqa: E402
from jaxmetrics.state import merge_all  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer, smaller batches")
    args = ap.parse_args()
    n_batches, rows = (4, 20) if args.quick else (12, 60)
    t0 = time.perf_counter()

    # 1. the mesh -------------------------------------------------------------------------
    mesh = make_mesh()
    print(f"devices: {len(jax.devices())} ({jax.devices()[0].platform}); mesh {dict(mesh.shape)}")

    # a tiny random causal LM stands in for the scoring model
    from jaxmetrics.lm import score_windows
    from jaxmetrics.models import load_model
    from jaxmetrics.testing import tiny_checkpoint

    lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
    rng = np.random.default_rng(0)
    T = 32

    def make_batch(i):
        """A ragged batch of token windows: ``rows`` windows, padded to a multiple of 8 rows."""
        r = np.random.default_rng(i)
        ids = r.integers(0, 300, size=(rows, T)).astype(np.int32)
        lengths = r.integers(8, T + 1, size=rows).astype(np.int32)
        padded = pad_to_multiple(ids, len(mesh.devices.flat))
        lengths = pad_to_multiple(lengths, len(mesh.devices.flat)).values
        return padded.values, np.where(padded.rows_mask, lengths, 0)

    # 2. streaming states over sharded batches ------------------------------------------------
    @jax.jit
    def fold(ppl, ngrams, scores, ids, lengths):
        return ppl.add(scores), ngrams.update(ids, lengths)

    def evaluate(batches):
        ppl, ngr = PerplexityState.empty(), NGramState.empty(max_n=4, capacity=1 << 14)
        for ids, lengths in batches:
            s_ids, s_len = shard((ids, lengths), mesh)  # rows split over the 8 devices
            att = np.arange(T)[None, :] < np.asarray(lengths)[:, None]
            labels = np.where(att, ids, -100)  # transformers convention: -100 = not scored
            s_att, s_lab = shard((att, labels), mesh)
            scores = score_windows(s_ids, s_att, s_lab, model=lm)  # the model forward, sharded by rows
            ppl, ngr = fold(ppl, ngr, scores, s_ids, s_len)
        return ppl, ngr

    batches = [make_batch(i) for i in range(n_batches)]
    ppl, ngr = evaluate(batches)
    out = ngr.compute()
    print(f"stream of {n_batches} batches: perplexity {float(ppl.compute()):.4f} over {int(ppl.count)} "
          f"tokens; distinct-4 {out.distinct[3]:.4f}; 2-gram entropy {out.entropy[1]:.4f}")

    # 3. two "hosts", each with half of the batches, merge their states ------------------------
    halves = [evaluate(batches[: n_batches // 2]), evaluate(batches[n_batches // 2:])]
    ppl_m = merge_all([h[0] for h in halves])
    ngr_m = merge_all([h[1] for h in halves])
    same_counts = bool(np.array_equal(np.asarray(ngr_m.counts), np.asarray(ngr.counts)))
    print(f"merged over 2 hosts: perplexity {float(ppl_m.compute()):.4f}, token count equal: "
          f"{int(ppl_m.count) == int(ppl.count)}, n-gram tables equal: {same_counts}")

    # similarity corpus means with the pairs sharded over the mesh
    emb_c = rng.normal(size=(16, 12, 32)).astype(np.float32)
    emb_r = rng.normal(size=(16, 10, 32)).astype(np.float32)
    mc = np.arange(12)[None] < rng.integers(4, 13, 16)[:, None]
    mr = np.arange(10)[None] < rng.integers(4, 11, 16)[:, None]
    names = ("candidates", "references", "candidates_mask", "references_mask")
    sim = jax.jit(lambda s, *b: s.update(**dict(zip(names, b))))(SimilarityState.empty("bertscore"),
                                                                  *shard((emb_c, emb_r, mc, mr), mesh))
    print("BERTScore corpus means (pairs sharded):", sim.compute())

    # 4. non-decomposable metrics on sharded features -------------------------------------------
    from jaxmetrics.mark_evaluate import mark_evaluate_scores

    p = rng.normal(size=(128, 16)).astype(np.float32)
    q = (rng.normal(size=(128, 16)) + 0.3).astype(np.float32)
    # features arrive in batches (e.g. from featurizing a text stream) into fixed-capacity buffers
    buf = MauveState.empty(capacity=128, dim=16)
    for i in range(0, 128, 32):
        buf = buf.update(references=p[i:i + 32], candidates=q[i:i + 32])
    kw = dict(num_buckets=8, kmeans_num_redo=2, kmeans_max_iter=50, mesh=mesh)  # PCA + k-means sharded
    print(f"MAUVE (buffered features, sharded): {buf.compute(**kw).mauve:.4f}")
    me_buf = MarkEvaluateState.empty(128, 16).update(references=p, candidates=q)
    r, c = shard((me_buf.first.values(), me_buf.second.values()), mesh)
    me = jax.jit(lambda a, b: mark_evaluate_scores(references=a, candidates=b, k=3))(r, c)
    print("Mark-Evaluate (features sharded):", me)
    print(f"done in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
