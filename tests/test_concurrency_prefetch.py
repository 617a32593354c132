"""A worker with N slots holds a few jobs claimed ahead of a free slot while its jobs are short (loop.py,
_prefetch): a slot that frees starts its next job with no round trip in between. Never with long jobs,
never past max_jobs, and every job claimed runs exactly once."""

from __future__ import annotations

import threading
import time

import pytest
import redis

import rqfast
from rqfast.registry import StartedJobRegistry
from rqfast.status import JobStatus
from rqfast.worker import SimpleWorker

try:
    import concurrency_jobs as cj
    import jobs
except ImportError:  # tests/ became a package
    from tests import concurrency_jobs as cj  # type: ignore[no-redef]
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


def test_short_jobs_are_held_ahead_and_each_runs_once(redis_conn: redis.Redis) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    made = queue.enqueue_many([rqfast.Queue.prepare_data(jobs.add, (n, n)) for n in range(300)])
    worker = SimpleWorker([queue], connection=redis_conn, concurrency=4)
    worker.work(burst=True, logging_level='WARNING')
    assert worker._loop is not None and worker._loop.held > 0  # some started from the jobs held ahead
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in made)
    assert [job.return_value() for job in made] == [2 * n for n in range(300)]
    assert worker.successful_job_count == 300
    assert StartedJobRegistry('q', connection=redis_conn).count == 0 and queue.count == 0


def test_long_jobs_are_not_claimed_ahead(redis_conn: redis.Redis) -> None:
    """Two slots, three 0.8 s jobs: the third stays queued (another worker may take it) until a slot frees."""
    queue = rqfast.Queue('q', connection=redis_conn)
    made = [queue.enqueue(cj.sleep_then, 0.8) for _ in range(3)]
    worker = SimpleWorker([queue], connection=redis_conn, concurrency=2)
    runner = threading.Thread(target=worker.work, kwargs={'burst': True, 'logging_level': 'WARNING'})
    runner.start()
    deadline = time.monotonic() + 10
    while not all(job.get_status(refresh=True) is JobStatus.STARTED for job in made[:2]):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)
    assert made[2].get_status(refresh=True) is JobStatus.QUEUED
    runner.join(30)
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in made)
    assert worker._loop is not None and worker._loop.held == 0


@pytest.mark.parametrize('max_jobs', [45, 58, 71])
def test_max_jobs_counts_the_jobs_held_ahead(
    redis_conn: redis.Redis, max_jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No job is claimed past max_jobs: the worker stops with none left started and the rest queued.
    (10 ms jobs keep the slots full, so jobs are held ahead as max_jobs nears; the run-time gate is
    opened wide, as 30 threads on a loaded machine can average past 50 ms: the gate has its own test.)"""
    monkeypatch.setattr('rqfast.worker.loop.CONCURRENT_PREFETCH_MAX_RUN', 10.0)
    queue = rqfast.Queue('q', connection=redis_conn)
    queue.enqueue_many([rqfast.Queue.prepare_data(cj.sleep_then, (0.01,)) for _ in range(120)])
    worker = SimpleWorker([queue], connection=redis_conn, concurrency=30)  # 3 held ahead at most
    worker.work(burst=True, max_jobs=max_jobs, logging_level='WARNING')
    assert worker._loop is not None and worker._loop.held > 0
    assert queue.finished_job_registry.count == max_jobs == worker.successful_job_count
    assert StartedJobRegistry('q', connection=redis_conn).count == 0
    assert queue.count == 120 - max_jobs


def test_the_jobs_recent_run_time_decides_how_many_are_held(redis_conn: redis.Redis) -> None:
    """The gate itself: nothing held before a job has reported, N // 10 (at least 1) while the moving
    average of run times is 50 ms or less, nothing once jobs turn long; never at concurrency 1."""
    worker = SimpleWorker(['q'], connection=redis_conn)
    loop = worker._loop_of(30)
    assert loop._prefetch() == 0
    loop.run_time = 0.01
    fresh = SimpleWorker(['q'], connection=redis_conn)._loop_of(4)
    assert loop._prefetch() == 3 and fresh._prefetch() == 0  # (no report yet in the new one)
    loop.run_time = 0.2
    assert loop._prefetch() == 0
    small = worker._loop_of(4)
    small.run_time = 0.001
    assert small._prefetch() == 1
    single = worker._loop_of(1)
    single.run_time = 0.001
    assert single._prefetch() == 0
