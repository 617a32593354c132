"""Running one job in this process: timeout, callbacks, and the outcome the engine records.

Used by the SimpleWorker, by the forking and spawn workers' children, and by is_async=False queues.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from . import tracing
from .capture import captured_output
from .dates import now
from .job import Job, Retry
from .outcome import Outcome, OutcomeKind
from .status import JobStatus
from .text import traceback_module
from .timeouts import BaseDeathPenalty, JobTimeoutException, NoDeathPenalty, UnixSignalDeathPenalty

__all__ = [
    'ExceptionHandler',
    'Outcome',
    'RunObserver',
    'add_run_observer',
    'fail_job',
    'flush_run_observers',
    'remove_run_observer',
    'run_exception_handlers',
    'run_job',
    'run_job_async',
]

ExceptionHandler = Callable[..., Any]

# --- run observers: integrations that watch each run of a job in the process that runs it (a SimpleWorker's
# thread, a horse, a spawned child), on every worker class and concurrency, without a Redis call of their own.
# An observer is called with the job before it runs and returns a context manager that yields a function,
# which is handed the run's outcome before the context exits (rqfast.contrib.sentry: a transaction around
# the run, an event for a failure). `flush` is called by a horse or child before it exits (os._exit).

RunObserver = Callable[[Job], AbstractContextManager[Callable[[Outcome], object]]]
_OBSERVERS: list[RunObserver] = []
_FLUSHES: list[Callable[[], object]] = []
_UNOBSERVED: ContextVar[bool] = ContextVar('rqfast_unobserved_run', default=False)


@contextmanager
def unobserved() -> Iterator[None]:
    """Runs in this block are no job anyone enqueued (a horse's warm-up): the observers do not see them."""
    token = _UNOBSERVED.set(True)
    try:
        yield
    finally:
        _UNOBSERVED.reset(token)


def add_run_observer(observer: RunObserver, flush: Callable[[], object] | None = None) -> None:
    """Have `observer` watch every job this process runs from now on (once, however often it is added)."""
    if observer not in _OBSERVERS:
        _OBSERVERS.append(observer)
        if flush is not None:
            _FLUSHES.append(flush)


def remove_run_observer(observer: RunObserver, flush: Callable[[], object] | None = None) -> None:
    if observer in _OBSERVERS:
        _OBSERVERS.remove(observer)
    if flush is not None and flush in _FLUSHES:
        _FLUSHES.remove(flush)


def flush_run_observers() -> None:
    """What a horse or spawned child calls before it exits: the observers send what they hold."""
    for flush in list(_FLUSHES):
        try:
            flush()
        except Exception:  # an integration's flush must not change how the child ends
            pass


@contextmanager
def _observing(job: Job) -> Iterator[Callable[[Outcome], Outcome]]:
    with ExitStack() as stack:
        ends = [stack.enter_context(observer(job)) for observer in list(_OBSERVERS)]

        def ended(outcome: Outcome) -> Outcome:
            for end in ends:
                end(outcome)
            return outcome

        yield ended


def run_job(
    job: Job,
    death_penalty_class: type[BaseDeathPenalty] = UnixSignalDeathPenalty,
    exception_handlers: Sequence[ExceptionHandler] = (),
    default_timeout: int = 180,
    clock: Callable[[], datetime] = now,
) -> Outcome:
    """Perform the job under its timeout and run its callbacks, as RQ's Worker.perform_job does."""
    if _OBSERVERS and not _UNOBSERVED.get():  # (an integration watching each run: rqfast.contrib.sentry)
        with _observing(job) as ended:
            return ended(_traced_run(job, death_penalty_class, exception_handlers, default_timeout, clock))
    return _traced_run(job, death_penalty_class, exception_handlers, default_timeout, clock)


def _traced_run(
    job: Job,
    death_penalty_class: type[BaseDeathPenalty],
    exception_handlers: Sequence[ExceptionHandler],
    default_timeout: int,
    clock: Callable[[], datetime],
) -> Outcome:
    if tracing.active():  # (opentelemetry with a tracer provider): the run in a consumer span, child of the enqueue's
        with tracing.consumer_span(job) as span:
            return tracing.ended(
                span, _run_job_output(job, death_penalty_class, exception_handlers, default_timeout, clock)
            )
    return _run_job_output(job, death_penalty_class, exception_handlers, default_timeout, clock)


def _run_job_output(
    job: Job,
    death_penalty_class: type[BaseDeathPenalty],
    exception_handlers: Sequence[ExceptionHandler],
    default_timeout: int,
    clock: Callable[[], datetime],
) -> Outcome:
    """The run, with its output captured when the job asks for it (capture_output=True)."""
    if not job.capture_output:
        return _run_job(job, death_penalty_class, exception_handlers, default_timeout, clock)
    with captured_output() as output:
        outcome = _run_job(job, death_penalty_class, exception_handlers, default_timeout, clock)
    outcome.output = output.text()
    return outcome


def _run_job(
    job: Job,
    death_penalty_class: type[BaseDeathPenalty],
    exception_handlers: Sequence[ExceptionHandler],
    default_timeout: int,
    clock: Callable[[], datetime],
) -> Outcome:
    if job.started_at is None or not job.rate_limit_window_key:
        # (a job under a window rate limit keeps its claim's started_at: the start its limit counted)
        job.started_at = clock()
    job.persist_on_perform = False  # no PERSIST round trip: the worker's claim script has done it
    try:
        timeout = job.timeout or default_timeout
        with death_penalty_class(timeout, JobTimeoutException, job_id=job.id):
            value = job.perform()
        _ended(job, clock)
        if isinstance(value, Retry):
            return Outcome(OutcomeKind.RETRY, value)
        job.set_local_status(JobStatus.FINISHED)  # what the callback sees, as in RQ
        job.execute_success_callback(death_penalty_class, value)  # RQ's step: a Job subclass may override it
        return Outcome(OutcomeKind.SUCCESS, value)
    except Exception:
        return fail_job(job, sys.exc_info(), death_penalty_class, exception_handlers, clock)


async def run_job_async(
    job: Job,
    exception_handlers: Sequence[ExceptionHandler] = (),
    default_timeout: int = 180,
    clock: Callable[[], datetime] = now,
) -> Outcome:
    """run_job for an `async def` job, as a task of the caller's event loop: the timeout cancels it.

    Its callbacks run on the loop's thread, where no SIGALRM can reach them: without a time limit.
    """
    if _OBSERVERS and not _UNOBSERVED.get():
        with _observing(job) as ended:
            return ended(await _traced_run_async(job, exception_handlers, default_timeout, clock))
    return await _traced_run_async(job, exception_handlers, default_timeout, clock)


async def _traced_run_async(
    job: Job, exception_handlers: Sequence[ExceptionHandler], default_timeout: int, clock: Callable[[], datetime]
) -> Outcome:
    if tracing.active():
        with tracing.consumer_span(job) as span:
            return tracing.ended(span, await _run_job_async_output(job, exception_handlers, default_timeout, clock))
    return await _run_job_async_output(job, exception_handlers, default_timeout, clock)


async def _run_job_async_output(
    job: Job, exception_handlers: Sequence[ExceptionHandler], default_timeout: int, clock: Callable[[], datetime]
) -> Outcome:
    if not job.capture_output:
        return await _run_job_async(job, exception_handlers, default_timeout, clock)
    with captured_output() as output:  # (the task's own context: other tasks' output is not captured)
        outcome = await _run_job_async(job, exception_handlers, default_timeout, clock)
    outcome.output = output.text()
    return outcome


async def _run_job_async(
    job: Job, exception_handlers: Sequence[ExceptionHandler], default_timeout: int, clock: Callable[[], datetime]
) -> Outcome:
    if job.started_at is None or not job.rate_limit_window_key:
        # (a job under a window rate limit keeps its claim's started_at: the start its limit counted)
        job.started_at = clock()
    job.persist_on_perform = False
    try:
        timeout = job.timeout or default_timeout
        value = await job.perform_async(timeout if timeout > 0 else None)
        _ended(job, clock)
        if isinstance(value, Retry):
            return Outcome(OutcomeKind.RETRY, value)
        job.set_local_status(JobStatus.FINISHED)
        job.execute_success_callback(NoDeathPenalty, value)
        return Outcome(OutcomeKind.SUCCESS, value)
    except Exception:
        return fail_job(job, sys.exc_info(), NoDeathPenalty, exception_handlers, clock)


def _ended(job: Job, clock: Callable[[], datetime] = now) -> None:
    job.ended_at = clock()
    job.last_heartbeat = job.ended_at


def fail_job(
    job: Job,
    exc_info: Any,
    death_penalty_class: type[BaseDeathPenalty] = UnixSignalDeathPenalty,
    exception_handlers: Sequence[ExceptionHandler] = (),
    clock: Callable[[], datetime] = now,
) -> Outcome:
    """The failure callback, then the exception handler chain; a raising callback's error replaces the job's."""
    if job.ended_at is None or job.started_at is None or job.ended_at < job.started_at:
        _ended(job, clock)
    job.set_local_status(JobStatus.FAILED)  # what the callback sees, as in RQ (a retry included)
    try:
        job.execute_failure_callback(death_penalty_class, *exc_info)
    except Exception:
        exc_info = sys.exc_info()
    run_exception_handlers(job, exc_info, exception_handlers)
    return Outcome(
        OutcomeKind.FAILURE, exc_string=''.join(traceback_module().format_exception(*exc_info)), exc_info=exc_info
    )


def run_exception_handlers(job: Job, exc_info: Any, handlers: Sequence[ExceptionHandler]) -> None:
    """RQ's chain: each handler runs until one returns a falsy value other than None."""
    for handler in handlers:
        try:
            fall_through = handler(job, *exc_info)
        except Exception:
            traceback_module().print_exc()
            break
        if fall_through is not None and not fall_through:
            break
