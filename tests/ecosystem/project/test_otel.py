"""opentelemetry-instrumentation-rq 0.1.4 with the switch on: its publish span for each enqueue (RQ 3.0's
Queue._enqueue_job, on rqfast's enqueue path), its `setup dependencies` span for a job with a dependency, and
its perform span for each run (Job.perform) under every worker class at concurrency 1 and 4, each run's spans in
the trace its publish span started. (Its consume span, Worker.perform_job: test_otel_consume.py.)"""

from __future__ import annotations

from pathlib import Path

import otel_checks
import pytest
from eco_support import CONCURRENCIES, WORKER_CLASSES

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize('concurrency', CONCURRENCIES)
@pytest.mark.parametrize('worker_class', WORKER_CLASSES)
def test_publish_and_perform_spans(worker_class: str, concurrency: int, clean_redis: str, tmp_path: Path) -> None:
    seen = otel_checks.run(worker_class, concurrency, clean_redis, tmp_path)
    ids = seen['ids']
    publish = otel_checks.by_operation(seen['spans'], 'publish')
    assert set(publish) == set(ids)
    assert {span['kind'] for span in publish.values()} == {'PRODUCER'}
    assert {span['name'] for span in publish.values()} == {'publish otel'}
    setup = otel_checks.by_operation(seen['spans'], 'setup dependencies')
    assert set(setup) == {ids[2]}  # the one job with a dependency
    perform = otel_checks.by_operation(seen['spans'], 'perform')
    assert set(perform) == set(ids)
    for job_id in ids:  # each run in the trace its publish started
        assert perform[job_id]['trace_id'] == publish[job_id]['trace_id']
