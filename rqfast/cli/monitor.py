"""`rqfast info`: `rq info`'s monitor, line for line, so what reads its output (or a person) sees no change.

Queues and workers are listed by name (RQ's order is a Python set's, so it changes from run to run).
The printers keep RQ's signature (queues, raw, by_queue, queue_class, worker_class, connection): code that
calls rq.cli.helpers.show_queues calls rqfast.cli.helpers.show_queues the same way.
"""

from __future__ import annotations

import datetime
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from shutil import get_terminal_size
from typing import Any

import click
from redis import Redis

from ..connections import eviction_warning
from ..queue import Queue
from ..registry import clean_registries
from ..status import WorkerStatus
from ..suspension import paused_queues
from ..worker import BaseWorker
from ..worker_registration import clean_worker_registry
from .config import CliConfig, pass_cli_config

SCALES = [20, 50, 100, 200, 400, 600, 800, 1000]

green = partial(click.style, fg='green')

Printer = Callable[[Sequence[Queue], bool, bool, type[Queue], type[BaseWorker], Redis], None]


def pad(text: str, pad_to_length: int) -> str:
    return f'{text:<{pad_to_length}}'


def get_scale(count: int) -> int:
    """The smallest of the bar chart's scales that holds `count` (the count itself past the largest)."""
    return next((scale for scale in SCALES if count <= scale), count)


_STATE_COLOURS = {
    WorkerStatus.BUSY.value: 'red',
    WorkerStatus.IDLE.value: 'green',
    WorkerStatus.SUSPENDED.value: 'yellow',
}


def state_symbol(state: str) -> str:
    """A worker's state, coloured when it is busy, idle or suspended (colour shows only on a terminal)."""
    value = state.value if isinstance(state, WorkerStatus) else state
    colour = _STATE_COLOURS.get(value)
    return click.style(value, fg=colour) if colour else state


def _registries(queue: Queue) -> str:
    """The registries' counts; then, for a queue with priority lanes, its jobs per lane (`lanes 0:10 9:1000`)."""
    lanes = queue.priority_counts()
    return (
        f'{queue.started_job_registry.count} executing, {queue.finished_job_registry.count} finished, '
        f'{queue.failed_job_registry.count} failed'
    ) + (', lanes ' + ' '.join(f'{lane}:{count}' for lane, count in lanes.items()) if lanes else '')


def show_queues(
    queues: Sequence[Queue], raw: bool, by_queue: bool, queue_class: Any, worker_class: Any, connection: Redis
) -> None:
    """One line per queue: a bar chart (unless raw), its length and its registries' counts; then the total.

    A paused queue (Queue.pause(), `rqfast pause`) shows "(paused)" after its name (raw: ", paused" at the end);
    a queue with prioritized jobs, how many are in each lane after its registries (`, lanes 0:10 9:1000`).
    """
    counts = {queue.name: queue.count for queue in queues}
    paused = paused_queues(connection) if queues else set()
    chart_width = min(20, get_terminal_size().columns - 20)
    ratio = chart_width / get_scale(max(counts.values(), default=0))
    for queue in queues:
        count = counts[queue.name]
        if raw:
            click.echo(
                f'queue {queue.name} {count}, {_registries(queue)}' + (', paused' if queue.name in paused else '')
            )
        else:
            chart = green('|' + '█' * int(ratio * count))
            name = f'{queue.name} (paused)' if queue.name in paused else queue.name
            click.echo(f'{name:<12} {chart} {count}, {_registries(queue)}')
    if not raw:
        click.echo(f'{len(queues)} queues, {sum(counts.values())} jobs total')


def show_workers(
    queues: Sequence[Queue], raw: bool, by_queue: bool, queue_class: Any, worker_class: Any, connection: Redis
) -> None:
    """One line per worker (or per queue with --by-queue), then how many workers and queues."""
    if queues:
        workers = {worker for queue in queues for worker in worker_class.all(queue=queue, connection=connection)}
    else:
        workers = set(worker_class.all(connection=connection))
    if by_queue:
        _show_workers_by_queue(queues, worker_class, connection)
    else:
        for worker in sorted(workers, key=lambda worker: worker.name):
            click.echo(_worker_line(worker, raw))
    if not raw:
        click.echo(f'{len(workers)} workers, {len(queues)} queues')


def _worker_line(worker: BaseWorker, raw: bool) -> str:
    name = f'{worker.name} ({worker.hostname} {worker.ip_address} {worker.pid})'
    jobs = f'jobs: {worker.successful_job_count} finished, {worker.failed_job_count} failed'
    queue_names = ', '.join(worker.queue_names())
    if raw:
        return f'worker {name} {worker.get_state()} {queue_names}. {jobs}'
    return f'{name}: {state_symbol(worker.get_state())} {queue_names}. {jobs}'


def _show_workers_by_queue(queues: Sequence[Queue], worker_class: Any, connection: Redis) -> None:
    width = max((len(queue.name) for queue in queues), default=0) + 1
    for queue in queues:
        found = worker_class.all(queue=queue, connection=connection)
        names = sorted(f'{worker.name} ({state_symbol(worker.get_state())})' for worker in found)
        click.echo(f'{pad(queue.name + ":", width)} {", ".join(names) or "–"}')


def show_both(
    queues: Sequence[Queue], raw: bool, by_queue: bool, queue_class: Any, worker_class: Any, connection: Redis
) -> None:
    show_queues(queues, raw, by_queue, queue_class, worker_class, connection)
    if not raw:
        click.echo('')
    show_workers(queues, raw, by_queue, queue_class, worker_class, connection)
    if not raw:
        click.echo('')
        click.echo(f'Updated: {datetime.datetime.now()}')


def refresh(interval: float | None, func: Callable[..., None], *args: Any) -> None:
    """Print once, or (with an interval) clear the screen and print again every `interval` seconds."""
    while True:
        if interval:
            click.clear()
        func(*args)
        if not interval:
            return
        time.sleep(interval)


@click.command()
@click.option('--interval', '-i', type=float, help="Updates stats every N seconds (default: don't poll)")
@click.option('--raw', '-r', is_flag=True, help='Print only the raw numbers, no bar charts')
@click.option('--only-queues', '-Q', is_flag=True, help='Show only queue info')
@click.option('--only-workers', '-W', is_flag=True, help='Show only worker info')
@click.option('--by-queue', '-R', is_flag=True, help='Shows workers by queue')
@click.argument('queues', nargs=-1)
@pass_cli_config
def info(
    cli_config: CliConfig,
    interval: float | None,
    raw: bool,
    only_queues: bool,
    only_workers: bool,
    by_queue: bool,
    queues: tuple[str, ...],
) -> None:
    """Queues with their job counts, and workers with their state (RQ's `rq info`)."""
    if interval is not None and interval < 0:  # (rq's own `x is not a valid float` stays click's)
        raise click.BadParameter(f'{interval:g} is below 0: the seconds between updates', param_hint="'--interval'")
    printer: Printer = show_queues if only_queues else show_workers if only_workers else show_both
    connection = cli_config.connection
    if queues:
        selected = [cli_config.queue_class(name, connection=connection) for name in queues]
    else:
        selected = sorted(cli_config.queue_class.all(connection=connection), key=lambda queue: queue.name)
    for queue in selected:  # as `rq info` does: stale registry entries and dead workers do not count
        clean_registries(queue)
        clean_worker_registry(queue)
    evicting = eviction_warning(connection)  # (None when the server will not say)
    if evicting:
        click.echo(f'Warning: {evicting}', err=True)
    try:
        refresh(interval, printer, selected, raw, by_queue, cli_config.queue_class, cli_config.worker_class, connection)
    except KeyboardInterrupt:
        click.echo()
        sys.exit(0)
