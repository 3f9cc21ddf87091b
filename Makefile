# The README's two commands: `make demo` and `make test`. Both create .venv when it is missing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.groundwire-installed
PROJECTS := pyproject.toml integrations/langchain/pyproject.toml integrations/llamaindex/pyproject.toml
# Reference implementations used only as oracles by the parity tests. Installed without their
# dependencies: Ragas' module is self-contained and loaded by path; erag pins a pytrec_eval that
# cannot build here, and pytrec-eval-terrier provides the same module.
ORACLES := ragas==0.4.3 erag==0.0.1

.PHONY: install demo test lint typecheck pytest bench bench-smoke mutation clean

install: $(STAMP)

$(STAMP): $(PROJECTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[all,test]" \
		-e "integrations/langchain[test]" -e "integrations/llamaindex[test]"
	$(BIN)/python -m pip install --quiet --no-deps $(ORACLES)
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/groundwire demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest

test: lint typecheck pytest

bench: $(STAMP)
	$(BIN)/python -m tests.benchmarks
	$(BIN)/python -m tests.benchmarks.readme

# Every benchmark on a tiny input (seconds each): the code, the comparison and the results schema
# are exercised in CI; results go to tests/benchmarks/results/smoke/ (ignored), never quoted.
bench-smoke: $(STAMP)
	GROUNDWIRE_BENCH_SMOKE=1 $(BIN)/python -m tests.benchmarks

# Mutation testing of the core modules (mutmut; minutes to an hour): scores per module go to
# tests/benchmarks/results/mutation.md. Not part of `make test`.
mutation: $(STAMP)
	$(BIN)/python -m pip install --quiet "mutmut>=3.3"
	$(BIN)/python -m tests.mutation

clean:
	rm -rf mutants $(VENV) .mypy_cache .pytest_cache .ruff_cache
