"""`rqfast suspend`, `resume`, `empty` and `requeue`: RQ's commands of those names, same keys, same output.

`rqfast pause` and `unpause` are rqfast's own: one queue at a time (rq:paused-queues; RQ's workers ignore it).
"""

from __future__ import annotations

import sys

import click

from ..exceptions import InvalidJobOperation, InvalidJobOperationError, NoSuchJobError
from ..registry import FailedJobRegistry
from ..suspension import pause_queue, resume_queue
from ..suspension import resume as resume_workers
from ..suspension import suspend as suspend_workers
from .config import CliConfig, pass_cli_config

# `rq suspend --duration N`'s message, its odd line break included: scripts that match rq's output match ours.
TIMED_SUSPENSION = """Suspending workers for {} seconds. No new jobs will be started during that time, but then will
        automatically resume"""


@click.command()
@click.option('--duration', help='Seconds you want the workers to be suspended.  Default is forever.', type=int)
@pass_cli_config
def suspend(cli_config: CliConfig, duration: int | None) -> None:
    """Suspends all workers, to resume run `rqfast resume` (or `rq resume`)"""
    if duration is not None and duration < 1:
        click.echo('Duration must be an integer greater than 1')
        sys.exit(1)
    suspend_workers(cli_config.connection, duration)
    if duration:
        click.echo(TIMED_SUSPENSION.format(duration))
    else:
        click.echo('Suspending workers.  No new jobs will be started.  But current jobs will be completed')


@click.command()
@pass_cli_config
def resume(cli_config: CliConfig) -> None:
    """Resumes processing of queues, that were suspended with `rqfast suspend` (or `rq suspend`)"""
    resume_workers(cli_config.connection)
    click.echo('Resuming workers.')


@click.command()
@click.argument('queues', nargs=-1, required=True)
@pass_cli_config
def pause(cli_config: CliConfig, queues: tuple[str, ...]) -> None:
    """Pause the given queues: rqfast workers start none of their jobs (running ones finish) until `rqfast unpause`.

    Workers of rq itself do not know about paused queues and keep taking their jobs.
    """
    for name in queues:
        pause_queue(cli_config.connection, name)
        click.echo(f'Paused queue {name}.  No new jobs will be started from it by rqfast workers.')


@click.command()
@click.argument('queues', nargs=-1, required=True)
@pass_cli_config
def unpause(cli_config: CliConfig, queues: tuple[str, ...]) -> None:
    """Unpause queues paused with `rqfast pause` (or Queue.pause())."""
    for name in queues:
        resume_queue(cli_config.connection, name)
        click.echo(f'Unpaused queue {name}.')


@click.command()
@click.option('--all', '-a', 'all_queues', is_flag=True, help='Empty all queues')
@click.argument('queues', nargs=-1)
@pass_cli_config
def empty(cli_config: CliConfig, all_queues: bool, queues: tuple[str, ...]) -> None:
    """Empty given queues."""
    queue_class, connection = cli_config.queue_class, cli_config.connection
    job_class, serializer = cli_config.job_class, cli_config.serializer
    if all_queues:
        selected = queue_class.all(connection, job_class, serializer, cli_config.death_penalty_class)
    else:
        selected = [
            queue_class(name, connection=connection, job_class=job_class, serializer=serializer) for name in queues
        ]
    if not selected:
        click.echo('Nothing to do')
        sys.exit(0)
    for queue in selected:
        removed = queue.empty()
        click.echo(f'{removed} jobs removed from {queue.name} queue')


@click.command()
@click.option('--all', '-a', 'all_jobs', is_flag=True, help='Requeue all failed jobs')
@click.option('--queue', required=True, type=str)
@click.argument('job_ids', nargs=-1)
@pass_cli_config
def requeue(cli_config: CliConfig, queue: str, all_jobs: bool, job_ids: tuple[str, ...]) -> None:
    """Requeue failed jobs.

    A job that is not in the queue's failed job registry (or does not exist) is counted and reported, and
    the command then exits with status 1 (`rq requeue` stops there with a traceback, also status 1).
    """
    registry = FailedJobRegistry(
        queue, connection=cli_config.connection, job_class=cli_config.job_class, serializer=cli_config.serializer
    )
    wanted = registry.get_job_ids() if all_jobs else list(job_ids)
    if not wanted:
        click.echo('Nothing to do')
        sys.exit(0)
    click.echo(f'Requeueing {len(wanted)} jobs from failed queue')
    failed = 0
    with click.progressbar(wanted) as bar:
        for job_id in bar:
            try:
                registry.requeue(job_id)
            except (InvalidJobOperation, InvalidJobOperationError, NoSuchJobError):
                failed += 1
    if failed:
        click.secho(f'Unable to requeue {failed} jobs from failed job registry', fg='red')
        sys.exit(1)
