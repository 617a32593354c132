"""RQ 3.0's ReadyJobRegistry (rq:ready:<q>): rqfast never leaves entries there (it pushes released
dependents in the parent's finish call), but an RQ 3.0 process that dies between its two release
steps does: dependent out of deferred, status ready_to_enqueue, in rq:ready:<q>, on no queue.
These tests build that state by hand (rq 2.12 is installed here; tests/rq3/test_rq3_ready.py makes
rq 3.0 leave it and compares with rq 3.0's own recovery) and check rqfast's recovery.
"""

from __future__ import annotations

import redis

from rqfast import Queue, RateLimit, SimpleWorker, keys, maintenance
from rqfast.job import Dependency
from rqfast.registry import ReadyJobRegistry


def strand(conn: redis.Redis, job_id: str, queue: str = 'q') -> None:
    """What an RQ 3.0 worker's finishing MULTI leaves when it dies before pushing the dependent."""
    conn.zrem(keys.deferred_registry_key(queue), job_id)
    conn.hset(keys.job_key(job_id), 'status', 'ready_to_enqueue')
    conn.zadd(keys.ready_registry_key(queue), {job_id: 1700000000})


def stranded_child(conn: redis.Redis, at_front: bool = False) -> Queue:
    q = Queue('q', connection=conn)
    parent = q.enqueue('operator.add', 1, 2, job_id='parent')
    q.enqueue('operator.add', 3, 4, job_id='waiting')
    q.enqueue('operator.add', 5, 6, job_id='child', depends_on=Dependency(jobs=[parent], enqueue_at_front=at_front))
    SimpleWorker([q], connection=conn).work(burst=True, max_jobs=1)  # parent only; releases child
    # rewind child to the crash state (released by an RQ 3.0 worker that died)
    conn.lrem(keys.queue_key('q'), 0, 'child')
    conn.zadd(keys.deferred_registry_key('q'), {'child': 1})
    strand(conn, 'child')
    return q


def test_maintenance_pass_pushes_a_stranded_ready_dependent(connection: redis.Redis) -> None:
    q = stranded_child(connection)
    registry = ReadyJobRegistry('q', connection=connection)
    assert registry.get_job_ids(cleanup=False) == ['child']
    assert q.ready_job_registry.key == keys.ready_registry_key('q')
    report = maintenance.clean_registries(connection, ['q'])
    assert (report.ready_enqueued, report.ready_dropped) == (1, 0)
    assert connection.zcard(keys.ready_registry_key('q')) == 0
    assert q.job_ids == ['waiting', 'child']
    job = q.fetch_job('child')
    assert job is not None and job.get_status() == 'queued' and job.enqueued_at is not None
    assert 'child' not in q.deferred_job_registry.get_job_ids()
    SimpleWorker([q], connection=connection).work(burst=True)
    assert job.get_status(refresh=True) == 'finished' and job.return_value() == 11


def test_cleanup_enqueues_at_the_front_and_returns_the_jobs(connection: redis.Redis) -> None:
    q = stranded_child(connection, at_front=True)
    jobs = ReadyJobRegistry('q', connection=connection).cleanup()
    assert [job.id for job in jobs] == ['child']
    assert q.job_ids == ['child', 'waiting']
    assert ReadyJobRegistry('q', connection=connection).cleanup() == []  # nothing left


def test_stale_entries_are_dropped_without_enqueueing(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    q.enqueue('operator.add', 1, 2, job_id='already_queued')
    connection.zadd(keys.ready_registry_key('q'), {'already_queued': 1, 'gone': 1})
    report = maintenance.clean_registries(connection, ['q'])
    assert (report.ready_enqueued, report.ready_dropped) == (0, 2)
    assert q.job_ids == ['already_queued']
    assert connection.zcard(keys.ready_registry_key('q')) == 0


def test_a_stranded_rate_limited_dependent_waits_for_a_slot(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    limit = RateLimit(key='db', concurrency=1)
    q.enqueue('operator.add', 0, 0, job_id='holder', rate_limit=limit)
    parent = q.enqueue('operator.add', 1, 2, job_id='parent')
    q.enqueue('operator.add', 3, 4, job_id='child', depends_on=parent, rate_limit=limit)
    strand(connection, 'child')
    maintenance.clean_registries(connection, ['q'])
    assert connection.hget(keys.job_key('child'), 'status') == b'rate_limited'
    assert connection.zrange(keys.rate_limit_waiting_key('db'), 0, -1) == [b'child']
    assert 'child' not in q.job_ids
    SimpleWorker([q], connection=connection).work(burst=True)
    assert connection.hget(keys.job_key('child'), 'status') == b'finished'


def test_delete_of_a_ready_job_leaves_the_registry(connection: redis.Redis) -> None:
    q = stranded_child(connection)
    job = q.fetch_job('child')
    assert job is not None
    job.delete()
    assert connection.zcard(keys.ready_registry_key('q')) == 0
