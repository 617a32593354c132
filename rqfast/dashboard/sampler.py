"""The history sampler: a thread of the dashboard that reads Redis every few seconds and writes a point.

It costs the workers nothing: it reads what every RQ and rqfast worker keeps anyway, and writes only
the dashboard's own keys.

- Jobs done and failed, in all: the difference of each worker's `successful_job_count` and
  `failed_job_count` between two samples (a worker born since the last sample counts from zero), or
  the sum over the queues (below) where that is more (a worker gone before it was seen).
- Per queue: its size and started count; the jobs that entered its finished and failed registries
  (a ZCOUNT from the highest score of the last sample to the highest now: a registry's score is when
  the entry expires, the job's end plus its TTL, so that counts the jobs ended since, as long as the
  queue's TTLs are alike; jobs kept with result_ttl=0 never enter a registry and count only in the
  totals); jobs in: what the size and started count grew by, plus those that ended.
- Per function: up to SAMPLE_JOBS of those newest entries, their description (`module.function(...)`),
  start and end read with one HMGET each; a sampled job stands for the ones not read (its weight).

Every 30 seconds the thread also reads again what a SCAN finds (sharded, the keyspaces; the rate
limits), so that no page pays for a scan. One dashboard samples at a time (SET NX on
keys.dashboard_key('sampler'), renewed at each sample); the others read its points.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import keys
from ..cluster import is_cluster
from ..dates import utcparse
from ..queue import Queue
from ..text import as_text
from .catalog import Catalog
from .history import MINUTE, FunctionStats, HistoryStore, Point

if TYPE_CHECKING:
    from redis import Redis

log = logging.getLogger(__name__)

SAMPLE_JOBS = 200  # newest registry entries read per sample, over all queues (each one HMGET)
FIRST_GAP = 1.0  # seconds between the first two samples: a rate within a second or two of start
UPKEEP = 30.0  # seconds between two refreshes of what is found by SCAN (sharded keyspaces, rate limits)
_FUNCTION = re.compile(r'[A-Za-z_][\w.<>]*(?=\()')
OTHER = '(other)'


def function_name(description: str) -> str:
    """The function of RQ's default description, `module.function(args)`; OTHER for any other text."""
    found = _FUNCTION.match(description or '')
    return found.group(0) if found else OTHER


@dataclass
class _Registry:
    key: str
    top: float | None = None  # the highest finite score (None: not read yet; -inf: the registry was empty)
    since: float | None = None  # the top at the sample before: this sample counts from it
    at_top: int = 0  # entries scored `top` now (counted already: the next sample leaves them out)
    new: int = 0
    sampled: list[str] = field(default_factory=list)


@dataclass
class _Reading:
    """One sample's reading of Redis."""

    t: float
    workers: dict[str, tuple[str, int, int]]  # name -> (birth, successful, failed)
    busy: int
    idle: int
    levels: dict[str, tuple[int, int]]  # queue -> (size, started)
    registries: dict[tuple[str, str], _Registry]  # (queue, finished|failed) -> its sample


class Sampler:
    """Samples every `interval` seconds while it holds the lock; run() in a thread, stop() to end."""

    def __init__(
        self,
        connection: Redis,
        catalog: Catalog,
        interval: float,
        serializer: Any = None,
        upkeep: Callable[[], None] | None = None,
    ) -> None:
        self.connection = connection
        self.catalog = catalog
        self.interval = interval
        self.serializer = serializer
        self.store = HistoryStore(connection)
        self.token = f'{socket.gethostname()}:{os.getpid()}:{id(self)}'
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: _Reading | None = None
        self._minute: Point | None = None
        self._functions: dict[str, FunctionStats] = {}
        self.samples = 0  # taken by this process (tests and the bench read it)
        self.upkeep = upkeep  # called every UPKEEP seconds from the thread (the dashboard's rate limits)

    # --- the thread

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self.run, name='rqfast-dashboard-sampler', daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def run(self) -> None:
        gap = FIRST_GAP
        upkept = float('-inf')
        while not self._stop.is_set():
            try:
                if time.monotonic() - upkept >= UPKEEP:  # what pages must not pay for: the SCANs
                    upkept = time.monotonic()
                    self.catalog.queue_names(fresh=True)
                    if self.upkeep is not None:
                        self.upkeep()
                self.tick()
            except Exception:  # Redis away, a reply this version cannot read: the next sample tries again
                log.warning('dashboard sampler: this sample failed', exc_info=True)
                self._last = None
            if self._stop.wait(gap):
                return
            gap = self.interval

    # --- one sample

    def tick(self, now: float | None = None) -> Point | None:
        """Take one sample (if this dashboard holds the lock); the point written, None for a first one."""
        if not self._hold_lock():
            self._last = None
            return None
        reading = self._read(time.time() if now is None else now)
        previous, self._last = self._last, reading
        self.samples += 1
        if previous is None:
            return None
        point = self._point(previous, reading)
        functions = self._sample_functions(reading)
        self._fold(point, functions)
        assert self._minute is not None
        self.store.write(reading.t, point, self._minute, self._functions)
        return point

    def _hold_lock(self) -> bool:
        key = self.store.key('sampler')
        ttl = int(self.interval * 3000)
        if self.connection.set(key, self.token, nx=True, px=ttl):
            return True
        if as_text(self.connection.get(key) or b'') == self.token:
            self.connection.pexpire(key, ttl)
            return True
        return False

    def _read(self, now: float) -> _Reading:
        names = self.catalog.queue_names()
        rows = self.catalog.workers()
        workers = {
            row.name: (str(row.record.birth), row.record.successful_job_count, row.record.failed_job_count)
            for row in rows
        }
        busy = sum(1 for row in rows if row.busy)
        queues = [Queue(name, connection=self.connection, serializer=self.serializer) for name in names]
        registries: dict[tuple[str, str], _Registry] = {}
        pipe = self.connection.pipeline(transaction=False)
        for q in queues:
            pipe.llen(q.key)
            pipe.zcard(q.started_job_registry.key)
            for kind, found in (('finished', q.finished_job_registry), ('failed', q.failed_job_registry)):
                registries[(q.name, kind)] = _Registry(found.key, self._top_before(q.name, kind))
                pipe.zrevrangebyscore(found.key, '(+inf', '-inf', start=0, num=1, withscores=True)
        replies = iter(pipe.execute())
        levels = {}
        for q in queues:
            levels[q.name] = (int(next(replies)), int(next(replies)))
            for kind in ('finished', 'failed'):
                registry = registries[(q.name, kind)]
                top = next(replies)
                known = [score for score in (registry.top, float(top[0][1]) if top else None) if score is not None]
                registry.since, registry.top = registry.top, max(known) if known else None  # (never back down)
        self._count_new(list(registries.values()))
        return _Reading(now, workers, busy, len(rows) - busy, levels, registries)

    def _count_new(self, registries: list[_Registry]) -> None:
        """Each registry's entries scored from its last top to its top now, less those counted at the last
        top last time (more may come at one score: scores are whole seconds), and the newest SAMPLE_JOBS
        of them. One MULTI on a single server, so nothing lands between the two counts."""
        counted = [r for r in registries if r.top is not None]
        pipe = self.connection.pipeline(transaction=not is_cluster(self.connection))
        for registry in counted:
            top = repr(registry.top)
            if registry.since is not None:
                pipe.zcount(registry.key, _bound(registry.since), top)
                pipe.zrevrangebyscore(registry.key, top, _bound(registry.since), start=0, num=SAMPLE_JOBS)
            pipe.zcount(registry.key, top, top)
        replies = iter(pipe.execute() if counted else [])
        for registry in counted:
            if registry.since is not None:
                counted_before = self._at_top_before(registry)
                registry.new = max(0, int(next(replies)) - counted_before)
                registry.sampled = [as_text(member) for member in next(replies)]
            registry.at_top = int(next(replies))

    def _at_top_before(self, registry: _Registry) -> int:
        """How many entries at its last top the last sample counted (0 for a registry that was empty)."""
        if self._last is None:
            return 0
        before = next((r for r in self._last.registries.values() if r.key == registry.key), None)
        return before.at_top if before is not None and before.top == registry.since else 0

    def _top_before(self, queue: str, kind: str) -> float | None:
        """The registry's highest score at the last sample: None at a first sample (nothing to count
        from); -inf for a queue that was not there (everything in it is new)."""
        if self._last is None:
            return None
        before = self._last.registries.get((queue, kind))
        top = before.top if before is not None else None
        return top if top is not None else float('-inf')

    def _point(self, previous: _Reading, reading: _Reading) -> Point:
        done = failed = 0
        for name, (birth, successful, failures) in reading.workers.items():
            before = previous.workers.get(name)
            if before is not None and before[0] == birth:
                done += max(0, successful - before[1])
                failed += max(0, failures - before[2])
            elif before is None:  # born since (or first seen): its counts are all new
                done, failed = done + successful, failed + failures
        point = Point(reading.t, reading.t - previous.t, 0, 0, reading.busy, reading.idle)
        for name, (size, started) in reading.levels.items():
            finished = reading.registries[(name, 'finished')].new
            failures = reading.registries[(name, 'failed')].new
            old_size, old_started = previous.levels.get(name, (0, 0))  # (a new queue: all it holds came in)
            arrived = max(0, size + started - old_size - old_started + finished + failures)
            point.queues[name] = [size, started, arrived, finished, failures]
        # The workers' counters see jobs kept with result_ttl=0, the registries see a burst worker that
        # came and went between two samples: the larger of the two.
        point.done = max(done, sum(values[3] for values in point.queues.values()))
        point.failed = max(failed, sum(values[4] for values in point.queues.values()))
        return point

    def _sample_functions(self, reading: _Reading) -> dict[str, FunctionStats]:
        """Per function, the jobs that ended since the last sample, estimated from up to SAMPLE_JOBS of them."""
        chosen: list[tuple[str, bool, float]] = []  # (job id, failed, weight)
        wanted = sum(len(registry.sampled) for registry in reading.registries.values())
        share = min(1.0, SAMPLE_JOBS / wanted) if wanted else 1.0
        queues_of: list[str] = []
        for (queue, kind), registry in reading.registries.items():
            taken = registry.sampled[: max(1, int(len(registry.sampled) * share))] if registry.sampled else []
            weight = registry.new / len(taken) if taken else 0
            chosen += [(job_id, kind == 'failed', weight) for job_id in taken]
            queues_of += [queue] * len(taken)
        if not chosen:
            return {}
        pipe = self.connection.pipeline(transaction=False)
        for (job_id, _, _), queue in zip(chosen, queues_of, strict=True):
            with keys.within(queue):
                pipe.hmget(keys.job_key(job_id), _SAMPLED_FIELDS)
        stats: dict[str, FunctionStats] = {}
        for (_, failed, weight), values in zip(chosen, pipe.execute(), strict=True):
            description, started, ended = (as_text(v) if v is not None else '' for v in values)
            stats.setdefault(function_name(description), FunctionStats()).observe(
                _seconds(started, ended), failed, weight
            )
        return stats

    def _fold(self, point: Point, functions: dict[str, FunctionStats]) -> None:
        """Add the point to the current minute's (a new minute starts both anew)."""
        minute = point.t - point.t % MINUTE
        if self._minute is None or self._minute.t != minute:
            self._minute = Point(minute, 0.0)
            self._functions = {}
        self._minute.add(point)
        for name, stats in functions.items():
            self._functions.setdefault(name, FunctionStats()).add(stats)


_SAMPLED_FIELDS = ('description', 'started_at', 'ended_at')


def _bound(score: float) -> str:
    return '-inf' if score == float('-inf') else repr(score)


def _seconds(started: str, ended: str) -> float | None:
    if not started or not ended:
        return None
    try:
        return max(0.0, (utcparse(ended) - utcparse(started)).total_seconds())
    except ValueError:
        return None
