"""Kernels of the similarity family: definitions, parity with POT / numpy transcriptions of
the authors' Sinkhorn, ott-jax cross-check, jit/retrace, gradients, bad input."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.similarity.kernels import (_raw_pair, batch_similarity, pair_similarity,
                                           similarity_loss, similarity_scores)
from jaxmetrics.similarity.sinkhorn import sinkhorn_plan


def _unit(rng, *shape):
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _np_softmax(z, axis):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def _np_twmd_authors(s, t, m):
    """float64 transcription of the authors' iteration (other_metrics.md §3.3): from
    log pi = S/T, m-1 times {column log-softmax, row log-softmax}, then one column
    normalisation and a final row softmax r; value = mean_ij(r_ij S_ij) * L2 / L2 ...
    i.e. sum_ij pi_ij S_ij with pi = row_softmax / L1 (rows = tokens averaged over)."""
    l1, l2 = s.shape
    logp = s / t
    for _ in range(m - 1):
        logp = np.log(_np_softmax(logp, 0)) + np.log(l1)
        logp = np.log(_np_softmax(logp, 1)) + np.log(l2)
    logp = np.log(_np_softmax(logp, 0)) + np.log(l1)
    r = l2 * _np_softmax(logp, 1)
    return float(np.mean(r * s))


def _arr(prf):
    """``[3, ...]`` array of a PRF's (precision, recall, f1)."""
    return np.array(list(prf))


def _pair(x, y, mx, my, **kw):
    return pair_similarity(candidate=x, reference=y, candidate_mask=mx, reference_mask=my, **kw)


def _batch(x, y, mx, my, **kw):
    return batch_similarity(candidates=x, references=y, candidates_mask=mx, references_mask=my, **kw)


def _scores(x, y, mx, my, **kw):
    return similarity_scores(candidates=x, references=y, candidates_mask=mx, references_mask=my, **kw)


def _loss(x, y, mx, my, **kw):
    return similarity_loss(candidates=x, references=y, candidates_mask=mx, references_mask=my, **kw)


def _np_normalized(fn, x, y):
    p12, r12 = fn(x @ y.T), fn((x @ y.T).T)
    p11, r11 = fn(x @ x.T), fn(x @ x.T)
    p22, r22 = fn(y @ y.T), fn(y @ y.T)
    f = lambda p, r: 2 * p * r / (p + r)
    return (p12 / np.sqrt(p11 * p22), r12 / np.sqrt(r11 * r22),
            f(p12, r12) / np.sqrt(f(p11, r11) * f(p22, r22)))


@pytest.mark.parametrize("m", [1, 2, 5])
def test_twmd_matches_float64_transcription_of_authors_iteration(x64, rng, m):
    x, y = _unit(rng, 7, 6), _unit(rng, 5, 6)
    t = 0.1
    want = _np_normalized(lambda s: _np_twmd_authors(s, t, m), x, y)
    # pad both sides to check that padding changes nothing
    xp = np.concatenate([x, rng.standard_normal((2, 6))])
    yp = np.concatenate([y, rng.standard_normal((4, 6))])
    mx = np.arange(9) < 7
    my = np.arange(9) < 5
    got = _pair(jnp.asarray(xp), jnp.asarray(yp), jnp.asarray(mx), jnp.asarray(my),
                metric="twmd", temperature=t, num_iterations=m)
    np.testing.assert_allclose(_arr(got), np.array(want), rtol=0, atol=1e-6)


def test_ott_backend_matches_log_domain(x64, rng):
    x, y = _unit(rng, 6, 5), _unit(rng, 4, 5)
    mx, my = jnp.ones(6, bool), jnp.ones(4, bool)
    s = jnp.asarray(x @ y.T)
    for m in (2,):
        for order in ("cols_first", "rows_first"):
            a = sinkhorn_plan(s, mx, my, 0.1, m, order=order, backend="log")
            b = sinkhorn_plan(s, mx, my, 0.1, m, order=order, backend="ott")
            np.testing.assert_allclose(np.array(a), np.array(b), atol=1e-10)
    # ott's unrolled gradient of the fixed-iteration plan is wrong on ott-jax 0.6 (see the
    # sinkhorn module docstring): differentiating through that backend must fail loudly
    with pytest.raises(ValueError, match="^backend"):
        jax.grad(lambda z: sinkhorn_plan(z, mx, my, 0.1, 2, backend="ott").sum())(s)


def test_wmd_matches_pot_emd2(x64, rng):
    ot = pytest.importorskip("ot")
    for l1, l2 in ((5, 7), (8, 3), (6, 6)):
        x, y = _unit(rng, l1, 4), _unit(rng, l2, 4)
        a, b = np.full(l1, 1 / l1), np.full(l2, 1 / l2)
        want = 1.0 - 0.5 * ot.emd2(a, b, 2.0 - 2.0 * x @ y.T)  # cost |x-y|^2 = 2 - 2 x.y
        got, _ = _raw_pair(jnp.asarray(x), jnp.asarray(y), jnp.ones(l1, bool),
                          jnp.ones(l2, bool), metric="wmd")
        assert abs(float(got) - want) < 1e-6


def test_wmd_batched_with_padding_matches_pot_and_normalises(x64, rng):
    ot = pytest.importorskip("ot")
    b, lmax, d = 3, 6, 5
    x, y = _unit(rng, b, lmax, d), _unit(rng, b, lmax, d)
    lx, ly = np.array([6, 3, 4]), np.array([2, 6, 5])
    mx, my = np.arange(lmax) < lx[:, None], np.arange(lmax) < ly[:, None]
    out = _scores(x, y, mx, my, metric="wmd")
    for k in range(b):
        xs, ys = x[k, :lx[k]], y[k, :ly[k]]
        want = ot.emd2(np.full(lx[k], 1 / lx[k]), np.full(ly[k], 1 / ly[k]), -xs @ ys.T)
        # C11 = C22 = 1 for unit vectors with uniform weights, so Sim = C12
        assert abs(float(out.f1[k]) + want) < 1e-6
        assert float(out.precision[k]) == float(out.recall[k])


def test_twmd_small_temperature_many_iterations_approaches_wmd(x64, rng):
    x, y = jnp.asarray(_unit(rng, 6, 4)), jnp.asarray(_unit(rng, 9, 4))
    mx, my = jnp.ones(6, bool), jnp.ones(9, bool)
    wmd, _ = _raw_pair(x, y, mx, my, metric="wmd")
    gaps = []
    for t in (0.1, 0.02, 0.005):
        p, r = _raw_pair(x, y, mx, my, metric="twmd", temperature=t, num_iterations=3000)
        gaps.append(abs(float(p) - float(wmd)))
        assert abs(float(p) - float(r)) < 1e-4  # converged: both orders give the same plan
    assert gaps[-1] < 5e-3 and gaps[-1] < gaps[0]


def test_definitions_by_hand():
    # x1 = e1, e2; x2 = e1 (2-D)
    x = jnp.array([[1.0, 0.0], [0.0, 1.0]])
    y = jnp.array([[1.0, 0.0]])
    mx, my = jnp.ones(2, bool), jnp.ones(1, bool)
    # cosine of mean pooled vectors: (1,1)/sqrt2 . (1,0) = 1/sqrt2
    assert np.isclose(float(_pair(x, y, mx, my, metric="cosine").f1), 2 ** -0.5)
    # CKA: ||X1X2^T||^2 = 1; C11 = ||I||^2 = 2; C22 = 1 -> 1/sqrt2
    assert np.isclose(float(_pair(x, y, mx, my, metric="cka").f1), 2 ** -0.5)
    # RWMD P = mean over x tokens of max sim = (1 + 0)/2; R = 1; F = 2/3
    out = _pair(x, y, mx, my, metric="rwmd")
    np.testing.assert_allclose(_arr(out), [0.5, 1.0, 2 / 3], atol=1e-6)
    # TRWMD with a single reference token: softmax over one column is 1 -> same as RWMD
    # for P; the LSE form adds T*log(1)=0 entropy -> equal as well
    t = 0.3
    a = _pair(x, y, mx, my, metric="trwmd", temperature=t, normalize=False)
    b = _pair(x, y, mx, my, metric="trwmd_lse", temperature=t, normalize=False)
    np.testing.assert_allclose(float(a.precision), 0.5, atol=1e-6)
    np.testing.assert_allclose(float(b.precision), 0.5, atol=1e-6)
    # R side of TRWMD: softmax over x tokens of (1, 0)/T
    w = np.exp(np.array([1.0, 0.0]) / t); w /= w.sum()
    np.testing.assert_allclose(float(a.recall), w[0], atol=1e-6)
    lse = t * np.log(np.exp(1 / t) + 1.0)
    np.testing.assert_allclose(float(b.recall), lse, atol=1e-6)


def test_trwmd_lse_equals_plan_form_plus_entropy(x64, rng):
    x, y = _unit(rng, 5, 4), _unit(rng, 7, 4)
    t = 0.1
    s = x @ y.T
    q = _np_softmax(s / t, 1)
    ent = -(q * np.log(q)).sum(1).mean()
    kw = dict(temperature=t, normalize=False)
    mx, my = jnp.ones(5, bool), jnp.ones(7, bool)
    plan = _pair(jnp.asarray(x), jnp.asarray(y), mx, my, metric="trwmd", **kw)
    lse = _pair(jnp.asarray(x), jnp.asarray(y), mx, my, metric="trwmd_lse", **kw)
    np.testing.assert_allclose(float(plan.precision), (q * s).sum(1).mean(), atol=1e-10)
    np.testing.assert_allclose(float(lse.precision), float(plan.precision) + t * ent, atol=1e-10)
    assert float(lse.precision) > float(plan.precision)


def test_jit_equals_eager_and_no_retrace(rng):
    x = jnp.asarray(_unit(rng, 2, 5, 4), jnp.float32)
    y = jnp.asarray(_unit(rng, 2, 6, 4), jnp.float32)
    mx, my = jnp.ones((2, 5), bool), jnp.arange(6)[None] < jnp.array([[6], [2]])
    with jax.disable_jit():
        eager = _batch(x, y, mx, my, metric="twmd", temperature=0.1)
    jitted = _batch(x, y, mx, my, metric="twmd", temperature=0.1)
    np.testing.assert_allclose(_arr(eager), _arr(jitted), atol=1e-6)
    n0 = batch_similarity._cache_size()
    _batch(x + 0.1, y, mx, my, metric="twmd", temperature=0.2)
    assert batch_similarity._cache_size() == n0  # temperature is traced, same shapes


@pytest.mark.parametrize("metric", ["twmd", "trwmd", "trwmd_lse", "rwmd", "wmd",
                                    pytest.param("cosine", marks=pytest.mark.slow),
                                    pytest.param("cka", marks=pytest.mark.slow)])
def test_gradients_finite_with_padding(x64, rng, metric):
    x = jnp.asarray(rng.standard_normal((2, 5, 3)))
    y = jnp.asarray(rng.standard_normal((2, 4, 3)))
    mx = jnp.arange(5)[None] < jnp.array([[5], [2]])
    my = jnp.arange(4)[None] < jnp.array([[3], [4]])
    g = jax.grad(lambda a, b: _loss(a, b, mx, my, metric=metric, temperature=0.2,
                                    num_iterations=2), argnums=(0, 1))(x, y)
    for gi, m in zip(g, (mx, my)):
        assert np.all(np.isfinite(np.array(gi)))
        assert np.all(np.array(gi)[~np.array(m)] == 0)  # padding gets no gradient


@pytest.mark.parametrize("metric", ["twmd", pytest.param("trwmd", marks=pytest.mark.slow),
                                    pytest.param("trwmd_lse", marks=pytest.mark.slow)])
def test_gradients_match_finite_differences(x64, rng, metric):
    from jax.test_util import check_grads

    x = jnp.asarray(rng.standard_normal((1, 4, 3)))
    y = jnp.asarray(rng.standard_normal((1, 5, 3)))
    mx, my = jnp.arange(4)[None] < 3, jnp.arange(5)[None] < 5  # x has a padded token
    f = lambda a, b: _loss(a, b, mx, my, metric=metric, temperature=0.3, num_iterations=2)
    check_grads(f, (x, y), order=1, modes=["rev"], atol=1e-5, rtol=1e-5)


def test_optax_steps_raise_twmd(rng):
    import optax

    x = jnp.asarray(rng.standard_normal((4, 6, 8)), jnp.float32)
    y = jnp.asarray(rng.standard_normal((4, 5, 8)), jnp.float32)
    mx = jnp.arange(6)[None] < jnp.array([[6], [3], [5], [4]])
    my = jnp.ones((4, 5), bool)
    loss = lambda a: _loss(a, y, mx, my, metric="twmd", temperature=0.1)
    opt = optax.adam(0.05)
    state = opt.init(x)
    before = float(_batch(x, y, mx, my, metric="twmd", temperature=0.1).f1.mean())
    step = jax.jit(lambda a, s: (lambda l, g: (l, *opt.update(g, s, a)))(*jax.value_and_grad(loss)(a)))
    for _ in range(10):
        _, upd, state = step(x, state)
        x = optax.apply_updates(x, upd)
    after = float(_batch(x, y, mx, my, metric="twmd", temperature=0.1).f1.mean())
    assert after > before + 0.1


def test_bad_input_raises(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    m = np.ones((2, 3), bool)
    with pytest.raises(ValueError, match="^temperature"):
        _scores(x, x, m, m, metric="twmd", temperature=0.0)
    with pytest.raises(ValueError, match="^temperature"):
        _scores(x, x, m, m, metric="trwmd", temperature=-1.0)
    bad = x.copy(); bad[1, 0, 2] = np.nan
    with pytest.raises(ValueError, match="^candidates: contains NaN"):
        _scores(bad, x, m, m)
    empty = m.copy(); empty[1] = False  # all-padding row / no tokens after masking
    with pytest.raises(ValueError, match="^references_mask: 1 row"):
        _scores(x, x, m, empty)
    with pytest.raises(ValueError, match="^metric"):
        _scores(x, x, m, m, metric="bleu")
    with pytest.raises(ValueError, match="^num_iterations"):
        _scores(x, x, m, m, num_iterations=0)
    # NaN in padding is ignored (only real tokens are checked) and never leaks
    padnan = x.copy(); padnan[0, 2] = np.nan
    mm = m.copy(); mm[0, 2] = False
    out = _scores(padnan, x, mm, m)
    assert np.all(np.isfinite(_arr(out)))


def test_kernel_documented_values_inside_jit(rng):
    """Inside jit we cannot raise: an empty side gives 0, a zero vector gives 0, no NaN."""
    x = jnp.asarray(rng.standard_normal((2, 3, 4)), jnp.float32)
    m = jnp.ones((2, 3), bool)
    empty = m.at[1].set(False)
    for metric in ("twmd", "trwmd", "trwmd_lse", "cosine", "cka", "rwmd"):
        out = _batch(x, x, m, empty, metric=metric, temperature=0.1)
        assert np.all(_arr(out)[:, 1] == 0) and np.all(np.isfinite(_arr(out)))
    zero = x.at[0].set(0.0)  # every token vector of pair 0 is zero (e.g. over-centred)
    out = _batch(zero, x, m, m, metric="twmd", temperature=0.1)
    assert np.all(np.isfinite(_arr(out))) and np.all(_arr(out)[:, 0] == 0)


@pytest.mark.integration
@pytest.mark.slow  # make test covers the sharded kernels in tests/sharding_worker.py
def test_sharded_batch_matches_single_device(tmp_path):
    """1 vs 8 simulated devices: the jitted kernel runs unchanged on a pair-sharded batch."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import os
        os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8"
        import jax, jax.numpy as jnp, numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        from jaxmetrics.similarity import batch_similarity
        rng = np.random.default_rng(0)
        x = jnp.asarray(rng.standard_normal((8, 5, 4)), jnp.float32)
        y = jnp.asarray(rng.standard_normal((8, 6, 4)), jnp.float32)
        mx = jnp.arange(5)[None] < jnp.asarray(rng.integers(1, 6, (8, 1)))
        my = jnp.arange(6)[None] < jnp.asarray(rng.integers(1, 7, (8, 1)))
        kw = dict(metric="twmd", temperature=0.1, num_iterations=2)
        one = batch_similarity(candidates=x, references=y, candidates_mask=mx, references_mask=my, **kw)
        mesh = Mesh(np.array(jax.devices()), ("b",))
        sh = lambda a: jax.device_put(a, NamedSharding(mesh, P("b", *([None] * (a.ndim - 1)))))
        many = batch_similarity(candidates=sh(x), references=sh(y), candidates_mask=sh(mx),
                                references_mask=sh(my), **kw)
        assert len(jax.devices()) == 8 and len(many.f1.sharding.device_set) == 8
        np.testing.assert_allclose(np.array(list(one)), np.array(list(many)), atol=1e-6)
        # the validated entry points pad a ragged number of pairs to the mesh and slice back
        from jaxmetrics.similarity import bertscore_scores, similarity_scores
        kw = dict(candidates=x[:5], references=y[:5], candidates_mask=mx[:5], references_mask=my[:5])
        for fn in (similarity_scores, bertscore_scores):
            a, b = fn(**kw), fn(**kw, mesh=mesh)
            assert b.f1.shape == (5,)
            np.testing.assert_allclose(np.array(list(a)), np.array(list(b)), atol=1e-6)
        print("ok")
    """)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-2000:]


def test_prf_is_an_unpackable_result_pytree():
    from jaxmetrics.results import Result

    x = jnp.ones((2, 3, 4)); m = jnp.ones((2, 3), bool)
    out = jax.jit(lambda a: _batch(a, a, m, m, metric="cka"))(x)
    assert isinstance(out, Result)
    assert repr(out) == "PRF(precision=f32[2], recall=f32[2], f1=f32[2])"
    p, r, f = out
    assert p is out.precision and r is out.recall and f is out.f1
    assert len(jax.tree.leaves(out)) == 3
    assert out.to_dict()["f1"] == pytest.approx([1.0, 1.0])
