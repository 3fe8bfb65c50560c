"""One process of the two-process run of ``tests/test_multiprocess.py`` (the README's "Running
across hosts" recipe on one machine, CPU collectives over gloo).

Usage: ``python multiprocess_worker.py PROCESS_ID NUM_PROCESSES PORT GPT2_DIR OUT_JSON``.

Every process builds the same global data from a fixed seed and keeps only its own share
(host-local data); process 0 also computes each metric alone on all the data (the one-process
result). Each metric's two-process value and one-process value are written as JSON to
``OUT_JSON`` (one file per process).
"""
from __future__ import annotations

import json
import sys
import traceback

import jax

jax.config.update("jax_cpu_collectives_implementation", "gloo")


def main() -> None:
    pid, nproc, port, gpt2_dir, out_path = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
                                             sys.argv[5])
    # 1. before any other JAX call
    jax.distributed.initialize(coordinator_address=f"localhost:{port}", num_processes=nproc, process_id=pid)

    import numpy as np
    from jax.experimental import multihost_utils
    from jax.sharding import NamedSharding, PartitionSpec

    import jaxmetrics
    from jaxmetrics.lm import PerplexityState
    from jaxmetrics.state import merge_stacked

    assert jax.process_count() == nproc and len(jax.devices()) == nproc * len(jax.local_devices())
    mesh = jaxmetrics.make_mesh()  # 2. one mesh over the devices of every process
    rows = NamedSharding(mesh, PartitionSpec("data"))
    rng = np.random.default_rng(0)
    out: dict = {"process": pid, "devices": len(jax.devices())}

    def mine(n: int) -> slice:
        """This process's contiguous share of ``n`` rows (n divisible by the process count)."""
        k = n // nproc
        return slice(pid * k, (pid + 1) * k)

    def record(name, fn):
        try:
            out[name] = fn()
        except Exception as e:  # reported to the test, which fails with the message
            out[name] = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}

    # ---- perplexity: one state per process, gathered and merged (recipe step 6)
    lm = jaxmetrics.load_model(gpt2_dir)
    docs = [rng.integers(0, 250, size=int(n)) for n in rng.integers(20, 60, size=8)]

    def ppl():
        local = jaxmetrics.perplexity(docs[mine(len(docs))], model=lm, max_length=16, stride=8, batch_size=4)
        state = PerplexityState(nll_sum=np.float32(local.nll), count=np.int32(local.num_tokens))
        merged = merge_stacked(multihost_utils.process_allgather(state))
        res = {"two": float(merged.compute()), "tokens": int(merged.count)}
        if pid == 0:
            one = jaxmetrics.perplexity(docs, model=lm, max_length=16, stride=8, batch_size=4)
            res.update(one=one.perplexity, one_tokens=one.num_tokens)
        return res

    def ppl_mesh():
        # the same documents on every process, each batch of windows split over both processes
        res = {"two": jaxmetrics.perplexity(docs, model=lm, max_length=16, stride=8, batch_size=4,
                                            mesh=mesh).perplexity}
        if pid == 0:
            res["one"] = jaxmetrics.perplexity(docs, model=lm, max_length=16, stride=8, batch_size=4).perplexity
        return res

    record("perplexity", ppl)
    record("perplexity_mesh", ppl_mesh)

    # ---- BERTScore: host-local pairs -> global arrays (recipe step 5), scored on the mesh
    B, L, D = 8, 6, 16
    cand, ref = rng.normal(size=(B, L, D)).astype(np.float32), rng.normal(size=(B, L, D)).astype(np.float32)
    cmask, rmask = rng.random((B, L)) > 0.3, rng.random((B, L)) > 0.3
    cmask[:, 0] = rmask[:, 0] = True

    def gathered(prf):
        return [np.asarray(multihost_utils.process_allgather(v, tiled=True)).tolist() for v in prf]

    def one_bertscore():
        one = jaxmetrics.bertscore_scores(candidates=cand, references=ref, candidates_mask=cmask,
                                          references_mask=rmask)
        return [np.asarray(v).tolist() for v in one]

    def bertscore():
        # every process passes the same host arrays; the library pads them and splits the pairs
        # over the devices of both processes
        prf = jaxmetrics.bertscore_scores(candidates=cand, references=ref, candidates_mask=cmask,
                                          references_mask=rmask, mesh=mesh)
        res = {"two": gathered(prf)}
        if pid == 0:
            res["one"] = one_bertscore()
        return res

    def bertscore_global():
        # recipe step 5: each process holds only its pairs, made one global array
        sl = mine(B)
        g = [jax.make_array_from_process_local_data(rows, a[sl]) for a in (cand, ref, cmask, rmask)]
        prf = jaxmetrics.bertscore_scores(candidates=g[0], references=g[1], candidates_mask=g[2],
                                          references_mask=g[3], mesh=mesh)
        res = {"two": gathered(prf), "direct": [np.asarray(v).tolist() for v in prf]}
        if pid == 0:
            res["one"] = one_bertscore()
        return res

    def similarity_global():
        # the same with the normalised similarity family (similarity_scores)
        sl = mine(B)
        g = [jax.make_array_from_process_local_data(rows, a[sl]) for a in (cand, ref, cmask, rmask)]
        kw = dict(metric="twmd", temperature=0.1)
        prf = jaxmetrics.similarity_scores(candidates=g[0], references=g[1], candidates_mask=g[2],
                                           references_mask=g[3], mesh=mesh, **kw)
        res = {"two": [np.asarray(v).tolist() for v in prf],  # replicated: readable on every process
               "global_input": not g[0].is_fully_addressable}
        if pid == 0:
            one = jaxmetrics.similarity_scores(candidates=cand, references=ref, candidates_mask=cmask,
                                               references_mask=rmask, **kw)
            res["one"] = [np.asarray(v).tolist() for v in one]
        return res

    record("bertscore", bertscore)
    record("bertscore_global", bertscore_global)
    record("similarity_global", similarity_global)

    # ---- MAUVE: host-local feature rows, gathered; the rows are sharded over the mesh for PCA and k-means
    p = rng.normal(size=(40, 8)).astype(np.float32)
    q = (rng.normal(size=(40, 8)) + 0.5).astype(np.float32)

    def mauve():
        p_local, q_local = p[mine(len(p))], q[mine(len(q))]
        p_all = np.asarray(multihost_utils.process_allgather(p_local, tiled=True))
        q_all = np.asarray(multihost_utils.process_allgather(q_local, tiled=True))
        kw = dict(num_buckets=4, kmeans_num_redo=2, kmeans_max_iter=50)
        res = {"two": jaxmetrics.compute_mauve(p_features=p_all, q_features=q_all, mesh=mesh, **kw).mauve,
               "gathered_equal": bool(np.array_equal(p_all, p) and np.array_equal(q_all, q))}
        if pid == 0:
            res["one"] = jaxmetrics.compute_mauve(p_features=p, q_features=q, **kw).mauve
        return res

    record("mauve", mauve)

    # ---- Mark-Evaluate: host-local feature rows made global arrays (recipe step 5), k-NN on the mesh
    def mark_evaluate_global():
        g_ref = jax.make_array_from_process_local_data(rows, p[mine(len(p))])
        g_cand = jax.make_array_from_process_local_data(rows, q[mine(len(q))])
        two = jaxmetrics.mark_evaluate_scores(references=g_ref, candidates=g_cand, k=3, mesh=mesh)
        res = {"two": two.to_dict(), "global_input": not g_ref.is_fully_addressable}
        if pid == 0:
            res["one"] = jaxmetrics.mark_evaluate_scores(references=p, candidates=q, k=3).to_dict()
        return res

    record("mark_evaluate_global", mark_evaluate_global)

    # ---- evaluate_generation: every process runs the same call; generation, featurization and
    # Gen. PPL split their rows over both processes' devices
    def evaluate_generation():
        from jaxmetrics.data import load_shakespeare

        lines = [ln for ln in load_shakespeare("heldout") if len(ln.split()) >= 20][:12]
        data = [{"prompt": " ".join(ln.split()[:4]), "continuation": " " + " ".join(ln.split()[4:])} for ln in lines]
        from jaxmetrics.evaluation import GenerationSettings, MauveScoring, ScoringSettings

        kw = dict(model=lm, featurizer=lm, dataset=data, batch_size=6, progress=False,
                  generation=GenerationSettings(decodings=("greedy", "top_k=5"), seeds=(0, 1), max_new_tokens=6),
                  scoring=ScoringSettings(mauve=MauveScoring(seeds=(25, 26)), self_bleu_samples=4,
                                          mark_evaluate=False))
        res = {"two": jaxmetrics.evaluate_generation(**kw, mesh=mesh).rows}
        if pid == 0:
            res["one"] = jaxmetrics.evaluate_generation(**kw).rows
        return res

    record("evaluate_generation", evaluate_generation)

    with open(out_path, "w") as f:
        json.dump(out, f)
    multihost_utils.sync_global_devices("done")


if __name__ == "__main__":
    main()
