"""How many jobs each row uses. Edit here to trade precision for time.

Budget: the quick scale finishes in under 2 minutes on a 2-core machine, the full one in under 15.
RQ's forking Worker (~100 jobs/s), its SpawnWorker (~8 jobs/s), 50 worker processes sharing one
core, and the memory row (100k jobs through RQ's SimpleWorker) dominate the time.
"""

from __future__ import annotations

from dataclasses import dataclass

PRODUCERS = 10
IO_CONCURRENCY = (10, 50)


@dataclass(frozen=True)
class Scale:
    name: str
    bulk: int  # jobs in one enqueue_many / addBulk call
    single: int  # jobs enqueued one by one (sequentially, and split over PRODUCERS processes)
    noop: int  # no-op jobs for SimpleWorker and BullMQ
    noop_worker: int  # no-op jobs for the forking Worker
    noop_spawn: int  # no-op jobs for SpawnWorker
    cpu: int
    io: int  # 10 ms jobs, at each IO_CONCURRENCY
    count_simple: int  # jobs in the counted runs (round trips, commands)
    count_worker: int
    count_spawn: int
    backlogs: tuple[int, ...]  # queue lengths for the growth rows
    window: int  # jobs timed per growth run, taken off the front of the backlog
    memory_jobs: int  # jobs before the worker's memory is read
    timeout: float  # seconds before one run is abandoned and its cell shows an error
    # the peers rows (python -m bench --peers): every library, so sized for the slowest at each row
    peer_noop: int  # no-op jobs at concurrency 1 and 10 (arq polls: ~90 jobs/s at 1)
    peer_io: int  # 10 ms jobs at concurrency 50 (at most 5,000 jobs/s)
    peer_single: int  # jobs enqueued one by one
    peer_bulk: int  # jobs enqueued in one bulk call
    # the latency rows (bench/latency.py): paced jobs per run, and the idle period before the idle job
    latency_jobs: int
    latency_idle: float


QUICK = Scale(
    name='quick',
    bulk=5_000,
    single=1_000,
    noop=300,
    noop_worker=30,
    noop_spawn=4,
    cpu=150,
    io=200,
    count_simple=100,
    count_worker=20,
    count_spawn=4,
    backlogs=(1_000, 10_000),
    window=150,
    memory_jobs=3_000,
    timeout=60,
    peer_noop=300,
    peer_io=1_000,
    peer_single=1_000,
    peer_bulk=5_000,
    latency_jobs=200,
    latency_idle=2.0,
)

FULL = Scale(
    name='full',
    bulk=50_000,
    single=5_000,
    noop=1_000,
    noop_worker=200,
    noop_spawn=30,
    cpu=1_000,
    io=1_000,
    count_simple=500,
    count_worker=100,
    count_spawn=20,
    backlogs=(1_000, 10_000, 100_000),
    window=500,
    memory_jobs=100_000,
    timeout=900,
    peer_noop=2_000,
    peer_io=5_000,
    peer_single=5_000,
    peer_bulk=20_000,
    latency_jobs=2_000,
    latency_idle=60.0,
)
