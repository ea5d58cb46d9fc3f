# Every target creates .venv if it is missing and installs the project into it.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test soak bench lint screenshots clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(shell command -v $(PY) || echo python3) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ackdeck demo

lint: $(STAMP)
	$(BIN)/ruff check $(wildcard core tui tests bench)
	$(BIN)/mypy core

test: $(STAMP) lint
	$(BIN)/python -m pytest -q

soak: $(STAMP)
	ACKDECK_SOAK=long $(BIN)/python -m pytest -q -m soak -s

bench: $(STAMP)
	$(BIN)/python -m bench

screenshots: $(STAMP)
	$(BIN)/python -m tui.screenshots screenshots

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
