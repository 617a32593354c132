"""`rqfast metrics`: a Prometheus exporter for a whole Redis (rq-exporter's metrics, and rqfast's own)."""

from __future__ import annotations

import signal
import threading
from typing import Any

import click

from ..metrics import MetricsUnavailable, prometheus, serve_forever
from .classes import connection_class
from .errors import CliError
from .settings import connect, prepend_paths, read_settings, redis_options


@click.command('metrics')
@redis_options
@click.option('--port', type=click.IntRange(min=0, max=65535), default=9726, show_default=True, help='Port to serve.')
@click.option('--host', default='0.0.0.0', show_default=True, help='Address to bind.')
def metrics(**options: Any) -> None:
    """Serve Prometheus metrics of every queue and worker at http://HOST:PORT/metrics."""
    try:
        prometheus()
    except MetricsUnavailable as exc:
        raise CliError(str(exc)) from exc
    prepend_paths(options['path'])
    settings = read_settings(options['config'])
    connection = connect(options['url'], options['config'], settings, connection_class(options['connection_class']))
    stop = threading.Event()
    stopped_by: list[str] = []

    def on_sigterm(signum: int, frame: Any) -> None:
        stopped_by.append('SIGTERM')
        stop.set()

    previous = signal.signal(signal.SIGTERM, on_sigterm)  # a stop as Ctrl+C's: status 0 and a message
    try:
        serve_forever(connection, options['port'], options['host'], stop, on_listening=announce)
    except OSError as exc:
        raise CliError(f'cannot listen on {options["host"]}:{options["port"]}: {exc}') from exc
    except KeyboardInterrupt:
        stopped_by.append('Ctrl+C')
    finally:
        signal.signal(signal.SIGTERM, previous)
    click.echo(f'Stopped serving metrics ({stopped_by[0] if stopped_by else "stopped"})')


def announce(url: str) -> None:
    click.echo(f'Serving metrics at {url}')
