"""Correlation evaluation of similarity metrics (jaxmetrics.similarity.grouped / sweep,
similarity-eval CLI)."""
from __future__ import annotations

import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics.similarity import (CorrelationSweep, GroupedCorrelation, ScoredPairs, SimilaritySettings,
                                   compute_similarity, correlation_sweep, grouped_correlation, read_scored_pairs)
from jaxmetrics.similarity import sweep as sweep_mod

stats = pytest.importorskip("scipy.stats")

REFS = ["a cat sat on the mat", "the sun is hot today", "I like green tea", "dogs bark at night",
        "the old man walked home", "rain fell on the town"]
CANDS = ["a cat was on the mat", "the moon is cold", "tea is what I like", "ships sail far",
         "an old man went home", "the town was dry"]
HUMAN = [4.5, 2.0, 4.0, 0.5, 4.2, 1.0]
GROUPS = ["x", "x", "x", "y", "y", "y"]
GROUPS5 = ["x", "x", "y", "y", "y"]


# ------------------------------------------------------------------------ the protocol
def test_grouped_correlation_matches_scipy_and_hand_weighted_mean():
    rng = np.random.default_rng(3)
    sizes = {"sts12": 5, "sts13": 8, "sts14": 3}
    labels = np.repeat(list(sizes), list(sizes.values()))
    n = labels.size
    human = rng.integers(0, 5, n).astype(np.float64)              # ties in the human scores
    scores = np.round(human + rng.normal(0, 1.5, n), 1)
    scores[[0, 1]] = scores[2]                                      # ties in the scores
    scores2 = -scores + rng.normal(0, 0.3, n)
    out = grouped_correlation(np.stack([scores, scores2]), human, labels)
    assert isinstance(out, GroupedCorrelation)
    assert out.group_names == ("sts12", "sts13", "sts14")
    assert out.sizes.tolist() == [5, 8, 3]
    assert out.pearson.shape == (2, 3) and out.weighted_pearson.shape == (2,)
    for row, s in enumerate((scores, scores2)):
        ps, rs = [], []
        for g, name in enumerate(out.group_names):
            sel = labels == name
            ps.append(stats.pearsonr(s[sel], human[sel])[0])
            rs.append(stats.spearmanr(s[sel], human[sel])[0])
        np.testing.assert_allclose(np.asarray(out.pearson[row]), ps, atol=2e-6)
        np.testing.assert_allclose(np.asarray(out.spearman[row]), rs, atol=2e-6)
        by_hand_p = (5 * ps[0] + 8 * ps[1] + 3 * ps[2]) / 16
        by_hand_r = (5 * rs[0] + 8 * rs[1] + 3 * rs[2]) / 16
        assert float(out.weighted_pearson[row]) == pytest.approx(by_hand_p, abs=2e-6)
        assert float(out.weighted_spearman[row]) == pytest.approx(by_hand_r, abs=2e-6)
    assert float(out.weighted_pearson[1]) < 0 < float(out.weighted_pearson[0])


def test_grouped_correlation_ids_labels_single_group_and_jit():
    s = np.array([0.3, 0.1, 0.8, 0.5, 0.9, 0.2, 0.4])
    h = np.array([2.0, 1.0, 5.0, 3.0, 4.0, 1.0, 2.5])
    ids = np.array([1, 1, 1, 0, 0, 0, 0])
    a = grouped_correlation(s, h, ids)
    b = grouped_correlation(s, h, ["b", "b", "b", "a", "a", "a", "a"])
    np.testing.assert_allclose(a.pearson[::-1], b.pearson, atol=1e-7)   # b numbers groups by first appearance
    assert a.group_names == ("0", "1") and b.group_names == ("b", "a")
    one = grouped_correlation(s, h)
    assert one.group_names == ("all",)
    assert float(one.pearson[0]) == pytest.approx(stats.pearsonr(s, h)[0], abs=1e-6)
    assert float(one.weighted_spearman) == pytest.approx(stats.spearmanr(s, h)[0], abs=1e-6)
    jitted = jax.jit(lambda x, g: grouped_correlation(x, h, g, num_groups=2))(jnp.asarray(s), jnp.asarray(ids))
    np.testing.assert_allclose(jitted.weighted_pearson, a.weighted_pearson, atol=1e-6)


def test_grouped_correlation_degenerate_and_bad_inputs():
    h = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 3.0, 4.0])              # the shapes of the test above
    out = grouped_correlation(np.array([0.5, 0.5, 0.5, 0.1, 0.2, 0.3, 0.4]), h, [0, 0, 0, 1, 1, 1, 1])
    assert np.isnan(float(out.pearson[0])) and float(out.pearson[1]) == pytest.approx(1.0)
    assert np.isnan(float(out.weighted_pearson))                  # an undefined group is not hidden
    with pytest.raises(ValueError, match="group 'b' has 1 pair"):
        grouped_correlation(np.arange(4.0), np.arange(4.0), ["a", "a", "a", "b"])
    with pytest.raises(ValueError, match="human: contains NaN"):
        grouped_correlation(np.arange(3.0), np.array([1.0, np.nan, 2.0]))
    with pytest.raises(ValueError, match="human: expected shape"):
        grouped_correlation(np.arange(3.0), np.arange(4.0))


# ------------------------------------------------------------------------ TSV reader
def _write(tmp_path, text, name="pairs.tsv"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_read_scored_pairs_header_groups_and_blank_lines(tmp_path):
    with_header = _write(tmp_path, "sentence1\tsentence2\tscore\tgroup\nA cat.\tA dog.\t3.5\tsts12\n\n"
                                   "The sun.\tThe moon.\t1\tsts13\r\nHi.\tHello.\t4.25\tsts12\n")
    p = read_scored_pairs(with_header)
    assert isinstance(p, ScoredPairs) and len(p) == 3
    assert p.references == ("A cat.", "The sun.", "Hi.") and p.candidates == ("A dog.", "The moon.", "Hello.")
    assert p.human.tolist() == [3.5, 1.0, 4.25]
    assert p.group_names == ("sts12", "sts13") and p.groups.tolist() == [0, 1, 0]
    assert "ScoredPairs(human=f64[3]" in repr(p)
    no_header = read_scored_pairs(_write(tmp_path, "A cat.\tA dog.\t3.5\nThe sun.\tThe moon.\t1\n", "b.tsv"))
    assert no_header.group_names == ("all",) and no_header.human.tolist() == [3.5, 1.0]
    gold = read_scored_pairs(_write(tmp_path, "s1\ts2\tgold\nA.\tB.\t2\n", "c.tsv"))
    assert len(gold) == 1


@pytest.mark.parametrize("text,line,message", [
    ("A.\tB.\t1\nC.\tD.\nE.\tF.\t2\n", 2, "expected 3 or 4 tab-separated fields"),
    ("A.\tB.\t1\nC.\tD.\tnan\n", 2, "not finite"),
    ("A.\tB.\t1\n\nC.\tD.\tinf\n", 3, "not finite"),
    ("A.\tB.\tgood\n", 1, "is not a number"),
    ("s1\ts2\tscore\nA.\tB.\tx1\n", 2, "is not a number"),
    ("A.\t \t1\n", 1, "empty sentence2"),
    ("A.\tB.\t1\tg\nC.\tD.\t2\n", 2, "every row has a group column or none has"),
    ("A.\tB.\t1\t \n", 1, "empty group label"),
])
def test_read_scored_pairs_bad_rows_name_file_and_line(tmp_path, text, line, message):
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(f"{path}:{line}: ") + ".*" + re.escape(message)):
        read_scored_pairs(path)


def test_read_scored_pairs_bad_files(tmp_path):
    with pytest.raises(ValueError, match="no sentence pairs"):
        read_scored_pairs(_write(tmp_path, "s1\ts2\tscore\n"))
    with pytest.raises(ValueError, match="does not exist"):
        read_scored_pairs(tmp_path / "missing.tsv")
    bad = tmp_path / "latin1.tsv"
    bad.write_bytes(b"A.\tB.\t1\nCaf\xe9.\tD.\t2\n")
    with pytest.raises(ValueError, match=re.escape(f"{bad}:2: not valid UTF-8")):
        read_scored_pairs(bad)


# ------------------------------------------------------------------------ the sweep
def _count_forward_passes(monkeypatch) -> list:
    """Record every run of the encoding engine's forward-pass loop (one entry per run)."""
    from jaxmetrics.models import encoding

    calls = []
    real = encoding.run_encoder
    monkeypatch.setattr(encoding, "run_encoder", lambda *a, **k: calls.append(k.get("layers")) or real(*a, **k))
    return calls


@pytest.fixture(scope="module")
def tiny_bert(tiny_checkpoint_dir):
    from jaxmetrics.models import load_model

    path = tiny_checkpoint_dir("bert", num_layers=2, hidden=32)
    return path, load_model(path)


def test_sweep_equals_separate_calls_with_one_trace_and_one_forward_pass(tiny_bert, monkeypatch):
    path, lm = tiny_bert
    calls = _count_forward_passes(monkeypatch)
    refs, cands, human, groups = REFS[:5], CANDS[:5], HUMAN[:5], GROUPS5
    # pair_chunk=4: two chunks, the second padded
    kw = dict(references=refs, candidates=cands, human=human, groups=groups, model=lm, metric="twmd",
              num_iterations=[1, 3], settings=SimilaritySettings(center_batch_size=2, pair_chunk=4))
    before = sweep_mod._TRACES["twmd"]
    res = correlation_sweep(temperatures=[0.05, 0.2], layers=[1, 2], centering=["none", "batch"], **kw)
    # 16 settings, 2 chunks scored like compute_similarity (longest pairs first, each chunk padded
    # to its own length: 15 and 8 tokens here): one trace per chunk shape, shared by every setting
    # (fewer if an earlier test already compiled these shapes)
    traced = sweep_mod._TRACES["twmd"] - before
    assert traced <= 2
    assert len(calls) == 1                                          # both layers from one forward pass
    assert isinstance(res, CorrelationSweep)
    assert len(res) == 16 and res.scores.shape == (16, 5)
    assert res.metric == ("twmd",) * 16 and res.layer[:8] == (1,) * 8 and res.centering[:4] == ("none",) * 4
    assert res.num_iterations[:4] == (1, 1, 3, 3) and res.temperature[:2] == (0.05, 0.2)
    assert res.group_names == ("x", "y") and res.group_sizes == (2, 3)
    assert len(set(map(tuple, np.round(res.scores, 5)))) == 16      # the settings really differ
    for i, row in enumerate(res.rows()):
        ref = compute_similarity(references=refs, candidates=cands, model=lm, metric="twmd", layer=row.layer,
                                 centering=row.centering, temperature=row.temperature,
                                 num_iterations=row.num_iterations, center_batch_size=2, groups=groups,
                                 max_length=64)
        np.testing.assert_allclose(res.scores[i], ref.f1, atol=2e-6, err_msg=str(row))
        if i % 5 == 0:
            # correlations of the sweep's own scores: a Pearson over 3 items magnifies the 2e-6 score
            # noise above ~3e-5, so comparing against ref.f1's correlation would test float noise
            direct = grouped_correlation(res.scores[i], human, groups)
            np.testing.assert_allclose(res.pearson[i], direct.pearson, atol=1e-6, err_msg=str(row))
            assert float(res.weighted_pearson[i]) == pytest.approx(float(direct.weighted_pearson), abs=1e-6)

    # new temperatures, centerings and layers of the same shapes: no new trace
    calls.clear()
    other = correlation_sweep(temperatures=[0.3, 0.7], layers=[0, 1], centering=["corpus", "sentence"], **kw)
    assert sweep_mod._TRACES["twmd"] - before == traced
    assert len(calls) == 1 and len(other) == 16
    assert not np.allclose(other.scores, res.scores)

    best = res.best()
    assert best.weighted_pearson == pytest.approx(float(np.nanmax(res.weighted_pearson)))
    assert res.best("weighted_spearman").weighted_spearman == pytest.approx(
        float(np.nanmax(res.weighted_spearman)))
    d = res.to_dict()
    assert d["metric"][0] == "twmd" and len(d["weighted_pearson"]) == 16
    json.dumps(d)
    assert len(repr(res)) < 600
    table = res.table()
    assert table.count("\n") == 16 and table.count("*") == 1
    csv_text = res.to_csv()
    assert csv_text.count("\n") == 17 and csv_text.startswith("metric,layer,centering,num_iterations")


@pytest.mark.slow
def test_sweep_other_metrics_and_scores_equal_compute_similarity(tiny_bert):
    path, lm = tiny_bert
    res = correlation_sweep(references=REFS, candidates=CANDS, human=HUMAN, groups=GROUPS, model=lm,
                            metric=["trwmd", "trwmd_lse", "cka", "cosine", "rwmd", "bertscore"],
                            temperatures=[0.05, 0.2], layers=[1, 2], centering=["none", "batch"],
                            settings=SimilaritySettings(center_batch_size=4, pair_chunk=4), score="precision")
    assert len(res) == 8 + 8 + 4 * 4
    assert res.num_iterations == (None,) * len(res)
    assert res.temperature[res.metric.index("cka")] is None
    for i, row in enumerate(res.rows()):
        ref = compute_similarity(references=REFS, candidates=CANDS, model=lm, metric=row.metric, layer=row.layer,
                                 centering=row.centering, temperature=row.temperature, center_batch_size=4,
                                 groups=GROUPS, max_length=64)
        np.testing.assert_allclose(res.scores[i], ref.precision, atol=2e-6, err_msg=str(row))


def test_sweep_validates_before_loading_the_model():
    bad_model = "/nonexistent/encoder"
    kw = dict(references=REFS, candidates=CANDS, human=HUMAN, model=bad_model)
    with pytest.raises(ValueError, match="temperatures"):
        correlation_sweep(temperatures=[0.1, -1.0], **kw)
    with pytest.raises(ValueError, match="metric"):
        correlation_sweep(metric=["twmd", "nope"], **kw)
    with pytest.raises(ValueError, match="centering"):
        correlation_sweep(centering="mean", **kw)
    with pytest.raises(ValueError, match="num_iterations"):
        correlation_sweep(num_iterations=[1, 0], **kw)
    with pytest.raises(ValueError, match="score"):
        correlation_sweep(score="bleu", **kw)
    with pytest.raises(ValueError, match="group 'z' has 1 pair"):
        correlation_sweep(groups=["x"] * 5 + ["z"], **{**kw})
    with pytest.raises(ValueError, match="human"):
        correlation_sweep(references=REFS, candidates=CANDS, human=HUMAN[:-1], model=bad_model)
    with pytest.raises(ValueError, match="not both"):
        correlation_sweep(pairs=ScoredPairs(np.ones(1), np.zeros(1, np.int32), references=("a",),
                                            candidates=("b",), group_names=("all",)), **kw)


# ------------------------------------------------------------------------ command line
def test_cli_bad_input_exits_2_before_work(tmp_path, capsys, monkeypatch):
    import jaxmetrics.models as models
    import jaxmetrics.models.loader as loader
    from jaxmetrics.cli import main

    def forbid(*_, **__):
        raise AssertionError("an expensive step ran before the argument checks")

    import jaxmetrics.similarity as similarity

    for mod, name in ((sweep_mod, "correlation_sweep"), (similarity, "correlation_sweep"), (models, "resolve_model"),
                      (loader, "load_model")):
        monkeypatch.setattr(mod, name, forbid)
    good = _write(tmp_path, "A cat.\tA dog.\t3\nThe sun.\tThe moon.\t1\nHi.\tHello.\t4\n", "good.tsv")
    bad = _write(tmp_path, "A cat.\tA dog.\t3\nThe sun.\tThe moon.\tNaN\n", "bad.tsv")
    lonely = _write(tmp_path, "A.\tB.\t3\tg1\nC.\tD.\t1\tg1\nE.\tF.\t2\tg2\n", "lonely.tsv")
    model = str(tmp_path / "no-model")                               # loading it would fail differently
    cases = [
        ([bad], f"{bad}:2: score 'NaN' is not finite"),
        ([lonely], "group 'g2' has 1 pair(s)"),
        ([str(tmp_path / "missing.tsv")], "does not exist"),
        ([good, "--grid", "T=0.1,x"], "'x' is not a number"),
        ([good, "--grid", "Q=1"], "--grid: expected AXIS=VALUES"),
        ([good, "--grid", "T=0.1", "--temperatures", "0.2"], "give it once"),
        ([good, "--iterations", "0"], "--iterations: values must be >= 1"),
        ([good, "--layers", "6-4"], "empty range"),
        ([good, "--centering", "none,mean"], "'mean' is not one of"),
        ([good, "--metric", "bleu"], "'bleu' is not one of"),
        ([good, "--json", str(tmp_path / "nodir" / "out.json")], "does not exist"),
        ([good, "--batch-size", "0"], "--batch-size"),
        ([good, "--plot", str(tmp_path / "out.xyz")], "matplotlib cannot write 'xyz'"),
    ]
    for extra, message in cases:
        rc = main(["similarity-eval", *extra[:1], "--model", model, *extra[1:], "--quiet"])
        err = capsys.readouterr().err
        assert rc == 2, (extra, err)
        assert message in err, (extra, err)
        assert "no-model" not in err, (extra, err)                  # failed before loading the model


def test_cli_small_run_writes_json_and_csv(tiny_bert, tmp_path, capsys):
    from jaxmetrics.cli import main

    path, _ = tiny_bert
    tsv = "sentence1\tsentence2\tscore\tgroup\n" + "".join(
        f"{r}\t{c}\t{h}\t{g}\n" for r, c, h, g in zip(REFS[:5], CANDS[:5], HUMAN[:5], GROUPS5))
    pairs = _write(tmp_path, tsv)
    out_json, out_csv = tmp_path / "out.json", tmp_path / "out.csv"
    # the shapes of the sweep test above (its compiled program is re-used)
    rc = main(["similarity-eval", pairs, "--model", path, "--grid", "T=0.05,0.2", "--iterations", "1,3",
               "--layers", "1-2", "--centering", "none,batch", "--center-batch-size", "2", "--pair-chunk", "4",
               "--score", "precision", "--json", str(out_json), "--csv", str(out_csv),
               "--plot", str(tmp_path / "out.png"), "--quiet"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "5 pairs in 2 group(s) (x: 2, y: 3)" in captured.out and "best by weighted_pearson" in captured.out
    doc = json.loads(out_json.read_text())
    assert doc["num_pairs"] == 5 and doc["group_names"] == ["x", "y"] and len(doc["rows"]) == 16
    assert {r["temperature"] for r in doc["rows"]} == {0.05, 0.2}
    assert {r["layer"] for r in doc["rows"]} == {1, 2} and {r["num_iterations"] for r in doc["rows"]} == {1, 3}
    assert doc["best"]["weighted_pearson"] == max(r["weighted_pearson"] for r in doc["rows"])
    assert (tmp_path / "out.png").read_bytes()[:4] == b"\x89PNG"
    lines = out_csv.read_text().splitlines()
    assert lines[0].startswith("metric,layer,centering,num_iterations,temperature,score,pearson[x],pearson[y]")
    assert len(lines) == 17 and lines[1].startswith("twmd,1,none,1,0.05,precision,")
    api = correlation_sweep(pairs=read_scored_pairs(pairs), model=path, temperatures=[0.05, 0.2],
                            num_iterations=[1, 3], layers=[1, 2], centering=["none", "batch"],
                            settings=SimilaritySettings(center_batch_size=2, pair_chunk=4), score="precision")
    np.testing.assert_allclose([r["weighted_pearson"] for r in doc["rows"]], api.weighted_pearson, atol=1e-6)


# ------------------------------------------------------------------------ real encoder, real text
def synthetic_pairs(num_pairs: int = 60, seed: int = 0):
    """The docs' worked example: ``jaxmetrics.data.synthetic_scored_pairs`` (also written as
    ``pairs.tsv`` by ``python -m jaxmetrics.data inputs``)."""
    from jaxmetrics.data import synthetic_scored_pairs

    return synthetic_scored_pairs(num_pairs, seed)


@pytest.mark.slow
def test_minilm_grid_equals_compute_similarity(minilm_dir):
    from jaxmetrics.models import load_model

    lm = load_model(minilm_dir)
    res = correlation_sweep(references=REFS, candidates=CANDS, human=HUMAN, groups=GROUPS, model=lm,
                            metric="twmd", temperatures=[0.02, 0.1], num_iterations=[1, 5], layers=[4, 6],
                            centering=["none", "batch"], settings=SimilaritySettings(center_batch_size=4))
    assert len(res) == 16
    for i, row in enumerate(res.rows()):
        ref = compute_similarity(references=REFS, candidates=CANDS, model=lm, metric="twmd", layer=row.layer,
                                 centering=row.centering, temperature=row.temperature,
                                 num_iterations=row.num_iterations, center_batch_size=4, groups=GROUPS)
        np.testing.assert_allclose(res.scores[i], ref.f1, atol=2e-6, err_msg=str(row))


@pytest.mark.slow
def test_minilm_synthetic_pairs_worked_example(minilm_dir, tmp_path, capsys):
    """The worked example of docs/analyses.md (printed with -s)."""
    from jaxmetrics.cli import main

    rows = synthetic_pairs()
    assert len(rows) == 60 and sorted({r[3] for r in rows}) == ["long", "short"]
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{a}\t{b}\t{c:.4f}\t{d}\n" for a, b, c, d in rows), encoding="utf-8")
    rc = main(["similarity-eval", str(tsv), "--model", minilm_dir, "--metric", "twmd,bertscore",
               "--grid", "T=0.02,0.05,0.1", "--iterations", "1,5", "--layers", "4,6", "--centering", "none,batch",
               "--csv", str(tmp_path / "out.csv"), "--quiet"])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert rc == 0
    lines = (tmp_path / "out.csv").read_text().splitlines()
    assert len(lines) == 1 + 24 + 4
    weighted = {tuple(line.split(",")[:5]): float(line.split(",")[8]) for line in lines[1:]}
    # replacing words lowers every metric's score: strong positive correlation everywhere
    assert min(weighted.values()) > 0.5
    # the numbers printed in docs/analyses.md
    assert weighted[("bertscore", "4", "batch", "", "")] == pytest.approx(0.967, abs=1e-3)
    assert weighted[("twmd", "4", "batch", "5", "0.1")] == pytest.approx(0.965, abs=1e-3)
    assert weighted[("twmd", "6", "none", "1", "0.02")] == pytest.approx(0.945, abs=1e-3)
    assert "best by weighted_pearson: metric=bertscore, layer=4, centering=batch" in out


def _demo_pairs(num_pairs: int = 8):
    """Real text: short sentences of the bundled demo text, paired off (references, candidates)."""
    from jaxmetrics.data import load_shakespeare

    texts = [t for t in load_shakespeare("heldout", limit=300, min_words=5) if len(t.split()) <= 25]
    texts = texts[:2 * num_pairs]
    assert len(texts) == 2 * num_pairs
    return texts[:num_pairs], texts[num_pairs:]


def test_minilm_real_text_every_setting_equals_compute_similarity_one_forward_pass(minilm, monkeypatch):
    refs, cands = _demo_pairs(8)
    human = np.random.default_rng(0).uniform(0, 5, len(refs))
    groups = ["a"] * 4 + ["b"] * 4
    calls = _count_forward_passes(monkeypatch)
    res = correlation_sweep(references=refs, candidates=cands, human=human, groups=groups, model=minilm,
                            metric=["bertscore", "twmd"], layers=[3, 6], centering=["none", "batch"],
                            temperatures=[0.05, 0.1], settings=SimilaritySettings(center_batch_size=3, pair_chunk=3))
    assert calls == [(3, 6)]                               # every layer from one run of the engine
    assert len(res) == 4 + 8 and res.metric.count("bertscore") == 4
    assert len(set(map(tuple, np.round(res.scores, 5)))) == len(res)     # the settings really differ
    calls.clear()
    for i, row in enumerate(res.rows()):
        ref = compute_similarity(references=refs, candidates=cands, model=minilm, metric=row.metric,
                                 layer=row.layer, centering=row.centering, temperature=row.temperature,
                                 center_batch_size=3, groups=groups)
        np.testing.assert_allclose(res.scores[i], ref.f1, atol=1e-5, err_msg=str(row))
    assert len(calls) == len(res)                          # compute_similarity: one run per call
