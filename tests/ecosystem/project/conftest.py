"""rqfast's own tests of RQ's ecosystem, with the real packages (rq 3.0, django-rq, sentry-sdk,
opentelemetry-instrumentation-rq): collected only in the virtualenv `python -m tests.ecosystem project` builds
(RQFAST_ECOSYSTEM=1), never by the normal run, whose rq is 2.12 and which has none of them.

Each test runs its scenario in a fresh interpreter (eco_support.run_scenario), so that RQFAST_AS_RQ applies at
interpreter start as it would in a deployment, and Sentry or OpenTelemetry is set up in that process alone.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

if os.environ.get('RQFAST_ECOSYSTEM') != '1':
    collect_ignore_glob = ['test_*.py']


@pytest.fixture
def clean_redis(redis_url: str, redis_conn: Any) -> str:
    redis_conn.flushdb()
    return redis_url
