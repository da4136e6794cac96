# The two set-up commands (README): `make run` starts the service, `make test` runs the tests.
# Each creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench bench-service install clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/sgs-verify serve

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/speed.py

bench-service: $(STAMP)
	$(BIN)/python bench/service_bench.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy verifier storage clients service importers tests bench tools

clean:
	rm -rf $(VENV) build *.egg-info
