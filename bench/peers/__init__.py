"""The other Python job queues (`python -m bench --peers`): dramatiq, celery, huey, arq, saq, taskiq.

Each has a module here (`<name>_side.py`) with the same four functions, which `harness.py` times and
checks the same way for all of them:

- `enqueue(url, job, count)`: setup, not timed: `count` jobs of `job` (a name in bench.jobs) queued;
- `insert(url, job, count, bulk) -> seconds`: the same, timed (after connecting), one by one or in bulk;
- `queued(url) -> int`: how many jobs the library holds in Redis, waiting;
- `work(url, job, count, concurrency, timeout) -> start`: one worker in this process, at `concurrency`,
  started at `start` (time.monotonic) and stopped once the run's tally (tally.py) has counted `count`
  jobs.

The async ones (arq, saq, taskiq) also have `async_producer(url, job, callers) -> (send, close)`, for
the concurrent single-enqueue rows (bench/async_producers.py): `await send()` enqueues one job of `job`
on one client with `callers` connections open.

Nothing here imports a peer in the bench's own process: only a run's fork does (so that no other
library's run inherits its memory), and a peer that is not installed is reported in its cells.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from types import ModuleType

from bench.child import NotAvailable


@dataclass(frozen=True)
class Peer:
    name: str  # the column
    imports: tuple[str, ...]  # top-level modules it needs (checked with find_spec: no import here)
    dists: tuple[str, ...]  # distributions whose versions the report shows
    model: str  # 'thread': plain functions on threads; 'async': coroutines on one event loop
    how: str  # its configuration, for the report (bench/README.md says why)
    install: str = 'pip install -e ".[peers]"'
    producer: str = ''  # its async producer, for the async rows (bench/async_producers.py); '' if none


PEERS = (
    Peer('dramatiq', ('dramatiq',), ('dramatiq',), 'thread', 'RedisBroker, one Worker, worker_threads=N'),
    Peer(
        'celery',
        ('celery', 'kombu'),
        ('celery', 'kombu'),
        'thread',
        'Redis broker, no result backend, solo pool at N=1 and threads pool above, prefetch multiplier 4',
    ),
    Peer('huey', ('huey',), ('huey',), 'thread', 'RedisHuey (blocking), one consumer, N thread workers'),
    Peer(
        'arq',
        ('arq',),
        ('arq',),
        'async',
        'one Worker, max_jobs=N, poll_delay=10 ms, results kept (default)',
        # not in the extra: arq declares redis<6, which would downgrade every column's redis-py
        'pip install --no-deps arq==0.28.0',
        producer='await ArqRedis.enqueue_job on one create_pool() client',
    ),
    Peer(
        'saq',
        ('saq',),
        ('saq',),
        'async',
        'Redis Queue, one Worker, concurrency=N',
        producer='await Queue.enqueue on one Queue.from_url() (its redis.asyncio client)',
    ),
    Peer(
        'taskiq',
        ('taskiq', 'taskiq_redis'),
        ('taskiq', 'taskiq-redis'),
        'async',
        'taskiq-redis RedisStreamBroker (acks), no result backend, one receiver, max_async_tasks=N',
        producer='await task.kiq() on one started RedisStreamBroker (XADD through its connection pool)',
    ),
)
BY_NAME = {peer.name: peer for peer in PEERS}


def parse(text: str) -> list[Peer]:
    """`--peers all` or `--peers dramatiq,arq`: the peers, in the table's order."""
    wanted = {name.strip().lower() for name in text.split(',') if name.strip()}
    if 'all' in wanted:
        return list(PEERS)
    unknown = sorted(wanted - set(BY_NAME))
    if unknown or not wanted:
        names = ', '.join(BY_NAME)
        raise ValueError(f'--peers {text}: unknown {", ".join(unknown) or "(empty)"}; choose from all, {names}')
    return [peer for peer in PEERS if peer.name in wanted]


def missing(peer: Peer) -> str | None:
    """Why the peer cannot run here ('not installed: ...'), or None; imports nothing."""
    absent = [name for name in peer.imports if not _findable(name)]
    if absent:
        return f'not installed: no module {", ".join(absent)} ({peer.install})'
    return None


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken install, or sys.modules[name] = None
        return False


def version(peer: Peer) -> str:
    found = []
    for dist in peer.dists:
        try:
            found.append(f'{dist} {importlib.metadata.version(dist)}')
        except importlib.metadata.PackageNotFoundError:
            found.append(f'{dist} not installed')
    return ', '.join(found)


def side(peer: Peer) -> ModuleType:
    """The peer's module, imported in a run's own process; an import failure makes its cells n/a."""
    try:
        return importlib.import_module(f'bench.peers.{peer.name}_side')
    except ImportError as exc:
        raise NotAvailable(f'import {peer.name} failed: {exc}') from None
