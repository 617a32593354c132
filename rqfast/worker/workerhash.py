"""The worker hash (`rq:worker:<name>`) and the worker sets: what jobhash.py is for the job hash. The only
module that knows the hash's fields. Birth, death and heartbeats are one script call each (register_worker.lua,
heartbeat.lua), which also keep `rq:workers` and `rq:workers:<queue>` in step; reading workers back is plain
single commands, as RQ's `Worker.all()` and `find_by_key()` do.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import redis
from redis import Redis

from .. import engine, keys, workerscripts
from ..cluster import keyspace_required
from ..dates import now, utcformat, utcparse
from ..defaults import JOB_HEARTBEAT_GRACE, rq2_compat
from ..job import Job
from ..status import WorkerStatus
from ..text import as_text
from .declared import WorkerAttributes

DEATH_TTL = 60  # seconds a dead worker's hash stays readable, as in RQ


@dataclass
class WorkerRecord:
    """A worker as its hash stores it."""

    name: str
    queues: list[str] = field(default_factory=list)
    state: WorkerStatus = WorkerStatus.STARTED
    birth: datetime | None = None
    last_heartbeat: datetime | None = None
    pid: int = 0
    hostname: str = ''
    ip_address: str = ''
    version: str = ''
    python_version: str = ''
    successful_job_count: int = 0
    failed_job_count: int = 0
    total_working_time: float = 0.0
    current_job_working_time: float = 0.0
    current_job: str | None = None


# --- writes


def client_address(connection: Redis, name: str) -> str:
    """Name this connection after the worker and return its address as Redis sees it (RQ's ip_address);
    'unknown', with RQ's warning, where the server has no CLIENT SETNAME, or neither CLIENT INFO nor CLIENT LIST."""
    try:
        connection.client_setname(name)
    except redis.ResponseError:
        warnings.warn('CLIENT SETNAME command not supported, setting ip_address to unknown', Warning, stacklevel=3)
        return 'unknown'
    if not rq2_compat():  # RQ 3.0 asks for this connection alone (Redis 6.2+); RQ 2.12 lists every client
        try:
            return str(connection.client_info()['addr'])
        except redis.ResponseError:  # an older server: find it in the list
            pass
    try:
        addresses = [client['addr'] for client in connection.client_list() if client.get('name') == name]
    except redis.ResponseError:
        addresses = []
    if not addresses:
        warnings.warn('CLIENT LIST command not supported, setting ip_address to unknown', Warning, stacklevel=3)
        return 'unknown'
    return str(addresses[0])


def write_birth(
    connection: Redis, name: str, ttl: int, moment: datetime, queues: list[str], about: dict[str, Any]
) -> None:
    """Create the hash (birth, queues, state and `about`: pid, hostname...); ValueError if the name is taken."""
    fields = {
        'birth': utcformat(moment),
        'last_heartbeat': utcformat(moment),
        'queues': ','.join(queues),
        **about,
        'state': WorkerStatus.STARTED.value,
    }
    if not workerscripts.register_worker(connection, name, 'birth', ttl, utcformat(moment), queues, fields):
        raise ValueError(f'There exists an active worker named {name!r} already')


def write_death(connection: Redis, name: str, moment: datetime, queues: list[str]) -> None:
    workerscripts.register_worker(connection, name, 'death', DEATH_TTL, utcformat(moment), queues)


def write_heartbeat(
    connection: Redis,
    name: str,
    ttl: int,
    moment: datetime,
    job_ttl: int,
    working_time: str,
    in_flight: list[tuple[str, str, str]],
    grace: int = JOB_HEARTBEAT_GRACE,
) -> tuple[bool, list[str]]:
    """Refresh the hash and every job in flight (id, queue, execution id), fenced on each execution.

    Returns (whether rq:suspended is set, ids of the jobs in flight this worker no longer owns).
    """
    return workerscripts.heartbeat(
        connection, name, ttl, engine._times(moment), job_ttl, working_time, in_flight, grace
    )


def write_state(connection: Redis, name: str, state: WorkerStatus) -> None:
    connection.hset(keys.worker_key(name), 'state', state.value)


def write_shutdown_request(connection: Redis, name: str, moment: datetime) -> None:
    connection.hset(keys.worker_key(name), 'shutdown_requested_date', utcformat(moment))


def write_current_job(connection: Any, name: str, job_id: str | None) -> None:
    """Set (or, with None, clear) the hash's current_job; `connection` may be a pipeline."""
    if job_id is None:
        connection.hdel(keys.worker_key(name), 'current_job')
    else:
        connection.hset(keys.worker_key(name), 'current_job', job_id)


# --- reads


def read_current_job_id(connection: Redis, name: str) -> str | None:
    value = connection.hget(keys.worker_key(name), 'current_job')
    return as_text(value) if value else None


def read_date(connection: Redis, name: str, field: str) -> datetime | None:
    value = connection.hget(keys.worker_key(name), field)
    return utcparse(as_text(value)) if value else None


def worker_keys(connection: Redis, queue: str | None = None) -> list[str]:
    """Keys of the live workers, of one queue or of all."""
    key = keys.workers_by_queue_key(queue) if queue else keys.WORKERS
    return [as_text(member) for member in connection.smembers(key)]


def read(connection: Redis, worker_key: str, forget_if_gone: bool = True) -> WorkerRecord | None:
    """The worker stored at `worker_key`; None (and, unless told not to, the key dropped from rq:workers)
    when its hash is gone."""
    if not worker_key.startswith(keys.WORKER_PREFIX):
        raise ValueError(f'Not a valid RQ worker key: {worker_key}')
    raw = connection.hgetall(worker_key)
    if not raw:
        if forget_if_gone:
            connection.srem(keys.WORKERS, worker_key)
        return None
    return parse(worker_key, raw)


def parse(worker_key: str, raw: dict[Any, Any]) -> WorkerRecord:
    """The worker from its hash as HGETALL returns it (read's, and the metrics collector's pipelined reads)."""
    fields = {as_text(k): as_text(v) for k, v in raw.items()}
    return WorkerRecord(
        name=worker_key[len(keys.WORKER_PREFIX) :],
        queues=[q for q in fields.get('queues', '').split(',') if q],
        state=WorkerStatus(fields.get('state', 'started')),
        birth=utcparse(fields['birth']) if fields.get('birth') else None,
        last_heartbeat=utcparse(fields['last_heartbeat']) if fields.get('last_heartbeat') else None,
        pid=int(fields.get('pid') or 0),
        hostname=fields.get('hostname', ''),
        ip_address=fields.get('ip_address', ''),
        version=fields.get('version', ''),
        python_version=fields.get('python_version', ''),
        successful_job_count=int(fields.get('successful_job_count') or 0),
        failed_job_count=int(fields.get('failed_job_count') or 0),
        total_working_time=float(fields.get('total_working_time') or 0),
        current_job_working_time=float(fields.get('current_job_working_time') or 0),
        current_job=fields.get('current_job') or None,
    )


class WorkerHash:
    """What the worker writes about itself: its hash's birth, death, heartbeats and state, one script call
    or command each, and when it last did (birth_date, last_heartbeat). A collaborator the worker holds
    (BaseWorker._hash): the worker's register_birth, register_death, heartbeat and set_state, RQ's
    extension points, call it with what they read from the worker.
    """

    def __init__(self, connection: Redis, name: str, log: logging.Logger) -> None:
        self.connection = connection
        self.name = name
        self.log = log
        self.birth_date: datetime | None = None
        self.last_heartbeat: datetime | None = None

    def birth(self, ttl: int, queues: list[str], about: dict[str, Any]) -> None:
        self.birth_date = self.last_heartbeat = now()
        write_birth(self.connection, self.name, ttl, self.birth_date, queues, about)

    def death(self, queues: list[str]) -> None:
        write_death(self.connection, self.name, now(), queues)

    def beat(
        self, in_flight: list[engine.Claim], started: float | None, worker_ttl: int, monitoring: int, grace: int
    ) -> bool:
        """Refresh the hash and every job in flight (`started`: the monotonic start of the one in hand);
        True when rq:suspended is set. A job whose execution ended elsewhere is logged."""
        moment = self.last_heartbeat = now()
        jobs = [(c.job_id or '', c.queue or '', c.execution_id) for c in in_flight]
        working = repr(time.monotonic() - started) if jobs and started is not None else ''
        ttl = worker_ttl + 60 if not jobs else monitoring + 60
        suspended, lost = write_heartbeat(
            self.connection, self.name, ttl, moment, monitoring + grace, working, jobs, grace
        )
        for job_id in lost:
            self.log.warning(
                "Worker %s: job %s is no longer this worker's (its execution ended: recovered or claimed "
                'again elsewhere); its outcome will not be recorded',
                self.name,
                job_id,
            )
        return suspended

    def beat_into(self, target: Any, ttl: int) -> None:
        """RQ's heartbeat: the hash and its executions index only, kept `ttl` seconds (`target`: a pipeline
        or the connection)."""
        self.last_heartbeat = now()
        key = keys.worker_key(self.name)
        target.hset(key, 'last_heartbeat', utcformat(self.last_heartbeat))
        target.expire(key, ttl)
        target.expire(keys.worker_executions_key(self.name), ttl)

    def write_state(self, state: WorkerStatus) -> None:
        write_state(self.connection, self.name, state)


class WorkerReads(WorkerAttributes):
    """RQ's reading-back API, as the worker's own (Worker.all(), find_by_key(), count(), refresh(), the
    current job...): no state of its own; what it reads back lands in the worker's RQ attributes."""

    _job_id: str | None = None  # RQ's: the current job when the hash was last read
    _hash: WorkerHash  # BaseWorker's: what it writes about itself, and when

    @property
    def birth_date(self) -> datetime | None:
        return self._hash.birth_date

    @birth_date.setter
    def birth_date(self, moment: datetime | None) -> None:
        self._hash.birth_date = moment

    @property
    def last_heartbeat(self) -> datetime | None:
        return self._hash.last_heartbeat

    @last_heartbeat.setter
    def last_heartbeat(self, moment: datetime | None) -> None:
        self._hash.last_heartbeat = moment

    def get_current_job_id(self, pipeline: Any = None) -> str | None:
        """The job of one of the worker's executions (RQ 3.0's), else the hash's current_job (RQ 2.12's,
        which rqfast's claim script writes too), else the first of its executions index (cached)."""
        if pipeline is not None:
            return read_current_job_id(pipeline, self.name)
        local = self._local_execution()
        if local is not None:
            return local.job_id
        job_id = read_current_job_id(self.connection, self.name)
        if job_id:
            return job_id
        current = self.get_current_executions()
        return current[0].job_id if current else None

    def set_current_job_id(self, job_id: str | None = None, pipeline: Any = None) -> None:
        """RQ's: the claim script sets current_job in rqfast's loop; this is for code that drives a worker by hand."""
        write_current_job(pipeline if pipeline is not None else self.connection, self.name, job_id)

    def get_current_job(self) -> Job | None:
        """The job of get_current_job_id(): the execution's own instance when it has one (RQ 3.0's)."""
        local = self._local_execution()
        if local is not None and local._job is not None:
            return local._job
        job_id = self.get_current_job_id()
        if not job_id:
            return None
        job: Job = self.job_class.fetch(job_id, self.connection, self.serializer)
        if local is not None and local.job_id == job_id:
            local._job = job
        return job

    @property
    def death_date(self) -> datetime | None:
        """When the worker registered its death (the hash keeps it a minute), None while alive."""
        return read_date(self.connection, self.name, 'death')

    @property
    def shutdown_requested_date(self) -> datetime | None:
        return read_date(self.connection, self.name, 'shutdown_requested_date')

    def _apply(self, record: WorkerRecord) -> None:
        """A record read back (refresh(), find_by_key()), into the worker's RQ attributes."""
        self._state, self._job_id = record.state, record.current_job
        self.birth_date, self.last_heartbeat = record.birth, record.last_heartbeat
        self.pid, self.hostname = record.pid, record.hostname
        self.ip_address = record.ip_address or self.ip_address
        self.version = record.version or self.version
        self.python_version = record.python_version or self.python_version
        self.successful_job_count = record.successful_job_count
        self.failed_job_count = record.failed_job_count
        self.total_working_time = record.total_working_time
        self.current_job_working_time = record.current_job_working_time

    def refresh(self) -> None:
        """Read the worker hash back into this object (RQ's); nothing changes when the hash is gone."""
        record = read(self.connection, keys.worker_key(self.name), forget_if_gone=False)
        if record is not None:
            self._apply(record)
            if record.queues:
                self.queues = [
                    self.queue_class(
                        name, connection=self.connection, job_class=self.job_class, serializer=self.serializer
                    )
                    for name in record.queues
                ]

    @classmethod
    def all_keys(cls, connection: Redis | None = None, queue: Any = None) -> list[str]:
        """Keys of the live workers, of `queue` (on its connection) or of all."""
        if queue is not None:
            connection = queue.connection
        if connection is None:
            raise ValueError('"Queue" or "connection" argument is required')
        if queue is None:
            keyspace_required('Worker.all()', 'Worker.all(queue=queue), the workers of one queue')
            return worker_keys(connection, None)
        with keys.within(queue.name):
            return worker_keys(connection, queue.name)

    @classmethod
    def count(cls, connection: Redis | None = None, queue: Any = None) -> int:
        return len(cls.all_keys(connection, queue))

    @classmethod
    def all(
        cls,
        connection: Redis | None = None,
        job_class: Any = None,
        queue_class: Any = None,
        queue: Any = None,
        serializer: Any = None,
    ) -> list[Any]:
        """The live workers (of `queue`, on its connection), as instances of this class (not started)."""
        if queue is not None:
            connection = queue.connection
        if connection is None:
            raise ValueError('"Queue" or "connection" argument is required')
        with keys.within(queue.name if queue is not None else None):  # (sharded by queue: the queue's keyspace)
            found = [
                cls.find_by_key(key, connection, job_class=job_class, queue_class=queue_class, serializer=serializer)
                for key in cls.all_keys(connection, queue)
            ]
        return [worker for worker in found if worker is not None]

    @classmethod
    def find_by_key(
        cls,
        worker_key: str,
        connection: Redis,
        job_class: Any = None,
        queue_class: Any = None,
        serializer: Any = None,
    ) -> Any:
        """The worker stored at `worker_key`, as an instance of this class (not started); None if gone."""
        record = read(connection, worker_key)
        if record is None:
            return None
        worker = cls(  # type: ignore[call-arg]
            record.queues,
            name=record.name,
            connection=connection,
            job_class=job_class,
            queue_class=queue_class,
            serializer=serializer,
            prepare_for_work=False,
        )
        worker._apply(record)
        return worker
