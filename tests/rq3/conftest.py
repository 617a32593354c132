"""tests/rq3/ runs only beside rq 3.x (`python -m tests.rq3` builds that environment).

With rq 2.12 installed (the normal `python -m pytest` run) the test modules here are not collected
at all: they import rq 3.0's API (RateLimit, executions indexes) and compare rqfast with it.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    RQ_VERSION = version('rq')
except PackageNotFoundError:
    RQ_VERSION = ''

if not RQ_VERSION.startswith('3.'):
    collect_ignore_glob = ['test_*.py']
