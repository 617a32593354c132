"""What each page shows, as the context of its template: the reads (reads.py, jobview.py, catalog.py) and
the charts drawn from the history (history.py, charts.py). pages.py and live.py answer the requests."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

from .. import keys
from ..events import Event
from . import history, jobview, reads
from .charts import Series, chart, sparkline
from .history import Point
from .state import Dashboard

HOUR_BINS, HOUR_WIDTH = 120, 30.0  # the last hour in 30-second bins
DAY_BINS = 96  # the last day in 15-minute bins (and per-function charts of the hour: one-minute bins)


def _hour_labels(bins: int = HOUR_BINS) -> list[tuple[int, str]]:
    return [(0, '-60 min'), (bins // 4, '-45'), (bins // 2, '-30'), (3 * bins // 4, '-15'), (bins - 1, 'now')]


def _day_labels() -> list[tuple[int, str]]:
    return [(0, '-24 h'), (24, '-18 h'), (48, '-12 h'), (72, '-6 h'), (DAY_BINS - 1, 'now')]


def throughput_charts(hour: list[Point], day: list[Point], now: float) -> dict[str, Any]:
    """The overview's two charts: jobs per minute over the last hour (one-minute bins) and day (15 min)."""
    start_hour, start_day = now - HOUR_BINS * HOUR_WIDTH, now - DAY_BINS * 900
    hour_chart = chart(
        [
            Series('finished', history.bins(hour, start_hour, HOUR_WIDTH, HOUR_BINS, 'done'), 'series-0'),
            Series('failed', history.bins(hour, start_hour, HOUR_WIDTH, HOUR_BINS, 'failed'), 'series-1'),
        ],
        _hour_labels(),
        'jobs/min',
        'Jobs finished and failed per minute, last hour',
    )
    day_chart = chart(
        [
            Series('finished', history.bins(day, start_day, 900, DAY_BINS, 'done'), 'series-0', bars=True),
            Series('failed', history.bins(day, start_day, 900, DAY_BINS, 'failed'), 'series-1', bars=True),
        ],
        _day_labels(),
        'jobs/min',
        'Jobs finished and failed per minute, last 24 hours (15-minute bars)',
    )
    return {'hour_chart': hour_chart, 'day_chart': day_chart}


def overview_context(dashboard: Dashboard) -> dict[str, Any]:
    now = time.time()
    connection = dashboard.connection
    names = dashboard.queue_names()
    rows = reads.queue_rows(connection, names, dashboard.settings.serializer)
    workers = dashboard.catalog.workers()
    hour, day = dashboard.store.hour(now), dashboard.store.day(now)
    minute = history.recent(hour, now, 60)
    start = now - HOUR_BINS * HOUR_WIDTH
    queues = [
        {
            'row': row,
            'in': history.rate(minute, 'in', row.name),
            'out': _sum_rates(minute, row.name),
            'failure_share': history.failure_share(hour, row.name),
            'spark': sparkline(history.levels(hour, start, HOUR_WIDTH, HOUR_BINS, row.name, 'size')),
            'oldest_age': row.oldest_age(_now_dt()),
        }
        for row in rows
    ]
    busy = sum(1 for worker in workers if worker.busy)
    return {
        'queues': queues,
        'workers': workers,
        'busy': busy,
        'idle': len(workers) - busy,
        'queued': sum(row.size for row in rows),
        'failed_total': sum(row.counts['failed'] for row in rows),
        'done_rate': history.rate(minute, 'done'),
        'failed_rate': history.rate(minute, 'failed'),
        'suspended': suspended(dashboard, names),
        'history_points': len(hour),
        'sampling': dashboard.sampler.samples > 0,
        **throughput_charts(hour, day, now),
    }


def _sum_rates(points: list[Point], queue: str) -> float | None:
    finished, failed = history.rate(points, 'finished', queue), history.rate(points, 'failed', queue)
    return None if finished is None or failed is None else finished + failed


def _now_dt() -> datetime:
    return datetime.now(timezone.utc)


def suspended(dashboard: Dashboard, names: list[str]) -> bool:
    if not keys.SHARDED:
        return bool(dashboard.connection.exists(keys.SUSPENDED))
    pipe = dashboard.connection.pipeline(transaction=False)
    for name in names:
        with keys.within(name):
            pipe.exists(keys.SUSPENDED)
    return any(pipe.execute()) if names else False


def queue_context(dashboard: Dashboard, name: str) -> dict[str, Any] | None:
    if name not in dashboard.queue_names():
        return None
    row = reads.queue_rows(dashboard.connection, [name], dashboard.settings.serializer)[0]
    now = time.time()
    hour = dashboard.store.hour(now)
    start = now - HOUR_BINS * HOUR_WIDTH
    flow = chart(
        [
            Series('in', history.bins(hour, start, HOUR_WIDTH, HOUR_BINS, 'in', name), 'series-2'),
            Series('finished', history.bins(hour, start, HOUR_WIDTH, HOUR_BINS, 'finished', name), 'series-0'),
            Series('failed', history.bins(hour, start, HOUR_WIDTH, HOUR_BINS, 'failed', name), 'series-1'),
        ],
        _hour_labels(),
        'jobs/min',
        f'Jobs in and out of queue {name} per minute, last hour',
    )
    size = chart(
        [Series('queued', history.levels(hour, start, HOUR_WIDTH, HOUR_BINS, name, 'size'), 'series-3')],
        _hour_labels(),
        'jobs',
        f'Jobs queued in {name}, last hour',
    )
    with keys.within(name):
        events_key = keys.events_key(name)
    has_events = bool(dashboard.connection.exists(events_key))
    events = []
    if has_events:
        newest: Any = dashboard.connection.xrevrange(events_key, count=20)
        events = [Event.from_entry(entry_id, fields) for entry_id, fields in newest]
    return {'row': row, 'flow_chart': flow, 'size_chart': size, 'events': events, 'has_events': has_events}


def job_context(dashboard: Dashboard, job_id: str, queue_name: str) -> dict[str, Any] | None:
    found = jobview.find_queue(dashboard.connection, job_id, queue_name or None, dashboard.queue_names())
    if found is None or not jobview.valid_id(job_id):
        return None
    view = jobview.load(dashboard.settings, job_id, found)
    if view is None:
        return None
    return {'job': view, 'actions': _job_actions(view.status), 'queue_name': found}


def _job_actions(status: str) -> list[str]:
    by_status = {
        'failed': ['requeue', 'delete'],
        'stopped': ['requeue', 'delete'],
        'started': ['stop', 'cancel'],
        'queued': ['cancel', 'delete'],
        'scheduled': ['cancel', 'delete'],
        'deferred': ['cancel', 'delete'],
    }
    return by_status.get(status, ['delete'])


def function_charts(
    minutes: list[tuple[float, dict[str, history.FunctionStats]]],
    name: str,
    start: float,
    width: float,
    count: int,
    window: str,
) -> dict[str, Any]:
    binned = [history.FunctionStats() for _ in range(count)]
    for t, stats in minutes:
        index = int((t - start) // width)
        if 0 <= index < count and name in stats:
            binned[index].add(stats[name])
    per_minute = width / 60
    labels = _day_labels() if window == 'day' else _hour_labels(count)
    counts = chart(
        [
            Series('jobs', [b.count / per_minute if b.count else None for b in binned], 'series-0'),
            Series('failures', [b.failed / per_minute if b.count else None for b in binned], 'series-1'),
        ],
        labels,
        'jobs/min',
        f'{name}: jobs and failures per minute',
    )
    durations = chart(
        [
            Series('p50', [b.quantile(0.5) for b in binned], 'series-2'),
            Series('p95', [b.quantile(0.95) for b in binned], 'series-3'),
        ],
        labels,
        'seconds',
        f'{name}: p50 and p95 duration',
    )
    return {'count_chart': counts, 'duration_chart': durations}
