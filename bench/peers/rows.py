"""The peers rows (`python -m bench --peers`): each workload, which job each library runs for it.

Thread libraries (RQ, rqfast, dramatiq, celery, huey) run plain functions; async ones (rqfast, arq,
saq, taskiq, BullMQ) coroutines: rqfast runs both, in the rows made for each. RQ runs one job at a
time per process, so only its concurrency-1 cells have a figure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from bench.libs import Lib
from bench.peers import Peer, harness
from bench.redis_server import Target
from bench.scales import Scale
from bench.scenarios import JOBS_PER_S, Row, Scenario

CPU_UNIT = 'Redis µs/job ↓'


@dataclass(frozen=True)
class Workload:
    name: str
    label: str
    rq_job: str | None  # RQ and rqfast (None: not in this row)
    thread_job: str | None  # dramatiq, celery, huey
    async_job: str | None  # arq, saq, taskiq
    bull_job: str | None  # BullMQ's job name (its processor is a coroutine)
    concurrency: int


WORKLOADS = (
    Workload('peers-noop-1', 'no-op jobs, concurrency 1', 'noop', 'noop', 'noop_async', 'noop', 1),
    Workload('peers-noop-10', 'no-op jobs, concurrency 10', 'noop', 'noop', 'noop_async', 'noop', 10),
    Workload('peers-io-50', '10 ms time.sleep jobs, concurrency 50 (threads)', 'io_sleep', 'io_sleep', None, None, 50),
    Workload(
        'peers-aio-50',
        '10 ms asyncio.sleep jobs, concurrency 50 (asyncio)',
        'io_async',
        None,
        'io_async',
        'io_async',
        50,
    ),
    Workload(
        'peers-io-redis-50',
        '10 ms time.sleep + one Redis INCR, concurrency 50 (threads)',
        'io_sleep_redis',
        'io_sleep_redis',
        None,
        None,
        50,
    ),
    Workload(
        'peers-aio-redis-50',
        '10 ms asyncio.sleep + one Redis INCR, concurrency 50 (asyncio)',
        'io_async_redis',
        None,
        'io_async_redis',
        'io_async_redis',
        50,
    ),
)


def _rows(key: str, label: str, cpu_label: str) -> list[Row]:
    return [Row(key, label, JOBS_PER_S), Row(f'{key}-cpu', f'  Redis CPU per job, {cpu_label}', CPU_UNIT, False)]


def _keyed(key: str, measure: Callable[[], list[float]]) -> Callable[[], dict[str, float]]:
    def run() -> dict[str, float]:
        rate, cpu = measure()
        return {key: rate, f'{key}-cpu': cpu}

    return run


def build(scale: Scale, target: Target, peers: list[Peer]) -> list[Scenario]:
    scenarios = [_worker_scenario(w, scale, target, peers) for w in WORKLOADS]
    scenarios.append(_insert_scenario('peers-single', False, scale.peer_single, target, peers))
    scenarios.append(_insert_scenario('peers-bulk', True, scale.peer_bulk, target, peers))
    return scenarios


def _worker_scenario(w: Workload, scale: Scale, t: Target, peers: list[Peer]) -> Scenario:
    count = scale.peer_noop if w.name.startswith('peers-noop') else scale.peer_io
    n, timeout = w.concurrency, scale.timeout
    others: dict[str, Callable[[], Any]] = {}
    for peer in peers:
        job = w.thread_job if peer.model == 'thread' else w.async_job
        if job is not None:
            others[peer.name] = _keyed(w.name, partial(harness.peer_work, peer, t, job, count, n, timeout))
    rq = None
    if w.rq_job is not None:
        rq_job = w.rq_job

        def rq(lib: Lib) -> dict[str, float]:
            return _keyed(w.name, partial(harness.rq_work, lib, t, rq_job, count, n, timeout))()

    bull = None if w.bull_job is None else _keyed(w.name, partial(harness.bull_work, t, w.bull_job, count, n, timeout))
    rows = _rows(w.name, f'{w.label}, {count:,} jobs, 1 worker process', 'enqueue included (not timed)')
    return Scenario(w.name, rows, rq, bull, others=others)


def _insert_scenario(name: str, bulk: bool, count: int, t: Target, peers: list[Peer]) -> Scenario:
    others: dict[str, Callable[[], Any]] = {}
    for peer in peers:
        job = 'noop' if peer.model == 'thread' else 'noop_async'
        others[peer.name] = _keyed(name, partial(harness.peer_insert, peer, t, job, count, bulk))

    def rq(lib: Lib) -> dict[str, float]:
        return _keyed(name, partial(harness.rq_insert, lib, t, count, bulk))()

    bull = _keyed(name, partial(harness.bull_insert, t, count, bulk))
    how = "in one call (each library's bulk API)" if bulk else 'one by one, 1 producer'
    return Scenario(name, _rows(name, f'enqueue {count:,} no-op jobs {how}', 'enqueue only'), rq, bull, others=others)
