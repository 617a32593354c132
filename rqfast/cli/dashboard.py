"""`rqfast dashboard`: the web dashboard (`pip install 'rqfast[dashboard]'`), rqfast's own command."""

from __future__ import annotations

import os
from typing import Any

import click

from ..security import JobPolicy
from .config import CliConfig, pass_cli_config
from .errors import CliError
from .settings import read_settings

DEFAULT_HOST, DEFAULT_PORT = '127.0.0.1', 9181  # rq-dashboard's port (rqfast.dashboard.settings has the same)


def _extra() -> Any:
    """rqfast.dashboard.server, imported when the command runs: its extra is optional (`rqfast --help` needs none)."""
    try:
        from ..dashboard import server
    except ImportError as exc:
        raise CliError(str(exc)) from exc
    return server


def _allow(given: list[str], settings: dict[str, Any]) -> list[str] | None:
    """--allow, else settings ALLOWED_FUNCTIONS (as `rqfast worker` reads them); None: no allow-list."""
    allow: Any = given or settings.get('ALLOWED_FUNCTIONS')
    if isinstance(allow, str):
        allow = [allow]
    if allow is not None and not (isinstance(allow, list | tuple) and all(isinstance(a, str) and a for a in allow)):
        raise CliError(f'ALLOWED_FUNCTIONS: a list of dotted module prefixes or names, not {allow!r}')
    return None if allow is None else list(allow)


def _auth(value: str | None) -> tuple[str, str] | None:
    if not value:
        return None
    user, colon, password = value.partition(':')
    if not colon or not user or not password:
        raise CliError('--auth: USER:PASSWORD, neither empty')
    return user, password


@click.command('dashboard')
@click.option('--host', default=DEFAULT_HOST, show_default=True, help='Address to bind (loopback unless told).')
@click.option('--port', type=click.IntRange(min=0, max=65535), default=DEFAULT_PORT, show_default=True)
@click.option('--url-prefix', default='', help='The path it is served under behind a proxy (e.g. /rq).')
@click.option('--read-only', is_flag=True, help='Show everything, change nothing (no action buttons).')
@click.option('--auth', envvar='RQFAST_DASHBOARD_AUTH', help='USER:PASSWORD for HTTP basic auth.')
@click.option('--token', envvar='RQFAST_DASHBOARD_TOKEN', help='A token to log in with (or send as a Bearer header).')
@click.option(
    '--secret', envvar='RQFAST_DASHBOARD_SECRET', help='Signs CSRF tokens and the login cookie (default: random).'
)
@click.option(
    '--allow',
    multiple=True,
    help="The workers' allow-list (settings ALLOWED_FUNCTIONS): payloads outside it are not read.",
)
@click.option('--no-decode', is_flag=True, help="Never read a job's payload (arguments, meta, results).")
@click.option(
    '--sample-interval',
    type=click.FloatRange(min=1),
    default=5.0,
    show_default=True,
    help='Seconds between history samples.',
)
@click.option('--no-sample', is_flag=True, help='Take no history samples in this process (another dashboard does).')
@pass_cli_config
def dashboard(cli_config: CliConfig, **options: Any) -> None:
    """Serve the web dashboard: queues, jobs, workers, history and actions, at http://HOST:PORT/."""
    server = _extra()
    settings_module = read_settings(cli_config.config)
    allow = _allow(list(options['allow']), settings_module)
    key = settings_module.get('SIGNING_KEY')
    secret = (options['secret'] or '').encode() or os.urandom(32)
    if len(secret) < 16:
        raise CliError('--secret: at least 16 characters')
    settings = server.Settings(
        connection=cli_config.connection,
        serializer=cli_config.serializer,
        policy=JobPolicy.make(allow, key),
        decode=not options['no_decode'],
        read_only=options['read_only'],
        basic_auth=_auth(options['auth']),
        token=options['token'] or None,
        secret=secret,
        sample=not options['no_sample'],
        sample_interval=options['sample_interval'],
    )
    cli_config.connection.ping()
    host, port = options['host'], options['port']
    if not server.is_loopback(host) and not settings.protected:
        click.secho(f'Warning: {host} is reachable from other machines and no --auth or --token is set.', fg='yellow')
    click.echo(f'rqfast dashboard at http://{host}:{port}{options["url_prefix"].rstrip("/")}/')
    server.serve(settings, host, port, options['url_prefix'])
