"""A job as a value: its stored fields, its call and its options; everything about a job but Redis.

`JobSpec` is the in-memory half of Job (job.py adds the reads and writes): identity and keys, the
call (`data` <-> func, args, kwargs, serialized lazily), callbacks, dependencies and retries as
given. Retry, Callback (joboptions.py) and Dependency are the options `create()` takes; `from
rqfast.job import ...` re-exports them all.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from . import keys
from .cluster import KeyspaceError, check_connection
from .dates import now
from .defaults import CALLBACK_TIMEOUT
from .exceptions import DeserializationError
from .imports import function_reference, import_attribute
from .jobhash import JobRecord, webhook_module
from .joboptions import Callback, Retry
from .rq_interop import is_rq_job
from .serializers import resolve_serializer
from .status import JobStatus
from .timeouts import parse_timeout

if TYPE_CHECKING:
    from redis import Redis

JOB_ID_PATTERN = re.compile(r'[A-Za-z0-9_-]+')


def validate_job_id(job_id: Any) -> None:
    if not isinstance(job_id, str):
        raise TypeError(f'Job ID must be a string, not {type(job_id)}')
    if not JOB_ID_PATTERN.fullmatch(job_id):
        raise ValueError('Job ID must only contain letters, numbers, underscores and dashes')


def parse_job_id(job_or_execution_id: str) -> str:
    """A job id from a job id or a started-registry member `<id>:<execution id>`."""
    return job_or_execution_id.split(':')[0]


def call_string(func_name: str | None, args: Any, kwargs: dict[str, Any], max_length: int | None = None) -> str | None:
    """`func(repr args, k=v sorted)` with each repr cut to max_length chars plus '...', as RQ's description."""
    if func_name is None:
        return None

    def cut(value: Any) -> str:
        text = repr(value)
        return text[:max_length] + '...' if max_length is not None and len(text) > max_length else text

    arguments = [cut(arg) for arg in args] + sorted(f'{k}={cut(v)}' for k, v in kwargs.items())
    return f'{func_name}({", ".join(arguments)})'


class Dependency:
    def __init__(self, jobs: Any, allow_failure: bool = False, enqueue_at_front: bool = False):
        dependencies = _as_list(jobs)
        if not all(isinstance(job, JobSpec | str) for job in dependencies if job):
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


if TYPE_CHECKING:  # (at run time the string bound would be compiled into a ForwardRef in every spawned child)
    _J = TypeVar('_J', bound='JobSpec')
UNEVALUATED: Any = object()  # RQ's name: a part of the call not built (or not deserialized) yet


class JobSpec(JobRecord):
    """A job's fields and call in memory; Job (rqfast.job) reads and writes them in Redis."""

    # The call is held as `_data` (serialized) and/or the four parts, each built from the other on demand.
    _data: Any = UNEVALUATED
    _func_name: Any = UNEVALUATED
    _instance: Any = UNEVALUATED
    _args: Any = UNEVALUATED
    _kwargs: Any = UNEVALUATED

    def __init__(self, id: str | None = None, connection: Redis | None = None, serializer: Any = None):
        """Every other stored field starts at JobRecord's class-level default."""
        if not connection:
            raise TypeError("Job.__init__() missing 1 required argument: 'connection'")
        if id:
            validate_job_id(id)
        check_connection(connection)  # a Redis Cluster needs a hash-tagged RQ_KEY_PREFIX (rqfast.cluster)
        self.connection = connection
        self._id = id
        self.serializer = resolve_serializer(serializer)
        self.created_at = now()
        self.webhooks = []
        self.meta = {}
        self._dependency_ids = []

    @classmethod
    def create(
        cls: type[_J],
        func: Any,
        args: list[Any] | tuple[Any, ...] | None = None,
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
    ) -> _J:
        """A new job in memory: validated, not yet serialized nor stored."""
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
            job.webhooks = webhook_module().checked_webhooks(webhooks)
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
        return job  # `data` is serialized when first read (at the latest, when the job is stored), as in RQ

    def process_dependencies(self, depends_on: Any) -> None:
        dependency_list: list[JobSpec | str] = []
        for item in _as_list(depends_on):
            if isinstance(item, Dependency):
                self.enqueue_at_front = self.enqueue_at_front or item.enqueue_at_front
                self.allow_dependency_failures = self.allow_dependency_failures or item.allow_failure
                dependency_list.extend(item.dependencies)
            elif isinstance(item, JobSpec | str):
                dependency_list.append(item)
            else:
                raise ValueError(f'depends_on items must be Job objects or string job IDs, got {type(item).__name__}')
        if keys.SHARDED:  # a dependency is looked up, and its dependents kept, in the job's own keyspace
            for dep in dependency_list:
                if isinstance(dep, JobSpec) and dep.origin and self.origin and dep.origin != self.origin:
                    raise KeyspaceError(
                        f'RQFAST_SHARDING=queue: job {self.id} of queue {self.origin!r} cannot depend on job '
                        f'{dep.id} of queue {dep.origin!r}: each queue is a keyspace of its own, and a dependency '
                        'across two is not supported'
                    )
        self._dependency_ids = [dep.id if isinstance(dep, JobSpec) else dep for dep in dependency_list]

    # --- identity and keys

    @property
    def id(self) -> str:
        if self._id is None:
            self._id = keys.new_job_id()
        return self._id

    @id.setter
    def id(self, value: str) -> None:
        validate_job_id(value)
        self._id = value

    def get_id(self) -> str:
        return self.id

    @property
    def has_id(self) -> bool:
        """Whether the job has an id yet: given, or made when `id` was first read."""
        return self._id is not None

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
        """The same id, of this class or of rq's own Job (rq installed beside rqfast: django-rq's job pages
        compare the two); rq's Job compares only with its own class, so only this side says so."""
        return (isinstance(other, self.__class__) or is_rq_job(other)) and self.id == getattr(other, 'id', None)

    def __hash__(self) -> int:
        return hash(self.id)

    # --- in memory only: what the queue, the worker and the engine record before or after a script call

    def set_local_status(self, status: JobStatus) -> None:
        """The status in memory only; set_status() writes it to Redis as well."""
        self._status = status

    def set_local_result(self, value: Any) -> None:
        """The return value in memory, saved with the hash as RQ's deprecated `result` field."""
        self._result = value

    def set_local_exc_info(self, exc_string: str | None) -> None:
        """The exception text in memory, saved with the hash as its `exc_info` field."""
        self._exc_info = exc_string

    @property
    def depends_on_ids(self) -> list[str]:
        """The ids the job was created to wait for (its `dependency_ids` field); dependency_ids asks Redis."""
        return self._dependency_ids

    # --- the call: data <-> (func_name, instance, args, kwargs)

    def _deserialize_data(self) -> None:
        try:
            self._func_name, self._instance, self._args, self._kwargs = self.serializer.loads(self.data)
        except Exception as exc:
            raise DeserializationError(f'Job {self._id}: cannot deserialize its data: {exc!r}') from exc

    @property
    def data(self) -> bytes:
        if self._data is UNEVALUATED:
            if self._func_name is UNEVALUATED:
                raise ValueError('Cannot build the job data')
            self._instance = None if self._instance is UNEVALUATED else self._instance
            self._args = () if self._args is UNEVALUATED else self._args
            self._kwargs = {} if self._kwargs is UNEVALUATED else self._kwargs
            self._data = self.serializer.dumps((self._func_name, self._instance, self._args, self._kwargs))
        data: bytes = self._data
        return data

    @data.setter
    def data(self, value: bytes) -> None:
        self._data = value
        self._func_name = self._instance = self._args = self._kwargs = UNEVALUATED

    def _call_part(self, name: str) -> Any:
        if getattr(self, name) is UNEVALUATED:
            self._deserialize_data()
        return getattr(self, name)

    def _set_call_part(self, name: str, value: Any) -> None:
        if self._func_name is UNEVALUATED and self._data is not UNEVALUATED:
            self._deserialize_data()
        setattr(self, name, value)
        self._data = UNEVALUATED

    func_name = property(
        lambda self: self._call_part('_func_name'), lambda self, v: self._set_call_part('_func_name', v)
    )
    instance = property(lambda self: self._call_part('_instance'), lambda self, v: self._set_call_part('_instance', v))
    args = property(lambda self: self._call_part('_args'), lambda self, v: self._set_call_part('_args', v))
    kwargs = property(lambda self: self._call_part('_kwargs'), lambda self, v: self._set_call_part('_kwargs', v))

    # Set by a worker with a job policy (rqfast.security): called with each name before it is imported.
    import_guard: Any = None

    @property
    def func(self) -> Any:
        func_name = self.func_name
        if func_name is None:
            return None
        if self.instance:
            if self.import_guard is not None:
                self.import_guard(func_name, self.instance)
            return getattr(self.instance, func_name)
        return self._import(func_name)

    def _import(self, name: str) -> Any:
        if self.import_guard is None:
            return import_attribute(name)
        self.import_guard(name)
        found = import_attribute(name)
        self.import_guard(name, resolved=found)
        return found

    def get_call_string(self) -> str | None:
        return call_string(self.func_name, self.args, self.kwargs, max_length=75)

    # --- callbacks: each imported on first use and kept in RQ's `_<kind>_callback` (UNEVALUATED until then)

    _success_callback = _failure_callback = _stopped_callback = UNEVALUATED

    def _callback(self, kind: str) -> Any:
        if getattr(self, f'_{kind}_callback') is UNEVALUATED:
            name = getattr(self, f'_{kind}_callback_name')
            setattr(self, f'_{kind}_callback', self._import(name) if name else None)
        return getattr(self, f'_{kind}_callback')

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

    # --- retries and TTLs

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

    def get_ttl(self, default_ttl: int | None = None) -> int | None:
        return default_ttl if self.ttl is None else self.ttl

    def get_result_ttl(self, default_ttl: int) -> int:
        return default_ttl if self.result_ttl is None else self.result_ttl
