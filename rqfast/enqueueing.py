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
from .jobhash import job_fields
from .status import JobStatus

if TYPE_CHECKING:
    from redis import Redis

    from .jobspec import JobSpec


def enqueue_record(
    job: JobSpec,
    mode: str,
    at_front: bool = False,
    unique: bool = False,
    score: int | str = '',
    allow_failure: bool = False,
) -> list[Any]:
    """One job's record for enqueue_jobs.lua (whose header explains `mode`); the script sets status
    and enqueued_at itself."""
    fields = job_fields(job)
    fields.pop('status', None)
    fields.pop('enqueued_at', None)
    dependency_ids = job.depends_on_ids
    record: list[Any] = [
        job.id,
        mode,
        int(bool(at_front)),
        int(unique),
        job.ttl or '',
        score,
        int(allow_failure),
        len(dependency_ids),
        *dependency_ids,
        len(fields),
    ]
    for name, value in fields.items():
        record.extend((name, value))
    return record


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
