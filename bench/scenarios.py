"""What is measured: every scenario, its table rows, and the function each library runs for it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bench import async_producers, bull_side, counting, floors, history, peers, rq_side
from bench.child import NotAvailable
from bench.libs import Lib
from bench.redis_server import Target
from bench.scales import IO_CONCURRENCY, PRODUCERS, Scale

RqMeasure = Callable[[Lib], Any]  # returns a float (one row) or {row key: float}
BullMeasure = Callable[[], Any]


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    unit: str
    higher_is_better: bool = True
    digits: int = 0


@dataclass
class Scenario:
    name: str  # for --only
    rows: list[Row]
    rq: RqMeasure | None
    bull: BullMeasure | None = None
    once: bool = False  # counted rows: one run each, they do not vary like timings
    prepare_rq: Callable[[Lib, int], None] | None = None  # (lib, runs), once per library before the runs
    flush_each_run: bool = True
    others: dict[str, Callable[[], Any]] = field(default_factory=dict)  # the peers' measures, by column
    floor: Callable[[], Any] | None = None  # the `floor` column (bench/floors.py): a float, or {row key: float}


def _k(n: int) -> str:
    return f'{n // 1000}k' if n >= 1000 and n % 1000 == 0 else str(n)


def _counted_rows(worker_class: str, bull_note: str) -> list[Row]:
    tag = f'{worker_class}{bull_note}'
    return [
        Row(f'rt-{worker_class}', f'round trips per job: {tag}', 'writes/job ↓', False, 1),
        Row(f'cmd-{worker_class}', f'Redis commands per job: {tag}', 'commands/job ↓', False, 1),
        Row(f'lua-{worker_class}', f'script calls per job: {tag}', 'EVAL(SHA)/FCALL per job', False, 1),
    ]


def _counted(worker_class: str, count: int, timeout: float, target: Target) -> RqMeasure:
    def measure(lib: Lib) -> dict[str, float]:
        found = counting.rq_per_job(lib, target, worker_class, count, timeout)
        return {
            f'rt-{worker_class}': found['round_trips'],
            f'cmd-{worker_class}': found['commands'],
            f'lua-{worker_class}': found['scripts'],
        }

    return measure


def _counted_with_history(count: int, timeout: float, target: Target) -> RqMeasure:
    """The SimpleWorker's counted rows with a dashboard sampling its history beside it (bench/history.py)."""

    def measure(lib: Lib) -> dict[str, float]:
        found = history.per_job_beside_sampler(lib, target.url, count, timeout)
        return {'rt-history': found['round_trips'], 'cmd-history': found['commands']}

    return measure


def _bull_counted(count: int, timeout: float, target: Target) -> BullMeasure:
    def measure() -> dict[str, float]:
        found = counting.bull_per_job(target, count, timeout)
        return {
            'rt-SimpleWorker': found['round_trips'],
            'cmd-SimpleWorker': found['commands'],
            'lua-SimpleWorker': found['scripts'],
        }

    return measure


JOBS_PER_S = 'jobs/s ↑'


def _timed(name: str, label: str, rq: RqMeasure, bull: BullMeasure | None = None, **options: Any) -> Scenario:
    """A scenario with one jobs/s row whose key is its name."""
    return Scenario(name, [Row(name, label, JOBS_PER_S)], rq, bull, **options)


def build(scale: Scale, target: Target) -> list[Scenario]:
    s, t, timeout = scale, target, scale.timeout
    scenarios = [
        _timed(
            'bulk',
            f'bulk insert, {s.bulk:,} jobs (enqueue_many / addBulk)',
            lambda lib: rq_side.bulk_insert(lib, t, s.bulk),
            lambda: bull_side.bulk_insert(t, s.bulk),
        ),
        _timed(
            'single',
            f'single insert, {s.single:,} jobs, 1 producer (enqueue / add)',
            lambda lib: rq_side.single_insert(lib, t, s.single),
            lambda: bull_side.single_insert(t, s.single),
        ),
        _timed(
            'producers',
            f'single insert, {s.single:,} jobs, {PRODUCERS} producer processes',
            lambda lib: rq_side.concurrent_insert(lib, t, s.single, PRODUCERS, timeout),
            lambda: bull_side.concurrent_insert(t, s.single, PRODUCERS, timeout),
        ),
        _timed(
            'noop-simple',
            f'no-op jobs ({s.noop:,}): SimpleWorker (BullMQ: concurrency 10)',
            lambda lib: rq_side.worker_rate(lib, t, 'SimpleWorker', 'noop', s.noop),
            lambda: bull_side.worker_rate(t, 'noop', s.noop, 10, timeout),
        ),
        _timed(
            'noop-worker',
            f'no-op jobs ({s.noop_worker:,}): Worker, fork per job',
            lambda lib: rq_side.worker_rate(lib, t, 'Worker', 'noop', s.noop_worker),
        ),
        _timed(
            'noop-spawn',
            f'no-op jobs ({s.noop_spawn:,}): SpawnWorker, spawn per job',
            lambda lib: rq_side.worker_rate(lib, t, 'SpawnWorker', 'noop', s.noop_spawn),
        ),
        _timed(
            'cpu',
            f'CPU jobs ({s.cpu:,} x 1,000 sin/cos): SimpleWorker (BullMQ: concurrency 1)',
            lambda lib: rq_side.worker_rate(lib, t, 'SimpleWorker', 'cpu', s.cpu),
            lambda: bull_side.worker_rate(t, 'cpu', s.cpu, 1, timeout),
        ),
    ]
    scenarios += [_async_producers(callers, s.single, t) for callers in ASYNC_CALLERS]
    scenarios += [_io_scenario(procs, s.io, t, timeout) for procs in IO_CONCURRENCY]
    bull_counts = _bull_counted(s.count_simple, timeout, t)
    for name, worker_class, count, bull in (
        ('counts-simple', 'SimpleWorker', s.count_simple, bull_counts),
        ('counts-worker', 'Worker', s.count_worker, None),
        ('counts-spawn', 'SpawnWorker', s.count_spawn, None),
    ):
        rows = _counted_rows(worker_class, ' (BullMQ: Worker, concurrency 1)' if bull else '')
        scenarios.append(Scenario(name, rows, _counted(worker_class, count, timeout, t), bull, once=True))
    beside = 'SimpleWorker, a dashboard sampling its history every second beside it'
    history_rows = [
        Row('rt-history', f'round trips per job: {beside}', 'writes/job ↓', False, 1),
        Row('cmd-history', f'Redis commands per job: {beside}', 'commands/job ↓', False, 1),
    ]
    scenarios.append(
        Scenario('counts-history', history_rows, _counted_with_history(s.count_simple, timeout, t), once=True)
    )
    for backlog in s.backlogs:
        scenarios.append(
            _timed(
                f'growth-{_k(backlog)}',
                f'no-op, {_k(backlog)} jobs queued: SimpleWorker, next {s.window:,} jobs',
                lambda lib: rq_side.backlog_rate(lib, t, s.window),
                prepare_rq=lambda lib, runs, backlog=backlog: rq_side.fill_backlog(lib, t, backlog + s.window * runs),
                flush_each_run=False,
            )
        )
    scenarios += _concurrency_scenarios(s, t, timeout)
    memory_rows = [
        Row('rss-start', 'SimpleWorker resident memory at start', 'MiB ↓', False, 1),
        Row('rss-end', f'SimpleWorker resident memory after {s.memory_jobs:,} no-op jobs', 'MiB ↓', False, 1),
    ]
    scenarios.append(Scenario('memory', memory_rows, lambda lib: _memory(lib, t, s.memory_jobs, timeout), once=True))
    _add_floors(scenarios, s, t)
    return scenarios


def _add_floors(scenarios: list[Scenario], s: Scale, t: Target) -> None:
    """The floor column's measure of each row that has one (bench/floors.py)."""
    found: dict[str, Callable[[], Any]] = {
        'single': lambda: floors.enqueue_floor(t, s.single)[0],
        'noop-simple': lambda: floors.script_rate(t, s.noop),
        'noop-worker': lambda: floors.fork_rate(s.noop_worker),
        'noop-spawn': lambda: floors.spawn_rate(s.noop_spawn),
        'cpu': lambda: floors.cpu_rate(s.cpu),
        'conc-noop-1': lambda: floors.script_rate(t, s.noop * 3),
    }
    for procs in IO_CONCURRENCY:
        found[f'io-{procs}'] = lambda procs=procs: floors.sleep_rate(t, s.io, procs)
    for n in CONCURRENCY_LEVELS:
        found[f'conc-io-{n}'] = lambda n=n: floors.sleep_rate(t, s.io * 3, n)
        found[f'conc-aio-{n}'] = lambda n=n: floors.async_sleep_rate(t, s.io * 3, n)
    for scenario in scenarios:
        scenario.floor = found.get(scenario.name)


ASYNC_CALLERS = (10, 100)


def _async_producers(callers: int, count: int, target: Target) -> Scenario:
    """Issue 35's rows: `count` single enqueues from `callers` concurrent coroutines (bench/async_producers.py);
    arq, saq and taskiq measure theirs too (columns when --only names these rows, or with --peers)."""
    rows = [
        Row(
            f'async-{callers}',
            f'single insert, {count:,} jobs, {callers} coroutines (rqfast: await AsyncQueue.enqueue; '
            f'RQ: enqueue in a thread pool of {callers}; BullMQ: await add; arq, saq, taskiq: their async enqueue)',
            JOBS_PER_S,
        ),
        Row(
            f'async-{callers}-threads',
            f'  the same, enqueue in a thread pool of {callers} (run_in_executor)',
            JOBS_PER_S,
        ),
    ]
    others: dict[str, Callable[[], Any]] = {
        peer.name: partial(async_producers.peer, peer, target, count, callers) for peer in peers.PEERS if peer.producer
    }
    return Scenario(
        f'async-{callers}',
        rows,
        lambda lib: async_producers.measure(lib, target, count, callers),
        lambda: async_producers.bull(target, count, callers),
        others=others,
    )


def _io_scenario(procs: int, count: int, target: Target, timeout: float) -> Scenario:
    return _timed(
        f'io-{procs}',
        f'10 ms I/O jobs ({count:,}): {procs} SimpleWorker processes (BullMQ: concurrency {procs})',
        lambda lib: rq_side.concurrent_rate(lib, target, 'io_sleep', count, procs, timeout),
        lambda: bull_side.worker_rate(target, 'io_sleep', count, procs, timeout),
    )


def _memory(lib: Lib, target: Target, count: int, timeout: float) -> dict[str, float]:
    found = counting.rq_memory(lib, target, count, timeout)
    return {'rss-start': found['rss_start'], 'rss-end': found['rss_end']}


# --- many jobs in flight in one process (issue 12): rqfast's SimpleWorker(concurrency=N) in ONE
# process, RQ's N SimpleWorker processes, BullMQ's Worker at concurrency N


def _concurrency_scenarios(s: Scale, t: Target, timeout: float) -> list[Scenario]:
    scenarios = []
    for job, what in (('io_sleep', '10 ms I/O jobs'), ('io_async', '10 ms async I/O jobs')):
        for n in CONCURRENCY_LEVELS:
            name = f'conc-{"aio" if job == "io_async" else "io"}-{n}'
            label = f'{what} ({s.io * 3:,}): rqfast 1 SimpleWorker at concurrency {n}; RQ {n} processes'
            rows = [
                Row(name, label, JOBS_PER_S),
                Row(f'{name}-rss', f'  fleet resident memory, {name}', 'MiB ↓', False),
            ]
            scenarios.append(
                Scenario(
                    name,
                    rows,
                    _fleet(name, job, s.io * 3, n, t, timeout),
                    _bull_fleet(name, job, s.io * 3, n, t, timeout),
                )
            )
    for n in (1, *CONCURRENCY_LEVELS):
        name = f'conc-noop-{n}'
        label = f'no-op jobs ({s.noop * 3:,}), 1 process: SimpleWorker at concurrency {n}'
        rq = _one_process(name, 'noop', s.noop * 3, n, t, timeout)
        bull = (lambda n=n: bull_side.worker_rate(t, 'noop', s.noop * 3, n, timeout)) if n > 1 else None
        scenarios.append(Scenario(name, [Row(name, label, JOBS_PER_S)], rq, bull))
    for n in (1, 2, 4):
        name = f'conc-fork-{n}'
        label = f'no-op jobs ({s.noop_worker:,}): Worker, fork per job, at concurrency {n} (RQ: one job at a time)'
        scenarios.append(Scenario(name, [Row(name, label, JOBS_PER_S)], _forking(s.noop_worker, n, t)))
    return scenarios


CONCURRENCY_LEVELS = (10, 50)


def _forking(count: int, n: int, t: Target) -> RqMeasure:
    def measure(lib: Lib) -> float:
        if 'concurrency' not in lib.cls('Worker').__init__.__code__.co_varnames:
            return rq_side.worker_rate(lib, t, 'Worker', 'noop', count)  # RQ: one job at a time
        if n > 1:
            try:
                lib.cls('Worker')(['q'], connection=t.connect(), concurrency=n)
            except ValueError as exc:
                raise NotAvailable(str(exc)) from None
        return rq_side.worker_rate(lib, t, 'Worker', 'noop', count, concurrency=n)

    return measure


def _fleet(name: str, job: str, count: int, n: int, t: Target, timeout: float) -> RqMeasure:
    def measure(lib: Lib) -> dict[str, float]:
        one_process = 'concurrency' in lib.cls('SimpleWorker').__init__.__code__.co_varnames
        processes, concurrency = (1, n) if one_process else (n, 1)
        rate, rss = rq_side.fleet_rate(lib, t, job, count, processes, concurrency, timeout)
        return {name: rate, f'{name}-rss': rss}

    return measure


def _bull_fleet(name: str, job: str, count: int, n: int, t: Target, timeout: float) -> BullMeasure:
    def measure() -> dict[str, float]:
        from bench.run_worker import resident_mib

        return {name: bull_side.worker_rate(t, job, count, n, timeout), f'{name}-rss': resident_mib()}

    return measure


def _one_process(name: str, job: str, count: int, n: int, t: Target, timeout: float) -> RqMeasure:
    def measure(lib: Lib) -> float:
        rate, _ = rq_side.fleet_rate(lib, t, job, count, 1, n, timeout)
        return rate

    return measure
