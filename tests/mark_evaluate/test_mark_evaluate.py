"""Mark-Evaluate estimators, hyperspheres and the IMPAR / PRD / FID baselines."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.linalg
from scipy.special import gammaln as np_gammaln

from jaxmetrics.mark_evaluate import (
    MarkEvaluateScores,
    PrecisionRecall,
    capture_estimate,
    cross_membership,
    fid,
    improved_precision_recall,
    knn_hyperspheres,
    m0_estimate,
    mark_evaluate_scores,
    mark_evaluate_stats,
    me_capture,
    me_petersen,
    me_schnabel,
    petersen_estimate,
    prd,
    prd_curve,
    prd_f_beta,
    schnabel_estimate,
)


# ----------------------------------------------------------------------------- numpy transcriptions
def np_radii(x, k):
    """float64 k-th neighbour squared radius, self excluded by index (IMPAR's np.partition)."""
    d = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    return np.partition(d, k - 1, axis=1)[:, k - 1]


def np_f(queries, centers, k):
    r = np_radii(centers, k)
    d = ((queries[:, None, :] - centers[None, :, :]) ** 2).sum(-1)
    return (d <= r[None, :]).any(axis=1), (d <= r[None, :]).sum(axis=0)


def np_impar(ref, cand, k):
    return np_f(cand, ref, k)[0].mean(), np_f(ref, cand, k)[0].mean()


def np_catches(S, Sp, k):
    """g_{s'} = #{s in S inside the sphere of some member of NN_k(s', S')} (the paper's
    sum_s f(s, NN_k(s', S'))), and the neighbourhoods NN_k(s', S')."""
    d_pp = ((Sp[:, None] - Sp[None]) ** 2).sum(-1)
    np.fill_diagonal(d_pp, np.inf)
    r_p = np_radii(Sp, k)
    inside = ((S[:, None] - Sp[None]) ** 2).sum(-1) <= r_p[None]  # [n, m]
    hoods = [[i] + list(np.argsort(d_pp[i], kind="stable")[:k]) for i in range(len(Sp))]
    return np.array([inside[:, h].any(1).sum() for h in hoods]), hoods


def np_schnabel(S, Sp, k, literal):
    """Loop over the visits (S marked first, S' visited in order). ``literal=True``: a visit
    catches the neighbourhood of s'_i and the references in its spheres, then marks the
    neighbourhood. Default: a visit catches s'_i and, if s'_i is marked, the reference whose
    sphere marked it; nothing new is marked."""
    n, m = len(S), len(Sp)
    marked = np_f(Sp, S, k)[0].copy()
    if not literal:
        m_t = n + marked.sum()
        num = sum((1 + marked[i]) * m_t for i in range(m))
        den = sum(2 * marked[i] for i in range(m))
        return num / den if den > 0 else 0.0
    g, hoods = np_catches(S, Sp, k)
    m_t = n + marked.sum()
    num = den = 0.0
    for i in range(m):
        nb = hoods[i]
        c_t = k + 1 + g[i]
        r_t = g[i] + marked[nb].sum()
        num += c_t * m_t
        den += r_t
        m_t += (~marked[nb]).sum()
        marked[nb] = True
    return num / den if den > 0 else 0.0


def np_m0(n_cap, distinct, t, n_max):
    N = np.arange(n_max + 1, dtype=np.float64)
    tN = t * N
    with np.errstate(all="ignore"):
        xl = lambda a, b: np.where(a == 0, 0.0, a * np.log(np.where(b > 0, b, 1.0)))
        ll = (np_gammaln(N + 1) - np_gammaln(np.maximum(N - distinct, 0) + 1) + xl(n_cap, n_cap)
              + xl(tN - n_cap, tN - n_cap) - xl(tN, tN))
    ll[(N < distinct) | (tN < n_cap)] = -np.inf
    return float(np.argmax(ll))


def score(p_hat, P):
    return 1 - min(1.0, abs(p_hat - P) / P)


def blobs(rng, centers, per, d_noise=1.0):
    return np.concatenate([c + d_noise * rng.normal(size=(per, len(c))) for c in centers])


# ----------------------------------------------------------------------------- definitions / parity
@pytest.mark.parametrize("shift", [0.0, 0.7, 2.0])
def test_petersen_closed_form_equal_sizes(x64, rng, shift):
    ref = rng.normal(size=(40, 4))
    cand = rng.normal(size=(40, 4)) * 1.3 + shift
    pr = improved_precision_recall(references=ref, candidates=cand, k=3)
    p, r = float(pr.precision), float(pr.recall)
    want = 1 - min(1.0, (1 - p) * (1 - r) / (2 * (p + r)))
    assert float(me_petersen(references=ref, candidates=cand, k=3)) == pytest.approx(want, abs=1e-12)
    np_p, np_r = np_impar(ref, cand, 3)
    assert (p, r) == pytest.approx((np_p, np_r), abs=1e-15)


def test_impar_matches_numpy_float64(x64, rng):
    ref = rng.normal(size=(40, 4))
    cand = rng.normal(size=(30, 4)) + 0.5
    for k in (1, 3, 7):
        pr = improved_precision_recall(references=ref, candidates=cand, k=k)
        np_p, np_r = np_impar(ref, cand, k)
        assert float(pr.precision) == pytest.approx(np_p, abs=1e-15)
        assert float(pr.recall) == pytest.approx(np_r, abs=1e-15)
    h = knn_hyperspheres(jnp.asarray(ref), 3)
    np.testing.assert_allclose(np.asarray(h.radii_sq), np_radii(ref, 3), rtol=1e-10)


def test_counts_and_membership_match_numpy(x64, rng):
    ref = rng.normal(size=(40, 4))
    cand = rng.normal(size=(30, 4)) + 0.3
    s = mark_evaluate_stats(references=ref, candidates=cand, k=3)
    f_c, cnt_r = np_f(cand, ref, 3)
    f_r, cnt_c = np_f(ref, cand, 3)
    np.testing.assert_array_equal(np.asarray(s.cross.b_in_a), f_c)
    np.testing.assert_array_equal(np.asarray(s.cross.a_in_b), f_r)
    np.testing.assert_array_equal(np.asarray(s.cross.a_counts), cnt_r)
    np.testing.assert_array_equal(np.asarray(s.cross.b_counts), cnt_c)


def test_petersen_counts_unequal_sizes(x64, rng):
    ref = rng.normal(size=(40, 4))
    cand = rng.normal(size=(30, 4)) + 0.4
    fc, _ = np_f(cand, ref, 3)
    fr, _ = np_f(ref, cand, 3)
    M, C, R = 40 + fc.sum(), 30 + fr.sum(), fc.sum() + fr.sum()
    assert float(me_petersen(references=ref, candidates=cand, k=3)) == pytest.approx(score(M * C / R, 70), abs=1e-12)
    pe = petersen_estimate(mark_evaluate_stats(references=ref, candidates=cand, k=3))
    assert (int(pe.marked), int(pe.captured), int(pe.recaptured)) == (M, C, R)
    assert float(pe.population) == pytest.approx(M * C / R, rel=1e-12)


@pytest.mark.parametrize("literal", [False, True])
def test_schnabel_matches_loop(x64, rng, literal):
    ref = rng.normal(size=(40, 4))
    cand = rng.normal(size=(30, 4)) * 1.5 + 0.5
    s = me_schnabel(references=ref, candidates=cand, k=3, literal=literal)
    assert float(s.quality) == pytest.approx(score(np_schnabel(ref, cand, 3, literal), 70), abs=1e-12)
    assert float(s.diversity) == pytest.approx(score(np_schnabel(cand, ref, 3, literal), 70), abs=1e-12)
    est = schnabel_estimate(mark_evaluate_stats(references=ref, candidates=cand, k=3), literal=literal)
    assert float(est.population) == pytest.approx(np_schnabel(ref, cand, 3, literal), rel=1e-12)


@pytest.mark.parametrize("occasions,literal", [("visits", False), ("samples", False), ("samples", True)])
def test_capture_matches_numpy_m0(x64, rng, occasions, literal):
    ref = rng.normal(size=(40, 4))
    cand = rng.normal(size=(30, 4)) + 0.8
    s = mark_evaluate_stats(references=ref, candidates=cand, k=3, literal=literal)
    est = capture_estimate(s, occasions=occasions, literal=literal)
    n_cap, distinct, t, p_hat = est.num_captures, est.num_distinct, est.num_occasions, est.population
    fc, cnt_r = np_f(cand, ref, 3)
    fr, cnt_c = np_f(ref, cand, 3)
    if occasions == "visits":
        want_cap, want_t = (40 + fc.sum()) + (30 + fr.sum()), 2  # M + C
    else:
        g = np_catches(ref, cand, 3)[0].sum() + np_catches(cand, ref, 3)[0].sum()
        want_cap, want_t = 70 * (4 if literal else 1) + g, 70
    assert (float(n_cap), int(distinct), int(t)) == (want_cap, 70, want_t)
    assert float(p_hat) == np_m0(want_cap, 70, want_t, 140)
    assert float(me_capture(references=ref, candidates=cand, k=3, occasions=occasions,
                            literal=literal)) == pytest.approx(
        score(float(p_hat), 70))


def test_m0_hand_cases():
    # everyone caught on both occasions: p = 1 at N = D
    assert int(m0_estimate(20, 10, 2, 40)) == 10
    # no recaptures: the likelihood keeps increasing -> grid end
    assert int(m0_estimate(10, 10, 2, 40)) == 40
    # Lincoln-Petersen-like: 2 occasions of 10 catches, 5 recaptured -> N close to 10*10/5
    assert abs(int(m0_estimate(20, 15, 2, 100)) - 20) <= 1


def test_fid_matches_scipy_sqrtm(rng):
    a = rng.normal(size=(200, 6)) @ rng.normal(size=(6, 6))
    b = rng.normal(size=(150, 6)) @ rng.normal(size=(6, 6)) + 0.3
    mu1, mu2 = a.mean(0), b.mean(0)
    s1, s2 = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    covmean = scipy.linalg.sqrtm(s1 @ s2).real
    want = ((mu1 - mu2) ** 2).sum() + np.trace(s1) + np.trace(s2) - 2 * np.trace(covmean)
    assert float(fid(references=a, candidates=b)) == pytest.approx(want, rel=1e-9)
    assert float(fid(references=a, candidates=b, use_float64=False)) == pytest.approx(want, rel=1e-3)
    assert abs(float(fid(references=a, candidates=a))) < 1e-9


def test_prd_curve_matches_numpy_and_f_beta(rng):
    p = rng.dirichlet(np.ones(7))
    q = rng.dirichlet(np.ones(7))
    c = prd_curve(references_hist=jnp.asarray(p), candidates_hist=jnp.asarray(q), num_angles=101)
    prec, rec = c.precision, c.recall
    slopes = np.tan(np.linspace(1e-10, np.pi / 2 - 1e-10, 101))
    want_p = np.minimum(p[None] * slopes[:, None], q[None]).sum(1)
    want_r = want_p / slopes
    np.testing.assert_allclose(np.asarray(prec), np.clip(want_p, 0, 1), atol=1e-6)
    np.testing.assert_allclose(np.asarray(rec), np.clip(want_r, 0, 1), atol=1e-5)
    fb = prd_f_beta(prec, rec, beta=8)
    f8, f18 = fb.f_beta, fb.f_beta_inv
    pp, rr = np.clip(want_p, 0, 1), np.clip(want_r, 0, 1)
    assert float(f8) == pytest.approx((65 * pp * rr / (64 * pp + rr + 1e-10)).max(), rel=1e-5)
    assert float(f18) == pytest.approx(((1 + 1 / 64) * pp * rr / (pp / 64 + rr + 1e-10)).max(), rel=1e-5)


def test_prd_seeded_and_sensitive(rng):
    centers = rng.normal(size=(6, 4)) * 6
    ref = blobs(rng, centers, 20)
    same = blobs(rng, centers, 20)
    collapsed = blobs(rng, centers[:2], 60)
    key = jax.random.key(1)
    kw = dict(num_buckets=6, num_runs=3, num_angles=201)
    a = prd(references=ref, candidates=same, key=key, **kw)
    b = prd(references=ref, candidates=same, key=key, **kw)
    np.testing.assert_array_equal(np.asarray(a.precision), np.asarray(b.precision))
    f8_same = prd_f_beta(a.precision, a.recall).f_beta
    col = prd(references=ref, candidates=collapsed, key=key, **kw)
    fb_col = prd_f_beta(col.precision, col.recall)
    f8_col, f18_col = fb_col.f_beta, fb_col.f_beta_inv
    assert float(f8_same) > 0.9
    assert float(f8_col) < 0.6 < float(f18_col)  # recall-like drops, precision-like stays


# ----------------------------------------------------------------------------- stated properties
def test_self_is_one_and_symmetry(rng):
    x = rng.normal(size=(40, 4)).astype(np.float32)
    y = (rng.normal(size=(30, 4)) + 0.5).astype(np.float32)
    for occ in ("visits", "samples"):
        out = mark_evaluate_scores(references=x, candidates=x, k=3, occasions=occ)
        assert out.to_dict() == {
            "petersen": 1.0, "schnabel_quality": 1.0, "schnabel_diversity": 1.0, "capture": 1.0}
        assert float(me_capture(references=x, candidates=y, k=3, occasions=occ)) == float(
            me_capture(references=y, candidates=x, k=3, occasions=occ))
    assert float(me_petersen(references=x, candidates=y)) == float(me_petersen(references=y, candidates=x))
    a = me_schnabel(references=x, candidates=y)
    b = me_schnabel(references=y, candidates=x)
    # quality(S_r,S_e) = diversity(S_e,S_r)
    assert (float(a.quality), float(a.diversity)) == (float(b.diversity), float(b.quality))


def test_far_apart_sets(rng):
    x = rng.normal(size=(40, 4))
    y = rng.normal(size=(30, 4)) + 1000.0
    assert float(me_petersen(references=x, candidates=y)) == 0.0
    assert float(me_capture(references=x, candidates=y)) == 0.0
    s = me_schnabel(references=x, candidates=y)
    assert (float(s.quality), float(s.diversity)) == (0.0, 0.0)
    # the literal reading recaptures own-set neighbours / counts them as captures: the
    # documented defect that the default corrects
    s = me_schnabel(references=x, candidates=y, literal=True)
    assert float(s.quality) > 0.5
    assert float(me_capture(references=x, candidates=y, literal=True)) > 0.9


def test_scores_converge_to_one_as_k_grows(rng):
    x = rng.normal(size=(40, 4))
    y = rng.normal(size=(30, 4)) * 1.5 + 0.8
    small = mark_evaluate_scores(references=x, candidates=y, k=1).to_dict()
    big = mark_evaluate_scores(references=x, candidates=y, k=29).to_dict()
    for name in small:
        assert big[name] >= 0.98, (name, big)
        assert big[name] >= small[name] - 1e-7


def test_mode_collapse_lowers_diversity_monotonically(rng):
    centers = rng.normal(size=(10, 16)) * 4
    ref = blobs(rng, centers, 40).astype(np.float32)
    divs, quals = [], []
    for drop in (0, 2, 4, 6, 8):
        keep = centers[: 10 - drop]
        ev = blobs(rng, keep, 400 // len(keep) + 1)[:400].astype(np.float32)
        s = me_schnabel(references=ref, candidates=ev, k=3)
        divs.append(float(s.diversity))
        quals.append(float(s.quality))
    assert all(a > b for a, b in zip(divs, divs[1:])), divs
    assert min(quals) > max(divs[2:])  # quality stays high while diversity drops


def test_noise_lowers_quality_monotonically(rng):
    centers = rng.normal(size=(10, 16)) * 4
    ref = blobs(rng, centers, 40).astype(np.float32)
    ev0 = blobs(rng, centers, 40)
    quals = []
    for sigma in (0.0, 0.5, 1.0, 2.0):
        ev = (ev0 + sigma * rng.normal(size=ev0.shape)).astype(np.float32)
        quals.append(float(me_schnabel(references=ref, candidates=ev, k=3).quality))
    assert all(a > b for a, b in zip(quals, quals[1:])), quals


# ----------------------------------------------------------------------------- duplicates
def test_duplicate_policy_multiset(x64, rng):
    base = rng.normal(size=(20, 3))
    x = np.concatenate([base, base[:5], base[:5], base[:5]])  # 5 points with 3 extra copies each
    h = knn_hyperspheres(jnp.asarray(x), 3)
    r = np.asarray(h.radii_sq)
    assert np.all(r[:5] == 0.0) and np.all(r[20:] == 0.0)  # >= k copies: radius 0
    np.testing.assert_allclose(r, np_radii(x, 3))  # self excluded by row, copies are neighbours
    # literal: a copy lies inside a zero-radius sphere (ties inside), so ME(S, S) = 1 still
    out = mark_evaluate_scores(references=x, candidates=x, k=3, literal=True)
    assert all(v == 1.0 for v in out.to_dict().values())
    # default: the copies are the same individuals caught again, 20 + 20 distinct of P = 70
    assert float(me_petersen(references=x, candidates=x, k=3)) == pytest.approx(40 / 70)
    # IMPAR with duplicates equals the index-based numpy transcription
    y = rng.normal(size=(30, 3))
    pr = improved_precision_recall(references=x, candidates=y, k=3)
    assert (float(pr.precision), float(pr.recall)) == pytest.approx(np_impar(x, y, 3), abs=1e-15)


def test_duplicates_exact_in_float32_with_offset(rng):
    # large common offset: the shifted matmul expansion still finds copies at distance 0
    base = (rng.normal(size=(30, 16)) + 50.0).astype(np.float32)
    x = np.concatenate([base, base[:3], base[:3], base[:3]])
    s = mark_evaluate_stats(references=x, candidates=x.copy(), k=3, literal=True)
    assert bool(s.cross.b_in_a.all()) and bool(s.cross.a_in_b.all())
    assert np.all(np.asarray(s.references.radii_sq)[:3] == 0.0)
    # the copies are found as duplicates of the first rows (and only they are)
    d = mark_evaluate_stats(references=x, candidates=x.copy(), k=3)
    assert np.asarray(d.references_mask).tolist() == [True] * 30 + [False] * 9


# ----------------------------------------------------------------------------- blocking / jit / sharding
def test_blocked_equals_unblocked(rng):
    ref = rng.normal(size=(40, 4)).astype(np.float32)
    cand = (rng.normal(size=(30, 4)) + 0.3).astype(np.float32)
    a = mark_evaluate_stats(references=ref, candidates=cand, k=3, block_size=5)
    b = mark_evaluate_stats(references=ref, candidates=cand, k=3, block_size=1000)
    for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-6)
    sa = mark_evaluate_scores(references=ref, candidates=cand, k=3, block_size=5)
    sb = mark_evaluate_scores(references=ref, candidates=cand, k=3)
    assert sa.to_dict() == sb.to_dict()


@pytest.mark.parametrize("block_size", [None, 8, 16, 24, 40])
def test_symmetric_self_pass_matches_brute_force_with_ties(x64, rng, block_size):
    # each pair is computed once and updates both rows; odd and even block counts, a
    # wrapped partner range, padding, and duplicates (ties must go to the lower index)
    base = rng.normal(size=(45, 3))
    x = np.concatenate([base, base[:12], base[:6]])[rng.permutation(63)]
    d = ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    order = np.lexsort((np.broadcast_to(np.arange(63), d.shape), d), axis=1)
    for k in (1, 3, 5):
        h = knn_hyperspheres(jnp.asarray(x), k, block_size=block_size)
        np.testing.assert_array_equal(np.asarray(h.neighbors), order[:, :k])
        np.testing.assert_allclose(np.asarray(h.radii_sq), np_radii(x, k), rtol=1e-12)


def test_cross_membership_is_one_pass_of_both_directions(rng):
    a = jnp.asarray(rng.normal(size=(17, 3)), jnp.float32)
    b = jnp.asarray(rng.normal(size=(11, 3)), jnp.float32)
    ra, rb = knn_hyperspheres(a, 2).radii_sq, knn_hyperspheres(b, 2).radii_sq
    ab = cross_membership(a, ra, b, rb, block_size=4)
    ba = cross_membership(b, rb, a, ra, block_size=3)
    np.testing.assert_array_equal(ab.b_in_a, ba.a_in_b)
    np.testing.assert_array_equal(ab.a_counts, ba.b_counts)


def test_jit_equals_eager_and_no_retrace(rng):
    ref = rng.normal(size=(40, 4)).astype(np.float32)
    cand = (rng.normal(size=(30, 4)) + 0.2).astype(np.float32)
    traces = []

    @jax.jit
    def all_scores(r, c):
        traces.append(1)
        out = mark_evaluate_scores(references=r, candidates=c, k=3)
        pr = improved_precision_recall(references=r, candidates=c, k=3)
        return out, pr

    eager = mark_evaluate_scores(references=ref, candidates=cand, k=3)
    jitted, pr = all_scores(ref, cand)
    assert isinstance(jitted, MarkEvaluateScores) and isinstance(pr, PrecisionRecall)
    assert eager.to_dict() == jitted.to_dict()
    assert pr.to_dict() == improved_precision_recall(references=ref, candidates=cand, k=3).to_dict()
    all_scores(ref + 1.0, cand)
    assert len(traces) == 1


def test_sharded_inputs_under_jit(rng):
    devs = np.array(jax.devices())
    mesh = jax.sharding.Mesh(devs, ("d",))
    spec = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d", None))
    n = 8 * len(devs) * 4
    ref = jax.device_put(jnp.asarray(rng.normal(size=(n, 4)), jnp.float32), spec)
    cand = jax.device_put(jnp.asarray(rng.normal(size=(n, 4)) + 0.3, jnp.float32), spec)
    got = jax.jit(lambda a, b: mark_evaluate_scores(references=a, candidates=b, k=3, block_size=8))(ref, cand)
    want = mark_evaluate_scores(references=np.asarray(ref), candidates=np.asarray(cand), k=3)
    assert got.to_dict() == want.to_dict()


@pytest.mark.integration
@pytest.mark.slow  # make test covers the sharded kernel in tests/sharding_worker.py
def test_eight_simulated_devices_match_one():
    code = textwrap.dedent("""
        import json, numpy as np, jax, jax.numpy as jnp
        from jaxmetrics.mark_evaluate import mark_evaluate_scores
        assert len(jax.devices()) == 8
        rng = np.random.default_rng(3)
        r = rng.normal(size=(64, 5)).astype(np.float32); c = (rng.normal(size=(48, 5)) + .4).astype(np.float32)
        mesh = jax.sharding.Mesh(np.array(jax.devices()), ("d",))
        sh = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d", None))
        f = jax.jit(lambda a, b: mark_evaluate_scores(references=a, candidates=b, k=3, block_size=16))
        out = f(jax.device_put(r, sh), jax.device_put(c, sh))
        print(json.dumps(out.to_dict()))
    """)
    env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    rng = np.random.default_rng(3)
    r = rng.normal(size=(64, 5)).astype(np.float32)
    c = (rng.normal(size=(48, 5)) + .4).astype(np.float32)
    want = mark_evaluate_scores(references=r, candidates=c, k=3).to_dict()
    assert got == pytest.approx(want, abs=1e-6)


# ----------------------------------------------------------------------------- bad input
def test_bad_input(rng):
    x = rng.normal(size=(10, 3))
    y = rng.normal(size=(6, 3))
    with pytest.raises(ValueError, match="^k:"):
        me_petersen(references=x, candidates=y, k=6)  # k >= size of the smaller set
    with pytest.raises(ValueError, match="^k:"):
        me_petersen(references=x, candidates=y, k=0)
    with pytest.raises(TypeError, match="^k:"):
        me_petersen(references=x, candidates=y, k=2.5)
    with pytest.raises(ValueError, match="^references:.*empty"):
        me_petersen(references=np.zeros((0, 3)), candidates=y)
    with pytest.raises(ValueError, match="^candidates:.*NaN"):
        me_schnabel(references=x, candidates=np.where(np.eye(6, 3) > 0, np.nan, y))
    with pytest.raises(ValueError, match="^candidates:.*dimension"):
        me_capture(references=x, candidates=rng.normal(size=(6, 4)))
    with pytest.raises(ValueError, match="^references:.*2-D"):
        improved_precision_recall(references=x[0], candidates=y)
    with pytest.raises(TypeError, match="^references:"):
        mark_evaluate_scores(references=np.array([["a", "b"]] * 5), candidates=y)
    with pytest.raises(ValueError, match="^occasions:"):
        me_capture(references=x, candidates=y, occasions="bogus")
    with pytest.raises(ValueError, match="^candidates:.*equal set sizes"):
        prd(references=x, candidates=y, key=jax.random.key(0))
    with pytest.raises(TypeError, match="^key:"):
        prd(references=x, candidates=x, key=0)
    with pytest.raises(ValueError, match="^max_iter:"):
        prd(references=x, candidates=x, key=jax.random.key(0), max_iter=0)
    with pytest.raises(ValueError, match="^references:.*at least 2"):
        fid(references=x[:1], candidates=y)
    with pytest.raises(ValueError, match="^candidates:.*NaN"):
        fid(references=x, candidates=np.full((4, 3), np.inf))
    with pytest.raises(ValueError, match="^beta:"):
        prd_f_beta(np.ones(3), np.ones(3), beta=0.0)
    with pytest.raises(ValueError, match="^candidates_hist:"):
        prd_curve(references_hist=np.ones(3) / 3, candidates_hist=np.ones(4) / 4)
    with pytest.raises(TypeError):
        me_petersen(x, y)  # the sets are keyword-only
