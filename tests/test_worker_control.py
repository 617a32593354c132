"""Controlling a running SimpleWorker: signals, RQ's pub/sub commands, suspension, a lost connection.

Each worker runs in a process of its own (tests/worker_process.py), so the tests can signal it; the
tests read Redis to see what it did. Everything is bounded in time.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import rq.command
import rq.suspension

import rqfast
from rqfast.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

try:
    import jobs
    import worker_jobs
    from fleet import KillableRedis as PrivateRedis
    from fleet import WorkerProcess, wait_until
except ImportError:  # tests/ became a package
    from tests import jobs, worker_jobs  # type: ignore[no-redef]
    from tests.fleet import KillableRedis as PrivateRedis  # type: ignore[no-redef]
    from tests.fleet import WorkerProcess, wait_until  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def start_worker(redis_url: str, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    started: list[WorkerProcess] = []

    def start(url: str | None = None, wait_registered: bool = True, **options: Any) -> WorkerProcess:
        worker = WorkerProcess(url or redis_url, options, tmp_path / f'worker-{len(started)}.log')
        started.append(worker)
        if wait_registered:
            conn = redis.Redis.from_url(url or redis_url)
            worker.wait_registered(conn)
            conn.close()
        return worker

    yield start
    for worker in started:
        worker.stop()


def status(conn: redis.Redis, job_id: str) -> str | None:
    value = conn.hget(f'rq:job:{job_id}', 'status')
    return value.decode() if value else None


def assert_deregistered(conn: redis.Redis, worker: WorkerProcess, queue: str = 'q') -> None:
    key = worker.key.encode()
    assert conn.hget(worker.key, 'death'), conn.hgetall(worker.key)
    assert 0 < conn.ttl(worker.key) <= 60
    assert key not in conn.smembers('rq:workers')
    assert key not in conn.smembers(f'rq:workers:{queue}')


# ---------------------------------------------------------------------------------------------------
# Warm and cold shutdown


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT])
def test_idle_worker_stops_on_a_signal_and_deregisters(redis_conn: redis.Redis, start_worker: Any, signum: int) -> None:
    worker = start_worker(idle_wakeup=60)  # blocked for a minute at a time
    assert redis_conn.hget(worker.key, 'state') == b'idle'
    started = time.monotonic()
    worker.signal(signum)
    assert worker.wait() == 0
    assert time.monotonic() - started < 30, 'a blocked idle worker must stop at once, not at its next wakeup'
    assert_deregistered(redis_conn, worker)


def test_warm_shutdown_finishes_the_job_in_hand_and_takes_no_other(redis_conn: redis.Redis, start_worker: Any) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    running = q.enqueue(worker_jobs.wait_for_key, 'go', 20)
    waiting = q.enqueue(jobs.noop)
    worker = start_worker()
    wait_until(lambda: status(redis_conn, running.id) == 'started', what='the job to start')
    worker.signal(signal.SIGTERM)
    wait_until(lambda: redis_conn.hget(worker.key, 'shutdown_requested_date'), what='shutdown_requested_date')
    assert worker.proc.poll() is None and redis_conn.hget(worker.key, 'state') == b'busy'
    redis_conn.set('go', 1)
    assert worker.wait() == 0
    assert status(redis_conn, running.id) == 'finished'
    assert running.return_value() is True
    assert status(redis_conn, waiting.id) == 'queued' and q.job_ids == [waiting.id]
    assert StartedJobRegistry('q', connection=redis_conn).count == 0
    assert_deregistered(redis_conn, worker)


def test_cold_shutdown_fails_the_running_job_and_leaves_nothing_in_limbo(
    redis_conn: redis.Redis, start_worker: Any
) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    job = q.enqueue(worker_jobs.wait_for_key, 'never', 30)
    worker = start_worker()
    wait_until(lambda: status(redis_conn, job.id) == 'started', what='the job to start')
    worker.signal(signal.SIGINT)
    time.sleep(1.2)  # a second signal within 1 s of the first is taken as the same key press
    worker.signal(signal.SIGINT)
    worker.wait()
    assert status(redis_conn, job.id) == 'failed'
    assert job.id in FailedJobRegistry('q', connection=redis_conn).get_job_ids()
    assert StartedJobRegistry('q', connection=redis_conn).get_job_ids(cleanup=False) == []
    assert not redis_conn.keys(f'rq:execution:{job.id}:*')
    reason = rqfast.Job.fetch(job.id, connection=redis_conn).exc_info or ''
    assert f'ColdShutdown: rqfast: cold shutdown of worker {worker.name} (SIGINT' in reason, reason
    assert f'job(s) interrupted: {job.id}' in reason
    assert_deregistered(redis_conn, worker)
    assert b'current_job' not in redis_conn.hgetall(worker.key)


def test_a_cold_shutdown_of_a_forking_worker_logs_the_horse_kill_once(
    redis_conn: redis.Redis, start_worker: Any
) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    job = q.enqueue(worker_jobs.wait_for_key, 'never', 30)
    worker = start_worker(**{'class': 'Worker'})
    wait_until(lambda: status(redis_conn, job.id) == 'started', what='the job to start')
    worker.signal(signal.SIGINT)
    time.sleep(1.2)
    worker.signal(signal.SIGINT)
    worker.wait()
    assert status(redis_conn, job.id) == 'failed'
    assert worker.log().count('killed horse pid') == 1, worker.log()


def test_cold_shutdown_retries_a_job_with_retries_left(redis_conn: redis.Redis, start_worker: Any) -> None:
    """As in RQ, a job killed by a cold shutdown counts as a failure, so its Retry puts it back."""
    q = rqfast.Queue('q', connection=redis_conn)
    job = q.enqueue(worker_jobs.wait_for_key, 'never', 30, retry=rqfast.Retry(max=1))
    worker = start_worker()
    wait_until(lambda: status(redis_conn, job.id) == 'started', what='the job to start')
    worker.signal(signal.SIGTERM)
    time.sleep(1.2)
    worker.signal(signal.SIGTERM)
    worker.wait()
    assert status(redis_conn, job.id) == 'queued' and q.job_ids == [job.id]
    assert_deregistered(redis_conn, worker)


# ---------------------------------------------------------------------------------------------------
# RQ's pub/sub commands


def test_rq_send_shutdown_command_stops_an_idle_rqfast_worker(redis_conn: redis.Redis, start_worker: Any) -> None:
    worker = start_worker()
    time.sleep(0.2)  # the listener subscribes right after registration
    rq.command.send_shutdown_command(redis_conn, worker.name)
    assert worker.wait() == 0
    assert_deregistered(redis_conn, worker)


def test_rq_send_shutdown_command_lets_a_busy_worker_finish(redis_conn: redis.Redis, start_worker: Any) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    job = q.enqueue(worker_jobs.wait_for_key, 'go', 20)
    worker = start_worker()
    wait_until(lambda: status(redis_conn, job.id) == 'started', what='the job to start')
    rq.command.send_shutdown_command(redis_conn, worker.name)
    wait_until(lambda: redis_conn.hget(worker.key, 'shutdown_requested_date'), what='shutdown_requested_date')
    redis_conn.set('go', 1)
    assert worker.wait() == 0
    assert status(redis_conn, job.id) == 'finished'
    assert_deregistered(redis_conn, worker)


def test_stop_job_is_ignored_by_a_simple_worker_as_in_rq(redis_conn: redis.Redis, start_worker: Any) -> None:
    """RQ's SimpleWorker has no horse to stop: the job runs to its end, and the worker goes on."""
    q = rqfast.Queue('q', connection=redis_conn)
    job = q.enqueue(worker_jobs.wait_for_key, 'go', 20, on_stopped=rqfast.Callback(worker_jobs.stopped_callback_meta))
    worker = start_worker(work={'max_jobs': 1})
    wait_until(lambda: status(redis_conn, job.id) == 'started', what='the job to start')
    time.sleep(0.2)
    rq.command.send_stop_job_command(redis_conn, job.id)
    time.sleep(0.3)
    assert status(redis_conn, job.id) == 'started'
    redis_conn.set('go', 1)
    assert worker.wait() == 0
    assert status(redis_conn, job.id) == 'finished'
    assert not redis_conn.exists(f'callback:stopped:{job.id}')


# ---------------------------------------------------------------------------------------------------
# Suspension


def test_suspension_is_honoured_by_an_idle_worker_and_lifted(redis_conn: redis.Redis, start_worker: Any) -> None:
    worker = start_worker(idle_wakeup=1, work={'max_jobs': 1})
    rq.suspension.suspend(redis_conn)
    wait_until(lambda: redis_conn.hget(worker.key, 'state') == b'suspended', timeout=5, what='state suspended')
    job = rqfast.Queue('q', connection=redis_conn).enqueue(jobs.noop)
    time.sleep(0.5)
    assert status(redis_conn, job.id) == 'queued', 'a suspended worker takes no job'
    rq.suspension.resume(redis_conn)
    assert worker.wait() == 0
    assert status(redis_conn, job.id) == 'finished'


def test_suspension_while_busy_stops_claiming_after_the_job(redis_conn: redis.Redis, start_worker: Any) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    first = q.enqueue(worker_jobs.wait_for_key, 'go', 20)
    second = q.enqueue(jobs.noop)
    worker = start_worker(idle_wakeup=1)
    wait_until(lambda: status(redis_conn, first.id) == 'started', what='the job to start')
    rq.suspension.suspend(redis_conn)
    redis_conn.set('go', 1)
    wait_until(lambda: status(redis_conn, first.id) == 'finished', what='the first job to finish')
    wait_until(lambda: redis_conn.hget(worker.key, 'state') == b'suspended', timeout=5, what='state suspended')
    assert status(redis_conn, second.id) == 'queued'
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0


def test_burst_worker_exits_when_suspended(redis_conn: redis.Redis) -> None:
    job = rqfast.Queue('q', connection=redis_conn).enqueue(jobs.noop)
    rq.suspension.suspend(redis_conn)
    worked = rqfast.SimpleWorker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    assert worked is False and status(redis_conn, job.id) == 'queued'


# ---------------------------------------------------------------------------------------------------
# A lost connection


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    """A redis-server of this test's own, with an append-only file so a restart keeps the data."""
    server = PrivateRedis()
    server.start()
    yield server
    server.close()


def test_idle_worker_survives_a_lost_connection(private_redis: PrivateRedis, start_worker: Any) -> None:
    worker = start_worker(url=private_redis.url, idle_wakeup=1, work={'max_jobs': 1})
    private_redis.stop()
    time.sleep(1.2)
    assert worker.proc.poll() is None, worker.log()
    private_redis.start()
    conn = redis.Redis.from_url(private_redis.url)
    job = rqfast.Queue('q', connection=conn).enqueue(jobs.add, 1, 2)
    assert worker.wait(20) == 0, worker.log()
    assert status(conn, job.id) == 'finished'
    assert 'retrying in' in worker.log()
    conn.close()


def test_busy_worker_survives_a_lost_connection_and_records_the_job(
    private_redis: PrivateRedis, start_worker: Any
) -> None:
    conn = redis.Redis.from_url(private_redis.url)
    q = rqfast.Queue('q', connection=conn)
    job = q.enqueue(jobs.long_running, 2)
    after = q.enqueue(jobs.add, 2, 2)
    worker = start_worker(url=private_redis.url, work={'burst': True})
    wait_until(lambda: status(conn, job.id) == 'started', what='the job to start')
    private_redis.stop()
    time.sleep(2.5)  # the job ends while Redis is down
    assert worker.proc.poll() is None, worker.log()
    private_redis.start()
    assert worker.wait(30) == 0, worker.log()
    assert status(conn, job.id) == 'finished' and status(conn, after.id) == 'finished'
    assert FinishedJobRegistry('q', connection=conn).count == 2
    assert StartedJobRegistry('q', connection=conn).get_job_ids(cleanup=False) == []
    assert f'could not record job {job.id}' in worker.log()
    conn.close()


def test_commands_still_reach_a_worker_after_a_lost_connection(private_redis: PrivateRedis, start_worker: Any) -> None:
    worker = start_worker(url=private_redis.url, idle_wakeup=1)
    private_redis.stop()
    time.sleep(0.5)
    private_redis.start()
    conn = redis.Redis.from_url(private_redis.url)
    wait_until(
        lambda: conn.pubsub_numsub(f'rq:pubsub:{worker.name}')[0][1] == 1,
        timeout=15,
        what='the worker to subscribe again',
    )
    rq.command.send_shutdown_command(conn, worker.name)
    assert worker.wait(10) == 0, worker.log()
    conn.close()
