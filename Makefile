# One command per habit. `make run` and `make test` each install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?= -n 2

.PHONY: install run test lint format bench browser screenshots clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $@

# Debian's Chromium and ChromeDriver, for the panel's browser tests.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; }

run: install
	$(VENV)/bin/memory-bank serve

test: install browser
	$(PY) -m pytest $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check src tests tools benchmarks
	$(VENV)/bin/ruff format --check src tests tools benchmarks
	$(VENV)/bin/mypy
	@if [ -f tools/gen_mcp.py ]; then $(PY) tools/gen_mcp.py --check; fi

format: install
	$(VENV)/bin/ruff check --fix src tests tools benchmarks
	$(VENV)/bin/ruff format src tests tools benchmarks

bench: install
	@for b in benchmarks/locomo.py benchmarks/scale.py; do \
	  if [ -f $$b ]; then $(PY) $$b || exit 1; fi; done

# Regenerate the panel screenshots in docs/screenshots (the browser tests take them on request).
screenshots: install browser
	MEMORY_BANK_SCREENSHOTS=docs/screenshots $(PY) -m pytest -q -p no:xdist tests/web/test_panel.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache memory-bank.db*
