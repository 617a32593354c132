"""RQ's worker extension points (execute_job, perform_job, handle_job_success, handle_job_failure) and RQ's log lines.

A subclass that overrides one is called where RQ calls it: execute_job in the worker, perform_job and
the handlers where the job runs (a forking worker's horse), handle_job_failure in the worker for a
horse that died. Without overrides the loop keeps its one-round-trip path (test_worker_roundtrips.py).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import redis

from rqfast import Callback, Queue, Retry, SimpleWorker, Worker, keys
from rqfast.job import Job
from rqfast.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry
from rqfast.status import JobStatus

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]


class RecordingWorker(SimpleWorker):
    """Every extension point overridden, each calling RQ's default (the way RQ's docs show it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, str]] = []

    def execute_job(self, job: Job, queue: Any) -> None:
        self.calls.append(('execute_job', job.id))
        super().execute_job(job, queue)
        self.calls.append(('executed', job.get_status(refresh=True)))

    def perform_job(self, job: Job, queue: Any) -> bool:
        self.calls.append(('perform_job', queue.name))
        return super().perform_job(job, queue)

    def handle_job_success(self, job: Job, queue: Any, started_job_registry: Any = None) -> None:
        self.calls.append(('handle_job_success', job.id))
        super().handle_job_success(job, queue, started_job_registry)

    def handle_job_failure(self, job: Job, queue: Any, started_job_registry: Any = None, exc_string: str = '') -> None:
        self.calls.append(('handle_job_failure', exc_string.strip().splitlines()[-1]))
        super().handle_job_failure(job, queue, started_job_registry, exc_string=exc_string)


def test_a_subclass_with_every_hook_is_called_in_rq_order(connection: redis.Redis) -> None:
    queue = Queue(connection=connection)
    ok = queue.enqueue(jobs.say_hello, 'Ada')
    failing = queue.enqueue(jobs.div_by_zero)
    worker = RecordingWorker([queue], connection=connection)
    assert worker.uses_hooks

    assert worker.work(burst=True)

    assert worker.calls == [
        ('execute_job', ok.id),
        ('perform_job', queue.name),
        ('handle_job_success', ok.id),
        ('executed', JobStatus.FINISHED),
        ('execute_job', failing.id),
        ('perform_job', queue.name),
        ('handle_job_failure', 'ZeroDivisionError: division by zero'),
        ('executed', JobStatus.FAILED),
    ]
    assert ok.return_value(refresh=True) == 'Hi there, Ada!'
    assert ok in FinishedJobRegistry(queue=queue) and failing in FailedJobRegistry(queue=queue)
    assert StartedJobRegistry(queue=queue).get_job_ids() == []
    latest = failing.latest_result()
    assert latest is not None and 'ZeroDivisionError' in (latest.exc_string or '')
    assert worker.successful_job_count == 1 and worker.failed_job_count == 1
    assert connection.hget(worker.key, 'successful_job_count') == b'1'
    assert worker.get_current_job_id() is None


def test_plain_workers_keep_the_fast_path_and_a_patch_counts(connection: redis.Redis) -> None:
    queue = Queue(connection=connection)
    worker = SimpleWorker([queue], connection=connection)
    assert not worker.uses_hooks
    assert not Worker([queue], connection=connection).uses_hooks

    job = queue.enqueue(jobs.say_hello)
    with mock.patch.object(worker, 'perform_job', wraps=worker.perform_job) as perform:
        worker.work(burst=True)
    assert perform.call_count == 1
    assert job.get_status(refresh=True) == JobStatus.FINISHED


class SwallowingWorker(SimpleWorker):
    def execute_job(self, job: Job, queue: Any) -> None:
        pass  # never records: the job stays started, as in RQ


def test_an_execute_job_that_records_nothing_leaves_the_job_started(connection: redis.Redis) -> None:
    queue = Queue(connection=connection)
    job = queue.enqueue(jobs.say_hello)
    worker = SwallowingWorker([queue], connection=connection)
    worker.work(burst=True)
    assert job.get_status(refresh=True) == JobStatus.STARTED
    assert not worker.is_working_on(job.id)  # no longer kept alive by this worker's heartbeat


class RaisingHandlerWorker(SimpleWorker):
    def handle_job_success(self, job: Job, queue: Any, started_job_registry: Any = None) -> None:
        raise RuntimeError('broken hook')


def test_a_hook_that_raises_before_recording_fails_the_job(connection: redis.Redis) -> None:
    queue = Queue(connection=connection)
    job = queue.enqueue(jobs.say_hello)
    RaisingHandlerWorker([queue], connection=connection).work(burst=True)
    assert job.get_status(refresh=True) == JobStatus.FAILED
    latest = job.latest_result()
    assert latest is not None and 'broken hook' in (latest.exc_string or '')


def test_direct_calls_record_at_once(connection: redis.Redis) -> None:
    """As RQ's tests call them: on a job no worker claimed."""
    queue = Queue(connection=connection)
    job = queue.enqueue(jobs.div_by_zero, retry=Retry(max=1))
    worker = SimpleWorker([queue], connection=connection)
    worker.register_birth()

    connection.delete(queue.key)
    worker.handle_job_failure(job, queue)
    assert job.get_status(refresh=True) == JobStatus.QUEUED and queue.job_ids == [job.id]
    job.refresh()
    assert job.retries_left == 0
    connection.delete(queue.key)
    worker.handle_job_failure(job, queue, exc_string='boom')
    assert job in FailedJobRegistry(queue=queue)
    latest = job.latest_result()
    assert latest is not None and latest.worker_name == worker.name
    assert connection.hget(worker.key, 'failed_job_count') == b'2'

    ok = queue.enqueue(jobs.add, 2, 3)
    assert worker.perform_job(ok, queue) is True
    assert ok.get_status(refresh=True) == JobStatus.FINISHED and ok.return_value(refresh=True) == 5
    assert connection.hget(worker.key, 'successful_job_count') == b'1'
    assert worker.perform_job(queue.enqueue(jobs.div_by_zero), queue) is False


# --- the forking worker: perform_job and the handlers run in the horse, as in RQ


class HorseHookWorker(Worker):
    trail: Path

    def perform_job(self, job: Job, queue: Any) -> bool:
        with self.trail.open('a') as trail:
            trail.write(f'perform_job {os.getpid()} {self.is_horse}\n')
        return super().perform_job(job, queue)

    def handle_job_success(self, job: Job, queue: Any, started_job_registry: Any = None) -> None:
        with self.trail.open('a') as trail:
            trail.write(f'handle_job_success {os.getpid()}\n')
        super().handle_job_success(job, queue, started_job_registry)

    def handle_job_failure(self, job: Job, queue: Any, started_job_registry: Any = None, exc_string: str = '') -> None:
        with self.trail.open('a') as trail:
            trail.write(f'handle_job_failure {os.getpid()} {exc_string.strip().splitlines()[-1]}\n')
        super().handle_job_failure(job, queue, started_job_registry, exc_string=exc_string)


def test_forking_worker_hooks_run_in_the_horse(redis_conn: redis.Redis, tmp_path: Path) -> None:
    queue = Queue(connection=redis_conn)
    ok = queue.enqueue(jobs.say_hello, 'horse')
    failing = queue.enqueue(jobs.div_by_zero)
    worker = HorseHookWorker([queue], connection=redis_conn)
    worker.trail = tmp_path / 'trail'
    worker.work(burst=True)

    lines = [line.split() for line in worker.trail.read_text().splitlines()]
    assert [line[0] for line in lines] == ['perform_job', 'handle_job_success', 'perform_job', 'handle_job_failure']
    assert all(int(line[1]) != os.getpid() for line in lines)  # in the horses
    assert lines[0][2] == 'True' and lines[3][2:] == ['ZeroDivisionError:', 'division', 'by', 'zero']
    assert ok.get_status(refresh=True) == JobStatus.FINISHED and ok.return_value() == 'Hi there, horse!'
    assert failing.get_status(refresh=True) == JobStatus.FAILED
    assert worker.successful_job_count == 1 and worker.failed_job_count == 1


def test_a_horse_that_dies_fails_its_job_through_handle_job_failure_in_the_worker(
    redis_conn: redis.Redis, tmp_path: Path
) -> None:
    queue = Queue(connection=redis_conn)
    job = queue.enqueue(os._exit, 3)
    worker = HorseHookWorker([queue], connection=redis_conn)
    worker.trail = tmp_path / 'trail'
    worker.work(burst=True)

    lines = worker.trail.read_text().splitlines()
    assert lines[0].startswith('perform_job')
    assert lines[1].startswith(f'handle_job_failure {os.getpid()} Work-horse terminated unexpectedly')
    assert job.get_status(refresh=True) == JobStatus.FAILED


# --- RQ's log lines


def test_rq_log_lines_for_start_success_and_failure(connection: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    queue = Queue(connection=connection)
    ok = queue.enqueue(jobs.say_hello, 'Frank', result_ttl=10)
    failing = queue.enqueue(jobs.div_by_zero)
    worker = SimpleWorker([queue], connection=connection)
    with caplog.at_level(logging.INFO, logger='rqfast'):
        worker.work(burst=True)
    messages = [record.getMessage() for record in caplog.records]
    name = worker.name
    module = jobs.__name__
    assert f"Worker {name}: default: {module}.say_hello('Frank') ({ok.id})" in messages
    assert any(m.startswith(f"Successfully completed {module}.say_hello('Frank') job in 0:00:") for m in messages)
    assert f'Worker {name}: default: Job OK ({ok.id})' in messages
    assert f'Worker {name}: job {ok.id} result is kept for 10 seconds' in messages
    [error] = [record for record in caplog.records if record.levelno == logging.ERROR]
    assert error.getMessage().startswith(
        f'Worker {name}: job {failing.id}: exception raised while executing ({module}.div_by_zero)\nTraceback'
    )
    assert error.getMessage().rstrip().endswith('ZeroDivisionError: division by zero')
    assert error.job_id == failing.id and error.queue == 'default'  # type: ignore[attr-defined]


def test_log_switches(connection: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    queue = Queue(connection=connection)
    job = queue.enqueue(jobs.say_hello, 'Frank', result_ttl=10)

    class Quiet(SimpleWorker):
        log_result_lifespan = False

    worker = Quiet([queue], connection=connection, log_job_description=False)
    with caplog.at_level(logging.INFO, logger='rqfast'):
        worker.work(burst=True)
    messages = [record.getMessage() for record in caplog.records]
    assert not any('Frank' in m or 'result is kept' in m for m in messages)
    assert f'Worker {worker.name}: default: {job.id}' in messages


def test_the_forking_worker_logs_the_horses_exception(
    redis_conn: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    queue = Queue(connection=redis_conn)
    job = queue.enqueue(jobs.div_by_zero)
    with caplog.at_level(logging.INFO, logger='rqfast'):
        Worker([queue], connection=redis_conn).work(burst=True)
    [error] = [record.getMessage() for record in caplog.records if record.levelno == logging.ERROR]
    assert f'job {job.id}: exception raised while executing ({jobs.__name__}.div_by_zero)' in error
    assert 'ZeroDivisionError: division by zero' in error


def test_rq_step_by_step_dequeue_then_perform(connection: redis.Redis) -> None:
    queue = Queue(connection=connection)
    worker = SimpleWorker([queue], connection=connection)
    assert worker.dequeue_job_and_maintain_ttl(None) is None  # nothing queued, no wait

    job = queue.enqueue(jobs.add, 1, 2)
    job_in_hand, its_queue = worker.dequeue_job_and_maintain_ttl(1)
    assert job_in_hand.id == job.id and its_queue.name == queue.name
    assert job.get_status(refresh=True) == JobStatus.STARTED and job.id in StartedJobRegistry(queue=queue)
    assert worker.perform_job(job_in_hand, its_queue)
    assert job.get_status(refresh=True) == JobStatus.FINISHED and job.return_value(refresh=True) == 3
    assert StartedJobRegistry(queue=queue).get_job_ids() == [] and connection.zcard(keys.executions_key(job.id)) == 0


def _save_status_on_success(job: Job, connection: Any, result: Any) -> None:
    connection.set(f'seen:{job.id}', job.get_status(refresh=False).value)


def _save_status_on_failure(job: Job, connection: Any, *exc_info: Any) -> None:
    connection.set(f'seen:{job.id}', job.get_status(refresh=False).value)


def test_callbacks_see_the_status_the_job_ends_with(connection: redis.Redis) -> None:
    """As in RQ (#1631): finished in the success callback, failed in the failure callback."""
    queue = Queue(connection=connection)
    ok = queue.enqueue(jobs.say_hello, on_success=Callback(_save_status_on_success))
    failing = queue.enqueue(jobs.div_by_zero, on_failure=Callback(_save_status_on_failure))
    SimpleWorker([queue], connection=connection).work(burst=True)
    assert connection.get(f'seen:{ok.id}') == b'finished'
    assert connection.get(f'seen:{failing.id}') == b'failed'
