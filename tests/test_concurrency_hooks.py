"""A SimpleWorker subclass that overrides RQ's hooks, at concurrency > 1: the hooks run on each job's
thread, several jobs at once, called in RQ's order per job; what they record is recorded by the
worker's loop (with the other outcomes of the moment) before the hook goes on, as at concurrency 1.

A forking worker's hooks run N jobs at once too, each job's horse watched from its own thread.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

import pytest
import redis
from rq.command import send_stop_job_command

import rqfast
from rqfast.job import Job
from rqfast.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry
from rqfast.status import JobStatus
from rqfast.worker import SimpleWorker, Worker

try:
    import concurrency_jobs as cj
    from fleet import wait_until
except ImportError:  # tests/ became a package
    from tests import concurrency_jobs as cj  # type: ignore[no-redef]
    from tests.fleet import wait_until  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


class RecordingWorker(SimpleWorker):
    """Every extension point overridden, each calling RQ's default; the calls noted per job."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: dict[str, list[Any]] = defaultdict(list)
        self.threads: set[int] = set()
        self._lock = threading.Lock()

    def _note(self, job_id: str, *what: Any) -> None:
        with self._lock:
            self.calls[job_id].append(what)
            self.threads.add(threading.get_ident())

    def execute_job(self, job: Job, queue: Any) -> None:
        self._note(job.id, 'execute_job')
        super().execute_job(job, queue)
        self._note(job.id, 'executed', job.get_status(refresh=True))  # recorded before the hook goes on

    def perform_job(self, job: Job, queue: Any) -> bool:
        self._note(job.id, 'perform_job', queue.name)
        return super().perform_job(job, queue)

    def handle_job_success(self, job: Job, queue: Any, started_job_registry: Any = None) -> None:
        self._note(job.id, 'handle_job_success')
        super().handle_job_success(job, queue, started_job_registry)

    def handle_job_failure(self, job: Job, queue: Any, started_job_registry: Any = None, exc_string: str = '') -> None:
        self._note(job.id, 'handle_job_failure', exc_string.strip().splitlines()[-1])
        super().handle_job_failure(job, queue, started_job_registry, exc_string=exc_string)


def test_hooks_run_side_by_side_in_rq_order_per_job(connection: redis.Redis) -> None:
    redis_conn = connection  # (real Redis and fakeredis)
    q = rqfast.Queue('q', connection=redis_conn)
    ok = [q.enqueue(cj.sleep_then, 0.4, i) for i in range(6)]
    failing = q.enqueue(cj.fail_after, 0.1)
    worker = RecordingWorker([q], connection=redis_conn, concurrency=6)
    assert worker.uses_hooks
    started = time.monotonic()
    assert worker.work(burst=True, logging_level='WARNING')
    took = time.monotonic() - started

    assert int(redis_conn.get('most_in_flight') or 0) >= 4  # side by side, not one by one (counted, not timed)
    print(f'6 x 0.4 s jobs and a failing one at concurrency 6 in {took:.2f} s (one at a time: 2.5 s)')
    assert len(worker.threads) >= 4
    for i, job in enumerate(ok):
        assert job.get_status(refresh=True) is JobStatus.FINISHED and job.return_value() == i
        assert worker.calls[job.id] == [
            ('execute_job',),
            ('perform_job', 'q'),
            ('handle_job_success',),
            ('executed', JobStatus.FINISHED),
        ]
    assert worker.calls[failing.id] == [
        ('execute_job',),
        ('perform_job', 'q'),
        ('handle_job_failure', 'ValueError: asked to fail'),
        ('executed', JobStatus.FAILED),
    ]
    assert 'asked to fail' in (failing.latest_result().exc_string or '')
    assert set(FinishedJobRegistry('q', connection=redis_conn).get_job_ids()) == {job.id for job in ok}
    assert FailedJobRegistry('q', connection=redis_conn).get_job_ids() == [failing.id]
    assert StartedJobRegistry('q', connection=redis_conn).get_job_ids(cleanup=False) == []
    assert not redis_conn.keys('rq:execution:*')
    assert worker.successful_job_count == 6 and worker.failed_job_count == 1
    counts = redis_conn.hmget(worker.key, 'successful_job_count', 'failed_job_count')
    assert [int(c or 0) for c in counts] == [6, 1]


def test_a_hooks_job_past_its_timeout_fails_and_its_late_record_is_dropped(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    late = q.enqueue(cj.sleep_then_write, 2.5, 'late-return', job_timeout=1)
    others = [q.enqueue(cj.sleep_then, 0.2, i) for i in range(4)]
    worker = RecordingWorker([q], connection=redis_conn, concurrency=2)
    assert worker.work(burst=True, logging_level='WARNING')

    # failed at its deadline by the loop (SIGALRM cannot reach a job thread), the others ran meanwhile
    assert late.get_status(refresh=True) is JobStatus.FAILED
    assert 'JobTimeoutException' in (late.latest_result().exc_string or '')
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in others)
    wait_until(lambda: redis_conn.exists('late-return'), 10, 'the timed-out thread to end')
    wait_until(lambda: len(worker.calls[late.id]) == 4, 5, 'its hook to go on')  # (once its late record is dropped)
    assert worker.calls[late.id][-1] == ('executed', JobStatus.FAILED)
    assert late.get_status(refresh=True) is JobStatus.FAILED and len(late.results()) == 1


def test_stop_job_and_warm_shutdown_with_hooks_jobs_in_flight(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    jobs = [q.enqueue(cj.wait_for_key, 'go') for _ in range(3)]
    later = q.enqueue(cj.sleep_then, 0.0, 'later')
    worker = RecordingWorker([q], connection=redis_conn, concurrency=3)
    thread = threading.Thread(target=worker.work, kwargs={'burst': False, 'logging_level': 'WARNING'})
    thread.start()
    try:
        wait_until(lambda: redis_conn.get('in_flight') == b'3', 15, 'three jobs in flight')
        send_stop_job_command(redis_conn, jobs[0].id)  # rq's command, for a job whose hook is still running
        wait_until(lambda: later.get_status(refresh=True) is JobStatus.FINISHED, 10, 'the next job in the freed slot')
        assert jobs[0].get_status(refresh=True) is JobStatus.STOPPED
        worker.request_stop(15, None)  # a warm shutdown: the jobs in flight end and are recorded
        time.sleep(0.2)
        redis_conn.set('go', '1')
        thread.join(15)
        assert not thread.is_alive()
    finally:
        redis_conn.set('go', '1')
        thread.join(15)
    assert [job.get_status(refresh=True) for job in jobs] == [JobStatus.STOPPED, JobStatus.FINISHED, JobStatus.FINISHED]
    # the stopped job's own record came too late and was dropped; its hook went on and saw it stopped
    wait_until(lambda: len(worker.calls[jobs[0].id]) == 4, 5, 'its hook to go on')
    assert worker.calls[jobs[0].id][-1] == ('executed', JobStatus.STOPPED)
    assert len(jobs[0].results()) == 1
    assert not redis_conn.smembers(f'rq:worker:{worker.name}:executions')


class TeardownWorker(SimpleWorker):
    def execute_job(self, job: Job, queue: Any) -> None:
        super().execute_job(job, queue)
        time.sleep(0.5)  # a slow teardown after the job was recorded
        self.connection.rpush('torn-down', job.id)


def test_work_returns_once_every_hook_has_returned(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    jobs = [q.enqueue(cj.sleep_then, 0.05, i) for i in range(4)]
    assert TeardownWorker([q], connection=redis_conn, concurrency=4).work(burst=True, logging_level='WARNING')
    assert sorted(redis_conn.lrange('torn-down', 0, -1)) == sorted(job.id.encode() for job in jobs)


class RaisingWorker(SimpleWorker):
    def execute_job(self, job: Job, queue: Any) -> None:
        if job.args == (0.0, 'raise'):
            raise RuntimeError('the hook broke before the job ran')
        super().execute_job(job, queue)


class NotRecordingWorker(SimpleWorker):
    def execute_job(self, job: Job, queue: Any) -> None:
        if job.args == (0.0, 'skip'):
            return  # records nothing: the job is left started, as at concurrency 1 (and in RQ)
        super().execute_job(job, queue)


def test_a_hook_that_raises_fails_the_job_and_one_that_records_nothing_leaves_it(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    raising = q.enqueue(cj.sleep_then, 0.0, 'raise')
    fine = [q.enqueue(cj.sleep_then, 0.1, i) for i in range(3)]
    RaisingWorker([q], connection=redis_conn, concurrency=3).work(burst=True, logging_level='WARNING')
    assert raising.get_status(refresh=True) is JobStatus.FAILED
    assert 'the hook broke before the job ran' in (raising.latest_result().exc_string or '')
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in fine)

    skipped = q.enqueue(cj.sleep_then, 0.0, 'skip')
    more = [q.enqueue(cj.sleep_then, 0.1, i) for i in range(3)]
    worker = NotRecordingWorker([q], connection=redis_conn, concurrency=3)
    assert worker.work(burst=True, logging_level='WARNING')
    assert skipped.get_status(refresh=True) is JobStatus.STARTED
    assert skipped.id in StartedJobRegistry('q', connection=redis_conn).get_job_ids(cleanup=False)
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in more)
    assert worker.successful_job_count == 3


class TimedWorker(Worker):
    def execute_job(self, job: Job, queue: Any) -> None:
        super().execute_job(job, queue)


def test_a_forking_worker_with_hooks_runs_its_jobs_side_by_side(
    redis_conn: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    jobs = [q.enqueue(cj.sleep_then, 0.5, i) for i in range(3)]
    worker = TimedWorker([q], connection=redis_conn, concurrency=3)
    assert worker.uses_hooks
    with caplog.at_level('WARNING', logger='rqfast.worker'):
        assert worker.work(burst=True)
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in jobs)
    assert int(redis_conn.get('most_in_flight') or 0) >= 2  # side by side, each in its horse
    assert 'is not used' not in caplog.text
