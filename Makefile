# Two commands do all the set-up: `make run` and `make test`. Both create .venv when needed.
PYTHON ?= python3
PORT ?= 8000
SIMULATOR_PORT ?=
# pytest workers for `make test` (pytest-xdist); JOBS=0 runs the suite in one process.
JOBS ?= 2
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Exact versions, resolved from pyproject.toml by `make lock`: requirements.lock holds the
# runtime dependencies (what the Docker image installs), requirements-dev.lock those plus the
# `dev` extra (what .venv gets), the shared ones at the same versions. Plain pip installs them.
LOCK := requirements.lock
DEV_LOCK := requirements-dev.lock
# The resolver `make lock` runs (installed into .venv on demand, never needed to install).
UV ?= uv==0.13.9
# e.g. `make lock LOCK_FLAGS=--upgrade`, or `LOCK_FLAGS='--upgrade-package quart-schema'`:
# without them, versions already in the lock files are kept wherever pyproject.toml allows.
LOCK_FLAGS ?=
LOCK_COMPILE = $(BIN)/uv pip compile --quiet --universal --python-version 3.11 \
	--custom-compile-command 'make lock' $(LOCK_FLAGS)

.PHONY: run test soak fuzz lint bench bench-smoke clean lock

# `pip check` fails when pyproject.toml asks for what the lock does not hold: run `make lock`.
$(STAMP): pyproject.toml $(DEV_LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r $(DEV_LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

# The dev lock is resolved first; the runtime lock is its subset (constrained to it).
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet '$(UV)'
	$(LOCK_COMPILE) --extra dev pyproject.toml -o $(DEV_LOCK)
	$(LOCK_COMPILE) --constraint $(DEV_LOCK) pyproject.toml -o $(LOCK)

# The demo's simulator listens 100 above PORT (its API on the port after), or on SIMULATOR_PORT.
run: $(STAMP)
	NICHESCOPE_COOKIE_SECURE=$${NICHESCOPE_COOKIE_SECURE:-0} $(BIN)/nichescope serve --demo \
		--port $(PORT) $(if $(SIMULATOR_PORT),--simulator-port $(SIMULATOR_PORT))

lint: $(STAMP)
	$(BIN)/ruff check api engine scrapers store tests bench
	$(BIN)/ruff format --check api engine scrapers store tests bench
	$(BIN)/mypy api engine scrapers store

# Everything but the soak tests (about ten minutes on a quiet 2-core machine).
test: lint
	$(BIN)/python -m pytest -q -n $(JOBS) -m "not soak"

# The minute-long runs `make test` leaves out: a simulated month, the demo's ten minutes, load
# over shared feeds, kill -9 and a three-node failover, Schemathesis, the server benchmarks'
# smokes. CI runs them after `make test`; `python -m pytest` with no -m runs both sets.
soak: $(STAMP)
	$(BIN)/python -m pytest -q -n $(JOBS) -m soak

# A longer Schemathesis run than `make soak`'s (docs/reliability.md).
fuzz: $(STAMP)
	NICHESCOPE_FUZZ_EXAMPLES=$${NICHESCOPE_FUZZ_EXAMPLES:-400} $(BIN)/python -m pytest -q -s tests/hardening/test_schemathesis.py

bench: $(STAMP)
	$(BIN)/python -m bench

# Every benchmark at its smallest size, those that start servers included (minutes, not seconds).
bench-smoke: $(STAMP)
	$(BIN)/python -m pytest -q -n $(JOBS) tests/test_bench_smoke.py

clean:
	rm -rf $(VENV) var build *.egg-info
