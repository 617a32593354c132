"""The `rqfast` command: `rq`'s commands, options and output, running rqfast (a Procfile changes one word)."""

from __future__ import annotations

import platform

import click
import redis

from .. import defaults, keys
from ..defaults import RQ_KEY_PREFIX
from ..version import RQ_API_VERSIONS, VERSION
from .admin import empty, pause, requeue, resume, suspend, unpause
from .alive import worker_alive
from .cli_cron import cron
from .dashboard import dashboard
from .doctor import doctor
from .enqueue import enqueue
from .errors import CliError
from .event_stream import events
from .exporter import metrics
from .monitor import info
from .pool import worker_pool
from .rate_limits import rate_limits
from .workers import worker

# Sharded by queue (RQFAST_SHARDING=queue), the commands that work queue by queue (the dashboard reads
# every keyspace): the others read or write one keyspace, so they run once per queue with that queue's
# keyspace as their prefix.
SHARDED_COMMANDS = frozenset({'worker', 'worker-pool', 'enqueue', 'empty', 'suspend', 'resume', 'dashboard'})


def version_text() -> str:
    """`rqfast --version`: rqfast's version, the RQ APIs it serves and the one this process follows."""
    default, *others = RQ_API_VERSIONS
    switch = ', '.join(f'RQ {v} with RQFAST_COMPAT={v}' for v in others)
    return (
        f'rqfast {VERSION}\n'
        f'RQ API and Redis layout: RQ {default} (the default); {switch}; '
        f'this process follows RQ {defaults.RQFAST_COMPAT}\n'
        f'Python {platform.python_version()}, redis-py {redis.__version__}'
    )


def show_version(context: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not context.resilient_parsing:
        click.echo(version_text())
        context.exit()


@click.group()
@click.option(
    '--version',
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=show_version,
    help="Show rqfast's version and the RQ versions it serves, and exit.",
)
@click.pass_context
def main(context: click.Context) -> None:
    """rqfast command line tool (RQ's `rq`, for rqfast)."""
    command = context.invoked_subcommand
    if keys.SHARDED and command not in SHARDED_COMMANDS:
        raise CliError(
            f'RQFAST_SHARDING=queue: each queue is a keyspace of its own; run `{command}` per queue, with '
            f"RQ_KEY_PREFIX='{{{RQ_KEY_PREFIX}:<queue>}}' and RQFAST_SHARDING unset (docs/connections.md)"
        )


for command in (
    worker,
    worker_pool,
    info,
    empty,
    requeue,
    enqueue,
    suspend,
    resume,
    pause,
    unpause,
    cron,
    metrics,
    worker_alive,
    events,
    rate_limits,
    doctor,
    dashboard,
):
    main.add_command(command)

__all__ = ['cron', 'doctor', 'enqueue', 'events', 'info', 'main', 'metrics', 'worker', 'worker_alive', 'worker_pool']
