"""rqfast.contrib.sentry (the switch off, rq 3.0 installed beside rqfast): every worker class at concurrency 1 and
4 reports what Sentry's RqIntegration reports for RQ (sentry_checks.check)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sentry_checks
from eco_support import CONCURRENCIES, WORKER_CLASSES

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize('concurrency', CONCURRENCIES)
@pytest.mark.parametrize('worker_class', WORKER_CLASSES)
def test_rqfast_integration_reports_each_job(
    worker_class: str, concurrency: int, clean_redis: str, tmp_path: Path
) -> None:
    sentry_checks.check(sentry_checks.run('contrib', worker_class, concurrency, clean_redis, tmp_path))
