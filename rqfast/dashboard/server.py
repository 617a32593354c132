"""Serving the dashboard on its own (`rqfast dashboard`): uvicorn, one process, its lifespan on."""

from __future__ import annotations

import ipaddress

import uvicorn

from .app import create_app
from .settings import Settings

__all__ = ['Settings', 'is_loopback', 'serve']


def is_loopback(host: str) -> bool:
    if host == 'localhost':
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(settings: Settings, host: str, port: int, root_path: str = '') -> None:
    """Serve until interrupted (uvicorn handles SIGINT and SIGTERM: a clean stop, the sampler's too)."""
    config = uvicorn.Config(
        create_app(settings),
        host=host,
        port=port,
        root_path=root_path.rstrip('/'),
        lifespan='on',
        log_level='warning',
        access_log=False,
        server_header=False,
    )
    uvicorn.Server(config).run()
