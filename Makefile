# biastest: two commands on a fresh machine.
#   make run   - create .venv if missing, install the pinned requirements, launch the product
#   make test  - same venv plus dev requirements (and Debian Chromium for browser tests), run every test
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 7860
export GRADIO_ANALYTICS_ENABLED := False
export HF_HUB_DISABLE_TELEMETRY := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: run test lint bench screenshots chromium clean-venv

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip==25.3

$(VENV)/.runtime-installed: requirements.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements-dev.txt requirements-ray.txt $(VENV)/.runtime-installed
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	touch $@

run: $(VENV)/.runtime-installed
	$(BIN)/python -m biastest.ui.serve --host $(HOST) --port $(PORT)

# Browser tests drive Debian's Chromium through Playwright (Playwright's own browser download cannot work here).
chromium:
	@if ! command -v chromium >/dev/null 2>&1; then \
		echo "Installing Debian chromium for the browser tests"; \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
		else sudo apt-get update -qq && sudo apt-get install -y -qq chromium chromium-driver >/dev/null; fi; \
	fi

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

test: $(VENV)/.dev-installed chromium
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

# The docs' screenshots (README.md, docs/apps.md): the browser tests, saving into docs/screenshots (make test saves them to a temp folder).
screenshots: $(VENV)/.dev-installed chromium
	BIASTEST_SCREENSHOTS=$(CURDIR)/docs/screenshots $(BIN)/python -m pytest -q tests/test_app_gpt_browser.py \
		tests/test_app_vqa_browser.py tests/test_app_psychophysics_browser.py

bench: $(VENV)/.runtime-installed
	$(BIN)/python -m benchmarks

clean-venv:
	rm -rf $(VENV)
