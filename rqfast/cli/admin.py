"""`rqfast suspend`, `rqfast resume` and `rqfast info`: RQ's commands of those names, on the same keys."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import click
import redis

from ..queue import Queue
from ..suspension import resume as resume_workers
from ..suspension import suspend as suspend_workers
from ..worker import BaseWorker
from .settings import connect, prepend_paths, read_settings, redis_options


def _connection(url: str | None, config: str | None, path: tuple[str, ...], connection_class: str) -> redis.Redis:
    from .classes import connection_class as load_connection_class

    prepend_paths(path)
    return connect(url, config, read_settings(config), load_connection_class(connection_class))


@click.command()
@click.option('--duration', type=int, help='Seconds to stay suspended (default: until `rqfast resume`).')
@redis_options
def suspend(duration: int | None, **options: Any) -> None:
    """Suspend every worker: jobs in hand finish, no new ones start."""
    if duration is not None and duration < 1:
        raise click.ClickException('--duration must be a whole number of seconds, 1 or more')
    connection = _connection(**options)
    suspend_workers(connection, duration)
    if duration:
        click.echo(f'Suspending workers for {duration} seconds; they resume on their own after that.')
    else:
        click.echo('Suspending workers. No new jobs will be started, but current jobs will be completed.')


@click.command()
@redis_options
def resume(**options: Any) -> None:
    """Resume the workers `rqfast suspend` (or `rq suspend`) suspended."""
    resume_workers(_connection(**options))
    click.echo('Resuming workers.')


@click.command()
@click.option('--interval', '-i', type=float, help='Refresh every N seconds (default: print once).')
@click.option('--raw', '-r', is_flag=True, help='Plain lines, no bar charts.')
@click.option('--only-queues', '-Q', is_flag=True, help='Show only queues.')
@click.option('--only-workers', '-W', is_flag=True, help='Show only workers.')
@click.argument('queues', nargs=-1)
@redis_options
def info(
    interval: float | None, raw: bool, only_queues: bool, only_workers: bool, queues: tuple[str, ...], **options: Any
) -> None:
    """Queues with their job counts, and workers with their state."""
    connection = _connection(**options)
    try:
        while True:
            if interval:
                click.clear()
            selected = [Queue(name, connection=connection) for name in queues] or sorted(Queue.all(connection))
            if not only_workers:
                show_queues(selected, raw)
            if not only_queues:
                show_workers(connection, selected if queues else None, raw)
            if not raw:
                click.echo(f'\nUpdated: {datetime.now():%Y-%m-%d %H:%M:%S}')
            if not interval:
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        click.echo()


def show_queues(queues: list[Queue], raw: bool) -> None:
    counts = {queue.name: queue.count for queue in queues}
    scale = max([20, *counts.values()])
    for queue in queues:
        count = counts[queue.name]
        registries = (
            f'{queue.started_job_registry.count} executing, {queue.finished_job_registry.count} finished, '
            f'{queue.failed_job_registry.count} failed'
        )
        if raw:
            click.echo(f'queue {queue.name} {count}, {registries}')
        else:
            chart = click.style('|' + '█' * (20 * count // scale), fg='green')
            click.echo(f'{queue.name:<12} {chart} {count}, {registries}')
    if not raw:
        click.echo(f'{len(queues)} queues, {sum(counts.values())} jobs total\n')


def show_workers(connection: redis.Redis, queues: list[Queue] | None, raw: bool) -> None:
    if queues is None:
        found = set(BaseWorker.all(connection))
    else:
        found = {worker for queue in queues for worker in BaseWorker.all(connection, queue=queue)}
    for worker in sorted(found, key=lambda w: w.name):
        state = worker.get_state()
        line = (
            f'{worker.name} ({worker.hostname} {worker.pid}): {state} {", ".join(worker.queue_names())}. '
            f'jobs: {worker.successful_job_count} finished, {worker.failed_job_count} failed'
        )
        click.echo(f'worker {line}' if raw else line)
    if not raw:
        click.echo(f'{len(found)} workers')
