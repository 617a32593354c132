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
from ..dates import now, utcformat, utcparse
from ..defaults import JOB_HEARTBEAT_GRACE, rq2_compat
from ..status import WorkerStatus
from ..text import as_text

DEATH_TTL = 60  # seconds a dead worker's hash stays readable, as in RQ


@dataclass
class WorkerRecord:
    """A worker as its hash stores it."""

    name: str
    queues: list[str] = field(default_factory=list)
    state: WorkerStatus | str = WorkerStatus.STARTED  # '?' when the hash has none (RQ's reader says so)
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

    @property
    def state_text(self) -> str:
        """The state as its hash has it ('?' for none)."""
        return str(getattr(self.state, 'value', self.state))


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
    connection: Redis,
    name: str,
    ttl: int,
    moment: datetime,
    queues: list[str],
    about: dict[str, Any],
    state: WorkerStatus | None = None,
) -> None:
    """Create the hash (birth, queues and `about`: pid, hostname...; `state` when given: RQ writes none at
    birth, its loop sets `started` next); ValueError if the name is taken."""
    fields = {'birth': utcformat(moment), 'last_heartbeat': utcformat(moment), 'queues': ','.join(queues), **about}
    if state is not None:
        fields['state'] = state.value
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
) -> workerscripts.HeartbeatReply:
    """Refresh the hash and every job in flight (id, queue, execution id), fenced on each execution: whether
    rq:suspended is set, and the ids of the jobs in flight this worker no longer owns."""
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


def _state(stored: str | None) -> WorkerStatus | str:
    """A worker hash's `state`; '?' for none, as RQ's reader (a worker registered by hand: RQ 3.0 writes none at
    birth). A state no RQ writes is a ValueError, as before (the exporter leaves such a hash out)."""
    return WorkerStatus(stored) if stored else '?'


def parse(worker_key: str, raw: dict[Any, Any]) -> WorkerRecord:
    """The worker from its hash as HGETALL returns it (read's, and the metrics collector's pipelined reads)."""
    fields = {as_text(k): as_text(v) for k, v in raw.items()}
    return WorkerRecord(
        name=worker_key[len(keys.WORKER_PREFIX) :],
        queues=[q for q in fields.get('queues', '').split(',') if q],
        state=_state(fields.get('state')),
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
        self.birth_state: WorkerStatus | None = None  # the state a birth writes (register_birth by hand: none)

    def birth(self, ttl: int, queues: list[str], about: dict[str, Any]) -> None:
        """`birth_state`, set by the loop's bootstrap, goes with the birth (RQ's next HSET, saved)."""
        self.birth_date = self.last_heartbeat = now()
        write_birth(self.connection, self.name, ttl, self.birth_date, queues, about, self.birth_state)

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
        reply = write_heartbeat(self.connection, self.name, ttl, moment, monitoring + grace, working, jobs, grace)
        for job_id in reply.lost:
            self.log.warning(
                "Worker %s: job %s is no longer this worker's (its execution ended: recovered or claimed "
                'again elsewhere); its outcome will not be recorded',
                self.name,
                job_id,
            )
        return reply.suspended

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
