"""The charts' history: points the dashboard samples (sampler.py), kept in Redis in three bounded sorted sets.

- `history:hour`: one point per sample (every 5 s by default), for the last hour;
- `history:day`: one point per minute, for the last day (1,440 at most);
- `history:functions`: one point per minute, for the last day: per function, its jobs, failures and a
  histogram of their durations (metrics.BUCKETS), from which p50 and p95 are read.

Each point is a JSON member scored by its time; a point written again for the same time (the current
minute, at each sample) replaces the one before. Written only by a dashboard, never by a worker, under
keys.dashboard_key(): a dashboard started later (or another replica) reads the same history.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import keys
from ..metrics import BUCKETS

if TYPE_CHECKING:
    from redis import Redis

HOUR, DAY, MINUTE = 3600.0, 86400.0, 60.0
HOUR_KEY, DAY_KEY, FUNCTIONS_KEY = 'history:hour', 'history:day', 'history:functions'
WINDOWS = {HOUR_KEY: HOUR, DAY_KEY: DAY, FUNCTIONS_KEY: DAY}
MAX_FUNCTIONS = 100  # functions kept per minute (the busiest): a point's size is bounded too
QUEUE_FIELDS = ('size', 'started', 'in', 'finished', 'failed')  # a point's per-queue list, in this order


@dataclass
class Point:
    """What happened between two samples (or, in the day's history, during one minute)."""

    t: float  # the end of the span (epoch seconds; a minute's start in the day's history)
    dt: float  # its length in seconds
    done: float = 0  # jobs finished by every worker (their successful_job_count), in the span
    failed: float = 0  # jobs failed (failed_job_count)
    busy: int = 0  # workers busy at its end
    idle: int = 0
    queues: dict[str, list[float]] = field(default_factory=dict)  # name -> QUEUE_FIELDS

    def queue(self, name: str, what: str) -> float:
        values = self.queues.get(name)
        return values[QUEUE_FIELDS.index(what)] if values else 0

    def to_json(self) -> str:
        data = {'t': self.t, 'dt': self.dt, 'd': self.done, 'f': self.failed, 'b': self.busy, 'i': self.idle}
        return json.dumps({**data, 'q': self.queues}, separators=(',', ':'))

    @classmethod
    def from_json(cls, text: str | bytes) -> Point:
        data = json.loads(text)
        return cls(data['t'], data['dt'], data['d'], data['f'], data['b'], data['i'], data.get('q', {}))

    def add(self, other: Point) -> None:
        """Fold a later span into this one (a minute's points): sums add up, levels are the later ones."""
        self.dt += other.dt
        self.done += other.done
        self.failed += other.failed
        self.busy, self.idle = other.busy, other.idle
        for name, values in other.queues.items():
            mine = self.queues.setdefault(name, [0.0] * len(QUEUE_FIELDS))
            mine[0], mine[1] = values[0], values[1]  # size and started: levels
            for index in range(2, len(QUEUE_FIELDS)):
                mine[index] += values[index]


@dataclass
class FunctionStats:
    """One function's jobs in a span: how many, how many failed, and a histogram of their durations."""

    count: float = 0
    failed: float = 0
    histogram: list[float] = field(default_factory=lambda: [0.0] * (len(BUCKETS) + 1))

    def observe(self, seconds: float | None, failed: bool, weight: float = 1.0) -> None:
        self.count += weight
        if failed:
            self.failed += weight
        if seconds is not None:
            self.histogram[bisect.bisect_left(BUCKETS, seconds)] += weight

    def add(self, other: FunctionStats) -> None:
        self.count += other.count
        self.failed += other.failed
        self.histogram = [a + b for a, b in zip(self.histogram, other.histogram, strict=True)]

    def quantile(self, q: float) -> float | None:
        """The duration below which a share `q` of the timed jobs fell, read from the histogram
        (interpolated on a log scale within a bucket; past the last bound: that bound)."""
        total = sum(self.histogram)
        if total <= 0:
            return None
        wanted, seen = q * total, 0.0
        for index, weight in enumerate(self.histogram):
            if weight and seen + weight >= wanted:
                if index >= len(BUCKETS):
                    return BUCKETS[-1]
                upper = BUCKETS[index]
                lower = BUCKETS[index - 1] if index else upper / 10
                share = (wanted - seen) / weight
                found = math.exp(math.log(lower) + share * (math.log(upper) - math.log(lower)))
                return float(min(upper, max(lower, found)))
            seen += weight
        return BUCKETS[-1]

    def to_list(self) -> list[Any]:
        return [round(self.count, 2), round(self.failed, 2), [round(v, 2) for v in self.histogram]]

    @classmethod
    def from_list(cls, data: list[Any]) -> FunctionStats:
        histogram = list(data[2]) if len(data) > 2 and len(data[2]) == len(BUCKETS) + 1 else None
        return cls(data[0], data[1], histogram or [0.0] * (len(BUCKETS) + 1))


def functions_to_json(t: float, functions: dict[str, FunctionStats]) -> str:
    busiest = sorted(functions.items(), key=lambda item: -item[1].count)[:MAX_FUNCTIONS]
    return json.dumps({'t': t, 'fn': {name: stats.to_list() for name, stats in busiest}}, separators=(',', ':'))


def functions_from_json(text: str | bytes) -> tuple[float, dict[str, FunctionStats]]:
    data = json.loads(text)
    return data['t'], {name: FunctionStats.from_list(values) for name, values in data.get('fn', {}).items()}


class HistoryStore:
    """Reads and writes the three sets; parsed points are kept in memory (a day's 1,440 are parsed once)."""

    def __init__(self, connection: Redis) -> None:
        self.connection = connection
        self._parsed: dict[bytes, Any] = {}

    @staticmethod
    def key(name: str) -> str:
        return keys.dashboard_key(name)

    def write(self, now: float, hour: Point, minute: Point, functions: dict[str, FunctionStats]) -> None:
        """One sample's point, and the current minute's (replacing the one written at the last sample)."""
        pipe = self.connection.pipeline(transaction=False)
        for name, score, member in (
            (HOUR_KEY, hour.t, hour.to_json()),
            (DAY_KEY, minute.t, minute.to_json()),
            (FUNCTIONS_KEY, minute.t, functions_to_json(minute.t, functions)),
        ):
            key = self.key(name)
            pipe.zremrangebyscore(key, score, score)
            pipe.zadd(key, {member: score})
            pipe.zremrangebyscore(key, '-inf', f'({now - WINDOWS[name]}')
        pipe.execute()

    def _read(self, name: str, since: float) -> list[Any]:
        members: Any = self.connection.zrangebyscore(self.key(name), since, '+inf')
        parse = functions_from_json if name == FUNCTIONS_KEY else Point.from_json
        found = []
        for member in members:
            value = self._parsed.get(member)
            if value is None:
                value = parse(member)
                if len(self._parsed) > 4 * 1440:
                    self._parsed.clear()
                self._parsed[member] = value
            found.append(value)
        return found

    def hour(self, now: float) -> list[Point]:
        return list(self._read(HOUR_KEY, now - HOUR))

    def day(self, now: float) -> list[Point]:
        return list(self._read(DAY_KEY, now - DAY))

    def functions(self, since: float) -> list[tuple[float, dict[str, FunctionStats]]]:
        return list(self._read(FUNCTIONS_KEY, since))


# --- what the pages read from the points


def rate(points: Iterable[Point], what: str, queue: str | None = None) -> float | None:
    """Jobs per second over the points (`what`: done, failed, or a queue's in, finished, failed)."""
    total = span = 0.0
    for point in points:
        span += point.dt
        total += point.queue(queue, what) if queue is not None else getattr(point, what)
    return total / span if span > 0 else None


def recent(points: list[Point], now: float, seconds: float) -> list[Point]:
    return [point for point in points if point.t > now - seconds]


def bins(
    points: Iterable[Point], start: float, width: float, count: int, what: str, queue: str | None = None
) -> list[float | None]:
    """Per bin of `width` seconds from `start`: jobs per minute of `what` (None where no point fell);
    `what` of one queue's with `queue`."""
    sums = [0.0] * count
    spans = [0.0] * count
    for point in points:
        index = int((point.t - start) // width)
        if 0 <= index < count:
            sums[index] += point.queue(queue, what) if queue is not None else getattr(point, what)
            spans[index] += point.dt
    return [sums[i] / spans[i] * 60 if spans[i] > 0 else None for i in range(count)]


def levels(
    points: Iterable[Point], start: float, width: float, count: int, queue: str, what: str
) -> list[float | None]:
    """Per bin: the mean of a queue's level (`size`, `started`) over the points that fell in it."""
    sums = [0.0] * count
    seen = [0] * count
    for point in points:
        index = int((point.t - start) // width)
        if 0 <= index < count and queue in point.queues:
            sums[index] += point.queue(queue, what)
            seen[index] += 1
    return [sums[i] / seen[i] if seen[i] else None for i in range(count)]


def failure_share(points: Iterable[Point], queue: str) -> float | None:
    """Failed / (finished + failed) of a queue over the points (None: none ended)."""
    finished = failed = 0.0
    for point in points:
        finished += point.queue(queue, 'finished')
        failed += point.queue(queue, 'failed')
    return failed / (finished + failed) if finished + failed else None


def merge_functions(minutes: Iterable[tuple[float, dict[str, FunctionStats]]]) -> dict[str, FunctionStats]:
    merged: dict[str, FunctionStats] = {}
    for _, functions in minutes:
        for name, stats in functions.items():
            merged.setdefault(name, FunctionStats()).add(stats)
    return merged
