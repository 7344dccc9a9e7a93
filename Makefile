# RAG Orchestrator — the README's commands. Every target sets up what it needs on a fresh machine.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(CURDIR)/.venv-sam/bin:$(PATH)

.PHONY: dev test test-fast lint checks fmt invoke bench eval build validate lock setup clean

setup:
	@bash devserver/bootstrap.sh

dev: setup  ## run the whole local stack on http://127.0.0.1:$${PORT:-8000}
	@$(PY) -m devserver

test:  ## set up and run the whole suite (lint and types, then unit, integration, packaging, the node clients, Chromium)
	@bash devserver/bootstrap.sh sam node browser
	@$(MAKE) --no-print-directory checks
	@$(PY) -m pytest $(PYTEST_ARGS)

test-fast: setup  ## unit tests only
	@$(PY) -m pytest tests/unit $(PYTEST_ARGS)

lint: setup checks

checks:  ## ruff (lint and format) and mypy on the core package, with what is installed
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/ruff format --check .
	@$(VENV)/bin/mypy

fmt: setup
	@$(VENV)/bin/ruff check --fix .
	@$(VENV)/bin/ruff format .

invoke: setup  ## make invoke FN=archive EVENT=events/schedule.json
	@test -n "$(FN)" -a -n "$(EVENT)" || { echo "usage: make invoke FN=<api|chat_stream|archive|ingest|attachments|lifecycle> EVENT=<file>"; exit 2; }
	@$(PY) -m devserver.invoke $(FN) $(EVENT)

bench: setup  ## benchmarks (see bench/README.md)
	@bash devserver/bootstrap.sh bench
	@$(PY) -m bench $(BENCH_ARGS)

eval: setup  ## answer quality on eval/questions.yaml: hit@1/hit@3, answer accuracy (see docs/retrieval.md)
	@$(PY) -m eval $(EVAL_ARGS)

validate:  ## sam validate --lint, and cfn-lint in the aws, aws-cn and aws-us-gov partitions
	@bash devserver/bootstrap.sh sam
	@sam validate --lint
	@cfn-lint --regions us-east-1 cn-north-1 us-gov-west-1 -- template.yaml

build: setup validate  ## sam build: the layer needs .venv's python3.12 and uv (layers/core/build_layer.py)
	@sam build

lock:  ## re-pin requirements/*.lock from requirements/*.in
	@cd requirements && ../$(VENV)/bin/uv pip compile --quiet --python-version 3.12 --no-header dev.in -o dev.lock
	@cd requirements && ../$(VENV)/bin/uv pip compile --quiet --python-version 3.12 --no-header sam.in -o sam.lock
	@cd requirements && ../$(VENV)/bin/uv pip compile --quiet --python-version 3.12 --no-header bench.in -o bench.lock

clean:
	rm -rf .aws-sam .local .pytest_cache .ruff_cache
