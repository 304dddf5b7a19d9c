# Set-up and everyday commands. `make demo` and `make test` work on a fresh machine:
# each creates .venv and installs the project (with test extras for `make test`) first.
PY ?= python3
VENV = .venv
BIN = $(VENV)/bin

$(BIN)/arbiter: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q -e '.[test]'
	touch $(BIN)/arbiter

.PHONY: demo test bench tournament
demo: $(BIN)/arbiter
	$(BIN)/arbiter demo

test: $(BIN)/arbiter
	$(BIN)/pytest -q

bench: $(BIN)/arbiter
	$(BIN)/python bench/bench_foundation.py

tournament: $(BIN)/arbiter
	$(BIN)/arbiter-tournament run tournaments/examples/einstein_olympiad.toml
