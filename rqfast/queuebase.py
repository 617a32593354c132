"""A queue by name: its keys, registries and jobs, and the admin calls (empty, delete, compact).

Queue (queue.py) adds enqueueing to this; `from rqfast.queue import Queue` is the public name.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from functools import total_ordering
from typing import TYPE_CHECKING, Any, TypeVar

from . import keys, registry, scripts, security, suspension
from .cluster import check_connection
from .defaults import DEFAULT_QUEUE_TIMEOUT, MAINTENANCE_LOCK_TTL, rq2_compat
from .events import events_cap
from .exceptions import DequeueTimeout, NoSuchJobError
from .imports import import_attribute
from .intermediate_queue import IntermediateQueue
from .job import Job
from .joboptions import PRIORITIES
from .serializers import resolve_serializer
from .text import as_text
from .timeouts import UnixSignalDeathPenalty, parse_timeout

if TYPE_CHECKING:
    import logging

    from redis import Redis


def _check_blocking_timeout(timeout: int) -> None:
    if timeout == 0:
        raise ValueError('RQ does not support indefinite timeouts. Please pick a timeout value > 0')


def _qualified(cls: Any) -> str:
    return f'{getattr(cls, "__module__", "?")}.{getattr(cls, "__qualname__", repr(cls))}'


def own_job_class(job_class: Any, log: logging.Logger | None = None) -> type[Job]:
    """The class a queue or a worker makes jobs with: `job_class` when it is rqfast's Job or a subclass,
    else rqfast's Job (rq's Job, of 2.12 or 3.0, as django-rq hands it by default, has none of the
    methods rqfast calls on a job).

    With `log` (a worker's), a foreign class other than rq's own Job is named in a warning: its
    overrides are not used (a subclass of rqfast.job.Job keeps them).
    """
    cls = import_attribute(job_class) if isinstance(job_class, str) else job_class
    if isinstance(cls, type) and issubclass(cls, Job):
        return cls
    if log is not None and _qualified(cls) != 'rq.job.Job':
        log.warning(
            'job class %s is not a subclass of rqfast.job.Job: jobs are loaded as rqfast.job.Job '
            '(subclass rqfast.job.Job to keep its overrides)',
            _qualified(cls),
        )
    return Job


def _job_class(job_class: Any) -> Any:
    return None if job_class is None else own_job_class(job_class)


_Q = TypeVar('_Q', bound='BaseQueue')


@total_ordering
class BaseQueue:
    """What a queue holds and the calls that read or remove it; Queue (rqfast.queue) adds enqueueing."""

    job_class: type[Job] = Job
    death_penalty_class: Any = UnixSignalDeathPenalty
    DEFAULT_TIMEOUT = DEFAULT_QUEUE_TIMEOUT
    redis_queue_namespace_prefix = keys.QUEUE_PREFIX
    redis_queues_keys = keys.QUEUES

    def __init__(
        self,
        name: str = 'default',
        connection: Redis | None = None,
        default_timeout: Any = None,
        is_async: bool = True,
        job_class: str | type[Job] | None = None,
        serializer: Any = None,
        death_penalty_class: Any = UnixSignalDeathPenalty,
        signing_key: str | bytes | None = None,
        events: bool | int = False,
        **kwargs: Any,
    ):
        if not connection:
            raise TypeError("Queue() missing 1 required positional argument: 'connection'")
        check_connection(connection)  # a Redis Cluster needs a hash-tagged RQ_KEY_PREFIX (rqfast.cluster)
        self.connection = connection
        self.name = name
        with keys.within(name):  # (sharded by queue: the queue's keyspace; rqfast.cluster.in_queue_keyspace)
            self._key = keys.queue_key(name)
        self._default_timeout = parse_timeout(default_timeout) or self.DEFAULT_TIMEOUT
        self._is_async = kwargs.get('async', is_async)
        if job_class is not None:  # rq's Job (django-rq's default JOB_CLASS) loads and enqueues as rqfast's
            self.job_class = own_job_class(job_class)
        self.death_penalty_class = death_penalty_class
        self.serializer = resolve_serializer(serializer)
        self.signing_key = security.signing_key(
            signing_key
        )  # jobs are signed (docs/security.md); else $RQFAST_SIGNING_KEY
        self._redis_server_version: tuple[int, ...] | None = None
        self.events = events_cap(events)  # rqfast's own: its jobs' lifecycle events (rqfast.events), or None

    @classmethod
    def all(
        cls: type[_Q], connection: Redis, job_class: Any = None, serializer: Any = None, death_penalty_class: Any = None
    ) -> list[_Q]:
        found = []
        for _ in suspension.keyspaces(connection):  # (sharded by queue: each queue's keyspace, found by SCAN)
            found += [
                cls.from_queue_key(as_text(m), connection=connection, job_class=job_class, serializer=serializer)
                for m in connection.smembers(keys.QUEUES)
                if m
            ]
        return found

    @classmethod
    def from_queue_key(
        cls: type[_Q],
        queue_key: str,
        connection: Redis,
        job_class: Any = None,
        serializer: Any = None,
        death_penalty_class: Any = None,
    ) -> _Q:
        return cls(
            keys.queue_name_from_key(queue_key), connection=connection, job_class=job_class, serializer=serializer
        )

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return True

    def __iter__(self) -> Iterator[BaseQueue]:
        yield self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BaseQueue):
            raise TypeError('Cannot compare queues to other objects')
        return self.name == other.name

    def __lt__(self, other: BaseQueue) -> bool:
        if not isinstance(other, BaseQueue):
            raise TypeError('Cannot compare queues to other objects')
        return self.name < other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self.name!r})'

    def __str__(self) -> str:
        return f'<{self.__class__.__name__} {self.name}>'

    # --- keys and registries

    @property
    def key(self) -> str:
        return self._key

    @property
    def intermediate_queue_key(self) -> str:
        return keys.intermediate_queue_key(self.name)

    @property
    def intermediate_queue(self) -> IntermediateQueue:
        """RQ's view of the list where a worker's blocking claim (or dequeue_any) parks an id."""
        return IntermediateQueue(self.key, connection=self.connection)

    @property
    def registry_cleaning_key(self) -> str:
        return keys.maintenance_lock_key(self.name)

    @property
    def is_async(self) -> bool:
        return bool(self._is_async)

    def _registry(self, registry_class: type[registry.BaseRegistry]) -> Any:
        return registry_class(queue=self, job_class=self.job_class, serializer=self.serializer)

    failed_job_registry = property(lambda self: self._registry(registry.FailedJobRegistry))
    started_job_registry = property(lambda self: self._registry(registry.StartedJobRegistry))
    finished_job_registry = property(lambda self: self._registry(registry.FinishedJobRegistry))
    deferred_job_registry = property(lambda self: self._registry(registry.DeferredJobRegistry))
    scheduled_job_registry = property(lambda self: self._registry(registry.ScheduledJobRegistry))
    canceled_job_registry = property(lambda self: self._registry(registry.CanceledJobRegistry))
    ready_job_registry = property(lambda self: self._registry(registry.ReadyJobRegistry))  # RQ 3.0's

    @property
    def scheduler_pid(self) -> int | None:
        name = self.connection.get(keys.scheduler_lock_key(self.name))
        if name is None:
            return None
        pid = self.connection.hget(keys.scheduler_key(as_text(name)), 'pid')
        return int(pid) if pid else None

    def acquire_maintenance_lock(self) -> bool:
        return bool(self.connection.set(self.registry_cleaning_key, 1, nx=True, ex=MAINTENANCE_LOCK_TTL))

    def release_maintenance_lock(self) -> None:
        self.connection.delete(self.registry_cleaning_key)

    # --- reading

    @property
    def count(self) -> int:
        return int(self.connection.llen(self.key))

    def is_empty(self) -> bool:
        return self.count == 0

    def get_job_ids(self, offset: int = 0, length: int = -1) -> list[str]:
        if length == 0 and not rq2_compat():  # RQ 3.0: none; RQ 2.12's LRANGE offset..-1 gave them all
            return []
        end = offset + (length - 1) if length >= 0 else length
        return [as_text(m) for m in self.connection.lrange(self.key, offset, end)]

    def get_jobs(self, offset: int = 0, length: int = -1) -> list[Job]:
        return [job for job in (self.fetch_job(i) for i in self.get_job_ids(offset, length)) if job]

    job_ids = property(get_job_ids)
    jobs = property(get_jobs)

    def fetch_job(self, job_id: str) -> Job | None:
        """The job if it exists and belongs here; a missing job's id is removed from the queue, as in RQ."""
        try:
            job = self.job_class.fetch(job_id, connection=self.connection, serializer=self.serializer)
        except Exception:
            if not self.job_class.exists(job_id, self.connection):
                self.remove(job_id)
            return None
        return job if job.origin == self.name else None

    def priority_counts(self) -> dict[int, int]:
        """rqfast's own: jobs per priority lane (rq:queue:<name>:priority), non-empty lanes only; {} without
        any (one EXISTS). An entry an RQ worker already ran counts until an rqfast claim drops it."""
        key = keys.priority_queue_key(self.name)
        if not self.connection.exists(key):
            return {}
        with self.connection.pipeline(transaction=False) as pipe:
            for lane in PRIORITIES:
                pipe.zcount(key, lane * keys.PRIORITY_LANE, (lane + 1) * keys.PRIORITY_LANE - 1)
            counts = pipe.execute()
        return {lane: int(count) for lane, count in zip(PRIORITIES, counts, strict=True) if count}

    def get_job_position(self, job_or_id: Job | str) -> int | None:
        job_id = job_or_id.id if isinstance(job_or_id, Job) else job_or_id
        position = self.connection.lpos(self.key, job_id)
        return None if position is None else int(position)  # type: ignore[arg-type]

    def get_redis_server_version(self) -> tuple[int, ...]:
        if self._redis_server_version is None:
            version = str(self.connection.info('server')['redis_version'])
            self._redis_server_version = tuple(int(part) for part in version.split('.')[:3])
        return self._redis_server_version

    # --- pausing: rqfast's own (the set rq:paused-queues); RQ's workers do not read it and keep taking jobs

    def pause(self) -> None:
        """rqfast workers start none of this queue's jobs from now on (started ones finish); enqueueing goes on."""
        suspension.pause_queue(self.connection, self.name)

    def resume(self) -> None:
        """Undo pause(): workers take this queue's jobs again (an idle worker's next claim, within IDLE_WAKEUP s)."""
        suspension.resume_queue(self.connection, self.name)

    @property
    def is_paused(self) -> bool:
        return suspension.is_queue_paused(self.connection, self.name)

    # --- RQ's dequeueing helpers, for tools that call them; workers claim jobs through the engine's scripts

    def push_job_id(self, job_id: str, pipeline: Any = None, at_front: bool = False) -> None:
        target = pipeline if pipeline is not None else self.connection
        (target.lpush if at_front else target.rpush)(self.key, job_id)

    def pop_job_id(self) -> str | None:
        job_id = self.connection.lpop(self.key)
        return as_text(job_id) if job_id else None

    @classmethod
    def lpop(cls, queue_keys: Sequence[str], timeout: int | None, connection: Redis | None = None) -> Any:
        """(queue key, job id) popped from the first non-empty queue; None when all are empty.

        With a timeout, BLPOP up to that many seconds (DequeueTimeout when none comes); 0 is refused.
        """
        if connection is None:
            raise TypeError('lpop() needs a connection')
        if timeout is not None:
            _check_blocking_timeout(timeout)
            result = connection.blpop(list(queue_keys), timeout)
            if result is None:
                raise DequeueTimeout(timeout, queue_keys)
            return result
        for queue_key in queue_keys:
            job_id = connection.lpop(queue_key)
            if job_id is not None:
                return queue_key, job_id
        return None

    @classmethod
    def lmove(cls, connection: Redis, queue_key: str, timeout: int | None) -> Any:
        """As lpop, for one queue, parking the id in the queue's intermediate list (LMOVE, BLMOVE) as RQ does."""
        intermediate = keys.intermediate_queue_key(keys.queue_name_from_key(queue_key))
        if timeout is not None:
            _check_blocking_timeout(timeout)
            job_id = connection.blmove(queue_key, intermediate, timeout)
            if job_id is None:
                raise DequeueTimeout(timeout, queue_key)
            return queue_key, job_id
        job_id = connection.lmove(queue_key, intermediate)
        return None if job_id is None else (queue_key, job_id)

    @classmethod
    def dequeue_any(
        cls: type[_Q],
        queues: Iterable[BaseQueue],
        timeout: int | None,
        connection: Redis,
        job_class: Any = None,
        serializer: Any = None,
        death_penalty_class: Any = None,
    ) -> tuple[Job, _Q] | None:
        """RQ's: the first job of `queues` (in their order) and its queue, or None when all are empty.

        From one queue the id is parked in its intermediate list (where a worker's claim takes it from,
        and maintenance puts it back from), from several it is popped, as in RQ. The job is not marked
        started. An id without a job is passed over and the next one taken. `timeout`: see lpop.
        """
        job_cls = _job_class(job_class) or cls.job_class
        queue_keys = [queue.key for queue in queues]
        while True:
            if len(queue_keys) == 1:
                result = cls.lmove(connection, queue_keys[0], timeout)
            else:
                result = cls.lpop(queue_keys, timeout, connection=connection)
            if result is None:
                return None
            queue_key, job_id = as_text(result[0]), as_text(result[1])
            queue = cls.from_queue_key(
                queue_key,
                connection=connection,
                job_class=job_cls,
                serializer=serializer,
                death_penalty_class=death_penalty_class,
            )
            try:
                job = job_cls.fetch(job_id, connection=connection, serializer=serializer)
            except NoSuchJobError:  # from one queue its id stays in the intermediate list, as in RQ
                continue
            except Exception as exc:
                exc.job_id = job_id  # type: ignore[attr-defined]  # RQ's error report reads these
                exc.queue = queue  # type: ignore[attr-defined]
                raise
            return job, queue

    # --- removing

    def remove(self, job_or_id: Job | str, pipeline: Any = None) -> int:
        job_id = job_or_id.id if isinstance(job_or_id, Job) else job_or_id
        if pipeline is not None:  # (a prioritized job's lane entry is dropped by the next claim that meets it)
            return pipeline.lrem(self.key, 1, job_id)  # type: ignore[no-any-return]  # the pipeline itself
        with self.connection.pipeline() as pipe:  # one round trip: out of the list and its priority lane
            pipe.lrem(self.key, 1, job_id)
            pipe.zrem(keys.priority_queue_key(self.name), job_id)
            return int(pipe.execute()[0])

    def empty(self) -> int:
        """Remove every job in the queue and delete their hashes; the number removed."""
        return scripts.empty_queue(self.connection, self.name)

    def delete(self, delete_jobs: bool = True) -> None:
        if delete_jobs:
            self.empty()
        with self.connection.pipeline() as pipe:
            pipe.srem(keys.QUEUES, self.key)
            pipe.srem(keys.PAUSED_QUEUES, self.name)
            pipe.delete(self.key, keys.priority_queue_key(self.name))
            pipe.execute()

    def compact(self) -> None:
        """Drop ids whose job is gone, keeping the order (RQ's approach: rename, then re-push)."""
        temporary = keys.compact_queue_key(str(uuid.uuid4()))
        if not self.connection.exists(self.key):
            return
        self.connection.rename(self.key, temporary)
        while (job_id := self.connection.lpop(temporary)) is not None:
            if self.job_class.exists(as_text(job_id), self.connection):
                self.connection.rpush(self.key, job_id)  # type: ignore[arg-type]
