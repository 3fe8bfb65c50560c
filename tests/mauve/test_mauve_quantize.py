"""PCA, k-means, the Quantizer interface, compute_mauve API, seeds and shared codebook."""
from __future__ import annotations

import sys
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.mauve import (
    QUANTIZERS,
    FittedQuantizer,
    KMeansQuantizer,
    Quantizer,
    bin_counts,
    compute_mauve,
    compute_mauve_seeds,
    fit_quantizer,
    mauve_from_histograms,
    mauve_shared_codebook,
    register_quantizer,
)
from jaxmetrics.mauve.quantize.clustering import kmeans
from jaxmetrics.mauve.quantize.pca import fit_pca, pca_transform
from jaxmetrics.mauve.quantize.quantizers import soft_bin_counts
from jaxmetrics._ops import l2_normalize
from jaxmetrics.models.tokens import check_max_length
from jaxmetrics.mauve.pipeline import compute as C
from jaxmetrics.mauve.frontier import histograms as H
import importlib

KM = importlib.import_module("jaxmetrics.mauve.quantize.clustering")

N, D = 120, 12


PQ = dict(n=N, d=D, shift=0.4)  # the pq fixture: tests/conftest.py


# ----------------------------------------------------------------------------- PCA


def test_pca_matches_sklearn():
    sk = pytest.importorskip("sklearn.decomposition")
    rng = np.random.default_rng(1)
    for n in (200, 30):  # covariance route (n >= d) and Gram route (n < d)
        x = (rng.normal(size=(n, 40)) * np.linspace(3, 0.2, 40)).astype(np.float64)
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        ref = sk.PCA().fit(x)
        m_ref = int(np.argmax(np.cumsum(ref.explained_variance_ratio_) >= 0.9)) + 1
        ours = fit_pca(jnp.asarray(x, jnp.float32), key=jax.random.key(0), explained_var=0.9, pad_to=8)
        assert ours.num_components == m_ref
        r = min(n, 40)
        np.testing.assert_allclose(np.asarray(ours.explained_variance_ratio)[: r - 1],
                                   ref.explained_variance_ratio_[: r - 1], atol=2e-5)
        # same pairwise distances in the kept subspace as sklearn's projection
        z_ref = ref.transform(x)[:, :m_ref]
        z = np.asarray(pca_transform(ours, jnp.asarray(x, jnp.float32)))
        assert z.shape[1] % 8 == 0 and np.all(z[:, m_ref:] == 0)
        d_ref = ((z_ref[:, None] - z_ref[None]) ** 2).sum(-1)
        d = ((z[:, None] - z[None]) ** 2).sum(-1)
        np.testing.assert_allclose(d, d_ref, atol=2e-4)


def test_l2_normalize_definition():
    x = jnp.array([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]])
    np.testing.assert_allclose(np.asarray(l2_normalize(x)), [[0.6, 0.8], [0.0, 0.0], [1.0, 0.0]], rtol=1e-6)


# ----------------------------------------------------------------------------- k-means


def test_kmeans_separated_clusters_and_objective():
    rng = np.random.default_rng(2)
    centers = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    x = np.concatenate([c + 0.1 * rng.normal(size=(30, 2)) for c in centers]).astype(np.float32)
    res = kmeans(jnp.asarray(x), jax.random.key(0), num_clusters=3, num_redo=4)
    labels = np.asarray(res.labels)
    for g in range(3):  # each true cluster is one k-means cluster
        assert len(set(labels[g * 30:(g + 1) * 30])) == 1
    assert len(set(labels)) == 3
    # objective is the sum of squared distances to the assigned centroid (hand computation)
    c = np.asarray(res.centroids)
    obj = sum(((x[labels == j] - x[labels == j].mean(0)) ** 2).sum() for j in range(3))
    np.testing.assert_allclose(c[labels], np.stack([x[labels == l].mean(0) for l in labels]), atol=1e-5)
    assert abs(float(res.objective) - obj) < 1e-3 * obj
    assert float(res.objective) == float(np.min(np.asarray(res.objectives)))
    # a small problem has no distance bounds: every step searches all 90 rows
    np.testing.assert_array_equal(np.asarray(res.rows_searched), np.asarray(res.num_iter) * 90)


def test_kmeans_empty_clusters_are_split():
    # 6 distinct points, each repeated: duplicated initial centroids leave clusters empty
    base = np.array([[0, 0], [1, 0], [0, 1], [5, 5], [6, 5], [5, 6]], np.float32)
    x = np.repeat(base, 20, axis=0)
    x[::7] += 1e-3  # a few near-duplicates
    res = kmeans(jnp.asarray(x), jax.random.key(3), num_clusters=6, num_redo=1)
    counts = np.bincount(np.asarray(res.labels), minlength=6)
    assert np.all(counts > 0), counts
    # splitting directly: one empty cluster takes a perturbed copy of a populated one
    c = jnp.array([[1.0, 2.0], [9.0, 9.0]])
    out = KM._split_empty(c, jnp.array([5.0, 0.0]), jax.random.key(0))
    eps = 1.0 / 1024
    np.testing.assert_allclose(np.asarray(out), [[1 - eps, 2 * (1 + eps)], [1 + eps, 2 * (1 - eps)]], rtol=1e-6)


def test_kmeans_subsamples_training_set():
    rng = np.random.default_rng(4)
    x = jnp.asarray(rng.normal(size=(500, 3)), jnp.float32)
    res = kmeans(x, jax.random.key(0), num_clusters=4, num_redo=2, max_points_per_centroid=10)  # 40 training rows
    assert res.labels.shape == (500,)
    full = kmeans(x, jax.random.key(0), num_clusters=4, num_redo=2)
    assert float(full.objective) > float(res.objective)  # objective of 40 rows vs 500 rows


def test_kmeans_tiled_nearest_equals_untiled_definition():
    """The Lloyd step's tiled argmin (whole tiles plus a remainder) equals the argmin / min of the
    full squared-distance matrix."""
    from jaxmetrics._ops import squared_distances
    from jaxmetrics.mauve.quantize.clustering import _nearest_tiled

    rng = np.random.default_rng(8)
    x = jnp.asarray(rng.normal(size=(23, 5)), jnp.float32)
    c = jnp.asarray(rng.normal(size=(6, 5)), jnp.float32)
    full = np.asarray(squared_distances(x, c))
    for tile in (4, 23, 64):  # 5 tiles + 3 rows, one tile, untiled
        labels, nearest = _nearest_tiled(x, jnp.sum(x * x, -1), c, tile=tile)
        np.testing.assert_array_equal(np.asarray(labels), full.argmin(1))
        np.testing.assert_allclose(np.asarray(nearest), full.min(1), rtol=1e-6, atol=1e-6)


def test_kmeans_bounds_skip_only_rows_whose_centroid_stays(monkeypatch):
    """The Lloyd loop's bound-skipping search (Hamerly-style bounds per centroid group) equals
    plain Lloyd: from the same initial centroids, dense assignment by the full distance matrix
    every step (numpy, float64) gives the same centroids and the same number of steps, while
    the bounded loop searches only a part of the rows. Small tiles and groups that do not divide
    ``k`` exercise the packing and the padding."""
    monkeypatch.setattr(KM, "_SEARCH_ROWS", 64)
    monkeypatch.setattr(KM, "_GROUPS", 4)
    monkeypatch.setattr(KM, "_BOUNDED_MIN_WORK", 0)  # bounds at this small size too
    rng = np.random.default_rng(11)
    centers = rng.normal(size=(8, 6)) * 3.0
    x = np.concatenate([c + rng.normal(size=(50, 6)) for c in centers]).astype(np.float32)
    k = 10
    init = x[rng.choice(len(x), k, replace=False)]

    c, prev, obj, steps = init.astype(np.float64), None, np.inf, 0
    xd = x.astype(np.float64)
    while steps < 100 and obj != prev:
        dist = ((xd[:, None, :] - c[None]) ** 2).sum(-1)
        labels = dist.argmin(1)
        prev, obj = obj, dist.min(1).sum()
        counts = np.bincount(labels, minlength=k)
        assert np.all(counts > 0)  # no empty cluster: the split's random draw plays no part
        c = np.stack([xd[labels == j].mean(0) for j in range(k)])
        steps += 1

    xj = jnp.asarray(x)
    out_c, out_obj, out_steps, searched = jax.jit(KM._lloyd)(
        xj, jnp.sum(xj * xj, -1), jnp.asarray(init), jax.random.key(0), jnp.asarray(100))
    assert int(out_steps) == steps > 3
    np.testing.assert_allclose(np.asarray(out_c), c, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(float(out_obj), obj, rtol=1e-5)
    assert int(searched) < 0.8 * len(x) * steps  # the bounds did skip rows


def test_kmeans_bounds_masked_mode_equals_the_rows_alone(monkeypatch):
    """With the bounds on, the masked mode (valid rows, active slots: what the sweeps and the
    bucketed sizes run) gives the labels and step counts of the valid rows clustered alone."""
    monkeypatch.setattr(KM, "_BOUNDED_MIN_WORK", 0)
    monkeypatch.setattr(KM, "_GROUPS", 4)
    x = jnp.asarray(np.random.default_rng(12).normal(size=(360, 6)), jnp.float32)
    alone = KM.kmeans.__wrapped__(x[:300], jax.random.key(1), num_clusters=30, num_redo=2)
    masked = KM.kmeans.__wrapped__(x, jax.random.key(1), num_clusters=32, num_redo=2, num_active_clusters=30,
                                   x_mask=jnp.arange(360) < 300)
    np.testing.assert_array_equal(np.asarray(masked.labels)[:300], np.asarray(alone.labels))
    np.testing.assert_array_equal(np.asarray(masked.num_iter), np.asarray(alone.num_iter))
    assert int(np.max(np.asarray(alone.num_iter))) > 2
    # the bounds' work is counted over the training rows only, and they skipped some
    np.testing.assert_array_equal(np.asarray(masked.rows_searched), np.asarray(alone.rows_searched))
    assert np.all(np.asarray(alone.rows_searched) < np.asarray(alone.num_iter) * 300)


def test_kmeans_jit_equals_eager_and_deterministic():
    rng = np.random.default_rng(5)
    x = jnp.asarray(rng.normal(size=(40, 4)), jnp.float32)
    a = kmeans(x, jax.random.key(7), num_clusters=5, num_redo=2, max_iter=20)
    b = kmeans(x, jax.random.key(7), num_clusters=5, num_redo=2, max_iter=20)
    with jax.disable_jit():
        e = kmeans(x, jax.random.key(7), num_clusters=5, num_redo=2, max_iter=20)
    np.testing.assert_array_equal(np.asarray(a.labels), np.asarray(b.labels))
    np.testing.assert_array_equal(np.asarray(a.labels), np.asarray(e.labels))
    np.testing.assert_allclose(np.asarray(a.centroids), np.asarray(e.centroids), atol=1e-5)


# ----------------------------------------------------------------------------- compute_mauve


def test_compute_mauve_identical_and_fields(pq):
    p, _ = pq
    out = compute_mauve(p_features=p, q_features=p)
    assert out.mauve == 1.0 and out.frontier_integral == 0.0 and out.mauve_star == 1.0
    assert out.num_buckets == 12 and out.p_hist.shape == (12,) and out.divergence_curve.shape == (27, 2)
    assert out.p_hist.dtype == np.float64 and abs(out.p_hist.sum() - 1) < 1e-12


def test_compute_mauve_histogram_stage_matches_mauve_text(pq):
    """Given our bin counts, the reported scores are mauve-text's formulas on them."""
    pytest.importorskip("mauve")
    import mauve  # noqa: F401

    mt = sys.modules["mauve.compute_mauve"]
    p, q = pq
    out = compute_mauve(p_features=p, q_features=q, num_buckets=8)
    w = np.linspace(1e-6, 1 - 1e-6, 25)
    for hp, hq, m_ref, fi_ref in (
        (out.p_hist, out.q_hist, out.mauve, out.frontier_integral),
        ((out.p_counts + 0.5) / (out.p_counts + 0.5).sum(), (out.q_counts + 0.5) / (out.q_counts + 0.5).sum(),
         out.mauve_star, out.frontier_integral_star),
    ):
        x, y = mt.get_divergence_curve_for_multinomials(hp, hq, w, 5).T
        i1, i2 = np.argsort(x), np.argsort(y)
        ref = 0.5 * (mt.compute_area_under_curve(x[i1], y[i1]) + mt.compute_area_under_curve(y[i2], x[i2]))
        assert abs(ref - m_ref) < 1e-9
        assert abs(mt.get_fronter_integral(hp, hq) - fi_ref) < 1e-9
    assert out.mauve < 1.0


def test_compute_mauve_deterministic_and_no_retrace(pq):
    p, q = pq
    a = compute_mauve(p_features=p, q_features=q, seed=3)
    n_km, n_h = KM.kmeans._cache_size(), H._mauve_core._cache_size()
    b = compute_mauve(p_features=p, q_features=q, seed=3)
    c = compute_mauve(p_features=p[::-1].copy(), q_features=q, seed=4)  # same shapes, other data/seed
    assert KM.kmeans._cache_size() == n_km and H._mauve_core._cache_size() == n_h
    np.testing.assert_array_equal(a.p_hist, b.p_hist)
    assert a.mauve == b.mauve and 0 < c.mauve <= 1


def test_seeds_match_individual_calls(pq):
    p, q = pq
    out = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2, 3))
    singles = [compute_mauve(p_features=p, q_features=q, seed=s).mauve for s in (1, 2, 3)]
    np.testing.assert_allclose(out.mauve, singles, atol=1e-6)
    assert abs(out.mauve_mean - np.mean(singles)) < 1e-6
    assert abs(out.mauve_std - np.std(singles, ddof=1)) < 1e-6
    assert out.p_hist.shape == (3, 12) and out.divergence_curve.shape == (3, 27, 2)


def test_shared_codebook(pq):
    p, q = pq
    q2 = q + 1.0
    fitted = fit_quantizer([q, p, q2, p], num_buckets=10, seed=0)
    outs = mauve_shared_codebook([(p, q), (p, q2)], fitted=fitted)
    for out, qq in zip(outs, (q, q2)):
        cp, cq = np.asarray(bin_counts(fitted, p)), np.asarray(bin_counts(fitted, qq))
        hp, hq = cp / cp.sum(), cq / cq.sum()
        np.testing.assert_allclose(out.p_hist, hp)
        np.testing.assert_allclose(out.q_hist, hq)
        with jax.enable_x64(True):
            ref = float(mauve_from_histograms(hp, hq).mauve)
        assert abs(out.mauve - ref) < 1e-12
    assert outs[0].mauve > outs[1].mauve  # the farther model scores lower on the common codebook
    default = mauve_shared_codebook([(p, q), (p, q2)], num_buckets=10)
    assert len(default) == 2 and default[0].num_buckets == 10


# ----------------------------------------------------------------------------- quantizer interface


def test_kmeans_quantizer_protocol(pq):
    p, q = pq
    x = np.concatenate([q, p])
    quant = KMeansQuantizer(6)
    assert isinstance(quant, Quantizer)
    fitted = quant.fit(x, key=jax.random.key(0))
    assert isinstance(fitted, FittedQuantizer) and fitted.num_bins == 6
    np.testing.assert_array_equal(np.asarray(fitted.assign(x)), np.asarray(fitted.train_labels))
    soft = np.asarray(fitted.soft_assign(x, 0.01))
    assert soft.shape == (2 * N, 6)
    np.testing.assert_allclose(soft.sum(1), 1.0, rtol=1e-5)
    # low temperature -> hard assignment; counts agree
    np.testing.assert_array_equal(soft.argmax(1), np.asarray(fitted.assign(x)))
    np.testing.assert_allclose(np.asarray(soft_bin_counts(fitted, x, 1e-4)), np.asarray(bin_counts(fitted, x)), atol=1e-2)
    # soft counts are differentiable in the features
    g = jax.grad(lambda f: soft_bin_counts(fitted, f, 0.5)[0])(jnp.asarray(x))
    assert np.all(np.isfinite(np.asarray(g)))


class _SignQuantizer:
    """Toy quantizer: bin = sign pattern of the first two coordinates (4 bins)."""

    def fit(self, features, *, key):
        return _FittedSign()


class _FittedSign:
    num_bins = 4

    def assign(self, features):
        f = jnp.asarray(features)
        return ((f[:, 0] > 0).astype(jnp.int32) * 2 + (f[:, 1] > 0).astype(jnp.int32))

    def soft_assign(self, features, temperature):
        return jax.nn.one_hot(self.assign(features), 4)


def test_custom_quantizer_by_instance_and_registry(pq):
    p, q = pq
    out = compute_mauve(p_features=p, q_features=q, quantizer=_SignQuantizer())
    pc = np.bincount(np.asarray(_FittedSign().assign(p)), minlength=4)
    np.testing.assert_allclose(out.p_hist, pc / pc.sum())
    assert out.num_buckets == 4
    register_quantizer("sign-test", lambda k, **kw: _SignQuantizer())
    try:
        out2 = compute_mauve(p_features=p, q_features=q, quantizer="sign-test")
        assert out2.mauve == out.mauve
        seeds = compute_mauve_seeds(references=p, candidates=q, seeds=(0, 1), quantizer="sign-test")
        assert np.all(seeds.mauve == out.mauve)
    finally:
        QUANTIZERS.pop("sign-test")
    with pytest.raises(ValueError, match="^quantizer"):
        compute_mauve(p_features=p, q_features=q, quantizer="no-such-quantizer")


# ----------------------------------------------------------------------------- text path


def _fake_models(calls):
    """A stand-in for jaxmetrics.models that records what compute_mauve asks of it."""
    fake = types.ModuleType("jaxmetrics.models")

    class FakeModel:
        max_positions = 16

        def __init__(self, name):
            self.name = name

    def resolve_model(model, **kw):
        calls["model"] = model
        return model if isinstance(model, FakeModel) else FakeModel(model)

    def resolve_pooling(model, pooling):
        calls["pooling"] = pooling
        return "last" if pooling == "auto" else pooling

    def encode(texts=None, *, model, token_ids=None, layers, pooling, max_length, batch_size, desc):
        assert layers == -1
        calls["resolved_pooling"] = pooling
        if token_ids is not None:
            calls.setdefault("tokens", []).append([np.asarray(t).tolist() for t in token_ids])
            calls.setdefault("token_max_length", []).append(max_length)
            rows = [np.random.default_rng(int(np.sum(t)) + len(t)).normal(size=8) for t in token_ids]
        else:
            calls.setdefault("texts", []).append(list(texts))
            calls["max_length"] = max_length
            rows = [np.random.default_rng(len(t)).normal(size=8) for t in texts]
        return types.SimpleNamespace(pooled=np.stack(rows).astype(np.float32)[None])

    fake.resolve_model, fake.resolve_pooling, fake.encode = resolve_model, resolve_pooling, encode
    fake.check_max_length = check_max_length
    fake.FakeModel = FakeModel
    return fake


def test_text_path_uses_featurizer_and_drops_empty(monkeypatch):
    calls = {}
    monkeypatch.setitem(sys.modules, "jaxmetrics.models", _fake_models(calls))
    p_text = [f"human text number {i}" + "x" * i for i in range(30)] + ["", ""]
    q_text = [f"model text {i}" + "y" * (2 * i) for i in range(30)]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = compute_mauve(p_text=p_text, q_text=q_text, featurize_model_name="tiny", max_text_length=7)
    assert any("p_text: dropped 2 empty" in str(w.message) for w in rec)
    assert calls["model"] == "tiny" and len(calls["texts"][0]) == 30 and calls["max_length"] == 7
    assert 0 < out.mauve <= 1 and out.num_buckets == 3
    assert calls["pooling"] == "last" and out.pooling == "last"  # mauve-text's feature by default


def test_model_argument_wins_over_featurize_model_name(monkeypatch):
    calls = {}
    fake = _fake_models(calls)
    monkeypatch.setitem(sys.modules, "jaxmetrics.models", fake)
    lm = fake.FakeModel("loaded")
    texts = [f"text {i} " + "z" * i for i in range(25)]
    compute_mauve(p_text=texts, q_text=texts, featurize_model_name="ignored", model=lm)
    assert calls["model"] is lm
    out = compute_mauve_seeds(references=texts, candidates=texts, seeds=(1, 2), model="some/dir")
    assert calls["model"] == "some/dir" and out.mauve.shape == (2,)


def test_token_path_mauve_text_shapes_and_no_truncation(monkeypatch):
    calls = {}
    monkeypatch.setitem(sys.modules, "jaxmetrics.models", _fake_models(calls))
    rng = np.random.default_rng(0)
    # mauve-text's p_tokens: tensors of shape (1, length); 1-D sequences are accepted too
    p_tokens = [rng.integers(0, 50, size=(1, 3 + i % 9)) for i in range(30)]
    q_tokens = [list(rng.integers(0, 50, size=3 + i % 16)) for i in range(30)]  # up to 18 ids
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = compute_mauve(p_tokens=p_tokens, q_tokens=q_tokens, max_text_length=4)
    assert calls["model"] == "gpt2-large"  # featurize_model_name's default
    assert calls["tokens"][0][0] == p_tokens[0][0].tolist()  # (1, L) flattened, no id added
    # max_text_length does not apply to tokens (mauve-text); only the model's positions cap them
    assert calls["token_max_length"] == [11, 16]
    assert any("q_tokens: 2 sequence(s) longer than the model's 16 positions" in str(w.message) for w in rec)
    assert 0 < out.mauve <= 1
    # tokens win over text, features over tokens (mauve-text's precedence)
    calls.clear()
    with pytest.warns(UserWarning, match="^q_tokens"):
        out2 = compute_mauve(p_tokens=p_tokens, q_tokens=q_tokens, p_text=["unused"], q_text=["unused"])
    assert "texts" not in calls and out2.mauve == out.mauve
    feats = np.random.default_rng(1).normal(size=(30, 8)).astype(np.float32)
    calls.clear()
    compute_mauve(p_features=feats, q_features=feats, p_tokens=p_tokens, q_tokens=q_tokens)
    assert calls == {}  # nothing featurized, no model loaded
    with pytest.raises(ValueError, match="^p_tokens"):
        compute_mauve(p_tokens=[np.zeros((2, 3), int)], q_features=feats)
    with pytest.raises(TypeError, match="^q_tokens"):
        compute_mauve(p_features=feats, q_tokens=[np.ones(3)])


def test_text_path_without_featurizer(monkeypatch):
    fake = types.ModuleType("jaxmetrics.models")  # no featurize / resolve_model
    monkeypatch.setitem(sys.modules, "jaxmetrics.models", fake)
    with pytest.raises(ImportError, match="^p_text"):
        compute_mauve(p_text=["a b", "e f"], q_text=["c d", "g h"])
    with pytest.raises(ImportError, match="^q_tokens"):
        compute_mauve(p_features=np.ones((4, 3)), q_tokens=[[1, 2], [3]])


def test_signature_is_mauve_texts():
    import inspect

    names = ["p_features", "q_features", "p_tokens", "q_tokens", "p_text", "q_text", "num_buckets",
             "pca_max_data", "kmeans_explained_var", "kmeans_num_redo", "kmeans_max_iter",
             "featurize_model_name", "device_id", "max_text_length", "divergence_curve_discretization_size",
             "mauve_scaling_factor", "verbose", "seed", "batch_size", "use_float64"]
    params = list(inspect.signature(compute_mauve).parameters.values())
    assert [p.name for p in params[: len(names)]] == names
    assert all(p.kind == p.POSITIONAL_OR_KEYWORD for p in params[: len(names)])
    assert {p.name: p.kind for p in params[len(names):]} == {n: inspect.Parameter.KEYWORD_ONLY
                                                             for n in ("model", "quantizer", "mesh", "scoring", "pooling",
                                                                       "dtype", "estimator", "divergence")}
    mt = pytest.importorskip("mauve")
    ref = inspect.signature(mt.compute_mauve).parameters
    ours = inspect.signature(compute_mauve).parameters
    # batch_size only changes the featurizer's speed: jaxmetrics batches length-sorted texts by 16
    assert ref["batch_size"].default == 1 and ours["batch_size"].default == 16
    assert list(ref) == names and all(ref[n].default == ours[n].default for n in names if n != "batch_size")


def test_results_are_short_pytrees(pq):
    p, q = pq
    out = compute_mauve(p_features=p, q_features=q, num_buckets=8)
    r = repr(out)
    assert r.startswith(f"MauveOutput(mauve={out.mauve:.6g}") and "p_hist=f64[8]" in r and len(r) < 300
    assert out.to_dict()["num_buckets"] == 8 and len(out.to_dict()["p_hist"]) == 8
    leaves = jax.tree.leaves(out)
    assert len(leaves) == 9  # num_buckets is static
    seeds = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2, 3, 4, 5, 6, 7), num_buckets=8)
    rs = repr(seeds)
    assert len(rs) < 500 and "\n" not in rs and "mauve_mean=" in rs and "mauve_std=" in rs
    assert "divergence_curve=f64[7,27,2]" in rs and "seeds=tuple[7]" in rs
    assert seeds.mauve_mean == pytest.approx(np.mean(seeds.mauve))
    assert seeds.frontier_integral_std == pytest.approx(np.std(seeds.frontier_integral, ddof=1))
    assert jax.tree.map(lambda x: x, seeds).seeds == (1, 2, 3, 4, 5, 6, 7)


def test_fit_pca_key_is_required():
    x = jnp.asarray(np.random.default_rng(0).normal(size=(30, 5)), jnp.float32)
    with pytest.raises(TypeError):
        fit_pca(x)  # noqa: the key is a required keyword
    with pytest.raises(TypeError, match="^key"):
        fit_pca(x, key=0)
    a = fit_pca(x, key=jax.random.key(0), max_data=20)
    b = fit_pca(x, key=jax.random.key(0), max_data=20)
    np.testing.assert_array_equal(np.asarray(a.components), np.asarray(b.components))
    assert a.num_components == b.num_components


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "kwargs,name",
    [
        (dict(p_features=np.zeros((0, D))), "p_features"),
        (dict(q_features=np.full((N, D), np.nan)), "q_features"),
        (dict(q_features=np.ones((N, D + 1))), "q_features"),
        (dict(p_features=np.ones(N)), "p_features"),
        (dict(num_buckets=10_000), "num_buckets"),
        (dict(num_buckets="many"), "num_buckets"),
        (dict(mauve_scaling_factor=0), "mauve_scaling_factor"),
        (dict(mauve_scaling_factor=-2.0), "mauve_scaling_factor"),
        (dict(kmeans_explained_var=1.0), "kmeans_explained_var"),
        (dict(kmeans_explained_var=0.0), "kmeans_explained_var"),
        (dict(divergence_curve_discretization_size=0), "divergence_curve_discretization_size"),
        (dict(kmeans_num_redo=0), "kmeans_num_redo"),
        (dict(pca_max_data=0), "pca_max_data"),
        (dict(p_features=None), "p_features"),
    ],
)
def test_bad_input(pq, kwargs, name):
    p, q = pq
    args = dict(p_features=p, q_features=q)
    args.update(kwargs)
    with pytest.raises(ValueError, match=f"^{name}"):
        compute_mauve(**args)


def test_bad_input_other_entry_points(pq):
    p, q = pq
    with pytest.raises(ValueError, match="^seeds"):
        compute_mauve_seeds(references=p, candidates=q, seeds=())
    with pytest.raises(TypeError, match="^feature_sets"):
        fit_quantizer(p)
    with pytest.raises(ValueError, match=r"^feature_sets\[1\]"):
        fit_quantizer([p, np.ones((3, D + 2))])
    with pytest.raises(ValueError, match="^num_buckets"):
        KMeansQuantizer(500).fit(p, key=jax.random.key(0))
    with pytest.raises(TypeError, match="^pairs"):
        mauve_shared_codebook([])


def test_l2_normalize_zero_row_has_finite_gradient():
    import jax
    import jax.numpy as jnp

    x = jnp.array([[3.0, 4.0], [0.0, 0.0]])
    g = jax.grad(lambda x: jnp.sum(l2_normalize(x) * jnp.array([1.0, 2.0])))(x)
    assert bool(jnp.all(jnp.isfinite(g)))
    assert l2_normalize(x)[1].tolist() == [0.0, 0.0]
