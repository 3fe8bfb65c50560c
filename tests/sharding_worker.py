"""Run every kernel on 1 device and with its inputs sharded over 8 simulated CPU devices.

Started by ``tests/test_sharding.py`` in a fresh process with
``XLA_FLAGS=--xla_force_host_platform_device_count=8`` (the flag must be set before JAX starts,
so it cannot run inside the pytest process). For each kernel it computes the value on the
default single device (plain arrays) and under ``jax.jit`` with the example axis sharded over
a mesh of the 8 devices (``jaxmetrics.sharding.shard``; XLA inserts the collectives), and prints
one JSON object ``{name: {"one": ..., "eight": ..., "exact": bool}}`` on the last line.

Kernels already checked on 8 devices by their areas (Mark-Evaluate hyperspheres and scores,
diversity per-set statistics and Self-BLEU) are not repeated here.
"""
from __future__ import annotations

import json
import sys
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics.diversity import NGramState
from jaxmetrics.lm import PerplexityState
from jaxmetrics.mark_evaluate import IMPARState
from jaxmetrics.sharding import make_mesh, shard
from jaxmetrics.state import GaussianMoments, merge_all

PAIRS = ("candidates", "references", "candidates_mask", "references_mask")


def pairs(*arrays):
    """The keyword arguments of the pairwise similarity kernels."""
    return dict(zip(PAIRS, arrays))

OUT: dict = {}


def record(name, one, eight, exact=False):
    def host(t):
        return [np.asarray(v, np.float64).tolist() for v in jax.tree.leaves(t)]

    OUT[name] = {"one": host(one), "eight": host(eight), "exact": bool(exact)}


def main() -> None:
    assert len(jax.devices()) == 8, jax.devices()
    mesh = make_mesh()
    rng = np.random.default_rng(0)

    # ---- MAUVE quantization: k-means (assignment + centroid updates) and PCA
    from jaxmetrics.mauve.quantize.clustering import kmeans
    from jaxmetrics.mauve.quantize.clustering import _assign_to_centroids
    from jaxmetrics.mauve.quantize.pca import _pca_eigen, fit_pca, pca_transform

    centers = rng.normal(size=(4, 8)) * 4
    x = (centers[rng.integers(0, 4, 64)] + rng.normal(size=(64, 8))).astype(np.float32)
    xs = shard(x, mesh)
    key = jax.random.key(3)
    run = jax.jit(lambda a, k: kmeans(a, k, num_clusters=4, num_redo=2, max_iter=30))
    one, eight = kmeans(x, key, num_clusters=4, num_redo=2, max_iter=30), run(xs, key)
    record("kmeans_labels", one.labels, eight.labels, exact=True)
    record("kmeans_centroids", one.centroids, eight.centroids)
    record("kmeans_assign", _assign_to_centroids(x, one.centroids),
           jax.jit(_assign_to_centroids)(xs, one.centroids), exact=True)
    record("pca_eigenvalues", _pca_eigen(x)[0], jax.jit(_pca_eigen)(xs)[0])
    pca = fit_pca(x, key=key, explained_var=0.9, pad_to=4)
    # PCA directions are defined up to sign: compare the absolute projections
    record("pca_transform", jnp.abs(pca_transform(pca, x)),
           jnp.abs(pca_transform(fit_pca(xs, key=key, explained_var=0.9, pad_to=4), xs)))

    # ---- log-prob statistics
    from jaxmetrics.lm import lm_score_stats, perplexity_stats

    logits = rng.normal(size=(16, 6, 11)).astype(np.float32) * 2
    targets = rng.integers(0, 11, size=(16, 6))
    mask = rng.random((16, 6)) > 0.2
    sl, st, sm = shard((logits, targets, mask), mesh)
    a, b = perplexity_stats(logits, targets, mask), jax.jit(perplexity_stats)(sl, st, sm)
    record("perplexity_stats_nll", a.nll_sum, b.nll_sum)
    record("perplexity_stats_count", a.count, b.count, exact=True)
    kw = dict(epsilon=1e-3, temperature=0.8, top_k=4, top_p=0.9)
    sums = ("eps_log_sum", "sparsemax_sum", "js_sum", "nll_sum")
    one_s, eight_s = lm_score_stats(logits, targets, mask, **kw), jax.jit(lambda *z: lm_score_stats(*z, **kw))(sl, st, sm)
    record("lm_score_stats", [getattr(one_s, f) for f in sums], [getattr(eight_s, f) for f in sums])
    step = jax.jit(lambda s, *z: s.update(*z))
    record("perplexity_state", PerplexityState.empty().update(logits, targets, mask).compute(),
           step(PerplexityState.empty(), sl, st, sm).compute())

    # ---- sliding-window perplexity: the windows [W, T] sharded over devices
    from jaxmetrics.lm import perplexity, score_windows
    from jaxmetrics.models import load_model
    from jaxmetrics.testing import tiny_checkpoint

    lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp()))
    ids = rng.integers(0, 300, size=(8, 16)).astype(np.int32)
    amask = np.arange(16)[None] < rng.integers(8, 17, size=8)[:, None]
    labels = np.where(amask & (np.arange(16)[None] >= 4), ids, -100)  # -100: not scored
    a = score_windows(ids, amask, labels, model=lm)
    b = score_windows(*shard((ids, amask, labels), mesh), model=lm)
    record("score_windows_nll", a.nll_sum, b.nll_sum)
    record("score_windows_count", a.count, b.count, exact=True)
    docs = rng.integers(0, 300, size=200)
    kw = dict(max_length=32, stride=16, batch_size=8)
    record("perplexity_pipeline", perplexity(docs, model=lm, **kw).nll,
           perplexity(docs, model=lm, mesh=mesh, **kw).nll)

    # ---- pairwise similarity kernels: pairs sharded
    from jaxmetrics.similarity import batch_bertscore, batch_similarity

    cand = rng.normal(size=(16, 6, 8)).astype(np.float32)
    ref = rng.normal(size=(16, 5, 8)).astype(np.float32)
    cm = np.arange(6)[None] < rng.integers(2, 7, size=16)[:, None]
    rm = np.arange(5)[None] < rng.integers(2, 6, size=16)[:, None]
    sh = shard((cand, ref, cm, rm), mesh)
    for metric in ("cosine", "cka", "rwmd", "twmd", "trwmd"):
        f = jax.jit(lambda *z, metric=metric: batch_similarity(**pairs(*z), metric=metric, temperature=0.1,
                                                               num_iterations=3))
        record(f"similarity_{metric}", f(cand, ref, cm, rm), f(*sh))
    g = jax.jit(lambda *z: batch_bertscore(**pairs(*z)))
    record("bertscore", batch_bertscore(**pairs(cand, ref, cm, rm)), g(*sh))

    # ---- n-gram statistics: rows sharded (the sorts are global; XLA gathers)
    from jaxmetrics.diversity.ngrams import ngram_count_stats
    from jaxmetrics.diversity.stats import zipf_stats

    tok = rng.integers(0, 7, size=(16, 12)).astype(np.int32)
    lens = rng.integers(0, 13, size=16).astype(np.int32)
    stok, slens = shard((tok, lens), mesh)
    s1 = ngram_count_stats(tok, lens, 3)
    s8 = jax.jit(lambda a, b: ngram_count_stats(a, b, 3))(stok, slens)
    record("ngram_unique_total", (s1.unique, s1.total), (s8.unique, s8.total), exact=True)
    record("ngram_entropy", s1.entropy, s8.entropy)
    record("zipf_stats", zipf_stats(tok, lens).coefficient, jax.jit(zipf_stats)(stok, slens).coefficient)
    ng = NGramState.empty(max_n=3, capacity=512)
    ngs = jax.jit(lambda s, a, b: s.update(a, b))(ng, stok, slens)
    record("ngram_state_counts", ng.update(tok, lens).counts, ngs.counts, exact=True)

    # ---- IMPAR counts against a fixed reference manifold, FID moments
    r = rng.normal(size=(32, 4)).astype(np.float32)
    c = (rng.normal(size=(64, 4)) + 0.3).astype(np.float32)
    imp = IMPARState.empty(references=r, k=3)
    record("impar_state", (imp.update(candidates=c).inside,),
           (jax.jit(lambda s, z: s.update(candidates=z))(imp, shard(c, mesh)).inside,), exact=True)
    g1 = GaussianMoments.from_features(c)
    g8 = jax.jit(GaussianMoments.from_features)(shard(c, mesh))
    record("gaussian_moments", (g1.mean, g1.scatter), (g8.mean, g8.scatter))

    # ---- per-device states merged (one state per device, as per host) == one shot
    devs = jax.devices()
    parts = [PerplexityState.empty().update(*jax.device_put((logits[2 * i:2 * i + 2], targets[2 * i:2 * i + 2],
                                                            mask[2 * i:2 * i + 2]), devs[i]))
             for i in range(8)]
    merged = merge_all([jax.device_put(p, devs[0]) for p in parts])
    one = PerplexityState.empty().update(logits, targets, mask)
    record("per_device_merge_perplexity", (one.nll_sum,), (merged.nll_sum,))
    record("per_device_merge_count", (one.count,), (merged.count,), exact=True)
    ng_parts = [ng.update(*jax.device_put((tok[2 * i:2 * i + 2], lens[2 * i:2 * i + 2]), devs[i]))
                for i in range(8)]
    record("per_device_merge_ngrams", ng.update(tok, lens).counts,
           merge_all([jax.device_put(p, devs[0]) for p in ng_parts]).counts, exact=True)

    # ---- helpers: ragged rows padded + masked, or replicated with a warning
    import warnings

    from jaxmetrics.sharding import pad_and_shard, place_rows

    padded = pad_and_shard((cand[:11], ref[:11], cm[:11], rm[:11]), mesh)
    f = jax.jit(lambda *z: batch_bertscore(**pairs(*z)).f1)
    record("pad_and_shard", f(cand[:11], ref[:11], cm[:11], rm[:11]),
           np.asarray(f(*padded.values))[padded.rows_mask])
    e = pad_and_shard(np.arange(3.0), mesh, edge=True).values
    record("pad_and_shard_edge", np.array([0.0, 1, 2, 2, 2, 2, 2, 2]), e, exact=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        rep = place_rows(x[:10], mesh, name="features")
    assert any("features" in str(m.message) for m in w) and rep.sharding.is_fully_replicated
    record("place_rows_uneven", (x[:10],), (rep,), exact=True)

    # ---- pipelines with a mesh= keyword (where the area has added it)
    from jaxmetrics.mark_evaluate import mark_evaluate_scores
    from jaxmetrics.mauve import compute_mauve
    from jaxmetrics.similarity import bertscore_scores, similarity_scores

    p, q = x[:32] + 0.5, x[32:]
    kw = dict(num_buckets=4, kmeans_num_redo=2, kmeans_max_iter=30)
    a, b = compute_mauve(p_features=p, q_features=q, **kw), compute_mauve(p_features=p, q_features=q,
                                                                        mesh=mesh, **kw)
    record("compute_mauve_hist", (a.p_hist, a.q_hist), (b.p_hist, b.q_hist))
    kw = pairs(cand, ref, cm, rm)
    record("similarity_scores_mesh", similarity_scores(**kw), similarity_scores(**kw, mesh=mesh))
    record("bertscore_mesh", bertscore_scores(**kw), bertscore_scores(**kw, mesh=mesh))
    a = mark_evaluate_scores(references=r, candidates=c[:40], k=3)
    b = mark_evaluate_scores(references=r, candidates=c[:40], k=3, mesh=mesh)
    record("mark_evaluate_mesh", list(a.to_dict().values()), list(b.to_dict().values()))

    generate_cases(mesh)

    sys.stdout.write("\n" + json.dumps(OUT) + "\n")


def generate_cases(mesh) -> None:
    """KV-cache generation with its rows over the mesh: 5 prompts padded to 8 rows, greedy and
    sampled with per-row keys, equal to the single-device run."""
    from jaxmetrics.lm import generate
    from jaxmetrics.models import load_model
    from jaxmetrics.testing import tiny_checkpoint

    lm = load_model(tiny_checkpoint("gpt2", tempfile.mkdtemp(), max_positions=16))
    prompts = [np.array([5, 6, 7]), np.array([9]), np.array([10, 11]), np.array([3, 4, 5]), np.array([12])]
    keys = jax.random.split(jax.random.key(5), len(prompts))
    kw = dict(max_new_tokens=4, eos_token_id=None)
    one, eight = (generate(prompts, model=lm, key=jax.random.key(0), greedy=True, mesh=m, **kw) for m in (None, mesh))
    record("generate_mesh_greedy", (one.tokens, one.tokens_mask), (eight.tokens, eight.tokens_mask), exact=True)
    kw.update(temperature=1.5, typical_p=0.95)
    one, eight = (generate(prompts, model=lm, key=keys, mesh=m, **kw) for m in (None, mesh))
    record("generate_mesh_sampled", (one.tokens,), (eight.tokens,), exact=True)


if __name__ == "__main__":
    main()
