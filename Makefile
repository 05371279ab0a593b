# One entry point for building, demonstrating, testing and benchmarking tca.
# Every target sets up what it needs: a virtualenv with pinned packages (.venv) and the Rust
# extension module tca._native built into it.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
TCA    := $(VENV)/bin/tca
STAMP  := $(VENV)/.requirements-installed
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: all setup native demo test test-rust test-python bench lint clean

all: native

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

setup: $(STAMP)

# maturin is incremental through cargo: cheap when nothing changed.
native: $(STAMP)
	$(VENV)/bin/maturin develop --release --quiet

demo: native
	$(TCA) demo --out out

test: test-rust test-python

test-rust:
	cargo test --release --workspace --exclude tca-py

test-python: native
	$(PY) -m pytest -q

bench: native
	cargo bench -p tca-sim --bench event_queue
	$(PY) -m tca.bench.event_queue

lint: native
	cargo fmt --all --check
	cargo clippy --release --workspace --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests
	$(VENV)/bin/ruff format --check python tests

clean:
	rm -rf $(VENV) target out
