"""Running a job at enqueue time, for queues made with is_async=False (as RQ's run_sync)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from . import engine
from .dates import now
from .execution import run_job
from .job import Job
from .outcome import OutcomeKind
from .status import JobStatus

if TYPE_CHECKING:
    from .queue import Queue


class _NoDeathPenalty:
    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> Literal[False]:
        return False


# The job handle's status after a sync run, as RQ's run_sync leaves it (a returned Retry: still started).
_STATUS_AFTER = {OutcomeKind.SUCCESS: JobStatus.FINISHED, OutcomeKind.FAILURE: JobStatus.FAILED}


def run_sync(queue: Queue, job: Job) -> Job:
    """Perform the job here and record its outcome with the engine's finish script (no worker)."""
    job.worker_name = 'sync'
    job.set_local_status(JobStatus.STARTED)
    outcome = run_job(job, death_penalty_class=_NoDeathPenalty)  # type: ignore[arg-type]
    plan = engine.plan(job, outcome, now(), sync=True)
    if outcome.kind is OutcomeKind.FAILURE:
        job.ended_at = None  # the handle as stored: RQ's sync run sets ended_at only on success
    if outcome.kind in _STATUS_AFTER:
        job.set_local_status(_STATUS_AFTER[outcome.kind])
    working_time = (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0
    engine.finish_job(queue.connection, job.id, queue.name, '', plan, working_time, worker=None, claim_next=False)
    if job.webhooks:  # here and now, as RQ's run_sync (which counts a returned Retry as finished)
        if outcome.kind is OutcomeKind.FAILURE:
            job.send_webhooks(JobStatus.FAILED, exc_string=outcome.exc_string)
        else:
            job.send_webhooks(JobStatus.FINISHED)
    return job
