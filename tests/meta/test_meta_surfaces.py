"""The meta-evaluation where the library already correlated metrics with people: the similarity
sweep (``with_meta``: its table and CSV carry intervals, clusters and p-values) and Tevet &
Berant's tests (``run_diversity_test(num_resamples=)``), on real text with the MiniLM encoder."""
import jax
import numpy as np
import pytest

from jaxmetrics.data import load_shakespeare, synthetic_scored_pairs


def test_sweep_with_meta_carries_intervals_and_clusters(minilm):
    from jaxmetrics.similarity import correlation_sweep

    rows = synthetic_scored_pairs(40)
    res = correlation_sweep(references=[r[0] for r in rows], candidates=[r[1] for r in rows],
                            human=[r[2] for r in rows], groups=[r[3] for r in rows], model=minilm,
                            metric=["twmd", "bertscore"], temperatures=[0.1], centering=["none"], layers=[6])
    assert res.meta is None
    out = res.with_meta(key=jax.random.key(0), num_resamples=200)
    meta = out.meta
    assert meta.metrics == tuple(res.labels()) == ("twmd L6 none i1 T0.1", "bertscore L6 none")
    k = meta.levels.index("averaged")
    np.testing.assert_allclose(meta.value[k, 0], res.weighted_pearson, atol=2e-5)   # the sweep's own number
    np.testing.assert_allclose(meta.group_value[:, 0].T, res.pearson, atol=2e-5)
    assert np.all(meta.low[k, 0] <= meta.value[k, 0]) and np.all(meta.value[k, 0] <= meta.high[k, 0])
    table = out.table()
    assert "cluster" in table.splitlines()[0] and "p vs top" in table.splitlines()[0]
    rows_csv = out.csv_rows()
    assert {"pearson_low", "pearson_high", "pearson_cluster", "pearson_p_vs_top_holm"} <= set(rows_csv[0])
    assert sorted(r["pearson_cluster"] for r in rows_csv)[0] == 1


def test_diversity_test_with_resamples_has_a_meta_evaluation():
    from jaxmetrics.diversity import run_diversity_test

    speeches = load_shakespeare("heldout", limit=60, min_words=8)
    sets, params = [], []
    for k in range(12):                      # k distinct speeches among 5 responses: diversity rises with k
        distinct = 1 + k % 5
        chosen = [speeches[(5 * k + j) % len(speeches)] for j in range(distinct)]
        sets.append([chosen[j % distinct] for j in range(5)])
        params.append(float(distinct))
    report = run_diversity_test(sets, params, ["distinct-1", "distinct-2", "self-bleu"], seed=0, num_resamples=200)
    meta = report.meta
    assert meta.metrics == ("distinct-1", "distinct-2", "self-bleu")
    c = meta.correlations.index("spearman")
    for m, name in enumerate(meta.metrics):
        assert meta.value[0, c, m] == pytest.approx(report[name].spearman, abs=2e-5)
    assert "cluster" in report.format_table().splitlines()[0]
    assert run_diversity_test(sets, params, ["distinct-1"]).meta is None
