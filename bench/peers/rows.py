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

from bench import floors, latency
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
    return [
        Row(key, label, JOBS_PER_S),
        Row(f'{key}-cpu', f'  Redis CPU per job, {cpu_label}', CPU_UNIT, False),
        Row(f'{key}-cmd', "  Redis time per job in commands (INFO commandstats; a script's own included)", US, False),
        Row(
            f'{key}-lua',
            '  Redis time per job in script calls (EVAL/EVALSHA/FCALL, their commands included)',
            US,
            False,
        ),
    ]


US = 'Redis µs/job ↓'


def _keyed(key: str, measure: Callable[[], list[float]]) -> Callable[[], dict[str, float]]:
    def run() -> dict[str, float]:
        rate, cpu, commands, scripts = measure()
        return {key: rate, f'{key}-cpu': cpu, f'{key}-cmd': commands, f'{key}-lua': scripts}

    return run


def build(scale: Scale, target: Target, peers: list[Peer]) -> list[Scenario]:
    scenarios = [_worker_scenario(w, scale, target, peers) for w in WORKLOADS]
    scenarios.append(_insert_scenario('peers-single', False, scale.peer_single, target, peers))
    scenarios.append(_insert_scenario('peers-bulk', True, scale.peer_bulk, target, peers))
    scenarios += latency_scenarios(scale, target, peers)
    _add_floors(scenarios, scale, target)
    return scenarios


def _add_floors(scenarios: list[Scenario], scale: Scale, t: Target) -> None:
    """The floor column's measure of each peers row that has one (bench/floors.py)."""
    io = scale.peer_io

    def cpu_floor(key: str, concurrency: int) -> float:
        return floors.layout_commands_us(t, scale.peer_noop if concurrency < 50 else io, concurrency)

    def single() -> dict[str, float]:
        rate, commands = floors.enqueue_floor(t, scale.peer_single)
        return {'peers-single': rate, 'peers-single-cpu': commands, 'peers-single-cmd': commands}

    found: dict[str, Callable[[], Any]] = {
        'peers-noop-1': lambda: {
            'peers-noop-1': floors.script_rate(t, scale.peer_noop),
            'peers-noop-1-cmd': cpu_floor('peers-noop-1', 1),
        },
        'peers-noop-10': lambda: {'peers-noop-10-cmd': cpu_floor('peers-noop-10', 10)},
        'peers-io-50': lambda: {'peers-io-50': floors.sleep_rate(t, io, 50)},
        'peers-aio-50': lambda: {'peers-aio-50': floors.async_sleep_rate(t, io, 50)},
        'peers-io-redis-50': lambda: {'peers-io-redis-50': floors.sleep_rate(t, io, 50, with_redis=True)},
        'peers-aio-redis-50': lambda: {'peers-aio-redis-50': floors.async_sleep_rate(t, io, 50, with_redis=True)},
        'peers-single': single,
        'peers-latency-200': lambda: _latency_floor('latency-200', t, scale),
        'peers-latency-half': lambda: _latency_floor('latency-half', t, scale),
        'peers-latency-fork': lambda: _latency_floor('latency-fork', t, scale),
    }
    for scenario in scenarios:
        scenario.floor = found.get(scenario.name)


def _latency_floor(key: str, t: Target, scale: Scale) -> dict[str, float]:
    figures = floors.round_trip_ms(t, scale.latency_jobs)
    found = {f'{key}-p50': figures['p50'], f'{key}-p99': figures['p99']}
    if key == 'latency-200':
        found[f'{key}-idle'] = figures['idle']
    return found


LATENCY_RATE = 200.0
MS = 'ms ↓'


def at_rate(key: str, label: str) -> list[Row]:
    return [Row(f'{key}-p50', f'{label}: p50', MS, False, 2), Row(f'{key}-p99', '  p99', MS, False, 2)]


def keyed(key: str, figures: dict[str, float], rate: float | None = None) -> dict[str, float]:
    """A latency run's figures under its rows' keys (the idle job's in the 200 jobs/s row only)."""
    found = {f'{key}-p50': figures['p50'], f'{key}-p99': figures['p99']}
    if key == 'latency-200':
        found[f'{key}-idle'] = figures['idle']
    if rate is not None:
        found[f'{key}-rate'] = rate
    return found


def latency_scenarios(scale: Scale, t: Target, peers: list[Peer]) -> list[Scenario]:
    """Pickup latency at 200 jobs/s and at half of each library's maximum (bench/latency.py), at
    concurrency 1; the forking Worker's at 200 jobs/s (RQ and rqfast only)."""
    n, idle, timeout = scale.latency_jobs, scale.latency_idle, scale.timeout

    what = f"pickup latency (a job's start minus its enqueue), no-op jobs, concurrency 1, {n:,} jobs"
    fixed_rows = [
        *at_rate('latency-200', f'{what} at {LATENCY_RATE:.0f} jobs/s offered'),
        Row('latency-200-idle', f'  the first job after {idle:.0f} s idle', MS, False, 2),
    ]
    half_rows = [
        Row('latency-half-rate', f"{what} at half of each one's maximum no-op rate (measured first)", 'jobs/s'),
        *at_rate('latency-half', '  at that rate'),
    ]
    fork_rows = at_rate('latency-fork', f'{what} at {LATENCY_RATE:.0f} jobs/s offered, forking Worker')

    def fixed_rq(lib: Lib) -> dict[str, float]:
        return keyed('latency-200', latency.rq_latency(lib, t, 'SimpleWorker', LATENCY_RATE, n, idle, timeout))

    def half_rq(lib: Lib) -> dict[str, float]:
        rate = latency.rq_max(lib, t, 'SimpleWorker', scale.peer_noop) / 2
        return keyed('latency-half', latency.rq_latency(lib, t, 'SimpleWorker', rate, n, 0, timeout), rate)

    def fork_rq(lib: Lib) -> dict[str, float]:
        return keyed('latency-fork', latency.rq_latency(lib, t, 'Worker', LATENCY_RATE, n, 0, timeout))

    def fixed_bull() -> dict[str, float]:
        return keyed('latency-200', latency.bull_latency(t, LATENCY_RATE, n, idle, timeout))

    def half_bull() -> dict[str, float]:
        rate = latency.bull_max(t, scale.peer_noop, timeout) / 2
        return keyed('latency-half', latency.bull_latency(t, rate, n, 0, timeout), rate)

    fixed: dict[str, Callable[[], Any]] = {}
    half: dict[str, Callable[[], Any]] = {}
    for peer in peers:
        fixed[peer.name] = partial(_peer_fixed, peer, t, n, idle, timeout)
        half[peer.name] = partial(_peer_half, peer, t, n, scale.peer_noop, timeout)
    return [
        # one run each (a run's p50 and p99 are over latency_jobs jobs; the idle period is a minute)
        Scenario('peers-latency-200', fixed_rows, fixed_rq, fixed_bull, others=fixed, once=True),
        Scenario('peers-latency-half', half_rows, half_rq, half_bull, others=half, once=True),
        Scenario('peers-latency-fork', fork_rows, fork_rq, once=True),
    ]


def _peer_fixed(peer: Peer, t: Target, n: int, idle: float, timeout: float) -> dict[str, float]:
    return keyed('latency-200', latency.peer_latency(peer, t, LATENCY_RATE, n, idle, timeout))


def _peer_half(peer: Peer, t: Target, n: int, max_jobs: int, timeout: float) -> dict[str, float]:
    rate = latency.peer_max(peer, t, max_jobs, timeout) / 2
    return keyed('latency-half', latency.peer_latency(peer, t, rate, n, 0, timeout), rate)


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
