"""One run of a cron job: the job RQ's CronJob.enqueue would create, stored, pushed and recorded in the cron
job's history and the cron job registry by one call of lua/enqueue_cron_job.lua (which may refuse it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import dates, scripts
from .defaults import rq2_compat
from .enqueueing import EnqueueRecord
from .options import check_job, create_job_options
from .queue import Queue
from .status import JobStatus

if TYPE_CHECKING:
    from redis import Redis

    from .job import Job


def enqueue_cron_run(
    connection: Redis,
    queue_name: str,
    func: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    job_options: dict[str, Any],
    *,
    name: str,
    window: float | None,
    own: Sequence[str],
    history_limit: int,
    history_ttl: int,
) -> tuple[Job | None, float | None]:
    """(the job, None) once enqueued, or (None, the history score of the run another scheduler enqueued)
    when `window` (see lua/enqueue_cron_job.lua; None: enqueue whatever ran) finds one."""
    queue = Queue(queue_name, connection=connection)
    # RQ 2.12: queue.enqueue(func, *args, **kwargs, **job_options), where a kwarg named like an option is one
    if rq2_compat():
        given = Queue.parse_args(func, *args, **kwargs, **job_options)
    else:  # RQ 3.0 passes them apart: the function's kwargs may have the names of job options
        given = Queue.parse_args(func, args=args, kwargs=kwargs, **job_options)
    job = queue.create_job(given.func, args=given.args, kwargs=given.kwargs, **create_job_options(given._asdict()))
    check_job(job)
    if job.has_rate_limit and given.at_front:
        job.enqueue_at_front = True  # as Queue.enqueue: the promotion honours it
    record = EnqueueRecord.for_job(job, 'limit' if job.has_rate_limit else 'queue', at_front=given.at_front)
    moment = dates.now()
    status, refused_at = scripts.enqueue_cron_job(
        connection,
        queue.name,
        dates.utcformat(moment),
        dates.epoch_seconds(moment),
        record,
        name=name,
        window=window,
        description=job.description or '',
        own=own,
        score=moment.timestamp(),
        history_limit=history_limit,
        history_ttl=history_ttl,
    )
    if refused_at is not None:
        return None, refused_at
    job.set_local_status(JobStatus(status))
    job.enqueued_at = moment
    return job, None
