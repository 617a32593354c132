"""The pages: each handler reads what its page shows (reads.py, jobview.py, history.py) and renders it."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from .. import keys
from ..events import Event
from ..text import as_text
from . import guard, history, jobview, reads
from .actions import ACTIONS
from .charts import Series, chart, sparkline
from .history import Point
from .schedules import cron_job_names, cron_schedulers
from .schedules import scheduled as scheduled_queues
from .state import Dashboard, dashboard_of, href

HOUR_BINS, HOUR_WIDTH = 120, 30.0  # the last hour in 30-second bins
DAY_BINS = 96  # the last day in 15-minute bins (and per-function charts of the hour: one-minute bins)
JOB_STATUSES = list(reads.REGISTRIES)


def _int(value: str | None, default: int = 0) -> int:
    try:
        return max(0, int(value or default))
    except ValueError:
        return default


def not_found(dashboard: Dashboard, request: Request, message: str) -> Response:
    return dashboard.render(request, 'message.html', {'title': 'Not found', 'message': message}, 404)


def unauthorized(dashboard: Dashboard, request: Request) -> Response:
    """401: the login form where a token is configured, the browser's basic-auth prompt otherwise."""
    wrong = bool(request.headers.get('authorization') or request.cookies.get(guard.TOKEN_COOKIE))
    message = 'Wrong credentials.' if wrong else 'This dashboard asks who you are.'
    context = {'title': 'Who are you?', 'message': message, 'login': dashboard.settings.token is not None}
    response = dashboard.render(request, 'login.html', context, 401)
    if dashboard.settings.basic_auth is not None:
        response.headers['www-authenticate'] = 'Basic realm="rqfast dashboard", charset="UTF-8"'
    return response


# --- the overview


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
        'suspended': _suspended(dashboard, names),
        'history_points': len(hour),
        'sampling': dashboard.sampler.samples > 0,
        **throughput_charts(hour, day, now),
    }


def _sum_rates(points: list[Point], queue: str) -> float | None:
    finished, failed = history.rate(points, 'finished', queue), history.rate(points, 'failed', queue)
    return None if finished is None or failed is None else finished + failed


def _now_dt() -> datetime:
    return datetime.now(timezone.utc)


def _suspended(dashboard: Dashboard, names: list[str]) -> bool:
    if not keys.SHARDED:
        return bool(dashboard.connection.exists(keys.SUSPENDED))
    pipe = dashboard.connection.pipeline(transaction=False)
    for name in names:
        with keys.within(name):
            pipe.exists(keys.SUSPENDED)
    return any(pipe.execute()) if names else False


def overview(request: Request) -> Response:
    dashboard = dashboard_of(request)
    return dashboard.render(request, 'overview.html', overview_context(dashboard))


# --- queues


def queues(request: Request) -> Response:
    dashboard = dashboard_of(request)
    rows = reads.queue_rows(dashboard.connection, dashboard.queue_names(), dashboard.settings.serializer)
    read_at, limits = dashboard.limits()
    return dashboard.render(request, 'queues.html', {'rows': rows, 'limits': limits, 'limits_read_at': read_at})


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


def queue_page(request: Request) -> Response:
    dashboard = dashboard_of(request)
    name = request.path_params['name']
    context = queue_context(dashboard, name)
    if context is None:
        return not_found(dashboard, request, f'There is no queue named {name!r}.')
    return dashboard.render(request, 'queue.html', context)


def registry_page(request: Request) -> Response:
    dashboard = dashboard_of(request)
    name, kind = request.path_params['name'], request.path_params['kind']
    if name not in dashboard.queue_names():
        return not_found(dashboard, request, f'There is no queue named {name!r}.')
    if kind not in reads.REGISTRIES:
        return not_found(
            dashboard, request, f'There is no job list named {kind!r} (queue {name} has {", ".join(reads.REGISTRIES)}).'
        )
    q = reads.queue(dashboard.connection, name, dashboard.settings.serializer)
    offset, needle = _int(request.query_params.get('offset')), request.query_params.get('q', '').strip()[:200]
    found = reads.search(q, kind, needle, offset) if needle else reads.page(q, kind, offset)
    context = {
        'name': name,
        'kind': kind,
        'page': found,
        'needle': needle,
        'score_label': reads.SCORES.get(kind),
        'kinds': list(reads.REGISTRIES),
        'row_actions': _row_actions(kind),
    }
    return dashboard.render(request, 'registry.html', context)


def _row_actions(kind: str) -> list[str]:
    by_kind = {
        'failed': ['requeue', 'delete'],
        'queued': ['cancel', 'delete'],
        'started': ['stop'],
        'scheduled': ['cancel', 'delete'],
        'deferred': ['cancel', 'delete'],
        'finished': ['delete'],
        'canceled': ['delete'],
    }
    return by_kind.get(kind, [])


# --- jobs


def jobs(request: Request) -> Response:
    """The search form; a job id goes to its page, a function and a status to the matching list."""
    dashboard = dashboard_of(request)
    params = request.query_params
    names = dashboard.queue_names()
    job_id, queue_name = params.get('id', '').strip(), params.get('queue', '')
    status, needle = params.get('status', 'queued'), params.get('q', '').strip()
    context: dict[str, Any] = {'names': names, 'statuses': JOB_STATUSES, 'params': params, 'missing': None}
    if job_id:
        found = (
            jobview.find_queue(dashboard.connection, job_id, queue_name or None, names)
            if jobview.valid_id(job_id)
            else None
        )
        if found is None:
            context['missing'] = f'No job {job_id!r}' + (f' in queue {queue_name}' if queue_name else '') + '.'
            return dashboard.render(request, 'jobs.html', context, 404)
        return RedirectResponse(_job_href(request, job_id, found), status_code=303)
    if queue_name in names and status in reads.REGISTRIES:
        target = href(request, 'registry', name=queue_name, kind=status)
        return RedirectResponse(target + ('?' + urlencode({'q': needle}) if needle else ''), status_code=303)
    return dashboard.render(request, 'jobs.html', context)


def _job_href(request: Request, job_id: str, queue_name: str) -> str:
    return href(request, 'job', job_id=job_id) + ('?' + urlencode({'queue': queue_name}) if queue_name else '')


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


def job_page(request: Request) -> Response:
    dashboard = dashboard_of(request)
    job_id, queue_name = request.path_params['job_id'], request.query_params.get('queue', '')
    context = job_context(dashboard, job_id, queue_name)
    if context is None:
        return not_found(
            dashboard, request, f'There is no job {job_id!r}' + (f' in queue {queue_name!r}.' if queue_name else '.')
        )
    return dashboard.render(request, 'job.html', context)


# --- workers, functions, what runs later


def workers(request: Request) -> Response:
    dashboard = dashboard_of(request)
    rows = dashboard.catalog.workers()
    names = dashboard.queue_names()
    return dashboard.render(request, 'workers.html', {'workers': rows, 'suspended': _suspended(dashboard, names)})


def functions(request: Request) -> Response:
    dashboard = dashboard_of(request)
    window = 'day' if request.query_params.get('window') == 'day' else 'hour'
    now = time.time()
    span, width, count = (86400.0, 900.0, DAY_BINS) if window == 'day' else (3600.0, 60.0, 60)
    minutes = dashboard.store.functions(now - span)
    merged = history.merge_functions(minutes)
    rows = sorted(merged.items(), key=lambda item: -item[1].count)
    chosen = request.query_params.get('fn') or (rows[0][0] if rows else '')
    charts = _function_charts(minutes, chosen, now - span, width, count, window) if chosen in merged else {}
    context = {'rows': rows, 'window': window, 'chosen': chosen, **charts}
    return dashboard.render(request, 'functions.html', context)


def _function_charts(
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


def scheduled(request: Request) -> Response:
    dashboard = dashboard_of(request)
    connection = dashboard.connection
    names = dashboard.queue_names()
    read_at, limits = dashboard.limits()
    context = {
        'queues': scheduled_queues(connection, names),
        'schedulers': cron_schedulers(connection) if not keys.SHARDED else [],
        'cron_names': cron_job_names(connection) if not keys.SHARDED else [],
        'limits': limits,
        'limits_read_at': read_at,
    }
    return dashboard.render(request, 'scheduled.html', context)


# --- logging in with the token


async def login(request: Request) -> Response:
    dashboard = dashboard_of(request)
    settings = dashboard.settings
    if settings.token is None:
        return RedirectResponse(href(request, 'overview'), status_code=303)
    given = request.query_params.get('token', '')
    if request.method == 'POST':
        body = (await request.body())[:4096]
        given = (parse_qs(as_text(body)).get('token') or [''])[0]
    if not given:
        return dashboard.render(request, 'login.html', {'title': 'Log in', 'message': '', 'login': True})
    if not guard.token_matches(settings, given):
        context = {'title': 'Wrong token', 'message': 'That token is not this dashboard’s.', 'login': True}
        return dashboard.render(request, 'login.html', context, 401)
    response = RedirectResponse(href(request, 'overview'), status_code=303)
    path = request.scope.get('root_path', '') or '/'
    response.set_cookie(guard.TOKEN_COOKIE, guard.token_cookie(settings), httponly=True, samesite='strict', path=path)
    return response


__all__ = ['ACTIONS', 'job_context', 'overview_context', 'queue_context']
