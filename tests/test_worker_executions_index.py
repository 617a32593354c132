"""RQ 3.0's per-worker executions index, which rqfast writes beside RQ 2.12's layout.

RQ 3.0 finds a worker's running jobs in `rq:worker:<name>:executions` (a set of `<job id>:<execution
id>`), not in the worker hash's `current_job`; rqfast keeps both, so rq 3.0's `Worker.all()` and
rq-dashboard see a busy rqfast worker's job. The claim adds the member (TTL: the worker hash's busy
TTL, as RQ 3.0 leaves it), the finish removes it, heartbeats refresh the TTL and death
deletes the set (an abandoned job's member stays, as in RQ 3.0, whose readers skip members whose
execution hash has expired). RQ 2.12 never reads the key. tests/rq3/ checks the same
against rq 3.0's readers themselves.
"""

from __future__ import annotations

from typing import Any

import redis

from rqfast import Queue, SimpleWorker, engine, keys
from rqfast.dates import now
from rqfast.defaults import DEFAULT_JOB_MONITORING_INTERVAL, JOB_HEARTBEAT_GRACE
from rqfast.job import get_current_job
from rqfast.worker import workerhash

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]


def index_inside() -> dict[str, Any]:
    """The running worker's executions index and started registry, read from inside the job."""
    job = get_current_job()
    assert job is not None
    conn = job.connection
    index = keys.worker_executions_key(job.worker_name)
    return {
        'members': sorted(m.decode() for m in conn.smembers(index)),
        'ttl': conn.ttl(index),
        'wip': sorted(m.decode() for m in conn.zrange(keys.started_registry_key('q'), 0, -1)),
    }


def claim(conn: redis.Redis, worker: str) -> engine.Claim:
    claimed = engine.claim_job(conn, engine.WorkerRef(worker, ['q'], job_monitoring_interval=30))
    assert claimed
    return claimed


def test_running_job_is_in_its_workers_index_and_leaves_it(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    look = q.enqueue(index_inside, job_timeout=20)
    q.enqueue(jobs.add, 1, 2)
    SimpleWorker(['q'], name='w', connection=connection).work(burst=True)
    seen = look.return_value()
    assert len(seen['members']) == 1 and seen['members'] == seen['wip']  # `<id>:<execution id>`, as rq:wip
    assert seen['members'][0].startswith(f'{look.id}:')
    busy_ttl = DEFAULT_JOB_MONITORING_INTERVAL + JOB_HEARTBEAT_GRACE  # the worker's busy TTL (as a job's heartbeat)
    assert busy_ttl - 5 < seen['ttl'] <= busy_ttl
    assert connection.exists(keys.worker_executions_key('w')) == 0  # finished, then idle, then dead


def test_claims_heartbeat_and_death(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    job, other = q.enqueue(jobs.add, 1, 2), q.enqueue(jobs.add, 3, 4)
    claimed, second = claim(connection, 'w1'), claim(connection, 'w1')
    index = keys.worker_executions_key('w1')
    assert connection.smembers(index) == {  # several executions per worker: one member each
        f'{job.id}:{claimed.execution_id}'.encode(),
        f'{other.id}:{second.execution_id}'.encode(),
    }
    assert 30 + JOB_HEARTBEAT_GRACE - 5 < connection.ttl(index) <= 30 + JOB_HEARTBEAT_GRACE  # the worker hash's
    assert connection.ttl(index) == connection.ttl(keys.worker_key('w1'))
    workerhash.write_heartbeat(connection, 'w1', 77, now(), 90, '1', [(job.id, 'q', claimed.execution_id)])
    assert 70 < connection.ttl(index) <= 77  # follows the worker hash's TTL, as RQ 3.0's heartbeat does
    workerhash.write_death(connection, 'w1', now(), ['q'])
    assert connection.exists(index) == 0


def test_rqfast_reads_a_busy_rq3_worker_from_its_index(connection: redis.Redis) -> None:
    """An RQ 3.0 worker writes no current_job (layout as tests/rq3/probe.py observed it)."""
    job = Queue('q', connection=connection).enqueue(jobs.add, 1, 2)
    worker_key = keys.worker_key('rq3w')
    connection.hset(worker_key, mapping={'state': 'busy', 'queues': 'q', 'birth': '2026-11-22T00:00:00.000000Z'})
    connection.sadd(keys.WORKERS, worker_key)
    index = keys.worker_executions_key('rq3w')
    connection.sadd(index, f'{job.id}:x1', '0-gone-job:x0')  # sorts first, has no execution hash: skipped
    connection.hset(keys.execution_key(job.id, 'x1'), mapping={'id': 'x1', 'job_id': job.id, 'worker_name': 'rq3w'})
    [seen] = SimpleWorker.all(connection=connection)
    assert seen.get_current_job_id() == job.id
    assert seen.get_current_job().id == job.id
    connection.delete(keys.execution_key(job.id, 'x1'))
    assert seen.get_current_job_id() == job.id  # RQ 3.0's: the executions read are cached until refreshed
    assert seen.get_current_executions(refresh=True) == []
    assert seen.get_current_job_id() is None


def test_a_hand_prepared_execution_is_in_the_index_and_in_worker_executions(connection: redis.Redis) -> None:
    """RQ 3.0's prepare_execution/cleanup_execution by hand: the index, worker.executions and worker.execution."""
    from rqfast import Worker

    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.add, 1, 2)
    worker = Worker([queue], name='w1', connection=connection)
    first, second = worker.prepare_execution(job), worker.prepare_execution(job)
    members = {m.decode() for m in connection.smembers(keys.worker_executions_key('w1'))}
    assert members == {first.composite_key, second.composite_key} and worker.current_execution_count == 2
    assert worker.executions == {first.id: first, second.id: second}
    assert connection.hget(first.key, 'job_id') == job.id.encode()
    assert worker.get_current_job() is first._job is job  # the in-process instance, no fetch
    with connection.pipeline() as pipeline:
        worker.cleanup_execution(job, pipeline=pipeline, execution=first)
        pipeline.execute()
    assert worker.executions == {second.id: second}
    assert {m.decode() for m in connection.smembers(keys.worker_executions_key('w1'))} == {second.composite_key}
    connection.delete(second.key)  # an expired execution: its member is dropped when read
    assert Worker.find_by_key(worker.key, connection=connection).get_current_executions() == []  # type: ignore[union-attr]
    assert connection.scard(keys.worker_executions_key('w1')) == 0


def test_by_hand_hooks_end_only_the_execution_they_are_given(connection: redis.Redis) -> None:
    """RQ 3.0: handle_job_failure without execution= leaves the prepared execution to the next hook."""
    from rqfast import Worker

    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.div_by_zero)
    worker = Worker([queue], connection=connection)
    worker.register_birth()
    execution = worker.prepare_execution(job)
    worker.handle_job_failure(job, queue)
    assert connection.exists(execution.key)
    worker.handle_job_success(job, queue, None, execution)
    assert not connection.exists(execution.key)
    worker.refresh()
    assert (worker.failed_job_count, worker.successful_job_count) == (1, 1)
