"""``jaxmetrics mauve-sweep --estimator`` on small ``.npy`` features: a density-ratio estimator's
sweep (``--over n`` or ``c``) equals ``mauve_sweep(..., estimator=)`` on the same arrays, its
rows have no k (``-`` in the table, null in ``--json``, empty in ``--csv``), and the settings it
cannot take (``--over k/quantizer/length``, the k-means options, too few rows) exit 2 naming the
options before any model is loaded."""
from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from jaxmetrics.cli import main
from jaxmetrics.mauve import mauve_sweep


@pytest.fixture(scope="module")
def feats(tmp_path_factory):
    d = tmp_path_factory.mktemp("mauve_sweep_cli_estimators")
    rng = np.random.default_rng(0)
    p = rng.normal(size=(100, 4)).astype(np.float32)
    a = (rng.normal(size=(100, 4)) + 0.5).astype(np.float32)
    b = (rng.normal(size=(80, 4)) + 1.5).astype(np.float32)
    for name, x in (("h", p), ("a", a), ("b", b)):
        np.save(d / f"{name}.npy", x)
    return d, p, a, b


# no_model: tests/conftest.py


def _code(argv):
    try:
        return main(argv)
    except SystemExit as e:  # argparse's own errors exit 2 too
        return e.code


def _fails(argv, capsys, *names):
    code = _code(argv)
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    assert "Traceback" not in err and "was loaded" not in err, (argv, err)
    for name in names:
        assert name in err, (argv, err)


def _sweep(d, *extra):
    return main(["mauve-sweep", "--references", str(d / "h.npy"), "--quiet", *extra])


def test_knn_over_n_equals_mauve_sweep(feats, capsys):
    d, p, a, b = feats
    out = d / "knn.json"
    assert _sweep(d, "--candidates", str(d / "a.npy"), str(d / "b.npy"), "--over", "n", "--values", "40,80",
                  "--estimator", "knn", "--seeds", "1", "2", "--json", str(out), "--csv", str(d / "knn.csv")) == 0
    printed = capsys.readouterr().out
    ref = mauve_sweep(references=p, candidates={"a": a, "b": b}, over="n", values=(40, 80), seeds=(1, 2),
                      estimator="knn")
    rec = json.loads(out.read_text())
    np.testing.assert_allclose(np.asarray(rec["sweep"]["mauve"]), np.asarray(ref.mauve), rtol=0, atol=1e-12)
    assert [r["mauve_mean"] for r in rec["rows"]] == pytest.approx([r.mauve_mean for r in ref.rows()], abs=1e-12)
    assert [r["frontier_integral_mean"] for r in rec["rows"]] == pytest.approx(
        [r.frontier_integral_mean for r in ref.rows()], abs=1e-12)
    assert all(r["num_buckets"] is None and r["mauve_star_mean"] is None for r in rec["rows"])
    assert [(r["value"], r["system"], r["num_candidates"]) for r in rec["rows"]] == [
        (40, "a", 40), (40, "b", 40), (80, "a", 80), (80, "b", 80)]
    assert rec["sweep"]["num_buckets"] is None and rec["sweep"]["mauve_star"] is None
    assert rec["signature"] == ref.signature and "estimator:knn" in rec["signature"]
    conf = rec["settings"]
    assert conf["estimator"] == "knn" and conf["over"] == "n" and conf["values"] == [40, 80]
    assert conf["num_buckets"] is None and conf["kmeans_num_redo"] is None and conf["quantizer"] is None
    assert "paired_differences" in rec and "rank_agreement" in rec
    with open(d / "knn.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and all(r["num_buckets"] == "" and r["mauve_star_mean"] == "" for r in rows)
    assert "estimator knn" in printed
    line = next(x for x in printed.splitlines() if x.split()[:3] == ["n", "40", "a"])
    assert line.split()[-2:] == ["-", "40"] and f"{ref.rows()[0].mauve_mean:.4f} ± " in line


def test_gaussian_over_c_equals_mauve_sweep(feats, capsys):
    d, p, a, _ = feats
    out = d / "g.json"
    assert _sweep(d, "--candidates", str(d / "a.npy"), "--over", "c", "--values", "1", "5", "--estimator",
                  "gaussian", "--seeds", "3", "--json", str(out)) == 0
    capsys.readouterr()
    ref = mauve_sweep(references=p, candidates={"a": a}, over="c", values=(1.0, 5.0), seeds=(3,),
                      estimator="gaussian")
    rec = json.loads(out.read_text())
    assert [r["mauve_mean"] for r in rec["rows"]] == pytest.approx([r.mauve_mean for r in ref.rows()], abs=1e-12)
    assert all(r["num_buckets"] is None for r in rec["rows"])
    assert rec["settings"]["estimator"] == "gaussian" and rec["settings"]["mauve_scaling_factor"] is None


def test_quantized_is_the_default_and_recorded(feats, capsys):
    """The default --estimator is quantized (k in the rows); --over n without --values runs
    (mauve_sweep's default sizes are checked, not None)."""
    d, p, a, _ = feats
    out = d / "q.json"
    assert _sweep(d, "--candidates", str(d / "a.npy"), "--over", "n", "--seeds", "1", "--json", str(out)) == 0
    assert "estimator" not in capsys.readouterr().out
    rec = json.loads(out.read_text())
    assert rec["settings"]["estimator"] == "quantized" and rec["settings"]["num_buckets"] == "auto"
    assert rec["settings"]["values"] == [20, 25, 50, 100]
    assert [r["num_buckets"] for r in rec["rows"]] == [2, 2, 5, 10]


def test_ratio_estimator_takes_over_n_or_c_only(feats, no_model, capsys, tmp_path):
    d = feats[0]
    for over in ("k", "quantizer"):
        _fails(["mauve-sweep", "--references", str(d / "h.npy"), "--candidates", str(d / "a.npy"),
                "--over", over, "--estimator", "gaussian"], capsys, f"--over {over}", "--estimator gaussian")
    refs, cands = tmp_path / "r.txt", tmp_path / "c.txt"
    refs.write_text("".join(f"a human sentence {i}\n" for i in range(40)))
    cands.write_text("".join(f"a model sentence {i}\n" for i in range(40)))
    _fails(["mauve-sweep", "--references", str(refs), "--candidates", str(cands), "--model", "x",
            "--over", "length", "--estimator", "knn"], capsys, "--over length", "--estimator knn")


def test_kmeans_options_with_a_ratio_estimator_exit_2(feats, no_model, capsys):
    d = feats[0]
    base = ["mauve-sweep", "--references", str(d / "h.npy"), "--candidates", str(d / "a.npy"), "--over", "n",
            "--estimator", "knn"]
    for extra, option in ((["--num-buckets", "5"], "--num-buckets"),
                          (["--kmeans-explained-var", "0.5"], "--kmeans-explained-var"),
                          (["--kmeans-num-redo", "2"], "--kmeans-num-redo"),
                          (["--kmeans-max-iter", "10"], "--kmeans-max-iter")):
        _fails(base + extra, capsys, option, "--estimator knn")


def test_ratio_estimator_sizes_checked_before_the_model(no_model, capsys, tmp_path):
    """k-NN's 50 neighbours need more than 50 rows in all: 20 texts per side fail before featurizing."""
    refs, cands = tmp_path / "r.txt", tmp_path / "c.txt"
    refs.write_text("".join(f"a human sentence {i}\n" for i in range(40)))
    cands.write_text("".join(f"a model sentence {i}\n" for i in range(40)))
    base = ["mauve-sweep", "--references", str(refs), "--candidates", str(cands), "--model", "x"]
    _fails(base + ["--over", "n", "--values", "20,40", "--estimator", "knn"], capsys, "--estimator knn", "(n = 20)")
    few = tmp_path / "few.txt"   # the classifier's 5 cross-fitting folds need 5 rows a side
    few.write_text("one\ntwo\nthree\n")
    _fails(["mauve-sweep", "--references", str(refs), "--candidates", str(few), "--model", "x", "--over", "c",
            "--estimator", "classifier", "--values", "5"], capsys, "--estimator classifier", "5 cross-fitting folds")
