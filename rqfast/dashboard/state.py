"""What the handlers share: the settings, the catalog of queues and workers, the history, the templates."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from . import format as fmt
from . import guard
from .catalog import Catalog
from .history import HistoryStore
from .sampler import Sampler
from .schedules import LimitRow, limits
from .settings import Settings

HERE = Path(__file__).resolve().parent
NOTICE_COOKIE = 'rqfast_dashboard_notice'  # what the last action did, shown once on the next page
LIMITS_TTL = 60.0  # seconds the rate limits (found by a SCAN) are kept before a page asks for them again


class Dashboard:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.connection = settings.connection
        self.catalog = Catalog(settings.connection)
        self.store = HistoryStore(settings.connection)
        self.sampler = Sampler(
            settings.connection, self.catalog, settings.sample_interval, settings.serializer, self.read_limits
        )
        self.templates = Environment(
            loader=FileSystemLoader(HERE / 'templates'), autoescape=select_autoescape(default=True), auto_reload=False
        )
        self.templates.filters.update(fmt.FILTERS)
        self._limits: tuple[float, list[LimitRow]] | None = None
        self._limits_lock = threading.Lock()
        self._reading_limits = False

    def start(self) -> None:
        if self.settings.sample:
            self.sampler.start()

    def stop(self) -> None:
        self.sampler.stop()

    def queue_names(self) -> list[str]:
        return self.catalog.queue_names()

    def read_limits(self) -> None:
        """Read the rate limits again (a SCAN of the server: from the sampler's thread, or one of its own)."""
        found = (time.time(), limits(self.connection, self.queue_names()))
        with self._limits_lock:
            self._limits = found

    def limits(self) -> tuple[float | None, list[LimitRow]]:
        """(when read, the rate-limit rows) as last read; a page never waits for the SCAN: when they are
        missing or older than LIMITS_TTL (no sampler running here), a thread reads them again."""
        with self._limits_lock:
            found, stale = self._limits, self._limits is None or time.time() - self._limits[0] > LIMITS_TTL
            if stale and not self._reading_limits:
                self._reading_limits = True
                threading.Thread(target=self._read_limits_once, name='rqfast-dashboard-limits', daemon=True).start()
        return found if found is not None else (None, [])

    def _read_limits_once(self) -> None:
        try:
            self.read_limits()
        finally:
            self._reading_limits = False

    def render(self, request: Request, template: str, context: dict[str, Any], status: int = 200) -> Response:
        """A page, with what every page has (the CSRF token, links, the notice of the last action)."""
        identity, fresh = guard.csrf_id(request)
        fragment = template.endswith('_live.html')  # a live update: the notice is the page's to show
        notice = '' if fragment else unquote(request.cookies.get(NOTICE_COOKIE, ''))
        body = self.templates.get_template(template).render(
            request=request,
            url=lambda route, **params: href(request, route, **params),
            root=request.scope.get('root_path', ''),
            here=here(request),
            csrf=guard.csrf_token(self.settings, identity),
            settings=self.settings,
            notice=notice,
            now=time.time(),
            **context,
        )
        response = HTMLResponse(body, status_code=status)
        path = request.scope.get('root_path', '') or '/'
        if fresh:
            response.set_cookie(guard.CSRF_COOKIE, identity, httponly=True, samesite='strict', path=path)
        if notice:
            response.delete_cookie(NOTICE_COOKIE, path=path)
        response.headers['cache-control'] = 'no-store'
        return response


def route_path(scope: Mapping[str, Any]) -> str:
    """The path within the dashboard: the request's path less the prefix it is mounted at, where the path
    holds that prefix (Starlette's Mount) and as it is where it does not (a2wsgi's SCRIPT_NAME)."""
    path, root = str(scope['path']), str(scope.get('root_path', ''))
    if root and path.startswith(root) and path[len(root) : len(root) + 1] in ('/', ''):
        return path[len(root) :] or '/'
    return path


def here(request: Request) -> str:
    """The page's own path and query, under the dashboard's prefix (where an action goes back to)."""
    query = request.scope.get('query_string', b'').decode('latin-1')
    path = str(request.scope.get('root_path', '')).rstrip('/') + route_path(request.scope)
    return path + ('?' + query if query else '')


def href(request: Request, route: str, /, **params: Any) -> str:
    """The path of the dashboard's route `name`, under the prefix it is mounted at (its ASGI root_path)."""
    inner = request.app.router.url_path_for(route, **{k: quote(str(v), safe='/') for k, v in params.items()})
    return str(request.scope.get('root_path', '')).rstrip('/') + str(inner)


def dashboard_of(request: Request) -> Dashboard:
    """The request's dashboard, its sampler started (where no lifespan event reached a mounted app: now)."""
    found: Dashboard = request.app.state.dashboard
    found.start()
    return found
