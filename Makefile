# Two commands for a newcomer: `make demo` (the main job) and `make test` (lint + types + tests).
# Each bootstraps .venv from pyproject.toml on first use (and again when pyproject.toml changes).
SHELL := bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# mypy names modules after directories, and the repository keeps the design card's folders
# (runtime/, actors/) that install as `triohooks` and `triohooks.actors`: `make types` checks
# them through a tree of symlinks with the installed names, rebuilt on every run.
TYPES_TREE := build/mypy

.PHONY: demo test lint types pytest long interop bench dist clean

# The Python triohooks needs: pyproject.toml's requires-python (">=3.11").
MIN_PYTHON := $(shell sed -n 's/^requires-python = ">=\([0-9.]*\)"$$/\1/p' pyproject.toml)
# Looked for on PATH when $(PYTHON) is too old, to name one that will do.
NEWER_PYTHONS := python3.14 python3.13 python3.12 python3.11
# Exit 0 when the python named by $$1 runs and is new enough (also under Python 2).
IS_NEW_ENOUGH = $$1 -c 'import sys; sys.exit(sys.version_info[:2] < tuple(map(int, "$(MIN_PYTHON)".split("."))))' 2>/dev/null

# First the Python version, before anything is made: too old (or not there), it says which
# Python to use and creates nothing. The install log is kept in .venv/install.log and shown
# only when the install fails; then the stamp is not there (the next make installs again),
# and a .venv this run created is removed: nothing half-installed stays looking usable.
$(STAMP): pyproject.toml
	@check() { $(IS_NEW_ENOUGH); }; check $(PYTHON) || { \
	  have=$$($(PYTHON) -c 'import sys; print("Python %d.%d" % sys.version_info[:2])' 2>/dev/null || echo "not found"); \
	  use=; for p in $(NEWER_PYTHONS); do command -v $$p > /dev/null && check $$p && { use=$$p; break; }; done; \
	  echo "make: triohooks needs Python $(MIN_PYTHON) or newer; $(PYTHON) is $$have. Nothing was created." >&2; \
	  if [ -n "$$use" ]; then echo "make: $$use is on your PATH: PYTHON=$$use make $(or $(MAKECMDGOALS),demo)" >&2; \
	  else echo "make: install Python $(MIN_PYTHON) or newer, then name it: PYTHON=python3.12 make $(or $(MAKECMDGOALS),demo)" >&2; fi; \
	  exit 1; }
	@echo "Setting up .venv: installing triohooks and its dependencies from pyproject.toml"
	@echo "(first run, or pyproject.toml changed; about a minute; log in $(VENV)/install.log)"
	@rm -f $(STAMP); fresh=; [ -e $(VENV) ] || fresh=1; \
	{ $(PYTHON) -m venv $(VENV) \
	  && $(BIN)/pip install --quiet --upgrade pip > $(VENV)/install.log 2>&1 \
	  && $(BIN)/pip install --quiet -e '.[dev]' >> $(VENV)/install.log 2>&1; } || { \
	  cat $(VENV)/install.log 2>/dev/null; \
	  if [ -n "$$fresh" ]; then rm -rf $(VENV); echo "make: the install failed (above); the .venv it began is removed" >&2; \
	  else echo "make: the install failed (above); the next make tries again" >&2; fi; \
	  exit 1; }
	@touch $(STAMP)
	@echo "Installed: $$($(BIN)/triohooks --version) in $(VENV)"

demo: $(STAMP)
	$(BIN)/triohooks demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

types: $(STAMP)
	@rm -rf $(TYPES_TREE) && mkdir -p $(TYPES_TREE)/triohooks
	@ln -s $(CURDIR)/runtime/* $(TYPES_TREE)/triohooks/
	@ln -s $(CURDIR)/actors $(TYPES_TREE)/triohooks/actors
	@# Errors name the files as they are in the repository, not their link in the tree.
	@$(BIN)/mypy | sed -e 's|^$(TYPES_TREE)/triohooks/actors/|actors/|' -e 's|^$(TYPES_TREE)/triohooks/|runtime/|'; exit $${PIPESTATUS[0]}

# Three workers on two cores: most of the suite waits on real processes (bash hooks, CLI
# runs, servers), so a third worker fills the idle time: 3:35 instead of 4:07 here.
pytest: $(STAMP)
	$(BIN)/pytest -q -n 3

test: lint types pytest

# The real agent CLIs (Claude Code, Codex, Gemini CLI) headless against local fake model servers,
# installed into .cache/interop/ on first use; each is skipped, saying why, when it cannot be.
# What takes long on its own (pytest marker `long`), and the config fuzz at full scale.
long: $(STAMP)
	$(BIN)/pytest -q -n 2 -m long
	TRIOHOOKS_FUZZ_SCALE=1 $(BIN)/pytest -q -n 2 tests/test_config_fuzz.py

interop: $(STAMP)
	$(BIN)/pytest -q -rs -m interop tests/interop

# The wheel and the sdist into dist/ (the sdist carries the native relay client's C source, as the
# wheel does, plus docs/ and examples/): docs/getting-started.md says how to install from them.
# Built without isolation, from this venv's setuptools: no index needed.
dist: $(STAMP)
	rm -rf dist
	$(BIN)/python -m build --no-isolation --sdist --wheel --outdir dist .
	@ls dist

bench: $(STAMP)
	$(BIN)/pip install --quiet -e '.[dev,bench]'
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) $(TYPES_TREE) dist .mypy_cache .pytest_cache .ruff_cache
