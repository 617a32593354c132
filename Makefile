# The few targets a newcomer looks for. `make test` runs the README's test command, as .ci/run does;
# `make all` is what CI checks besides: lint, format and types.
PYTHON ?= python

.PHONY: install test test-quick test-quiet trials matrix lint format mypy all bench rq-suite rq3 ecosystem chaos soak docs docs-serve

install:
	$(PYTHON) -m pip install -e '.[test,lint]'

test:
	python -m pip install -e '.[test]' && python -m pytest

test-quick:  # a first try, a minute or two: the engine, enqueue, the three worker classes (tests/subsets.py)
	$(PYTHON) -m pytest --subset quick

test-quiet:  # the tests that measure time itself: run them on a quiet machine (the default run leaves them out)
	$(PYTHON) -m pytest -m quiet

trials:  # the long trials the default run leaves out: the chaos suite and the fleets (some 5 minutes; CI runs them)
	$(PYTHON) -m pytest -m trial

matrix:  # CI's compatibility matrix (docs/compatibility.md): Python 3.10-3.13, redis-py 5-8, Valkey; pyenv's Pythons
	bash .ci/matrix

lint:  # needs the lint extra: python -m pip install -e '.[lint]'
	ruff check rqfast tests bench examples _rqfast_as_rq.py
	ruff format --check rqfast tests bench examples _rqfast_as_rq.py

format:
	ruff check --fix rqfast tests bench examples _rqfast_as_rq.py
	ruff format rqfast tests bench examples _rqfast_as_rq.py

mypy:
	mypy

all: lint mypy test

bench:
	$(PYTHON) -m bench

rq-suite:  # RQ 2.12.0's own test suite against rqfast, compared with tests/rq_suite/expectations.txt
	$(PYTHON) -m tests.rq_suite

rq3:  # the interop tests beside rq 3.0.0, in .venv-rq3 (created on first use)
	$(PYTHON) -m tests.rq3

ecosystem:  # django-rq's, rq-dashboard's and rq-scheduler's suites, rqfast's Sentry/OpenTelemetry/Django tests
	$(PYTHON) -m tests.ecosystem

chaos:  # the chaos suite as CI runs it (bounded: a few minutes); it prints its counts at the end
	$(PYTHON) -m pytest tests/chaos -q

soak:  # the longer soak: more jobs, kills and redis-server restarts (some 20 minutes)
	RQFAST_CHAOS_SOAK=1 $(PYTHON) -m pytest tests/chaos -q --timeout 3600

docs:  # the docs site into site/, as CI builds it (needs the docs extra: python -m pip install -e '.[docs]')
	mkdocs build --strict

docs-serve:  # the docs site on http://127.0.0.1:8000, rebuilt as you edit
	mkdocs serve
