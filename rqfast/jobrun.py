"""Running a job in this process: its call as the current job, RQ's execution hooks and callbacks.

The half of Job (job.py) that a worker's horse uses while the job runs; `get_current_job()` reads
the context variable set here.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Awaitable
from types import CoroutineType, GeneratorType, ModuleType
from typing import Any

from . import callbacks
from .dates import now, utcformat
from .jobspec import JobSpec
from .rq_interop import enter_rq_job
from .status import JobStatus
from .timeouts import JobTimeoutException

_current_job: contextvars.ContextVar[JobRun | None] = contextvars.ContextVar('rqfast_current_job', default=None)


def running_job() -> JobRun | None:
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


class JobRun(JobSpec):
    """Job's running half: perform() and RQ's hooks around it."""

    # perform() PERSISTs the job's key first, as RQ's does, so it cannot expire while it runs; rqfast's
    # runners turn that off (execution.run_job): a worker's claim script has persisted it already.
    persist_on_perform: bool = True

    def perform(self) -> Any:
        """Run the function with this job as the current job; await it if it is a coroutine."""
        if self.persist_on_perform:
            self.connection.persist(self.key)
        token = _current_job.set(self)
        try:
            self._result = self._execute()
        finally:
            _current_job.reset(token)
        return self._result

    async def perform_async(self, timeout: float | None) -> Any:
        """Await the job's coroutine function with this job as the current job (of this task), for at
        most `timeout` seconds (None: no limit): past it the task is cancelled and JobTimeoutException
        raised, as RQ's death penalty raises it in a synchronous job."""
        asyncio = _asyncio()
        token = _current_job.set(self)
        expired: list[bool] = []
        handle = None
        if timeout is not None:
            task = asyncio.current_task()
            assert task is not None
            handle = asyncio.get_running_loop().call_later(timeout, lambda: expired.append(task.cancel()))
        leave_rq = None
        try:
            func = self.func
            leave_rq = enter_rq_job(self)
            self._result = await func(*self.args, **self.kwargs)
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
        return self._result

    # --- progress: rqfast's own `progress` field of the job hash (RQ ignores it)

    def set_progress(self, value: Any) -> None:
        """Record how far the job has got (any JSON value: 42, 0.5, "step 3 of 7", {"done": 3}); one HSET
        (one script call for a job with events, which also writes a `progress` event: rqfast.events)."""
        try:
            encoded = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f'set_progress: a JSON value (number, text, list, dict...) is needed, got {value!r}'
            ) from exc
        if self.events:  # rqfast's events: the field and a `progress` event, in one script call
            scripts().set_progress(self.connection, self.id, encoded, self.origin, self.events)
            return
        self.connection.hset(self.key, 'progress', encoded)

    @property
    def progress(self) -> Any:
        """The value the job last gave set_progress(), read from Redis now (None before any)."""
        stored = self.connection.hget(self.key, 'progress')
        return None if stored is None else json.loads(stored)

    def prepare_for_execution(self, worker_name: str, pipeline: Any) -> None:
        """RQ's: mark the job started by `worker_name` (one HSET, queued on `pipeline`).

        rqfast's workers start a job in their claim script instead; this is for code that runs jobs itself.
        """
        self.worker_name = worker_name
        self.last_heartbeat = self.started_at = now()
        self._status = JobStatus.STARTED
        fields = {
            'last_heartbeat': utcformat(self.last_heartbeat),
            'status': self._status.value,
            'started_at': utcformat(self.started_at),
            'worker_name': worker_name,
        }
        pipeline.hset(self.key, mapping=fields)

    # RQ 2.12's methods; RQ 3.0 has these as functions (rqfast.callbacks), which rqfast's own code calls.
    def execute_success_callback(self, death_penalty_class: Any, result: Any) -> None:
        callbacks.execute_success_callback(self, death_penalty_class, result)

    def execute_failure_callback(self, death_penalty_class: Any, *exc_info: Any) -> None:
        callbacks.execute_failure_callback(self, death_penalty_class, *exc_info)

    def execute_stopped_callback(self, death_penalty_class: Any) -> None:
        callbacks.execute_stopped_callback(self, death_penalty_class)

    def send_webhooks(self, status: str | JobStatus, *, exc_string: str | None = None) -> None:
        """Send, here and now, each webhook registered for `status` ('finished' or 'failed'), as RQ's.

        Errors are logged by Webhook.send, never raised. rqfast's workers do not call this: they send
        from a thread of their own, so an endpoint never delays the next job (worker/webhooks.py).
        """
        for webhook in self.webhooks:
            if webhook.job_status == status:
                webhook.send(self, exc_string=exc_string)

    def _execute(self) -> Any:
        func = self.func  # imported first: a job module importing rq loads it before rq's current job is set
        leave_rq = enter_rq_job(self)  # rq.get_current_job() too, where rq is loaded beside rqfast
        try:
            result = func(*self.args, **self.kwargs)
            if _isawaitable(result):
                result = _asyncio().run(_await(result))
        finally:
            if leave_rq is not None:
                leave_rq()
        return result


def _isawaitable(value: Any) -> bool:
    """inspect.isawaitable, without importing inspect (it would cost every spawned child's import)."""
    return (
        isinstance(value, CoroutineType)
        or (isinstance(value, GeneratorType) and bool(value.gi_code.co_flags & _CO_ITERABLE_COROUTINE))
        or isinstance(value, Awaitable)
    )


_CO_ITERABLE_COROUTINE = 0x100  # inspect.CO_ITERABLE_COROUTINE


async def _await(awaitable: Any) -> Any:
    return await awaitable
