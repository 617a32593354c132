"""What the pages show of queues and their registries, read with counts and ranges: a page costs the
same against a queue of ten jobs or of a million (no scan of a list or registry but the bounded search).

Keys come from the Queue and registry objects (their `.key`), so this module holds no key layout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import keys
from ..dates import from_epoch, utcparse
from ..queue import Queue
from ..registry import BaseRegistry
from ..suspension import paused_queues
from ..text import as_text

if TYPE_CHECKING:
    from redis import Redis

# A queue's job lists: its list, then its registries (attribute of Queue), as the pages name them.
REGISTRIES: dict[str, str | None] = {
    'queued': None,
    'started': 'started_job_registry',
    'finished': 'finished_job_registry',
    'failed': 'failed_job_registry',
    'deferred': 'deferred_job_registry',
    'scheduled': 'scheduled_job_registry',
    'canceled': 'canceled_job_registry',
    'ready': 'ready_job_registry',  # RQ 3.0's: dependents released, not yet pushed
}
# What a registry's score means, as a column heading (None: not shown)
SCORES = {
    'started': 'heartbeat due',
    'finished': 'kept until',
    'failed': 'kept until',
    'scheduled': 'runs at',
    'canceled': 'canceled',
    'deferred': None,
    'ready': 'released',
}
JOB_FIELDS = ('status', 'description', 'enqueued_at', 'started_at', 'ended_at', 'worker_name', 'origin', 'priority')
PAGE_SIZE = 25
SEARCH_LIMIT = 1000  # entries a function search reads per request, at most (one HGET each, pipelined)


@dataclass
class QueueRow:
    name: str
    counts: dict[str, int]  # by REGISTRIES name
    oldest_enqueued_at: datetime | None = None
    paused: bool = False
    lanes: dict[int, int] = field(default_factory=dict)
    keyspace: str = ''

    @property
    def size(self) -> int:
        return self.counts['queued']

    def oldest_age(self, now: datetime) -> float | None:
        """Seconds the job at the head of the list has waited."""
        if self.oldest_enqueued_at is None:
            return None
        return max(0.0, (now - self.oldest_enqueued_at).total_seconds())


@dataclass
class JobRow:
    id: str
    fields: dict[str, str]  # JOB_FIELDS as stored ('' when absent)
    score: float | None = None
    exists: bool = True

    @property
    def status(self) -> str:
        return self.fields.get('status', '')

    def date(self, name: str) -> datetime | None:
        return _date(self.fields.get(name))

    @property
    def score_date(self) -> datetime | None:
        if self.score is None or self.score in (float('inf'), float('-inf')):
            return None
        return from_epoch(self.score)


@dataclass
class Page:
    rows: list[JobRow]
    total: int
    offset: int
    size: int = PAGE_SIZE
    searched: int | None = None  # a search: how many entries were read (up to SEARCH_LIMIT)
    next_offset: int | None = None

    @property
    def previous_offset(self) -> int | None:
        return max(0, self.offset - self.size) if self.offset > 0 else None


def queue(connection: Redis, name: str, serializer: Any = None) -> Queue:
    return Queue(name, connection=connection, serializer=serializer)


def registry(q: Queue, kind: str) -> BaseRegistry | None:
    """The registry of that name (None: the queue's list); KeyError for an unknown name."""
    attribute = REGISTRIES[kind]
    return None if attribute is None else getattr(q, attribute)


def queue_rows(connection: Redis, names: Iterable[str], serializer: Any = None) -> list[QueueRow]:
    """Every queue's counts, head job and lanes: two round trips for all of them (a third for lanes)."""
    queues = [queue(connection, name, serializer) for name in names]
    if not queues:
        return []
    pipe = connection.pipeline(transaction=False)
    for q in queues:
        pipe.llen(q.key)
        for attribute in REGISTRIES.values():
            if attribute is not None:
                pipe.zcard(getattr(q, attribute).key)
        pipe.lindex(q.key, 0)
        with keys.within(q.name):
            pipe.exists(keys.priority_queue_key(q.name))
    replies = iter(pipe.execute())
    rows, heads, laned = [], [], []
    for q in queues:
        counts = {kind: int(next(replies)) for kind in REGISTRIES}
        head, has_lanes = next(replies), next(replies)
        rows.append(QueueRow(q.name, counts, keyspace=keys.keyspace(q.name)))
        heads.append(as_text(head) if head else None)
        if has_lanes:
            laned.append((rows[-1], q))
    _head_dates(connection, rows, heads)
    paused = _paused(connection, [row.name for row in rows])
    for row in rows:
        row.paused = row.name in paused
    for row, q in laned:
        row.lanes = q.priority_counts()
    return rows


def _head_dates(connection: Redis, rows: list[QueueRow], heads: list[str | None]) -> None:
    pipe = connection.pipeline(transaction=False)
    asked = []
    for row, head in zip(rows, heads, strict=True):
        if head:
            with keys.within(row.name):
                pipe.hget(keys.job_key(head), 'enqueued_at')
            asked.append(row)
    for row, value in zip(asked, pipe.execute() if asked else [], strict=True):
        row.oldest_enqueued_at = _date(value)


def _paused(connection: Redis, names: list[str]) -> set[str]:
    if not keys.SHARDED:
        return paused_queues(connection)
    found = set()
    for name in names:
        with keys.within(name):
            found |= paused_queues(connection) & {name}
    return found


def page(q: Queue, kind: str, offset: int = 0, size: int = PAGE_SIZE, desc: bool = True) -> Page:
    """One page of a queue's list (in its order) or registry (newest score first unless `desc` is False)."""
    offset = max(0, offset)
    found = registry(q, kind)
    if found is None:
        total = q.count
        ids = q.get_job_ids(offset, size)
        scores: list[float | None] = [None] * len(ids)
    else:
        total = found.get_job_count(cleanup=False)
        entries: Any = q.connection.zrange(found.key, offset, offset + size - 1, desc=desc, withscores=True)
        ids = [found.parse_job_id(member) for member, _ in entries]
        scores = [float(score) for _, score in entries]
    rows = job_rows(q.connection, q.name, ids, scores)
    following = offset + size if offset + size < total else None
    return Page(rows, total, offset, size, next_offset=following)


def search(q: Queue, kind: str, needle: str, offset: int = 0, size: int = PAGE_SIZE) -> Page:
    """The jobs whose description (the call: `module.function(args)`) contains `needle`, reading at most
    SEARCH_LIMIT entries from `offset` on (the page says where to go on from)."""
    offset = max(0, offset)
    found = registry(q, kind)
    if found is None:
        total = q.count
        ids = q.get_job_ids(offset, SEARCH_LIMIT)
        scores: list[float | None] = [None] * len(ids)
    else:
        total = found.get_job_count(cleanup=False)
        entries: Any = q.connection.zrange(found.key, offset, offset + SEARCH_LIMIT - 1, desc=True, withscores=True)
        ids = [found.parse_job_id(member) for member, _ in entries]
        scores = [float(score) for _, score in entries]
    pipe = q.connection.pipeline(transaction=False)
    with keys.within(q.name):
        for job_id in ids:
            pipe.hget(keys.job_key(job_id), 'description')
    descriptions = pipe.execute() if ids else []
    matched, read = [], 0
    for job_id, score, description in zip(ids, scores, descriptions, strict=True):
        read += 1
        if needle.lower() in as_text(description or b'').lower():
            matched.append((job_id, score))
            if len(matched) == size:
                break
    rows = job_rows(q.connection, q.name, [m[0] for m in matched], [m[1] for m in matched])
    following = offset + read if offset + read < total else None
    return Page(rows, total, offset, size, searched=read, next_offset=following)


def job_rows(connection: Redis, queue_name: str, ids: list[str], scores: list[float | None]) -> list[JobRow]:
    if not ids:
        return []
    pipe = connection.pipeline(transaction=False)
    with keys.within(queue_name):
        for job_id in ids:
            pipe.hmget(keys.job_key(job_id), JOB_FIELDS)
    rows = []
    for job_id, score, values in zip(ids, scores, pipe.execute(), strict=True):
        fields = {
            name: as_text(value) if value is not None else '' for name, value in zip(JOB_FIELDS, values, strict=True)
        }
        rows.append(JobRow(job_id, fields, score, exists=any(value is not None for value in values)))
    return rows


def _date(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return utcparse(as_text(value))
    except ValueError:
        return None
