"""RQ's cron job registry: `rq:cron_jobs`, a zset of cron job names scored by when each last enqueued.

Several cron jobs may share a name; adding a name again refreshes its score.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from . import keys
from .defaults import DEFAULT_CRON_JOB_HISTORY_TTL
from .text import as_text

if TYPE_CHECKING:
    from redis import Redis
    from redis.client import Pipeline


def get_registry_key() -> str:
    return keys.CRON_JOBS


def add(name: str, connection: Redis | Pipeline, enqueue_timestamp: float | None = None) -> None:
    """Record (or refresh) `name`, scored by `enqueue_timestamp` (now when not given)."""
    connection.zadd(keys.CRON_JOBS, {name: enqueue_timestamp or time.time()})


def get_names(connection: Redis, cleanup: bool = True) -> list[str]:
    """The names, oldest enqueue first; stale ones removed first unless `cleanup` is False."""
    if cleanup:
        remove_stale_entries(connection)
    return [as_text(name) for name in connection.zrange(keys.CRON_JOBS, 0, -1)]


def remove_stale_entries(connection: Redis, threshold: int = DEFAULT_CRON_JOB_HISTORY_TTL) -> int:
    """Drop the names that last enqueued more than `threshold` seconds ago (by default when their
    history expires); how many were dropped."""
    return int(connection.zremrangebyscore(keys.CRON_JOBS, 0, time.time() - threshold))
