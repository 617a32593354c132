"""RQ 3.0's concurrency rate limits in rqfast alone (tests/rq3/test_rq3_rate_limit.py has rq 3.0 as the
oracle): RateLimit's checks, the enqueue's writes and its one round trip, slots freed and waiters promoted
by the finish, a dependent, a scheduled job, cancel, delete and the maintenance sweep; then a fleet of
rqfast workers never running more than `concurrency` jobs of a key at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

import rqfast
from rqfast import RateLimit, maintenance
from rqfast.rate_limit import RateLimitRegistry, clean_rate_limits
from rqfast.worker import SimpleWorker
from tests import rate_limit_jobs
from tests.test_worker_roundtrips import count_round_trips, per_job  # noqa: F401  (count_round_trips: a fixture)

pytestmark = pytest.mark.timeout(60)

HELPER = Path(__file__).with_name('worker_process.py')
ROOT = str(Path(__file__).resolve().parent.parent)


def zset(conn: redis.Redis, key: str) -> list[str]:
    return [m.decode() for m in conn.zrange(key, 0, -1)]


def status(conn: redis.Redis, job_id: str) -> str:
    return conn.hget(f'rq:job:{job_id}', 'status').decode()


def enqueue(q: rqfast.Queue, job_id: str, concurrency: int = 2, **options: Any) -> rqfast.Job:
    rl = RateLimit(key='reports', concurrency=concurrency)
    return q.enqueue(rate_limit_jobs.took, job_id=job_id, rate_limit=rl, **options)


@pytest.mark.parametrize(
    ('key', 'concurrency', 'message'),
    [
        ('', 2, 'key must not be empty'),
        (None, 2, 'key must not be empty'),
        (5, 2, 'key must be a string'),
        ('k', 0, 'concurrency must be an integer of at least 1'),
        ('k', '2', 'concurrency must be an integer of at least 1'),
        ('k', 1.5, 'concurrency must be an integer of at least 1'),
        ('k', True, 'concurrency must be an integer of at least 1'),
    ],
)
def test_rate_limit_checks_its_arguments(key: Any, concurrency: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RateLimit(key=key, concurrency=concurrency)


def test_refused_enqueues_write_nothing(redis_conn: redis.Redis) -> None:
    rl = RateLimit(key='reports', concurrency=1)
    q = rqfast.Queue('q', connection=redis_conn)
    with pytest.raises(ValueError, match='unique=True is not supported with rate-limited jobs'):
        q.enqueue(rate_limit_jobs.took, job_id='u', unique=True, rate_limit=rl)
    with pytest.raises(ValueError, match='synchronous queues'):
        rqfast.Queue('q', connection=redis_conn, is_async=False).enqueue(rate_limit_jobs.took, rate_limit=rl)
    with redis_conn.pipeline() as pipe, pytest.raises(ValueError, match='cannot be enqueued with a pipeline'):
        q.enqueue(rate_limit_jobs.took, rate_limit=rl, pipeline=pipe)
    job = q.create_job(rate_limit_jobs.took, rate_limit=rl)
    job.rate_limit_concurrency = '2'  # set by hand, wrongly
    with pytest.raises(ValueError, match='concurrency must be an integer'):
        q.enqueue_job(job)
    assert redis_conn.dbsize() == 0


def test_other_rate_limit_values_stay_the_functions_kwarg(redis_conn: redis.Redis) -> None:
    """RQ 2.12 meaning: `rate_limit=` that is not a RateLimit is passed to the function."""
    q = rqfast.Queue('q', connection=redis_conn)
    job = q.enqueue(rate_limit_jobs.took, rate_limit=5)
    assert job.kwargs == {'rate_limit': 5} and not job.has_rate_limit
    assert not redis_conn.hexists(job.key, 'rate_limit_key') and redis_conn.lrange('rq:queue:q', 0, -1) == [
        job.id.encode()
    ]
    SimpleWorker([q], connection=redis_conn).work(burst=True)
    assert rqfast.Job.fetch(job.id, connection=redis_conn).return_value() == {'rate_limit': 5}


def test_enqueue_promotes_while_slots_are_free_then_parks(connection: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=connection)
    jobs = [enqueue(q, f'j{n}') for n in range(4)]
    assert [job.get_status(refresh=False).value for job in jobs] == ['queued', 'queued', 'rate_limited', 'rate_limited']
    assert jobs[0].enqueued_at is not None and jobs[2].enqueued_at is None
    assert [status(connection, f'j{n}') for n in range(4)] == ['queued', 'queued', 'rate_limited', 'rate_limited']
    assert zset(connection, 'rq:rl:reports:allowed') == ['j0', 'j1']
    assert zset(connection, 'rq:rl:reports:rate_limited') == ['j2', 'j3']
    assert connection.lrange('rq:queue:q', 0, -1) == [b'j0', b'j1']
    assert connection.smembers('rq:rl-keys') == {b'reports'}
    assert connection.hgetall('rq:rl:reports') == {b'concurrency': b'2'}
    assert connection.hmget('rq:job:j2', 'rate_limit_key', 'rate_limit_concurrency') == [b'reports', b'2']
    assert not connection.hexists('rq:job:j2', 'enqueued_at')
    fetched = rqfast.Job.fetch('j2', connection=connection)
    assert (fetched.rate_limit_key, fetched.rate_limit_concurrency, fetched.has_rate_limit) == ('reports', 2, True)
    registry = RateLimitRegistry('reports', connection)
    assert registry.get_allowed_job_ids() == ['j0', 'j1'] and registry.get_rate_limited_job_count() == 2
    assert registry.concurrency == 2 and [r.key for r in RateLimitRegistry.all(connection)] == ['reports']


def test_enqueue_is_one_round_trip(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    enqueue(q, 'warm')  # scripts loaded
    sent: list[Any] = []
    original = redis.connection.Connection.send_packed_command

    def counting(self: Any, command: Any, check_health: bool = True) -> Any:
        sent.append(command)
        return original(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, 'send_packed_command', counting)
    enqueue(q, 'one')
    enqueue(q, 'two')  # waits
    assert len(sent) == 2


def test_at_front_is_stored_and_honoured_by_the_promotion(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    q.enqueue(rate_limit_jobs.took, job_id='plain')
    enqueue(q, 'front', concurrency=1, at_front=True)
    assert redis_conn.hget('rq:job:front', 'enqueue_at_front') == b'1'
    assert redis_conn.lrange('rq:queue:q', 0, -1) == [b'front', b'plain']


def test_finish_frees_the_slot_and_promotes_in_the_same_call(connection: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=connection)
    for n in range(3):
        enqueue(q, f'j{n}', concurrency=1)
    worker = SimpleWorker([q], connection=connection)
    worker.work(burst=True, max_jobs=1)
    assert status(connection, 'j0') == 'finished'
    # j1 was promoted by j0's finish (max_jobs=1: no claim after it); j2 still waits
    assert zset(connection, 'rq:rl:reports:allowed') == ['j1'] and status(connection, 'j1') == 'queued'
    assert connection.lrange('rq:queue:q', 0, -1) == [b'j1']
    assert zset(connection, 'rq:rl:reports:rate_limited') == ['j2']
    SimpleWorker([q], connection=connection).work(burst=True)
    assert [status(connection, f'j{n}') for n in range(3)] == ['finished'] * 3
    assert zset(connection, 'rq:rl:reports:allowed') == [] and zset(connection, 'rq:rl:reports:rate_limited') == []


def test_a_rate_limited_job_still_costs_one_round_trip(redis_conn: redis.Redis, count_round_trips: Any) -> None:  # noqa: F811  (the imported fixture)
    """Freeing the slot, promoting the next waiter and claiming it: all inside the one finish call."""
    q = rqfast.Queue('q', connection=redis_conn)
    rl = RateLimit(key='reports', concurrency=1)
    cost, small, large = per_job(
        redis_conn, count_round_trips, lambda n: [q.enqueue(rate_limit_jobs.took, rate_limit=rl) for _ in range(n)]
    )
    assert cost == 1, (small.commands, large.commands)
    assert redis_conn.zcard('rq:rl:reports:allowed') == 0 and redis_conn.zcard('rq:rl:reports:rate_limited') == 0


def test_failure_frees_the_slot_an_immediate_retry_keeps_it(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    rl = RateLimit(key='reports', concurrency=1)
    q.enqueue(rate_limit_jobs.limited, 'not a url', 'x', job_id='bad', rate_limit=rl, retry=rqfast.Retry(max=1))
    enqueue(q, 'next', concurrency=1)
    SimpleWorker([q], connection=redis_conn).work(burst=True, max_jobs=1)
    assert status(redis_conn, 'bad') == 'queued'  # retried at once: still holds its slot
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['bad'] and status(redis_conn, 'next') == 'rate_limited'
    SimpleWorker([q], connection=redis_conn).work(burst=True)
    assert status(redis_conn, 'bad') == 'failed' and status(redis_conn, 'next') == 'finished'
    assert zset(redis_conn, 'rq:rl:reports:allowed') == []


def test_a_released_dependent_waits_for_a_slot(connection: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=connection)
    parent = q.enqueue(rate_limit_jobs.took, job_id='parent')
    enqueue(q, 'holder', concurrency=1)
    kid = enqueue(q, 'kid', concurrency=1, depends_on=parent)
    assert kid.get_status(refresh=False) == 'deferred'
    SimpleWorker([q], connection=connection).work(burst=True, max_jobs=1)  # runs the parent only
    assert status(connection, 'kid') == 'rate_limited' and zset(connection, 'rq:rl:reports:rate_limited') == ['kid']
    assert connection.zcard('rq:deferred:q') == 0
    SimpleWorker([q], connection=connection).work(burst=True)
    assert status(connection, 'kid') == 'finished' and status(connection, 'holder') == 'finished'


def test_a_due_scheduled_job_waits_for_a_slot(redis_conn: redis.Redis) -> None:
    from rqfast.scheduler import RQScheduler

    q = rqfast.Queue('q', connection=redis_conn)
    enqueue(q, 'holder', concurrency=1)
    rl = RateLimit(key='reports', concurrency=1)
    q.enqueue_in(timedelta(seconds=-1), rate_limit_jobs.took, job_id='later', rate_limit=rl)
    assert status(redis_conn, 'later') == 'scheduled'
    scheduler = RQScheduler(['q'], connection=redis_conn)
    scheduler.acquire_locks()
    scheduler.enqueue_scheduled_jobs()
    assert status(redis_conn, 'later') == 'rate_limited'
    assert zset(redis_conn, 'rq:rl:reports:rate_limited') == ['later'] and redis_conn.zcard('rq:scheduled:q') == 0
    SimpleWorker([q], connection=redis_conn).work(burst=True)
    assert status(redis_conn, 'later') == 'finished'


def test_cancel_and_delete_free_the_slot(connection: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=connection)
    for n in range(3):
        enqueue(q, f'j{n}', concurrency=1)
    rqfast.Job.fetch('j0', connection=connection).cancel()
    assert zset(connection, 'rq:rl:reports:allowed') == ['j1'] and status(connection, 'j1') == 'queued'
    rqfast.Job.fetch('j1', connection=connection).delete()
    assert zset(connection, 'rq:rl:reports:allowed') == ['j2'] and status(connection, 'j2') == 'queued'
    assert connection.lrange('rq:queue:q', 0, -1) == [b'j2']


def test_maintenance_frees_leaked_slots_and_drops_empty_keys(connection: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=connection)
    for n in range(3):
        enqueue(q, f'j{n}', concurrency=1)
    connection.hset('rq:job:j0', 'status', 'finished')  # a slot that leaked: its job ended elsewhere
    connection.lrem('rq:queue:q', 1, 'j0')
    report = maintenance.clean_registries(connection, ['q'])
    assert (report.rate_limit_slots_freed, report.rate_limit_promoted) == (1, 1)
    assert zset(connection, 'rq:rl:reports:allowed') == ['j1'] and status(connection, 'j1') == 'queued'
    SimpleWorker([q], connection=connection).work(burst=True)
    assert clean_rate_limits(connection) == (1, 0, 0, 1)
    assert connection.keys('rq:rl*') == []


def start(url: str, name: str) -> subprocess.Popen[bytes]:
    options = {'impl': 'rqfast', 'name': name, 'queues': ['q'], 'work': {'burst': True, 'logging_level': 'WARNING'}}
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')])}
    return subprocess.Popen([sys.executable, str(HELPER), url, json.dumps(options)], env=env)


def wait_until(condition: Callable[[], Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.05)


def test_workers_never_run_more_than_the_concurrency(redis_url: str, redis_conn: redis.Redis) -> None:
    """24 jobs with concurrency 2 on four rqfast workers: at most 2 at once, measured inside the jobs."""
    q = rqfast.Queue('q', connection=redis_conn)
    rl = RateLimit(key='reports', concurrency=2)
    tags = [f't{n}' for n in range(24)]
    for tag in tags:
        q.enqueue(rate_limit_jobs.limited, redis_url, tag, 0.05, rate_limit=rl)
    workers = [start(redis_url, f'rl{n}') for n in range(4)]
    try:
        for proc in workers:
            assert proc.wait(45) == 0
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    runs = {k.decode(): int(v) for k, v in redis_conn.hgetall('rl:runs').items()}
    assert runs == {tag: 1 for tag in tags}
    assert 1 <= int(redis_conn.get('rl:peak')) <= 2
    assert zset(redis_conn, 'rq:rl:reports:allowed') == []
    assert zset(redis_conn, 'rq:rl:reports:rate_limited') == []


def test_a_cron_run_with_a_rate_limit_waits_for_a_slot(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under RQFAST_COMPAT=2.12 a RateLimit among a cron job's kwargs is the option, as for queue.enqueue
    (RQ 3.0 passes a cron job's kwargs to its function: docs/switching.md's RQFAST_COMPAT table)."""
    from rqfast.cron import CronJob

    monkeypatch.setattr('rqfast.defaults.RQFAST_COMPAT', '2.12')

    enqueue(rqfast.Queue('q', connection=redis_conn), 'holder', concurrency=1)
    cron_job = CronJob(
        func=rate_limit_jobs.took, queue_name='q', kwargs={'rate_limit': RateLimit('reports', 1)}, interval=60
    )
    job = cron_job.enqueue(redis_conn)
    assert job.get_status(refresh=False) == 'rate_limited' and status(redis_conn, job.id) == 'rate_limited'
    assert zset(redis_conn, 'rq:rl:reports:rate_limited') == [job.id] and job.kwargs == {}


def test_a_job_deleted_while_it_runs_keeps_its_slot_until_it_ends(redis_url: str, redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    rl = RateLimit(key='reports', concurrency=1)
    q.enqueue(rate_limit_jobs.delete_myself, redis_url, job_id='gone', rate_limit=rl)
    enqueue(q, 'next', concurrency=1)
    SimpleWorker([q], connection=redis_conn).work(burst=True, max_jobs=1)
    assert redis_conn.exists('rq:job:gone') == 0 and redis_conn.get('rl:inside') == b'gone'
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['next'] and status(redis_conn, 'next') == 'queued'
    assert redis_conn.keys('rq:execution:gone:*') == []


def test_a_requeued_failed_job_waits_for_a_slot(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    rl = RateLimit(key='reports', concurrency=1)
    q.enqueue(rate_limit_jobs.limited, 'not a url', 'x', job_id='bad', rate_limit=rl)
    SimpleWorker([q], connection=redis_conn).work(burst=True)
    assert status(redis_conn, 'bad') == 'failed' and zset(redis_conn, 'rq:rl:reports:allowed') == []
    enqueue(q, 'holder', concurrency=1)
    assert rqfast.Job.fetch('bad', connection=redis_conn).requeue().get_status(refresh=False) == 'rate_limited'
    assert zset(redis_conn, 'rq:rl:reports:rate_limited') == ['bad'] and redis_conn.zcard('rq:failed:q') == 0
    SimpleWorker([q], connection=redis_conn).work(burst=True)
    assert status(redis_conn, 'holder') == 'finished' and status(redis_conn, 'bad') == 'failed'
    assert zset(redis_conn, 'rq:rl:reports:allowed') == [] and zset(redis_conn, 'rq:rl:reports:rate_limited') == []
