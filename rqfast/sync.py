"""Running a job at enqueue time, for queues made with is_async=False (as RQ's run_sync)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import engine
from .execution import run_job
from .job import Job, JobStatus

if TYPE_CHECKING:
    from .queue import Queue


class _NoDeathPenalty:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


def run_sync(queue: Queue, job: Job) -> Job:
    """Perform the job here and record its outcome with the engine's finish script (worker name '')."""
    job.worker_name = 'sync'
    job.set_local_status(JobStatus.STARTED)
    outcome = run_job(job, death_penalty_class=_NoDeathPenalty)  # type: ignore[arg-type]
    if outcome.kind == 'success':
        plan = engine.plan_success(job, outcome.value, '', '', None)
        job.set_local_status(JobStatus.FINISHED)
    elif outcome.kind == 'retry':
        plan = engine.plan_retry_result(job, outcome.value, '', '', None)
    else:
        job.ended_at = None  # RQ's sync run sets ended_at only on success, and never retries
        plan = engine.plan_failure(job, outcome.exc_string, '', '', None, retry=False)
        plan.release_as = ''  # nor does it enqueue dependents
        job.set_local_status(JobStatus.FAILED)
    if outcome.kind == 'success':
        plan.release_as = ''
    working_time = (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0
    engine.finish_job(queue.connection, job.id, queue.name, '', plan, working_time, worker=None, claim_next=False)
    return job
