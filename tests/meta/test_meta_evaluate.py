"""meta_evaluate by its definitions: every level's correlations against scipy, the weighted
resample kernels against explicit resamples, the permutation test against a count by hand with
the same draws, reproducibility, clusters, input checks; and on real text with the MiniLM
encoder, a metric known to be worse (word-shuffled candidates) found worse."""
import jax
import numpy as np
import pytest
import scipy.stats

from jaxmetrics.confidence import randomization_draws
from jaxmetrics.data import synthetic_scored_pairs
from jaxmetrics.meta import kendall_tau_b, meta_evaluate, tau_like
from jaxmetrics.meta.resampling import level_data, level_values

ALL = ("pearson", "spearman", "kendall", "tau_like")


@pytest.fixture(scope="module")
def data():
    """60 real play pairs: word-overlap "human" score, two crude real metrics (with ties), groups
    'short' / 'long' and 4 "systems"."""
    rows = synthetic_scored_pairs(60)
    human = np.array([r[2] for r in rows])
    shared = np.array([len(set(r[0].split()) & set(r[1].split())) / len(r[0].split()) for r in rows])
    length = np.array([abs(len(r[1]) - len(r[0])) for r in rows], float)
    groups = [r[3] for r in rows]
    systems = [f"s{i % 4}" for i in range(len(rows))]
    return {"overlap": shared, "length": -length}, human, groups, systems


@pytest.fixture(scope="module")
def result(data):
    scores, human, groups, systems = data
    return meta_evaluate(scores, human, groups=groups, systems=systems, key=jax.random.key(0),
                         correlations=ALL, num_resamples=200, threshold=0.123)


def _scipy(kind, x, h):
    if kind == "pearson":
        return scipy.stats.pearsonr(x, h).statistic
    if kind == "spearman":
        return scipy.stats.spearmanr(x, h).statistic
    if kind == "kendall":
        return scipy.stats.kendalltau(x, h).statistic
    return tau_like(x, h, threshold=0.123)


def test_every_level_equals_its_definition(data, result):
    scores, human, groups, systems = data
    g = np.array(groups)
    names = list(scores)
    assert result.levels == ("pooled", "averaged", "system") and result.metrics == tuple(names)
    for c, kind in enumerate(ALL):
        for m, name in enumerate(names):
            x = scores[name]
            assert result.value[0, c, m] == pytest.approx(_scipy(kind, x, human), abs=2e-5)
            per = [_scipy(kind, x[g == lab], human[g == lab]) for lab in result.group_names]
            assert result.group_value[:, c, m] == pytest.approx(per, abs=2e-5)
            if kind != "tau_like":
                sizes = np.array([(g == lab).sum() for lab in result.group_names])
                assert result.value[1, c, m] == pytest.approx(np.dot(sizes, per) / sizes.sum(), abs=2e-5)
            s = np.array(systems)
            means = [(x[s == k].mean(), human[s == k].mean()) for k in ("s0", "s1", "s2", "s3")]
            xs, hs = np.array(means).T
            assert result.value[2, c, m] == pytest.approx(_scipy(kind, xs, hs), abs=2e-5)
    k = result.levels.index("averaged")   # tau-like pools the pairs of every group (WMT's DARR)
    for m, name in enumerate(names):
        x = scores[name]
        cd = [(lambda a, b: (np.sum(np.triu((np.abs(b[:, None] - b) > 0.123) & (np.sign(a[:, None] - a) == np.sign(
            b[:, None] - b)), 1)), np.sum(np.triu(np.abs(b[:, None] - b) > 0.123, 1))))(x[g == lab], human[g == lab])
            for lab in result.group_names]
        conc, tot = map(sum, zip(*cd))
        assert result.value[k, 3, m] == pytest.approx((2 * conc - tot) / tot, abs=2e-5)


def test_resampled_correlations_equal_scipy_on_the_explicit_resample(data):
    scores, human, groups, _ = data
    x = np.stack(list(scores.values()))
    rng = np.random.default_rng(3)
    idx = rng.integers(0, human.size, (3, human.size))
    W = np.zeros((3, human.size), np.float32)
    for b in range(3):
        np.add.at(W[b], idx[b], 1.0)
    d = level_data(x, human, np.zeros(human.size, np.int64), 1)
    out = level_values(d, jax.numpy.asarray(W), ("pearson", "spearman", "kendall"), threshold=0.0, batch_size=2)
    for b in range(3):
        for m in range(2):
            xs, hs = x[m][idx[b]], human[idx[b]]
            assert float(out["pearson"][1][b, m]) == pytest.approx(scipy.stats.pearsonr(xs, hs).statistic, abs=2e-5)
            assert float(out["spearman"][1][b, m]) == pytest.approx(scipy.stats.spearmanr(xs, hs).statistic, abs=2e-5)
            assert float(out["kendall"][1][b, m]) == pytest.approx(kendall_tau_b(xs, hs), abs=2e-5)


def test_permutation_p_values_equal_a_count_with_the_same_draws(data, result):
    scores, human, _, _ = data
    x = np.stack(list(scores.values()))
    B = result.num_resamples
    swaps = np.asarray(randomization_draws(jax.random.split(jax.random.key(0), 4)[1], B, human.size, paired=True))
    z = (x - x.mean(1, keepdims=True)) / x.std(1, keepdims=True)
    obs = scipy.stats.pearsonr(z[0], human).statistic - scipy.stats.pearsonr(z[1], human).statistic
    null = [scipy.stats.pearsonr(np.where(s, z[1], z[0]), human).statistic
            - scipy.stats.pearsonr(np.where(s, z[0], z[1]), human).statistic for s in swaps]
    p = (1 + np.sum(np.abs(null) >= abs(obs) - 1e-6)) / (B + 1)
    assert result.tests[0] == "permutation"
    assert abs(result.p_value[0, 0, 0, 1] - p) <= 1.5 / (B + 1)
    assert result.p_value[0, 0, 0, 1] == result.p_value[0, 0, 1, 0]


def test_reproducible_and_holm_never_below_raw(data, result):
    scores, human, groups, systems = data
    again = meta_evaluate(scores, human, groups=groups, systems=systems, key=jax.random.key(0),
                          correlations=ALL, num_resamples=200, threshold=0.123)
    for field in ("value", "low", "high", "p_value", "group_low"):
        np.testing.assert_array_equal(getattr(again, field), getattr(result, field))
    assert np.all(result.p_holm >= result.p_value - 1e-12)
    assert np.all(result.low <= result.value + 1e-6) and np.all(result.value <= result.high + 1e-6)
    other = meta_evaluate(scores, human, key=jax.random.key(1), correlations=("pearson",), num_resamples=200)
    assert not np.array_equal(other.low[0], result.low[0, :1])


def test_a_clearly_worse_metric_is_its_own_cluster_and_the_table_says_so():
    rng = np.random.default_rng(0)
    human = np.array([r[2] for r in synthetic_scored_pairs(150)])
    scores = {"close": human + 0.05 * rng.normal(size=150), "closer": human + 0.04 * rng.normal(size=150),
              "far": human + 0.6 * rng.normal(size=150)}
    out = meta_evaluate(scores, human, key=jax.random.key(2), correlations=("pearson", "spearman"),
                        num_resamples=300)
    assert set(out.best()) == {"close", "closer"}
    k = out.metrics.index("far")
    assert out.cluster[0, 0, k] == 2 and out.p_holm[0, 0, 1, k] < 0.05 and out.williams_holm[0, 1, k] < 0.05
    table = out.table()
    assert "best by pearson" in table and "close" in table.splitlines()[0]
    rows = out.csv_rows()
    assert {r["metric"] for r in rows} == set(scores) and all(r["low"] <= r["high"] for r in rows)


def test_bad_input_names_the_argument(data):
    scores, human, groups, _ = data
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"scores\['overlap'\]: expected 59 scores"):
        meta_evaluate(scores, human[:-1], key=key)
    with pytest.raises(ValueError, match="human: constant"):
        meta_evaluate(scores, np.ones_like(human), key=key)
    with pytest.raises(ValueError, match=r"scores\['c'\]: constant"):
        meta_evaluate({"c": np.ones_like(human)}, human, key=key)
    with pytest.raises(ValueError, match="groups: group"):
        meta_evaluate(scores, human, groups=["a"] * (len(human) - 2) + ["b", "b"], key=key)
    with pytest.raises(ValueError, match="correlations: "):
        meta_evaluate(scores, human, correlations=("pearsn",), key=key)
    with pytest.raises(ValueError, match="systems: "):
        meta_evaluate(scores, human, systems=["a", "b"] * (len(human) // 2), key=key)
    with pytest.raises(ValueError, match="scores\\['overlap'\\]: contains NaN"):
        meta_evaluate({"overlap": np.where(np.arange(len(human)) == 3, np.nan, human)}, human, key=key)


def test_bertscore_beats_itself_on_word_shuffled_candidates(minilm):
    """Real text at toy size: BERTScore F1 of the MiniLM encoder on 40 real pairs against the
    word-overlap score, and the same metric on word-shuffled candidates: the shuffled one ranks
    below (the power check of benchmarks/meta_evaluation.py, in miniature)."""
    from jaxmetrics.similarity import compute_similarity

    rows = synthetic_scored_pairs(40)
    refs, cands, human = [r[0] for r in rows], [r[1] for r in rows], np.array([r[2] for r in rows])
    rng = np.random.default_rng(0)
    shuffled = [" ".join(rng.permutation(c.split())) for c in cands]
    both = compute_similarity(references=refs + refs, candidates=cands + shuffled, model=minilm, metric="bertscore")
    f1 = np.asarray(both.f1)
    out = meta_evaluate({"bertscore": f1[:40], "bertscore-shuffled": f1[40:]}, human, key=jax.random.key(0),
                        correlations=("pearson", "spearman"), num_resamples=300)
    assert out.top() == "bertscore"
    assert out.value[0, 0, 0] > out.value[0, 0, 1]
    assert out.low[0, 0, 0] < out.value[0, 0, 0] < out.high[0, 0, 0]
