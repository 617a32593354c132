"""Running a job in this process: its call, with the job as the current job (of this thread or task).

Job.perform, perform_async and _execute (job.py) hand their work to these functions; `get_current_job()`
reads the context variable set here. A horse's warm-up runs `perform` itself: the job's run without a
patch of Job.perform (opentelemetry-instrumentation-rq's).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable
from types import CoroutineType, GeneratorType, ModuleType
from typing import TYPE_CHECKING, Any

from .rq_interop import enter_rq_job
from .timeouts import JobTimeoutException

if TYPE_CHECKING:
    from .jobspec import JobSpec

_current_job: contextvars.ContextVar[JobSpec | None] = contextvars.ContextVar('rqfast_current_job', default=None)


def running_job() -> JobSpec | None:
    """The job running in this context (thread or task), or None outside a job."""
    return _current_job.get()


def _asyncio() -> ModuleType:
    """asyncio (some 13 ms), imported when a job is a coroutine: a spawned child that runs none never pays."""
    import asyncio

    return asyncio


def scripts() -> ModuleType:
    """rqfast.scripts, imported when a job first writes through a script (set_progress here; Job's
    register_dependency, cancel, cleanup and delete): a spawned child that only loads and runs its job
    imports no script, and no redis-py (tests/test_worker_spawn.py holds it)."""
    from . import scripts

    return scripts


def perform(job: Any) -> Any:
    """Job.perform's run: the function's value, called with `job` as the current job (awaited if it is a
    coroutine), its key PERSISTed first unless the job's runner turned that off (job.persist_on_perform)."""
    if job.persist_on_perform:
        job.connection.persist(job.key)
    token = _current_job.set(job)
    try:
        return job._execute()
    finally:
        _current_job.reset(token)


async def perform_async(job: Any, timeout: float | None) -> Any:
    """Job.perform_async: await the job's coroutine function with `job` as the current job (of this task),
    for at most `timeout` seconds (None: no limit): past it the task is cancelled and JobTimeoutException
    raised, as RQ's death penalty raises it in a synchronous job."""
    asyncio = _asyncio()
    token = _current_job.set(job)
    expired: list[bool] = []
    handle = None
    if timeout is not None:
        task = asyncio.current_task()
        assert task is not None
        handle = asyncio.get_running_loop().call_later(timeout, lambda: expired.append(task.cancel()))
    leave_rq = None
    try:
        func = job.func
        leave_rq = enter_rq_job(job)
        return await func(*job.args, **job.kwargs)
    except asyncio.CancelledError:
        if not expired:
            raise
        raise JobTimeoutException(f'Task exceeded maximum timeout value ({timeout} seconds)') from None
    finally:
        if handle is not None:
            handle.cancel()
        if leave_rq is not None:
            leave_rq()
        _current_job.reset(token)


def execute(job: Any) -> Any:
    """Job._execute: the call itself (a coroutine's result awaited on an event loop of its own)."""
    func = job.func  # imported first: a job module importing rq loads it before rq's current job is set
    leave_rq = enter_rq_job(job)  # rq.get_current_job() too, where rq is loaded beside rqfast
    try:
        result = func(*job.args, **job.kwargs)
        if _isawaitable(result):
            result = _asyncio().run(_await(result))
    finally:
        if leave_rq is not None:
            leave_rq()
    return result


def _isawaitable(value: Any) -> bool:
    """inspect.isawaitable, without importing inspect (it would cost every spawned child's import)."""
    if value is None:  # (most jobs' result: no ABC check)
        return False
    return (
        isinstance(value, CoroutineType)
        or (isinstance(value, GeneratorType) and bool(value.gi_code.co_flags & _CO_ITERABLE_COROUTINE))
        or isinstance(value, Awaitable)
    )


_CO_ITERABLE_COROUTINE = 0x100  # inspect.CO_ITERABLE_COROUTINE


async def _await(awaitable: Any) -> Any:
    return await awaitable
