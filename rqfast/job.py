"""Job: a handle on one `rq:job:<id>` hash, with RQ 2.12's API.

The field encoding lives in jobhash.py; the writes that change a job's state are Lua scripts
(lua/), called through rqfast.scripts.
"""

from __future__ import annotations

import contextvars
import inspect
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import keys, scripts
from .exceptions import DeserializationError, InvalidJobOperation, NoSuchJobError
from .imports import function_reference, import_attribute
from .jobhash import job_fields, restore_job
from .serializers import resolve_serializer
from .status import JobStatus
from .timeouts import parse_timeout

if TYPE_CHECKING:
    from redis import Redis

    from .results import Result

JOB_ID_PATTERN = re.compile(r'[A-Za-z0-9_-]+')
CALLBACK_TIMEOUT = 60


def validate_job_id(job_id: Any) -> None:
    if not isinstance(job_id, str):
        raise TypeError(f'Job ID must be a string, not {type(job_id)}')
    if not JOB_ID_PATTERN.fullmatch(job_id):
        raise ValueError('Job ID must only contain letters, numbers, underscores and dashes')


def parse_job_id(job_or_execution_id: str) -> str:
    """A job id from a job id or a started-registry member `<id>:<execution id>`."""
    return job_or_execution_id.split(':')[0]


class Retry:
    def __init__(self, max: int, interval: int | Iterable[int] = 0, enqueue_at_front: bool = False):
        if max < 1:
            raise ValueError('max: please enter a value greater than 0')
        intervals = [interval] if isinstance(interval, int) else list(interval)
        if any(i < 0 for i in intervals):
            raise ValueError('interval: negative numbers are not allowed')
        self.max = max
        self.intervals = intervals
        self.enqueue_at_front = enqueue_at_front

    def __repr__(self) -> str:
        interval = self.intervals[0] if len(self.intervals) == 1 else self.intervals
        return f'Retry(max={self.max}, interval={interval!r}, enqueue_at_front={self.enqueue_at_front!r})'

    @classmethod
    def get_interval(cls, count: int, intervals: int | list[int] | None) -> int:
        if isinstance(intervals, int):
            return intervals
        if not intervals:
            return 0
        return intervals[min(len(intervals) - 1, count)]


class Callback:
    def __init__(self, func: str | Callable[..., Any], timeout: Any | None = None):
        if not isinstance(func, str) and not inspect.isfunction(func) and not inspect.isbuiltin(func):
            raise ValueError('Callback `func` must be a string or function')
        self.func = func
        self.timeout = parse_timeout(timeout) if timeout else CALLBACK_TIMEOUT

    @property
    def name(self) -> str:
        return self.func if isinstance(self.func, str) else function_reference(self.func)[1]


class Dependency:
    def __init__(self, jobs: Any, allow_failure: bool = False, enqueue_at_front: bool = False):
        dependencies = _as_list(jobs)
        if not all(isinstance(job, Job | str) for job in dependencies if job):
            raise ValueError('jobs: must contain objects of type Job and/or strings representing Job ids')
        if len(dependencies) < 1:
            raise ValueError('jobs: cannot be empty.')
        self.dependencies = dependencies
        self.allow_failure = allow_failure
        self.enqueue_at_front = enqueue_at_front


def _as_list(obj: Any) -> list[Any]:
    if isinstance(obj, Iterable) and not isinstance(obj, str | bytes):
        return list(obj)
    return [obj]


_current_job: contextvars.ContextVar[Job | None] = contextvars.ContextVar('rqfast_current_job', default=None)


def get_current_job(connection: Redis | None = None, job_class: Any = None) -> Job | None:
    """The job running in this context (thread or task), or None outside a job."""
    return _current_job.get()


def cancel_job(job_id: str, connection: Redis, serializer: Any = None, enqueue_dependents: bool = False) -> None:
    Job.fetch(job_id, connection=connection, serializer=serializer).cancel(enqueue_dependents=enqueue_dependents)


def requeue_job(job_id: str, connection: Redis, serializer: Any = None) -> Job:
    return Job.fetch(job_id, connection=connection, serializer=serializer).requeue()


_UNSET: Any = object()


class Job:
    """A job's fields in memory; fetch() reads them, the queue and worker scripts write them."""

    redis_job_namespace_prefix = keys.JOB_PREFIX

    def __init__(self, id: str | None = None, connection: Redis | None = None, serializer: Any = None):
        if not connection:
            raise TypeError("Job.__init__() missing 1 required argument: 'connection'")
        if id:
            validate_job_id(id)
        self.connection = connection
        self._id = id
        self.serializer = resolve_serializer(serializer)
        self.created_at: datetime | None = _now()
        self._data: Any = _UNSET
        self._func_name: Any = _UNSET
        self._instance: Any = _UNSET
        self._args: Any = _UNSET
        self._kwargs: Any = _UNSET
        self._success_callback_name: str | None = None
        self._failure_callback_name: str | None = None
        self._stopped_callback_name: str | None = None
        self._success_callback_timeout: int | None = None
        self._failure_callback_timeout: int | None = None
        self._stopped_callback_timeout: int | None = None
        self.webhooks: list[Any] = []
        self.description: str | None = None
        self.origin = ''
        self.enqueued_at: datetime | None = None
        self.started_at: datetime | None = None
        self.ended_at: datetime | None = None
        self.last_heartbeat: datetime | None = None
        self._result: Any = None
        self._exc_info: str | None = None
        self.timeout: int | None = None
        self.result_ttl: int | None = None
        self.failure_ttl: int | None = None
        self.ttl: int | None = None
        self.worker_name: str | None = None
        self._status = JobStatus.CREATED
        self._dependency_ids: list[str] = []
        self.meta: dict[str, Any] = {}
        self.retries_left: int | None = None
        self.number_of_retries: int | None = None
        self.retry_intervals: list[int] | None = None
        self.enqueue_at_front_on_retry = False
        self.repeats_left: int | None = None
        self.repeat_intervals: list[int] | None = None
        self.allow_dependency_failures: bool | None = None
        self.enqueue_at_front: bool | None = None
        self.group_id: str | None = None
        self._cached_result: Result | None = None

    @classmethod
    def create(
        cls,
        func: Any,
        args: list | tuple | None = None,
        kwargs: dict[str, Any] | None = None,
        connection: Redis | None = None,
        result_ttl: Any = None,
        ttl: Any = None,
        status: JobStatus | None = None,
        description: str | None = None,
        depends_on: Any = None,
        timeout: Any = None,
        retry: Retry | None = None,
        id: str | None = None,
        origin: str = '',
        meta: dict[str, Any] | None = None,
        failure_ttl: Any = None,
        serializer: Any = None,
        group_id: str | None = None,
        *,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        webhooks: Sequence[Any] | None = None,
    ) -> Job:
        """A new job in memory: validated, serialized into `data`, not yet stored."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, list | tuple):
            raise TypeError(f'{args!r} is not a valid args list')
        if not isinstance(kwargs, dict):
            raise TypeError(f'{kwargs!r} is not a valid kwargs dict')
        job = cls(connection=connection, serializer=serializer)
        if id is not None:
            job.id = id
        job.origin = origin or ''
        job._instance, job._func_name = function_reference(func)
        job._args, job._kwargs = args, kwargs
        for kind, callback in (('success', on_success), ('failure', on_failure), ('stopped', on_stopped)):
            if callback:
                if not isinstance(callback, Callback):
                    warnings.warn(
                        f'Passing a string or function for `on_{kind}` is deprecated, pass `Callback` instead',
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    callback = Callback(callback)
                setattr(job, f'_{kind}_callback_name', callback.name)
                setattr(job, f'_{kind}_callback_timeout', callback.timeout)
        if webhooks:
            job.webhooks = list(webhooks)
        job.description = description or job.get_call_string()
        job.result_ttl = parse_timeout(result_ttl)
        job.failure_ttl = parse_timeout(failure_ttl)
        job.ttl = parse_timeout(ttl)
        job.timeout = parse_timeout(timeout)
        job.meta = meta or {}
        job.group_id = group_id
        if retry is not None:
            job.retries_left = retry.max
            job.enqueue_at_front_on_retry = retry.enqueue_at_front
            job.retry_intervals = retry.intervals
        if depends_on is not None:
            job.process_dependencies(depends_on)
        job._status = status if status is not None else JobStatus.CREATED
        job._data = job.serializer.dumps((job._func_name, job._instance, job._args, job._kwargs))
        return job

    def process_dependencies(self, depends_on: Any) -> None:
        dependency_list: list[Job | str] = []
        for item in _as_list(depends_on):
            if isinstance(item, Dependency):
                self.enqueue_at_front = self.enqueue_at_front or item.enqueue_at_front
                self.allow_dependency_failures = self.allow_dependency_failures or item.allow_failure
                dependency_list.extend(item.dependencies)
            elif isinstance(item, Job | str):
                dependency_list.append(item)
            else:
                raise ValueError(f'depends_on items must be Job objects or string job IDs, got {type(item).__name__}')
        self._dependency_ids = [dep.id if isinstance(dep, Job) else dep for dep in dependency_list]

    # --- identity and keys

    @property
    def id(self) -> str:
        if self._id is None:
            from uuid import uuid4  # here: a horse that creates no job need not import uuid

            self._id = str(uuid4())
        return self._id

    @id.setter
    def id(self, value: str) -> None:
        validate_job_id(value)
        self._id = value

    def get_id(self) -> str:
        return self.id

    @classmethod
    def key_for(cls, job_id: str) -> str:
        return keys.job_key(job_id)

    @classmethod
    def dependents_key_for(cls, job_id: str) -> str:
        return keys.dependents_key(job_id)

    @property
    def key(self) -> str:
        return keys.job_key(self.id)

    @property
    def dependents_key(self) -> str:
        return keys.dependents_key(self.id)

    @property
    def dependencies_key(self) -> str:
        return keys.dependencies_key(self.id)

    def __repr__(self) -> str:
        return f'{self.__class__.__name__}({self._id!r}, enqueued_at={self.enqueued_at!r})'

    def __str__(self) -> str:
        return f'<{self.__class__.__name__} {self.id}: {self.description}>'

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__) and self.id == other.id

    def __hash__(self) -> int:
        return hash(self.id)

    # --- the call: data <-> (func_name, instance, args, kwargs)

    def _deserialize_data(self) -> None:
        try:
            self._func_name, self._instance, self._args, self._kwargs = self.serializer.loads(self.data)
        except Exception as exc:
            raise DeserializationError(f'Job {self._id}: cannot deserialize its data: {exc!r}') from exc

    @property
    def data(self) -> bytes:
        if self._data is _UNSET:
            if self._func_name is _UNSET:
                raise ValueError('Cannot build the job data')
            self._instance = None if self._instance is _UNSET else self._instance
            self._args = () if self._args is _UNSET else self._args
            self._kwargs = {} if self._kwargs is _UNSET else self._kwargs
            self._data = self.serializer.dumps((self._func_name, self._instance, self._args, self._kwargs))
        return self._data  # type: ignore[no-any-return]

    @data.setter
    def data(self, value: bytes) -> None:
        self._data = value
        self._func_name = self._instance = self._args = self._kwargs = _UNSET

    def _call_part(self, name: str) -> Any:
        if getattr(self, name) is _UNSET:
            self._deserialize_data()
        return getattr(self, name)

    def _set_call_part(self, name: str, value: Any) -> None:
        if self._func_name is _UNSET and self._data is not _UNSET:
            self._deserialize_data()
        setattr(self, name, value)
        self._data = _UNSET

    func_name = property(
        lambda self: self._call_part('_func_name'), lambda self, v: self._set_call_part('_func_name', v)
    )
    instance = property(lambda self: self._call_part('_instance'), lambda self, v: self._set_call_part('_instance', v))
    args = property(lambda self: self._call_part('_args'), lambda self, v: self._set_call_part('_args', v))
    kwargs = property(lambda self: self._call_part('_kwargs'), lambda self, v: self._set_call_part('_kwargs', v))

    @property
    def func(self) -> Any:
        func_name = self.func_name
        if func_name is None:
            return None
        if self.instance:
            return getattr(self.instance, func_name)
        return import_attribute(func_name)

    def get_call_string(self) -> str | None:
        return call_string(self.func_name, self.args, self.kwargs, max_length=75)

    # --- callbacks

    def _callback(self, kind: str) -> Any:
        name = getattr(self, f'_{kind}_callback_name')
        return import_attribute(name) if name else None

    @property
    def success_callback(self) -> Any:
        return self._callback('success')

    @property
    def failure_callback(self) -> Any:
        return self._callback('failure')

    @property
    def stopped_callback(self) -> Any:
        return self._callback('stopped')

    @property
    def success_callback_timeout(self) -> int:
        return CALLBACK_TIMEOUT if self._success_callback_timeout is None else self._success_callback_timeout

    @property
    def failure_callback_timeout(self) -> int:
        return CALLBACK_TIMEOUT if self._failure_callback_timeout is None else self._failure_callback_timeout

    @property
    def stopped_callback_timeout(self) -> int:
        return CALLBACK_TIMEOUT if self._stopped_callback_timeout is None else self._stopped_callback_timeout

    # --- status

    def get_status(self, refresh: bool = True) -> JobStatus:
        if refresh:
            status = self.connection.hget(self.key, 'status')
            if not status:
                raise InvalidJobOperation(f'Failed to retrieve status for job: {self.id}')
            self._status = JobStatus(status.decode() if isinstance(status, bytes) else status)
        return self._status

    def set_status(self, status: JobStatus, pipeline: Any = None) -> None:
        self._status = status
        (pipeline if pipeline is not None else self.connection).hset(self.key, 'status', status.value)

    def get_meta(self, refresh: bool = True) -> dict[str, Any]:
        if refresh:
            meta = self.connection.hget(self.key, 'meta')
            self.meta = self.serializer.loads(meta) if meta else {}
        return self.meta

    is_finished = property(lambda self: self.get_status() == JobStatus.FINISHED)
    is_queued = property(lambda self: self.get_status() == JobStatus.QUEUED)
    is_failed = property(lambda self: self.get_status() == JobStatus.FAILED)
    is_started = property(lambda self: self.get_status() == JobStatus.STARTED)
    is_deferred = property(lambda self: self.get_status() == JobStatus.DEFERRED)
    is_canceled = property(lambda self: self.get_status() == JobStatus.CANCELED)
    is_scheduled = property(lambda self: self.get_status() == JobStatus.SCHEDULED)
    is_stopped = property(lambda self: self.get_status() == JobStatus.STOPPED)

    def get_position(self) -> int | None:
        if not self.origin:
            return None
        position = self.connection.lpos(keys.queue_key(self.origin), self.id)
        return None if position is None else int(position)  # type: ignore[arg-type]

    # --- dependencies

    @property
    def dependency_ids(self) -> list[str]:
        return sorted(m.decode() for m in self.connection.smembers(self.dependencies_key))  # type: ignore[union-attr]

    @property
    def _dependency_id(self) -> str | None:
        return self._dependency_ids[0] if self._dependency_ids else None

    @property
    def dependency(self) -> Job | None:
        if not self._dependency_ids:
            return None
        return self.fetch(self._dependency_ids[0], connection=self.connection, serializer=self.serializer)

    @property
    def dependent_ids(self) -> list[str]:
        return [m.decode() for m in self.connection.smembers(self.dependents_key)]  # type: ignore[union-attr]

    def fetch_dependencies(self, watch: bool = False, pipeline: Any = None) -> list[Job]:
        jobs = self.fetch_many(self._dependency_ids, connection=self.connection, serializer=self.serializer)
        return [job for job in jobs if job]

    def should_enqueue_at_front(self) -> bool:
        if self.enqueue_at_front_on_retry and self.ended_at is not None:
            return True
        return bool(self.enqueue_at_front)

    def get_retry_interval(self) -> int:
        if self.retry_intervals is None or not self.retries_left:
            return 0
        return self.retry_intervals[max(len(self.retry_intervals) - self.retries_left, 0)]

    @property
    def should_retry(self) -> bool:
        return self.retries_left is not None and self.retries_left > 0

    # --- reading and writing

    @classmethod
    def exists(cls, job_id: str, connection: Redis) -> bool:
        return bool(connection.exists(keys.job_key(job_id)))

    @classmethod
    def fetch(cls, id: str, connection: Redis | None = None, serializer: Any = None) -> Job:
        job = cls(parse_job_id(id), connection=connection, serializer=serializer)
        job.refresh()
        return job

    @classmethod
    def fetch_many(cls, job_ids: Iterable[str], connection: Redis, serializer: Any = None) -> list[Job | None]:
        ids = [parse_job_id(job_id) for job_id in job_ids]
        with connection.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.hgetall(keys.job_key(job_id))
            hashes = pipe.execute()
        jobs: list[Job | None] = []
        for job_id, raw in zip(ids, hashes, strict=True):
            job = None
            if raw:
                job = cls(job_id, connection=connection, serializer=serializer)
                job.restore(raw)
            jobs.append(job)
        return jobs

    def refresh(self) -> None:
        raw = self.connection.hgetall(self.key)
        if not raw:
            raise NoSuchJobError(f'No such job: {self.key}')
        self.restore(raw)  # type: ignore[arg-type]

    def restore(self, raw: dict[bytes, bytes]) -> None:
        restore_job(self, raw)

    def to_dict(self, include_meta: bool = True, include_result: bool = True) -> dict[str, Any]:
        return job_fields(self, include_meta=include_meta, include_result=include_result)

    def save(self, pipeline: Any = None, include_meta: bool = True, include_result: bool = True) -> None:
        mapping = self.to_dict(include_meta=include_meta, include_result=include_result)
        (pipeline if pipeline is not None else self.connection).hset(self.key, mapping=mapping)

    def save_meta(self) -> None:
        self.connection.hset(self.key, 'meta', self.serializer.dumps(self.meta))

    def heartbeat(self, timestamp: datetime, ttl: int, pipeline: Any = None, xx: bool = False) -> None:
        from .dates import utcformat

        self.last_heartbeat = timestamp
        (pipeline if pipeline is not None else self.connection).hset(self.key, 'last_heartbeat', utcformat(timestamp))

    def cancel(
        self, pipeline: Any = None, enqueue_dependents: bool = False, remove_from_dependencies: bool = False
    ) -> None:
        """Cancel: out of its queue and registry, into the canceled registry (one script call)."""
        from .dates import epoch_seconds, now, utcformat

        moment = now()
        outcome = scripts.cancel_job(
            self.connection,
            self.id,
            epoch_seconds(moment),
            utcformat(moment),
            enqueue_dependents,
            remove_from_dependencies,
        )
        if outcome == -1:
            raise InvalidJobOperation(f'Cannot cancel already canceled job: {self.id}')
        if outcome == 0:
            raise NoSuchJobError(f'No such job: {self.key}')
        self._status = JobStatus.CANCELED

    def requeue(self, at_front: bool = False) -> Job:
        from .registry import FailedJobRegistry

        return FailedJobRegistry(self.origin, connection=self.connection, serializer=self.serializer).requeue(
            self, at_front=at_front
        )

    def delete(self, pipeline: Any = None, remove_from_queue: bool = True, delete_dependents: bool = False) -> None:
        """Delete the job's keys and take it out of its queue and registries (one script call)."""
        scripts.delete_job(self.connection, self.id, remove_from_queue, delete_dependents)

    def delete_dependents(self, pipeline: Any = None) -> None:
        for job in self.fetch_many(self.dependent_ids, connection=self.connection, serializer=self.serializer):
            if job is not None:
                job.delete(remove_from_queue=False)
        self.connection.delete(self.dependents_key)

    # --- results

    def results(self) -> list[Result]:
        from .results import Result

        return Result.all(self, serializer=self.serializer)

    def latest_result(self, timeout: int = 0) -> Result | None:
        from .results import Result

        return Result.fetch_latest(self, serializer=self.serializer, timeout=timeout)

    def return_value(self, refresh: bool = False) -> Any:
        from .results import Result

        if refresh or not self._cached_result:
            self._cached_result = self.latest_result()
        if self._cached_result and self._cached_result.type == Result.Type.SUCCESSFUL:
            return self._cached_result.return_value
        return None

    @property
    def result(self) -> Any:
        warnings.warn('job.result is deprecated, use job.return_value instead.', DeprecationWarning, stacklevel=2)
        value = self.return_value()
        if value is None and self._result is None:
            raw = self.connection.hget(self.key, 'result')
            if raw is not None:
                self._result = self.serializer.loads(raw)
        return value if value is not None else self._result

    @property
    def exc_info(self) -> str | None:
        from .results import Result

        latest = self.latest_result()
        if latest and latest.type == Result.Type.FAILED:
            return latest.exc_string
        return self._exc_info

    # --- running

    def perform(self) -> Any:
        """Run the function with this job as the current job; await it if it is a coroutine."""
        token = _current_job.set(self)
        try:
            self._result = self._execute()
        finally:
            _current_job.reset(token)
        return self._result

    def _execute(self) -> Any:
        result = self.func(*self.args, **self.kwargs)
        if inspect.isawaitable(result):
            import asyncio  # here: a horse that runs no coroutine need not import asyncio

            result = asyncio.run(_await(result))
        return result

    def get_ttl(self, default_ttl: int | None = None) -> int | None:
        return default_ttl if self.ttl is None else self.ttl

    def get_result_ttl(self, default_ttl: int) -> int:
        return default_ttl if self.result_ttl is None else self.result_ttl

    @property
    def started_job_registry(self) -> Any:
        from .registry import StartedJobRegistry

        return StartedJobRegistry(self.origin, connection=self.connection, serializer=self.serializer)

    @property
    def failed_job_registry(self) -> Any:
        from .registry import FailedJobRegistry

        return FailedJobRegistry(self.origin, connection=self.connection, serializer=self.serializer)

    @property
    def finished_job_registry(self) -> Any:
        from .registry import FinishedJobRegistry

        return FinishedJobRegistry(self.origin, connection=self.connection, serializer=self.serializer)


async def _await(awaitable: Any) -> Any:
    return await awaitable


def _now() -> datetime:
    from .dates import now

    return now()


def call_string(func_name: str | None, args: Any, kwargs: dict[str, Any], max_length: int | None = None) -> str | None:
    """`func(repr args, k=v sorted)` with each repr cut to max_length chars plus '...', as RQ's description."""
    if func_name is None:
        return None

    def cut(value: Any) -> str:
        text = repr(value)
        return text[:max_length] + '...' if max_length is not None and len(text) > max_length else text

    arguments = [cut(arg) for arg in args] + sorted(f'{k}={cut(v)}' for k, v in kwargs.items())
    return f'{func_name}({", ".join(arguments)})'
