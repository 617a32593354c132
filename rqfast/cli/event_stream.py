"""`rqfast events QUEUE`: tail a queue's lifecycle events (rqfast's own command; see rqfast.events).

One line per event: when (UTC, to the millisecond), the event, the job id, then the worker and the
detail (a progress value, a failure's exception type) when there are any. Only jobs enqueued through
`Queue(..., events=True)` have events.
"""

from __future__ import annotations

import click

from ..events import Event, iter_events
from .config import CliConfig, pass_cli_config


def event_line(event: Event) -> str:
    """`2026-11-27T00:10:02.512Z progress 5f1c... worker=w1 50`"""
    line = f'{event.timestamp.isoformat(timespec="milliseconds")[:-6]}Z {event.name} {event.job_id}'
    if event.worker:
        line += f' worker={event.worker}'
    return f'{line} {event.detail}' if event.detail else line


@click.command('events')
@click.argument('queue')
@click.option(
    '--since',
    default='$',
    show_default=True,
    help='Print the events after this stream entry id: 0 for every event the stream holds, $ for new ones only.',
)
@click.option(
    '--follow/--no-follow', default=True, help='Keep waiting for new events (default), or stop once caught up.'
)
@click.option('--job', 'job_id', help='Only the events of this job.')
@pass_cli_config
def events(cli_config: CliConfig, queue: str, since: str, follow: bool, job_id: str | None) -> None:
    """Print the lifecycle events of QUEUE's jobs, one line each, as they happen (Ctrl-C stops)."""
    try:
        for event in iter_events(queue, cli_config.connection, since=since, block=0 if follow else None):
            if job_id is None or event.job_id == job_id:
                click.echo(event_line(event))
    except KeyboardInterrupt:
        pass
