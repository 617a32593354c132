"""Queue: a queue by name, RQ's API. Every enqueue is one call of lua/enqueue_jobs.lua (see enqueueing.py).

One class, by what it does: what a queue holds and reads, the admin calls (empty, delete, compact),
RQ's dequeue helpers, making a job from an enqueue call's arguments (create_job, parse_args: the options
are rqfast.options' table) and every way to enqueue one. The release of dependents by hand is an object
the queue holds (dependents.DependentsRelease), which RQ's methods of the same names hand their calls to.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from datetime import datetime, timedelta
from functools import total_ordering
from typing import TYPE_CHECKING, Any, TypeVar

from . import keys, registry, scripts, security, suspension
from .callbacks import execute_failure_callback, execute_success_callback
from .cluster import check_connection, in_queue_keyspace
from .dates import epoch_seconds, now
from .debounce import Debounce, Held, Throttle, keyed_option
from .defaults import DEFAULT_QUEUE_TIMEOUT, MAINTENANCE_LOCK_TTL, RQ_KEY_PREFIX, rq2_compat
from .dependents import DependentsRelease
from .enqueueing import (
    Batch,
    EnqueueArgs,
    EnqueueData,
    EnqueueRecord,
    _pipeline_for,
    _rate_limited_mode,
    _reject_duplicate_ids,
    enqueue_args,
    store_jobs,
)
from .events import events_cap
from .exceptions import DequeueTimeout, NoSuchJobError
from .imports import import_attribute
from .intermediate_queue import IntermediateQueue
from .job import Job, JobStatus, Retry
from .joboptions import PRIORITIES
from .options import (
    apply_options,
    check_job,
    check_values,
    create_job_options,
    pop_enqueue_options,
)
from .outcome import OutcomeKind
from .rate_limit import RateLimit
from .repeat import Repeat
from .rq_interop import is_rq_job
from .scriptrecords import EnqueueMode
from .security import SIGNATURE_FIELD, sign_fields
from .serializers import resolve_serializer
from .sync import perform_sync, send_sync_webhooks, sync_death_penalty
from .text import as_text
from .timeouts import UnixSignalDeathPenalty, parse_timeout

if TYPE_CHECKING:
    import logging

    from redis import Redis
    from redis.client import Pipeline

__all__ = ['EnqueueArgs', 'EnqueueData', 'Queue', 'own_job_class']

# True while enqueue_job runs _enqueue_job: the dependency check goes into that script call (see enqueue_job).
_CHECKING_DEPENDENCIES: ContextVar[bool] = ContextVar('rqfast_checking_dependencies', default=False)


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


_Q = TypeVar('_Q', bound='Queue')


@in_queue_keyspace('name')
@total_ordering
class Queue:
    """RQ's Queue: what a queue holds, its reads and admin calls, and every way to enqueue a job."""

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
        self.dependents_release = DependentsRelease(connection, self._sibling)  # enqueue_dependents & co.

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

    def __iter__(self) -> Iterator[Queue]:
        yield self

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Queue):
            raise TypeError('Cannot compare queues to other objects')
        return self.name == other.name

    def __lt__(self, other: Queue) -> bool:
        if not isinstance(other, Queue):
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
        """Under this module's RQ_KEY_PREFIX, read at each call as RQ 3.0's Queue does."""
        return keys.maintenance_lock_key(self.name, RQ_KEY_PREFIX)

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
        queues: Iterable[Queue],
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

    # --- releasing dependents by hand (the worker releases them as it finishes their parent): DependentsRelease

    def enqueue_dependents(
        self, job: Job, pipeline: Any = None, exclude_job_id: str | None = None, refresh_job_status: bool = True
    ) -> dict[str, list[str]]:
        return self.dependents_release.enqueue_dependents(job, pipeline, exclude_job_id, refresh_job_status)

    def move_dependents_to_ready(
        self, job: Job, pipeline: Any = None, exclude_job_id: str | None = None, refresh_job_status: bool = True
    ) -> dict[str, list[str]]:
        return self.dependents_release.move_dependents_to_ready(job, pipeline, exclude_job_id, refresh_job_status)

    def enqueue_ready_jobs_by_queue(self, job_ids_by_queue_name: dict[str, list[str]]) -> None:
        self.dependents_release.enqueue_ready_jobs_by_queue(job_ids_by_queue_name)

    def _sibling(self, name: str) -> Queue:
        """The queue `name` of this class, with this queue's connection, job class and serializer."""
        return self.__class__(name, connection=self.connection, job_class=self.job_class, serializer=self.serializer)

    # --- enqueueing (a job's options: rqfast.options' table)

    def create_job(
        self,
        func: Any,
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        timeout: Any = None,
        result_ttl: Any = None,
        ttl: Any = None,
        failure_ttl: Any = None,
        description: str | None = None,
        depends_on: Any = None,
        job_id: str | None = None,
        meta: dict[str, Any] | None = None,
        status: JobStatus = JobStatus.QUEUED,
        retry: Retry | None = None,
        repeat: Repeat | None = None,
        *,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        webhooks: Sequence[Any] | None = None,
        group_id: str | None = None,
        rate_limit: RateLimit | None = None,
        capture_output: bool = False,
        priority: int | None = None,
    ) -> Job:
        """RQ's: a job from an enqueue call's arguments, before anything touches Redis. The options Job.create
        does not take (rqfast.options' `apply`) are set as given; they are checked when the job is stored."""
        given = locals()
        timeout = parse_timeout(timeout)
        if timeout is None:
            timeout = self._default_timeout
        elif timeout == 0:
            raise ValueError('0 timeout is not allowed. Use -1 for infinite timeout')
        ttl = parse_timeout(ttl)
        if ttl is not None and ttl <= 0:
            raise ValueError('Job ttl must be greater than 0')
        job = self.job_class.create(
            func,
            args=args,
            kwargs=kwargs,
            connection=self.connection,
            result_ttl=result_ttl,
            ttl=ttl,
            failure_ttl=failure_ttl,
            status=status,
            description=description,
            depends_on=depends_on,
            timeout=timeout,
            id=job_id,
            origin=self.name,
            meta=meta,
            serializer=self.serializer,
            on_success=on_success,
            on_failure=on_failure,
            on_stopped=on_stopped,
            webhooks=webhooks,
            group_id=group_id,
        )
        apply_options(job, given)
        job.events = self.events or job.events  # rqfast's own: Queue(events=...) (rqfast.events)
        return job

    @classmethod
    def parse_args(cls, f: Any, *args: Any, **kwargs: Any) -> EnqueueArgs:
        """RQ's: an enqueue() call's arguments, its options (rqfast.options' table) apart from the function's."""
        if not isinstance(f, str) and getattr(f, '__module__', None) == '__main__':
            raise ValueError('Functions from the __main__ module cannot be processed by workers')
        if not kwargs:  # no option and no keyword argument: every option at its default
            return enqueue_args(f, args, kwargs)
        options = pop_enqueue_options(kwargs)
        options['at_front'], options['unique'] = bool(options['at_front']), bool(options['unique'])
        if 'args' in kwargs or 'kwargs' in kwargs:
            if args:
                raise ValueError('Extra positional arguments cannot be used when using explicit args and kwargs')
            args, kwargs = kwargs.pop('args', None), kwargs.pop('kwargs', None)
        return enqueue_args(f, args, kwargs, options)

    def enqueue(self, f: Any, *args: Any, **kwargs: Any) -> Job:
        return self.enqueue_call(**self.parse_args(f, *args, **kwargs)._asdict())

    def enqueue_call(
        self,
        func: Any,
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        timeout: Any = None,
        result_ttl: Any = None,
        ttl: Any = None,
        failure_ttl: Any = None,
        description: str | None = None,
        depends_on: Any = None,
        job_id: str | None = None,
        at_front: bool = False,
        meta: dict[str, Any] | None = None,
        retry: Retry | None = None,
        repeat: Repeat | None = None,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        pipeline: Pipeline | None = None,
        unique: bool = False,
        webhooks: Sequence[Any] | None = None,
        rate_limit: RateLimit | None = None,
        capture_output: bool = False,
        priority: int | None = None,
        debounce: object = None,
        throttle: object = None,
    ) -> Job:
        given = locals()  # (its options by name: rqfast.options' table says which create_job takes)
        if unique and not job_id:
            raise ValueError('unique=True requires an explicit job_id')
        keyed = keyed_option(debounce, throttle, depends_on=depends_on, unique=unique, pipeline=pipeline)
        job = self.create_job(func, args=args, kwargs=kwargs, status=JobStatus.QUEUED, **create_job_options(given))
        if keyed is not None:
            return self._enqueue(job, None, at_front, False, check_dependencies=True, keyed=keyed)
        return self.enqueue_job(job, pipeline=pipeline, at_front=at_front, unique=unique)

    # --- enqueue_job, setup_dependencies, _enqueue_job: RQ 3.0's path and names, which instrumentation patches
    # (Sentry wraps enqueue_job, opentelemetry-instrumentation-rq setup_dependencies and _enqueue_job).
    # rqfast checks dependencies inside the enqueue script, so setup_dependencies writes nothing and
    # _enqueue_job, reached from enqueue_job, still checks them: one round trip, as before.

    def enqueue_job(
        self, job: Job, pipeline: Pipeline | None = None, at_front: bool = False, unique: bool = False
    ) -> Job:
        """Store and enqueue a created job (deferred when a dependency is unfinished): one round trip."""
        job = self.setup_dependencies(job, pipeline=pipeline)
        token = _CHECKING_DEPENDENCIES.set(True)
        try:
            return self._enqueue_job(job, pipeline=pipeline, at_front=at_front, unique=unique)
        finally:
            _CHECKING_DEPENDENCIES.reset(token)

    def setup_dependencies(self, job: Job, pipeline: Pipeline | None = None) -> Job:
        """RQ's step that defers a job with unfinished dependencies. rqfast's enqueue script decides that
        atomically when it stores the job, so this writes nothing and returns the job."""
        return job

    def _enqueue_job(
        self, job: Job, pipeline: Pipeline | None = None, at_front: bool = False, unique: bool = False
    ) -> Job:
        """RQ's enqueue without the dependency check: the job is queued (and leaves the deferred registry).
        Called by enqueue_job, it checks the dependencies in the same script call (deferred if unmet)."""
        return self._enqueue(job, pipeline, at_front, unique, check_dependencies=_CHECKING_DEPENDENCIES.get())

    def _enqueue(
        self,
        job: Job,
        pipeline: Pipeline | None,
        at_front: bool,
        unique: bool,
        check_dependencies: bool,
        keyed: Debounce | Throttle | None = None,
    ) -> Job:
        if is_rq_job(job):  # rq's own Job (rq beside rqfast): stored as rqfast's
            job = self._job_from_rqs(job)
        if unique and not job.has_id:
            raise ValueError('unique=True requires an explicit job_id')
        if unique and job.depends_on_ids:
            raise ValueError('unique=True is not supported with job dependencies')
        job.origin = self.name
        check_job(job)  # every option's validator, once per enqueue (a job made by hand too)
        if job.timeout is None:
            job.timeout = self._default_timeout
        job.events = self.events or job.events  # rqfast's own: Queue(events=...) (rqfast.events)
        mode: EnqueueMode = 'queue' if self._is_async else 'store'
        if job.has_rate_limit:
            self._check_rate_limit_namespace(job)
            mode = _rate_limited_mode(job, pipeline, at_front, unique, self._is_async)
        score: int | None = None
        if isinstance(keyed, Debounce):  # scheduled at now + delay, as enqueue_in does (at_front: when it moves)
            mode, score = 'schedule', keyed.score(now())
            if at_front:
                job.enqueue_at_front = True
        record = EnqueueRecord.for_job(
            job,
            mode,
            at_front=at_front,
            unique=unique,
            score=score,
            check_dependencies=check_dependencies,
            allow_failure=bool(job.allow_dependency_failures) and not rq2_compat(),  # RQ 3.0: a failed one is met
        )
        held = self._store([job], [record], pipeline=_pipeline_for(pipeline, unique, self._is_async), guard=keyed)
        if held is not None:  # throttled: no job was created; the one holding the window stands for it
            return self._held_job(held)
        if not self._is_async and job.get_status(refresh=False) not in (JobStatus.DEFERRED, JobStatus.SCHEDULED):
            self.run_sync(job)
        return job

    def _job_from_rqs(self, theirs: Any) -> Job:
        """An rqfast Job with the fields of rq's `theirs` (made by rq's create_job, as django-rq's and other
        tools' code does), for the same id; rq's object itself is left as it was."""
        fields = {_hash_bytes(key): _hash_bytes(value) for key, value in theirs.to_dict().items()}
        job = self.job_class(theirs.id, connection=self.connection, serializer=theirs.serializer)
        job.restore(fields)
        return job

    def _held_job(self, held: Held) -> Job:
        job = self.job_class(held.job_id, connection=self.connection, serializer=self.serializer)
        if held.raw:
            job.restore(held.raw)
        return job

    def _prepare_for_queue(self, job: Job) -> None:
        """What RQ sets on a job before storing it as queued (scripts.save_unique_job's callers); writes nothing."""
        job.origin, job.enqueued_at = self.name, now()
        if job.timeout is None:
            job.timeout = self._default_timeout
        job.set_local_status(JobStatus.QUEUED)

    def _store(
        self,
        jobs: Sequence[Job],
        records: Sequence[EnqueueRecord],
        pipeline: Pipeline | None = None,
        group: str = '',
        guard: Debounce | Throttle | None = None,
    ) -> Held | None:
        records = self._signed(records)
        return store_jobs(self.connection, self.name, jobs, records, pipeline=pipeline, group=group, guard=guard)

    def _signed(self, records: Sequence[EnqueueRecord]) -> Sequence[EnqueueRecord]:
        """`records` with their signature field when this queue signs its jobs (docs/security.md)."""
        key = self.signing_key
        if key is None:
            return records
        return [r.with_field(SIGNATURE_FIELD, sign_fields(key, r.job_id, r.fields)) for r in records]

    @staticmethod
    def prepare_data(
        func: Any,
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        timeout: Any = None,
        result_ttl: Any = None,
        ttl: Any = None,
        failure_ttl: Any = None,
        description: str | None = None,
        depends_on: Any = None,
        job_id: str | None = None,
        at_front: bool = False,
        meta: dict[str, Any] | None = None,
        retry: Retry | None = None,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        repeat: Repeat | None = None,
        webhooks: Sequence[Any] | None = None,
        priority: int | None = None,
        debounce: object = None,
        throttle: object = None,
    ) -> EnqueueData:
        check_values(locals())  # kept for a later enqueue_many: a bad option raises here
        return EnqueueData(
            func,
            args,
            kwargs,
            timeout,
            result_ttl,
            ttl,
            failure_ttl,
            description,
            depends_on,
            job_id,
            at_front,
            meta,
            retry,
            on_success,
            on_failure,
            on_stopped,
            repeat,
            webhooks,
            priority,
            debounce,
            throttle,
        )  # (its parameters, in order: tests/test_options.py holds EnqueueData's fields to them)

    def enqueue_many(
        self, job_datas: Iterable[EnqueueData], pipeline: Pipeline | None = None, group_id: str | None = None
    ) -> list[Job]:
        """Enqueue many jobs, one script call per 1,000; every job is validated before the first call.
        `group_id` only tags the jobs, as in RQ: rqfast.group.Group.enqueue_many also adds them to it."""
        return self.enqueue_batch(job_datas, pipeline, group_id, join_group=False)

    def enqueue_batch(
        self, job_datas: Iterable[EnqueueData], pipeline: Pipeline | None, group_id: str | None, join_group: bool
    ) -> list[Job]:
        """enqueue_many; with `join_group`, each chunk's script call adds its jobs to group `group_id` too."""
        batch = self._plan_batch(job_datas, pipeline, group_id, join_group)
        for jobs, records in batch.chunks():
            self._store(jobs, records, pipeline=batch.pipeline, group=batch.group)
        guarded = [
            self._enqueue(job, None, at_front, False, True, option) for job, at_front, option in batch.one_by_one
        ]
        return batch.ordered(guarded)

    def _plan_batch(
        self, job_datas: Iterable[EnqueueData], pipeline: Pipeline | None, group_id: str | None, join_group: bool
    ) -> Batch:
        """enqueue_batch's jobs and records, checked and made (no I/O): what its script calls store."""
        datas = list(job_datas)
        if not rq2_compat():
            _reject_duplicate_ids(datas)
        keyed = [(d, keyed_option(*_keyed_fields(d), depends_on=d.depends_on, pipeline=pipeline)) for d in datas]
        if join_group and any(option for _, option in keyed):
            raise ValueError('debounce and throttle are not supported in Group.enqueue_many')
        # each debounced or throttled job is its own guard script call, after the batch's
        one_by_one = [(self._job_from_data(d, JobStatus.QUEUED, group_id), d.at_front, o) for d, o in keyed if o]
        datas = [d for d, option in keyed if option is None]
        plain_datas = [d for d in datas if not d.depends_on]
        dependent_datas = [d for d in datas if d.depends_on]
        plain = [self._job_from_data(d, JobStatus.QUEUED, group_id) for d in plain_datas]
        dependent = [self._job_from_data(d, JobStatus.DEFERRED, group_id) for d in dependent_datas]
        for job in plain + dependent:  # every job checked before the first is stored (the guarded ones: _enqueue)
            check_job(job)
        records = [
            EnqueueRecord.for_job(job, 'queue', at_front=d.at_front) for job, d in zip(plain, plain_datas, strict=True)
        ]
        # RQ 3.0: a dependent whose dependencies are met honours at_front, and a deferred one expires after its ttl
        mode: EnqueueMode = 'batch_rq2' if rq2_compat() else 'batch'
        records += [
            EnqueueRecord.for_job(
                job,
                mode,
                at_front=bool(job.enqueue_at_front) or (d.at_front and not rq2_compat()),
                allow_failure=bool(job.allow_dependency_failures),
            )
            for job, d in zip(dependent, dependent_datas, strict=True)
        ]
        group = (group_id or '') if join_group else ''
        return Batch(plain, dependent, records, one_by_one, _pipeline_for(pipeline, False, True), group)

    def _job_from_data(self, data: EnqueueData, status: JobStatus, group_id: str | None) -> Job:
        """The job of one EnqueueData (rqfast's, or RQ's own, which has fewer fields)."""
        given = data._asdict()
        func, args, kwargs = given['func'], given['args'], given['kwargs']
        return self.create_job(
            func, args=args, kwargs=kwargs, status=status, group_id=group_id, **create_job_options(given)
        )

    # --- scheduling

    def enqueue_at(self, datetime: datetime, f: Any, *args: Any, **kwargs: Any) -> Job:
        given = self.parse_args(f, *args, **kwargs)
        if given.debounce is not None or given.throttle is not None:
            raise ValueError('debounce and throttle are not supported with enqueue_at or enqueue_in')
        job = self.create_job(given.func, args=given.args, kwargs=given.kwargs, **create_job_options(given._asdict()))
        if given.at_front:
            job.enqueue_at_front = True
        return self.schedule_job(job, datetime, pipeline=given.pipeline, unique=given.unique)

    def enqueue_in(self, time_delta: timedelta, func: Any, *args: Any, **kwargs: Any) -> Job:
        return self.enqueue_at(now() + time_delta, func, *args, **kwargs)

    def schedule_job(self, job: Job, datetime: datetime, pipeline: Pipeline | None = None, unique: bool = False) -> Job:
        if unique and not job.has_id:
            raise ValueError('unique=True requires an explicit job_id')
        job.origin = self.name
        job.events = self.events or job.events  # rqfast's own: Queue(events=...) (rqfast.events)
        check_job(job)
        self._check_rate_limit_namespace(job)
        record = EnqueueRecord.for_job(job, 'schedule', unique=unique, score=epoch_seconds(datetime))
        self._store([job], [record], pipeline=_pipeline_for(pipeline, unique, True))
        return job

    def run_job(self, job: Job) -> Job:
        return self.run_sync(job)

    def run_sync(self, job: Job) -> Job:
        """RQ's name for running a job in this process (an is_async=False queue does it at enqueue): the
        outcome is recorded, then the job's callback runs (its error propagates), then its webhooks."""
        outcome = perform_sync(self, job)
        penalty = sync_death_penalty(self)
        if outcome.kind is OutcomeKind.FAILURE:
            execute_failure_callback(job, penalty, *outcome.exc_info)
        else:
            execute_success_callback(job, penalty, outcome.value)
        send_sync_webhooks(job, outcome)
        return job

    def _check_rate_limit_namespace(self, job: Job) -> None:
        """RQ 3.0's refusal of a rate limit on a job or queue class with a key prefix of its own."""
        if job.has_rate_limit and (
            job.redis_job_namespace_prefix != Job.redis_job_namespace_prefix
            or self.redis_queue_namespace_prefix != Queue.redis_queue_namespace_prefix
        ):
            raise ValueError('rate_limit is not supported with custom job or queue key prefixes')


def _hash_bytes(value: Any) -> bytes:
    """A field as HSET stores it (redis-py's encoding: a str subclass such as rq's JobStatus by its text)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return str.encode(value)
    return repr(value).encode()


def _keyed_fields(data: EnqueueData) -> tuple[object, object]:
    """An EnqueueData's debounce and throttle: None, None for one made by RQ's prepare_data (no such fields)."""
    return getattr(data, 'debounce', None), getattr(data, 'throttle', None)
