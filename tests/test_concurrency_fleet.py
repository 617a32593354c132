"""A SimpleWorker at concurrency > 1 in a process of its own: beside RQ's workers, and shut down with jobs in flight."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any

import pytest
import redis

import rqfast
from rqfast.registry import DeferredJobRegistry, FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry
from rqfast.status import JobStatus

try:
    import concurrency_jobs as cj
    import test_worker_fleet as mixed
    from fleet import WorkerProcess, shut_down, wait_until
except ImportError:  # tests/ became a package
    from tests import concurrency_jobs as cj  # type: ignore[no-redef]
    from tests import test_worker_fleet as mixed  # type: ignore[no-redef]
    from tests.fleet import WorkerProcess, shut_down, wait_until  # type: ignore[no-redef]

pytestmark = [pytest.mark.timeout(90), pytest.mark.trial]  # a long trial: `python -m pytest -m trial`


def start(url: str, tmp_path: Path, impl: str = 'rqfast', **worker: Any) -> WorkerProcess:
    options = {'impl': impl, 'queues': ['fleet'], 'worker': worker, 'work': {'logging_level': 'WARNING'}}
    return WorkerProcess(url, options, tmp_path / f'{impl}-{len(list(tmp_path.iterdir()))}.log')


def test_rq_workers_and_one_rqfast_worker_at_concurrency_20(
    redis_url: str, redis_conn: redis.Redis, tmp_path: Path
) -> None:
    """2,000 jobs (successes, failures, parents and their dependents) each run exactly once."""
    workers = [
        start(redis_url, tmp_path, 'rq'),
        start(redis_url, tmp_path, 'rq'),
        start(redis_url, tmp_path, concurrency=20),
    ]
    try:
        wait_until(lambda: all(redis_conn.hget(w.key, 'state') == b'idle' for w in workers), 20, 'the workers to start')
        ids = mixed.enqueue_all(redis_conn)
        assert len(ids) == mixed.TOTAL

        def done() -> bool:
            finished = FinishedJobRegistry('fleet', connection=redis_conn).count
            return len(ids) == finished + FailedJobRegistry('fleet', connection=redis_conn).count

        wait_until(done, 60, 'every job to finish')
        counts = [redis_conn.hmget(w.key, 'successful_job_count', 'failed_job_count') for w in workers]
        shut_down(redis_conn, workers)
    finally:
        for w in workers:
            w.stop()

    runs = {k.decode(): int(v) for k, v in redis_conn.hgetall('runs').items()}
    assert len(runs) == mixed.TOTAL and set(runs) == set(ids)
    assert set(runs.values()) == {1}, 'a job ran more than once'
    assert FailedJobRegistry('fleet', connection=redis_conn).count == mixed.FAILING
    assert DeferredJobRegistry('fleet', connection=redis_conn).count == 0
    assert StartedJobRegistry('fleet', connection=redis_conn).get_job_ids(cleanup=False) == []
    assert redis_conn.llen('rq:queue:fleet') == 0 and redis_conn.llen('rq:queue:fleet:intermediate') == 0
    assert not redis_conn.keys('rq:execution:*')
    by_worker: dict[str, int] = {}
    for raw in redis_conn.hgetall('runs'):
        name = redis_conn.hget(f'rq:job:{raw.decode()}', 'worker_name').decode()
        by_worker[name] = by_worker.get(name, 0) + 1
    assert by_worker.get(workers[2].name, 0) > 0, by_worker
    for w, (ok, failed) in zip(workers, counts, strict=True):
        assert int(ok or 0) + int(failed or 0) == by_worker.get(w.name, 0), (w.name, ok, failed)


def _four_in_flight(
    redis_url: str, redis_conn: redis.Redis, tmp_path: Path, seconds: float
) -> tuple[WorkerProcess, list[Any], list[Any]]:
    q = rqfast.Queue('fleet', connection=redis_conn)
    running = [q.enqueue(cj.sleep_then, seconds, i) for i in range(3)] + [q.enqueue(cj.async_sleep_then, seconds, 3)]
    waiting = [q.enqueue(cj.noop) for _ in range(2)]
    worker = start(redis_url, tmp_path, concurrency=4)
    wait_until(lambda: redis_conn.get('in_flight') == b'4', 20, 'four jobs in flight')
    return worker, running, waiting


def test_warm_shutdown_finishes_the_jobs_in_flight(redis_url: str, redis_conn: redis.Redis, tmp_path: Path) -> None:
    worker, running, waiting = _four_in_flight(redis_url, redis_conn, tmp_path, 1.5)
    try:
        worker.signal(signal.SIGTERM)
        assert worker.wait(15) == 0, worker.log()
    finally:
        worker.stop()
    assert [job.return_value() for job in running] == [0, 1, 2, 3]
    assert all(job.get_status(refresh=True) is JobStatus.QUEUED for job in waiting)  # nothing more was claimed
    assert redis_conn.hget(worker.key, 'state') in (None, b'idle')  # (gone, or dead and kept a minute)


def test_cold_shutdown_fails_the_jobs_in_flight_with_a_reason(
    redis_url: str, redis_conn: redis.Redis, tmp_path: Path
) -> None:
    worker, running, waiting = _four_in_flight(redis_url, redis_conn, tmp_path, 8)
    try:
        worker.signal(signal.SIGTERM)
        wait_until(lambda: redis_conn.hget(worker.key, 'shutdown_requested_date'), 10, 'the warm shutdown request')
        time.sleep(1.1)  # (a second signal within a second of the first is ignored, as in RQ)
        worker.signal(signal.SIGTERM)
        worker.wait(15)
    finally:
        worker.stop()
    for job in running:
        assert job.get_status(refresh=True) is JobStatus.FAILED
        assert 'cold shutdown' in (job.latest_result().exc_string or ''), job.latest_result().exc_string
    assert all(job.get_status(refresh=True) is JobStatus.QUEUED for job in waiting)
    assert StartedJobRegistry('fleet', connection=redis_conn).get_job_ids(cleanup=False) == []


def test_a_killed_worker_leaves_each_job_in_flight_to_recovery(
    redis_url: str, redis_conn: redis.Redis, tmp_path: Path
) -> None:
    """SIGKILL with four jobs in flight: each has its own execution and started entry, and maintenance
    (timestamp past their heartbeat TTL) fails each as abandoned, as RQ's does a lone job."""
    from rqfast.maintenance import clean_registries

    q = rqfast.Queue('fleet', connection=redis_conn)
    running = [q.enqueue(cj.wait_for_key, 'never') for _ in range(3)] + [q.enqueue(cj.async_wait_for_key, 'never')]
    worker = start(redis_url, tmp_path, concurrency=4)
    try:
        wait_until(lambda: redis_conn.get('in_flight') == b'4', 20, 'four jobs in flight')
        members = StartedJobRegistry('fleet', connection=redis_conn).get_job_ids(cleanup=False)
        assert sorted(members) == sorted(j.id for j in running)
        assert len(redis_conn.keys('rq:execution:*')) == 4
        worker.signal(signal.SIGKILL)
        worker.wait(10)
    finally:
        worker.stop()
    clean_registries(redis_conn, ['fleet'], timestamp=time.time() + 3600)
    for job in running:
        assert job.get_status(refresh=True) is JobStatus.FAILED
        assert 'AbandonedJobError' in (job.latest_result().exc_string or ''), job.latest_result().exc_string
    assert StartedJobRegistry('fleet', connection=redis_conn).get_job_ids(cleanup=False) == []
