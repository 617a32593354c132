"""RQ 3.0's ReadyJobRegistry: an rq 3.0 worker that dies between its two release steps leaves the
dependent in rq:ready:<q> (status ready_to_enqueue, on no queue). rqfast reads that registry as
rq 3.0 does, and its maintenance pass recovers the entry as rq 3.0's does (compared field by field
with rq 3.0's own recovery from the same state).
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
import rq
import rq.queue
import rq.registry
import rq.worker
from rq import RateLimit

import rqfast
import rqfast.registry
import rqfast.worker
from rqfast import maintenance
from tests.rq3 import probe_jobs

pytestmark = pytest.mark.timeout(60)

VOLATILE = {  # times of the two runs
    'enqueued_at',
    'created_at',
    'started_at',
    'ended_at',
    'last_heartbeat',
    'worker_name',
}


def crash_after_release(conn: redis.Redis, monkeypatch: pytest.MonkeyPatch, rate_limited: bool) -> None:
    """An rq 3.0 worker runs the parent and dies before pushing the released dependent."""
    conn.flushdb()
    q = rq.Queue('q', connection=conn)
    limit = {'rate_limit': RateLimit(key='db', concurrency=1)} if rate_limited else {}
    parent = q.enqueue(probe_jobs.add, 1, 2, job_id='parent')
    q.enqueue(probe_jobs.add, 0, 0, job_id='waiting')
    q.enqueue(
        probe_jobs.add, 3, 4, job_id='child', depends_on=rq.job.Dependency([parent], enqueue_at_front=True), **limit
    )
    with monkeypatch.context() as patch:
        patch.setattr(rq.queue.Queue, 'enqueue_ready_jobs_by_queue', lambda self, by_queue: None)
        rq.worker.SimpleWorker([q], name='dies', connection=conn).work(burst=True, max_jobs=1)
    assert conn.hget('rq:job:child', 'status') == b'ready_to_enqueue'
    assert conn.zrange('rq:ready:q', 0, -1) == [b'child']


def state(conn: redis.Redis) -> dict[str, Any]:
    raw = {k.decode(): v for k, v in conn.hgetall('rq:job:child').items()}
    child = {k: v.decode() for k, v in raw.items() if k not in VOLATILE and k != 'data'}
    return {
        'child': child,
        'queue': [m.decode() for m in conn.lrange('rq:queue:q', 0, -1)],
        'ready': conn.zcard('rq:ready:q'),
        'deferred': conn.zcard('rq:deferred:q'),
        'rl_waiting': [m.decode() for m in conn.zrange('rq:rl:db:rate_limited', 0, -1)],
        'rl_allowed': [m.decode() for m in conn.zrange('rq:rl:db:allowed', 0, -1)],
        'enqueued_at_set': conn.hget('rq:job:child', 'enqueued_at') != conn.hget('rq:job:child', 'created_at'),
    }


@pytest.mark.parametrize('rate_limited', [False, True])
def test_rqfast_maintenance_recovers_what_rq3_would(
    rate_limited: bool, redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    crash_after_release(redis_conn, monkeypatch, rate_limited)
    theirs = rq.registry.ReadyJobRegistry('q', connection=redis_conn)
    ours = rqfast.registry.ReadyJobRegistry('q', connection=redis_conn)
    assert ours.key == theirs.key
    assert ours.get_job_ids(cleanup=False) == theirs.get_job_ids(cleanup=False) == ['child']
    assert rqfast.Job.fetch('child', connection=redis_conn).get_status() == 'ready_to_enqueue'
    recovered = [job.id for job in theirs.cleanup()]  # the oracle: rq 3.0's maintenance step
    expected = state(redis_conn)
    assert recovered == ['child'] and expected['ready'] == 0

    crash_after_release(redis_conn, monkeypatch, rate_limited)
    report = maintenance.clean_registries(redis_conn, ['q'])
    assert report.ready_enqueued == 1
    assert state(redis_conn) == expected
    # the job then runs, on either worker, once
    rqfast.worker.SimpleWorker(['q'], connection=redis_conn).work(burst=True)
    assert rq.job.Job.fetch('child', connection=redis_conn).return_value() == 7
    assert rq.job.Job.fetch('child', connection=redis_conn).get_status() == 'finished'


def test_rqfast_registry_cleanup_matches_rq3(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    crash_after_release(redis_conn, monkeypatch, False)
    rq.registry.ReadyJobRegistry('q', connection=redis_conn).cleanup()
    expected = state(redis_conn)
    crash_after_release(redis_conn, monkeypatch, False)
    jobs = rqfast.Queue('q', connection=redis_conn).ready_job_registry.cleanup()
    assert [job.id for job in jobs] == ['child']
    assert state(redis_conn) == expected
    assert expected['queue'] == ['child', 'waiting']  # enqueue_at_front honoured


def test_rq3_worker_runs_what_rqfast_recovered(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    crash_after_release(redis_conn, monkeypatch, False)
    maintenance.clean_registries(redis_conn, ['q'])
    rq.worker.SimpleWorker(['q'], connection=redis_conn).work(burst=True)
    assert rq.job.Job.fetch('child', connection=redis_conn).return_value() == 7
    assert sorted(redis_conn.zrange('rq:finished:q', 0, -1)) == [b'child', b'parent', b'waiting']
