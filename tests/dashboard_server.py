"""The dashboard served for a test: uvicorn in a thread of the test process, on a free loopback port."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import redis
import uvicorn

from rqfast.dashboard import Settings, create_app


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


@contextmanager
def served(app: Any, root_path: str = '') -> Iterator[str]:
    """The base URL of `app` served until the block ends."""
    port = free_port()
    config = uvicorn.Config(app, host='127.0.0.1', port=port, lifespan='on', log_level='warning', root_path=root_path)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError('the dashboard did not start')
        time.sleep(0.02)
    try:
        yield f'http://127.0.0.1:{port}'
    finally:
        server.should_exit = True
        thread.join(10)


@contextmanager
def dashboard(connection: redis.Redis, **settings: Any) -> Iterator[httpx.Client]:
    """An HTTP client of a dashboard on `connection` (no history sampling unless asked)."""
    settings.setdefault('sample', False)
    with served(create_app(Settings(connection=connection, **settings))) as url, httpx.Client(base_url=url) as client:
        yield client


def csrf(client: httpx.Client, path: str = '/') -> str:
    """The CSRF token of a page's forms (the page sets the cookie it is bound to)."""
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get(path).text)
    assert found, f'no CSRF token on {path}'
    return found.group(1)


def state(connection: redis.Redis) -> dict[bytes, Any]:
    """Every key's serialized value but the dashboard's own: equal before and after means nothing changed."""
    return {key: connection.dump(key) for key in sorted(connection.keys('*')) if b':dashboard:' not in key}
