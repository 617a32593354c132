"""`rqfast worker-alive`: a liveness probe (rqfast's own command; `rq` has none).

Exit status 0 when a worker heartbeated within --max-age seconds, else 1, with one line saying
which worker and how long ago. By default the worker is the one running here: its hash names this
host (socket.gethostname(), a pod's name in Kubernetes) and a pid that is alive in this process's
pid namespace, so an exec probe in the worker's container needs no worker name. --name checks one
worker wherever it runs.

A worker's heartbeat thread refreshes `last_heartbeat` every third of min(job monitoring interval,
worker TTL / 2): every 10 s with the defaults, while it waits and while its jobs run.
"""

from __future__ import annotations

import os
import socket
import sys
from datetime import datetime

import click

from .. import keys
from ..dates import now, utcparse
from ..text import as_text
from .config import CliConfig, pass_cli_config

DEFAULT_MAX_AGE = 60  # seconds: six missed heartbeats with the default settings


def pid_alive(pid: int) -> bool:
    """Whether `pid` names a live process here (a zombie counts: its parent has not reaped it yet)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process, but alive
    return True


def heartbeats(cli_config: CliConfig, name: str | None) -> list[tuple[str, datetime | None]]:
    """(worker name, last heartbeat) of the named worker, or of every worker running on this host;
    a worker that recorded its death is not among them."""
    connection = cli_config.connection
    if name is not None:
        worker_keys = [keys.worker_key(name)]
    else:
        worker_keys = sorted(as_text(key) for key in connection.smembers(keys.WORKERS))
    pipe = connection.pipeline(transaction=False)
    for key in worker_keys:
        pipe.hmget(key, ['hostname', 'pid', 'last_heartbeat', 'death'])
    here = socket.gethostname()
    found = []
    for key, (hostname, pid, beat, death) in zip(worker_keys, pipe.execute(), strict=True):
        if name is None and (as_text(hostname or b'') != here or not pid_alive(int(pid or 0))):
            continue
        if death is not None or (hostname is None and beat is None):
            continue  # stopped, or no such hash
        found.append((key[len(keys.WORKER_PREFIX) :], utcparse(beat) if beat else None))
    return found


@click.command('worker-alive')
@click.option('--name', '-n', help='The worker to check (default: the workers running on this host).')
@click.option(
    '--max-age',
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_AGE,
    show_default=True,
    help='Seconds since the last heartbeat past which the worker counts as dead.',
)
@pass_cli_config
def worker_alive(cli_config: CliConfig, name: str | None, max_age: int) -> None:
    """Exit 0 if the worker (default: one running on this host) heartbeated within --max-age seconds.

    A liveness probe for a container or a supervisor: exit status 1 when no such worker is
    registered or its last heartbeat is older.
    """
    found = heartbeats(cli_config, name)
    if not found:
        where = f'named {name!r}' if name is not None else f'running on {socket.gethostname()}'
        click.echo(f'no worker {where} is registered')
        sys.exit(1)
    moment = now()
    ages = [(worker, (moment - beat).total_seconds() if beat else None) for worker, beat in found]
    fresh = [(worker, age) for worker, age in ages if age is not None and age <= max_age]
    for worker, age in fresh or ages:
        said = 'never' if age is None else f'{age:.0f} s ago'
        click.echo(f'worker {worker}: last heartbeat {said}')
    if not fresh:
        sys.exit(1)
