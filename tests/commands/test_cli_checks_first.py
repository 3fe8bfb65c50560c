"""featurize, mark-evaluate, perplexity, anisotropy, diversity-test and evaluate-generation: every
option is range-checked before a model is loaded (a loader that fails the test stands in for
every model), errors name the option, featurize writes exactly the ``.npy`` path it is given, and
every option's help states its default."""
from __future__ import annotations


import numpy as np
import pytest

from jaxmetrics.cli import main



# no_model: tests/conftest.py


@pytest.fixture
def texts(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("a human text\nanother one\nand a third\n")
    b.write_text("a model text\nand a second\nthird\nfourth\n")
    return str(a), str(b)


def _fails(argv, capsys, *parts):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, (argv, err)
    for part in parts:
        assert part in err, (argv, part, err)
    return err


def test_featurize_refuses_a_suffix_other_than_npy_before_loading(tmp_path, texts, no_model, capsys):
    a, _ = texts
    for name in ("y.txt", "y"):
        out = tmp_path / name
        _fails(["featurize", a, "--model", "m", "--out", str(out)], capsys, "--out: ", "does not end in .npy")
        assert not out.exists() and not (tmp_path / (name + ".npy")).exists()


def test_featurize_writes_exactly_the_path_given(tmp_path, texts):
    from jaxmetrics.data import demo_model_dir

    a, _ = texts
    out = tmp_path / "feats.NPY"
    assert main(["featurize", a, "--model", str(demo_model_dir()), "--out", str(out), "--quiet"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt", "feats.NPY"]
    assert np.load(out).shape == (3, 128)


def test_cache_folders_are_checked_before_loading(tmp_path, texts, no_model, capsys):
    a, b = texts
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    _fails(["featurize", a, "--model", "m", "--out", str(tmp_path / "f.npy"), "--cache-dir", str(blocker)],
           capsys, "--cache-dir: ", "exists and is not a directory")
    _fails(["featurize", a, "--model", "m", "--out", str(tmp_path / "f.npy"), "--cache-dir", str(blocker / "c")],
           capsys, "--cache-dir: ", "is a file, not a directory")
    _fails(["evaluate-generation", a, b, "--model", "m", "--featurizer", "m", "--out", str(tmp_path / "o"),
            "--cache-dir", str(blocker / "c")], capsys, "--cache-dir: ", "is a file, not a directory")
    _fails(["evaluate-generation", a, b, "--model", "m", "--featurizer", "m", "--out", str(blocker / "o")],
           capsys, "--out: ", "is a file, not a directory")
    assert not (tmp_path / "f.npy").exists() and not (tmp_path / "o").exists()


def test_mark_evaluate_checks_k_against_the_set_sizes_before_loading(texts, no_model, capsys):
    a, b = texts   # 3 references, 4 candidates
    base = ["mark-evaluate", "--references", a, "--candidates", b, "--model", "m"]
    _fails(base + ["--k", "3"], capsys, "--k: 3 needs more than k texts in each set",
           f"references {a!r} has 3: give at least 4 texts or a smaller --k")
    _fails(base, capsys, "--k: 3 needs more than k texts")          # the default k = 3
    _fails(base + ["--k", "0"], capsys, "--k: must be >= 1")
    _fails(base + ["--k", "2", "--max-length", "0"], capsys, "--max-length: must be >= 1")
    _fails(base + ["--k", "2", "--batch-size", "0"], capsys, "--batch-size: must be >= 1")


def test_featurize_and_perplexity_sizes_are_checked_before_loading(tmp_path, texts, no_model, capsys):
    a, _ = texts
    feat = ["featurize", a, "--model", "m", "--out", str(tmp_path / "f.npy")]
    _fails(feat + ["--batch-size", "0"], capsys, "--batch-size: must be >= 1")
    _fails(feat + ["--max-length", "0"], capsys, "--max-length: must be >= 1")
    ppl = ["perplexity", a, "--model", "m"]
    _fails(ppl + ["--stride", "8", "--max-length", "4"], capsys, "--stride: must be <= --max-length (4), got 8")
    _fails(ppl + ["--stride", "0"], capsys, "--stride: must be >= 1")
    _fails(ppl + ["--max-length", "1"], capsys, "--max-length: must be >= 2")
    _fails(ppl + ["--batch-size", "0"], capsys, "--batch-size: must be >= 1")


def test_perplexity_window_longer_than_the_context_names_the_option(tmp_path, texts, capsys):
    from jaxmetrics.data import demo_model_dir

    a, _ = texts
    _fails(["perplexity", a, "--model", str(demo_model_dir()), "--max-length", "200", "--quiet"], capsys,
           "--max-length: 200 exceeds the model's context size 128")


# Every option's help stating its default, for every command: tests/commands/test_cli_surface.py.
