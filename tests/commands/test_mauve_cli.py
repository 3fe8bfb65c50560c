"""``jaxmetrics mauve`` through jaxmetrics.cli.main, and the divergence-curve plot."""
from __future__ import annotations

import json
import sys
import types

from types import SimpleNamespace

import numpy as np
import pytest

from jaxmetrics.cli import main
from jaxmetrics.mauve import compute_mauve, mauve_from_histograms
from jaxmetrics.mauve.plot import plot_divergence_curves


@pytest.fixture(scope="module")
def npy_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("mauve_cli")
    rng = np.random.default_rng(0)
    p = rng.normal(size=(100, 10)).astype(np.float32)
    q = (rng.normal(size=(100, 10)) + 0.3).astype(np.float32)
    np.save(d / "p.npy", p)
    np.save(d / "q.npy", q)
    return d, p, q


def test_cli_features_json_and_plot(npy_files, capsys):
    d, p, q = npy_files
    rc = main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"),
               "--plot", str(d / "curve.png"), "--json", str(d / "out.json")])
    assert rc == 0
    res = json.loads((d / "out.json").read_text())
    ref = compute_mauve(p_features=p, q_features=q)  # references are P, candidates Q
    assert res["mauve"] == ref.mauve and res["num_buckets"] == 10 and res["mauve_std"] is None
    assert res["frontier_integral"] == ref.frontier_integral and res["seeds"] == [25]
    assert (d / "curve.png").stat().st_size > 1000
    assert f"MAUVE {ref.mauve:.4f}" in capsys.readouterr().out
    # the mauve-text setting names reach compute_mauve
    rc = main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"), "--json",
               str(d / "out2.json"), "--num-buckets", "5", "--kmeans-num-redo", "2", "--kmeans-max-iter", "50",
               "--mauve-scaling-factor", "2", "--divergence-curve-discretization-size", "9", "--seeds", "3"])
    assert rc == 0
    ref2 = compute_mauve(p_features=p, q_features=q, num_buckets=5, kmeans_num_redo=2, kmeans_max_iter=50,
                         mauve_scaling_factor=2, divergence_curve_discretization_size=9, seed=3)
    assert json.loads((d / "out2.json").read_text())["mauve"] == ref2.mauve


def test_cli_json_carries_curve_sizes_seeds_and_settings(npy_files):
    """--json is the whole record: curves, both sample sizes, k, the seeds and every setting."""
    d, p, q = npy_files
    out = d / "full.json"
    assert main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"), "--json", str(out),
                 "--num-buckets", "8", "--kmeans-explained-var", "0.8", "--kmeans-num-redo", "3",
                 "--kmeans-max-iter", "40", "--mauve-scaling-factor", "4", "--pca-max-data", "150",
                 "--divergence-curve-discretization-size", "11", "--quiet"]) == 0
    res = json.loads(out.read_text())
    ref = compute_mauve(p_features=p, q_features=q, num_buckets=8, kmeans_explained_var=0.8, kmeans_num_redo=3,
                        kmeans_max_iter=40, mauve_scaling_factor=4, pca_max_data=150,
                        divergence_curve_discretization_size=11, seed=25)
    assert res["mauve"] == ref.mauve and res["num_buckets"] == 8
    np.testing.assert_array_equal(np.asarray(res["divergence_curve"]), ref.divergence_curve[None])  # [S, m + 2, 2]
    assert (res["num_references"], res["num_candidates"]) == (100, 100) and res["seeds"] == [25]
    assert res["settings"] == dict(inputs="features", model=None, dtype=None, pooling=None, max_length=None,
                                   batch_size=None,
                                   num_buckets=8, kmeans_explained_var=0.8, kmeans_num_redo=3, kmeans_max_iter=40,
                                   mauve_scaling_factor=4.0, seeds=[25], quantizer="kmeans", scoring="mauve-text",
                                   pca_max_data=150, divergence_curve_discretization_size=11,
                                   estimator="quantized", divergence="kl")


def test_cli_seeds(npy_files):
    d, p, q = npy_files
    rc = main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"), "--seeds", "4", "9", "7",
               "--json", str(d / "seeds.json"), "--plot", str(d / "seeds.png")])
    assert rc == 0
    res = json.loads((d / "seeds.json").read_text())
    assert res["seeds"] == [4, 9, 7] and res["settings"]["seeds"] == [4, 9, 7]
    assert len(res["mauve_per_seed"]) == 3 and abs(res["mauve"] - np.mean(res["mauve_per_seed"])) < 1e-12
    assert res["mauve_std"] == pytest.approx(np.std(res["mauve_per_seed"], ddof=1))
    for s, v, c in zip((4, 9, 7), res["mauve_per_seed"], res["divergence_curve"]):
        one = compute_mauve(p_features=p, q_features=q, seed=s)
        assert v == pytest.approx(one.mauve, abs=1e-12)
        np.testing.assert_allclose(c, one.divergence_curve, atol=1e-12)


def test_cli_text_files_use_the_model(npy_files, tmp_path, monkeypatch, capsys):
    """Text files (one per line, or .jsonl) are featurized with --model (a decoder: its last token),
    the pooling is printed on stderr and recorded in --json."""
    seen = {}

    class Decoder:
        is_causal = True
        max_positions = 32

    def fake_encode(texts, *, model, layers, pooling, max_length, batch_size, cache_dir, progress, desc):
        seen.setdefault("texts", []).append(list(texts))
        seen.update(model=model, max_length=max_length, cache_dir=cache_dir, progress=progress, pooling=pooling,
                    layers=layers)
        rng = np.random.default_rng(len(seen["texts"]))
        return SimpleNamespace(pooled=rng.normal(size=(1, len(texts), 3)).astype(np.float32))

    import jaxmetrics.models as MO

    monkeypatch.setattr(MO, "load_model", lambda name, dtype: seen.setdefault("loaded", (name, dtype)) and Decoder())
    monkeypatch.setattr(MO, "resolve_model", lambda model, dtype=None: model)   # the fake is a loaded model
    monkeypatch.setattr(MO, "encode", fake_encode)          # the library featurizes through the encoding engine
    h, m = tmp_path / "human.txt", tmp_path / "model.jsonl"
    h.write_text("".join(f"a human text {i}\n" for i in range(20)) + "\n")
    m.write_text("".join(f'{{"text": "a model text {i}"}}\n' for i in range(18)))
    out = tmp_path / "t.json"
    assert main(["mauve", "--references", str(h), "--candidates", str(m), "--model", "tiny-dir",
                 "--max-length", "16", "--cache-dir", str(tmp_path / "c"), "--quiet", "--json", str(out),
                 "--empty", "drop"]) == 0     # the blank line 21 left out, and said
    assert seen["texts"][0][:2] == ["a human text 0", "a human text 1"] and len(seen["texts"][1]) == 18
    assert seen["loaded"] == ("tiny-dir", "float32") and seen["max_length"] == 16 and seen["progress"] is False
    assert seen["pooling"] == "last" and seen["layers"] == -1       # auto resolved: last token for a decoder
    assert seen["cache_dir"] == str(tmp_path / "c")
    err = capsys.readouterr().err
    assert "references: dropped 1 empty text" in err and "line 21) (--empty drop)" in err
    assert "featurizing with tiny-dir: last pooling (--pooling auto), max length 16 tokens" in err
    res = json.loads(out.read_text())
    assert (res["num_references"], res["num_candidates"]) == (20, 18)
    assert res["settings"]["pooling"] == "last" and res["settings"]["model"] == "tiny-dir"
    assert res["settings"]["max_length"] == 16 and res["settings"]["inputs"] == "text"
    # no --max-length: mauve-text's 1024, capped at the model's 32 positions
    assert main(["mauve", "--references", str(h), "--candidates", str(m), "--model", "tiny-dir", "--quiet",
                 "--pooling", "mean", "--json", str(out), "--empty", "drop"]) == 0
    assert seen["max_length"] == 32 and seen["pooling"] == "mean"
    assert json.loads(out.read_text())["settings"]["pooling"] == "mean"


def test_cli_errors(npy_files, tmp_path, monkeypatch, capsys):
    d, _, _ = npy_files
    with pytest.raises(SystemExit):  # both files are required
        main(["mauve", "--references", str(d / "p.npy")])
    capsys.readouterr()
    assert main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"),
                 "--num-buckets", "1000"]) == 2
    assert "--num-buckets: 1000 buckets but --references has only 100" in capsys.readouterr().err
    assert main(["mauve", "--references", str(d / "missing.npy"), "--candidates", str(d / "q.npy")]) == 2
    assert "references" in capsys.readouterr().err
    h, m = tmp_path / "human.txt", tmp_path / "model.txt"
    h.write_text("a human text\nanother one\n")
    m.write_text("a model text\nand one more\n")
    assert main(["mauve", "--references", str(h), "--candidates", str(d / "q.npy")]) == 2
    assert "candidates" in capsys.readouterr().err  # one text file and one feature file
    # text files while the featurizer is unavailable: a clear error, not a traceback
    monkeypatch.setitem(sys.modules, "jaxmetrics.models", types.ModuleType("jaxmetrics.models"))
    assert main(["mauve", "--references", str(h), "--candidates", str(m), "--model", "tiny"]) == 2
    err = capsys.readouterr().err
    assert "featuriz" in err and "Traceback" not in err


def test_plot_several_curves(tmp_path):
    r1 = mauve_from_histograms(np.array([0.7, 0.3]), np.array([0.4, 0.6]))
    r2 = mauve_from_histograms(np.array([0.9, 0.1]), np.array([0.1, 0.9]))
    fig = plot_divergence_curves([r1, np.asarray(r2.divergence_curve)], tmp_path / "c.png", labels=["a", "b"])
    ax = fig.axes[0]
    assert len(ax.lines) == 2
    np.testing.assert_allclose(ax.lines[0].get_xdata(), np.asarray(r1.divergence_curve)[:, 0])
    assert "MAUVE" in ax.get_legend().get_texts()[0].get_text()
    assert (tmp_path / "c.png").exists()
    with pytest.raises(ValueError, match="^labels"):
        plot_divergence_curves([r1, r2], labels=["only one"])
    with pytest.raises(ValueError, match="^curves"):
        plot_divergence_curves([np.zeros((3, 3))])


def test_cli_explain_ranks_generations_and_human_texts(tmp_path, monkeypatch, capsys):
    """--explain N prints the N most harmful candidates and least covered references with their
    texts (the ranking of mauve_attribution over five seeds from --seeds) and writes them in --json."""
    from jaxmetrics.mauve import mauve_attribution

    rng = np.random.default_rng(3)
    p = rng.normal(size=(120, 6)).astype(np.float32)
    q = rng.normal(size=(120, 6)).astype(np.float32)
    q[5:15] += 4.0                                   # ten generations unlike every human text
    vectors = {"human": p, "model": q}

    class Encoder:
        is_causal = False
        max_positions = 32

    def fake_encode(texts, *, model, layers, pooling, max_length, batch_size, cache_dir, progress, desc):
        side = texts[0].split()[0]
        return SimpleNamespace(pooled=vectors[side][None, :len(texts)])

    import jaxmetrics.models as MO

    monkeypatch.setattr(MO, "load_model", lambda name, dtype: Encoder())
    monkeypatch.setattr(MO, "resolve_model", lambda model, dtype=None: model)   # the fake is a loaded model
    monkeypatch.setattr(MO, "encode", fake_encode)
    h, m = tmp_path / "human.txt", tmp_path / "model.txt"
    h.write_text("".join(f"human text {i}\n" for i in range(120)))
    m.write_text("".join(f"model text {i}\n" for i in range(120)))
    out = tmp_path / "e.json"
    assert main(["mauve", "--references", str(h), "--candidates", str(m), "--model", "enc", "--quiet",
                 "--explain", "10", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Generations that pull MAUVE down most" in printed and "Human texts the model covers least" in printed
    res = json.loads(out.read_text())["explain"]
    assert res["seeds"] == [25, 26, 27, 28, 29] and len(res["candidates"]) == 10 and len(res["references"]) == 10
    ref = mauve_attribution(references=p, candidates=q, seeds=(25, 26, 27, 28, 29))
    assert [r["index"] for r in res["candidates"]] == ref.most_harmful(10).tolist()
    assert [r["index"] for r in res["references"]] == ref.least_covered(10).tolist()
    assert all(r["text"] == f"model text {r['index']}" for r in res["candidates"])
    first = res["candidates"][0]
    assert first["line"] == first["index"] + 1                    # the line of model.txt, from 1
    assert f"line {first['line']} " in printed and f"model text {first['index']}" in printed
    assert res["mauve_star"] == pytest.approx(float(ref.mauve), abs=1e-6)
    # .npy features: indices and influences, no texts; bad N named before any work
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "q.npy", q)
    assert main(["mauve", "--references", str(tmp_path / "p.npy"), "--candidates", str(tmp_path / "q.npy"),
                 "--seeds", "1", "2", "--explain", "3", "--json", str(out)]) == 0
    res = json.loads(out.read_text())["explain"]
    assert res["seeds"] == [1, 2] and "text" not in res["candidates"][0]
    assert main(["mauve", "--references", str(tmp_path / "p.npy"), "--candidates", str(tmp_path / "q.npy"),
                 "--explain", "0"]) == 2
    assert "--explain" in capsys.readouterr().err
