"""Bucketed sizes: MAUVE compiles for padded row and cluster counts, with the same numbers.

Host features are padded to :func:`~jaxmetrics.mauve.sizes.bucket_size` rows and the k-means
to ``bucket_size(k)`` slots (masked rows, inactive slots), so nearby sample sizes reuse one
compiled program. These tests pin the definition of the buckets, that the padded computation
gives the exact-size numbers, and that a second nearby size compiles nothing.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.mauve import KMeansQuantizer, compute_mauve, compute_mauve_seeds, mauve_from_counts, mauve_from_histograms
from jaxmetrics.mauve import engine
from jaxmetrics.mauve.engine import mauve_scores, pad_rows, split_counts
from jaxmetrics.mauve.sizes import bucket_size

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


def test_bucket_size_is_sixteen_sizes_per_octave():
    assert [bucket_size(n) for n in range(1, 33)] == list(range(1, 33))  # small sizes are exact
    # (32, 64]: steps of 2; (4096, 8192]: steps of 256; (8192, 16384]: steps of 512
    assert [bucket_size(n) for n in (33, 34, 35, 64, 4097, 4352, 4353, 10000, 10240, 10241)] == \
        [34, 34, 36, 64, 4352, 4352, 4608, 10240, 10240, 10752]
    sizes = np.arange(33, 100_000)
    padded = np.array([bucket_size(int(n)) for n in sizes])
    assert np.all(padded >= sizes) and np.max((padded - sizes) / sizes) < 1 / 16
    assert len(np.unique(padded[(sizes > 4096) & (sizes <= 8192)])) == 16
    with pytest.raises(ValueError, match="^n: "):
        bucket_size(0)


def test_pad_rows_appends_zero_rows():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    out = pad_rows(x, 5)
    assert out.dtype == np.float32 and out.shape == (5, 2)
    np.testing.assert_array_equal(out[:3], x)
    assert not out[3:].any()
    with pytest.raises(ValueError, match="^size: "):
        pad_rows(x, 2)


@pytest.mark.parametrize("pca_max_data", [-1, 150])
def test_host_rows_are_projected_in_blocks_as_one_dense_pca(monkeypatch, pca_max_data):
    """Host rows go to the device in blocks (here 64 rows: 5 blocks, the last one partial), never
    as one normalised copy. The result is mauve-text's PCA of the whole (or subsampled) set, done
    densely in float64 here: the same kept components, explained variance, pairwise geometry of
    ``z``, and padding rows that are the projection of a zero row."""
    monkeypatch.setattr(engine, "PROJECT_BLOCK_ROWS", 64)
    rng = np.random.default_rng(5)
    n, d = 290, 20
    basis = np.linalg.qr(rng.normal(size=(d, d)))[0]
    x = ((rng.normal(size=(n, d)) * np.exp(-np.arange(d) / 4) + 0.4) @ basis).astype(np.float32)
    key = jax.random.key(2)
    proj, mask = engine.project_bucketed(x, key=key, explained_var=0.9, pca_max_data=pca_max_data)
    assert proj.z.shape[0] == bucket_size(n) == 304 and mask.sum() == n and mask[:n].all()
    xn = x.astype(np.float64) / np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    fit = xn
    if pca_max_data > 0:  # the subsample fit_pca draws with the same key
        fit = xn[np.asarray(jax.random.choice(jax.random.fold_in(key, engine.PCA_SALT), n, (pca_max_data,),
                                              replace=False))]
    mean = fit.mean(0)
    w, v = np.linalg.eigh((fit - mean).T @ (fit - mean) / (fit.shape[0] - 1))
    w, v = w[::-1], v[:, ::-1]
    m = int(np.argmax(np.cumsum(w / w.sum()) >= 0.9)) + 1
    assert proj.pca.num_components == m
    np.testing.assert_allclose(np.asarray(proj.pca.explained_variance_ratio), w / w.sum(), atol=1e-6)
    np.testing.assert_allclose(np.asarray(proj.pca.mean), mean, atol=1e-6)
    z_ref = (xn - mean) @ v[:, :m]
    z = np.asarray(proj.z, np.float64)
    assert np.all(z[:, m:] == 0)
    np.testing.assert_allclose(z[:n, :m] @ z[:n, :m].T, z_ref @ z_ref.T, atol=1e-5)
    # padding rows: the zero row's projection, -mean @ components (the k-means masks them)
    np.testing.assert_allclose(z[n:], np.broadcast_to(-mean @ np.asarray(proj.pca.components, np.float64),
                                                      (bucket_size(n) - n, z.shape[1])), atol=1e-6)
    # the public entry point takes the same route: the same numbers as the bucketed call
    same = engine.project_features(x, key=key, explained_var=0.9, pca_max_data=pca_max_data)
    np.testing.assert_array_equal(np.asarray(same.z), np.asarray(proj.z)[:n])
    # [Q; P] given as two arrays (a block spans both): the numbers of the stacked rows, no copy made
    parts, _ = engine.project_bucketed((x[:100], x[100:]), key=key, explained_var=0.9, pca_max_data=pca_max_data)
    np.testing.assert_array_equal(np.asarray(parts.z), np.asarray(proj.z))
    with pytest.raises(ValueError, match=r"^features\[1\]: "):
        engine.project_bucketed((x[:100], x[100:, :5]), key=key)


def test_split_counts_counts_each_block_and_leading_axis():
    labels = np.array([[0, 1, 1, 2, 2, 2], [2, 2, 0, 0, 1, 0]])
    out = split_counts(labels, (2, 4), 3)
    assert out.dtype == np.int32
    assert out.tolist() == [[[1, 1, 0], [0, 1, 3]], [[0, 0, 2], [3, 1, 0]]]
    with pytest.raises(ValueError, match="^labels: "):
        split_counts(np.array([0, 3]), (2,), 3)


@pytest.fixture(scope="module")
def gaussians():
    rng = np.random.default_rng(0)
    p = rng.normal(size=(700, 24)).astype(np.float32)
    q = (rng.normal(size=(700, 24)) + 0.3 * rng.normal(size=24)).astype(np.float32)
    return p, q


def test_bucketed_kmeans_fit_equals_the_exact_size_fit(gaussians):
    """Host rows (padded: 1,390 -> 1,408 rows, 69 -> 72 slots) against the same rows as a device
    array (fitted at their exact size): same PCA, same labels, same centroids."""
    p, q = gaussians
    x = np.concatenate([q[:690], p[:700]])
    quant = KMeansQuantizer(69, num_redo=2, max_iter=50)
    bucketed = quant.fit(x, key=jax.random.key(3))
    exact = quant.fit(jnp.asarray(x), key=jax.random.key(3))
    assert bucketed.train_labels.shape == (1390,) and bucketed.centroids.shape == exact.centroids.shape
    np.testing.assert_allclose(np.asarray(bucketed.pca.mean), np.asarray(exact.pca.mean), rtol=1e-5, atol=1e-6)
    assert bucketed.pca.num_components == exact.pca.num_components
    np.testing.assert_array_equal(np.asarray(bucketed.train_labels), np.asarray(exact.train_labels))
    # PCA directions are defined up to sign (and rotation among near-equal eigenvalues): compare
    # the centroids' geometry, which the projection preserves
    def gram(c):
        c = np.asarray(c, np.float64)
        return c @ c.T

    np.testing.assert_allclose(gram(bucketed.centroids), gram(exact.centroids), rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(np.asarray(bucketed.assign(x[:50])), np.asarray(exact.assign(x[:50])))


def test_compute_mauve_on_bucketed_sizes_gives_the_exact_numbers(gaussians):
    """compute_mauve (rows, slots and histogram bins padded) against the stages run by hand at
    the exact sizes: unpadded k-means, counts, and the histogram formulas with exactly k bins."""
    p, q = gaussians
    p, q = p[:690], q[:700]
    out = compute_mauve(p_features=p, q_features=q, kmeans_num_redo=2, kmeans_max_iter=50, seed=7)
    k = out.num_buckets
    assert k == 69 and bucket_size(k) == 72
    fitted = KMeansQuantizer(k, num_redo=2, max_iter=50).fit(jnp.asarray(np.concatenate([q, p])),
                                                             key=jax.random.key(7))
    qc, pc = split_counts(fitted.train_labels, (700, 690), k)
    np.testing.assert_array_equal(out.p_counts, pc)
    np.testing.assert_array_equal(out.q_counts, qc)
    assert out.p_hist.shape == (k,) and out.q_hist.shape == (k,)
    with jax.enable_x64(True):
        plain = mauve_from_histograms(pc / pc.sum(), qc / qc.sum())
        star = mauve_from_counts(pc, qc)
    assert out.mauve == pytest.approx(float(plain.mauve), abs=1e-12)
    assert out.frontier_integral == pytest.approx(float(plain.frontier_integral), abs=1e-12)
    assert out.mauve_star == pytest.approx(float(star.mauve), abs=1e-12)
    np.testing.assert_allclose(out.divergence_curve, np.asarray(plain.divergence_curve), atol=1e-12)


def test_seeds_on_bucketed_sizes_match_single_calls(gaussians):
    p, q = gaussians
    p, q = p[:690], q[:700]
    seeds = compute_mauve_seeds(references=p, candidates=q, seeds=(1, 2), quantizer=KMeansQuantizer("auto", num_redo=2, max_iter=50))
    singles = [compute_mauve(p_features=p, q_features=q, seed=s, kmeans_num_redo=2, kmeans_max_iter=50).mauve
               for s in (1, 2)]
    np.testing.assert_allclose(seeds.mauve, singles, atol=1e-12)


def test_a_nearby_sample_size_compiles_nothing_new(gaussians):
    """After MAUVE at 700 rows per side (k = 70), MAUVE at 690 / 695 rows (k = 69) reuses every
    compiled program: both fall in the 1,408-row, 72-slot bucket."""
    p, q = gaussians
    compute_mauve(p_features=p, q_features=q, kmeans_num_redo=2, kmeans_max_iter=50)
    compiled = []

    def listen(event, duration, **kwargs):
        if event == COMPILE_EVENT:
            compiled.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        out = compute_mauve(p_features=p[:690], q_features=q[:695], kmeans_num_redo=2, kmeans_max_iter=50)
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert out.num_buckets == 69
    assert compiled == [], f"{len(compiled)} programs compiled for a size in the same bucket"


def test_mauve_scores_drops_the_padding_bins():
    s = mauve_scores([5, 0, 5], [5, 5, 0])  # 3 bins are exact; 33 bins are padded to 34
    assert s.p_hist.shape == (3,)
    rng = np.random.default_rng(4)
    pc, qc = rng.integers(1, 20, size=33), rng.integers(1, 20, size=33)
    s = mauve_scores(pc, qc)
    assert s.p_hist.shape == (33,) and s.q_hist.shape == (33,)
    with jax.enable_x64(True):
        ref = mauve_from_histograms(pc / pc.sum(), qc / qc.sum())
        ref_star = mauve_from_counts(pc, qc)
    assert float(s.mauve) == pytest.approx(float(ref.mauve), abs=1e-12)
    assert float(s.mauve_star) == pytest.approx(float(ref_star.mauve), abs=1e-12)
