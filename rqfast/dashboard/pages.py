"""The pages' request handlers: their parameters, status codes and redirects (what a page shows: contexts.py)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlencode

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from .. import keys
from ..text import as_text
from . import guard, history, jobview, reads
from .contexts import DAY_BINS, function_charts, job_context, overview_context, queue_context, suspended
from .schedules import cron_job_names, cron_schedulers
from .schedules import scheduled as scheduled_queues
from .state import Dashboard, dashboard_of, href

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


def overview(request: Request) -> Response:
    dashboard = dashboard_of(request)
    return dashboard.render(request, 'overview.html', overview_context(dashboard))


# --- queues


def queues(request: Request) -> Response:
    dashboard = dashboard_of(request)
    rows = reads.queue_rows(dashboard.connection, dashboard.queue_names(), dashboard.settings.serializer)
    read_at, limits = dashboard.limits()
    return dashboard.render(request, 'queues.html', {'rows': rows, 'limits': limits, 'limits_read_at': read_at})


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
    return dashboard.render(request, 'workers.html', {'workers': rows, 'suspended': suspended(dashboard, names)})


def functions(request: Request) -> Response:
    dashboard = dashboard_of(request)
    window = 'day' if request.query_params.get('window') == 'day' else 'hour'
    now = time.time()
    span, width, count = (86400.0, 900.0, DAY_BINS) if window == 'day' else (3600.0, 60.0, 60)
    minutes = dashboard.store.functions(now - span)
    merged = history.merge_functions(minutes)
    rows = sorted(merged.items(), key=lambda item: -item[1].count)
    chosen = request.query_params.get('fn') or (rows[0][0] if rows else '')
    charts = function_charts(minutes, chosen, now - span, width, count, window) if chosen in merged else {}
    context = {'rows': rows, 'window': window, 'chosen': chosen, **charts}
    return dashboard.render(request, 'functions.html', context)


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
