"""Releasing the dependents of a job that ended (or was canceled), by hand: the object a Queue holds.

rqfast's worker releases dependents in the script call that finishes their parent; `DependentsRelease`
does the same for the public calls RQ offers, which Queue's methods of the same names hand to it:
Queue.enqueue_dependents (onto their queues, one script call), and RQ 3.0's two steps,
Queue.move_dependents_to_ready (into the ready registries, one script call) and
Queue.enqueue_ready_jobs_by_queue (from there onto the queues, one script call per queue).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import scripts
from .as_rq import logger_name
from .dates import now, utcformat
from .dependencies import releasable_dependents
from .exceptions import InvalidJobOperation
from .job import Job

if TYPE_CHECKING:
    from redis import Redis

logger = logging.getLogger(logger_name('queue'))


class DependentsRelease:
    """A queue's release of dependents: its connection, and how to reach another queue of its class
    (`queue_named`: a name -> that queue, with the same job class and serializer)."""

    def __init__(self, connection: Redis, queue_named: Callable[[str], Any]) -> None:
        self.connection = connection
        self.queue_named = queue_named

    def enqueue_dependents(
        self, job: Job, pipeline: Any = None, exclude_job_id: str | None = None, refresh_job_status: bool = True
    ) -> dict[str, list[str]]:
        """Enqueue the deferred dependents of `job` whose dependencies are now met, each onto its own
        queue, as RQ does when a job finishes (one script call); RQ 3.0's map of queue name to the ids
        released ({} when queued into `pipeline`, RQ 2.12's pipeline= that RQ 3.0 dropped).

        `job`'s status (read again with refresh_job_status) decides as in Job.dependencies_are_met;
        `exclude_job_id` is a dependency to leave out of the checks.
        """
        status = self._parent_status(job, refresh_job_status)
        if status is None:
            return {}
        moment = utcformat(now())
        released = scripts.enqueue_dependents(self.connection, job.id, status, moment, exclude_job_id or '', pipeline)
        return released or {}

    def move_dependents_to_ready(
        self, job: Job, pipeline: Any = None, exclude_job_id: str | None = None, refresh_job_status: bool = True
    ) -> dict[str, list[str]]:
        """RQ 3.0's first step: the deferred dependents of `job` whose dependencies are met move into
        their queues' ready registries, status ready_to_enqueue (one script call); the map of queue name
        to the ids moved, for enqueue_ready_jobs_by_queue. A `pipeline` must be watched, as in RQ 3.0:
        the call is queued into it and the map is read now."""
        expected: dict[str, list[str]] = {}
        if pipeline is not None:
            expected = releasable_dependents(job, pipeline, job, exclude_job_id, refresh_job_status)
        status = self._parent_status(job, refresh_job_status)
        if status is None:
            return {}
        moved = scripts.move_dependents_to_ready(self.connection, job.id, status, exclude_job_id or '', pipeline)
        return expected if moved is None else moved

    def enqueue_ready_jobs_by_queue(self, job_ids_by_queue_name: dict[str, list[str]]) -> None:
        """RQ 3.0's second step: each queue's ready jobs named in the map are pushed (one script call per
        queue); a queue that fails is logged and left to the ready registry's cleanup, as in RQ 3.0."""
        for queue_name, job_ids in job_ids_by_queue_name.items():
            try:
                self.queue_named(queue_name).ready_job_registry.enqueue_jobs(job_ids)
            except Exception:
                logger.exception('Failed to enqueue ready dependents of queue %s; left to its cleanup', queue_name)

    def _parent_status(self, job: Job, refresh: bool) -> str | None:
        """The parent's status as the release judges it; None when it has no hash and no dependents."""
        try:
            return job.get_status(refresh=refresh).value
        except InvalidJobOperation:
            if not self.connection.exists(job.dependents_key):
                return None  # RQ reads the status only for a dependent: no dependents, no error
            raise
