"""`rqfast dashboard`: a web dashboard of queues, jobs, workers and their history (docs/dashboard.md).

An optional extra: `pip install 'rqfast[dashboard]'` (Starlette, Jinja2, uvicorn, a2wsgi).

    from rqfast.dashboard import Settings, create_app
    app = create_app(Settings(connection=Redis()))        # an ASGI app: serve it, or mount it
"""

from __future__ import annotations

try:
    import jinja2  # noqa: F401  (imported here to name the extra when it is missing)
    import starlette  # noqa: F401
except ImportError as exc:  # pragma: no cover - what a user without the extra sees
    raise ImportError("rqfast's dashboard needs its extra: pip install 'rqfast[dashboard]'") from exc

from .app import create_app, create_wsgi_app
from .settings import DEFAULT_HOST, DEFAULT_PORT, Settings

__all__ = ['DEFAULT_HOST', 'DEFAULT_PORT', 'Settings', 'create_app', 'create_wsgi_app']
