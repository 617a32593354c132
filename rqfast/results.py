"""Result: one entry of a job's `rq:results:<id>` stream (section 3 of the layout)."""

from __future__ import annotations

import zlib
from base64 import b64decode, b64encode
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any

from . import keys
from .dates import from_epoch, now
from .defaults import RESULTS_MAXLEN, RQ_KEY_PREFIX, UNSERIALIZABLE_RETURN_VALUE_PAYLOAD
from .serializers import resolve_serializer
from .text import as_text

if TYPE_CHECKING:  # a spawned horse imports this module but not redis-py
    from redis import Redis

    from .job import Job


def get_key(job_id: str) -> str:
    """`rq:results:<job id>`: the stream of a job's results (RQ's rq.results.get_key).

    Under this module's RQ_KEY_PREFIX, read at each call as RQ 3.0 does (a test may patch it)."""
    return keys.results_key(job_id, RQ_KEY_PREFIX)


class Result:
    class Type(Enum):
        SUCCESSFUL = 1
        FAILED = 2
        STOPPED = 3
        RETRIED = 4
        MAX_RETRIES_EXCEEDED = 5

    def __init__(
        self,
        job_id: str,
        type: Type,
        connection: Redis,
        id: str | None = None,
        created_at: datetime | None = None,
        return_value: Any = None,
        exc_string: str | None = None,
        worker_name: str = '',
        serializer: Any = None,
        execution_id: str | None = None,
        execution_started_at: datetime | None = None,
        execution_ended_at: datetime | None = None,
        output: str | None = None,
    ):
        self.job_id = job_id
        self.type = type
        self.connection = connection
        self.id = id
        self.created_at = created_at or now()
        self.return_value = return_value
        self.exc_string = exc_string
        self.worker_name = worker_name
        self.serializer = resolve_serializer(serializer)
        self.execution_id = execution_id
        self.execution_started_at = execution_started_at
        self.execution_ended_at = execution_ended_at
        self.output = output  # what the job printed (enqueued with capture_output=True); rqfast's own field

    def __repr__(self) -> str:
        return f'Result(id={self.id}, type={self.Type(self.type).name})'

    def __eq__(self, other: object) -> bool:
        return getattr(other, 'id', None) == self.id

    def __bool__(self) -> bool:
        return bool(self.id)

    @classmethod
    def get_key(cls, job_id: str) -> str:
        return get_key(job_id)

    # --- writing one by hand (the worker's finish script writes the results of the jobs it runs)

    @classmethod
    def create(
        cls,
        job: Job,
        type: Type,
        ttl: int | None,
        return_value: Any = None,
        exc_string: str | None = None,
        worker_name: str = '',
        pipeline: Any = None,
        execution_id: str | None = None,
        execution_started_at: datetime | None = None,
        execution_ended_at: datetime | None = None,
    ) -> Result:
        """A result of `job`, appended to its stream (ttl: the stream's; -1 keeps it, None leaves it)."""
        result = cls(
            job.id,
            type,
            connection=job.connection,
            return_value=return_value,
            exc_string=exc_string,
            worker_name=worker_name,
            serializer=job.serializer,
            execution_id=execution_id,
            execution_started_at=execution_started_at,
            execution_ended_at=execution_ended_at,
        )
        result.save(ttl=ttl, pipeline=pipeline)
        return result

    @classmethod
    def create_failure(
        cls,
        job: Job,
        ttl: int | None,
        exc_string: str | None,
        worker_name: str = '',
        pipeline: Any = None,
        execution_id: str | None = None,
        execution_started_at: datetime | None = None,
        execution_ended_at: datetime | None = None,
    ) -> Result:
        return cls.create(
            job,
            cls.Type.FAILED,
            ttl,
            exc_string=exc_string,
            worker_name=worker_name,
            pipeline=pipeline,
            execution_id=execution_id,
            execution_started_at=execution_started_at,
            execution_ended_at=execution_ended_at,
        )

    @classmethod
    def create_retried(
        cls,
        job: Job,
        ttl: int | None,
        return_value: Any,
        worker_name: str,
        execution_id: str,
        execution_started_at: datetime,
        execution_ended_at: datetime,
        pipeline: Any = None,
    ) -> Result:
        return cls.create(
            job,
            cls.Type.RETRIED,
            ttl,
            return_value=return_value,
            worker_name=worker_name,
            pipeline=pipeline,
            execution_id=execution_id,
            execution_started_at=execution_started_at,
            execution_ended_at=execution_ended_at,
        )

    @classmethod
    def create_max_retries_exceeded(
        cls,
        job: Job,
        ttl: int | None,
        return_value: Any,
        worker_name: str,
        execution_id: str,
        execution_started_at: datetime,
        execution_ended_at: datetime,
        pipeline: Any = None,
    ) -> Result:
        return cls.create(
            job,
            cls.Type.MAX_RETRIES_EXCEEDED,
            ttl,
            return_value=return_value,
            worker_name=worker_name,
            pipeline=pipeline,
            execution_id=execution_id,
            execution_started_at=execution_started_at,
            execution_ended_at=execution_ended_at,
        )

    def save(self, ttl: int | None, pipeline: Any = None) -> str | None:
        """XADD to the job's stream (capped as the worker caps it) and set its TTL; the entry id (None
        when queued on the caller's `pipeline`)."""
        key = get_key(self.job_id)
        target = pipeline if pipeline is not None else self.connection.pipeline()
        fields: Any = self.serialize()  # redis-py's stubs want a narrower dict type
        target.xadd(key, fields, maxlen=RESULTS_MAXLEN)
        if ttl == -1:
            target.persist(key)
        elif ttl is not None:
            target.expire(key, ttl)
        if pipeline is None:
            self.id = as_text(target.execute()[0])
        return self.id

    def serialize(self) -> dict[str, Any]:
        """The stream entry's fields, as RQ writes them."""
        data: dict[str, Any] = {'type': self.type.value, 'worker_name': self.worker_name}
        if self.exc_string is not None:
            data['exc_string'] = encode_exc_string(self.exc_string)
        return_value = encode_return_value(self.serializer, self.return_value)
        if return_value is not None:
            data['return_value'] = return_value
        if self.execution_id:
            data['execution_id'] = self.execution_id
        if self.execution_started_at:
            data['execution_started_at'] = repr(self.execution_started_at.timestamp())
        if self.execution_ended_at:
            data['execution_ended_at'] = repr(self.execution_ended_at.timestamp())
        if self.output is not None:
            data['output'] = self.output
        return data

    # --- reading

    @classmethod
    def all(cls, job: Job, serializer: Any = None) -> list[Result]:
        entries: Any = job.connection.xrevrange(get_key(job.id), '+', '-')
        return [cls.restore(job.id, as_text(rid), payload, job.connection, serializer) for rid, payload in entries]

    @classmethod
    def count(cls, job: Job) -> int:
        return int(job.connection.xlen(get_key(job.id)))

    @classmethod
    def delete_all(cls, job: Job) -> None:
        job.connection.delete(get_key(job.id))

    @classmethod
    def fetch(cls, job: Job, serializer: Any = None) -> Result | None:
        """RQ 2.12's Result.fetch answers None whatever the job (see fetch_latest and all); so does this."""
        return None

    @classmethod
    def fetch_latest(cls, job: Job, serializer: Any = None, timeout: int = 0) -> Result | None:
        key = get_key(job.id)
        response: Any  # redis-py's stubs type stream replies loosely
        if timeout:
            response = job.connection.xread({key: '0-0'}, block=timeout * 1000)
            if not response:
                return None
            result_id, payload = response[0][1][-1]
        else:
            response = job.connection.xrevrange(key, '+', '-', count=1)
            if not response:
                return None
            result_id, payload = response[0]
        return cls.restore(job.id, as_text(result_id), payload, job.connection, serializer)

    @classmethod
    def restore(
        cls, job_id: str, result_id: str, payload: dict[Any, Any], connection: Redis, serializer: Any = None
    ) -> Result:
        fields = {as_text(k): v for k, v in payload.items()}
        serializer = resolve_serializer(serializer)
        return_value = fields.get('return_value')
        if return_value is not None:
            return_value = serializer.loads(b64decode(as_text(return_value)))
        exc_string = fields.get('exc_string')
        if exc_string:
            exc_string = zlib.decompress(b64decode(exc_string)).decode()
        started, ended = fields.get('execution_started_at'), fields.get('execution_ended_at')
        return cls(
            job_id,
            cls.Type(int(fields['type'])),
            connection=connection,
            id=result_id,
            created_at=from_epoch(int(result_id.split('-')[0]) / 1000),
            return_value=return_value,
            exc_string=exc_string or None,
            worker_name=as_text(fields['worker_name']) if fields.get('worker_name') else '',
            serializer=serializer,
            execution_id=as_text(fields['execution_id']) if fields.get('execution_id') else None,
            execution_started_at=from_epoch(float(started)) if started else None,
            execution_ended_at=from_epoch(float(ended)) if ended else None,
            output=as_text(fields['output']) if 'output' in fields else None,
        )


def encode_return_value(serializer: Any, value: Any) -> str | None:
    """base64 of the serialized value; None for None (RQ leaves the field out)."""
    if value is None:
        return None
    try:
        serialized = serializer.dumps(value)
    except Exception:
        serialized = serializer.dumps(UNSERIALIZABLE_RETURN_VALUE_PAYLOAD)
    return b64encode(serialized).decode()


def encode_exc_string(exc_string: str) -> str:
    return b64encode(zlib.compress(exc_string.encode())).decode()
