"""Worker subclasses written for RQ 2.12 or RQ 3.0: their hooks are called as RQ calls them.

A matrix of override styles (**kwargs, explicit keywords, 2.12's positional calls, 3.0's `execution`)
x worker classes (SimpleWorker, Worker, SpawnWorker, SimpleWorker at concurrency 2) x outcomes (a job
that returns, one that raises). rq 2.12 (installed in the test env) is the oracle where it can run
the same subclass: SimpleWorker and Worker in the 2.12 styles (2.12's SpawnWorker child runs no
subclass hooks, and 2.12 never passes `execution`). RQ 3.0 (run by hand from /tmp/rq-3.0.0 on these
same classes) calls the **kwargs and the 3.0 styles in the same order, with its own Execution; the
2.12 styles break there (perform_job gets a third argument), where rqfast runs both.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
import redis
import rq
import rq.worker

import rqfast
from rqfast.status import JobStatus
from rqfast.worker import SpawnWorker

try:
    import concurrency_jobs
    import hook_workers
    import jobs
except ImportError:  # tests/ became a package
    from tests import concurrency_jobs, hook_workers, jobs  # type: ignore[no-redef]

STYLES = ('kwargs', 'keywords', 'positional', 'rq3')


def _note(worker: Any, hook: str, job: Any, execution: Any = None) -> None:
    line = f'{hook} {job.id}'
    if execution is not None:
        line += f' {execution.id} {execution.job_id} {type(execution).__module__}'
    with Path(worker.trail).open('a') as trail:
        trail.write(line + '\n')


def worker_class(base: type, style: str) -> type:
    """A subclass of `base` overriding perform_job and the handlers in one RQ style, each calling RQ's default."""
    if style == 'kwargs':  # as RQ's docs and many apps write them

        class Kwargs(base):  # type: ignore[valid-type,misc]
            def perform_job(self, job: Any, queue: Any, *args: Any, **kwargs: Any) -> bool:
                _note(self, 'perform_job', job)
                return bool(super().perform_job(job, queue, *args, **kwargs))

            def handle_job_success(self, job: Any, queue: Any, **kwargs: Any) -> None:
                _note(self, 'success', job)
                super().handle_job_success(job, queue, **kwargs)

            def handle_job_failure(self, job: Any, queue: Any, **kwargs: Any) -> None:
                _note(self, 'failure', job)
                super().handle_job_failure(job, queue, **kwargs)

        return Kwargs
    if style == 'keywords':  # 2.12's parameters, named in the call to RQ's default

        class Keywords(base):  # type: ignore[valid-type,misc]
            def perform_job(self, job: Any, queue: Any) -> bool:
                _note(self, 'perform_job', job)
                return bool(super().perform_job(job=job, queue=queue))

            def handle_job_success(self, job: Any, queue: Any, started_job_registry: Any) -> None:
                _note(self, 'success', job)
                super().handle_job_success(job=job, queue=queue, started_job_registry=started_job_registry)

            def handle_job_failure(
                self, job: Any, queue: Any, started_job_registry: Any = None, exc_string: str = ''
            ) -> None:
                _note(self, 'failure', job)
                super().handle_job_failure(
                    job=job, queue=queue, started_job_registry=started_job_registry, exc_string=exc_string
                )

        return Keywords
    if style == 'positional':  # 2.12's signatures, passed on positionally

        class Positional(base):  # type: ignore[valid-type,misc]
            def perform_job(self, job: Any, queue: Any) -> bool:
                _note(self, 'perform_job', job)
                return bool(super().perform_job(job, queue))

            def handle_job_success(self, job: Any, queue: Any, started_job_registry: Any) -> None:
                _note(self, 'success', job)
                super().handle_job_success(job, queue, started_job_registry)

            def handle_job_failure(
                self, job: Any, queue: Any, started_job_registry: Any = None, exc_string: str = ''
            ) -> None:
                _note(self, 'failure', job)
                super().handle_job_failure(job, queue, started_job_registry, exc_string)

        return Positional

    class Rq3(base):  # type: ignore[valid-type,misc]  # RQ 3.0's signatures, with the execution
        def perform_job(self, job: Any, queue: Any, execution: Any) -> bool:
            _note(self, 'perform_job', job, execution)
            return bool(super().perform_job(job, queue, execution))

        def handle_job_success(self, job: Any, queue: Any, started_job_registry: Any, execution: Any) -> None:
            _note(self, 'success', job, execution)
            super().handle_job_success(job, queue, started_job_registry, execution)

        def handle_job_failure(
            self, job: Any, queue: Any, started_job_registry: Any = None, exc_string: str = '', execution: Any = None
        ) -> None:
            _note(self, 'failure', job, execution)
            super().handle_job_failure(job, queue, started_job_registry, exc_string, execution)

    return Rq3


KINDS: dict[str, tuple[type, dict[str, Any]]] = {
    'simple': (rqfast.SimpleWorker, {}),
    'forking': (rqfast.Worker, {}),
    'spawn': (SpawnWorker, {}),
    'simple-c2': (rqfast.SimpleWorker, {'concurrency': 2}),
}
RQ_KINDS = {'simple': rq.SimpleWorker, 'forking': rq.Worker}


def run(conn: redis.Redis, lib: Any, base: type, style: str, trail: Path, **options: Any) -> tuple[list[str], Any]:
    """One job that returns and one that raises, through a subclass of `base`: the hooks called
    (in labels: hook:ok or hook:bad, in the order they ran) and the two jobs."""
    klass = worker_class(base, style)
    klass.trail = str(trail)
    queue = lib.Queue(f'sig-{style}-{base.__module__}-{base.__name__}', connection=conn)
    ok = queue.enqueue(jobs.say_hello, 'sig')
    bad = queue.enqueue(jobs.div_by_zero)
    klass([queue], connection=conn, **options).work(burst=True)
    labels = {ok.id: 'ok', bad.id: 'bad'}
    lines = trail.read_text().split('\n')[:-1] if trail.exists() else []
    return [f'{line.split()[0]}:{labels[line.split()[1]]}' for line in lines], (ok, bad, lines)


@pytest.mark.parametrize('style', STYLES)
@pytest.mark.parametrize('kind', list(KINDS))
def test_hooks_are_called_as_rq_calls_them(redis_conn: redis.Redis, tmp_path: Path, kind: str, style: str) -> None:
    base, options = KINDS[kind]
    called, (ok, bad, lines) = run(redis_conn, rqfast, base, style, tmp_path / 'rqfast', **options)

    assert ok.get_status(refresh=True) == JobStatus.FINISHED
    assert ok.return_value() == 'Hi there, sig!'
    assert bad.get_status(refresh=True) == JobStatus.FAILED
    assert 'ZeroDivisionError' in (bad.latest_result().exc_string or '')
    # a spawned child runs the job itself: the handlers run in the worker, perform_job does not run
    expected = ['perform_job:ok', 'success:ok', 'perform_job:bad', 'failure:bad']
    if kind == 'spawn':
        expected = ['success:ok', 'failure:bad']
    if kind == 'simple-c2':  # side by side: in order for each job
        assert sorted(called) == sorted(expected)
        assert called.index('perform_job:ok') < called.index('success:ok')
        assert called.index('perform_job:bad') < called.index('failure:bad')
    else:
        assert called == expected

    if style == 'rq3':  # the execution is rqfast's, the one the job's result was recorded with
        for line in lines:
            _, job_id, execution_id, execution_job_id, module = line.split()
            job = ok if job_id == ok.id else bad
            assert execution_job_id == job.id and module == 'rqfast.executions'
            assert execution_id == job.latest_result().execution_id

    if kind in RQ_KINDS and style != 'rq3':  # the oracle: rq 2.12 calls the same hooks, in the same order
        oracle, (rq_ok, rq_bad, _) = run(redis_conn, rq, RQ_KINDS[kind], style, tmp_path / 'rq')
        assert oracle == called
        assert rq_ok.get_status(refresh=True) == 'finished' and rq_bad.get_status(refresh=True) == 'failed'


def test_rq_3_style_needs_no_worker_restart_per_job(redis_conn: redis.Redis) -> None:
    """How each hook is called is read once (when first needed after the worker looked for its hooks: when
    it is made, and when work() starts), not per job."""
    klass = worker_class(rqfast.SimpleWorker, 'rq3')
    worker = klass([rqfast.Queue(connection=redis_conn)], connection=redis_conn)
    calls = worker._hooks.calls()
    assert calls.perform and calls.success and calls.failure
    assert worker._hooks.calls() is calls
    plain = worker_class(rqfast.SimpleWorker, 'positional')(
        [rqfast.Queue(connection=redis_conn)], connection=redis_conn
    )
    plain_calls = plain._hooks.calls()
    assert not (plain_calls.perform or plain_calls.success or plain_calls.failure)


# --- a hook that raises


def raising_class(base: type) -> type:
    class Raising(base):  # type: ignore[valid-type,misc]
        def handle_job_success(self, job: Any, queue: Any, **kwargs: Any) -> None:
            raise RuntimeError('the success hook broke')

    return Raising


@pytest.mark.parametrize('kind', list(KINDS))
def test_a_hook_that_raises_is_logged_and_named_in_the_record(
    redis_conn: redis.Redis, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    base, options = KINDS[kind]
    queue = rqfast.Queue(f'raising-{kind}', connection=redis_conn)
    job = queue.enqueue(jobs.say_hello, 'hook')
    with caplog.at_level(logging.INFO, logger='rqfast'):
        raising_class(base)([queue], connection=redis_conn, **options).work(burst=True)

    assert job.get_status(refresh=True) == JobStatus.FAILED
    exc_string = job.latest_result().exc_string or ''
    assert 'Raising.handle_job_success() raised after the job ran (success)' in exc_string
    assert 'RuntimeError: the success hook broke' in exc_string
    logged = '\n'.join(record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR)
    assert 'Traceback (most recent call last)' in logged
    assert 'RuntimeError: the success hook broke' in logged
    assert 'Raising.handle_job_success() raised' in logged


# --- handle_job_retry: a job that returns a Retry (RQ calls it with keywords, execution= in both versions)


class _RetryNotes:
    trail: str

    def note(self, line: str) -> None:
        with Path(self.trail).open('a') as trail:
            trail.write(line + '\n')


def retry_class(base: type) -> type:
    class RetryHook(_RetryNotes, base):  # type: ignore[valid-type,misc]
        def handle_job_retry(self, job: Any, queue: Any, retry: Any, started_job_registry: Any, execution: Any) -> None:
            self.note(f'retry {job.id} {type(retry).__name__} {retry.max} {execution.job_id} {execution.id}')
            super().handle_job_retry(job, queue, retry, started_job_registry, execution)

    return RetryHook


@pytest.mark.parametrize('kind', list(KINDS))
def test_handle_job_retry_is_called_as_rq_calls_it(redis_conn: redis.Redis, tmp_path: Path, kind: str) -> None:
    base, options = KINDS[kind]
    klass = retry_class(base)
    klass.trail = str(tmp_path / 'trail')
    queue = rqfast.Queue(f'retry-hook-{kind}', connection=redis_conn)
    job = queue.enqueue(concurrency_jobs.retry_once)
    klass([queue], connection=redis_conn, **options).work(burst=True)

    (line,) = Path(klass.trail).read_text().splitlines()
    _, job_id, retry_type, retry_max, execution_job_id, execution_id = line.split()
    assert (job_id, retry_type, retry_max, execution_job_id) == (job.id, 'Retry', '1', job.id)
    assert execution_id
    assert job.get_status(refresh=True) == JobStatus.FINISHED and job.return_value() == 'retried'


def test_a_spawn_worker_class_a_child_can_import_runs_its_hooks_in_the_child(
    redis_conn: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As RQ 3.0's SpawnWorker: the child makes a worker of the same class and runs its perform_job."""
    trail = tmp_path / 'trail'
    monkeypatch.setenv('RQFAST_HOOK_TRAIL', str(trail))
    queue = rqfast.Queue('spawn-child-hooks', connection=redis_conn)
    ok = queue.enqueue(jobs.say_hello, 'child')
    bad = queue.enqueue(jobs.div_by_zero)
    hook_workers.Rq3SpawnWorker([queue], connection=redis_conn).work(burst=True)

    lines = [line.split() for line in trail.read_text().splitlines()]
    assert [(hook, job_id) for hook, job_id, _, _ in lines] == [
        ('perform_job', ok.id),
        ('success', ok.id),
        ('perform_job', bad.id),
        ('failure', bad.id),
    ]
    assert all(int(pid) != os.getpid() for _, _, pid, _ in lines)  # in the children
    assert lines[0][2] == lines[1][2] != lines[2][2] == lines[3][2]  # one child per job
    assert lines[1][3] == ok.latest_result().execution_id and lines[3][3] == bad.latest_result().execution_id
    assert ok.get_status(refresh=True) == JobStatus.FINISHED and ok.return_value() == 'Hi there, child!'
    assert bad.get_status(refresh=True) == JobStatus.FAILED


# --- handle_exception: called with the job's exc_info before handle_job_failure, as RQ calls it


def exception_class(base: type) -> type:
    class ExceptionHook(_RetryNotes, base):  # type: ignore[valid-type,misc]
        def handle_exception(self, job: Any, *exc_info: Any) -> None:
            self.note(f'handle_exception {job.id} {exc_info[0].__name__}')
            super().handle_exception(job, *exc_info)

        def handle_job_failure(self, job: Any, queue: Any, **kwargs: Any) -> None:
            self.note(f'failure {job.id}')
            super().handle_job_failure(job, queue, **kwargs)

    return ExceptionHook


def _count_handler_runs(job: Any, *exc_info: Any) -> bool:
    job.connection.rpush('handler-runs', job.id)
    return True


@pytest.mark.parametrize('kind', ['simple', 'forking', 'simple-c2'])
def test_handle_exception_is_called_as_rq_calls_it(redis_conn: redis.Redis, tmp_path: Path, kind: str) -> None:
    base, options = KINDS[kind]
    klass = exception_class(base)
    klass.trail = str(tmp_path / 'trail')
    queue = rqfast.Queue(f'exception-hook-{kind}', connection=redis_conn)
    job = queue.enqueue(jobs.div_by_zero)
    redis_conn.delete('handler-runs')
    worker = klass([queue], connection=redis_conn, exception_handlers=[_count_handler_runs], **options)
    worker.work(burst=True)

    assert Path(klass.trail).read_text().splitlines() == [
        f'handle_exception {job.id} ZeroDivisionError',
        f'failure {job.id}',
    ]
    assert redis_conn.lrange('handler-runs', 0, -1) == [job.id.encode()]  # the handlers ran once
    assert job.get_status(refresh=True) == JobStatus.FAILED
