"""The `rqfast` command: `rq`'s commands, options and output, running rqfast (a Procfile changes one word)."""

from __future__ import annotations

import click

from ..version import VERSION
from .admin import empty, pause, requeue, resume, suspend, unpause
from .alive import worker_alive
from .cli_cron import cron
from .enqueue import enqueue
from .event_stream import events
from .exporter import metrics
from .monitor import info
from .pool import worker_pool
from .rate_limits import rate_limits
from .workers import worker


@click.group()
@click.version_option(VERSION, prog_name='rqfast')
def main() -> None:
    """rqfast command line tool (RQ's `rq`, for rqfast)."""


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
):
    main.add_command(command)

__all__ = ['cron', 'enqueue', 'events', 'info', 'main', 'metrics', 'worker', 'worker_alive', 'worker_pool']
