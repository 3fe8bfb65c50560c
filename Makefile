# jaxmetrics — everything from a bare machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test test-all demo bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -m ''

demo: $(STAMP)
	$(BIN)/python -m jaxmetrics.demo

# Each benchmark runs jaxmetrics and its reference in one process; run them one at a time on an
# idle machine. OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are unset here only (they slow numpy ~2x).
BENCHES := mauve_vs_reference featurize_vs_torch perplexity_vs_reference similarity_vs_reference \
	mark_evaluate_vs_reference diversity_vs_reference mauve_quantizers scaling

bench: $(STAMP)
	for b in $(BENCHES); do env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BIN)/python benchmarks/$$b.py || exit 1; done

clean:
	rm -rf $(VENV) demo_output .pytest_cache
