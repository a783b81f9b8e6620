# ClusterWatch: `make demo` runs the whole stack with the simulator; `make test` runs every test.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: demo test bench lint check venv services db clean help image

help:
	@echo "make demo   - set everything up and run the stack with the simulator on http://127.0.0.1:$(PORT)"
	@echo "make test   - set everything up and run lint, checks and the whole test suite"
	@echo "make bench  - run the benchmarks in bench/ (figures beside their references)"
	@echo "make image  - build the container image, tagged $(IMAGE):<version> and $(IMAGE):sha-<commit>"

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.lock pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 needed, found " + sys.version.split()[0]' \
		|| { echo "Set PYTHON=/path/to/python3.11+"; exit 1; }
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV) || { echo "python3 -m venv failed: on Debian/Ubuntu apt-get install python3-venv"; exit 1; }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.lock
	@touch $@

services:
	@scripts/ensure_services.sh $(if $(filter test,$(MAKECMDGOALS)),--test,)

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	DEBUG=1 $(VENV)/bin/mypy
	DEBUG=1 $(PY) manage.py check --fail-level WARNING
	DEBUG=1 $(PY) manage.py makemigrations --check --dry-run

# Two workers (CI has 2 cores), each taking whole modules, slowest first (tests/conftest.py).
TEST_WORKERS ?= 2
test: venv services lint
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

demo: venv services
	$(PY) scripts/demo.py --port $(PORT)

bench: venv services
	@for bench in bench/bench_*.py; do echo "== $$bench"; $(PY) $$bench || exit 1; done

# The image's tags (docs/deploy.md "The image"): the version of pyproject.toml and the commit.
IMAGE ?= clusterwatch
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
image:
	docker build --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) \
		-t $(IMAGE):sha-$$(git rev-parse --short=12 HEAD) .

clean:
	rm -rf var artifacts
