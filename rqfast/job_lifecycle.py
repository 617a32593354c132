"""RQ 3.0's rq.job_lifecycle: the exception handler chain, traceback text, and a failure recorded
with no worker (a sync run, an abandoned job, or a caller's own bookkeeping).

`record_job_failure` is one call of the engine's finish script, as every other state change.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from . import engine
from .dates import now
from .outcome import Outcome, OutcomeKind
from .status import JobStatus

if TYPE_CHECKING:
    from redis.client import Pipeline

    from .job import Job

__all__ = ['call_exception_handlers', 'format_exc_info', 'record_job_failure']


def call_exception_handlers(handlers: Iterable[Callable[..., Any]], job: Any, *exc_info: Any) -> None:
    """Each handler with (job, *exc_info) until one returns a falsy value other than None (None goes on).
    A handler's own error propagates, as in RQ 3.0."""
    for handler in handlers:
        goes_on = handler(job, *exc_info)
        if goes_on is not None and not goes_on:
            break


def format_exc_info(exc_info: Any) -> str:
    """A (type, value, traceback) tuple as the text of its traceback."""
    return ''.join(traceback.format_exception(*exc_info))


def record_job_failure(job: Job, exc_string: str, pipeline: Pipeline | None = None) -> None:
    """Mark the job failed, in its failed registry, with a failure result by no worker (`exc_string`).

    Not retried, dependents not released (the caller decides, as RQ 3.0's callers do). One finish
    script call, queued into `pipeline` when given (it runs when the caller executes it).
    """
    job.set_local_status(JobStatus.FAILED)
    moment = now()
    plan = engine.plan(job, Outcome(OutcomeKind.FAILURE, exc_string=exc_string), moment, sync=True)
    engine.record_outcome(job.connection, job.id, job.origin, plan, moment, pipeline=pipeline)
