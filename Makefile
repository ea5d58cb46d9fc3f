# Every target creates .venv if it is missing and installs the project into it.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# What each target needs, installed once into the same .venv: the package alone for the
# dashboard (`make demo`), plus the `test` extra for the tests (`make test`, the stamp above),
# plus the `docs` extra for the documentation site (`make docs`).
DEMO_STAMP := $(VENV)/.installed-demo
DOCS_STAMP := $(VENV)/.installed-docs

# The other supported Pythons, each in its own venv (.venv312, .venv313, with the test and docs
# extras, so the docs build test runs there too): `make test-3.12`,
# `make test-3.13`; `make test-newest` is the newest, which CI runs as well. The interpreter is
# the newest ~/.pyenv/versions/X.Y.*/bin/pythonX.Y, else a pythonX.Y on PATH that runs (pyenv's
# shims are on PATH but fail for versions not selected with `pyenv global`).
PYTHONS := 3.12 3.13
NEWEST := 3.13
find_python = $(or $(shell ls -d $(HOME)/.pyenv/versions/$(1).*/bin/python$(1) 2>/dev/null \
	| sort -V | tail -n 1),$(shell python$(1) -c 'import sys; print(sys.executable)' 2>/dev/null))

# The suite runs in two worker processes (pytest-xdist): most tests wait on real subprocesses,
# files and sockets, so two workers keep both cores busy and `make test` under ten minutes on a
# busy 2-core machine. Every test owns its temp dir, ports, tmux socket and redis server, so
# workers never share state. `make test PYTEST_WORKERS=` runs it in one process.
PYTEST_WORKERS ?= -n 2

.PHONY: wheel-cache npm-cache test-clients-newest demo docs docs-serve test test-newest $(PYTHONS:%=test-%) soak bench lint screenshots clean redis-server

# Outside parts the tests drive for real, from Debian's packages (command:package): redis-server
# (redis rooms), tmux (the terminal nudge), mkfs.xfs and mkfs.btrfs (room identity and append
# windows on xfs and btrfs loop images), zsh and fish (their completion scripts). Installed here
# when missing and running as root (a fresh CI machine); otherwise the tests that need them skip
# with one line.
TEST_TOOLS := redis-server:redis-server tmux:tmux mkfs.xfs:xfsprogs mkfs.btrfs:btrfs-progs \
	zsh:zsh fish:fish
redis-server:
	@missing=""; for pair in $(TEST_TOOLS); do \
	  command -v $${pair%%:*} >/dev/null 2>&1 || missing="$$missing $${pair#*:}"; done; \
	[ -z "$$missing" ] || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else echo "missing (not root):$$missing: the tests that need them will skip"; fi; }

$(DEMO_STAMP): pyproject.toml
	test -x $(BIN)/python || $(shell command -v $(PY) || echo python3) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	touch $(DEMO_STAMP)

# The tests build the docs too (tests/test_readme.py), so the test venv has the docs extra.
$(STAMP): $(DEMO_STAMP)
	$(BIN)/python -m pip install -q -e '.[test,docs]'
	$(MAKE) --no-print-directory wheel-cache
	touch $(STAMP) $(DOCS_STAMP)

$(DOCS_STAMP): $(DEMO_STAMP)
	$(BIN)/python -m pip install -q -e '.[docs]'
	touch $(DOCS_STAMP)

# Distributions tests/test_packaging.py installs beside ackdeck's wheel, offline: PyPI's `tui`
# (an sdist, built into a wheel here, where the network is reachable). Without it that test
# skips with one line.
WHEEL_CACHE := .cache/wheels
wheel-cache:
	@ls $(WHEEL_CACHE)/tui-1.1.1-*.whl >/dev/null 2>&1 || $(BIN)/python -m pip wheel -q \
		--no-deps -w $(WHEEL_CACHE) tui==1.1.1 || echo "could not build PyPI's tui:" \
		"tests/test_packaging.py will skip its side-by-side install"

# MCP clients the tests drive for real, from the npm registry (tests/test_mcp_clients.py): the
# official TypeScript SDK (what the MCP Inspector and Gemini CLI call through), the Inspector
# CLI and Claude Code (`claude mcp list`); and the agent clients tests/test_agent_loops.py runs
# offline against a stand-in of their model API: Claude Code, Codex CLI and Gemini CLI; and
# proper-lockfile, the lock Claude Code's team mailboxes use, which tests/test_claude_teams.py
# races ackdeck's pushes against. All into .cache/npm (gitignored). Without node, or offline,
# those tests skip with one line.
NPM_CACHE := .cache/npm
NPM_PACKAGES := @modelcontextprotocol/sdk@1.32.2 @modelcontextprotocol/inspector@0.15.0 \
	@anthropic-ai/claude-code@2.1.328 @openai/codex@0.169.0 @google/gemini-cli@0.61.0 \
	proper-lockfile@4.1.2
$(NPM_CACHE)/.installed: Makefile
	@command -v npm >/dev/null 2>&1 || { echo "npm not found: the TypeScript MCP client" \
		"tests will skip"; exit 0; }; \
	mkdir -p $(NPM_CACHE) && npm install --silent --no-audit --no-fund --prefix $(NPM_CACHE) \
		$(NPM_PACKAGES) && touch $@ || echo "could not install $(NPM_PACKAGES):" \
		"the TypeScript MCP client tests will skip"
npm-cache: $(NPM_CACHE)/.installed

# The agent-loop tests (the agent loops, each client's limits, proof from the transcript)
# against the newest published Claude Code, Codex and Gemini CLI, installed into their own
# cache (issue 41): run it when a client releases, before bumping NPM_PACKAGES. Not in CI: a
# client's release must not turn a submission red. Prints each client's version first; a
# failing limits test names the size that moved; then the largest read each client showed whole
# is written into docs/reference/agent-clients.md (bench/client_table.py): commit that table.
NPM_NEWEST := .cache/npm-newest
NEWEST_CLIENTS := @anthropic-ai/claude-code@latest @openai/codex@latest @google/gemini-cli@latest
test-clients-newest: $(STAMP)
	mkdir -p $(NPM_NEWEST) && npm install --silent --no-audit --no-fund --prefix $(NPM_NEWEST) \
		$(NEWEST_CLIENTS)
	@for p in $(NEWEST_CLIENTS:%@latest=%); do \
	  printf '%s %s\n' "$$p" "$$(node -p "require('./$(NPM_NEWEST)/node_modules/$$p/package.json').version")"; \
	done
	rm -f $(NPM_NEWEST)/client-report.jsonl
	ACKDECK_NPM_DIR=$(NPM_NEWEST) ACKDECK_CLIENT_REPORT=$(NPM_NEWEST)/client-report.jsonl \
		$(BIN)/python -m pytest -q -rs tests/test_agent_loops.py \
		tests/test_agent_client_limits.py tests/test_agent_proof.py; rc=$$?; \
	$(BIN)/python -m bench.client_table $(NPM_NEWEST)/client-report.jsonl && exit $$rc

define other_python
.venv$(subst .,,$(1))/.installed: pyproject.toml
	@test -n "$(call find_python,$(1))" || { echo "python$(1) not found: see README," \
		"section 'Supported Pythons'" >&2; exit 1; }
	test -x .venv$(subst .,,$(1))/bin/python || $(call find_python,$(1)) -m venv \
		.venv$(subst .,,$(1))
	.venv$(subst .,,$(1))/bin/python -m pip install -q --upgrade pip
	.venv$(subst .,,$(1))/bin/python -m pip install -q -e '.[test,docs]'
	touch $$@

test-$(1): .venv$(subst .,,$(1))/.installed redis-server npm-cache
	.venv$(subst .,,$(1))/bin/python -m pytest -q $(PYTEST_WORKERS)
endef
$(foreach v,$(PYTHONS),$(eval $(call other_python,$(v))))

test-newest: test-$(NEWEST)

demo: $(DEMO_STAMP)
	$(BIN)/ackdeck demo

# The documentation site into build/site, strictly: a broken link or anchor, or a page missing
# from the nav, fails. The CLI, JSON and MCP reference pages are generated from the code while
# it builds (docs/hooks/gen_ref.py). NO_MKDOCS_2_WARNING: Material's notice about its own
# future, printed on every build, says nothing about this site.
DOCS_ENV := NO_MKDOCS_2_WARNING=1
docs: $(DOCS_STAMP)
	$(DOCS_ENV) $(BIN)/mkdocs build --strict

docs-serve: $(DOCS_STAMP)
	$(DOCS_ENV) $(BIN)/mkdocs serve --strict -a 127.0.0.1:8000

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy -p ackdeck
	$(BIN)/lint-imports

# With coverage of the package (the total, and a failure below [tool.coverage.report] fail_under).
test: $(STAMP) lint redis-server npm-cache
	$(BIN)/python -m pytest -q $(PYTEST_WORKERS) --cov --cov-report=term:skip-covered

# ACKDECK_FIRST_TURN_RUNS: how many times each agent client must list ackdeck's tools in its
# first model request (tests/test_agent_loops.py; `make test` checks 3).
soak: $(STAMP) redis-server npm-cache
	ACKDECK_SOAK=long ACKDECK_FIRST_TURN_RUNS=20 $(BIN)/python -m pytest -q -m soak -s

bench: $(STAMP) redis-server
	$(BIN)/python -m bench

screenshots: $(STAMP)
	$(BIN)/python -m ackdeck.tui.screenshots screenshots

clean:
	rm -rf $(VENV) $(foreach v,$(PYTHONS),.venv$(subst .,,$(v))) .pytest_cache .mypy_cache .ruff_cache
