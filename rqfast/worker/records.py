"""The worker hash (`rq:worker:<name>`) and the worker sets: what jobhash.py is for the job hash.

The only module that knows the hash's fields. Birth, death and heartbeats are one script call each
(register_worker.lua, heartbeat.lua), which also keep `rq:workers` and `rq:workers:<queue>` in step;
reading workers back is plain single commands, as RQ's `Worker.all()` and `find_by_key()` do.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import redis
from redis import Redis

from .. import engine, keys, scripts
from ..dates import now, utcformat, utcparse
from ..executions import Execution, heartbeat_ttl, prepare_execution
from ..job import Job
from ..status import WorkerStatus
from ..text import as_text

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
    successful_job_count: int = 0
    failed_job_count: int = 0
    total_working_time: float = 0.0


# --- writes


def client_address(connection: Redis, name: str) -> str | None:
    """Name this connection after the worker and return its address as Redis sees it (RQ's ip_address)."""
    address = None
    try:
        connection.client_setname(name)
        for client in connection.client_list():
            if client.get('name') == name:
                address = client.get('addr', 'unknown')
    except redis.ResponseError:
        pass
    return address


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
    if not scripts.register_worker(connection, name, 'birth', ttl, utcformat(moment), queues, fields):
        raise ValueError(f'There exists an active worker named {name!r} already')


def write_death(connection: Redis, name: str, moment: datetime, queues: list[str]) -> None:
    scripts.register_worker(connection, name, 'death', DEATH_TTL, utcformat(moment), queues)


def write_heartbeat(
    connection: Redis,
    name: str,
    ttl: int,
    moment: datetime,
    job_ttl: int,
    working_time: str,
    in_flight: list[tuple[str, str, str]],
) -> bool:
    """Refresh the hash and every job in flight (id, queue, execution id); True when rq:suspended is set."""
    return scripts.heartbeat(connection, name, ttl, engine._times(moment), job_ttl, working_time, in_flight)


def write_state(connection: Redis, name: str, state: WorkerStatus) -> None:
    connection.hset(keys.worker_key(name), 'state', state.value)


def write_shutdown_request(connection: Redis, name: str, moment: datetime) -> None:
    connection.hset(keys.worker_key(name), 'shutdown_requested_date', utcformat(moment))


# --- reads


def read_current_job_id(connection: Redis, name: str) -> str | None:
    value = connection.hget(keys.worker_key(name), 'current_job')
    return as_text(value) if value else None


def worker_keys(connection: Redis, queue: str | None = None) -> list[str]:
    """Keys of the live workers, of one queue or of all."""
    key = keys.workers_by_queue_key(queue) if queue else keys.WORKERS
    return [as_text(member) for member in connection.smembers(key)]


def read(connection: Redis, worker_key: str) -> WorkerRecord | None:
    """The worker stored at `worker_key`; None (and the key dropped from rq:workers) when its hash is gone."""
    raw = connection.hgetall(worker_key)
    if not raw:
        connection.srem(keys.WORKERS, worker_key)
        return None
    fields = {as_text(k): as_text(v) for k, v in raw.items()}
    return WorkerRecord(
        name=worker_key[len(keys.WORKER_PREFIX) :],
        queues=[q for q in fields.get('queues', '').split(',') if q],
        state=WorkerStatus(fields.get('state', 'started')),
        birth=utcparse(fields['birth']) if fields.get('birth') else None,
        last_heartbeat=utcparse(fields['last_heartbeat']) if fields.get('last_heartbeat') else None,
        pid=int(fields.get('pid') or 0),
        hostname=fields.get('hostname', ''),
        successful_job_count=int(fields.get('successful_job_count') or 0),
        failed_job_count=int(fields.get('failed_job_count') or 0),
        total_working_time=float(fields.get('total_working_time') or 0),
    )


class WorkerRecords:
    """The worker's side of its hash: RQ's registration and reading-back methods, as the worker's own.

    Reads from the worker: connection, name, queues, worker_ttl, job_monitoring_interval, and the
    jobs in flight (_in_flight, _job_started_monotonic) that a heartbeat keeps alive.
    """

    connection: Redis
    name: str
    worker_ttl: int
    job_monitoring_interval: int
    pid: int
    hostname: str
    ip_address: str
    version: str
    python_version: str
    birth_date: datetime | None
    last_heartbeat: datetime | None
    successful_job_count: int
    failed_job_count: int
    total_working_time: float
    _state: WorkerStatus
    _in_flight: dict[str, engine.Claim]
    _job_started_monotonic: float | None
    queue_names: Callable[[], list[str]]

    def register_birth(self) -> None:
        self.birth_date = self.last_heartbeat = now()
        self.ip_address = client_address(self.connection, self.name) or self.ip_address
        about = {
            'pid': self.pid,
            'hostname': self.hostname,
            'ip_address': self.ip_address,
            'version': self.version,
            'python_version': self.python_version,
        }
        write_birth(self.connection, self.name, self.worker_ttl + 60, self.birth_date, self.queue_names(), about)

    def register_death(self) -> None:
        write_death(self.connection, self.name, now(), self.queue_names())

    def heartbeat(self) -> bool:
        """Refresh the worker hash and every job in flight; True when rq:suspended is set."""
        moment = now()
        self.last_heartbeat = moment
        in_flight = [(c.job_id or '', c.queue or '', c.execution_id) for c in self._in_flight.values()]
        started = self._job_started_monotonic
        working = repr(time.monotonic() - started) if in_flight and started is not None else ''
        ttl = self.worker_ttl + 60 if not in_flight else self.job_monitoring_interval + 60
        return write_heartbeat(
            self.connection, self.name, ttl, moment, self.job_monitoring_interval + 60, working, in_flight
        )

    def get_state(self) -> str:
        return self._state.value

    def set_state(self, state: WorkerStatus | str) -> None:
        self._state = WorkerStatus(state)
        write_state(self.connection, self.name, self._state)

    state = property(get_state, set_state)

    def get_current_job_id(self) -> str | None:
        return read_current_job_id(self.connection, self.name)

    # RQ's execution API, for code that drives a worker by hand (the claim script does this in work())
    execution: Execution | None = None

    def get_heartbeat_ttl(self, job: Job) -> int:
        """Seconds a started job stays alive without a heartbeat (the claim script's rule)."""
        return heartbeat_ttl(job.timeout, self.job_monitoring_interval)

    def prepare_execution(self, job: Job) -> Execution:
        """A new execution of the job, recorded as the claim script records one; the worker is busy."""
        execution = prepare_execution(self, job)  # type: ignore[arg-type]
        self._state = WorkerStatus.BUSY
        return execution

    @classmethod
    def all_keys(cls, connection: Redis, queue: Any = None) -> list[str]:
        return worker_keys(connection, queue.name if queue else None)

    @classmethod
    def count(cls, connection: Redis, queue: Any = None) -> int:
        return len(cls.all_keys(connection, queue))

    @classmethod
    def all(
        cls,
        connection: Redis,
        job_class: Any = None,
        queue_class: Any = None,
        queue: Any = None,
        serializer: Any = None,
    ) -> list[Any]:
        found = [cls.find_by_key(key, connection) for key in cls.all_keys(connection, queue)]
        return [worker for worker in found if worker is not None]

    @classmethod
    def find_by_key(cls, worker_key: str, connection: Redis, **kwargs: Any) -> Any:
        """The worker stored at `worker_key`, as an instance of this class (not started); None if gone."""
        record = read(connection, worker_key)
        if record is None:
            return None
        worker = cls(record.queues or ['default'], name=record.name, connection=connection)  # type: ignore[call-arg]
        worker._state = record.state
        worker.birth_date, worker.last_heartbeat = record.birth, record.last_heartbeat
        worker.pid, worker.hostname = record.pid, record.hostname
        worker.successful_job_count = record.successful_job_count
        worker.failed_job_count = record.failed_job_count
        worker.total_working_time = record.total_working_time
        return worker
