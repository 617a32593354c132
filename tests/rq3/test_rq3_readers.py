"""RQ 3.0's readers (`Worker.all()`, `Job.fetch`, `Queue` and its registries, rq-dashboard) on rqfast's state.

Each scenario runs twice: written by rq 3.0 itself (the oracle) and by rqfast; rq 3.0 then reads both
and the answers must be the same. A busy worker is looked at from inside the job it is running.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
import rq
import rq.worker
from rq.registry import (
    DeferredJobRegistry,
    FailedJobRegistry,
    FinishedJobRegistry,
    ScheduledJobRegistry,
    StartedJobRegistry,
)

import rqfast
import rqfast.worker
from tests.rq3 import probe_jobs

pytestmark = pytest.mark.timeout(60)

IMPLS = ['rq', 'rqfast']


def queue(impl: str, conn: redis.Redis, name: str = 'q') -> Any:
    return (rq.Queue if impl.startswith('rq-') or impl == 'rq' else rqfast.Queue)(name, connection=conn)


WORKERS = {
    'rq': rq.worker.SimpleWorker,
    'rq-fork': rq.worker.Worker,
    'rqfast': rqfast.worker.SimpleWorker,
    'rqfast-fork': rqfast.worker.Worker,
}


def run_worker(impl: str, conn: redis.Redis, name: str = 'w3', queues: tuple[str, ...] = ('q',)) -> None:
    cls = WORKERS[impl]
    cls(list(queues), name=name, connection=conn).work(burst=True, logging_level='WARNING')


@pytest.mark.parametrize('impl', list(WORKERS))
def test_worker_all_sees_the_running_job(impl: str, redis_url: str, redis_conn: redis.Redis) -> None:
    job = queue(impl, redis_conn).enqueue(probe_jobs.rq_sees_workers, redis_url, job_id='looker')
    run_worker(impl, redis_conn)
    seen = rq.job.Job.fetch(job.id, connection=redis_conn).return_value()
    assert seen == [
        {
            'name': 'w3',
            'state': 'busy',
            'current_job_id': 'looker',
            'current_execution_count': 1,
            'execution_jobs': ['looker'],
            'execution_workers': ['w3'],
        }
    ]


@pytest.mark.parametrize('impl', list(WORKERS))
def test_dashboard_sees_the_running_job(impl: str, redis_url: str, redis_conn: redis.Redis) -> None:
    job = queue(impl, redis_conn).enqueue(probe_jobs.dashboard_sees, redis_url, job_id='looker')
    run_worker(impl, redis_conn)
    seen = rq.job.Job.fetch(job.id, connection=redis_conn).return_value()
    assert len(seen) == 1
    assert seen[0]['name'] == 'w3'
    assert seen[0]['state'] == 'busy'
    assert seen[0]['current_job'] != 'idle', 'rq-dashboard shows the busy worker as idle'
    assert seen[0]['current_job']['job_id'] == 'looker'


@pytest.mark.parametrize('impl', IMPLS)
def test_idle_worker_reads_idle(impl: str, redis_conn: redis.Redis) -> None:
    """After a burst the worker is dead; a worker that ran a job and went idle shows no execution."""
    queue(impl, redis_conn).enqueue(probe_jobs.add, 1, 2)
    run_worker(impl, redis_conn)
    assert rq.Worker.all(connection=redis_conn) == []
    assert not redis_conn.keys('rq:worker:w3:executions')
    assert not redis_conn.keys('rq:execution:*')


def scenario(impl: str, conn: redis.Redis) -> dict[str, Any]:
    """Jobs in every place (finished, failed, deferred, scheduled, queued), then what rq 3.0 reads."""
    conn.flushdb()
    q = queue(impl, conn)
    q.enqueue(probe_jobs.add, 2, 3, job_id='ok', result_ttl=600, meta={'m': 1})
    q.enqueue(probe_jobs.boom, 'bad thing', job_id='bad', failure_ttl=900)
    run_worker(impl, conn)
    parent = q.enqueue(probe_jobs.add, 0, 0, job_id='parent')
    q.enqueue(probe_jobs.add, 1, 1, job_id='child', depends_on=parent)
    from datetime import datetime, timedelta, timezone

    q.enqueue_at(datetime.now(timezone.utc) + timedelta(hours=1), probe_jobs.add, 3, 3, job_id='later')
    rq3 = rq.Queue('q', connection=conn)
    read: dict[str, Any] = {
        'queue_count': rq3.count,
        'queue_ids': rq3.get_job_ids(),
        'queues': [x.name for x in rq.Queue.all(connection=conn)],
        'finished': FinishedJobRegistry(queue=rq3).get_job_ids(),
        'failed': FailedJobRegistry(queue=rq3).get_job_ids(),
        'deferred': DeferredJobRegistry(queue=rq3).get_job_ids(),
        'scheduled': ScheduledJobRegistry(queue=rq3).get_job_ids(),
        'started': StartedJobRegistry(queue=rq3).get_job_ids(),
    }
    for job_id in ('ok', 'bad', 'parent', 'child', 'later'):
        job = rq.job.Job.fetch(job_id, connection=conn)
        result = job.latest_result()
        read[job_id] = {
            'status': job.get_status(),
            'func': job.func_name,
            'args': job.args,
            'meta': job.meta,
            'origin': job.origin,
            'result_ttl': job.result_ttl,
            'failure_ttl': job.failure_ttl,
            'dependency_ids': job.dependency_ids,
            'rate_limit_key': job.rate_limit_key,
            'return_value': job.return_value(),
            'result_type': result.type if result else None,
            'exc_tail': (result.exc_string or '').strip().splitlines()[-1:] if result else None,
            'worker_name': job.worker_name,
        }
    return read


def test_job_fetch_and_queue_read_rqfast_state_as_rq3s(redis_conn: redis.Redis) -> None:
    expected = scenario('rq', redis_conn)
    actual = scenario('rqfast', redis_conn)
    assert actual == expected


def test_rqfast_reads_jobs_in_rq3s_new_statuses(redis_conn: redis.Redis) -> None:
    """A job waiting for a rate-limit slot, and a dependent between release and push (ready_to_enqueue)."""
    from rq import RateLimit
    from rq.registry import ReadyJobRegistry

    q = rq.Queue('q', connection=redis_conn)
    rl = RateLimit(key='k', concurrency=1)
    q.enqueue(probe_jobs.add, 1, 1, job_id='holder', rate_limit=rl)
    q.enqueue(probe_jobs.add, 2, 2, job_id='waiter', rate_limit=rl)
    parent = q.enqueue(probe_jobs.add, 3, 3, job_id='parent')
    kid = q.enqueue(probe_jobs.add, 4, 4, job_id='kid', depends_on=parent)
    with redis_conn.pipeline() as pipe:
        ReadyJobRegistry(queue=q).register_jobs([kid], pipeline=pipe)  # what a worker does before pushing
        pipe.execute()
    assert rq.job.Job.fetch('kid', connection=redis_conn).get_status() == 'ready_to_enqueue'
    statuses = {i: rqfast.Job.fetch(i, connection=redis_conn).get_status() for i in ('holder', 'waiter', 'kid')}
    assert statuses == {'holder': 'queued', 'waiter': 'rate_limited', 'kid': 'ready_to_enqueue'}


@pytest.mark.parametrize('impl', IMPLS)
def test_rqfast_worker_all_sees_the_running_job(impl: str, redis_url: str, redis_conn: redis.Redis) -> None:
    """The other way round: rqfast's reader on a busy rq 3.0 worker (which keeps no current_job)."""
    job = queue(impl, redis_conn).enqueue(probe_jobs.rqfast_sees_workers, redis_url, job_id='looker')
    run_worker(impl, redis_conn)
    seen = rq.job.Job.fetch(job.id, connection=redis_conn).return_value()
    assert seen == [{'name': 'w3', 'state': 'busy', 'current_job_id': 'looker'}]
