"""A small application written for RQ 3.0, run as it is (against rq 3.0.0) and with its imports
rewritten to rqfast (tests/rq3/test_rq3_app.py): it must print the same observations.

It uses what RQ 3.0 added: worker hooks with the `execution` argument, `get_current_executions()`,
the `rq.callbacks`, `rq.job_lifecycle` and `rq.rate_limit` modules, concurrency rate limits.

    python tests/rq3/app3.py redis://127.0.0.1:PORT/DB
"""

from __future__ import annotations

import json
import sys
from typing import Any

from redis import Redis
from rq import Callback, Queue
from rq.callbacks import execute_success_callback
from rq.job import JobStatus
from rq.job_lifecycle import format_exc_info
from rq.rate_limit import RateLimit, release_slot
from rq.worker import SimpleWorker

from tests.rq3 import app3_jobs

EVENTS: list[list[Any]] = []


class AppWorker(SimpleWorker):
    """The hooks an application overrides, with RQ 3.0's signatures."""

    def execute_job(self, job, queue):
        EVENTS.append(['execute', job.id])
        return super().execute_job(job, queue)

    def perform_job(self, job, queue, execution):
        current = sorted(e.job_id for e in self.get_current_executions(refresh=True))
        EVENTS.append(['perform', job.id, execution.job_id == job.id, current])
        return super().perform_job(job, queue, execution)

    def handle_job_success(self, job, queue, started_job_registry, execution):
        EVENTS.append(['success', job.id, execution.job_id, job.id in started_job_registry])
        return super().handle_job_success(job, queue, started_job_registry, execution)

    def handle_job_failure(self, job, queue, started_job_registry=None, exc_string='', execution=None):
        last_line = exc_string.strip().splitlines()[-1] if exc_string else ''
        EVENTS.append(['failure', job.id, last_line, execution.job_id if execution else None])
        return super().handle_job_failure(
            job, queue, started_job_registry=started_job_registry, exc_string=exc_string, execution=execution
        )


def main(url: str) -> dict[str, Any]:
    conn = Redis.from_url(url)
    conn.flushdb()
    queue = Queue('app', connection=conn)
    limit = RateLimit(key='app-limit', concurrency=1)
    queue.enqueue(app3_jobs.add, 2, 3, job_id='ok', on_success=Callback(app3_jobs.record_success), rate_limit=limit)
    queue.enqueue(app3_jobs.add, 4, 5, job_id='limited', rate_limit=limit)
    queue.enqueue(app3_jobs.boom, 'bad input', job_id='bad', on_failure=Callback(app3_jobs.record_failure))
    before = {job_id: queue.fetch_job(job_id).get_status().value for job_id in ('ok', 'limited', 'bad')}
    worker = AppWorker([queue], connection=conn, name='app-worker')
    worker.work(burst=True, logging_level='WARNING')
    jobs = {job_id: queue.fetch_job(job_id) for job_id in ('ok', 'limited', 'bad')}
    return {
        'events': EVENTS,
        'before': before,
        'status': {job_id: job.get_status().value for job_id, job in jobs.items()},
        'return_value': {job_id: job.return_value() for job_id, job in jobs.items()},
        'callbacks': [m.decode() for m in conn.lrange('app:callbacks', 0, -1)],
        'finished': sorted(m.decode() for m in conn.zrange('rq:finished:app', 0, -1)),
        'failed': sorted(m.decode() for m in conn.zrange('rq:failed:app', 0, -1)),
        'rate_limit': {
            'allowed': conn.zcard('rq:rl:app-limit:allowed'),
            'waiting': conn.zcard('rq:rl:app-limit:rate_limited'),
        },
        'executions_after': worker.current_execution_count,
        'release_slot_of_finished': release_slot(jobs['ok']),
        'format_exc_info': format_exc_info((ValueError, ValueError('x'), None)).strip().splitlines()[-1],
        'callbacks_module': execute_success_callback.__name__,
        'statuses_known': JobStatus.READY_TO_ENQUEUE.value,
    }


if __name__ == '__main__':
    print(json.dumps(main(sys.argv[1]), sort_keys=True))
