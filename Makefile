# Two commands do all the set-up: `make run` and `make test`. Both create .venv when needed.
PYTHON ?= python3
PORT ?= 8000
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test fuzz lint bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	NICHESCOPE_COOKIE_SECURE=$${NICHESCOPE_COOKIE_SECURE:-0} $(BIN)/nichescope serve --demo --port $(PORT)

lint: $(STAMP)
	$(BIN)/ruff check api engine scrapers store tests bench
	$(BIN)/mypy api engine scrapers store

test: lint
	$(BIN)/python -m pytest -q

# A longer Schemathesis run than `make test`'s (README, Reliability).
fuzz: $(STAMP)
	NICHESCOPE_FUZZ_EXAMPLES=$${NICHESCOPE_FUZZ_EXAMPLES:-400} $(BIN)/python -m pytest -q -s tests/hardening/test_schemathesis.py

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) var build *.egg-info
