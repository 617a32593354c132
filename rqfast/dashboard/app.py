"""The dashboard as an ASGI application (Starlette): `create_app(settings)`, to serve with any ASGI
server or to mount in an ASGI app; `create_wsgi_app(settings)` for a WSGI one (a2wsgi).

Every page is rendered on the server (Jinja2, autoescaped), its charts are inline SVG, and the few
lines of script it has (static/dashboard.js: live updates, the events stream) are this package's own:
nothing is fetched from anywhere else.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import redis
from a2wsgi import ASGIMiddleware
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from . import guard, live, pages, submit
from .settings import Settings
from .state import HERE, Dashboard, route_path

log = logging.getLogger(__name__)
PUBLIC = ('/static/', '/health', '/login')  # answered without auth (the login form; stylesheet and script)


class _Auth:
    """Refuses a request without the basic auth or token (pure ASGI: streamed responses pass through)."""

    def __init__(self, app: ASGIApp, dashboard: Dashboard) -> None:
        self.app = app
        self.dashboard = dashboard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope['type'] != 'http' or not self.dashboard.settings.protected:
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        path = route_path(scope)
        if path.startswith(PUBLIC) or guard.allowed(self.dashboard.settings, request):
            await self.app(scope, receive, send)
            return
        await pages.unauthorized(self.dashboard, request)(scope, receive, send)


class _Errors:
    """A clear page for what goes wrong in a handler (Redis away, a reply it cannot read), no traceback."""

    def __init__(self, app: ASGIApp, dashboard: Dashboard) -> None:
        self.app = app
        self.dashboard = dashboard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def sending(message: Any) -> None:
            nonlocal started
            started = started or message['type'] == 'http.response.start'
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started or scope['type'] != 'http':
                raise
            log.exception('dashboard: %s %s failed', scope.get('method'), scope.get('path'))
            unreachable = isinstance(exc, redis.ConnectionError | redis.TimeoutError)
            status = 503 if unreachable else 500
            what = 'Redis cannot be reached' if unreachable else 'This page could not be made'
            text = f'{what}: {type(exc).__name__}: {exc}'
            response = self.dashboard.render(Request(scope), 'message.html', {'title': what, 'message': text}, status)
            await response(scope, receive, send)


def create_app(settings: Settings) -> Starlette:
    """The dashboard's ASGI app. Its history sampler starts with the app's lifespan (or with the first
    request, where the host app does not pass lifespan events on to a mounted one)."""
    dashboard = Dashboard(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        dashboard.start()
        try:
            yield
        finally:
            dashboard.stop()

    routes = [
        Route('/', pages.overview, name='overview'),
        Route('/queues', pages.queues, name='queues'),
        Route('/queues/{name:path}/jobs/{kind}', pages.registry_page, name='registry'),
        Route('/queues/{name:path}', pages.queue_page, name='queue'),
        Route('/jobs', pages.jobs, name='jobs'),
        Route('/jobs/{job_id}', pages.job_page, name='job'),
        Route('/workers', pages.workers, name='workers'),
        Route('/functions', pages.functions, name='functions'),
        Route('/scheduled', pages.scheduled, name='scheduled'),
        Route('/login', pages.login, methods=['GET', 'POST'], name='login'),
        Route('/actions/{action}', submit.action, methods=['POST'], name='action'),
        Route('/live/overview', live.overview, name='live_overview'),
        Route('/live/jobs/{job_id}', live.job, name='live_job'),
        Route('/live/events/{name:path}', live.events, name='live_events'),
        Route('/health', lambda request: PlainTextResponse('ok'), name='health'),
        Mount('/static', StaticFiles(directory=HERE / 'static'), name='static'),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.dashboard = dashboard
    app.add_middleware(_Auth, dashboard=dashboard)
    app.add_middleware(_Errors, dashboard=dashboard)
    return app


def create_wsgi_app(settings: Settings) -> Any:
    """The same app as WSGI (through a2wsgi), to mount in Flask, Django or any WSGI server. Its sampler
    starts now (a WSGI server sends no lifespan events)."""
    app = create_app(settings)
    app.state.dashboard.start()
    return ASGIMiddleware(cast(Any, app))


__all__ = ['create_app', 'create_wsgi_app']
