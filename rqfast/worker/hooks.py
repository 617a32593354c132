"""RQ's extension points on the worker: execute_job, execute, perform_job, handle_job_success,
handle_job_failure, handle_job_retry, handle_exception (and the exception handlers' stack).

RQ applications subclass the worker and override these, and instrumentation patches them; the worker
calls them where RQ calls them, in RQ's order, at every concurrency (calling.py says how, and when the
loop takes the short way of what these defaults do). The defaults here are thin: each hands its work
to the worker's HookCaller (calling.py), which calls the others back on the worker, so an override of
any one of them sees every job, whatever calls it.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .. import engine
from ..execution import run_exception_handlers
from ..imports import import_attribute
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from .calling import own_hooks
from .declared import WorkerAttributes


def handler_list(handlers: Any) -> list[Any]:
    """A worker's exception_handlers argument as a list: one handler (RQ takes that too), a list, or None."""
    if handlers is None:
        return []
    return list(handlers) if isinstance(handlers, list | tuple) else [handlers]


@own_hooks
class JobHooks(WorkerAttributes):
    """RQ's extension points as the worker's methods (defaults: what the loop does without them)."""

    log_result_lifespan = True
    uses_hooks = False  # whether one is replaced (looked at when the worker is made, and when work() starts)

    def push_exc_handler(self, handler: Callable[..., Any] | str) -> None:
        self._exc_handlers.append(import_attribute(handler) if isinstance(handler, str) else handler)

    def pop_exc_handler(self) -> Callable[..., Any]:
        return self._exc_handlers.pop()

    @property
    def is_horse(self) -> bool:
        return self._hooks.is_horse

    def execute_job(self, job: Job, queue: Any) -> None:
        """Have the job executed (`execute`: in this process, or in a horse) and record how it ended."""
        running = self._hooks.for_job(job, queue)
        outcome = self.execute(job, running.claim, running.now)
        self._hooks.conclude(job, queue, outcome, running)

    def execute(self, job: Job, claim: engine.Claim, now: datetime | None = None) -> Outcome:
        """rqfast's: run the job where this worker class runs it (in process, in a forked horse, in a spawned
        child) and say how it ended (`now`: a pinned time for the times the run records)."""
        return self._runner.execute(job, self._hooks.for_claim(job, claim, now))

    def perform_job(self, job: Job, queue: Any, execution: Any = None) -> bool:
        """Run the job in this process, then handle_job_success, _failure or _retry; True unless it failed."""
        return self._hooks.perform(job, queue, execution)

    def handle_job_success(self, job: Job, queue: Any, started_job_registry: Any = None, execution: Any = None) -> None:
        """Record the job as finished (its result, dependents, counters), or hand it to the worker from a horse."""
        outcome = Outcome(OutcomeKind.SUCCESS, self._hooks.handled_value(job))
        self._hooks.record(job, queue, outcome, execution)

    def handle_job_failure(
        self, job: Job, queue: Any, started_job_registry: Any = None, exc_string: str = '', execution: Any = None
    ) -> None:
        """Record the job as failed (retried while it has retries left), or hand it to the worker from a horse."""
        self._hooks.record(job, queue, Outcome(OutcomeKind.FAILURE, exc_string=exc_string), execution)

    def handle_job_retry(
        self, job: Job, queue: Any, retry: Any, started_job_registry: Any = None, execution: Any = None
    ) -> None:
        """A job that returned a Retry: run again (requeued or scheduled), or failed once retry.max is reached."""
        self._hooks.record(job, queue, Outcome(OutcomeKind.RETRY, retry), execution)

    def handle_exception(self, job: Job, *exc_info: Any) -> None:
        """Log the job's exception and walk the exception handlers (rqfast's run does both itself, unless a
        subclass overrides this: then perform_job calls it, as RQ's does). A horse leaves the log to its worker."""
        if not self._hooks.is_horse:
            self._hooks.joblog.exception(job, ''.join(traceback.format_exception(*exc_info)))
        run_exception_handlers(job, exc_info, self._exc_handlers)
