"""Similarity → diversity reduction and Tevet & Berant's decTest / conTest framework."""
from __future__ import annotations

import csv
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxmetrics.cli import main
from jaxmetrics.diversity import (
    DiversityTestReport,
    SetMetricValues,
    batched_set_diversity,
    compute_set_metrics,
    content_test,
    decoding_test,
    distinct_n_sets,
    embedding_cosine_diversity,
    optimal_classification_accuracy,
    read_mcdiv_csv,
    run_diversity_test,
    self_bleu_scores,
    self_bleu_sets,
    self_decoding_test,
    similarity_to_diversity,
    unigram_generator,
)
from jaxmetrics.diversity.reduction import _cosine_similarity as cosine_similarity
from jaxmetrics.diversity.reduction import _set_diversity as set_diversity

# response sets with a known diversity ordering (identical < paraphrases < same-topic
# different sentences < unrelated topics)
ORDERED_SETS = [
    ["the cat sat on the mat"] * 4,
    ["the cat sat on the mat", "the cat sat on a mat", "the cat sat on the mat today",
     "a cat sat on the mat"],
    ["the cat sat on the mat", "my dog sleeps on the sofa", "a bird sang in the tree",
     "the horse ran across the field"],
    ["stock markets fell sharply on monday", "she played the violin at the concert",
     "heavy rain flooded the valley roads", "quantum computers use entangled qubits"],
]
NGRAM_METRICS = ["distinct", "cosine", "entropy", "self-bleu", "distinct-2", "cosine-2"]
NEURAL_METRICS = ["sent-bert", "bertscore", "twmd"]


def py_oca(values, labels):
    """Tevet & Berant's OCA, transcribed: every metric value is a candidate threshold."""
    best = 0.0
    n = len(values)
    for th in values:
        acc = (sum(1 for x, y in zip(values, labels) if y == 1 and x <= th + 1e-5)
               + sum(1 for x, y in zip(values, labels) if y == 0 and x > th + 1e-5)) / n
        best = max(best, acc, 1 - acc)
    return best


def write_csv(path, sets, labels, label_name="temperature"):
    n = len(sets[0])
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sample_id", "context"] + [f"resp_{i}" for i in range(n)]
                   + ["label_value", "label_name", "metric_extra"])
        for k, (s, y) in enumerate(zip(sets, labels)):
            w.writerow([k, "ctx"] + list(s) + [y, label_name, 0.0])
    return str(path)


# ---------------------------------------------------------------------------------------
# reduction
# ---------------------------------------------------------------------------------------

def test_similarity_to_diversity_definition(rng, x64):
    sim = rng.normal(size=(3, 5, 5))
    sim = sim + np.swapaxes(sim, 1, 2)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 1, 0], [1, 1, 0, 0, 0]], bool)
    got = np.asarray(similarity_to_diversity(jnp.asarray(sim), sim_mask=jnp.asarray(mask)))
    for s, m, g in zip(sim, mask, got):
        idx = np.nonzero(m)[0]
        pairs = [s[i, j] for a, i in enumerate(idx) for j in idx[:a]]
        assert g == pytest.approx(-np.mean(pairs), abs=1e-12)


def test_batched_set_diversity_vmap_and_mask(rng):
    e = rng.normal(size=(4, 5, 8)).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0], [1, 0, 1, 0, 1]], bool)
    got = np.asarray(batched_set_diversity(jnp.asarray(e), cosine_similarity, x_mask=jnp.asarray(mask)))
    for k in range(4):
        one = float(set_diversity(jnp.asarray(e[k][mask[k]]), cosine_similarity))
        assert got[k] == pytest.approx(one, abs=1e-6)
    before = batched_set_diversity._cache_size()
    batched_set_diversity(jnp.asarray(e + 1), cosine_similarity, x_mask=jnp.asarray(mask))
    assert batched_set_diversity._cache_size() == before
    np.testing.assert_allclose(embedding_cosine_diversity(e, embeddings_mask=mask), got, atol=1e-6)
    with pytest.raises(ValueError, match="^embeddings_mask"):
        embedding_cosine_diversity(e, embeddings_mask=mask[:, :3])


def test_per_set_metrics_equal_single_set_functions():
    sets = [s for s in ORDERED_SETS[1:]] + [ORDERED_SETS[2][:2]]  # unequal set sizes
    sb = self_bleu_sets(sets, 4)
    for s, v in zip(sets, sb):
        assert v == pytest.approx(self_bleu_scores(s, 4).mean(), abs=1e-5)
    from jaxmetrics.diversity import averaged_distinct_n
    np.testing.assert_allclose(distinct_n_sets(sets), [averaged_distinct_n(s) for s in sets],
                               atol=1e-12)


# ---------------------------------------------------------------------------------------
# test statistics
# ---------------------------------------------------------------------------------------

def test_oca_matches_definition(x64):
    rng = np.random.default_rng(5)
    for _ in range(5):
        labels = rng.integers(0, 2, size=40)
        values = np.round(rng.normal(size=40) + labels * rng.uniform(0, 2), 1)  # ties
        assert optimal_classification_accuracy(values, labels) == pytest.approx(py_oca(values, labels))


def test_correlations_match_scipy(rng):
    p = rng.uniform(0.2, 1.2, size=30)
    v = p + rng.normal(scale=0.3, size=30)
    c = decoding_test(v, p)
    assert c.spearman == pytest.approx(stats.spearmanr(p, v).statistic)
    assert c.pearson == pytest.approx(stats.pearsonr(p, v).statistic)
    labels = (p > 0.7).astype(int)
    r = content_test(v, labels)
    assert r.oca == pytest.approx(py_oca(v, labels))
    assert r.spearman == pytest.approx(stats.spearmanr(labels, v).statistic)
    assert r.pearson == pytest.approx(stats.pearsonr(labels, v).statistic)
    # results are pytrees of Python floats, plain for JSON
    assert r.to_dict() == {"spearman": r.spearman, "pearson": r.pearson, "oca": r.oca}
    assert jax.tree.leaves(c) == [c.spearman, c.pearson]


def test_statistics_bad_input():
    with pytest.raises(ValueError, match="^values: constant"):
        decoding_test([1.0, 1.0, 1.0], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="^params: constant"):
        decoding_test([0.1, 0.2, 0.3], [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="^labels: constant"):
        content_test([0.1, 0.2, 0.3], [1, 1, 1])
    with pytest.raises(ValueError, match="^labels"):
        optimal_classification_accuracy([0.1, 0.2, 0.3], [0, 1, 2])
    with pytest.raises(ValueError, match="^values"):
        decoding_test([0.1, np.nan, 0.3], [1, 2, 3])
    with pytest.raises(ValueError, match="^values"):
        decoding_test([0.1, 0.2], [1, 2, 3])
    with pytest.raises(TypeError, match="^values"):
        decoding_test(["a", "b", "c"], [1, 2, 3])


def test_run_diversity_test_report_and_constant_metric():
    sets = ORDERED_SETS * 2
    labels = [0, 0, 1, 1] * 2
    report = run_diversity_test(sets, labels, "distinct,entropy-9")  # no 9-grams: constant 0
    assert report.test == "con" and report.num_sets == 8
    good, const = report.rows
    expect = content_test(compute_set_metrics(sets, ["distinct"])["distinct"], labels)
    assert (good.spearman, good.pearson, good.oca) == (expect.spearman, expect.pearson, expect.oca)
    assert good.error is None
    assert (const.spearman, const.pearson, const.oca) == (None, None, None)
    assert const.error.startswith("values: constant")
    assert "| entropy-9 | con | 8 | n/a | n/a | n/a |" in report.format_table()
    assert report.to_dict()["rows"][1]["error"] == const.error
    dec = run_diversity_test(sets, labels, ["distinct"], test="dec")
    assert dec["distinct"].oca is None and dec["distinct"].spearman == pytest.approx(expect.spearman)
    with pytest.raises(ValueError, match="^test"):
        run_diversity_test(sets, labels, ["distinct"], test="both")
    with pytest.raises(ValueError, match="^values"):
        run_diversity_test(None, labels, ["cosine"], values=compute_set_metrics(sets, ["distinct"]))


# ---------------------------------------------------------------------------------------
# metrics order synthetic sets
# ---------------------------------------------------------------------------------------

def test_ngram_metrics_order_known_diversity():
    vals = compute_set_metrics(ORDERED_SETS, NGRAM_METRICS)
    assert isinstance(vals, SetMetricValues) and vals.names == tuple(NGRAM_METRICS)
    assert vals.values.shape == (len(NGRAM_METRICS), len(ORDERED_SETS))
    for name in vals.names:
        v = vals[name]
        assert np.all(np.diff(v) > 0), (name, v)
    with pytest.raises(KeyError):
        vals["nope"]


def test_neural_metrics_order_known_diversity(minilm):
    vals = compute_set_metrics(ORDERED_SETS, NEURAL_METRICS, model=minilm)
    for name in vals.names:
        v = vals[name]
        assert np.all(np.diff(v) > 0), (name, v)
        assert v[0] == pytest.approx(-1.0, abs=1e-4)  # identical responses: similarity 1


def test_compute_set_metrics_bad_input():
    with pytest.raises(ValueError, match="^response_sets: set 0 has 1"):
        compute_set_metrics([["only one"]], ["distinct"])
    with pytest.raises(ValueError, match=r"^response_sets\[1\]: item 0 is empty"):
        compute_set_metrics([["a b", "c d"], ["", "c"]], ["distinct"])
    with pytest.raises(TypeError, match=r"^response_sets\[0\]: item 1"):
        compute_set_metrics([["a b", 7]], ["distinct"])
    with pytest.raises(TypeError, match="^response_sets"):
        compute_set_metrics([["a b", ["a", "b"]]], ["distinct"])
    with pytest.raises(ValueError, match="^metrics: unknown"):
        compute_set_metrics([["a b", "c d"]], ["nope"])
    with pytest.raises(ValueError, match="^model"):
        compute_set_metrics([["a b", "c d"]], ["sent-bert"])


# ---------------------------------------------------------------------------------------
# self-generating decoding test
# ---------------------------------------------------------------------------------------

def test_self_decoding_test_with_toy_generator():
    gen = unigram_generator(vocab_size=40, length=10, n_responses=5)
    temps = [0.3, 0.6, 1.0, 2.0, 4.0]
    data = self_decoding_test(gen, ["ctx"] * 6, temps, ["distinct", "cosine", "self-bleu"],
                              key=jax.random.key(0))
    assert len(data.response_sets) == 30 and data.params.tolist() == sorted(temps * 6)
    assert data.report.test == "dec" and data.report.num_sets == 30
    for r in data.report.rows:
        assert r.spearman > 0.8, r
    np.testing.assert_array_equal(data.values["distinct"], compute_set_metrics(data.response_sets,
                                                                              ["distinct"])["distinct"])
    # reproducible for a key
    again = self_decoding_test(gen, ["ctx"] * 6, temps, ["distinct"], key=jax.random.key(0))
    assert again.response_sets == data.response_sets
    with pytest.raises(TypeError, match="^key"):
        self_decoding_test(gen, ["c"], [1.0, 2.0], ["distinct"], key=0)
    with pytest.raises(ValueError, match="^params"):
        self_decoding_test(gen, ["c"], [1.0], ["distinct"], key=jax.random.key(0))
    with pytest.raises(ValueError, match="^generate"):
        self_decoding_test(lambda c, t, k: [], ["c"], [1.0, 2.0], ["distinct"], key=jax.random.key(0))


# ---------------------------------------------------------------------------------------
# CSV + CLI
# ---------------------------------------------------------------------------------------

def test_cli_decoding_test_with_plot(tmp_path, capsys):
    gen = unigram_generator(vocab_size=40, length=10, n_responses=5)
    temps = np.repeat([0.3, 0.8, 1.5, 3.0], 3)
    sets = [gen(["c"], t, jax.random.key(i))[0] for i, t in enumerate(temps)]
    path = write_csv(tmp_path / "dec.csv", sets, temps)
    data = read_mcdiv_csv(path)
    assert [list(s) for s in data.response_sets] == sets and data.label_name == "temperature"
    assert data.label_values.tolist() == temps.tolist() and jax.tree.leaves(data) == [data.label_values]
    png, js = tmp_path / "p.png", tmp_path / "r.json"
    rc = main(["diversity-test", path, "--metrics", "distinct,cosine", "--plot", str(png),
               "--json", str(js)])
    out = capsys.readouterr().out
    assert rc == 0 and "| distinct | dec | 12 |" in out and png.stat().st_size > 0
    report = json.loads(js.read_text())
    rows = report["rows"]
    assert report["test"] == "dec" and report["num_sets"] == 12
    expect = run_diversity_test(sets, temps, ["distinct", "cosine"], num_resamples=1000)   # the command's defaults
    assert isinstance(expect, DiversityTestReport) and expect.meta is not None
    assert [r["metric"] for r in rows] == ["distinct", "cosine"]
    assert [r["spearman"] for r in rows] == pytest.approx([r.spearman for r in expect.rows])
    assert rows == expect.to_dict()["rows"]
    assert all(r["spearman"] > 0.8 for r in rows)
    assert expect.format_table() in out


def test_cli_content_test_sent_bert(tmp_path, capsys, minilm_dir):
    sets = ORDERED_SETS * 2
    path = write_csv(tmp_path / "con.csv", sets, [0, 0, 1, 1] * 2, "content")
    rc = main(["diversity-test", path, "--metrics", "distinct,sent-bert", "--model", minilm_dir])
    out = capsys.readouterr().out
    assert rc == 0 and "oca" in out and "| sent-bert | con | 8 |" in out
    line = [l for l in out.splitlines() if l.startswith("| sent-bert")][0]
    assert line.split("|")[6].strip() == "1.000"  # perfectly separable → OCA 1 (then the meta-evaluation's columns)


def test_cli_and_csv_errors(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("sample_id,context,resp_0,label_value,label_name\n0,c,a,1,t\n")
    assert main(["diversity-test", str(bad)]) == 2
    assert "resp_0..resp_(n-1)" in capsys.readouterr().err
    empty = write_csv(tmp_path / "e.csv", [["a b", ""]], [1.0])
    assert main(["diversity-test", empty]) == 2
    assert "empty resp_1" in capsys.readouterr().err
    ok = write_csv(tmp_path / "ok.csv", [["a b", "c d"]] * 3, [0.1, 0.2, 0.3])
    assert main(["diversity-test", ok, "--metrics", "bogus"]) == 2
    assert "unknown metric" in capsys.readouterr().err
    assert main(["diversity-test", str(tmp_path / "missing.csv")]) == 2


def test_self_decoding_test_with_lm_sampler(tmp_path):
    """decTest end to end with a (tiny random) causal LM and the library's sampler: near-greedy
    sets repeat themselves, temperature 10 sets do not."""
    from jaxmetrics.diversity import lm_generator
    from jaxmetrics.models import load_model
    from jaxmetrics.testing import tiny_checkpoint
    lm = load_model(tiny_checkpoint("gpt2", tmp_path))
    gen = lm_generator(model=lm, n_responses=3, max_new_tokens=6, output="ids", eos_token_id=None)
    data = self_decoding_test(gen, ["hello there", "the cat"], [0.02, 10.0],
                              ["distinct"], key=jax.random.key(0))
    assert [len(s) for s in data.response_sets] == [3] * 4
    assert all(len(r.split()) == 6 for s in data.response_sets for r in s)
    d = data.values["distinct"]
    assert d[2:].min() > d[:2].max() and data.report["distinct"].spearman > 0.8
    with pytest.raises(ValueError, match="^parameter"):
        lm_generator(model=lm, parameter="top_k")
    with pytest.raises(TypeError, match="^model"):
        lm_generator(model=3)


@pytest.mark.integration
def test_eight_simulated_devices_match_one():
    """Per-set kernels with sets sharded over 8 devices, and Self-BLEU with generations
    sharded (its sorts are global: XLA inserts the collectives) equal the 1-device values."""
    import json
    import os
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import json, numpy as np, jax, jax.numpy as jnp
        from jaxmetrics.sharding import shard
        from jaxmetrics.diversity.encoding import encode_sets, encode_sequences
        from jaxmetrics.diversity.reduction import _cosine_div_kernel, _set_count_stats
        from jaxmetrics.diversity.selfbleu import self_bleu_stats
        assert len(jax.devices()) == 8
        rng = np.random.default_rng(0)
        sets = [[" ".join(f"w{t}" for t in rng.integers(0, 6, size=7)) for _ in range(4)]
                for _ in range(16)]
        enc = shard(encode_sets(sets))
        cos = _cosine_div_kernel(enc.ids, enc.lengths, enc.ids_mask, 1, 3)
        st = _set_count_stats(enc.ids, enc.lengths, enc.ids_mask, 3)
        gen = shard(encode_sequences([s for ss in sets for s in ss]))
        sb = self_bleu_stats(gen.ids, gen.lengths, 4)
        print(json.dumps({"cos": np.asarray(cos).tolist(), "u": np.asarray(st.unique).tolist(),
                          "e": np.asarray(st.entropy).tolist(), "num": np.asarray(sb.numerators).tolist(),
                          "r": np.asarray(sb.ref_len).tolist()}))
    """)
    env = dict(os.environ, XLA_FLAGS=os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])

    from jaxmetrics.diversity.encoding import encode_sequences, encode_sets
    from jaxmetrics.diversity.reduction import _cosine_div_kernel, _set_count_stats
    from jaxmetrics.diversity.selfbleu import self_bleu_stats
    rng = np.random.default_rng(0)
    sets = [[" ".join(f"w{t}" for t in rng.integers(0, 6, size=7)) for _ in range(4)]
            for _ in range(16)]
    enc = encode_sets(sets)
    np.testing.assert_allclose(got["cos"], np.asarray(_cosine_div_kernel(enc.ids, enc.lengths,
                                                                         enc.ids_mask, 1, 3)),
                               atol=1e-6)
    st = _set_count_stats(enc.ids, enc.lengths, enc.ids_mask, 3)
    assert got["u"] == np.asarray(st.unique).tolist()
    np.testing.assert_allclose(got["e"], np.asarray(st.entropy), atol=1e-6)
    gen = encode_sequences([s for ss in sets for s in ss])
    sb = self_bleu_stats(gen.ids, gen.lengths, 4)
    assert got["num"] == np.asarray(sb.numerators).tolist() and got["r"] == np.asarray(sb.ref_len).tolist()
