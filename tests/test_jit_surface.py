"""Every public array-level function under ``jax.jit``, ``jax.grad`` and ``jax.vmap``.

A training step closes over concrete arrays (the human features, a codebook) and traces the
rest; a sweep passes everything as arguments. Each case below therefore runs

* eagerly (the reference value);
* under ``jax.jit`` with every array argument traced (passed to the jitted function), and with
  every array argument closed over as a concrete ``jax.Array`` (both in one compiled program);
* for the losses and MAUVE / Mark-Evaluate entry points, under ``jax.jit`` with the first array
  argument closed over and the others traced
  (``jax.jit(lambda q: mauve_loss(references=P, candidates=q, quantizer=codebook, temperature=0.1))(Q)``);
* under ``jax.grad`` (eagerly and jitted, the other arguments closed over) where the function is
  differentiable: the gradients must be finite and agree;
* under ``jax.jit(jax.vmap(...))`` where its docstring promises vmap (the batched arrays traced,
  the others closed over), against the eager values of each member;

and every transformed value must equal the eager one. ``test_surface_is_complete`` enumerates
the public names of the array families and fails on a function that is neither tested here nor
listed, with its reason, in ``EXCLUDED``.
"""
from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmetrics
from jaxmetrics import confidence as CI
from jaxmetrics import diversity as D
from jaxmetrics import lm as L
from jaxmetrics import mark_evaluate as ME
from jaxmetrics import mauve as M
from jaxmetrics.mauve import engine as MEN
from jaxmetrics.mauve.frontier import histograms as MHI
from jaxmetrics.mauve.quantize import clustering as MKM
from jaxmetrics.mauve.quantize import pca as MPCA
from jaxmetrics.mauve.quantize import quantizers as MQU
from jaxmetrics import numerics as N
from jaxmetrics import similarity as S
from jaxmetrics import state as ST
from jaxmetrics import training as TR


# ----------------------------------------------------------------------------- inputs


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    """Tiny inputs (16 x 4 features, 4 clusters), built once; every leaf a concrete jax.Array."""
    rng = np.random.default_rng(0)
    f32 = lambda a: jnp.asarray(np.asarray(a, np.float32))  # noqa: E731
    P = rng.normal(size=(16, 4)).astype(np.float32)
    Q = (rng.normal(size=(16, 4)) * 0.8 + 0.3).astype(np.float32)
    d: dict[str, Any] = {"P": f32(P), "Q": f32(Q), "C": f32(P[[0, 4, 8, 12]] + 0.05)}
    d["mask16"] = jnp.asarray(np.arange(16) < 13)
    d["key"] = jax.random.key(0)
    d["keys2"] = jax.random.split(jax.random.key(1), 2)
    # histograms / counts / curves
    d["ph"] = f32([0.4, 0.3, 0.2, 0.1])
    d["qh"] = f32([0.1, 0.2, 0.3, 0.4])
    d["pc"] = jnp.asarray([5, 3, 0, 2], jnp.int32)
    d["qc"] = jnp.asarray([1, 2, 4, 3], jnp.int32)
    d["pcf"] = f32([5.0, 3.0, 0.5, 2.0])
    d["curve"] = M.divergence_curve(d["ph"], d["qh"], num_points=5)
    # token embeddings [B, L, D] with padding
    d["X"] = f32(rng.normal(size=(2, 5, 4)))
    d["Y"] = f32(rng.normal(size=(2, 4, 4)))
    d["Xm"] = jnp.asarray([[1, 1, 1, 1, 0], [1, 1, 1, 0, 0]], bool)
    d["Ym"] = jnp.asarray([[1, 1, 1, 1], [1, 1, 0, 0]], bool)
    d["Xw"] = f32(rng.uniform(0.5, 1.5, size=(2, 5)))
    d["Yw"] = f32(rng.uniform(0.5, 1.5, size=(2, 4)))
    d["sim"] = f32(rng.normal(size=(5, 4)))
    d["Xm0"], d["Ym0"] = d["Xm"][0], d["Ym"][0]
    d["a5"], d["b4"] = f32([0.3, 0.2, 0.2, 0.3, 0.0]), f32([0.25, 0.25, 0.25, 0.25])
    d["baseline"] = f32([0.2, 0.3, 0.25])
    d["prf"] = S.PRF(f32([0.9, 0.7]), f32([0.8, 0.6]), f32([0.85, 0.65]))
    # language-model scores
    d["logits"] = f32(rng.normal(size=(2, 3, 6)))
    d["targets"] = jnp.asarray(rng.integers(0, 6, size=(2, 3)), jnp.int32)
    d["tmask"] = jnp.asarray([[1, 1, 1], [1, 1, 0]], bool)
    d["windows"] = L.WindowScores(nll_sum=f32([3.0, 2.5, 1.0]), count=jnp.asarray([4, 3, 2], jnp.int32))
    # token ids for the n-gram statistics
    d["ids"] = jnp.asarray([[1, 2, 1, 2, 3, 0], [4, 5, 4, 5, 4, 5], [1, 2, 3, 4, 0, 0]], jnp.int32)
    d["lengths"] = jnp.asarray([5, 6, 4], jnp.int32)
    d["rowmask3"] = jnp.asarray([True, True, False])
    d["setmask"] = jnp.asarray([[True, True, False], [True, True, True]])
    d["emb3"] = f32(rng.normal(size=(2, 3, 4)))
    d["sim3"] = f32(np.corrcoef(rng.normal(size=(3, 6))))
    d["bleu"] = (f32([3.0, 1.0]), f32([4.0, 3.0]), f32(4.0), f32(5.0), f32([0.5, 0.5]))
    # Mark-Evaluate building blocks
    d["spheresP"] = ME.knn_hyperspheres(d["P"], 3)
    d["spheresQ"] = ME.knn_hyperspheres(d["Q"], 3)
    d["mestats"] = ME.mark_evaluate_stats(references=d["P"], candidates=d["Q"], k=3)
    d["mu"] = (f32([0.1, 0.2]), f32([0.0, -0.1]))
    d["sigma"] = (f32([[1.0, 0.2], [0.2, 0.5]]), f32([[0.8, -0.1], [-0.1, 1.2]]))
    d["pr"] = (f32([1.0, 0.8, 0.5]), f32([0.4, 0.7, 1.0]))
    d["pvals"] = f32([[1.0, 0.01, 0.04], [0.01, 1.0, 0.03], [0.04, 0.03, 1.0]])
    d["m0"] = (jnp.asarray(20), jnp.asarray(12), jnp.asarray(4))
    d["phat"] = (f32([110.0, 40.0]), f32(100.0), jnp.asarray([True, False]))
    # numerics
    d["x8"] = f32(rng.normal(size=8))
    d["y8"] = f32(rng.normal(size=8))
    d["g8"] = jnp.asarray([0, 0, 0, 1, 1, 1, 1, 0], jnp.int32)
    d["s2"] = jnp.asarray([4, 4], jnp.int32)
    # MAUVE projection / quantizers / k-means problems
    # a fitted k-means codebook built directly (fitting is a host-side driver, tested elsewhere)
    basis = np.linalg.qr(rng.normal(size=(4, 4)))[0][:, :3].astype(np.float32)
    d["pca"] = MPCA.PCAProjection(mean=f32(P.mean(0)), components=f32(basis),
                               explained_variance_ratio=f32([0.4, 0.3, 0.2, 0.1]), num_components=3)
    d["fitted"] = M.FittedKMeansQuantizer(pca=d["pca"], centroids=f32(rng.normal(size=(4, 3)) * 0.5))
    d["cq"] = M.CentroidQuantizer(d["C"])
    d["z3"] = d["P"][None]  # [1, 16, 4]
    d["rows"] = jnp.tile(jnp.arange(16), (2, 1))
    d["problem_z"] = jnp.zeros(2, jnp.int32)
    d["num_active"] = jnp.asarray([2, 3], jnp.int32)
    d["rows_lt12"], d["rows_lt6"] = d["rows"] < 12, d["rows"] < 6
    # states (built eagerly; their update / merge runs under the transforms)
    pst = L.perplexity_stats(d["logits"], d["targets"], d["tmask"])
    d["ppl_states"] = (pst, L.perplexity_stats(d["logits"] * 2.0, d["targets"], d["tmask"]))
    d["ppl_stacked"] = jax.tree.map(lambda *v: jnp.stack(v), pst, pst, pst)
    d["lms_states"] = (L.lm_score_stats(d["logits"], d["targets"], d["tmask"], epsilon=0.01),
                       L.lm_score_stats(d["logits"] * 2.0, d["targets"], d["tmask"], epsilon=0.01))
    simst = S.SimilarityState.empty("bertscore")
    d["sim_states"] = (simst.update(candidates=d["X"], references=d["Y"], candidates_mask=d["Xm"],
                                    references_mask=d["Ym"]),
                       simst.update(candidates=d["X"] * 2.0, references=d["Y"], candidates_mask=d["Xm"],
                                    references_mask=d["Ym"]))
    d["mauve_states"] = (M.MauveState.empty(32, 4).update(references=d["P"], candidates=d["Q"]),
                         M.MauveState.empty(32, 4).update(references=d["Q"], candidates=d["P"]))
    d["fid_states"] = (ME.FIDState.empty(4).update(references=d["P"], candidates=d["Q"]),
                       ME.FIDState.empty(4).update(references=d["Q"], candidates=d["P"]))
    imp = ME.IMPARState.empty(references=d["P"], k=3)
    d["impar_states"] = (imp.update(candidates=d["Q"][:8]), imp.update(candidates=d["Q"][8:]))
    d["impar_empty"] = imp
    d["me_states"] = (ME.MarkEvaluateState.empty(32, 4).update(references=d["P"], candidates=d["Q"]),
                      ME.MarkEvaluateState.empty(32, 4).update(references=d["Q"], candidates=d["P"]))
    d["prd_states"] = (ME.PRDState.empty(32, 4).update(references=d["P"], candidates=d["Q"]),
                       ME.PRDState.empty(32, 4).update(references=d["Q"], candidates=d["P"]))
    ng = D.NGramState.empty(max_n=2, capacity=32)
    d["ngram_states"] = (ng.update(d["ids"][:2], d["lengths"][:2]), ng.update(d["ids"][1:], d["lengths"][1:]))
    fb = ST.FeatureBuffer.empty(32, 4)
    d["buffers"] = (fb.update(d["P"]), fb.update(d["Q"], d["mask16"]))
    gm = ST.GaussianMoments.from_features(d["P"])
    d["moments"] = (gm, ST.GaussianMoments.from_features(d["Q"]))
    pb = ST.PairBuffer.empty(32, 4)
    d["pair_buffers"] = (pb, pb)
    # training objectives (own generator: the draws above stay as they were)
    trng = np.random.default_rng(7)
    d["emb"] = f32(trng.normal(size=(6, 4)))                # [V, D] output embeddings of the 6-token logits
    d["ref_logits"] = f32(trng.normal(size=(2, 3, 6)))
    d["adv2"] = f32([0.7, -0.4])
    return d


# ----------------------------------------------------------------------------- the cases


@dataclasses.dataclass(frozen=True)
class Case:
    """``fn(*arrays)`` with ``arrays = [data[a] for a in args]`` (pytrees of jax.Arrays).

    ``grad``: ``(i, to_scalar)``: differentiate ``to_scalar(fn(...))`` w.r.t. argument ``i``.
    ``vmap``: indices of the arguments batched by ``jax.vmap`` (their docstring promises it);
    the batch is ``[a, flip(a, 0)]`` unless ``vmap_batch`` builds the batched arguments
    (``data -> tuple``, one per index of ``vmap``).
    """

    name: str
    fn: Callable[..., Any]
    args: tuple[str, ...]
    grad: tuple[int, Callable[[Any], Any]] | None = None
    vmap: tuple[int, ...] = ()
    vmap_batch: Callable[[dict], tuple] | None = None
    mixed: bool = False  # also jit with the first argument closed over and the rest traced
    rtol: float = 1e-4
    atol: float = 1e-5


def _wsum(x):
    x = jnp.asarray(x, jnp.float32)
    return jnp.sum(x * jnp.cos(jnp.arange(x.size, dtype=x.dtype)).reshape(x.shape))


CASES: list[Case] = [
    # --- MAUVE: histogram stage (jit / vmap / grad: histograms.py module docstring)
    Case("mauve.area_under_divergence_curve", MHI.area_under_divergence_curve, ("curve",),
         grad=(0, lambda r: r), vmap=(0,)),
    Case("mauve.divergence_curve", lambda p, q: M.divergence_curve(p, q, num_points=5), ("ph", "qh"),
         grad=(0, _wsum), vmap=(0, 1)),
    Case("mauve.frontier_integral", M.frontier_integral, ("ph", "qh"), grad=(1, lambda r: r), vmap=(0, 1)),
    Case("mauve.mauve_from_histograms", lambda p, q: M.mauve_from_histograms(p, q, num_points=5),
         ("ph", "qh"), grad=(1, lambda r: r.mauve), vmap=(0, 1)),
    Case("mauve.mauve_from_counts", lambda p, q: M.mauve_from_counts(p, q, num_points=5), ("pc", "qc"),
         vmap=(0, 1)),
    Case("mauve.smooth_counts", lambda c: MHI.smooth_counts(c, pseudocount=0.5), ("pcf",),
         grad=(0, _wsum), vmap=(0,)),
    # --- MAUVE: clustering, projection, quantizers
    # kmeans promises vmap over its key: kmeans_labels is exactly that vmap (tested under jit).
    Case("mauve.kmeans", lambda x, k: MKM.kmeans(x, k, num_clusters=4, num_redo=2, max_iter=10), ("P", "key")),
    Case("mauve.kmeans_labels", lambda z, k: MEN.kmeans_labels(z, k, num_clusters=4, num_redo=2, max_iter=10),
         ("P", "keys2")),
    Case("mauve.masked_kmeans_counts",
         lambda z, pz, r, rm, rq, k, na: MEN.masked_kmeans_counts(z, pz, r, rm, rq, k, na, 10, num_clusters=3,
                                                                num_redo=2),
         ("z3", "problem_z", "rows", "rows_lt12", "rows_lt6", "keys2", "num_active")),
    Case("mauve.pca_transform", MPCA.pca_transform, ("pca", "P"), grad=(1, _wsum)),
    # eigenvalues, mean and ratios (the directions are defined up to sign)
    Case("mauve.pca_eigen_from_scatter",
         lambda x: [MPCA.pca_eigen_from_scatter((x - x.mean(0)).T @ (x - x.mean(0)), x.mean(0), x.shape[0])[i]
                    for i in (0, 2, 3)], ("P",), grad=(0, lambda r: _wsum(r[0]))),
    Case("mauve.apply_projection", lambda x, pca: MEN.apply_projection(x, pca), ("P", "pca"), grad=(0, _wsum)),
    Case("mauve.bin_counts", M.bin_counts, ("fitted", "Q")),
    Case("mauve.soft_assignment", lambda x, c: MQU.soft_assignment(x, c, jnp.float32(0.5)), ("Q", "P"),
         grad=(0, _wsum), vmap=(0,)),
    Case("mauve.soft_bin_counts", lambda f, x: MQU.soft_bin_counts(f, x, 0.5), ("fitted", "Q"),
         grad=(1, _wsum)),
    Case("mauve.FittedKMeansQuantizer.transform", lambda f, x: f.transform(x), ("fitted", "Q")),
    Case("mauve.FittedKMeansQuantizer.assign", lambda f, x: f.assign(x), ("fitted", "Q")),
    Case("mauve.FittedKMeansQuantizer.soft_assign", lambda f, x: f.soft_assign(x, 0.5), ("fitted", "Q"),
         grad=(1, _wsum)),
    Case("mauve.CentroidQuantizer.assign", lambda c, x: c.assign(x), ("cq", "Q")),
    Case("mauve.CentroidQuantizer.soft_assign", lambda c, x: c.soft_assign(x, 0.5), ("cq", "Q"),
         grad=(1, _wsum)),
    # --- MAUVE: soft / hard forms and the loss (the training step)
    Case("mauve.hard_mauve", lambda p, q, c: M.hard_mauve(references=p, candidates=q, quantizer=c, num_points=5), ("P", "Q", "C"), mixed=True),
    Case("mauve.soft_mauve",
         lambda p, q, c, m: M.soft_mauve(references=p, candidates=q, quantizer=c, temperature=0.5, num_points=5, candidates_mask=m),
         ("P", "Q", "C", "mask16"), grad=(1, lambda r: r.mauve), mixed=True),
    Case("mauve.mauve_loss", lambda p, q, c: M.mauve_loss(references=p, candidates=q, quantizer=c, temperature=0.1), ("P", "Q", "C"),
         grad=(1, lambda r: r), mixed=True),
    Case("mauve.MauveState.update",
         lambda p, q, m: M.MauveState.empty(32, 4).update(references=p, candidates=q, candidates_mask=m),
         ("P", "Q", "mask16")),
    Case("mauve.MauveState.merge", lambda s: s[0].merge(s[1]), ("mauve_states",)),
    # --- similarity
    Case("similarity.pair_similarity",
         lambda x, y, xm, ym: S.pair_similarity(candidate=x[0], reference=y[0], candidate_mask=xm[0],
                                                reference_mask=ym[0], metric="cosine"),
         ("X", "Y", "Xm", "Ym"), grad=(0, lambda r: r.f1), vmap=(0, 1, 2, 3)),
    Case("similarity.batch_similarity",
         lambda x, y, xm, ym, xw, yw: S.batch_similarity(candidates=x, references=y, candidates_mask=xm,
                                                         references_mask=ym, candidates_weights=xw,
                                                         references_weights=yw, metric="cosine"),
         ("X", "Y", "Xm", "Ym", "Xw", "Yw"), grad=(0, lambda r: jnp.sum(r.f1))),
    Case("similarity.similarity_scores",
         lambda x, y, xm, ym: S.similarity_scores(candidates=x, references=y, candidates_mask=xm,
                                                  references_mask=ym, metric="cka"),
         ("X", "Y", "Xm", "Ym")),
    Case("similarity.similarity_loss",
         lambda x, y, xm, ym: S.similarity_loss(candidates=x, references=y, candidates_mask=xm,
                                                references_mask=ym),
         ("X", "Y", "Xm", "Ym"), grad=(0, lambda r: r)),
    Case("similarity.bertscore_pair",
         lambda x, y, xm, ym: S.bertscore_pair(candidate=x[0], reference=y[0], candidate_mask=xm[0],
                                               reference_mask=ym[0]),
         ("X", "Y", "Xm", "Ym")),
    Case("similarity.batch_bertscore",
         lambda x, y, xm, ym, b: S.batch_bertscore(candidates=x, references=y, candidates_mask=xm,
                                                   references_mask=ym, baseline=b),
         ("X", "Y", "Xm", "Ym", "baseline")),
    Case("similarity.bertscore_scores",
         lambda x, y, xm, ym, xw, yw: S.bertscore_scores(candidates=x, references=y, candidates_mask=xm,
                                                         references_mask=ym, candidates_weights=xw,
                                                         references_weights=yw),
         ("X", "Y", "Xm", "Ym", "Xw", "Yw")),
    Case("similarity.center_embeddings", lambda x, m: S.center_embeddings(x, m, centering="batch"), ("X", "Xm"),
         grad=(0, _wsum)),
    Case("similarity.sinkhorn_plan", lambda s, rm, cm: S.sinkhorn_plan(s, rm, cm, 0.1, 2),
         ("sim", "Xm0", "Ym0"), grad=(0, _wsum)),
    Case("similarity.emd_plan", S.emd_plan, ("sim", "a5", "b4")),
    Case("similarity.rescale_with_baseline", S.rescale_with_baseline, ("prf", "baseline")),
    Case("similarity.SimilarityState.update",
         lambda x, y, xm, ym: S.SimilarityState.empty("bertscore").update(
             candidates=x, references=y, candidates_mask=xm, references_mask=ym),
         ("X", "Y", "Xm", "Ym")),
    Case("similarity.SimilarityState.add", lambda s, p: s[0].add(p), ("sim_states", "prf")),
    Case("similarity.SimilarityState.merge", lambda s: s[0].merge(s[1]), ("sim_states",)),
    Case("similarity.SimilarityState.compute", lambda s: s[0].compute(), ("sim_states",)),
    # --- language-model scores (lm/kernels.py: jit-compiled, vmappable)
    Case("lm.token_log_probs", L.token_log_probs, ("logits", "targets"), grad=(0, _wsum), vmap=(0, 1)),
    Case("lm.token_nll", L.token_nll, ("logits", "targets", "tmask"), grad=(0, jnp.sum), vmap=(0, 1, 2)),
    Case("lm.token_scores", lambda z, t: L.token_scores(z, t, epsilon=0.01, top_k=3), ("logits", "targets"),
         vmap=(0, 1)),
    Case("lm.decoding_log_probs", lambda z: L.decoding_log_probs(z, temperature=0.7, top_p=0.9), ("logits",),
         vmap=(0,)),
    Case("lm.entmax", lambda z: L.entmax(z, 1.5), ("logits",), grad=(0, _wsum), vmap=(0,)),
    Case("lm.perplexity_stats", L.perplexity_stats, ("logits", "targets", "tmask"), vmap=(0, 1, 2)),
    Case("lm.lm_score_stats", lambda z, t, m: L.lm_score_stats(z, t, m, epsilon=0.01, top_p=0.9),
         ("logits", "targets", "tmask"), vmap=(0, 1, 2)),
    Case("lm.PerplexityState.update", lambda z, t, m: L.PerplexityState.empty().update(z, t, m),
         ("logits", "targets", "tmask")),
    Case("lm.PerplexityState.add", lambda s, w, m: s[0].add(w, m), ("ppl_states", "windows", "rowmask3")),
    Case("lm.PerplexityState.merge", lambda s: s[0].merge(s[1]), ("ppl_states",)),
    Case("lm.LMScoreState.update",
         lambda z, t, m: L.LMScoreState.empty(epsilon=0.01).update(z, t, m), ("logits", "targets", "tmask")),
    Case("lm.LMScoreState.merge", lambda s: s[0].merge(s[1]), ("lms_states",)),
    # --- Mark-Evaluate and its baselines
    Case("mark_evaluate.knn_hyperspheres", lambda x: ME.knn_hyperspheres(x, 3), ("P",)),
    Case("mark_evaluate.individual_hyperspheres", lambda x: ME.individual_hyperspheres(x, 3), ("P",)),
    Case("mark_evaluate.cross_membership",
         lambda a, b, sa, sb: ME.cross_membership(a, sa.radii_sq, b, sb.radii_sq),
         ("P", "Q", "spheresP", "spheresQ")),
    Case("mark_evaluate.neighborhood_counts",
         lambda a, b, sb: ME.neighborhood_counts(a, b, sb.radii_sq, sb.neighbors), ("P", "Q", "spheresQ")),
    Case("mark_evaluate.check_feature_pair",
         lambda p, q: ME.check_feature_pair(references=p, candidates=q, k=3), ("P", "Q")),
    Case("mark_evaluate.mark_evaluate_stats",
         lambda p, q: ME.mark_evaluate_stats(references=p, candidates=q, k=3), ("P", "Q")),
    Case("mark_evaluate.mark_evaluate_scores",
         lambda p, q: ME.mark_evaluate_scores(references=p, candidates=q, k=3), ("P", "Q")),
    Case("mark_evaluate.me_petersen", lambda p, q: ME.me_petersen(references=p, candidates=q, k=3), ("P", "Q"),
         mixed=True),
    Case("mark_evaluate.me_schnabel", lambda p, q: ME.me_schnabel(references=p, candidates=q, k=3), ("P", "Q")),
    Case("mark_evaluate.me_capture", lambda p, q: ME.me_capture(references=p, candidates=q, k=3), ("P", "Q")),
    Case("mark_evaluate.petersen_estimate", ME.petersen_estimate, ("mestats",)),
    Case("mark_evaluate.schnabel_estimate", ME.schnabel_estimate, ("mestats",)),
    Case("mark_evaluate.capture_estimate", ME.capture_estimate, ("mestats",)),
    Case("mark_evaluate.m0_estimate", lambda t: ME.m0_estimate(*t, 40), ("m0",)),
    Case("mark_evaluate.accuracy_score", lambda t: ME.accuracy_score(*t), ("phat",)),
    Case("mark_evaluate.improved_precision_recall",
         lambda p, q: ME.improved_precision_recall(references=p, candidates=q, k=3), ("P", "Q")),
    Case("mark_evaluate.fid", lambda p, q: ME.fid(references=p, candidates=q, use_float64=False), ("P", "Q"),
         rtol=1e-3, atol=1e-4),
    Case("mark_evaluate.frechet_distance", lambda mu, sg: ME.frechet_distance(mu[0], sg[0], mu[1], sg[1]),
         ("mu", "sigma"), grad=(0, lambda r: r), rtol=1e-3, atol=1e-4),
    Case("mark_evaluate.prd",
         lambda p, q, k: ME.prd(references=p, candidates=q, key=k, num_buckets=4, num_runs=2, num_angles=11,
                                num_redo=2, max_iter=10),
         ("P", "Q", "key")),
    Case("mark_evaluate.prd_curve",
         lambda p, q: ME.prd_curve(references_hist=p, candidates_hist=q, num_angles=11), ("ph", "qh")),
    Case("mark_evaluate.prd_f_beta", lambda pr: ME.prd_f_beta(*pr), ("pr",)),
    Case("mark_evaluate.FIDState.update",
         lambda p, q: ME.FIDState.empty(4).update(references=p, candidates=q), ("P", "Q"), rtol=1e-3),
    Case("mark_evaluate.FIDState.merge", lambda s: s[0].merge(s[1]), ("fid_states",)),
    Case("mark_evaluate.IMPARState.empty", lambda p: ME.IMPARState.empty(references=p, k=3), ("P",)),
    Case("mark_evaluate.IMPARState.update", lambda s, q, m: s.update(candidates=q, candidates_mask=m),
         ("impar_empty", "Q", "mask16")),
    Case("mark_evaluate.IMPARState.merge", lambda s: s[0].merge(s[1]), ("impar_states",)),
    Case("mark_evaluate.MarkEvaluateState.update",
         lambda p, q, m: ME.MarkEvaluateState.empty(32, 4).update(references=p, candidates=q, candidates_mask=m),
         ("P", "Q", "mask16")),
    Case("mark_evaluate.MarkEvaluateState.merge", lambda s: s[0].merge(s[1]), ("me_states",)),
    Case("mark_evaluate.PRDState.update",
         lambda p, q: ME.PRDState.empty(32, 4).update(references=p, candidates=q), ("P", "Q")),
    Case("mark_evaluate.PRDState.merge", lambda s: s[0].merge(s[1]), ("prd_states",)),
    # --- diversity (ngrams.py: vmap over a leading set axis)
    Case("diversity.ngram_ids", lambda i, n: D.ngram_ids(i, n, 2), ("ids", "lengths"), vmap=(0, 1),
         vmap_batch=lambda d: (jnp.stack([d["ids"], d["ids"][::-1]]), jnp.stack([d["lengths"], d["lengths"][::-1]]))),
    Case("diversity.ngram_count_stats", lambda i, n: D.ngram_count_stats(i, n, 2), ("ids", "lengths"),
         vmap=(0, 1),
         vmap_batch=lambda d: (jnp.stack([d["ids"], d["ids"] + 1]), jnp.stack([d["lengths"], d["lengths"] - 1]))),
    Case("diversity.ngram_cosine_matrix", lambda i, n: D.ngram_cosine_matrix(i, n, 1), ("ids", "lengths"),
         vmap=(0, 1),
         vmap_batch=lambda d: (jnp.stack([d["ids"], d["ids"] + 1]), jnp.stack([d["lengths"], d["lengths"] - 1]))),
    Case("diversity.self_bleu_stats", lambda i, n, m: D.self_bleu_stats(i, n, 2, m), ("ids", "lengths", "rowmask3")),
    Case("diversity.bleu_from_stats", lambda t: D.bleu_from_stats(*t), ("bleu",)),
    Case("diversity.zipf_stats", lambda i, n: D.zipf_stats(i, n), ("ids", "lengths")),
    Case("diversity.repetition_flags", lambda i, n: D.repetition_flags(i, n, max_n=3, batch_size=2),
         ("ids", "lengths")),
    Case("diversity.similarity_to_diversity", D.similarity_to_diversity, ("sim3", "rowmask3"), grad=(0, lambda r: r)),
    Case("diversity.batched_set_diversity", lambda e, m: D.batched_set_diversity(e, jnp.dot, m),
         ("emb3", "setmask")),
    Case("diversity.NGramState.update", lambda i, n: D.NGramState.empty(max_n=2, capacity=32).update(i, n),
         ("ids", "lengths")),
    Case("diversity.NGramState.merge", lambda s: s[0].merge(s[1]), ("ngram_states",)),
    # --- numerics (the traceable ones)
    Case("numerics.trapezoid_area", N.trapezoid_area, ("curve",), grad=(0, lambda r: r)),
    Case("confidence.holm_adjust", CI.holm_adjust, ("pvals",)),
    Case("numerics.segment_ranks", lambda x, g: N.segment_ranks(x, g, 2), ("x8", "g8")),
    Case("numerics.segment_pearson", lambda x, y, g, s: N.segment_pearson(x, y, g, s, 2), ("x8", "y8", "g8", "s2")),
    # --- shared state building blocks
    Case("state.FeatureBuffer.update", lambda b, x, m: b[0].update(x, m), ("buffers", "Q", "mask16")),
    Case("state.FeatureBuffer.merge", lambda b: b[0].merge(b[1]), ("buffers",)),
    Case("state.GaussianMoments.from_features", ST.GaussianMoments.from_features, ("P",)),
    Case("state.GaussianMoments.update", lambda g, x: g[0].update(x), ("moments", "Q")),
    Case("state.GaussianMoments.merge", lambda g: g[0].merge(g[1]), ("moments",)),
    Case("state.GaussianMoments.covariance", lambda g: g[0].covariance(), ("moments",)),
    Case("state.PairBuffer.merge", lambda b: b[0].merge(b[1]), ("pair_buffers",)),
    Case("state.SumState.merge", lambda s: s[0].merge(s[1]), ("ppl_states",)),
    Case("state.merge_all", lambda s: ST.merge_all(list(s)), ("ppl_states",)),
    Case("state.merge_stacked", ST.merge_stacked, ("ppl_stacked",)),
    # --- training objectives (training/objectives.py: the losses of a jitted training step)
    Case("training.mle", TR.mle, ("logits", "targets", "tmask"), grad=(0, lambda r: r)),
    Case("training.token_ot", lambda z, t, m, e: TR.token_ot(z, t, m, e, mle_weight=0.3),
         ("logits", "targets", "tmask", "emb"), grad=(0, lambda r: r), mixed=True),
    Case("training.token_kl", TR.token_kl, ("logits", "ref_logits", "tmask"), grad=(0, lambda r: r)),
    Case("training.policy_gradient", lambda z, t, m, a, r: TR.policy_gradient(z, t, m, a, ref_logits=r, kl_coef=0.1),
         ("logits", "targets", "tmask", "adv2", "ref_logits"), grad=(0, lambda r: r)),
    Case("training.advantages", TR.advantages, ("baseline",), grad=(0, _wsum)),
]


# ----------------------------------------------------------------------------- exclusions
#
# Every public function of the array families that is not run under the transforms above, and
# why. A name may be listed here only for a reason that holds by design; a kernel that fails
# under jit is a bug to fix, not an exclusion.

_TEXTS = "takes texts / token lists and a model (pipeline layer)"
_DRIVER = "host-side driver: fits, loops over settings or seeds, reads files, returns Python values"
_HOST = "host-side statistic: returns Python floats or NumPy arrays (data-dependent output)"
_SETTING = "takes settings (names, ints), not arrays"
_PLOT = "plotting (matplotlib)"
_PLACE = "host-side placement of arrays on devices (tested in tests/test_sharding.py)"

EXCLUDED: dict[str, str] = {
    # the primitives' single owners, traced inside the entry points that use them
    "mauve.mixture_weights": "the frontier's static grid (num_points is a Python int); traced inside every "
                             "mauve.divergence_curve case",
    "mauve.frontier_curve": "the curve's end points around D(Q||R_w), D(P||R_w); traced inside every "
                            "mauve.divergence_curve case",
    "confidence.bootstrap_indices": "the bootstrap's draws; traced inside compare_systems / confidence_interval "
                                    "(tests/test_compare_systems.py, tests/test_confidence.py)",
    "confidence.randomization_draws": "approximate randomization's draws; traced inside compare_systems and "
                                      "compare_mauve (tests/test_compare_systems.py, tests/mauve/test_mauve_compare.py)",
    "confidence.pairwise_correction": _SETTING,
    "confidence.resampling_signature": "builds a signature string from settings and a key (no arrays out)",
    "confidence.resampling_p_values": "counts resampled differences on the host after the vmapped resamples; "
                                      "checked by the comparisons' p-value tests",
    # intervals, comparisons, attribution and estimators added with their own tests (host-level
    # drivers around jitted / vmapped kernels, or Python-function statistics)
    "confidence.subsample_interval": "takes the statistic as a Python function; its resamples are one lax.map "
                                     "over vmapped chunks, tested in tests/test_subsample_interval.py",
    "diversity.distinct_n_interval": "texts in (host tokenization); its statistic is traced in "
                                     "tests/diversity/test_diversity_intervals.py",
    "diversity.self_bleu_interval": "texts in (host tokenization); tests/diversity/test_diversity_intervals.py",
    "diversity.ngram_rows": "texts to n-gram id rows on the host (no arrays in)",
    "diversity.distinct_ngram_fraction": "traced under the resampling map in tests/diversity/test_diversity_intervals.py",
    "diversity.resampled_self_bleu": "traced under the resampling map in tests/diversity/test_diversity_intervals.py",
    "mark_evaluate.mark_evaluate_interval": "host driver of vmapped k-NN statistics; "
                                            "tests/mark_evaluate/test_mark_evaluate_interval.py",
    "mauve.compare_mauve": "fits k-means quantizers on the host, then jitted resampled counts; "
                           "tests/mauve/test_mauve_compare.py",
    "mauve.mauve_attribution": "fits k-means quantizers on the host; its gradient is a jitted value_and_grad, "
                               "checked against jax.grad in tests/mauve/test_mauve_attribution.py",
    "mauve.estimate_mauve": "fits estimators (folds, classifiers) on the host; tests/mauve/test_mauve_estimators.py",
    "mauve.f_mauve": "histograms to the f-divergence frontier; checked against mauve_from_histograms in "
                     "tests/mauve/test_mauve_estimators.py",
    "mauve.mauve_from_log_ratios": "tests/mauve/test_mauve_estimators.py",
    "mauve.gaussian_frontier": "closed form checked by numerical integration in tests/mauve/test_mauve_estimators.py",
    "mauve.available_estimators": "registry lookup (no arrays)",
    "mauve.get_estimator": "registry lookup (no arrays)",
    "mauve.register_estimator": "registry (no arrays)",
    "similarity.token_alignments": "texts in (tokenization and encoding on the host); tests/similarity/test_alignment.py",
    # confidence intervals
    "confidence.confidence_interval": "takes the statistic as a Python function (the case table passes arrays); "
                                      "jit, vmap over draws and chunking are tested in tests/test_confidence.py",
    "confidence.compare_systems": "takes the statistic as a Python function; jitted in "
                                  "tests/test_compare_systems.py (the error-rate repetitions)",
    # mauve
    "mauve.fit_pca": "data-dependent number of components (a static int): a host-side fitting step",
    "mauve.pca_from_eigen": "m* from a concrete spectrum (a static int): the host-side step of fit_pca",
    "mauve.subsample_rows": "jax.random.choice of a static count: the PCA's host-side subsample draw",
    "mauve.project_features": "fits the PCA (data-dependent number of components), host-side",
    "mauve.fit_labels": _DRIVER,
    "mauve.split_counts": "host-side NumPy counting (returns np.ndarray)",
    "mauve.pad_rows": "host-side NumPy padding to a bucketed row count (the engine's shapes)",
    "mauve.project_bucketed": "fits the PCA on host data padded to a bucketed size (data-dependent components)",
    "mauve.num_components_for_variance": "a Python int from a concrete spectrum (a static setting of the PCA)",
    "mauve.smooth_frontier_integral": "traced inside soft_mauve, whose jit / grad / vmap cases cover it",
    "mauve.mauve_scores": "host-side float64 scoring of counts (returns NumPy arrays)",
    "mauve.auto_num_buckets": _SETTING,
    "mauve.available_quantizers": _SETTING,
    "mauve.get_quantizer": _SETTING,
    "mauve.register_quantizer": _SETTING,
    "mauve.compute_mauve": _DRIVER,
    "mauve.compute_mauve_seeds": _DRIVER,
    "mauve.fit_quantizer": _DRIVER,
    "mauve.mauve_shared_codebook": _DRIVER,
    "mauve.fit_to_mauve": "training loop driver (optax steps on the host)",
    "mauve.plot_divergence_curves": _PLOT,
    "mauve.plot_sweep": _PLOT,
    "mauve.mauve_length_sweep": _TEXTS,
    "mauve.mauve_sweep": _DRIVER,
    "mauve.paired_mauve_difference": "statistics of a sweep result (host)",
    "mauve.rank_agreement": "statistics of a sweep result (host)",
    "mauve.MauveState.compute": "runs compute_mauve (k-means fit, host driver) on the buffered rows",
    # similarity
    "similarity.bertscore": _TEXTS,
    "similarity.compute_similarity": _TEXTS,
    "similarity.score_encoded": "pipeline stage over an Encoding (host batching)",
    "similarity.default_centering": _SETTING,
    "similarity.default_layer": _SETTING,
    "similarity.default_temperature": _SETTING,
    "similarity.idf_table": "host-side document frequencies (returns np.ndarray)",
    "similarity.correlation_sweep": _TEXTS,
    "similarity.grouped_correlation": "group labels are host values (names, sizes): host-side statistic",
    "similarity.read_scored_pairs": "reads a file",
    "similarity.compute_anisotropy": _TEXTS,
    "similarity.layer_similarities": "samples a data-dependent number of word types on the host (driver)",
    # lm
    "lm.decoding_scores": _TEXTS,
    "lm.generate": _TEXTS,
    "lm.generation_perplexity": _TEXTS,
    "lm.perplexity": _TEXTS,
    "lm.text_perplexities": _TEXTS,
    "lm.score_windows": "takes a model (one forward pass per batch)",
    "lm.window_layout": "host-side layout of Python lengths (returns NumPy arrays)",
    "lm.lm_scores": "validated corpus averages as Python floats (lm_score_stats is the traceable form)",
    "lm.LMScoreState.compute": "corpus averages as Python floats (host)",
    "lm.PerplexityState.compute": "raises on an empty state (never NaN): reads the count on the host",
    # mark_evaluate
    "mark_evaluate.check_occasions": _SETTING,
    "mark_evaluate.compute_mark_evaluate": _TEXTS,
    "mark_evaluate.embed_texts": _TEXTS,
    "mark_evaluate.FIDState.compute": "float64 Frechet distance of the moments on the host (NumPy)",
    "mark_evaluate.IMPARState.compute": "precision as a host value; raises on an empty state",
    "mark_evaluate.MarkEvaluateState.compute": "runs mark_evaluate_scores on the filled rows (host slicing)",
    "mark_evaluate.MarkEvaluateState.impar": "runs improved_precision_recall on the filled rows (host slicing)",
    "mark_evaluate.PRDState.compute": "runs prd on the filled rows (host slicing)",
    # diversity
    "diversity.distinct_n": _TEXTS,
    "diversity.averaged_distinct_n": _TEXTS,
    "diversity.ngram_entropy": _TEXTS,
    "diversity.self_bleu": _TEXTS,
    "diversity.self_bleu_scores": _TEXTS,
    "diversity.zipf_coefficient": _TEXTS,
    "diversity.repetition_fraction": _TEXTS,
    "diversity.termination_ratio": _HOST,
    "diversity.tevet_tokenize": _TEXTS,
    "diversity.encode_sequences": _TEXTS,
    "diversity.encode_sets": _TEXTS,
    "diversity.check_orders": _SETTING,
    "diversity.distinct_n_sets": _TEXTS,
    "diversity.ngram_entropy_sets": _TEXTS,
    "diversity.self_bleu_sets": _TEXTS,
    "diversity.ngram_cosine_diversity": _TEXTS,
    "diversity.embedding_cosine_diversity": _HOST,
    "diversity.embed_response_sets": _TEXTS,
    "diversity.token_set_diversity": "host loop over response sets of a SetEmbeddings (returns np.ndarray)",
    "diversity.decoding_test": _HOST,
    "diversity.content_test": _HOST,
    "diversity.optimal_classification_accuracy": _HOST,
    "diversity.compute_set_metrics": _TEXTS,
    "diversity.resolve_set_metric": _SETTING,
    "diversity.set_metric_names": _SETTING,
    "diversity.run_diversity_test": _DRIVER,
    "diversity.self_decoding_test": _DRIVER,
    "diversity.lm_generator": _TEXTS,
    "diversity.unigram_generator": _SETTING,
    "diversity.read_mcdiv_csv": "reads a file",
    "diversity.plot_metric_vs_parameter": _PLOT,
    "diversity.NGramState.compute": "int64 / float64 statistics on the host (NumPy)",
    "diversity.NGramState.zipf": "Zipf coefficient as a Python float (host)",
    # numerics: host statistics in float64 (NumPy)
    "numerics.average_ranks": _HOST,
    "numerics.mean_std": _HOST,
    "numerics.pearson": _HOST,
    "numerics.spearman": _HOST,
    # sharding
    "sharding.host_readable": _PLACE,
    "sharding.make_mesh": _PLACE,
    "sharding.pad_and_shard": _PLACE,
    "sharding.pad_to_multiple": _PLACE,
    "sharding.place_rows": _PLACE,
    "sharding.replicate_global": _PLACE,
    "sharding.shard": _PLACE,
    "sharding.spans_processes": _PLACE,
    "sharding.to_host": _PLACE,
    # training: the host loop and what it calls (the objectives are cases above)
    "training.finetune": _DRIVER,
    "training.mauve_influence_rewards": _HOST,
    "training.twmd_rewards": _TEXTS,
    "training.text_passages": _TEXTS,
}

# The text and model layers: by design (docs/architecture.md) the only layers that touch
# strings, files, tokenizers and weights; none of their functions is an array kernel.
EXCLUDED_MODULES = {
    "jaxmetrics.models": _TEXTS,
    "jaxmetrics.evaluation": _TEXTS,
    "jaxmetrics.compilation": "configures JAX's persistent compilation cache",
    "jaxmetrics.meta": "meta-evaluation over host tables of scores with string labels (metrics, groups, "
                       "systems); its resampling core runs vmapped inside and is tested in tests/meta",
}

FAMILIES = ("mauve", "similarity", "lm", "mark_evaluate", "diversity", "state", "numerics", "sharding", "training",
            "confidence")
# Public methods of exported classes that are array-level: state updates / merges / computes and
# fitted quantizers' assignments. (``empty`` takes settings; a ``Result``'s helpers are not kernels.)
METHODS = ("update", "add", "merge", "compute", "impar", "zipf", "from_features", "covariance",
           "transform", "assign", "soft_assign")


# MAUVE's stage modules: their kernels are public in their modules (not at the package root) and
# are part of the surface, named ``mauve.<name>``.
STAGE_MODULES = {"mauve": ("mauve.engine", "mauve.quantize.clustering", "mauve.quantize.pca",
                           "mauve.frontier.histograms", "mauve.quantize.quantizers")}


def _public_surface() -> dict[str, Any]:
    """``family.name`` (and ``family.Class.method``) -> object, for every public callable."""
    out: dict[str, Any] = {}
    walk = [(fam, fam) for fam in FAMILIES] + [(fam, m) for fam, ms in STAGE_MODULES.items() for m in ms]
    for fam, module in walk:
        mod = importlib.import_module(f"jaxmetrics.{module}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj):
                if getattr(obj, "_is_protocol", False):
                    continue  # an interface (FittedQuantizer): its implementations are tested
                for meth in METHODS:
                    if callable(getattr(obj, meth, None)):
                        out[f"{fam}.{name}.{meth}"] = getattr(obj, meth)
                empty = getattr(obj, "empty", None)
                if callable(empty) and "references" in inspect.signature(empty).parameters:
                    out[f"{fam}.{name}.empty"] = empty  # builds a state from arrays
            elif callable(obj):
                out[f"{fam}.{name}"] = obj
    return out


def test_surface_is_complete():
    surface = _public_surface()
    tested = {c.name for c in CASES}
    assert len(tested) == len(CASES), "duplicate case names"
    unknown = sorted((tested | set(EXCLUDED)) - set(surface))
    assert not unknown, f"cases / exclusions that are not public names (renamed?): {unknown}"
    both = sorted(tested & set(EXCLUDED))
    assert not both, f"both tested and excluded: {both}"
    missing = sorted(set(surface) - tested - set(EXCLUDED))
    assert not missing, ("public functions neither tested under jit/grad/vmap in CASES nor listed, "
                         f"with a reason, in EXCLUDED: {missing}")
    # The top-level namespace re-exports family functions; anything else must come from an
    # excluded layer.
    known = {id(o) for o in surface.values()}
    for name in jaxmetrics.__all__:
        obj = getattr(jaxmetrics, name)
        if inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj) or id(obj) in known:
            continue
        assert obj.__module__.startswith(tuple(EXCLUDED_MODULES)), (
            f"jaxmetrics.{name} ({obj.__module__}) is neither a family function nor in an excluded layer")


# ----------------------------------------------------------------------------- helpers


_EAGER: dict[str, Any] = {}


def _inputs(case: Case, d: dict) -> list[Any]:
    return [d[a] for a in case.args]


def _eager(case: Case, d: dict) -> Any:
    if case.name not in _EAGER:
        _EAGER[case.name] = case.fn(*_inputs(case, d))
    return _EAGER[case.name]


def _unsigned(result: Any) -> Any:
    """``result`` with its signature blanked: a signature names its key, and a traced key is
    ``'traced'`` (static metadata, not a value to compare)."""
    return result.replace(signature="") if hasattr(result, "signature") and hasattr(result, "replace") else result


def _assert_same(got: Any, want: Any, case: Case, what: str) -> None:
    got, want = _unsigned(got), _unsigned(want)
    g, w = jax.tree.leaves(got), jax.tree.leaves(want)
    assert jax.tree.structure(got) == jax.tree.structure(want), f"{case.name} ({what}): structure differs"
    for a, b in zip(g, w):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape, f"{case.name} ({what}): shape {a.shape} != {b.shape}"
        if a.dtype == bool or np.issubdtype(a.dtype, np.integer):
            np.testing.assert_array_equal(a, b, err_msg=f"{case.name} ({what})")
        else:
            np.testing.assert_allclose(a, b, rtol=case.rtol, atol=case.atol, equal_nan=True,
                                       err_msg=f"{case.name} ({what})")


def _ids(cases):
    return [c.name for c in cases]


# ----------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("case", CASES, ids=_ids(CASES))
def test_jit(case: Case, data):
    """jit with every array traced and with every array closed over (one compiled program)."""
    xs = _inputs(case, data)
    want = _eager(case, data)

    def both(*traced):
        outs = {"traced": case.fn(*traced), "closed over": case.fn(*xs)}
        if case.mixed:  # the training step: first argument closed over, the rest traced
            outs["first closed over, rest traced"] = case.fn(xs[0], *traced[1:])
        return outs

    for what, got in jax.jit(both)(*xs).items():
        _assert_same(got, want, case, f"jit, {what}")


GRAD_CASES = [c for c in CASES if c.grad is not None]


@pytest.mark.parametrize("case", GRAD_CASES, ids=_ids(GRAD_CASES))
def test_grad(case: Case, data):
    """Gradient w.r.t. one argument (the others closed over), eager and jitted: finite, equal."""
    xs = _inputs(case, data)
    i, to_scalar = case.grad

    def loss(a):
        return to_scalar(case.fn(*xs[:i], a, *xs[i + 1:]))

    g_eager = jax.grad(loss)(xs[i])
    g_jit = jax.jit(jax.grad(loss))(xs[i])
    for leaf in jax.tree.leaves(g_eager):
        assert np.all(np.isfinite(np.asarray(leaf))), f"{case.name}: non-finite gradient"
    _assert_same(g_jit, g_eager, dataclasses.replace(case, rtol=1e-3, atol=1e-5), "jit(grad)")


VMAP_CASES = [c for c in CASES if c.vmap]


@pytest.mark.parametrize("case", VMAP_CASES, ids=_ids(VMAP_CASES))
def test_vmap(case: Case, data):
    """jit(vmap) over the documented axes (the batched arrays traced, the others closed over)
    equals the eager value of each member."""
    xs = _inputs(case, data)
    if case.vmap_batch is not None:
        stacked = dict(zip(case.vmap, case.vmap_batch(data)))
    else:
        stacked = {i: jnp.stack([xs[i], jnp.flip(xs[i], 0)]) for i in case.vmap}

    def call(*batched):
        member = dict(zip(case.vmap, batched))
        return case.fn(*[member.get(i, x) for i, x in enumerate(xs)])

    members = [call(*[stacked[i][b] for i in case.vmap]) for b in range(2)]
    want = jax.tree.map(lambda *v: jnp.stack(v), *members)
    got = jax.jit(jax.vmap(call))(*[stacked[i] for i in case.vmap])
    _assert_same(got, want, case, "jit(vmap)")


# ----------------------------------------------------------------------------- checks under a trace


def test_closed_over_values_are_checked_once_per_trace(data, monkeypatch):
    """A concrete array closed over by a jitted training step is value-checked when the step is
    traced (an explicit device->host copy of one scalar, allowed by a strict transfer guard), and
    not again on a cached call; bad values are reported at trace time, naming the argument."""
    from jaxmetrics import _validation

    reads = []
    real = _validation.concrete_value
    monkeypatch.setattr(_validation, "concrete_value", lambda fn, *a: reads.append(1) or real(fn, *a))
    P, Q, C = data["P"], data["Q"], data["C"]
    Q2 = Q * 1.5
    step = jax.jit(lambda q: M.mauve_loss(references=P, candidates=q, quantizer=C, temperature=0.1))
    with jax.transfer_guard("disallow"):
        first = step(Q)
        n_first = len(reads)
        second = step(Q2)
    assert n_first >= 1 and len(reads) == n_first  # checked when traced, not on the cached call
    np.testing.assert_allclose(np.asarray(first), np.asarray(M.mauve_loss(references=P, candidates=Q, quantizer=C, temperature=0.1)), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(second), np.asarray(M.mauve_loss(references=P, candidates=Q2, quantizer=C, temperature=0.1)), rtol=1e-5)

    bad = P.at[0, 0].set(jnp.nan)
    with pytest.raises(ValueError, match="references: contains 1 NaN"):
        jax.jit(lambda q: M.mauve_loss(references=bad, candidates=q, quantizer=C, temperature=0.1))(Q)
    none = jnp.zeros(16, bool)  # made outside the step: concrete (jnp.zeros inside would be traced)
    with pytest.raises(ValueError, match="candidates_mask: masks out every row"):
        jax.jit(lambda q: M.soft_mauve(references=P, candidates=q, quantizer=C, temperature=0.5, candidates_mask=none))(Q)
    # traced values are unknown at trace time: shapes are checked, values are not
    jax.jit(lambda p, q: M.mauve_loss(references=p, candidates=q, quantizer=C, temperature=0.1))(bad, Q)
    with pytest.raises(ValueError, match="candidates: feature dimension 3"):
        jax.jit(lambda q: M.mauve_loss(references=P, candidates=q, quantizer=C, temperature=0.1))(Q[:, :3])
