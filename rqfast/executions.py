"""A job's executions, as seen from Redis: RQ's `rq:execution:<job id>:<execution id>` hash and the
`rq:executions:<job id>` sorted set that the claim script writes when a worker starts a job.

rqfast's worker writes both in its claim script (lua/_claim.lua, start_job) and refreshes them in
its heartbeat script; this module reads them back (Execution.fetch, job.get_executions()) and gives
RQ's API for writing them from Python (Execution.create, heartbeat, delete), which queue their
commands into the caller's pipeline, as RQ's do.
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol, cast

from redis import Redis

from . import keys
from .dates import current_timestamp, from_epoch, now
from .defaults import HEARTBEAT_GRACE, rq2_compat
from .job import Job
from .jobspec import parse_job_id
from .registry import BaseRegistry
from .status import WorkerStatus
from .text import as_text


class Execution:
    """One run of a job by a worker."""

    def __init__(self, id: str, job_id: str, connection: Redis, worker_name: str = '') -> None:
        self.id = id
        self.job_id = job_id
        self.connection = connection
        self.worker_name = worker_name
        self.created_at = self.last_heartbeat = now()
        self._job: Job | None = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Execution) and self.id == other.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f'Execution({self.id!r}, job_id={self.job_id!r})'

    @property
    def key(self) -> str:
        return keys.execution_key(self.job_id, self.id)

    @property
    def composite_key(self) -> str:
        """`<job id>:<execution id>`: the started registry's member for this execution."""
        return f'{self.job_id}:{self.id}'

    @property
    def worker_executions_key(self) -> str:
        """RQ 3.0's set of the running executions of this execution's worker."""
        return keys.worker_executions_key(self.worker_name)

    @property
    def job(self) -> Job:
        if self._job is None:
            self._job = Job.fetch(id=self.job_id, connection=self.connection)
        return self._job

    @classmethod
    def fetch(cls, id: str, job_id: str, connection: Redis) -> Execution:
        """The execution as stored; ValueError when its hash is gone."""
        execution = cls(id=id, job_id=job_id, connection=connection)
        execution.refresh()
        return execution

    @classmethod
    def from_composite_key(cls, composite_key: str, connection: Redis) -> Execution:
        job_id = parse_job_id(composite_key)
        return cls(id=composite_key[len(job_id) + 1 :], job_id=job_id, connection=connection)

    def refresh(self) -> None:
        data = self.connection.hgetall(self.key)
        if not data:
            raise ValueError(f'Execution {self.id} not found in Redis')
        self.restore(data)

    def restore(self, data: Any) -> None:
        """Set the fields from the execution hash as read (RQ 3.0's)."""
        self.job_id = as_text(data.get(b'job_id', b'')) or self.job_id
        if data.get(b'created_at'):  # (a hash without it, partly written: the field as it was)
            self.created_at = from_epoch(float(data[b'created_at']))
        if data.get(b'last_heartbeat'):
            self.last_heartbeat = from_epoch(float(data[b'last_heartbeat']))
        self.worker_name = as_text(data.get(b'worker_name', b''))

    def serialize(self) -> dict[str, str | float]:
        """The hash's fields: RQ 3.0's, with job_id (RQ 2.12's without it under RQFAST_COMPAT=2.12)."""
        fields: dict[str, str | float] = {'id': self.id, 'job_id': self.job_id}
        if rq2_compat():
            del fields['job_id']
        fields.update(
            created_at=self.created_at.timestamp(),
            last_heartbeat=self.last_heartbeat.timestamp(),
            worker_name=self.worker_name,
        )
        return fields

    # --- writes, queued into the caller's pipeline (RQ's API); rqfast's worker writes these in its scripts

    @classmethod
    def create(cls, job: Job, ttl: int, pipeline: Any, worker_name: str = '') -> Execution:
        """A new execution of `job`: its hash, its entry in the job's executions and in the started registry,
        and with a worker name in that worker's executions index (which the worker's heartbeat keeps)."""
        execution = cls(id=uuid.uuid4().hex, job_id=job.id, connection=job.connection, worker_name=worker_name)
        execution._job = job
        execution.save(ttl=ttl, pipeline=pipeline)
        ExecutionRegistry(job_id=job.id, connection=job.connection).add(execution=execution, ttl=ttl, pipeline=pipeline)
        started_at = current_timestamp() + ttl
        pipeline.zadd(keys.started_registry_key(job.origin), {execution.composite_key: started_at})
        if worker_name:
            pipeline.sadd(execution.worker_executions_key, execution.composite_key)
            pipeline.expire(execution.worker_executions_key, ttl + HEARTBEAT_GRACE)
        return execution

    def save(self, ttl: int, pipeline: Any = None) -> None:
        target: Any = pipeline if pipeline is not None else self.connection
        target.hset(self.key, mapping=self.serialize())
        target.expire(self.key, ttl)

    def delete(self, job: Job, pipeline: Any) -> None:
        pipeline.delete(self.key)
        pipeline.zrem(keys.started_registry_key(job.origin), self.composite_key)
        ExecutionRegistry(job_id=self.job_id, connection=self.connection).remove(execution=self, pipeline=pipeline)
        if self.worker_name:
            pipeline.srem(self.worker_executions_key, self.composite_key)

    def heartbeat(self, started_job_registry: BaseRegistry, ttl: int, pipeline: Any) -> None:
        """Keep the execution (and its started registry entry) alive for ttl more seconds."""
        self.last_heartbeat = now()
        pipeline.hset(self.key, 'last_heartbeat', self.last_heartbeat.timestamp())
        pipeline.expire(self.key, ttl)
        pipeline.zadd(started_job_registry.key, {self.composite_key: current_timestamp() + ttl}, xx=True)
        ExecutionRegistry(job_id=self.job_id, connection=self.connection).add(
            execution=self, ttl=ttl, pipeline=pipeline, xx=True
        )


class ExecutionRegistry(BaseRegistry):
    """A job's executions (`rq:executions:<job id>`), scored by when each stops being alive."""

    key_template = keys.format_template(keys.executions_key)

    def __init__(self, job_id: str, connection: Redis) -> None:  # a registry of a job, not of a queue
        super().__init__(job_id, connection=connection)
        self.job_id = job_id

    def cleanup(self, timestamp: float | None = None, exception_handlers: list[Any] | None = None) -> None:
        """Drop the executions that stopped heartbeating before `timestamp` (default: now)."""
        score = timestamp if timestamp is not None else current_timestamp()
        self.connection.zremrangebyscore(self.key, 0, score)

    def add(self, execution: Execution, ttl: int, pipeline: Any, xx: bool = False) -> None:  # type: ignore[override]
        """The execution alive for `ttl` more seconds (with `xx`, only if it is still listed: never re-added)."""
        pipeline.zadd(self.key, {execution.id: current_timestamp() + ttl + HEARTBEAT_GRACE}, xx=xx)
        pipeline.expire(self.key, ttl + HEARTBEAT_GRACE)

    def remove(self, execution: Execution, pipeline: Any) -> int:  # type: ignore[override]
        return cast(int, pipeline.zrem(self.key, execution.id))

    def get_execution_ids(self, start: int = 0, end: int = -1) -> list[str]:
        self.cleanup()
        return [as_text(member) for member in self.connection.zrange(self.key, start, end)]

    def get_executions(self, start: int = 0, end: int = -1) -> list[Execution]:
        ids = self.get_execution_ids(start, end)
        return [Execution.fetch(id=id, job_id=self.job_id, connection=self.connection) for id in ids]

    def delete(self, job: Job, pipeline: Any) -> None:
        for execution in self.get_executions():
            execution.delete(job=job, pipeline=pipeline)
        pipeline.delete(self.key)


def heartbeat_ttl(timeout: int | None, monitoring_interval: int) -> int:
    """How long a started job stays alive without a heartbeat (the claim script's rule, as RQ's)."""
    if timeout and 0 < timeout < monitoring_interval:
        return int(timeout) + HEARTBEAT_GRACE
    return monitoring_interval + HEARTBEAT_GRACE


class _PreparingWorker(Protocol):
    """What prepare_execution() reads and sets of a worker (rqfast.worker.BaseWorker has it)."""

    job_monitoring_interval: int
    execution: Any

    @property
    def connection(self) -> Redis: ...

    @property
    def name(self) -> str: ...

    @property
    def key(self) -> str: ...


def prepare_execution(worker: _PreparingWorker, job: Job) -> Execution:
    """RQ's step before a job runs, for code that drives a worker by hand: a new execution, the worker busy.

    rqfast's worker does this in its claim script, not through here.
    """
    ttl = heartbeat_ttl(job.timeout, worker.job_monitoring_interval)
    with worker.connection.pipeline() as pipeline:
        execution = Execution.create(job, ttl, pipeline=pipeline, worker_name=worker.name)
        pipeline.hset(worker.key, 'state', WorkerStatus.BUSY.value)
        pipeline.execute()
    worker.execution = execution  # added to worker.executions
    return execution
