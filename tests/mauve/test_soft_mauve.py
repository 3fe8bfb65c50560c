"""Soft (differentiable) MAUVE: gradients, limits, padding, training signal, bad input."""
from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.test_util import check_grads

from jaxmetrics.mauve.frontier.histograms import mauve_from_histograms
from jaxmetrics.mauve.training.soft import (
    CentroidQuantizer,
    hard_mauve,
    mauve_loss,
    soft_assign,
    soft_histogram,
    soft_mauve,
)


def _data(rng, n_p=12, n_q=10, d=3, k=5):
    c = rng.standard_normal((k, d)) * 2.0
    p = c[rng.integers(0, k, n_p)] + 0.5 * rng.standard_normal((n_p, d))
    q = c[rng.integers(0, 2, n_q)] + 0.5 * rng.standard_normal((n_q, d))  # q covers 2 bins only
    return p, q, c


def test_soft_assign_definition(x64):
    x = jnp.array([[0.0, 0.0], [1.0, 2.0]])
    c = jnp.array([[0.0, 1.0], [2.0, 2.0], [-1.0, 0.0]])
    tau = 0.7
    d2 = np.array([[np.sum((np.asarray(xi) - np.asarray(cj)) ** 2) for cj in c] for xi in x])
    e = np.exp(-d2 / tau)
    np.testing.assert_allclose(soft_assign(x, c, tau), e / e.sum(1, keepdims=True), rtol=1e-12)


def test_hand_computed_cases():
    c = jnp.array([[0.0], [1.0]])
    # identical spreads -> 1, disjoint supports -> mauve-text's disjoint value with 25 points
    same = soft_mauve(references=jnp.array([[0.0], [1.0]]), candidates=jnp.array([[1.0], [0.0]]), quantizer=c, temperature=1e-4)
    assert float(same.mauve) == pytest.approx(1.0, abs=1e-6)
    assert float(same.frontier_integral) == pytest.approx(0.0, abs=1e-6)
    dis = hard_mauve(references=jnp.array([[0.0], [0.1]]), candidates=jnp.array([[1.0], [0.9]]), quantizer=c)
    assert float(dis.mauve) == pytest.approx(0.0040720962619613, abs=1e-6)
    assert float(dis.frontier_integral) == pytest.approx(1.0, abs=1e-6)


def test_hard_mauve_matches_mauve_text_on_same_bins(x64, rng):
    pytest.importorskip("mauve")
    import mauve  # noqa: F401

    cm = sys.modules["mauve.compute_mauve"]
    p, q, c = _data(rng, n_p=60, n_q=50, k=6)
    r = hard_mauve(references=p, candidates=q, quantizer=c)
    lab = lambda x: np.argmin(((x[:, None] - c[None]) ** 2).sum(-1), 1)  # noqa: E731
    ph = np.bincount(lab(p), minlength=6) / 60.0
    qh = np.bincount(lab(q), minlength=6) / 50.0
    w = np.linspace(1e-6, 1 - 1e-6, 25)
    x_, y_ = cm.get_divergence_curve_for_multinomials(ph, qh, w, 5).T
    i1, i2 = np.argsort(x_), np.argsort(y_)
    ref = 0.5 * (cm.compute_area_under_curve(x_[i1], y_[i1]) + cm.compute_area_under_curve(y_[i2], x_[i2]))
    assert float(r.mauve) == pytest.approx(ref, abs=1e-9)
    assert float(r.frontier_integral) == pytest.approx(cm.get_fronter_integral(ph, qh), abs=1e-9)


@pytest.mark.parametrize("pseudocount", [0.0, 0.5])
def test_gradients_match_finite_differences(x64, rng, pseudocount):
    p, q, c = _data(rng)
    p, q, c = map(jnp.asarray, (p, q, c))

    def mauve_of(p, q, c):
        return soft_mauve(references=p, candidates=q, quantizer=c, temperature=1.5, pseudocount=pseudocount).mauve

    def fi_of(p, q, c):
        return soft_mauve(references=p, candidates=q, quantizer=c, temperature=1.5, pseudocount=pseudocount).frontier_integral

    for f in (mauve_of, fi_of):
        check_grads(f, (p, q, c), order=1, modes=["rev"], eps=1e-6, atol=1e-6, rtol=1e-5)
    # gradient w.r.t. the temperature too
    check_grads(
        lambda t: soft_mauve(references=p, candidates=q, quantizer=c, temperature=t, pseudocount=pseudocount).mauve,
        (jnp.asarray(1.5),),
        order=1,
        modes=["rev"],
        eps=1e-6,
        atol=1e-6,
        rtol=1e-5,
    )


def test_gradients_finite_with_empty_bins_and_padding(x64, rng):
    p, q, c = _data(rng)
    c = np.concatenate([c, [[1e3, 1e3, 1e3]]])  # a bin nobody reaches: exactly empty
    pad = np.full((4, 3), 5e2)  # padding rows with extreme values
    pq = np.concatenate([q, pad])
    q_mask = np.r_[np.ones(len(q)), np.zeros(4)]
    for b in (0.0, 0.5):
        for tau in (1e-3, 1.0):  # tiny tau: assignments underflow to exact 0/1
            f = lambda q_, c_: soft_mauve(references=p, candidates=q_, quantizer=c_, temperature=tau, pseudocount=b, candidates_mask=q_mask)  # noqa: B023,E731
            r_pad = f(jnp.asarray(pq), jnp.asarray(c))
            r_cut = soft_mauve(references=p, candidates=q, quantizer=c, temperature=tau, pseudocount=b)
            np.testing.assert_allclose(r_pad.mauve, r_cut.mauve, rtol=1e-12)
            np.testing.assert_allclose(r_pad.frontier_integral, r_cut.frontier_integral, rtol=1e-12)
            for out in ("mauve", "frontier_integral"):
                gq, gc = jax.grad(lambda a, z: getattr(f(a, z), out), argnums=(0, 1))(jnp.asarray(pq), jnp.asarray(c))  # noqa: B023
                assert np.all(np.isfinite(gq)) and np.all(np.isfinite(gc))
                assert np.all(gq[len(q) :] == 0.0)  # padding gets no gradient
    # the masked-out loss is a usable training signal at an empty bin too
    g = jax.grad(lambda a: mauve_loss(references=p, candidates=a, quantizer=c, temperature=1.0, candidates_mask=q_mask))(jnp.asarray(pq))
    assert np.all(np.isfinite(g)) and np.any(g[: len(q)] != 0)


def test_with_fitted_kmeans_quantizer_and_zero_padding(rng):
    from jaxmetrics.mauve import KMeansQuantizer

    p = rng.standard_normal((60, 16)).astype(np.float32)
    q = (rng.standard_normal((60, 16)) + 0.3).astype(np.float32)
    fq = KMeansQuantizer(6, num_redo=2).fit(np.concatenate([q, p]), key=jax.random.key(0))
    # tau -> 0 on the k-means codebook (L2-normalise + PCA inside soft_assign) is hard MAUVE
    np.testing.assert_allclose(soft_mauve(references=p, candidates=q, quantizer=fq, temperature=1e-6).mauve, hard_mauve(references=p, candidates=q, quantizer=fq).mauve, atol=1e-5)
    qpad = np.concatenate([q, np.zeros((5, 16), np.float32)])  # all-zero padding rows
    mask = np.r_[np.ones(60), np.zeros(5)]
    g = jax.grad(lambda x: soft_mauve(references=p, candidates=x, quantizer=fq, temperature=0.05, pseudocount=0.5, candidates_mask=mask).mauve)(jnp.asarray(qpad))
    assert np.all(np.isfinite(g)) and np.all(g[60:] == 0) and np.any(g[:60] != 0)


def test_soft_tends_to_hard_as_temperature_goes_to_zero(x64, rng):
    p, q, c = _data(rng, n_p=80, n_q=70, k=6)
    hard = hard_mauve(references=p, candidates=q, quantizer=c)
    errs = []
    for tau in (3.0, 0.3, 0.03, 3e-3, 3e-4, 3e-5):
        s = soft_mauve(references=p, candidates=q, quantizer=c, temperature=tau)
        errs.append(abs(float(s.mauve) - float(hard.mauve)) + abs(float(s.frontier_integral) - float(hard.frontier_integral)))
    assert errs[-1] < 1e-6
    assert errs[0] > 1e-3  # the limit is approached, not trivially equal
    assert errs[2] < errs[0]
    # with smoothing, the limit is the smoothed hard MAUVE (mauve_star-style)
    np.testing.assert_allclose(
        soft_mauve(references=p, candidates=q, quantizer=c, temperature=1e-4, pseudocount=0.5).mauve,
        hard_mauve(references=p, candidates=q, quantizer=c, pseudocount=0.5).mauve,
        atol=1e-9,
    )


def test_stable_frontier_integral(rng):
    from jaxmetrics.mauve.frontier.histograms import frontier_integral
    from jaxmetrics.mauve.frontier.histograms import smooth_frontier_integral as _stable_frontier_integral

    with jax.enable_x64(True):  # same value as the mauve-text formula, with empty/one-sided bins
        for _ in range(5):
            a = rng.random(20) * (rng.random(20) > 0.2)
            b = rng.random(20) * (rng.random(20) > 0.2)
            a, b = a / a.sum(), b / b.sum()
            np.testing.assert_allclose(_stable_frontier_integral(jnp.asarray(a), jnp.asarray(b)),
                                       frontier_integral(a, b), rtol=1e-12, atol=1e-15)
        extreme = (jnp.array([1e-300, 1.0 - 1e-300]), jnp.array([0.5, 0.5]))  # |t| rounds to 1
        np.testing.assert_allclose(_stable_frontier_integral(*extreme), frontier_integral(*extreme), rtol=1e-12)
        assert np.all(np.isfinite(jax.grad(lambda a: _stable_frontier_integral(a, extreme[1]))(extreme[0])))
        p64 = jnp.array([0.3, 0.7])
        ref = lambda q: _stable_frontier_integral(p64, q)  # noqa: E731
    # float32, nearly equal bins: non-negative value and a gradient matching the float64 one
    p32 = jnp.array([0.3, 0.7], jnp.float32)
    for eps in (1e-3, 1e-5, 1e-6, 3e-8):
        q32 = jnp.array([0.3 + eps, 0.7 - eps], jnp.float32)
        v = float(_stable_frontier_integral(p32, q32))
        g = np.asarray(jax.grad(lambda q: _stable_frontier_integral(p32, q))(q32))
        with jax.enable_x64(True):
            q64 = jnp.asarray(np.asarray(q32), jnp.float64)
            v64, g64 = float(ref(q64)), np.asarray(jax.grad(ref)(q64))
        assert v >= 0.0 and v == pytest.approx(v64, rel=1e-3, abs=1e-12)
        np.testing.assert_allclose(g, g64, rtol=1e-3, atol=1e-7)


def test_soft_histogram_definition():
    a = jnp.array([[0.2, 0.8], [0.6, 0.4], [1.0, 0.0]])
    h = soft_histogram(a, jnp.array([1, 1, 0]), pseudocount=0.5)
    np.testing.assert_allclose(h, np.array([0.8 + 0.5, 1.2 + 0.5]) / 3.0, rtol=1e-6)
    # hand case through mauve_from_histograms
    r = soft_mauve(references=jnp.zeros((1, 1)), candidates=jnp.ones((1, 1)), quantizer=jnp.array([[0.0], [1.0]]), temperature=1.0)
    e = 1.0 / (1.0 + np.exp(-1.0))  # weight of the nearer centroid
    ref = mauve_from_histograms(jnp.array([e, 1 - e]), jnp.array([1 - e, e]))
    np.testing.assert_allclose(r.mauve, ref.mauve, rtol=1e-5)


def test_jit_equals_eager_and_no_retrace(rng):
    p, q, c = (jnp.asarray(a, jnp.float32) for a in _data(rng))
    traces = []

    def f(p, q, c, t):
        traces.append(1)
        r = soft_mauve(references=p, candidates=q, quantizer=CentroidQuantizer(c), temperature=t, pseudocount=0.5)
        return r.mauve, r.frontier_integral

    jf = jax.jit(f)
    eager = f(p, q, c, 1.0)
    j1 = jf(p, q, c, 1.0)
    j2 = jf(p + 0.1, q, c, 2.0)  # same shapes, new values and temperature
    np.testing.assert_allclose(j1, eager, rtol=1e-5)
    np.testing.assert_allclose(j2, f(p + 0.1, q, c, 2.0), rtol=1e-5)
    assert len(traces) == 3  # 2 eager calls + exactly 1 trace for both jitted calls


def test_vmap_over_a_batch_of_q_sets(rng):
    p, q, c = (jnp.asarray(a, jnp.float32) for a in _data(rng))
    qs = jnp.stack([q, q + 1.0, q * 0.5])
    batched = jax.vmap(lambda qq: soft_mauve(references=p, candidates=qq, quantizer=c, temperature=1.0).mauve)(qs)
    single = [float(soft_mauve(references=p, candidates=qq, quantizer=c, temperature=1.0).mauve) for qq in qs]
    np.testing.assert_allclose(batched, single, rtol=1e-5)


def test_optax_ascent_moves_point_cloud_to_target():
    rng = np.random.default_rng(0)
    d, k, n = 4, 8, 400
    means = rng.standard_normal((k, d)) * 3
    p = (means[rng.integers(0, k, n)] + 0.5 * rng.standard_normal((n, d))).astype(np.float32)
    cq = CentroidQuantizer(jnp.asarray(means, jnp.float32))
    q = jnp.asarray(rng.standard_normal((n, d)) * 0.5 + np.array([6.0, 0, 0, 0]), jnp.float32)
    start = float(hard_mauve(references=p, candidates=q, quantizer=cq).mauve)
    assert start < 0.2
    tau = 10.0
    opt = optax.adam(0.05)
    state = opt.init(q)

    @jax.jit
    def step(q, state):
        loss, g = jax.value_and_grad(lambda x: mauve_loss(references=p, candidates=x, quantizer=cq, temperature=tau))(q)
        upd, state = opt.update(g, state, q)
        return optax.apply_updates(q, upd), state, loss

    losses = []
    for _ in range(400):
        q, state, loss = step(q, state)
        losses.append(float(loss))
    end = float(hard_mauve(references=p, candidates=q, quantizer=cq).mauve)
    assert end > 0.9, (start, end)
    assert losses[-1] < losses[0]


def test_bad_input_raises():
    p = jnp.ones((4, 2))
    c = jnp.array([[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="^temperature"):
        soft_mauve(references=p, candidates=p, quantizer=c, temperature=0.0)
    with pytest.raises(ValueError, match="^temperature"):
        soft_mauve(references=p, candidates=p, quantizer=c, temperature=float("nan"))
    with pytest.raises(ValueError, match="^candidates"):
        soft_mauve(references=p, candidates=jnp.ones((4, 3)), quantizer=c, temperature=1.0)
    with pytest.raises(ValueError, match="^references"):
        soft_mauve(references=jnp.ones(4), candidates=p, quantizer=c, temperature=1.0)
    with pytest.raises(ValueError, match="^references"):
        soft_mauve(references=p.at[0, 0].set(jnp.nan), candidates=p, quantizer=c, temperature=1.0)
    with pytest.raises(ValueError, match="^quantizer"):
        soft_mauve(references=p, candidates=p, quantizer=jnp.ones((2, 3)), temperature=1.0)
    with pytest.raises(TypeError, match="^quantizer"):
        soft_mauve(references=p, candidates=p, quantizer="kmeans", temperature=1.0)
    with pytest.raises(ValueError, match="^candidates_mask"):
        soft_mauve(references=p, candidates=p, quantizer=c, temperature=1.0, candidates_mask=jnp.zeros(4))
    with pytest.raises(ValueError, match="^references_mask"):
        soft_mauve(references=p, candidates=p, quantizer=c, temperature=1.0, references_mask=jnp.ones(3))
    with pytest.raises(ValueError, match="^pseudocount"):
        mauve_loss(references=p, candidates=p, quantizer=c, temperature=1.0, pseudocount=-1.0)
    with pytest.raises(ValueError, match="^scaling"):
        soft_mauve(references=p, candidates=p, quantizer=c, temperature=1.0, scaling=0.0)


# --------------------------------------------------------------------------- MAUVE as a loss: the recipe


def _shakespeare_sentences(split: str, n: int) -> list[str]:
    """The first ``n`` sentences of 6-20 words of the bundled Shakespeare split."""
    import re

    from jaxmetrics.data import load_shakespeare

    out = []
    for speech in load_shakespeare(split):
        for s in re.split(r"(?<=[.!?])\s+", speech):
            if 6 <= len(s.split()) <= 20:
                out.append(s.strip())
                if len(out) == n:
                    return out
    raise AssertionError(f"only {len(out)} sentences in {split}")


@pytest.fixture(scope="module")
def shakespeare_minilm(minilm_dir):
    """MiniLM mean-pooled features of 1000 held-out (P) and 1000 training-play sentences."""
    from jaxmetrics import load_model, sentence_embeddings

    enc = load_model(minilm_dir)
    emb = lambda t: sentence_embeddings(t, model=enc, max_length=32, batch_size=64, progress=False)  # noqa: E731
    cache = {}

    def get(n):
        if n not in cache:
            cache[n] = (emb(_shakespeare_sentences("heldout", n)), emb(_shakespeare_sentences("train", n)))
        return cache[n]

    return get


def _shift(d: int, size: float = 2.0) -> np.ndarray:
    u = np.random.default_rng(0).standard_normal(d).astype(np.float32)
    return size * u / np.linalg.norm(u)


def _real_text_recipe(shakespeare_minilm, n, **fit_kwargs):
    from jaxmetrics.mauve import compute_mauve
    from jaxmetrics.mauve.training.fit import fit_to_mauve

    p, other = shakespeare_minilm(n)
    q0 = other + _shift(p.shape[1])  # shifted copies of other sentences' features
    r = fit_to_mauve(q0, references=p, key=jax.random.key(0), **fit_kwargs)
    assert r.mauve_before < 0.05, r.mauve_before
    assert r.mauve_before == pytest.approx(compute_mauve(p, q0).mauve)  # the fresh pipeline, default settings
    assert r.mauve_after > 0.5, r.mauve_after
    # fresh codebooks from other seeds than the one reported in the history
    for seed in (1, 2):
        assert compute_mauve(p, np.asarray(r.q_features), seed=seed).mauve > 0.5
    return p, other, r


def test_mauve_as_a_loss_raises_fresh_mauve_on_real_text(shakespeare_minilm):
    """Reproduces the requirement "MAUVE as a loss": training a point cloud with ``mauve_loss``
    under the documented recipe (:func:`fit_to_mauve`) raises the MAUVE a *fresh*
    ``compute_mauve`` reports, on MiniLM features of real sentences (300 per side), from below
    0.05 to above 0.5."""
    _, _, r = _real_text_recipe(shakespeare_minilm, 300, num_steps=40, learning_rate=0.01)
    assert r.loss[-5:].mean() < r.loss[0]


@pytest.mark.slow
def test_mauve_as_a_loss_real_text_large_and_output_layer(shakespeare_minilm):
    """Reproduces "MAUVE as a loss" at 1000 sentences per side, for the point cloud and for the
    output layer (``W``, ``b`` on fixed input features) of a small model; and shows why the
    recipe refits: a codebook fitted once on P alone scores the shifted cloud far higher than a
    fresh ``compute_mauve`` does."""
    from jaxmetrics.mauve import KMeansQuantizer, compute_mauve
    from jaxmetrics.mauve.training.fit import fit_to_mauve

    p, other, r = _real_text_recipe(shakespeare_minilm, 1000, num_steps=100, eval_every=25)
    assert r.eval_steps.tolist() == [0, 25, 50, 75, 100]
    q0 = other + _shift(p.shape[1])
    fixed = KMeansQuantizer(100).fit(p, key=jax.random.key(0))
    assert float(hard_mauve(references=p, candidates=q0, quantizer=fixed).mauve) > 10 * compute_mauve(p, q0).mauve

    x = jnp.asarray(other)
    head = {"w": jnp.eye(p.shape[1]), "b": jnp.asarray(_shift(p.shape[1]))}
    rl = fit_to_mauve(head, references=p, generator=lambda prm: x @ prm["w"] + prm["b"], key=jax.random.key(1),
                      num_steps=100, learning_rate=2e-4)
    assert rl.mauve_before < 0.05 and rl.mauve_after > 0.5, (rl.mauve_before, rl.mauve_after)
    assert rl.params["w"].shape == (p.shape[1], p.shape[1])


def _toy_cloud(n=60, d=8):
    rng = np.random.default_rng(0)
    p = (rng.normal(size=(n, d)) + 2.0).astype(np.float32)
    return p, p[::-1] + np.eye(d, dtype=np.float32)[0] * 4.0


def test_fit_to_mauve_history_schedule_and_generator():
    from jaxmetrics.mauve.training.fit import MauveFitResult, fit_to_mauve

    p, q0 = _toy_cloud()
    # a generator with a pytree of parameters: a per-feature scale and a bias on fixed inputs
    gen = lambda prm: q0 * prm["scale"] + prm["bias"]  # noqa: E731
    init = {"scale": jnp.ones(8), "bias": jnp.zeros(8)}
    r = fit_to_mauve(init, references=p, generator=gen, key=jax.random.key(0), num_steps=23, refit_every=5,
                     eval_every=10, learning_rate=0.05, temperature_start=2.0, temperature_end=0.2)
    assert isinstance(r, MauveFitResult)
    assert r.eval_steps.tolist() == [0, 10, 20, 23] and r.fresh_mauve.shape == r.codebook_mauve.shape == (4,)
    assert r.loss.shape == r.temperature.shape == (23,) and np.all(np.isfinite(r.loss))
    assert r.num_refits == 5 and r.num_buckets == 6
    assert (r.mauve_before, r.mauve_after) == (r.fresh_mauve[0], r.fresh_mauve[-1])
    np.testing.assert_allclose(r.q_features, gen(r.params), rtol=1e-5, atol=1e-6)
    assert set(r.params) == {"scale", "bias"} and not np.allclose(r.params["bias"], 0.0)
    # within one codebook the temperature is geometric from r_start to r_end over all steps
    ratio = (0.2 / 2.0) ** (1 / 22)
    np.testing.assert_allclose(r.temperature[1:5] / r.temperature[:4], ratio, rtol=1e-6)
    assert r.mauve_after > r.mauve_before
    # the result is a pytree: jit-able and mappable
    assert jax.tree.map(lambda a: a, r).num_buckets == 6


def test_fit_to_mauve_bad_input():
    from jaxmetrics.mauve.training.fit import fit_to_mauve

    p, q0 = _toy_cloud()
    key = jax.random.key(0)
    with pytest.raises(TypeError, match="^key"):
        fit_to_mauve(q0, references=p, key=0)
    with pytest.raises(ValueError, match="^references"):
        fit_to_mauve(q0, references=p[:, :1].ravel(), key=key)
    with pytest.raises(ValueError, match=r"^generator\(params\)"):
        fit_to_mauve(q0[:, :3], references=p, key=key)
    with pytest.raises(TypeError, match="^generator"):
        fit_to_mauve(q0, references=p, key=key, generator="identity")
    with pytest.raises(ValueError, match="^num_steps"):
        fit_to_mauve(q0, references=p, key=key, num_steps=0)
    with pytest.raises(ValueError, match="^refit_every"):
        fit_to_mauve(q0, references=p, key=key, refit_every=0)
    with pytest.raises(ValueError, match="^temperature_end"):
        fit_to_mauve(q0, references=p, key=key, temperature_end=0.0)
    with pytest.raises(ValueError, match="^learning_rate"):
        fit_to_mauve(q0, references=p, key=key, learning_rate=-1.0)
    with pytest.raises(TypeError, match="^optimizer"):
        fit_to_mauve(q0, references=p, key=key, optimizer="adam")
    with pytest.raises(ValueError, match="^num_buckets"):
        fit_to_mauve(q0, references=p, key=key, num_buckets=1)
