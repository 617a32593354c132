"""One Sentry scenario, run and checked the same way for Sentry's own RqIntegration (the switch on) and for
rqfast.contrib.sentry (the switch off): 2 jobs that succeed and 2 that fail, enqueued inside a producer's
transaction, run by one worker of the given class and concurrency."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from eco_support import run_scenario
from sentry_app import read_events

SCENARIO = """
import json, os
import redis, sentry_sdk
import eco_jobs, sentry_app
if os.environ['RQFAST_SENTRY_WITH'] == 'switch':
    from rq import Queue
else:
    from rqfast import Queue
conn = redis.Redis.from_url(os.environ['REDIS_URL'])
queue = Queue('sentry', connection=conn)
with sentry_sdk.start_transaction(name='producer', op='test.producer') as producer:
    ok = [queue.enqueue(eco_jobs.ok, n) for n in range(2)]
    bad = [queue.enqueue(eco_jobs.fail, f'boom {n}') for n in range(2)]
meta = [queue.fetch_job(job.id).meta.get('_sentry_trace_headers') for job in ok + bad]
worker_class = getattr(sentry_app, os.environ['WORKER_CLASS'])
worker = worker_class([queue], connection=conn, concurrency=int(os.environ['CONCURRENCY']))
worker.work(burst=True, logging_level='WARNING')
sentry_sdk.flush()
statuses = [str(getattr(s, 'value', s)) for s in (queue.fetch_job(job.id).get_status() for job in ok + bad)]
print(json.dumps({'trace_id': producer.trace_id, 'ok': [j.id for j in ok], 'bad': [j.id for j in bad],
                  'meta': meta, 'statuses': statuses}))
"""


def run(with_: str, worker_class: str, concurrency: int, redis_url: str, tmp_path: Path) -> dict[str, Any]:
    events_file = tmp_path / 'sentry-events.jsonl'
    env = {
        'REDIS_URL': redis_url,
        'RQFAST_SENTRY_EVENTS': str(events_file),
        'RQFAST_SENTRY_WITH': with_,
        'WORKER_CLASS': worker_class,
        'CONCURRENCY': str(concurrency),
    }
    seen = run_scenario(SCENARIO, as_rq=with_ == 'switch', env=env)
    seen['events'] = read_events(str(events_file))
    return seen


def check(seen: dict[str, Any]) -> None:
    """Exactly one error event per failed job (RQ's `rq-job` extra) and none from the worker's log; one
    transaction per job, in the producer's trace; the trace headers in each job's meta."""
    assert seen['statuses'] == ['finished', 'finished', 'failed', 'failed']
    assert all(isinstance(headers, dict) and headers.get('sentry-trace') for headers in seen['meta']), seen['meta']
    events = seen['events']
    errors = [e['payload'] for e in events if e['type'] == 'event']
    job_errors = Counter(e.get('extra', {}).get('rq-job', {}).get('job_id') for e in errors)
    assert job_errors == Counter(seen['bad']), [(e.get('logger'), e.get('message'), e.get('extra')) for e in errors]
    for error in errors:
        (exception,) = error['exception']['values']
        assert exception['type'] == 'ValueError' and exception['value'].startswith('boom')
        assert error['extra']['rq-job']['func'] == 'eco_jobs.fail'
    assert not [e for e in errors if e.get('logger')], 'a log line reached Sentry as a second event'
    runs = [e['payload'] for e in events if e['type'] == 'transaction']
    runs = [t for t in runs if t['contexts']['trace'].get('op') == 'queue.task.rq']
    ran = Counter(t.get('extra', {}).get('rq-job', {}).get('job_id') for t in runs)
    assert ran == Counter(seen['ok'] + seen['bad']), [(t['transaction'], t.get('extra')) for t in runs]
    assert {t['contexts']['trace']['trace_id'] for t in runs} == {seen['trace_id']}
    assert {t['transaction'] for t in runs} == {'eco_jobs.ok', 'eco_jobs.fail'}
