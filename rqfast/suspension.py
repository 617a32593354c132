"""Suspending every worker on a Redis (RQ's `rq:suspended` flag), or pausing one queue (rqfast's `rq:paused-queues`).

Either way jobs in hand finish and no new ones start; the claim scripts check both in the call that claims.
Sharded by queue (RQFAST_SHARDING=queue), suspend() and resume() set and clear the flag of every queue's
keyspace that exists (holds its `queues` set: a queue that ever had a job), found on every master by SCAN.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from redis import Redis

from . import keys
from .text import as_text

WORKERS_SUSPENDED = keys.SUSPENDED


class _Heartbeating(Protocol):
    def heartbeat(self) -> object: ...


def is_suspended(connection: Redis, worker: _Heartbeating | None = None) -> bool:
    """Whether workers are suspended; a worker asking heartbeats first, as in RQ."""
    if worker is not None:
        worker.heartbeat()
    return bool(connection.exists(keys.SUSPENDED))


def suspend(connection: Redis, ttl: int | None = None) -> None:
    """Suspend until resume(), or for ttl seconds (a ttl of 0 or less ends it at once, as RQ's expire does)."""
    for _ in keyspaces(connection):
        if ttl is not None and ttl <= 0:
            connection.delete(keys.SUSPENDED)
        else:
            connection.set(keys.SUSPENDED, 1, ex=ttl)


def resume(connection: Redis) -> int:
    """End a suspension; the number of keys deleted (1 if workers were suspended), as RQ returns."""
    return max((int(connection.delete(keys.SUSPENDED)) for _ in keyspaces(connection)), default=0)


def keyspaces(connection: Redis) -> Iterator[None]:
    """Once; sharded by queue, once within each queue's keyspace found (the module's docstring): its
    `queues` key, on every master (a SCAN of each: for admin calls, suspend() and Queue.all())."""
    if not keys.SHARDED:
        yield
        return
    head, tail = keys.keyspace('\0').split('\0')
    pattern = ''.join(f'[{c}]' if c in '*?[]\\' else c for c in head) + f'*{tail}queues'
    found = {as_text(key)[len(head) : -len(tail + 'queues')] for key in connection.scan_iter(match=pattern, count=1000)}
    for queue in sorted(found):
        with keys.within(queue):
            yield


def pause_queue(connection: Redis, queue: str) -> bool:
    """Stop rqfast workers starting jobs from `queue` (it still takes enqueues); True if it was not paused."""
    return bool(connection.sadd(keys.PAUSED_QUEUES, queue))


def resume_queue(connection: Redis, queue: str) -> bool:
    """Let workers take `queue`'s jobs again; True if it was paused."""
    return bool(connection.srem(keys.PAUSED_QUEUES, queue))


def is_queue_paused(connection: Redis, queue: str) -> bool:
    return bool(connection.sismember(keys.PAUSED_QUEUES, queue))


def paused_queues(connection: Redis) -> set[str]:
    """The names of every paused queue."""
    return {m.decode() if isinstance(m, bytes) else str(m) for m in connection.smembers(keys.PAUSED_QUEUES)}
