"""rqfast's own lifecycle events: a capped Redis stream per queue, `rq:events:<queue>` (additive).

The scripts that change a job's state write its events in the same call (lua/_events.lua's
job_event): enqueue (`queued`, `deferred`, `scheduled`, `rate_limited`, `requeued`), claim
(`started`), the outcome (`finished`, `failed`, `stopped`, `retried`, `scheduled` for a retry after
an interval), the scheduler and released dependents (`queued`), `Job.cancel()` (`canceled`) and
`Job.set_progress()` (`progress`, its JSON value as the detail). Only jobs enqueued through `Queue(..., events=True)`
(or `events=<cap>`) have events: the flag is the job hash's `events` field, which those scripts read
anyway, so every other job costs what it did. This module reads the stream.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from . import keys
from .defaults import EVENTS_MAXLEN
from .text import as_text

if TYPE_CHECKING:
    from redis import Redis

__all__ = ['Event', 'events_cap', 'iter_events', 'job_events', 'read_events']

READ_COUNT = 100  # entries per XREAD


def events_cap(events: bool | int | None) -> int | None:
    """Queue(events=...): True for the default cap, a positive int for another, False/None for none."""
    if events is None or events is False:
        return None
    if events is True:
        return EVENTS_MAXLEN
    if isinstance(events, int) and events > 0:
        return events
    raise ValueError(f'events must be True, False or a positive number of entries to keep, not {events!r}')


@dataclass(frozen=True)
class Event:
    """One entry of a queue's event stream. `detail`: a progress event's JSON value, a failure's exception type."""

    id: str  # the stream entry id, `<ms>-<seq>`: pass it as `since` to read what came after
    name: str
    job_id: str
    queue: str
    worker: str
    detail: str

    @property
    def timestamp(self) -> datetime:
        """When the event was written (the Redis server's clock, to the millisecond)."""
        return datetime.fromtimestamp(int(self.id.split('-', 1)[0]) / 1000, tz=timezone.utc)

    @property
    def progress(self) -> Any:
        """A progress event's value, as given to set_progress() (None for other events)."""
        return json.loads(self.detail) if self.name == 'progress' and self.detail else None

    @classmethod
    def from_entry(cls, entry_id: Any, fields: dict[Any, Any]) -> Event:
        got = {as_text(name): as_text(value) for name, value in fields.items()}
        return cls(
            as_text(entry_id),
            got.get('event', ''),
            got.get('job_id', ''),
            got.get('queue', ''),
            got.get('worker', ''),
            got.get('detail', ''),
        )


def _queue_name(queue: Any) -> str:
    return queue if isinstance(queue, str) else str(queue.name)


def _start(connection: Redis, key: str, since: str) -> str:
    """`$` (only what comes next) as the stream's last id now, so nothing written between two reads is missed."""
    if since != '$':
        return str(since)
    last = connection.xrevrange(key, count=1)
    return as_text(last[0][0]) if last else '0-0'


def iter_events(
    queue: Any, connection: Redis, since: str = '$', block: float | None = None, count: int = READ_COUNT
) -> Iterator[Event]:
    """The events of `queue` (a Queue or its name) after `since` (an entry id; '0': from the start of the
    stream; '$': only new ones), oldest first.

    block: None to stop once caught up; 0 to wait for new events forever; else seconds to wait for
    the next event before stopping.
    """
    key = keys.events_key(_queue_name(queue))
    last = _start(connection, key, since)
    waiting = False
    while True:
        wait_ms = int(block * 1000) if waiting and block is not None else None
        reply: Any = connection.xread({key: last}, count=count, block=wait_ms)
        entries = reply[0][1] if reply else []
        if not entries:
            if block is None or (waiting and block > 0):
                return
            waiting = True
            continue
        for entry_id, fields in entries:
            event = Event.from_entry(entry_id, fields)
            last = event.id
            yield event
        waiting = len(entries) < count and block is not None


def read_events(queue: Any, connection: Redis, since: str = '0') -> list[Event]:
    """Every event of `queue` after `since` that the stream holds now."""
    return list(iter_events(queue, connection, since=since))


def job_events(job: Any, connection: Redis | None = None) -> list[Event]:
    """The events of one job still in its queue's stream (a Job, whose origin names the stream)."""
    connection = connection or job.connection
    entries: Any = connection.xrange(keys.events_key(job.origin))
    return [e for e in (Event.from_entry(i, f) for i, f in entries) if e.job_id == job.id]
