# The two set-up commands (README): `make run` starts the service and the viewer, `make test` runs the tests.
# Each creates .venv and installs what it needs on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast lint bench bench-service install native clean

# Quiet: pip says nothing unless something fails (then it shows why).
PIP := $(BIN)/pip --quiet --quiet --disable-pip-version-check --no-input

$(STAMP): pyproject.toml
	@echo "make: installing into $(VENV) (the first time takes 2-3 minutes: it compiles the engine core)"
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) install --upgrade pip
	@$(PIP) install -e '.[dev,web]'
	@touch $(STAMP)
	@echo "make: installed"

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

# The inner loop: every test but the slow ones (tests/conftest.py: those that start a service, FreeKill's core or a
# browser, valgrind, the fuzz families); `make test` runs everything, as CI does.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -n auto

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
