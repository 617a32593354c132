"""What runs later: each queue's scheduled jobs (soonest first), the cron schedulers and their cron jobs,
and the rate limits (concurrency slots; window logs) that hold jobs back."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from .. import cron_job_registry, keys
from ..cron import CronJob, CronScheduler
from ..dates import from_epoch
from ..rate_limit import RateLimitRegistry
from ..text import as_text
from .reads import JobRow, job_rows, queue

if TYPE_CHECKING:
    from redis import Redis

SOONEST = 10  # scheduled jobs shown per queue


@dataclass
class ScheduledQueue:
    name: str
    count: int
    soonest: list[JobRow]


@dataclass
class CronRow:
    scheduler: str
    hostname: str
    pid: int
    last_heartbeat: datetime | None
    jobs: list[CronJob] = field(default_factory=list)


@dataclass
class LimitRow:
    key: str
    keyspace: str = ''
    concurrency: int = 0
    holding: int = 0
    waiting: int = 0
    starts: int = 0  # starts the window's log remembers
    latest_start: float | None = None
    planned: int = 0  # jobs waiting for their turn in the window
    next_planned: float | None = None


def scheduled(connection: Redis, names: list[str]) -> list[ScheduledQueue]:
    """Per queue with scheduled jobs, how many, and the soonest (a ZCARD and a ZRANGE each)."""
    queues = [queue(connection, name) for name in names]
    pipe = connection.pipeline(transaction=False)
    for q in queues:
        pipe.zcard(q.scheduled_job_registry.key)
        pipe.zrange(q.scheduled_job_registry.key, 0, SOONEST - 1, withscores=True)
    replies = iter(pipe.execute() if queues else [])
    found = []
    for q in queues:
        count, entries = int(next(replies)), next(replies)
        if count:
            ids = [as_text(member) for member, _ in entries]
            found.append(ScheduledQueue(q.name, count, job_rows(connection, q.name, ids, [s for _, s in entries])))
    return found


def cron_schedulers(connection: Redis) -> list[CronRow]:
    """The registered cron schedulers (as read: no stale one is removed) and the cron jobs each runs."""
    rows = []
    for found in CronScheduler.all(connection, cleanup=False):
        rows.append(CronRow(found.name, found.hostname, found.pid, found.last_heartbeat, list(found._cron_jobs)))
    return rows


def cron_job_names(connection: Redis) -> list[tuple[str, datetime]]:
    """Each cron job name of RQ's registry, and when it last enqueued."""
    entries: Any = connection.zrange(cron_job_registry.get_registry_key(), 0, -1, withscores=True)
    return [(as_text(name), from_epoch(float(score))) for name, score in entries]


def window_keys(connection: Redis) -> list[str]:
    """The rate-limit keys with a window log (a SCAN: window limits keep no index of their keys)."""
    head, tail = keys.rate_limit_window_key('\0').split('\0')
    found = {as_text(name)[len(head) : -len(tail)] for name in connection.scan_iter(match=f'{head}*{tail}', count=1000)}
    return sorted(found)


def limits(connection: Redis, names: list[str]) -> list[LimitRow]:
    """Every rate-limit key of every keyspace; SCANs the server (kept by the caller, not read per page)."""
    rows: list[LimitRow] = []
    for space in [None] if not keys.SHARDED else names:
        with keys.within(space):
            concurrency = {as_text(name) for name in connection.smembers(keys.RATE_LIMIT_KEYS)}
            for name in sorted(concurrency | set(window_keys(connection))):
                rows.append(_limit(RateLimitRegistry(name, connection), keys.prefix()))
    return rows


def _limit(registry: RateLimitRegistry, keyspace: str) -> LimitRow:
    row = LimitRow(registry.key, keyspace)
    row.concurrency = registry.concurrency
    if row.concurrency:
        row.holding, row.waiting = registry.get_allowed_job_count(), registry.get_rate_limited_job_count()
    log = cast(list[tuple[bytes, float]], registry.connection.zrange(registry.window_key, 0, -1, withscores=True))
    starts = [score for member, score in log if b':' in member]
    planned = [score for member, score in log if b':' not in member]
    row.starts, row.planned = len(starts), len(planned)
    row.latest_start = max(starts) if starts else None
    row.next_planned = min(planned) if planned else None
    return row


def seconds_from_now(epoch: float | None) -> float | None:
    return None if epoch is None else epoch - time.time()


__all__ = ['CronRow', 'LimitRow', 'ScheduledQueue', 'cron_job_names', 'cron_schedulers', 'limits', 'scheduled']
