"""The window rate limit's acceptance run: 200 jobs under RateLimit('k', rate=10, per=1), three SimpleWorker
processes at concurrency 20, each with its scheduler: no 1-second window (at any offset) holds more than 10
starts, and the run takes 20 +- 1 s (20 windows of 10). About 20 s. The round trips of such a job are counted
on one in-process worker in tests/test_rate_window.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

import rqfast
from rqfast import RateLimit
from rqfast.registry import FinishedJobRegistry, ScheduledJobRegistry
from tests import jobs
from tests.fleet import WorkerProcess, shut_down, wait_until
from tests.test_rate_window import most_in_a_window, started_at

pytestmark = [pytest.mark.timeout(120), pytest.mark.trial]  # a long trial: `python -m pytest -m trial`


def test_200_jobs_at_10_per_second_on_three_workers(redis_url: str, redis_conn: redis.Redis, tmp_path: Path) -> None:
    options = {
        'queues': ['fleet'],
        'worker': {'concurrency': 20},
        'work': {'logging_level': 'WARNING', 'with_scheduler': True},
    }
    workers = [WorkerProcess(redis_url, dict(options), tmp_path / f'w{i}.log') for i in range(3)]
    try:
        wait_until(lambda: all(redis_conn.hget(w.key, 'state') == b'idle' for w in workers), 20, 'the workers to start')
        q = rqfast.Queue('fleet', connection=redis_conn)
        limit = RateLimit('k', rate=10, per=1)
        begin = time.monotonic()
        ids = [q.enqueue(jobs.noop, rate_limit=limit).id for _ in range(200)]
        finished = FinishedJobRegistry('fleet', connection=redis_conn)
        wait_until(lambda: finished.count == 200, 40, 'every job to finish', step=0.01)
        took = time.monotonic() - begin
        shut_down(redis_conn, workers)
    finally:
        for w in workers:
            w.stop()
    times = started_at(redis_conn, ids)
    worst = most_in_a_window(times, 1.0)
    ran_on = {redis_conn.hget(f'rq:job:{i}', 'worker_name') for i in ids}
    print(
        f'200 jobs in {took:.2f} s, first to last start {times[-1] - times[0]:.2f} s, most starts in 1 s: {worst}, '
        f'on {len(ran_on)} workers'
    )
    assert worst <= 10
    assert 19 <= took <= 21
    assert ScheduledJobRegistry('fleet', connection=redis_conn).count == 0
