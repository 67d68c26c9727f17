# The two commands: `make serve` runs the service, `make test` runs every test.
# Both create .venv on first use from nothing but Python 3.11 and the package registries.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
SERVE_STAMP := $(VENV)/.installed-serve-stamp
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: install install-serve serve test lint typecheck pytest bench wheel clean browser compilers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# torch goes in first, pinned, with pip: pip takes the CPU wheel that lies on disk, while an unpinned
# torch pulled in by ms-swift would download a multi-GB CUDA build.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[all,dev]"
	touch $(STAMP)

install: $(STAMP)

# Serving needs the service, math, judge and code extras only: no torch, ms-swift, Ray or dev tools.
$(SERVE_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[service,math,judge,code]"
	touch $(SERVE_STAMP)

install-serve: $(SERVE_STAMP)

# A wheel of the checkout, for a trainer's venv on a machine without it (README.md, "Install"):
# pip install 'dist/rewardkit-<version>-py3-none-any.whl[swift]'. pip builds it with hatchling in isolation.
DIST ?= dist
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
wheel: | $(BIN)/python
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir $(DIST) .
	@ls $(DIST)/rewardkit-$(VERSION)-py3-none-any.whl

serve: install-serve
	$(BIN)/rewardkit serve --host $(HOST) --port $(PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: install
	$(BIN)/mypy

# The offline /docs test renders the page in a real headless browser: Debian's chromium.
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

# The code reward compiles C++ and C programs (in its sandboxes) with the distribution's g++ and gcc.
compilers:
	command -v g++ >/dev/null || (apt-get update -qq && apt-get install -y -qq g++ >/dev/null)

pytest: install browser compilers
	$(BIN)/pytest

test: lint typecheck pytest

bench: install
	$(BIN)/python bench/text_rewards.py
	$(BIN)/python bench/parity_rewards.py
	$(BIN)/python bench/math_throughput.py
	$(BIN)/python bench/parsing.py
	$(BIN)/python bench/verdicts.py
	$(BIN)/python bench/label_audit.py
	$(BIN)/python bench/service_overhead.py
	$(BIN)/python bench/judge_throughput.py
	$(BIN)/python bench/judge_fallback.py
	$(BIN)/python bench/verl_adapter.py
	$(BIN)/python bench/diagnose.py
	$(BIN)/python bench/scale_out.py
	$(BIN)/python bench/code_throughput.py
	$(BIN)/python bench/agentic_rewards.py
	$(BIN)/python bench/ifeval_throughput.py
	$(BIN)/python bench/qa_parity.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist
