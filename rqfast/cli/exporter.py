"""`rqfast metrics`: a Prometheus exporter for a whole Redis (rq-exporter's metrics, and rqfast's own)."""

from __future__ import annotations

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
    click.echo(f'Serving metrics at http://{options["host"]}:{options["port"]}/metrics')
    try:
        serve_forever(connection, options['port'], options['host'])
    except OSError as exc:
        raise CliError(f'cannot listen on {options["host"]}:{options["port"]}: {exc}') from exc
    except KeyboardInterrupt:
        pass
