"""Queue: RQ's enqueue API. Every enqueue is one call of lua/enqueue_jobs.lua."""

from __future__ import annotations

import uuid
from collections import namedtuple
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from functools import total_ordering
from typing import Any, NamedTuple

from redis import Redis

from . import keys, scripts
from .dates import epoch_seconds, now, utcformat
from .exceptions import DuplicateJobError, InvalidJobOperation
from .imports import import_attribute
from .job import Job, JobStatus, Retry
from .jobhash import job_fields
from .repeat import Repeat
from .serializers import resolve_serializer
from .timeouts import UnixSignalDeathPenalty, parse_timeout

ENQUEUE_CHUNK = 1000

EnqueueData = namedtuple(
    'EnqueueData',
    [
        'func',
        'args',
        'kwargs',
        'timeout',
        'result_ttl',
        'ttl',
        'failure_ttl',
        'description',
        'depends_on',
        'job_id',
        'at_front',
        'meta',
        'retry',
        'on_success',
        'on_failure',
        'on_stopped',
        'repeat',
        'webhooks',
    ],
)


class EnqueueArgs(NamedTuple):
    func: Any
    timeout: Any
    description: str | None
    result_ttl: Any
    ttl: Any
    failure_ttl: Any
    depends_on: Any
    job_id: str | None
    at_front: bool
    meta: dict | None
    retry: Retry | None
    repeat: Repeat | None
    on_success: Any
    on_failure: Any
    on_stopped: Any
    pipeline: Any
    unique: bool
    args: Any
    kwargs: Any
    webhooks: Any


_OPTION_NAMES = (
    'job_timeout',
    'description',
    'result_ttl',
    'ttl',
    'failure_ttl',
    'depends_on',
    'job_id',
    'at_front',
    'meta',
    'retry',
    'repeat',
    'on_success',
    'on_failure',
    'on_stopped',
    'pipeline',
    'unique',
)


def _record(
    job: Job,
    mode: str,
    at_front: bool = False,
    unique: bool = False,
    score: int | str = '',
    allow_failure: bool = False,
) -> list[Any]:
    """One job's record for enqueue_jobs.lua; the script sets status and enqueued_at itself."""
    fields = job_fields(job)
    fields.pop('status', None)
    fields.pop('enqueued_at', None)
    record: list[Any] = [
        job.id,
        mode,
        int(bool(at_front)),
        int(unique),
        job.ttl or '',
        score,
        int(allow_failure),
        len(job._dependency_ids),
        *job._dependency_ids,
        len(fields),
    ]
    for name, value in fields.items():
        record.extend((name, value))
    return record


@total_ordering
class Queue:
    job_class: type[Job] = Job
    death_penalty_class: Any = UnixSignalDeathPenalty
    DEFAULT_TIMEOUT = 180
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
        **kwargs: Any,
    ):
        if not connection:
            raise TypeError("Queue() missing 1 required positional argument: 'connection'")
        self.connection = connection
        self.name = name
        self._key = keys.queue_key(name)
        self._default_timeout = parse_timeout(default_timeout) or self.DEFAULT_TIMEOUT
        self._is_async = kwargs.get('async', is_async)
        if job_class is not None:
            self.job_class = import_attribute(job_class) if isinstance(job_class, str) else job_class
        self.death_penalty_class = death_penalty_class
        self.serializer = resolve_serializer(serializer)

    @classmethod
    def all(
        cls, connection: Redis, job_class: Any = None, serializer: Any = None, death_penalty_class: Any = None
    ) -> list[Queue]:
        return [
            cls.from_queue_key(m.decode(), connection=connection, job_class=job_class, serializer=serializer)
            for m in connection.smembers(keys.QUEUES)
            if m
        ]  # type: ignore[union-attr]

    @classmethod
    def from_queue_key(
        cls,
        queue_key: str,
        connection: Redis,
        job_class: Any = None,
        serializer: Any = None,
        death_penalty_class: Any = None,
    ) -> Queue:
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
        return isinstance(other, Queue) and self.name == other.name

    def __lt__(self, other: Queue) -> bool:
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
    def registry_cleaning_key(self) -> str:
        return keys.maintenance_lock_key(self.name)

    @property
    def is_async(self) -> bool:
        return bool(self._is_async)

    def _registry(self, class_name: str) -> Any:
        from . import registry

        return getattr(registry, class_name)(queue=self, job_class=self.job_class, serializer=self.serializer)

    failed_job_registry = property(lambda self: self._registry('FailedJobRegistry'))
    started_job_registry = property(lambda self: self._registry('StartedJobRegistry'))
    finished_job_registry = property(lambda self: self._registry('FinishedJobRegistry'))
    deferred_job_registry = property(lambda self: self._registry('DeferredJobRegistry'))
    scheduled_job_registry = property(lambda self: self._registry('ScheduledJobRegistry'))
    canceled_job_registry = property(lambda self: self._registry('CanceledJobRegistry'))

    @property
    def scheduler_pid(self) -> int | None:
        name = self.connection.get(keys.scheduler_lock_key(self.name))
        if name is None:
            return None
        pid = self.connection.hget(keys.scheduler_key(name.decode()), 'pid')  # type: ignore[union-attr]
        return int(pid) if pid else None

    def acquire_maintenance_lock(self) -> bool:
        return bool(self.connection.set(self.registry_cleaning_key, 1, nx=True, ex=899))

    def release_maintenance_lock(self) -> None:
        self.connection.delete(self.registry_cleaning_key)

    # --- reading

    @property
    def count(self) -> int:
        return int(self.connection.llen(self.key))

    def is_empty(self) -> bool:
        return self.count == 0

    def get_job_ids(self, offset: int = 0, length: int = -1) -> list[str]:
        end = offset + (length - 1) if length >= 0 else length
        return [m.decode() for m in self.connection.lrange(self.key, offset, end)]  # type: ignore[union-attr]

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

    def get_job_position(self, job_or_id: Job | str) -> int | None:
        job_id = job_or_id.id if isinstance(job_or_id, Job) else job_or_id
        position = self.connection.lpos(self.key, job_id)
        return None if position is None else int(position)  # type: ignore[arg-type]

    # --- removing

    def remove(self, job_or_id: Job | str, pipeline: Any = None) -> int:
        job_id = job_or_id.id if isinstance(job_or_id, Job) else job_or_id
        return int((pipeline if pipeline is not None else self.connection).lrem(self.key, 1, job_id))

    def empty(self) -> int:
        """Remove every job in the queue and delete their hashes; the number removed."""
        return scripts.empty_queue(self.connection, self.name)

    def delete(self, delete_jobs: bool = True) -> None:
        if delete_jobs:
            self.empty()
        with self.connection.pipeline() as pipe:
            pipe.srem(keys.QUEUES, self.key)
            pipe.delete(self.key)
            pipe.execute()

    def compact(self) -> None:
        """Drop ids whose job is gone, keeping the order (RQ's approach: rename, then re-push)."""
        temporary = f'{keys.QUEUE_PREFIX}_compact:{uuid.uuid4()}'
        if not self.connection.exists(self.key):
            return
        self.connection.rename(self.key, temporary)
        while (job_id := self.connection.lpop(temporary)) is not None:
            if self.job_class.exists(job_id.decode(), self.connection):  # type: ignore[union-attr]
                self.connection.rpush(self.key, job_id)  # type: ignore[arg-type]

    # --- creating jobs

    def create_job(
        self,
        func: Any,
        args: tuple | list | None = None,
        kwargs: dict | None = None,
        timeout: Any = None,
        result_ttl: Any = None,
        ttl: Any = None,
        failure_ttl: Any = None,
        description: str | None = None,
        depends_on: Any = None,
        job_id: str | None = None,
        meta: dict | None = None,
        status: JobStatus = JobStatus.QUEUED,
        retry: Retry | None = None,
        repeat: Repeat | None = None,
        *,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        webhooks: Sequence[Any] | None = None,
        group_id: str | None = None,
    ) -> Job:
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
        if retry:
            job.retries_left, job.retry_intervals = retry.max, retry.intervals
            job.enqueue_at_front_on_retry = retry.enqueue_at_front
        if repeat:
            job.repeats_left, job.repeat_intervals = repeat.times, repeat.intervals
        return job

    @classmethod
    def parse_args(cls, f: Any, *args: Any, **kwargs: Any) -> EnqueueArgs:
        if not isinstance(f, str) and getattr(f, '__module__', None) == '__main__':
            raise ValueError('Functions from the __main__ module cannot be processed by workers')
        options = {name: kwargs.pop(name, None) for name in _OPTION_NAMES}
        webhooks = kwargs.pop('webhooks', None)
        if 'args' in kwargs or 'kwargs' in kwargs:
            if args:
                raise ValueError('Extra positional arguments cannot be used when using explicit args and kwargs')
            args, kwargs = kwargs.pop('args', None), kwargs.pop('kwargs', None)  # type: ignore[assignment]
        return EnqueueArgs(
            f,
            options['job_timeout'],
            options['description'],
            options['result_ttl'],
            options['ttl'],
            options['failure_ttl'],
            options['depends_on'],
            options['job_id'],
            bool(options['at_front']),
            options['meta'],
            options['retry'],
            options['repeat'],
            options['on_success'],
            options['on_failure'],
            options['on_stopped'],
            options['pipeline'],
            bool(options['unique']),
            args,
            kwargs,
            webhooks,
        )

    def enqueue(self, f: Any, *args: Any, **kwargs: Any) -> Job:
        parsed = self.parse_args(f, *args, **kwargs)
        return self.enqueue_call(
            func=parsed.func,
            args=parsed.args,
            kwargs=parsed.kwargs,
            timeout=parsed.timeout,
            result_ttl=parsed.result_ttl,
            ttl=parsed.ttl,
            failure_ttl=parsed.failure_ttl,
            description=parsed.description,
            depends_on=parsed.depends_on,
            job_id=parsed.job_id,
            at_front=parsed.at_front,
            meta=parsed.meta,
            retry=parsed.retry,
            repeat=parsed.repeat,
            on_success=parsed.on_success,
            on_failure=parsed.on_failure,
            on_stopped=parsed.on_stopped,
            webhooks=parsed.webhooks,
            pipeline=parsed.pipeline,
            unique=parsed.unique,
        )

    def enqueue_call(
        self,
        func: Any,
        args: tuple | list | None = None,
        kwargs: dict | None = None,
        timeout: Any = None,
        result_ttl: Any = None,
        ttl: Any = None,
        failure_ttl: Any = None,
        description: str | None = None,
        depends_on: Any = None,
        job_id: str | None = None,
        at_front: bool = False,
        meta: dict | None = None,
        retry: Retry | None = None,
        repeat: Repeat | None = None,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        pipeline: Any = None,
        unique: bool = False,
        webhooks: Sequence[Any] | None = None,
    ) -> Job:
        if unique and not job_id:
            raise ValueError('unique=True requires an explicit job_id')
        job = self.create_job(
            func,
            args=args,
            kwargs=kwargs,
            result_ttl=result_ttl,
            ttl=ttl,
            failure_ttl=failure_ttl,
            description=description,
            depends_on=depends_on,
            job_id=job_id,
            meta=meta,
            status=JobStatus.QUEUED,
            timeout=timeout,
            retry=retry,
            repeat=repeat,
            on_success=on_success,
            on_failure=on_failure,
            on_stopped=on_stopped,
            webhooks=webhooks,
        )
        return self.enqueue_job(job, pipeline=pipeline, at_front=at_front, unique=unique)

    def enqueue_job(self, job: Job, pipeline: Any = None, at_front: bool = False, unique: bool = False) -> Job:
        """Store and enqueue a created job (deferred when a dependency is unfinished): one round trip."""
        if unique and not job._id:
            raise ValueError('unique=True requires an explicit job_id')
        if unique and job._dependency_ids:
            raise ValueError('unique=True is not supported with job dependencies')
        job.origin = self.name
        if job.timeout is None:
            job.timeout = self._default_timeout
        mode = 'queue' if self._is_async else 'store'
        self._store([job], [_record(job, mode, at_front=at_front, unique=unique)])
        if not self._is_async and job._status != JobStatus.DEFERRED:
            from .sync import run_sync

            run_sync(self, job)
        return job

    def _store(self, jobs: Sequence[Job], records: list[list[Any]]) -> None:
        moment = now()
        statuses = scripts.enqueue_jobs(self.connection, self.name, utcformat(moment), epoch_seconds(moment), records)
        for job, status in zip(jobs, statuses, strict=True):
            if status == 'duplicate':
                raise DuplicateJobError(f'Job with ID {job.id} already exists')
            if status == 'not_failed':
                raise InvalidJobOperation(f'Job {job.id} is not in the failed registry')
            job._status = JobStatus.QUEUED if status == 'stored' else JobStatus(status)
            if status in ('queued', 'stored'):
                job.enqueued_at = moment

    @staticmethod
    def prepare_data(
        func: Any,
        args: tuple | list | None = None,
        kwargs: dict | None = None,
        timeout: Any = None,
        result_ttl: Any = None,
        ttl: Any = None,
        failure_ttl: Any = None,
        description: str | None = None,
        depends_on: Any = None,
        job_id: str | None = None,
        at_front: bool = False,
        meta: dict | None = None,
        retry: Retry | None = None,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        repeat: Repeat | None = None,
        webhooks: Sequence[Any] | None = None,
    ) -> EnqueueData:
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
        )

    def enqueue_many(
        self, job_datas: Iterable[EnqueueData], pipeline: Any = None, group_id: str | None = None
    ) -> list[Job]:
        """Enqueue many jobs, one script call per 1,000; every job is validated before the first call."""
        datas = list(job_datas)
        plain = [self._job_from_data(d, JobStatus.QUEUED, group_id) for d in datas if not d.depends_on]
        dependent = [self._job_from_data(d, JobStatus.DEFERRED, group_id) for d in datas if d.depends_on]
        records = [
            _record(job, 'queue', at_front=d.at_front)
            for job, d in zip(plain, [d for d in datas if not d.depends_on], strict=True)
        ]
        records += [
            _record(
                job, 'batch', at_front=bool(job.enqueue_at_front), allow_failure=bool(job.allow_dependency_failures)
            )
            for job in dependent
        ]
        everything = plain + dependent
        for start in range(0, len(everything), ENQUEUE_CHUNK):
            self._store(everything[start : start + ENQUEUE_CHUNK], records[start : start + ENQUEUE_CHUNK])
        if group_id:
            self.connection.sadd(keys.group_key(group_id), *[job.id for job in everything])
            self.connection.sadd(keys.GROUPS, group_id)
        unmet = [job for job in dependent if job._status == JobStatus.DEFERRED]
        met = [job for job in dependent if job._status != JobStatus.DEFERRED]
        return plain + unmet + met

    def _job_from_data(self, data: EnqueueData, status: JobStatus, group_id: str | None) -> Job:
        return self.create_job(
            data.func,
            args=data.args,
            kwargs=data.kwargs,
            timeout=data.timeout,
            result_ttl=data.result_ttl,
            ttl=data.ttl,
            failure_ttl=data.failure_ttl,
            description=data.description,
            depends_on=data.depends_on,
            job_id=data.job_id,
            meta=data.meta,
            status=status,
            retry=data.retry,
            repeat=data.repeat,
            on_success=data.on_success,
            on_failure=data.on_failure,
            on_stopped=data.on_stopped,
            webhooks=data.webhooks,
            group_id=group_id,
        )

    # --- scheduling

    def enqueue_at(self, datetime: datetime, f: Any, *args: Any, **kwargs: Any) -> Job:
        parsed = self.parse_args(f, *args, **kwargs)
        job = self.create_job(
            parsed.func,
            args=parsed.args,
            kwargs=parsed.kwargs,
            timeout=parsed.timeout,
            result_ttl=parsed.result_ttl,
            ttl=parsed.ttl,
            failure_ttl=parsed.failure_ttl,
            description=parsed.description,
            depends_on=parsed.depends_on,
            job_id=parsed.job_id,
            meta=parsed.meta,
            retry=parsed.retry,
            repeat=parsed.repeat,
            on_success=parsed.on_success,
            on_failure=parsed.on_failure,
            on_stopped=parsed.on_stopped,
            webhooks=parsed.webhooks,
        )
        if parsed.at_front:
            job.enqueue_at_front = True
        return self.schedule_job(job, datetime, unique=parsed.unique)

    def enqueue_in(self, time_delta: timedelta, func: Any, *args: Any, **kwargs: Any) -> Job:
        return self.enqueue_at(now() + time_delta, func, *args, **kwargs)

    def schedule_job(self, job: Job, datetime: datetime, pipeline: Any = None, unique: bool = False) -> Job:
        if unique and not job._id:
            raise ValueError('unique=True requires an explicit job_id')
        job.origin = self.name
        self._store([job], [_record(job, 'schedule', unique=unique, score=epoch_seconds(datetime))])
        return job

    def requeue_from_registry(self, job: Job, registry_key: str, at_front: bool = False) -> Job:
        """FailedJobRegistry.requeue: out of the registry and back onto this queue, atomically."""
        if registry_key != keys.failed_registry_key(self.name):
            raise InvalidJobOperation(f'Job {job.id} can only be requeued from its failed registry')
        job.started_at = job.ended_at = None
        job._exc_info = ''
        self._store([job], [_record(job, 'requeue', at_front=at_front)])
        return job

    def run_job(self, job: Job) -> Job:
        from .sync import run_sync

        return run_sync(self, job)

    # --- popping (RQ's helpers, for tools that call them)

    def pop_job_id(self) -> str | None:
        job_id = self.connection.lpop(self.key)
        return job_id.decode() if job_id else None  # type: ignore[union-attr]
