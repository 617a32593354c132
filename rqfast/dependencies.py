"""RQ's Job.dependencies_are_met: whether a deferred job's dependencies, as Redis holds them, let it run.

Job.dependencies_are_met calls it (this module imports rqfast.job for its annotations only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .status import JobStatus
from .text import as_text

if TYPE_CHECKING:
    from .job import Job

__all__ = ['dependencies_are_met', 'releasable_dependents']


def dependencies_are_met(
    job: Job,
    parent_job: Job | None = None,
    pipeline: Any = None,
    exclude_job_id: str | None = None,
    refresh_job_status: bool = True,
) -> bool:
    """Job.dependencies_are_met(parent_job, pipeline, exclude_job_id, refresh_job_status) of `job`."""
    reader: Any = job.connection
    if pipeline is not None:
        if job.depends_on_ids:
            pipeline.watch(*[job.key_for(job_id) for job_id in job.depends_on_ids])
        reader = pipeline
    dependency_ids = {as_text(m) for m in reader.smembers(job.dependencies_key)}
    if exclude_job_id:
        dependency_ids.discard(exclude_job_id)
        if parent_job is not None and parent_job.id == exclude_job_id:
            parent_job = None
    if parent_job is not None:
        dependency_ids.discard(parent_job.id)
        parent_status = parent_job.get_status(refresh=refresh_job_status)
        if parent_status in (JobStatus.CANCELED, JobStatus.STOPPED):
            return False
        if parent_status == JobStatus.FAILED and not job.allow_dependency_failures:
            return False
    allowed = {JobStatus.FINISHED.value}
    if job.allow_dependency_failures:
        allowed.add(JobStatus.FAILED.value)
    ordered = sorted(dependency_ids)
    with job.connection.pipeline(transaction=False) as pipe:
        for job_id in ordered:
            pipe.hget(job.key_for(job_id), 'status')
        statuses = pipe.execute() if ordered else []
    return all(as_text(status) in allowed for status in statuses if status)


def releasable_dependents(
    job: Job,
    pipeline: Any,
    parent_job: Job | None = None,
    exclude_job_id: str | None = None,
    refresh_job_status: bool = True,
) -> dict[str, list[str]]:
    """The dependents of `job` a release queued into the caller's `pipeline` will let go, by queue, read
    now with each key watched (RQ 3.0 reads them so, and wants the pipeline watched: ValueError if not)."""
    if not pipeline.watching:
        raise ValueError('releasing dependents requires a watched pipeline when pipeline is provided')
    watching = None if pipeline.explicit_transaction else pipeline  # after MULTI: no more WATCH, reads go direct
    if watching is not None:
        watching.watch(job.dependents_key)
    reader = watching if watching is not None else job.connection
    dependent_ids = sorted(as_text(m) for m in reader.smembers(job.dependents_key))
    released: dict[str, list[str]] = {}
    for dependent in type(job).fetch_many(dependent_ids, connection=job.connection, serializer=job.serializer):
        if dependent is None or dependent.get_status(refresh=False) == JobStatus.CANCELED:
            continue
        if dependencies_are_met(dependent, parent_job, watching, exclude_job_id, refresh_job_status):
            released.setdefault(dependent.origin, []).append(dependent.id)
    return released
