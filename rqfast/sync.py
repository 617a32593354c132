"""Running a job at enqueue time, for queues made with is_async=False (as RQ's run_sync).

`perform_sync` runs the job here and records its outcome with the engine's finish script (no
worker); the queue then runs the job's callback (Queue.run_sync, through rqfast.callbacks, as RQ
3.0's run_sync) and `send_sync_webhooks` sends its webhooks, as RQ's run_sync does after recording.
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any, Protocol

from . import engine
from .dates import now
from .defaults import rq2_compat
from .job import Job, Retry
from .job_lifecycle import format_exc_info
from .outcome import Outcome, OutcomeKind
from .status import JobStatus
from .timeouts import NoDeathPenalty

if TYPE_CHECKING:
    from redis import Redis

# The job handle's status after a sync run, as RQ's run_sync leaves it (a returned Retry: still started).
_STATUS_AFTER = {OutcomeKind.SUCCESS: JobStatus.FINISHED, OutcomeKind.FAILURE: JobStatus.FAILED}


class _SyncQueue(Protocol):
    """What a sync run reads of its queue (rqfast.queue.Queue has it)."""

    @property
    def name(self) -> str: ...

    @property
    def connection(self) -> Redis: ...

    @property
    def death_penalty_class(self) -> Any: ...


def perform_sync(queue: _SyncQueue, job: Job) -> Outcome:
    """Perform the job here (no time limit, as RQ's) and record its outcome; its callbacks are not run."""
    job.worker_name = 'sync'
    job.set_local_status(JobStatus.STARTED)
    job.started_at = now()
    job.persist_on_perform = False
    try:
        value = job.perform()
        job.ended_at = job.last_heartbeat = now()
        outcome = Outcome(OutcomeKind.RETRY if isinstance(value, Retry) else OutcomeKind.SUCCESS, value)
    except Exception:
        exc_info = sys.exc_info()
        job.ended_at = job.last_heartbeat = now()
        outcome = Outcome(OutcomeKind.FAILURE, exc_string=format_exc_info(exc_info), exc_info=exc_info)
    plan = engine.plan(job, outcome, now(), sync=True)
    if outcome.kind is OutcomeKind.FAILURE:
        job.ended_at = None  # the handle as stored: RQ's sync run sets ended_at only on success
    if outcome.kind in _STATUS_AFTER:
        job.set_local_status(_STATUS_AFTER[outcome.kind])
    working_time = (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0
    engine.finish_job(queue.connection, job.id, queue.name, '', plan, working_time, worker=None, claim_next=False)
    return outcome


def sync_death_penalty(queue: _SyncQueue) -> Any:
    """The time limit of a sync run's callbacks: the queue's penalty (RQ 3.0); none under RQ 2.12 compat
    (2.12 called them directly) or off the main thread (SIGALRM cannot be set there)."""
    if rq2_compat() or threading.current_thread() is not threading.main_thread():
        return NoDeathPenalty
    return queue.death_penalty_class


def send_sync_webhooks(job: Job, outcome: Outcome) -> None:
    """Here and now, as RQ's run_sync (which counts a returned Retry as finished)."""
    if not job.webhooks:
        return
    if outcome.kind is OutcomeKind.FAILURE:
        job.send_webhooks(JobStatus.FAILED, exc_string=outcome.exc_string)
    else:
        job.send_webhooks(JobStatus.FINISHED)
