"""Where the queues and workers are: one `queues` and one `workers` set, or, sharded by queue
(RQFAST_SHARDING=queue), one of each per queue's keyspace, found by a SCAN of every master.

A SCAN reads every key of the server, so sharded the keyspaces found are kept `ttl` seconds: a page
never pays for one (the history sampler refreshes them). Unsharded, each read is one SMEMBERS.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import keys
from ..queue import Queue
from ..status import WorkerStatus
from ..text import as_text
from ..worker import workerhash

if TYPE_CHECKING:
    from redis import Redis

KEYSPACES_TTL = 120.0  # seconds a SCAN's list of keyspaces is kept (sharded by queue; the sampler refreshes it)


@dataclass
class WorkerRow:
    """A worker as its hash says, with what RQ 3.0's executions index says it runs now."""

    record: workerhash.WorkerRecord
    keyspaces: list[str] = field(default_factory=list)  # the key prefixes it is registered under
    running: list[str] = field(default_factory=list)  # job ids, from rq:worker:<name>:executions
    worker_class: str = ''  # fields a worker may add to its hash (RQ's ignore them); '' when absent
    concurrency: int | None = None

    @property
    def name(self) -> str:
        return self.record.name

    @property
    def busy(self) -> bool:
        return self.record.state == WorkerStatus.BUSY or bool(self.running)


class Catalog:
    """The queue names and the workers of one Redis, every keyspace."""

    def __init__(self, connection: Redis, ttl: float = KEYSPACES_TTL) -> None:
        self.connection = connection
        self.ttl = ttl
        self._lock = threading.Lock()
        self._names: list[str] = []
        self._read_at = float('-inf')

    def queue_names(self, fresh: bool = False) -> list[str]:
        """Every queue's name, sorted (sharded: as of the last SCAN, at most `ttl` seconds old)."""
        if not keys.SHARDED:
            return sorted(queue.name for queue in Queue.all(self.connection))
        with self._lock:
            if fresh or time.monotonic() - self._read_at > self.ttl:
                self._names = sorted(queue.name for queue in Queue.all(self.connection))
                self._read_at = time.monotonic()
            return list(self._names)

    def worker_keys(self) -> list[tuple[str | None, str]]:
        """(the queue whose keyspace holds it, or None unsharded; the worker key) for every live worker."""
        if not keys.SHARDED:
            return [(None, key) for key in sorted(workerhash.worker_keys(self.connection))]
        names = self.queue_names()
        pipe = self.connection.pipeline(transaction=False)
        for name in names:
            with keys.within(name):
                pipe.smembers(keys.WORKERS)
        found: list[tuple[str | None, str]] = []
        for name, members in zip(names, pipe.execute(), strict=True):
            found += [(name, as_text(member)) for member in sorted(members)]
        return found

    def workers(self) -> list[WorkerRow]:
        """Every live worker (one row per name, whatever the keyspaces it is in), by name."""
        located = self.worker_keys()
        if not located:
            return []
        pipe = self.connection.pipeline(transaction=False)
        for queue, key in located:
            with keys.within(queue):
                pipe.hgetall(key)
                pipe.smembers(keys.worker_executions_key(key[len(keys.WORKER_PREFIX) :]))
        replies = iter(pipe.execute())
        rows: dict[str, WorkerRow] = {}
        for queue, key in located:
            raw, running = next(replies), next(replies)
            if not raw:
                continue  # gone since the set was read (its hash expired)
            with keys.within(queue):
                row = _row(key, raw, sorted(as_text(member).split(':')[0] for member in running))
            if row is None:
                continue
            prefix = keys.keyspace(queue) if queue else keys.BASE
            known = rows.setdefault(row.name, row)
            if prefix not in known.keyspaces:
                known.keyspaces.append(prefix)
            if known is not row:
                known.running = sorted(set(known.running) | set(row.running))
        return sorted(rows.values(), key=lambda row: row.name)


def _row(key: str, raw: dict[Any, Any], running: list[str]) -> WorkerRow | None:
    """A worker's row; None for a hash this version cannot read (an unknown state: the others still show)."""
    try:
        record = workerhash.parse(key, raw)
    except ValueError:
        return None
    fields = {as_text(name): as_text(value) for name, value in raw.items()}
    concurrency = fields.get('concurrency', '')
    return WorkerRow(
        record,
        running=running,
        worker_class=fields.get('worker_class', ''),
        concurrency=int(concurrency) if concurrency.isdigit() else None,
    )
