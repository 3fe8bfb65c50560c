"""Spherical lattices (Z^4 of the paper, Z^8 by default) and the spreading-vector learner (MAUVE-Lattice)."""
from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxmetrics.mauve import QUANTIZERS, compute_mauve
from jaxmetrics.mauve.quantize.quantizers import get_quantizer
from realtext_family import FAMILY_ORDER, realtext_family  # noqa: F401 (fixture)
from jaxmetrics.mauve.quantize.lattice import (
    LatticeQuantizer,
    SpreadingNet,
    _nearest,
    koleo_loss,
    lattice_atoms,
    lattice_counts,
    lattice_r2_for,
    nearest_atom,
    triplet_loss,
)

SMALL = dict(hidden=32, num_epochs=3, batch_size=32, rank_negative=10, out_dim=4)  # the Z^4 codebook


def test_lattice_has_744_atoms_of_norm_50():
    a = lattice_atoms()
    assert a.shape == (744, 4)
    assert np.all(np.sum(a.astype(np.int64) ** 2, axis=1) == 50)
    assert np.all(a == np.round(a))
    assert len({tuple(r) for r in a.tolist()}) == 744  # distinct
    # Jacobi's four-square count r_4(n) = 8 * sum_{d | n, 4 !| d} d on other radii
    for r2 in (1, 2, 3, 5, 12):
        ref = 8 * sum(d for d in range(1, r2 + 1) if r2 % d == 0 and d % 4)
        assert lattice_atoms(r2).shape[0] == ref


def _brute(m, dim):
    """The integer vectors z with ||z||^2 = m, by trying every vector of the cube [-b, b]^dim, b^2 <= m."""
    b = int(np.sqrt(m))
    return {z for z in itertools.product(range(-b, b + 1), repeat=dim) if sum(c * c for c in z) == m}


def test_lattice_counts_and_atoms_match_brute_force():
    for dim, top in ((4, 12), (3, 10), (2, 25)):
        ref = [len(_brute(m, dim)) for m in range(top + 1)]
        assert lattice_counts(top, dim).tolist() == ref
        for m in range(1, top + 1):
            if ref[m]:
                a = lattice_atoms(m, dim)
                assert a.shape == (ref[m], dim)
                assert {tuple(r) for r in a.astype(int).tolist()} == _brute(m, dim)
                assert a.tolist() == sorted(a.tolist())  # lexicographic: stable bin ids
    # larger radii against Jacobi's four-square formula
    jac = [8 * sum(d for d in range(1, m + 1) if m % d == 0 and d % 4) for m in range(1, 301)]
    assert lattice_counts(300)[1:].tolist() == jac


def test_radius_closest_to_target_atom_count():
    counts = [8 * sum(d for d in range(1, m + 1) if m % d == 0 and d % 4) for m in range(1, 2001)]
    for target in (1, 2, 8, 16, 20, 24, 28, 50, 100, 150, 333, 500, 744, 1000):
        r2 = lattice_r2_for(target)
        err = [abs(c - target) for c in counts]
        assert r2 == err.index(min(err)) + 1  # first (smallest) radius at the minimum error
    assert lattice_r2_for(744) == 50 and lattice_r2_for(150) == 10  # 144 atoms
    assert lattice_r2_for(16) == 1  # |8 - 16| = |24 - 16|: the tie goes to the smaller radius
    # fit: r2='auto' sizes the codebook like mauve-text's num_buckets='auto'
    x = np.random.default_rng(0).standard_normal((600, 6)).astype(np.float32)  # 300 + 300 rows
    small = dict(SMALL, num_epochs=1)
    fq = LatticeQuantizer(**small).fit(x, key=jax.random.key(0))
    assert (fq.r2, fq.num_bins) == (lattice_r2_for(30), 32)  # target round(600 / 20) = 30
    fq = LatticeQuantizer(**small, num_bins=100).fit(x, key=jax.random.key(0))
    assert (fq.r2, fq.num_bins) == (6, 96)  # |96 - 100| = |104 - 100|: the smaller radius
    # compute_mauve(quantizer="lattice") hands its num_buckets (here 20) to the registry factory
    fq = get_quantizer("lattice", 20, **small).fit(x, key=jax.random.key(0))
    assert (fq.r2, fq.num_bins) == (2, 24)  # |24 - 20| < |32 - 20|


def test_nearest_atom_is_brute_force_argmin():
    rng = np.random.default_rng(0)
    a = lattice_atoms()
    u = rng.standard_normal((500, 4))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    d2 = ((np.sqrt(50) * u[:, None, :] - a[None]) ** 2).sum(-1)
    np.testing.assert_array_equal(np.asarray(nearest_atom(u.astype(np.float32), a)), d2.argmin(1))
    n0 = _nearest._cache_size()
    nearest_atom((u + 0.01).astype(np.float32), a)
    assert _nearest._cache_size() == n0  # no retrace for the same shapes


def test_koleo_and_triplet_hand_cases():
    y = jnp.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0]])
    # nearest-neighbour distances: sqrt2, sqrt2, sqrt2 -> -log(3 sqrt2)
    assert float(koleo_loss(y)) == pytest.approx(-np.log(3 * np.sqrt(2)), rel=1e-5)
    a = jnp.array([[0.0, 0.0], [0.0, 0.0]])
    p = jnp.array([[3.0, 4.0], [1.0, 0.0]])
    n = jnp.array([[1.0, 0.0], [0.0, 2.0]])
    assert float(triplet_loss(a, p, n)) == pytest.approx((max(5 - 1, 0) + max(1 - 2, 0)) / 2)
    g = jax.grad(koleo_loss)(jnp.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))  # coincident points
    assert np.all(np.isfinite(g))


def test_spreading_net_shape_norm_and_batchnorm_modes():
    net = SpreadingNet(6, hidden=16, rngs=nnx.Rngs(0))
    x = jnp.asarray(np.random.default_rng(0).standard_normal((9, 6)), jnp.float32)
    y = net(x, train=False)
    assert y.shape == (9, 4)
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), 1.0, atol=1e-5)
    yt = net(x, train=True)  # batch statistics differ from the (initial) running averages
    assert not np.allclose(y, yt)


def test_fit_spreads_and_keeps_neighbourhoods():
    rng = np.random.default_rng(0)
    d = 8
    centers = np.eye(d)[:3] * 10.0
    x = np.concatenate([c + rng.standard_normal((60, d)) for c in centers]).astype(np.float32)
    y = np.repeat(np.arange(3), 60)
    fq = LatticeQuantizer(**SMALL, r2=50).fit(x, key=jax.random.key(0))  # the paper's codebook
    assert fq.num_bins == 744 and fq.r2 == 50
    assert all(np.isfinite(fq.losses))
    e = np.asarray(fq.embed(x))
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    dist = np.linalg.norm(e[:, None] - e[None], axis=-1)
    same = dist[y[:, None] == y[None]].mean()
    diff = dist[y[:, None] != y[None]].mean()
    assert same < diff  # input neighbourhoods survive the embedding
    b = np.asarray(fq.assign(x))
    assert b.min() >= 0 and b.max() < 744 and len(np.unique(b)) > 20  # spread over many atoms
    s = np.asarray(fq.soft_assign(x, 1.0))
    np.testing.assert_allclose(s.sum(1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(fq.soft_assign(x, 1e-3)).argmax(1), b)
    again = LatticeQuantizer(**SMALL, r2=50).fit(x, key=jax.random.key(0))
    np.testing.assert_array_equal(np.asarray(again.assign(x)), b)  # deterministic for a key
    # registered, and usable through compute_mauve
    assert "lattice" in QUANTIZERS
    half = x[::2]  # [Q; P] stacks 180 rows: the shapes of the fit above (no recompile)
    out = compute_mauve(p_features=half, q_features=half, quantizer=LatticeQuantizer(**SMALL, r2=50))
    assert out.mauve == pytest.approx(1.0) and out.num_buckets == 744


def test_bad_input():
    with pytest.raises(ValueError, match="^r2"):
        lattice_atoms(7, 3)  # 7 is not a sum of three squares
    with pytest.raises(ValueError, match="^r2"):
        lattice_atoms(0)
    with pytest.raises(ValueError, match="^r2"):
        LatticeQuantizer(**SMALL, r2="big").fit(np.ones((9, 3), np.float32), key=jax.random.key(0))
    with pytest.raises(ValueError, match="^num_bins"):
        LatticeQuantizer(**SMALL, num_bins=0).fit(np.ones((9, 3), np.float32), key=jax.random.key(0))
    with pytest.raises(ValueError, match="^num_atoms"):
        lattice_r2_for(0)
    with pytest.raises(ValueError, match="^features"):
        LatticeQuantizer(**SMALL).fit(np.ones((2, 3), np.float32), key=jax.random.key(0))
    with pytest.raises(ValueError, match="^features"):
        LatticeQuantizer(**SMALL).fit(np.ones(5, np.float32), key=jax.random.key(0))
    with pytest.raises(ValueError, match="^u"):
        nearest_atom(np.ones(4), lattice_atoms())
    with pytest.raises(ValueError, match="^atoms"):
        nearest_atom(np.ones((2, 3)), lattice_atoms())


@pytest.fixture(scope="module")
def heldout_halves(request, minilm_dir):
    """Two disjoint random sets of 500 sentences (8-30 words) of the held-out plays, as
    all-MiniLM-L6-v2 mean-pooled features ``[500, 384]`` each (cached in pytest's cache)."""
    import re

    import jaxmetrics
    from jaxmetrics.data import load_shakespeare

    sents = [s for sp in load_shakespeare("heldout") for s in re.split(r"(?<=[.!?])\s+", sp) if 8 <= len(s.split()) <= 30]
    idx = np.random.default_rng(0).choice(len(sents), 1000, replace=False)
    enc = jaxmetrics.load_model(minilm_dir)
    cache = request.config.cache.mkdir("lattice_heldout")
    f = jaxmetrics.sentence_embeddings([sents[i] for i in idx], model=enc, max_length=64, batch_size=64,
                                       progress=False, cache_dir=cache)
    return np.asarray(f[:500]), np.asarray(f[500:])


@pytest.mark.parametrize("quantizer, atoms", [
    ("lattice", 16),                                               # default Z^8: r2 = 1 for a target of 50
    (LatticeQuantizer(out_dim=4, koleo_weight=1.0), 48),           # the paper's Z^4 net, r2 = 5
])
def test_two_halves_of_the_same_text_score_high(heldout_halves, quantizer, atoms):
    """Two samples of the same human text must be judged alike (MAUVE paper, section 4 / Table 5:
    the quantizers agree on human text). With the paper's fixed 744 atoms for 1000 points most
    atoms hold one or two points and the two halves looked different (about 0.5); the codebook
    sized to mauve-text's n/10 buckets (here 50: 16 atoms of Z^8, 48 of Z^4) gives a score near
    k-means'."""
    p, q = heldout_halves
    out = compute_mauve(p_features=p, q_features=q, quantizer=quantizer, seed=0)
    assert out.num_buckets == atoms
    assert out.mauve >= 0.9, out.mauve


# Eight k-means / lattice seeds per member: single seeds of either spread by about 0.01 (s.d.) near
# the top of the family, where the shuffle levels lie 0.003-0.04 apart, so a mean over four seeds
# reorders the upper members with the compiler's rounding (seeds 0-3 at XLA's -O0, as the suite
# compiles: Spearman 0.75; at the default level: 0.96).
SEEDS = tuple(range(8))


@pytest.fixture(scope="module")
def family_kmeans(realtext_family):
    fam = realtext_family(1000)
    km = [np.mean([compute_mauve(p_features=fam[k][0], q_features=fam[k][1], seed=s).mauve for s in SEEDS])
          for k in FAMILY_ORDER]
    assert km[0] > 0.9 and km[-1] < 0.2  # the family really is graded
    return fam, km


@pytest.mark.slow
@pytest.mark.parametrize("settings", [
    {},
    pytest.param(dict(out_dim=4, koleo_weight=1.0), marks=pytest.mark.xfail(strict=True, reason=(
        "the paper's 4-d net with lambda = 1: measured Spearman 0.64 (every shuffle level about "
        "0.96; the KoLeo term spreads P and Q alike and 4 dimensions keep only coarse directions)"))),
], ids=["default", "paper-4d"])
def test_ranks_graded_real_text_like_kmeans(family_kmeans, settings):
    """MAUVE paper, Table 5 / section 4: the lattice quantizer should order model texts like
    k-means. Graded real-text family (tests/realtext_family.py, 1000 sentences per side, MiniLM
    features): Spearman(MAUVE-Lattice, MAUVE-k-means) over its seven members >= 0.9, each score
    the mean over seeds 0-7. Measured (as the suite compiles): k-means 0.960, 0.950, 0.948,
    0.928, 0.887, 0.709, 0.107; the default lattice (8-d, lambda = 0.1) 0.977, 0.974, 0.970,
    0.967, 0.967, 0.754, 0.311: Spearman 1.0, though 75 % and 100 % shuffling lie 0.0002 apart
    (the lattice hardly resolves them; k-means does). The paper's 4-d net with lambda = 1 is a
    strict expected failure that records the gap."""
    from scipy.stats import spearmanr

    fam, km = family_kmeans
    quantizer = LatticeQuantizer(**settings)
    lat = [np.mean([compute_mauve(p_features=fam[k][0], q_features=fam[k][1], quantizer=quantizer,
                                  seed=s).mauve for s in SEEDS]) for k in FAMILY_ORDER]
    rho = spearmanr(km, lat).statistic
    assert rho >= 0.9, (np.round(km, 3).tolist(), np.round(lat, 3).tolist(), rho)
