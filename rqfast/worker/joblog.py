"""RQ's log lines about jobs, as RQ's worker writes them: a job starting, its success, its exception.

One object (JobLog) every part of the worker writes them through: the loader (a job starting), the
runner (an exception where the job ran), the recorder (a success, once recorded) and RQ's hooks.
"""

from __future__ import annotations

from typing import Any

from ..job import Job
from ..security import is_sealed
from .context import WorkerContext


class JobLog:
    """The worker's log lines about its jobs (its logger, its name, log_job_description)."""

    def __init__(self, context: WorkerContext) -> None:
        self.context = context

    def start(self, job: Job, queue: str) -> None:
        context = self.context
        if context.log_job_description:
            context.log.info('Worker %s: %s: %s (%s)', context.name, queue, job.description, job.id)
        else:
            context.log.info('Worker %s: %s: %s', context.name, queue, job.id)

    def completed(self, job: Job) -> None:
        context = self.context
        taken = job.ended_at - job.started_at if job.ended_at and job.started_at else None
        if context.log_job_description:
            context.log.info('Successfully completed %s job in %ss on worker %s', job.description, taken, context.name)
        else:
            context.log.info('Successfully completed job %s in %ss on worker %s', job.id, taken, context.name)

    def job_ok(self, job: Job) -> None:
        context = self.context
        log, name = context.log, context.name
        log.info('Worker %s: %s: %s (%s)', name, job.origin, 'Job OK', job.id)
        if context.log_result_lifespan:
            result_ttl = job.get_result_ttl(context.default_result_ttl)
            if result_ttl == 0:
                log.info('Worker %s: job %s result discarded immediately', name, job.id)
            elif result_ttl > 0:
                log.info('Worker %s: job %s result is kept for %s seconds', name, job.id, result_ttl)
            else:
                log.info('Worker %s: job %s result will never expire, clean up result key manually', name, job.id)

    def exception(self, job: Job, exc_string: str, func_name: str = '') -> None:
        """RQ's error line; `func_name`: the horse's word for it (a worker process never deserializes the call)."""
        extra: dict[str, Any] = {'func': func_name}
        try:
            if not is_sealed(job):
                func_name = job.func_name
                extra = {'func': func_name, 'arguments': job.args, 'kwargs': job.kwargs}
        except Exception:  # a job whose data cannot be read
            func_name, extra = '<DeserializationError>', {}
        func_name = func_name or '<not loaded in the worker>'
        extra.update({'queue': job.origin, 'job_id': job.id})
        self.context.log.error(
            'Worker %s: job %s: exception raised while executing (%s)\n%s',
            self.context.name,
            job.id,
            func_name,
            exc_string,
            extra=extra,
        )
