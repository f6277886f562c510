# GPU Portal: `make run` serves the demo at http://127.0.0.1:8000, `make test` runs the whole suite.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
HOST   ?= 127.0.0.1
PORT   ?= 8000
TEST_WORKERS ?= auto

.PHONY: run install migrate seed test test-fast test-core lint format services worker beat benchmarks readme-screenshots clean

$(STAMP): requirements.txt requirements-dev.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	@touch $(STAMP)

install: $(STAMP) ## Create .venv and install the pinned dependencies.

migrate: install
	$(BIN)/python manage.py migrate --noinput

seed: migrate
	$(BIN)/python manage.py seed_demo

run: seed ## Migrate, seed the demo organisation and serve http://127.0.0.1:8000 (alice / demo); PORT=8080 / HOST=0.0.0.0 to change.
	@echo "GPU Portal on http://$(HOST):$(PORT)/  (users: alice, dave, bob, erin, carol, finance; password: demo)"
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

test: install ## The whole suite, on every core (TEST_WORKERS=0 runs it in one process). Integration tests need PostgreSQL/Redis/Prometheus/Chromium (see docs/testing.md).
	$(BIN)/python -m pytest $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup) $(PYTEST_ARGS)

test-fast: install ## Unit tests only (no external service).
	$(BIN)/python -m pytest -m "not integration and not e2e" $(PYTEST_ARGS)

test-core: install ## The pure core's tests with plain pytest: no Django plugin, no settings, no database.
	env -u DJANGO_SETTINGS_MODULE $(BIN)/python -m pytest -p no:django -W ignore::pytest.PytestConfigWarning tests/gpucore $(PYTEST_ARGS)

readme-screenshots: install ## Retake the README's pictures from the demo in headless Chromium (docs/; needs PostgreSQL and Chromium).
	README_SCREENSHOTS=1 $(BIN)/python -m pytest -p no:xdist tests/e2e/test_readme_screenshots.py $(PYTEST_ARGS)

lint: install ## ruff (lint and format check) and the import contract that keeps the core pure.
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

services: ## Start PostgreSQL and Redis for the integration tests.
	docker compose up -d postgres redis

worker: install ## A Celery worker (needs CELERY_BROKER_URL).
	$(BIN)/celery -A portal worker --loglevel=INFO

beat: install ## Celery beat, the periodic scheduler (needs CELERY_BROKER_URL).
	$(BIN)/celery -A portal beat --loglevel=INFO

benchmarks: install ## Every benchmark, each a ratio against a baseline of the same run, then a summary of every target (needs DATABASE_URL on PostgreSQL; QUICK=1 a smoke run, STRICT=1 fails on a missed target; docs/performance.md).
	$(BIN)/python benchmarks/run_all.py $(if $(QUICK),--quick) $(if $(STRICT),--strict)

clean:
	rm -rf $(VENV) var staticfiles .pytest_cache .ruff_cache .hypothesis
