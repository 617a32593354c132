"""What the pages' script fetches to stay live: the overview's and a job's changing parts (HTML
fragments, polled), and a queue's event stream (rqfast.events) as server-sent events."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from .. import keys
from ..events import Event
from ..text import as_text
from .contexts import job_context, overview_context
from .jobview import valid_id
from .pages import not_found
from .state import dashboard_of

MAX_STREAMS = 8  # event streams open at once (each holds a thread and a connection while it waits)
STREAM_LIFE = 55.0  # seconds a stream stays open; the browser's EventSource reconnects, from its last id
BLOCK_MS = 5000
STREAM_ID = re.compile(r'\d{1,20}-\d{1,20}')


def overview(request: Request) -> Response:
    dashboard = dashboard_of(request)
    return dashboard.render(request, 'overview_live.html', overview_context(dashboard))


def job(request: Request) -> Response:
    dashboard = dashboard_of(request)
    job_id, queue_name = request.path_params['job_id'], request.query_params.get('queue', '')
    context = job_context(dashboard, job_id, queue_name)
    if context is None:
        return not_found(dashboard, request, f'There is no job {job_id!r} (any more).')
    return dashboard.render(request, 'job_live.html', context)


def events(request: Request) -> Response:
    """`text/event-stream` of queue `name`'s events (those of one job with `?job=`), from the browser's
    Last-Event-ID on, else from now; 503 when too many are open (the page polls instead)."""
    dashboard = dashboard_of(request)
    name, job_id = request.path_params['name'], request.query_params.get('job', '')
    if name not in dashboard.queue_names() or (job_id and not valid_id(job_id)):
        return not_found(dashboard, request, f'There is no queue named {name!r}.')
    ticket = _open_stream()
    if ticket is None:
        return Response('too many event streams open', status_code=503)
    with keys.within(name):
        key = keys.events_key(name)
    resumed = request.headers.get('last-event-id', '')
    since = resumed if STREAM_ID.fullmatch(resumed) else _last_id(dashboard.connection, key)
    headers = {'cache-control': 'no-store', 'x-accel-buffering': 'no'}
    return StreamingResponse(
        _stream(dashboard.connection, key, since, job_id, ticket), media_type='text/event-stream', headers=headers
    )


def _last_id(connection: Any, key: str) -> str:
    newest = connection.xrevrange(key, count=1)
    return as_text(newest[0][0]) if newest else '0-0'


_open: dict[object, float] = {}  # the streams open: ticket -> when it ends at the latest
_open_lock = threading.Lock()


def _open_stream() -> object | None:
    """A ticket for one more stream, or None when MAX_STREAMS are open (a stream whose client left and
    whose generator was never closed counts only until its end: its ticket lapses)."""
    now = time.monotonic()
    with _open_lock:
        for ticket, ends in list(_open.items()):
            if ends < now:
                del _open[ticket]
        if len(_open) >= MAX_STREAMS:
            return None
        ticket = object()
        _open[ticket] = now + STREAM_LIFE + BLOCK_MS / 1000 + 5
        return ticket


def _stream(connection: Any, key: str, since: str, job_id: str, ticket: object) -> Iterator[str]:
    try:
        yield 'retry: 3000\n\n'
        ends = time.monotonic() + STREAM_LIFE
        while time.monotonic() < ends:
            reply = connection.xread({key: since}, count=100, block=BLOCK_MS)
            if not reply:
                yield ': idle\n\n'  # a comment: keeps proxies from closing a quiet stream
                continue
            for entry_id, fields in reply[0][1]:
                event = Event.from_entry(entry_id, fields)
                since = event.id
                if job_id and event.job_id != job_id:
                    continue
                data = {'name': event.name, 'job_id': event.job_id, 'worker': event.worker, 'detail': event.detail}
                yield f'id: {event.id}\nevent: job\ndata: {json.dumps({**data, "at": event.timestamp.timestamp()})}\n\n'
    finally:
        with _open_lock:
            _open.pop(ticket, None)
