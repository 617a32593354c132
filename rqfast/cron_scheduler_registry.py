"""RQ's cron scheduler registry: `rq:cron_schedulers`, a zset of scheduler names scored by their last
heartbeat (each scheduler's details are in its own hash, `rq:cron_scheduler:<name>`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from . import keys
from .defaults import DEFAULT_CRON_SCHEDULER_TTL, RQ_KEY_PREFIX
from .exceptions import DuplicateSchedulerError, SchedulerNotFound
from .text import as_text

if TYPE_CHECKING:
    from redis import Redis
    from redis.client import Pipeline


def get_registry_key() -> str:
    """The registry's key, under this module's RQ_KEY_PREFIX read at each call (as RQ 3.0 does)."""
    return keys.cron_schedulers_key(RQ_KEY_PREFIX)


def register(cron_scheduler: Any, pipeline: Pipeline | None = None) -> None:
    """Add the scheduler, scored now. DuplicateSchedulerError when its name is registered already (only
    known without a `pipeline`: queued into one, the answer comes with its execute(), as in RQ)."""
    client: Any = pipeline if pipeline is not None else cron_scheduler.connection
    added = client.zadd(get_registry_key(), {cron_scheduler.name: time.time()}, nx=True)
    if added == 0:
        raise DuplicateSchedulerError(f"CronScheduler '{cron_scheduler.name}' is already registered")


def unregister(cron_scheduler: Any, pipeline: Pipeline | None = None) -> None:
    """Remove the scheduler; SchedulerNotFound when it is not registered (without a `pipeline`)."""
    client: Any = pipeline if pipeline is not None else cron_scheduler.connection
    removed = client.zrem(get_registry_key(), cron_scheduler.name)
    if not removed:
        raise SchedulerNotFound(f"CronScheduler '{cron_scheduler.name}' not found in registry")


def get_keys(connection: Redis) -> list[str]:
    """The registered scheduler names, oldest heartbeat first."""
    return [as_text(name) for name in connection.zrange(get_registry_key(), 0, -1)]


def cleanup(connection: Redis, threshold: int = DEFAULT_CRON_SCHEDULER_TTL) -> int:
    """Drop the schedulers whose last heartbeat is more than `threshold` seconds old; how many."""
    return int(connection.zremrangebyscore(get_registry_key(), 0, time.time() - threshold))
