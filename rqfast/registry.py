"""The per-queue job registries: sorted sets scored by expiry (or time, for deferred/scheduled/canceled)."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from . import keys, scripts
from .callbacks import execute_failure_callback
from .cluster import queue_keyspace_key
from .dates import epoch_seconds, from_epoch, now
from .defaults import DEFAULT_FAILURE_TTL, REGISTRY_QUEUE_CLASS, SCHEDULER_CHUNK, rq2_compat
from .exceptions import InvalidJobOperation, NoSuchJobError
from .imports import class_at
from .job import Job, parse_job_id
from .maintenance import fail_abandoned_jobs, recover_ready
from .rq_interop import job_id_of
from .serializers import resolve_serializer
from .status import JobStatus
from .text import as_text
from .timeouts import UnixSignalDeathPenalty

if TYPE_CHECKING:
    from redis import Redis

    from .queue import Queue


class BaseRegistry:
    key_template = keys.format_template(keys.registry_key)
    job_class: type[Job] = Job
    death_penalty_class: Any = UnixSignalDeathPenalty
    queue_class: type[Queue] | None = None  # what get_queue() makes (None: rqfast's Queue)

    def __init__(
        self,
        name: str = 'default',
        connection: Redis | None = None,
        job_class: type[Job] | None = None,
        queue: Queue | None = None,
        serializer: Any = None,
        death_penalty_class: Any = None,
        queue_class: type[Queue] | None = None,
    ):
        if queue is not None:
            self.name, self.connection, self.serializer = queue.name, queue.connection, queue.serializer
        else:  # no connection is RQ's too: a registry made only to be configured (job_class...)
            self.name, self.serializer = name, resolve_serializer(serializer)
            self.connection = cast('Redis', connection)
        self.key = queue_keyspace_key(self.name, self.key_template.format(self.name))
        self.job_class = job_class or Job
        self.queue_class = queue_class or self.queue_class
        if death_penalty_class is not None:
            self.death_penalty_class = death_penalty_class

    def __len__(self) -> int:
        return self.count

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BaseRegistry) and (self.key, self.connection) == (other.key, other.connection)

    def __contains__(self, item: Any) -> bool:
        job_id = job_id_of(item)  # (rq's Job too)
        return self.connection.zscore(self.key, cast(str, job_id)) is not None

    @property
    def count(self) -> int:
        return self.get_job_count(cleanup=True)

    def get_job_count(self, cleanup: bool = True) -> int:
        if cleanup:
            self.cleanup()
        return int(self.connection.zcard(self.key))

    def add(self, job: Job | str, ttl: int = 0, pipeline: Any = None, xx: bool = False) -> int:
        """Add with score now + ttl (+inf for -1), as RQ's registries do."""
        job_id = job_id_of(job)
        score: float | str = ttl if ttl < 0 else epoch_seconds(now()) + ttl
        if score == -1:
            score = '+inf'
        target = pipeline if pipeline is not None else self.connection
        return cast(int, target.zadd(self.key, {job_id: score}, xx=xx))

    def remove(self, job: Job | str, pipeline: Any = None, delete_job: bool = False) -> int:
        job_id = job_id_of(job)
        target = pipeline if pipeline is not None else self.connection
        removed = target.zrem(self.key, job_id)
        if delete_job:
            instance = (
                job
                if isinstance(job, Job)
                else self.job_class.fetch(job_id, connection=self.connection, serializer=self.serializer)
            )
            instance.delete(pipeline=pipeline)
        return cast(int, removed)

    def get_expired_job_ids(self, timestamp: float | None = None) -> list[str]:
        score = timestamp if timestamp is not None else epoch_seconds(now())
        return [self.parse_job_id(member) for member in self.connection.zrangebyscore(self.key, 0, score)]

    def get_job_ids(self, start: int = 0, end: int = -1, desc: bool = False, cleanup: bool = True) -> list[str]:
        if cleanup:
            self.cleanup()
        return [self.parse_job_id(member) for member in self.connection.zrange(self.key, start, end, desc=desc)]

    def get_queue(self) -> Queue:
        # rqfast.queue sits a layer above (its queues make registries): looked up when first asked for
        queue_class = self.queue_class or class_at(REGISTRY_QUEUE_CLASS)
        return queue_class(self.name, connection=self.connection, serializer=self.serializer)

    def get_expiration_time(self, job: Job) -> datetime:
        score = self.connection.zscore(self.key, job.id)
        return from_epoch(cast(float, score))

    def requeue(self, job_or_id: Job | str, at_front: bool = False) -> Job:
        """Back onto its queue, in one script call; InvalidJobOperation when it is not in this registry."""
        if isinstance(job_or_id, Job):
            job = job_or_id
        else:
            job = self.job_class.fetch(job_id_of(job_or_id), connection=self.connection, serializer=self.serializer)
        if self.key != keys.failed_registry_key(job.origin):
            raise InvalidJobOperation(f'Job {job.id} can only be requeued from its failed registry')
        return job.requeue(at_front=at_front)

    @staticmethod
    def parse_job_id(entry: Any) -> str:
        return as_text(entry)

    def cleanup(self, timestamp: float | None = None, exception_handlers: list[Any] | None = None) -> None:
        """Nothing to expire in the base registry."""


class _ExpiringRegistry(BaseRegistry):
    """Entries scored by their expiry; cleanup drops the expired ones."""

    def cleanup(self, timestamp: float | None = None, exception_handlers: list[Any] | None = None) -> None:
        self.connection.zremrangebyscore(self.key, 0, timestamp if timestamp is not None else epoch_seconds(now()))


class FinishedJobRegistry(_ExpiringRegistry):
    key_template = keys.format_template(keys.finished_registry_key)


class FailedJobRegistry(_ExpiringRegistry):
    key_template = keys.format_template(keys.failed_registry_key)

    def add(  # type: ignore[override]  # RQ's signature: exc_string before pipeline, no xx
        self, job: Job, ttl: int | None = None, exc_string: str = '', pipeline: Any = None
    ) -> None:
        """RQ's: save the job with `exc_string` as its exc_info, expire it after ttl (default: the failure
        TTL) and add it scored now + ttl, in one script call."""
        ttl = DEFAULT_FAILURE_TTL if ttl is None else ttl
        score = ttl if ttl < 0 else epoch_seconds(now()) + ttl
        job.set_local_exc_info(exc_string)
        fields = job.to_dict(include_meta=False, include_result=False)
        scripts.add_failed_job(self.connection, job.id, self.name, score, ttl, fields, pipeline)


class DeferredJobRegistry(BaseRegistry):
    key_template = keys.format_template(keys.deferred_registry_key)

    def add(self, job: Job | str, ttl: int | None = None, pipeline: Any = None, xx: bool = False) -> int:
        job_id = job_id_of(job)
        target = pipeline if pipeline is not None else self.connection
        return cast(int, target.zadd(self.key, {job_id: epoch_seconds(now())}, xx=xx))


class ReadyJobRegistry(BaseRegistry):
    """RQ 3.0's `rq:ready:<queue>`: dependents whose dependencies are met, not yet pushed; score = when.

    An RQ 3.0 process releases a dependent here, then pushes it in a second step; rqfast releases
    dependents onto their queue in the parent's finish script, and writes here only when asked
    (Queue.move_dependents_to_ready, register_jobs). An entry left by a process that died between the
    two steps is enqueued by cleanup(), which rqfast's maintenance pass also does, as RQ 3.0's does.
    """

    key_template = keys.format_template(keys.ready_registry_key)

    def cleanup(  # type: ignore[override]  # RQ 3.0's: returns the jobs it enqueued
        self, timestamp: float | None = None, exception_handlers: list[Any] | None = None
    ) -> list[Job]:
        """Enqueue every job left here still `ready_to_enqueue` (one script call); drop the other entries."""
        job_ids = recover_ready(self.connection, self.name)
        jobs = self.job_class.fetch_many(job_ids, connection=self.connection, serializer=self.serializer)
        return [job for job in jobs if job is not None]

    def add(self, job: Job | str, ttl: int | None = None, pipeline: Any = None, xx: bool = False) -> int:
        """Scored by the time it is added, as RQ 3.0's (`ttl` is ignored there too)."""
        job_id = job_id_of(job)
        target = pipeline if pipeline is not None else self.connection
        return cast(int, target.zadd(self.key, {job_id: epoch_seconds(now())}, xx=xx))

    def register_jobs(self, jobs: Sequence[Job], pipeline: Any) -> None:
        """RQ 3.0's: the jobs (all of this queue) out of its deferred registry and in here, status
        ready_to_enqueue: one script call queued into the caller's `pipeline`."""
        if jobs:
            scripts.register_ready_jobs(self.connection, self.name, [job.id for job in jobs], pipeline)
        for job in jobs:
            job.set_local_status(JobStatus.READY_TO_ENQUEUE)

    def enqueue_jobs(self, job_ids: list[str]) -> list[Job]:
        """RQ 3.0's: push the named jobs still here and still ready_to_enqueue (stale entries are dropped;
        an id another caller took is left alone), in one script call; the jobs pushed."""
        if not job_ids:
            return []
        enqueued = scripts.enqueue_ready_jobs(self.connection, self.name, job_ids)
        jobs = self.job_class.fetch_many(enqueued, connection=self.connection, serializer=self.serializer)
        return [job for job in jobs if job is not None]


class ScheduledJobRegistry(BaseRegistry):
    key_template = keys.format_template(keys.scheduled_registry_key)

    def schedule(self, job: Job, scheduled_datetime: datetime, pipeline: Any = None) -> int:
        target = pipeline if pipeline is not None else self.connection
        return cast(int, target.zadd(self.key, {job.id: epoch_seconds(scheduled_datetime)}))

    def remove_jobs(self, timestamp: int | None = None, pipeline: Any = None) -> int:
        """RQ's deprecated call: drop the entries due by `timestamp` (default: now)."""
        warnings.warn(
            'ScheduledJobRegistry.remove_jobs() is deprecated and will be removed in the future.',
            DeprecationWarning,
            stacklevel=2,
        )
        score = timestamp if timestamp is not None else epoch_seconds(now())
        target = pipeline if pipeline is not None else self.connection
        return cast(int, target.zremrangebyscore(self.key, 0, score))

    def get_jobs_to_schedule(self, timestamp: int | None = None, chunk_size: int = SCHEDULER_CHUNK) -> list[str]:
        score = timestamp if timestamp is not None else epoch_seconds(now())
        return [as_text(m) for m in self.connection.zrangebyscore(self.key, 0, score, start=0, num=chunk_size)]

    def get_jobs_to_enqueue(self, timestamp: float | None = None) -> list[str]:
        return self.get_expired_job_ids(timestamp)

    def get_scheduled_time(self, job_or_id: Job | str) -> datetime:
        job_id = job_id_of(job_or_id)
        score = self.connection.zscore(self.key, job_id)
        if not score:
            raise NoSuchJobError
        return from_epoch(score)


class CanceledJobRegistry(BaseRegistry):
    key_template = keys.format_template(keys.canceled_registry_key)

    def get_expired_job_ids(self, timestamp: float | None = None) -> list[str]:
        raise NotImplementedError('canceled jobs do not expire')

    def add(self, job: Job | str, ttl: int = 0, pipeline: Any = None, xx: bool = False) -> int:
        job_id = job_id_of(job)
        target = pipeline if pipeline is not None else self.connection
        return cast(int, target.zadd(self.key, {job_id: epoch_seconds(now())}, xx=xx))

    def requeue(self, job_or_id: Job | str, at_front: bool = False) -> Job:
        raise InvalidJobOperation('Canceled jobs cannot be requeued')


class StartedJobRegistry(BaseRegistry):
    """Jobs being executed; members are `<job id>:<execution id>`, scored by heartbeat expiry."""

    key_template = keys.format_template(keys.started_registry_key)

    @staticmethod
    def parse_job_id(entry: Any) -> str:
        return parse_job_id(as_text(entry))

    def __contains__(self, item: Any) -> bool:
        job_id = job_id_of(item)
        return job_id in self.get_job_ids(cleanup=False)

    def get_job_and_execution_ids(
        self, start: int = 0, end: int = -1, desc: bool = False, cleanup: bool = True
    ) -> list[tuple[str, str]]:
        if cleanup:
            self.cleanup()
        pairs = []
        for member in self.connection.zrange(self.key, start, end, desc=desc):
            job_id, _, execution_id = as_text(member).partition(':')
            pairs.append((job_id, execution_id))
        return pairs

    def add(self, job: Job | str, ttl: int = 0, pipeline: Any = None, xx: bool = False) -> int:
        raise NotImplementedError('the worker adds executions to the started registry')

    def add_execution(self, execution: Any, pipeline: Any, ttl: int = 0, xx: bool = False) -> int:
        """RQ's: the execution's `<job id>:<execution id>` scored now + ttl (+inf for -1), on `pipeline`."""
        score: float | str = ttl if ttl < 0 else epoch_seconds(now()) + ttl
        if score == -1:
            score = '+inf'
        return cast(int, pipeline.zadd(self.key, {execution.composite_key: score}, xx=xx))

    def remove_execution(
        self, execution: Any, job: Job | None = None, pipeline: Any = None, delete_job: bool = False
    ) -> None:
        (pipeline if pipeline is not None else self.connection).zrem(self.key, execution.composite_key)

    def remove_executions(self, job: Job, pipeline: Any = None) -> None:
        """Every live execution of `job` (job.get_executions()) out of this registry, as RQ's."""
        members = [execution.composite_key for execution in job.get_executions()]
        if members:
            (pipeline if pipeline is not None else self.connection).zrem(self.key, *members)

    def remove(self, job: Job | str, pipeline: Any = None, delete_job: bool = False) -> int:
        raise NotImplementedError('the worker removes executions from the started registry')

    def cleanup(self, timestamp: float | None = None, exception_handlers: list[Any] | None = None) -> None:
        """Fail (or retry) the jobs whose worker stopped heartbeating, as RQ's cleanup does; then each one's
        failure callback (RQ 3.0: through this module's execute_failure_callback), the exception handlers,
        and (RQ 3.0) the `failed` webhooks of those that ended failed."""
        fail_abandoned_jobs(
            self.connection,
            self.name,
            timestamp=timestamp,
            serializer=self.serializer,
            exception_handlers=exception_handlers,
            failure_callback=None if rq2_compat() else _run_failure_callback,
            death_penalty_class=self.death_penalty_class,
        )


def _run_failure_callback(job: Job, death_penalty_class: Any, *exc_info: Any) -> None:
    """This module's execute_failure_callback, looked up when called, as RQ 3.0's cleanup calls it."""
    execute_failure_callback(job, death_penalty_class, *exc_info)


def clean_registries(queue: Queue, exception_handlers: list[Any] | None = None) -> None:
    """Clean every registry of a queue."""
    for registry in (queue.finished_job_registry, queue.started_job_registry, queue.failed_job_registry):
        registry.cleanup(exception_handlers=exception_handlers)
    queue.ready_job_registry.cleanup()  # RQ 3.0's addition
