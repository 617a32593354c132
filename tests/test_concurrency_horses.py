"""Worker (fork) and SpawnWorker at concurrency > 1: several horses at once, each a fresh process per
job with its own timeout and crash detection; the worker does all the Redis work."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis
from rq.command import send_stop_job_command

import rqfast
from rqfast.registry import StartedJobRegistry
from rqfast.status import JobStatus
from rqfast.worker import SimpleWorker, SpawnWorker, Worker

try:
    import concurrency_jobs as cj
    from fleet import wait_until
except ImportError:  # tests/ became a package
    from tests import concurrency_jobs as cj  # type: ignore[no-redef]
    from tests.fleet import wait_until  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(90)


@pytest.mark.parametrize('worker_class', [Worker, SpawnWorker])
def test_outcomes_with_several_horses(worker_class: Any, redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    ok = [q.enqueue(cj.sleep_then, 1.0, i) for i in range(3)]
    failed = q.enqueue(cj.fail_after, 0.1)
    timed_out = q.enqueue(cj.sleep_then, 10, job_timeout=1)
    crashed = q.enqueue(cj.crash)
    stopped = q.enqueue(cj.wait_for_key, 'never')
    worker = worker_class([q], connection=redis_conn, concurrency=4)
    thread = threading.Thread(target=worker.work, kwargs={'burst': True, 'logging_level': 'WARNING'})
    started = time.monotonic()
    thread.start()
    try:
        wait_until(lambda: stopped.get_status(refresh=True) is JobStatus.STARTED, 40, 'the last job to start')
        wait_until(lambda: redis_conn.exists('most_in_flight'), 10, 'a job to run')
        send_stop_job_command(redis_conn, stopped.id)
        thread.join(60)
        assert not thread.is_alive()
    finally:
        redis_conn.set('never', '1')
        thread.join(10)
    took = time.monotonic() - started
    assert int(redis_conn.get('most_in_flight') or 0) >= 2  # horses side by side
    assert took < 25, took
    assert [job.return_value() for job in ok] == [0, 1, 2]
    assert failed.get_status(refresh=True) is JobStatus.FAILED
    assert 'asked to fail' in (failed.latest_result().exc_string or '')
    assert timed_out.get_status(refresh=True) is JobStatus.FAILED
    assert 'JobTimeoutException' in (timed_out.latest_result().exc_string or '')
    assert crashed.get_status(refresh=True) is JobStatus.FAILED  # its horse died without a report
    assert stopped.get_status(refresh=True) is JobStatus.STOPPED
    assert StartedJobRegistry('q', connection=redis_conn).get_job_ids(cleanup=False) == []
    assert not redis_conn.keys('rq:execution:*')
    counts = redis_conn.hmget(worker.key, 'successful_job_count', 'failed_job_count')
    assert [int(c or 0) for c in counts] == [3, 4]


@pytest.mark.parametrize('worker_class', [SimpleWorker, Worker])
def test_the_job_policy_holds_at_concurrency(worker_class: Any, redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    refused = [q.enqueue('os.getcwd') for _ in range(3)]
    allowed = [q.enqueue(cj.noop) for _ in range(3)]
    worker_class([q], connection=redis_conn, concurrency=3, allow=[cj.__name__]).work(burst=True)
    for job in refused:
        assert job.get_status(refresh=True) is JobStatus.FAILED
        assert 'not in the allow-list' in (job.latest_result().exc_string or '')
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in allowed)
