"""Storing jobs: the records lua/enqueue_jobs.lua takes, and the one call that stores them.

Queue's enqueue paths and Job.requeue both store through here, so a job can go back onto its
queue without the job module knowing the Queue class.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import scripts
from .dates import epoch_seconds, now, utcformat
from .exceptions import DuplicateJobError, InvalidJobOperation
from .scripts import enqueue_record
from .status import JobStatus

if TYPE_CHECKING:
    from redis import Redis

    from .jobspec import JobSpec

__all__ = ['enqueue_record', 'store_jobs']  # enqueue_record: the record layout is the script wrapper's


def store_jobs(connection: Redis, queue: str, jobs: Sequence[JobSpec], records: list[list[Any]]) -> None:
    """One enqueue_jobs.lua call for `records` (one per job); each job's status and enqueued_at follow."""
    moment = now()
    statuses = scripts.enqueue_jobs(connection, queue, utcformat(moment), epoch_seconds(moment), records)
    for job, status in zip(jobs, statuses, strict=True):
        if status == 'duplicate':
            raise DuplicateJobError(f'Job with ID {job.id} already exists')
        if status == 'not_failed':
            raise InvalidJobOperation(f'Job {job.id} is not in the failed registry')
        job.set_local_status(JobStatus.QUEUED if status == 'stored' else JobStatus(status))
        if status in ('queued', 'stored'):
            job.enqueued_at = moment
