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
    assert res["mauve"] == ref.mauve and res["num_buckets"] == 10
    assert res["frontier_integral"] == ref.frontier_integral
    assert (d / "curve.png").stat().st_size > 1000
    assert f"MAUVE {ref.mauve:.4f}" in capsys.readouterr().out
    # the mauve-text setting names reach compute_mauve
    rc = main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"), "--json",
               str(d / "out2.json"), "--num-buckets", "5", "--kmeans-num-redo", "2", "--kmeans-max-iter", "50",
               "--mauve-scaling-factor", "2", "--divergence-curve-discretization-size", "9", "--seed", "3"])
    assert rc == 0
    ref2 = compute_mauve(p_features=p, q_features=q, num_buckets=5, kmeans_num_redo=2, kmeans_max_iter=50,
                         mauve_scaling_factor=2, divergence_curve_discretization_size=9, seed=3)
    assert json.loads((d / "out2.json").read_text())["mauve"] == ref2.mauve


def test_cli_seeds(npy_files):
    d, p, q = npy_files
    rc = main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"), "--num-seeds", "3",
               "--json", str(d / "seeds.json"), "--plot", str(d / "seeds.png")])
    assert rc == 0
    res = json.loads((d / "seeds.json").read_text())
    assert len(res["mauve_per_seed"]) == 3 and abs(res["mauve"] - np.mean(res["mauve_per_seed"])) < 1e-12
    assert res["seeds"] == [25, 26, 27]


def test_cli_text_files_use_the_model(npy_files, tmp_path, monkeypatch, capsys):
    """Text files (one per line, or .jsonl) are featurized with --model (a decoder: its last token)
    and their features go to compute_mauve."""
    seen = {}

    class Decoder:
        is_causal = True

    def fake_encode(texts, *, model, layers, pooling, max_length, batch_size, cache_dir, progress, desc):
        seen.setdefault("texts", []).append(list(texts))
        seen.update(model=model, max_length=max_length, cache_dir=cache_dir, progress=progress, pooling=pooling,
                    layers=layers)
        return SimpleNamespace(pooled=np.arange(len(texts) * 3, dtype=np.float32).reshape(1, -1, 3))

    def fake_compute_mauve(**kw):
        seen.update(kw)
        return compute_mauve(p_features=np.ones((20, 3)), q_features=np.ones((20, 3)))

    import jaxmetrics.mauve as M
    import jaxmetrics.models as MO

    monkeypatch.setattr(M, "compute_mauve", fake_compute_mauve)
    monkeypatch.setattr(MO, "load_model", lambda name: seen.setdefault("loaded", name) and Decoder())
    monkeypatch.setattr(MO, "encode", fake_encode)          # the CLI featurizes through the encoding engine
    h, m = tmp_path / "human.txt", tmp_path / "model.jsonl"
    h.write_text("a human text\nanother one\n")
    m.write_text('{"text": "a model text"}\n')
    assert main(["mauve", "--references", str(h), "--candidates", str(m), "--model", "tiny-dir",
                 "--max-text-length", "64", "--cache-dir", str(tmp_path / "c"), "--quiet"]) == 0
    assert seen["texts"] == [["a human text", "another one"], ["a model text"]]
    assert seen["loaded"] == "tiny-dir" and seen["max_length"] == 64 and seen["progress"] is False
    assert seen["pooling"] == "auto" and seen["layers"] == -1       # the engine resolves auto: last token
    assert seen["cache_dir"] == str(tmp_path / "c")
    assert seen["p_features"].shape == (2, 3) and seen["q_features"].shape == (1, 3) and "p_text" not in seen


def test_cli_errors(npy_files, tmp_path, monkeypatch, capsys):
    d, _, _ = npy_files
    with pytest.raises(SystemExit):  # both files are required
        main(["mauve", "--references", str(d / "p.npy")])
    capsys.readouterr()
    assert main(["mauve", "--references", str(d / "p.npy"), "--candidates", str(d / "q.npy"),
                 "--num-buckets", "1000"]) == 2
    assert "num_buckets" in capsys.readouterr().err
    assert main(["mauve", "--references", str(d / "missing.npy"), "--candidates", str(d / "q.npy")]) == 2
    assert "references" in capsys.readouterr().err
    h, m = tmp_path / "human.txt", tmp_path / "model.txt"
    h.write_text("a human text\nanother one\n")
    m.write_text("a model text\n")
    assert main(["mauve", "--references", str(h), "--candidates", str(d / "q.npy")]) == 2
    assert "candidates" in capsys.readouterr().err  # one text file and one feature file
    # text files while the featurizer is unavailable: a clear error, not a traceback
    monkeypatch.setitem(sys.modules, "jaxmetrics.models", types.ModuleType("jaxmetrics.models"))
    assert main(["mauve", "--references", str(h), "--candidates", str(m), "--model", "tiny"]) == 2
    assert "featuriz" in capsys.readouterr().err


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
