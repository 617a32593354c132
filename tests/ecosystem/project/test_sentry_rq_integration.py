"""Sentry's own RqIntegration with the switch on (RQFAST_AS_RQ=1: `import rq` is rqfast): every worker class at
concurrency 1 and 4 reports rqfast's jobs as it reports RQ's (sentry_checks.check).

Sentry patches RQ's `BaseWorker.perform_job` (with functools.wraps) and `handle_exception`, which every rqfast
worker class calls as RQ's do, at every concurrency (issue 30 items 7 and 8). The enqueue side (trace headers in
job.meta) is rqfast's Queue.enqueue_job, which Sentry patches too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sentry_checks
from eco_support import CONCURRENCIES, WORKER_CLASSES

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize('concurrency', CONCURRENCIES)
@pytest.mark.parametrize('worker_class', WORKER_CLASSES)
def test_sentrys_rq_integration_reports_each_job(
    worker_class: str, concurrency: int, clean_redis: str, tmp_path: Path
) -> None:
    sentry_checks.check(sentry_checks.run('switch', worker_class, concurrency, clean_redis, tmp_path))
