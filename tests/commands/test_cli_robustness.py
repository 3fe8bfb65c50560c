"""Command-line robustness: outputs and inputs are checked before any expensive step, long steps
show a progress bar (``--quiet`` hides it), encoders are mean-pooled by default, bad UTF-8 names
its file, Ctrl-C exits quietly with status 130, and a NaN label in a McDiv CSV is rejected.

Every test calls ``jaxmetrics.cli.main(argv)`` in-process. The "before any expensive step" tests
replace every model loader, featurizer and pipeline with a function that fails the test if called.
"""
from __future__ import annotations

import csv
import re
import json

import numpy as np
import pytest

from jaxmetrics.cli import main

# ----------------------------------------------------------------------------- helpers


class _Called(AssertionError):
    pass


def _forbid(*_, **__):
    raise _Called("an expensive step ran before the argument checks")


@pytest.fixture
def no_work(monkeypatch):
    """Make every model load, featurizer and metric pipeline fail the test when called."""
    import jaxmetrics.diversity as D
    import jaxmetrics.lm as LM
    import jaxmetrics.mark_evaluate as ME
    import jaxmetrics.mark_evaluate.pipeline as MEP
    import jaxmetrics.mauve as M
    import jaxmetrics.models as MO
    import jaxmetrics.models.encoding as E
    import jaxmetrics.models.featurizers as F
    import jaxmetrics.models.loader as LO
    import jaxmetrics.similarity as S

    for mod, names in ((MO, ("load_model", "resolve_model", "featurize", "sentence_embeddings",
                             "token_embeddings")),
                       (F, ("featurize", "sentence_embeddings", "token_embeddings")),
                       (E, ("encode", "resolve_model")),
                       (LO, ("load_model",)),
                       (M, ("compute_mauve", "compute_mauve_seeds")), (LM, ("perplexity",)),
                       (S, ("compute_similarity",)), (ME, ("compute_mark_evaluate",)),
                       (MEP, ("compute_mark_evaluate",)), (D, ("compute_set_metrics", "run_diversity_test"))):
        for n in names:
            if hasattr(mod, n):
                monkeypatch.setattr(mod, n, _forbid)


def _run(argv):
    """``main(argv)``; a KeyboardInterrupt or a forbidden call escaping main fails the test."""
    try:
        return main(argv)
    except KeyboardInterrupt:  # would otherwise stop the whole pytest session
        pytest.fail("KeyboardInterrupt escaped jaxmetrics.cli.main")


def _csv(path, labels, n_sets=None):
    labels = list(labels)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sample_id", "context", "resp_0", "resp_1", "label_value", "label_name"])
        for k, y in enumerate(labels):
            w.writerow([k, "ctx", f"a b c {k}", f"d e {k} f", y, "temperature"])
    return str(path)


@pytest.fixture
def texts(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("a human text\nanother one\n")
    b.write_text("a model text\nand a second\n")
    return str(a), str(b)


# ----------------------------------------------------------------------------- outputs checked first

MISSING_DIR = "no-such-dir/out"


def _commands(tmp_path, texts):
    """(argv without the output option, output option) of every command that writes files."""
    a, b = texts
    feats = tmp_path / "p.npy"
    np.save(feats, np.zeros((20, 3), np.float32))
    data = _csv(tmp_path / "d.csv", [0.1, 0.5, 1.0])
    return [
        (["featurize", a, "--model", "m"], "--out", ".npy"),
        (["mauve", "--references", a, "--candidates", b, "--model", "m"], "--json", ".json"),
        (["mauve", "--references", a, "--candidates", b, "--model", "m"], "--plot", ".png"),
        (["mauve", "--references", str(feats), "--candidates", str(feats)], "--json", ".json"),
        (["perplexity", a, "--model", "m"], "--json", ".json"),
        (["similarity", "--references", a, "--candidates", b, "--model", "m"], "--csv", ".csv"),
        (["similarity", "--references", a, "--candidates", b, "--model", "m"], "--json", ".json"),
        (["compare", "--references", a, "--candidates", a, a, "--names", "x", "y", "--model", "m"], "--json", ".json"),
        (["compare", "--references", a, "--candidates", a, a, "--names", "x", "y", "--model", "m"], "--plot", ".png"),
        (["diversity-test", data], "--plot", ".png"),
        (["diversity-test", data], "--json", ".json"),
    ]


def test_unwritable_outputs_fail_before_any_work(tmp_path, texts, no_work, capsys):
    for argv, opt, ext in _commands(tmp_path, texts):
        bad = str(tmp_path / MISSING_DIR) + ext
        rc = _run(argv + [opt, bad])
        err = capsys.readouterr().err
        assert rc == 2, (argv, opt, err)
        assert opt in err and "no-such-dir" in err and "does not exist" in err, (argv, opt, err)
        # a directory is not an output file either
        rc = _run(argv + [opt, str(tmp_path)])
        err = capsys.readouterr().err
        assert rc == 2 and opt in err and "is a directory" in err, (argv, opt, err)


def test_unsupported_plot_format_fails_before_any_work(tmp_path, texts, no_work, capsys):
    a, b = texts
    rc = _run(["mauve", "--references", a, "--candidates", b, "--model", "m", "--plot", str(tmp_path / "c.xyz")])
    err = capsys.readouterr().err
    assert rc == 2 and "--plot" in err and "'xyz'" in err


def test_bad_inputs_fail_before_any_work(tmp_path, texts, no_work, capsys):
    """The second input is broken: nothing is loaded for the first one."""
    a, _ = texts
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    missing = str(tmp_path / "missing.txt")
    for argv, name in (
        (["similarity", "--references", a, "--candidates", missing, "--model", "m"], "candidates"),
        (["mark-evaluate", "--references", a, "--candidates", missing, "--model", "m"], "candidates"),
        (["mauve", "--references", a, "--candidates", missing, "--model", "m"], "candidates"),
        (["mauve", "--references", a, "--candidates", str(bad), "--model", "m"], "candidates"),
        (["perplexity", str(bad), "--model", "m"], "corpus"),
        (["featurize", str(bad), "--model", "m", "--out", str(tmp_path / "o.npy")], "texts"),
    ):
        rc = _run(argv)
        err = capsys.readouterr().err
        assert rc == 2 and name in err, (argv, err)
    assert not (tmp_path / "o.npy").exists()


# ----------------------------------------------------------------------------- UTF-8 errors name the file


def test_utf8_errors_name_the_file(tmp_path, texts, capsys):
    a, _ = texts
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("ok\ncaf\u00e9\n".encode("latin-1"))
    bad_csv = tmp_path / "latin1.csv"
    bad_csv.write_bytes("sample_id,context,resp_0,resp_1,label_value,label_name\n0,c,caf\u00e9,b,1,t\n"
                        .encode("latin-1"))
    for argv in (["mauve", "--references", a, "--candidates", str(bad), "--model", "m"],
                 ["perplexity", str(bad), "--model", "m"],
                 ["diversity-test", str(bad_csv)]):
        rc = _run(argv)
        err = capsys.readouterr().err
        path = str(bad_csv if argv[0] == "diversity-test" else bad)
        assert rc == 2 and path in err and "UTF-8" in err and "line 2" in err, (argv, err)
        assert "Traceback" not in err


# ----------------------------------------------------------------------------- NaN labels in McDiv CSVs


@pytest.mark.parametrize("value", ["nan", "NaN", "inf"])
def test_mcdiv_csv_rejects_non_finite_label(tmp_path, capsys, value):
    from jaxmetrics.diversity import read_mcdiv_csv

    path = _csv(tmp_path / "nan.csv", ["0.1", "0.5", value, "1.0"])
    with pytest.raises(ValueError, match=rf"nan.csv.*row 2 .*column label_value.*{value}"):
        read_mcdiv_csv(path)
    rc = _run(["diversity-test", path])
    err = capsys.readouterr().err
    assert rc == 2 and "nan.csv" in err and "row 2" in err and "label_value" in err


# ----------------------------------------------------------------------------- Ctrl-C


def _interrupt(*_, **__):
    raise KeyboardInterrupt


def test_ctrl_c_exits_130_quietly(tmp_path, texts, monkeypatch, capsys):
    import jaxmetrics.models as MO

    a, _ = texts
    monkeypatch.setattr(MO, "load_model", lambda *a, **kw: _FakeEncoder())
    monkeypatch.setattr(MO, "resolve_model", lambda m, **kw: m)
    monkeypatch.setattr(MO, "encode", _interrupt)     # the CLI featurizes through the encoding engine
    out = str(tmp_path / "o.npy")
    cache = tmp_path / "cache"
    rc = _run(["featurize", a, "--model", "m", "--out", out, "--cache-dir", str(cache)])
    err = capsys.readouterr().err
    assert rc == 130
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 2, err
    assert "interrupted" in err and str(cache) in err and "resume" in err
    rc = _run(["featurize", a, "--model", "m", "--out", out])
    err = capsys.readouterr().err
    assert rc == 130 and "interrupted" in err and "cache" not in err
    assert not (tmp_path / "o.npy").exists()


class _FakeEncoder:
    is_causal = False
    kind = "bert"


# ----------------------------------------------------------------------------- progress bars


@pytest.fixture(scope="module")
def bert_dir(tmp_path_factory):
    pytest.importorskip("torch")
    from jaxmetrics.testing import tiny_checkpoint

    return tiny_checkpoint("bert", tmp_path_factory.mktemp("cli_robust_bert"))


def test_long_steps_show_progress_and_quiet_hides_it(tmp_path, bert_dir, capsys, monkeypatch):
    from jaxmetrics.models import batching

    monkeypatch.setattr(batching, "PACK_LENGTH", 0)  # six short texts in three batches, not one
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("".join(f"reference text number {i} about cats\n" for i in range(6)))
    b.write_text("".join(f"candidate text {i} about some dogs\n" for i in range(6)))
    sets = [[f"w{k} x{k % 3} y", f"z{k} x y{k % 2}"] for k in range(4)]
    data = tmp_path / "d.csv"
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["sample_id", "context", "resp_0", "resp_1", "label_value", "label_name"])
        for k, s in enumerate(sets):
            w.writerow([k, "c", *s, k, "t"])
    commands = [
        ["similarity", "--references", str(a), "--candidates", str(b), "--model", bert_dir, "--metric",
         "bertscore", "--batch-size", "2", "--max-length", "32"],
        ["mark-evaluate", "--references", str(a), "--candidates", str(b), "--model", bert_dir,
         "--batch-size", "2", "--max-length", "32", "--no-baselines", "--k", "2"],
        ["diversity-test", str(data), "--metrics", "distinct,sent-bert", "--model", bert_dir],
    ]
    for argv in commands:
        assert _run(argv) == 0, capsys.readouterr().err
        err = capsys.readouterr().err
        # stderr is not a terminal here: plain progress lines "jaxmetrics: <step>: n/total ..."
        assert re.search(r"^jaxmetrics: [^:\n]+: (\d+)/\1 \w+ \(100%", err, re.M), (argv[0], err)
        assert _run(argv + ["--quiet"]) == 0
        err = capsys.readouterr().err
        assert not re.search(r"\d+/\d+ \w+ \(\d+%", err), (argv[0], err)


# ----------------------------------------------------------------------------- pooling


def test_featurize_and_mauve_pool_encoders_by_mean(tmp_path, bert_dir, capsys, monkeypatch):
    from jaxmetrics.models import featurize, load_model, sentence_embeddings

    lm = load_model(bert_dir)
    ref = [f"reference text number {i} about cats" for i in range(12)]
    cand = [f"candidate text {i} about some dogs and more" for i in range(12)]
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(ref) + "\n")
    b.write_text("\n".join(cand) + "\n")
    mean = sentence_embeddings(ref, model=lm, max_length=64, batch_size=8, progress=False)
    last = featurize(ref, model=lm, max_length=64, batch_size=8, progress=False)
    assert not np.allclose(mean, last, atol=1e-3)
    # featurize: auto (the default) = mean for an encoder; --pooling chooses
    for extra, want in (([], mean), (["--pooling", "mean"], mean), (["--pooling", "last"], last)):
        out = tmp_path / "f.npy"
        assert _run(["featurize", str(a), "--model", bert_dir, "--out", str(out), "--max-length", "64",
                     "--batch-size", "8", "--quiet"] + extra) == 0
        np.testing.assert_allclose(np.load(out), want, atol=1e-5)
    # mauve: the features handed to compute_mauve follow the same rule
    import jaxmetrics.mauve as M

    seen = {}
    real = M.compute_mauve

    def spy(**kw):
        seen.update(kw)
        return real(**kw)

    monkeypatch.setattr(M, "compute_mauve", spy)
    for extra, want in (([], mean), (["--pooling", "last"], last)):
        assert _run(["mauve", "--references", str(a), "--candidates", str(b), "--model", bert_dir,
                     "--max-length", "64", "--num-buckets", "2", "--quiet"] + extra) == 0
        np.testing.assert_allclose(seen["p_features"], want, atol=1e-5)
    capsys.readouterr()
    # the Python pipeline: compute_mauve(p_text=..., model=encoder) pools by mean with pooling='auto'
    # (the command line's default); its own default is mauve-text's last token (tests/mauve/test_mauve_pooling.py)
    got = real(p_text=ref, q_text=cand, model=lm, num_buckets=2, max_text_length=64, batch_size=8, pooling="auto")
    q_mean = sentence_embeddings(cand, model=lm, max_length=64, batch_size=8, progress=False)
    want = real(p_features=mean, q_features=q_mean, num_buckets=2)
    assert got.mauve == pytest.approx(want.mauve, abs=1e-6) and got.pooling == "mean"


def test_help_documents_pooling(capsys):
    for cmd in ("mauve", "featurize"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        out = " ".join(capsys.readouterr().out.split())
        assert "--pooling POOLING one of auto, mean, last, cls:" in out and "last token" in out, out
