# The two set-up commands (README): `make run` starts the service and the viewer, `make test` runs the tests.
# Each creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench bench-service install native clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,web]'
	touch $(STAMP)

install: $(STAMP)

# Compile the engine core again after editing it (setup.py; until then it runs interpreted, with a warning).
native: $(STAMP)
	$(BIN)/python setup.py -q build_ext --inplace

# gRPC on 127.0.0.1:50051 and the replay viewer on http://127.0.0.1:8080/ (a few example games
# are stored the first time, while the store is empty).
run: $(STAMP)
	$(BIN)/sgs-verify serve --http 127.0.0.1:8080 --examples

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python bench/speed.py

bench-service: $(STAMP)
	$(BIN)/python bench/service_bench.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy verifier storage clients service importers tests bench tools setup.py

clean:
	rm -rf $(VENV) build *.egg-info verifier/native_sources.txt *__mypyc.*.so
	find verifier -name '*.so' -delete
