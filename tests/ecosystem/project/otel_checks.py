"""One OpenTelemetry scenario (RQInstrumentor, the switch on): 3 jobs enqueued (one depending on another), run by
one worker of the given class and concurrency; the instrumentation's spans, read back by kind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eco_support import run_scenario
from otel_app import INSTRUMENTATION, read_spans

SCENARIO = """
import json, os
import redis
import otel_app
from rq import Queue
conn = redis.Redis.from_url(os.environ['REDIS_URL'])
queue = Queue('otel', connection=conn)
first = queue.enqueue('eco_jobs.ok', 1)
second = queue.enqueue('eco_jobs.ok', 2)
child = queue.enqueue('eco_jobs.ok', 3, depends_on=first)
worker_class = getattr(otel_app, os.environ['WORKER_CLASS'])
worker_class([queue], connection=conn, concurrency=int(os.environ['CONCURRENCY'])).work(burst=True)
jobs = [first, second, child]
statuses = [queue.fetch_job(job.id).get_status() for job in jobs]
print(json.dumps({'ids': [job.id for job in jobs], 'statuses': [str(getattr(s, 'value', s)) for s in statuses]}))
"""


def run(worker_class: str, concurrency: int, redis_url: str, tmp_path: Path) -> dict[str, Any]:
    spans_file = tmp_path / 'spans.jsonl'
    env = {
        'REDIS_URL': redis_url,
        'RQFAST_OTEL_SPANS': str(spans_file),
        'WORKER_CLASS': worker_class,
        'CONCURRENCY': str(concurrency),
    }
    seen = run_scenario(SCENARIO, as_rq=True, env=env)
    spans = [span for span in read_spans(str(spans_file)) if span['scope'] == INSTRUMENTATION]
    seen['spans'] = spans
    assert seen['statuses'] == ['finished'] * 3
    return seen


def by_operation(spans: list[dict[str, Any]], operation: str) -> dict[str, dict[str, Any]]:
    """The spans of one operation (publish, setup dependencies, consume, perform) by job id."""
    found = [s for s in spans if s['attributes'].get('messaging.operation.name') == operation]
    ids = [s['attributes'].get('rq.job.id') for s in found]
    assert len(set(ids)) == len(ids), f'{operation}: more than one span for a job: {found}'
    return dict(zip(ids, found, strict=True))
