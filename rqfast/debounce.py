"""`debounce=(key, delay)` and `throttle=(key, ttl)` on enqueue: rqfast's own options (docs/features.md).

Each is checked here before anything touches Redis, then stored by one call of its guard script
(lua/enqueue_debounced.lua, lua/enqueue_throttled.lua), which decides and writes atomically and
falls through into lua/enqueue_jobs.lua. An enqueue without them never comes here.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, NamedTuple

from . import scripts
from .dates import epoch_seconds, utcformat
from .defaults import DEBOUNCE_KEY_GRACE

if TYPE_CHECKING:
    from redis import Redis

    from .scriptrecords import EnqueueRecord

__all__ = ['Debounce', 'Throttle', 'keyed_option']


class Debounce(NamedTuple):
    """Only the last enqueue of a burst under `key` runs, `delay` seconds after it, with its own arguments."""

    key: str
    delay: float

    def score(self, moment: datetime) -> int:
        """The job's score in the scheduled registry: whole seconds, as RQ's, and never before `delay` has passed."""
        return math.ceil(moment.timestamp() + self.delay)

    def call(self, queue: str, moment: datetime, record: EnqueueRecord) -> scripts.ScriptCall:
        """The guard script's call storing `record` (no I/O); its reply: read()."""
        key_ttl = math.ceil(self.delay) + DEBOUNCE_KEY_GRACE
        return scripts.enqueue_debounced_call(
            queue, utcformat(moment), epoch_seconds(moment), record, self.key, key_ttl
        )

    def read(self, reply: Any) -> tuple[str, Held | None]:
        return scripts.debounced_status(reply), None

    def store(self, connection: Redis, queue: str, moment: datetime, record: EnqueueRecord) -> tuple[str, Held | None]:
        return self.read(scripts.run(self.call(queue, moment, record), connection))


class Throttle(NamedTuple):
    """At most one job under `key` per `ttl` seconds: an enqueue while the window is held creates none."""

    key: str
    ttl: float

    def call(self, queue: str, moment: datetime, record: EnqueueRecord) -> scripts.ScriptCall:
        """The guard script's call storing `record` (no I/O); its reply: read()."""
        ttl_ms = max(1, math.ceil(self.ttl * 1000))
        return scripts.enqueue_throttled_call(queue, utcformat(moment), epoch_seconds(moment), record, self.key, ttl_ms)

    def read(self, reply: Any) -> tuple[str, Held | None]:
        status, holder, raw = scripts.throttled(reply)
        return status, (Held(holder, raw) if status == 'throttled' else None)

    def store(self, connection: Redis, queue: str, moment: datetime, record: EnqueueRecord) -> tuple[str, Held | None]:
        return self.read(scripts.run(self.call(queue, moment, record), connection))


class Held(NamedTuple):
    """The job that holds a throttle window, as the guard script read it (raw: {} when it is gone)."""

    job_id: str
    raw: dict[bytes, bytes]


def keyed_option(
    debounce: object, throttle: object, *, depends_on: object = None, unique: bool = False, pipeline: object = None
) -> Debounce | Throttle | None:
    """The enqueue's debounce= or throttle= option, checked (ValueError), or None when neither is given."""
    if debounce is None and throttle is None:
        return None
    if debounce is not None and throttle is not None:
        raise ValueError('debounce and throttle cannot be combined: give one of them')
    if unique:
        raise ValueError('unique=True is not supported with debounce or throttle (the key decides)')
    if pipeline is not None:
        raise ValueError('debounce and throttle are not supported with a pipeline (one script call decides at once)')
    if debounce is not None:
        if depends_on is not None:
            raise ValueError('debounce is not supported with depends_on (the job is scheduled after its delay)')
        key, delay = _pair('debounce', debounce, 'delay')
        if delay < 0:
            raise ValueError(f'debounce delay must be 0 or more seconds, not {delay!r}')
        return Debounce(key, delay)
    key, ttl = _pair('throttle', throttle, 'ttl')
    if ttl <= 0:
        raise ValueError(f'throttle ttl must be more than 0 seconds, not {ttl!r}')
    return Throttle(key, ttl)


def _pair(option: str, value: object, second: str) -> tuple[str, float]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f'{option} must be a (key, {second}) pair, not {value!r}')
    key, seconds = value
    if not isinstance(key, str) or not key:
        raise ValueError(f'{option} key must be a non-empty string, not {key!r}')
    if isinstance(seconds, timedelta):
        seconds = seconds.total_seconds()
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not math.isfinite(seconds):
        raise ValueError(f'{option} {second} must be seconds (int, float or timedelta), not {seconds!r}')
    return key, float(seconds)
