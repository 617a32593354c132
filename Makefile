# The few targets a newcomer looks for. `make test` runs the README's test command, as .ci/run does.
PYTHON ?= python

.PHONY: install test lint bench rq-suite

install:
	$(PYTHON) -m pip install -e '.[test]'

test:
	python -m pip install -e '.[test]' && python -m pytest

lint:  # needs ruff: python -m pip install -e '.[lint]'
	ruff check rqfast tests

bench:
	$(PYTHON) -m bench

rq-suite:  # RQ 2.12.0's own test suite against rqfast, compared with tests/rq_suite/expectations.txt
	$(PYTHON) -m tests.rq_suite
