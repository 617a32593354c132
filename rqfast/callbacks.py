"""Running a job's on_success / on_failure / on_stopped callback under its time limit (RQ 3.0's
rq.callbacks).

RQ 3.0 moved these out of Job into functions its worker, its sync run and its registry cleanup
call; rqfast's code calls them the same way, and Job's RQ 2.12 methods (execute_success_callback...)
delegate here. A coroutine function is refused (RQ 3.0): it would return an un-awaited coroutine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .as_rq import lazy_logger
from .defaults import rq2_compat
from .joboptions import Callback
from .timeouts import JobTimeoutException

if TYPE_CHECKING:
    from .jobspec import JobSpec
    from .timeouts import BaseDeathPenalty

__all__ = ['Callback', 'execute_failure_callback', 'execute_stopped_callback', 'execute_success_callback']

logger = lazy_logger('job')


def _refuse_coroutine(callback: Any, kind: str) -> None:
    """RQ 3.0 raises TypeError for an `async def` callback; RQ 2.12 called it (and never awaited it)."""
    import inspect  # here: a spawned child whose job has no callback does not import it (ast, dis, tokenize)

    if inspect.iscoroutinefunction(callback) and not rq2_compat():
        raise TypeError(f'Coroutine {kind} callbacks are not supported')


def execute_success_callback(job: JobSpec, death_penalty_class: type[BaseDeathPenalty], result: Any) -> None:
    """The job's success callback, with the job's result, under its timeout."""
    callback = job.success_callback
    if not callback:
        return
    _refuse_coroutine(callback, 'success')
    logger.debug('Job %s: running success callback...', job.id)
    with death_penalty_class(job.success_callback_timeout, JobTimeoutException, job_id=job.id):
        callback(job, job.connection, result)


def execute_failure_callback(job: JobSpec, death_penalty_class: type[BaseDeathPenalty], *exc_info: Any) -> None:
    """The job's failure callback, with the exception (type, value, traceback), under its timeout.
    Its own error is logged and raised."""
    callback = job.failure_callback
    if not callback:
        return
    _refuse_coroutine(callback, 'failure')
    logger.debug('Job %s: running failure callback...', job.id)
    try:
        with death_penalty_class(job.failure_callback_timeout, JobTimeoutException, job_id=job.id):
            callback(job, job.connection, *exc_info)
    except Exception:
        logger.exception('Job %s: error while executing failure callback', job.id)
        raise


def execute_stopped_callback(job: JobSpec, death_penalty_class: type[BaseDeathPenalty]) -> None:
    """The job's stopped callback (its horse was stopped), under its timeout. Its own error is logged and raised."""
    callback = job.stopped_callback
    if callback is None:
        return
    _refuse_coroutine(callback, 'stopped')
    logger.debug('Job %s: running stopped callback...', job.id)
    try:
        with death_penalty_class(job.stopped_callback_timeout, JobTimeoutException, job_id=job.id):
            callback(job, job.connection)
    except Exception:
        logger.exception('Job %s: error while executing stopped callback', job.id)
        raise
