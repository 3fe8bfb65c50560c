"""``jaxmetrics mauve`` and ``mauve-sweep`` check every option, both inputs and MAUVE's minimum sizes
before any model is loaded or any text featurized: each bad option exits 2 with one line naming it."""
from __future__ import annotations

import json

import numpy as np
import pytest

from jaxmetrics.cli import main


# no_model: tests/conftest.py


@pytest.fixture
def files(tmp_path):
    refs, cands, one = tmp_path / "refs.txt", tmp_path / "cands.txt", tmp_path / "one.txt"
    refs.write_text("".join(f"a human sentence number {i}\n" for i in range(30)))
    cands.write_text("".join(f"a model sentence number {i}\n" for i in range(30)))
    one.write_text("a single line\n")
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    return tmp_path, str(refs), str(cands), str(one), str(blocker)


def _fails(argv, option, capsys, *also):
    try:
        code = main(argv)
    except SystemExit as e:  # argparse's own errors (type, choices) exit 2 too
        code = e.code
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    assert option in err and "Traceback" not in err and "was loaded" not in err, (argv, err)
    for text in also:
        assert text in err, (argv, err)


def test_mauve_bad_options_fail_before_the_model(files, no_model, capsys):
    d, refs, cands, one, blocker = files
    base = ["mauve", "--references", refs, "--candidates", cands, "--model", str(d / "no-such-model")]
    for extra, option in (
        (["--num-buckets", "1"], "--num-buckets"),
        (["--num-buckets", "many"], "--num-buckets"),
        (["--num-buckets", "31"], "--num-buckets"),              # more buckets than texts on a side
        (["--kmeans-explained-var", "0"], "--kmeans-explained-var"),
        (["--kmeans-explained-var", "1.5"], "--kmeans-explained-var"),
        (["--kmeans-num-redo", "0"], "--kmeans-num-redo"),
        (["--kmeans-max-iter", "0"], "--kmeans-max-iter"),
        (["--mauve-scaling-factor", "0"], "--mauve-scaling-factor"),
        (["--mauve-scaling-factor", "-2"], "--mauve-scaling-factor"),
        (["--divergence-curve-discretization-size", "0"], "--divergence-curve-discretization-size"),
        (["--pca-max-data", "0"], "--pca-max-data"),
        (["--max-length", "0"], "--max-length"),
        (["--batch-size", "0"], "--batch-size"),
        (["--seeds", "3", "3"], "--seeds"),
        (["--seeds", "x"], "--seeds"),
        (["--pooling", "max"], "--pooling"),
        (["--cache-dir", blocker + "/cache"], "--cache-dir"),
        (["--json", str(d / "missing" / "o.json")], "--json"),
        (["--plot", str(d / "o.xyz")], "--plot"),
    ):
        _fails(base + extra, option, capsys)
    # one line against one line: MAUVE's minimum size (2 points per side with 'auto'), before the model
    _fails(["mauve", "--references", one, "--candidates", cands, "--model", "x"], "--references", capsys,
           "1 point(s) for 2 buckets")


def test_mauve_sweep_bad_options_fail_before_the_model(files, no_model, capsys):
    d, refs, cands, one, blocker = files
    base = ["mauve-sweep", "--references", refs, "--candidates", cands, "--model", str(d / "no-such-model")]
    for extra, option, text in (
        (["--over", "n", "--values", "100,200,auto"], "--values", "'auto' is a value of --over k only"),
        (["--over", "n", "--values", "10", "50"], "--values", "exceeds the smallest set (30"),
        (["--over", "n", "--values", "1"], "--values", "--over n"),
        (["--over", "k", "--values", "1"], "--values", "--over k"),
        (["--over", "k", "--values", "2,40"], "--values", "40 buckets"),
        (["--over", "k", "--values", "4,4"], "--values", "repeated"),
        (["--over", "c", "--values", "0"], "--values", "positive"),
        (["--over", "length", "--values", "ten"], "--values", "--over length"),
        (["--over", "quantizer", "--values", "kmeans,faiss"], "--values", "unknown quantizer 'faiss'"),
        (["--over", "k", "--num-buckets", "5"], "--num-buckets", "not used with --over k"),
        (["--over", "c", "--mauve-scaling-factor", "2"], "--mauve-scaling-factor", "not used with --over c"),
        (["--over", "length", "--max-length", "64"], "--max-length", "not used with --over length"),
        (["--over", "length", "--cache-dir", str(d / "c")], "--cache-dir", "not used with --over length"),
        (["--over", "k", "--num-buckets", "x"], "--num-buckets", ""),
        (["--over", "n", "--num-buckets", "1"], "--num-buckets", "at least 2"),
        (["--over", "n", "--values", "10", "--num-buckets", "12"], "--num-buckets", "12 buckets"),
        (["--over", "k", "--kmeans-explained-var", "1.0"], "--kmeans-explained-var", ""),
        (["--over", "k", "--kmeans-num-redo", "0"], "--kmeans-num-redo", ""),
        (["--over", "k", "--kmeans-max-iter", "-1"], "--kmeans-max-iter", ""),
        (["--over", "k", "--mauve-scaling-factor", "0"], "--mauve-scaling-factor", ""),
        (["--over", "k", "--batch-size", "0"], "--batch-size", ""),
        (["--over", "k", "--max-length", "0"], "--max-length", ""),
        (["--over", "k", "--seeds", "1", "2", "1"], "--seeds", "repeated"),
        (["--over", "k", "--cache-dir", blocker + "/c"], "--cache-dir", ""),
        (["--over", "k", "--csv", str(d / "missing" / "o.csv")], "--csv", ""),
        (["--over", "k", "--plot", str(d / "o.xyz")], "--plot", ""),
    ):
        _fails(base + extra, option, capsys, text)


def test_mauve_sweep_values_with_auto_run_and_plot(tmp_path, capsys):
    """`--values 5,10,auto` for --over k is parsed, run and plotted (it used to fail in the plot
    after all the work); the JSON records the seeds and settings."""
    rng = np.random.default_rng(0)
    np.save(tmp_path / "h.npy", rng.normal(size=(100, 6)).astype(np.float32))
    np.save(tmp_path / "a.npy", (rng.normal(size=(100, 6)) + 0.3).astype(np.float32))
    out = tmp_path / "s.json"
    assert main(["mauve-sweep", "--references", str(tmp_path / "h.npy"), "--candidates", str(tmp_path / "a.npy"),
                 "--over", "k", "--values", "5,10,auto", "--seeds", "1", "2", "--plot", str(tmp_path / "x.png"),
                 "--json", str(out), "--quiet"]) == 0
    assert (tmp_path / "x.png").stat().st_size > 1000
    res = json.loads(out.read_text())
    assert res["sweep"]["values"] == [5, 10, "auto"] and [r["num_buckets"] for r in res["rows"]] == [5, 10, 10]
    assert res["settings"]["seeds"] == [1, 2] and res["settings"]["values"] == [5, 10, "auto"]
    assert res["settings"]["num_buckets"] is None and res["settings"]["pooling"] is None
