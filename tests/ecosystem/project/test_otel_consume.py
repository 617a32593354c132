"""opentelemetry-instrumentation-rq's consume span (it wraps RQ's `Worker.perform_job` with wrapt) with the switch
on, for every worker class at concurrency 1 and 4: one per job, in the trace its publish span started, parent of
its perform span.

rqfast's workers call a wrapt-wrapped perform_job as RQ's do, at every concurrency (issue 30 items 7 and 8:
patched hooks honoured by identity). RQ's own SimpleWorker derives from BaseWorker, not Worker, so RQ gives
it no consume span: rqfast's SimpleWorker is held to the same (none, or one per job if it derives from Worker).
"""

from __future__ import annotations

from pathlib import Path

import otel_checks
import pytest
from eco_support import CONCURRENCIES, WORKER_CLASSES, run_scenario

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize('concurrency', CONCURRENCIES)
@pytest.mark.parametrize('worker_class', WORKER_CLASSES)
def test_consume_spans(worker_class: str, concurrency: int, clean_redis: str, tmp_path: Path) -> None:
    derives_from_worker = run_scenario(
        f'import json, rq; print(json.dumps(issubclass(rq.{worker_class}, rq.Worker)))', as_rq=True
    )
    seen = otel_checks.run(worker_class, concurrency, clean_redis, tmp_path)
    ids = seen['ids']
    consume = otel_checks.by_operation(seen['spans'], 'consume')
    if not derives_from_worker:
        assert consume == {}
        return
    assert set(consume) == set(ids)
    publish = otel_checks.by_operation(seen['spans'], 'publish')
    perform = otel_checks.by_operation(seen['spans'], 'perform')
    for job_id in ids:
        assert consume[job_id]['kind'] == 'CONSUMER'
        assert consume[job_id]['trace_id'] == publish[job_id]['trace_id']
        assert perform[job_id]['trace_id'] == consume[job_id]['trace_id']
