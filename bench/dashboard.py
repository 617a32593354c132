"""`python -m bench.dashboard`: the dashboard at scale, and what its history costs the workers (issue 36).

1. **Start and pages**: a private redis-server holding 100,000 queued jobs over 10 queues (`--jobs`,
   `--queues`), 4 busy worker processes on those queues (`--workers`; each job sleeps 50 ms, so the
   queues stay near full while it runs), then `rqfast dashboard` started as a user starts it: the
   seconds from its start to the first overview served, and to the first live rate; then each page
   requested `--repeat` times in a row (the client's wall time: median and slowest).
2. **The sampler at that scale**: Redis commands and milliseconds per history sample, counted on the
   sampler's own connection.
3. **Per-job cost, history on and off**: the bench's counted rows (bench/counting.py: a SimpleWorker in
   a fresh interpreter on an empty queue and on `--count` no-op jobs, INFO commandstats and redis-py
   writes), once alone and once with a dashboard sampling every second beside it; the sampler's own
   commands (counted on its connection) are taken out of the server's total, what is left is the
   worker's. The worker's seconds per job are shown too (timing: noisy on a shared machine).

It prints a markdown report (and writes it to bench/results/<date>-dashboard.md with `--out`).
"""

from __future__ import annotations

import argparse
import functools
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import redis

from bench import counting, rq_side
from bench.history import CountingConnection, LessTheSampler, SamplerThread, counting_client
from bench.libs import load_lib
from bench.redis_server import PrivateRedis, Target

REPO = Path(__file__).resolve().parent.parent
JOB_SECONDS = 0.05


def busy(seconds: float = JOB_SECONDS) -> float:
    """The workers' job: it sleeps, so four workers stay busy without draining 100,000 jobs in the run."""
    time.sleep(seconds)
    return seconds


# --- 1. start and pages


def fill(connection: redis.Redis, queues: int, jobs: int) -> list[str]:
    from rqfast import Queue

    names = [f'q{n}' for n in range(queues)]
    for name in names:
        queue = Queue(name, connection=connection)
        per_queue = jobs // queues
        for start in range(0, per_queue, 1000):
            size = min(1000, per_queue - start)
            queue.enqueue_many([Queue.prepare_data('bench.dashboard.busy', (JOB_SECONDS,)) for _ in range(size)])
    return names


@contextmanager
def worker_processes(url: str, names: list[str], count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPO), os.environ.get('PYTHONPATH', '')])}
    command = [sys.executable, '-m', 'rqfast', 'worker', '-u', url, '-w', 'rqfast.SimpleWorker', '-q', *names]
    started = [
        subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(count)
    ]
    try:
        yield started
    finally:
        for process in started:
            process.terminate()
        for process in started:
            process.wait(20)


@contextmanager
def dashboard_process(url: str, port: int) -> Iterator[tuple[subprocess.Popen[bytes], float]]:
    command = [sys.executable, '-m', 'rqfast', 'dashboard', '-u', url, '--port', str(port)]
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        yield process, started
    finally:
        process.terminate()
        process.wait(20)


def until(condition: Any, timeout: float = 60.0) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if condition():
                return time.monotonic()
        except httpx.TransportError:
            pass
        time.sleep(0.02)
    raise SystemExit('timed out')


def page_times(base: str, paths: list[str], repeat: int, pid: int) -> list[tuple[str, float, float, float]]:
    """Per page: the median and slowest wall time of `repeat` requests in a row, and the dashboard
    process's CPU time per request (what the load of a shared machine does not stretch)."""
    rows = []
    with httpx.Client(base_url=base, timeout=30) as client:
        for path in paths:
            times = []
            cpu = cpu_seconds(pid)
            for _ in range(repeat):
                start = time.perf_counter()
                response = client.get(path)
                times.append(time.perf_counter() - start)
                if response.status_code != 200:
                    raise SystemExit(f'{path}: HTTP {response.status_code}')
            cpu = (cpu_seconds(pid) - cpu) / repeat
            rows.append((path, statistics.median(times) * 1000, max(times) * 1000, cpu * 1000))
    return rows


def scale_run(target: Target, args: argparse.Namespace, lines: list[str]) -> None:
    connection = target.connect()
    names = fill(connection, args.queues, args.jobs)
    queued = sum(connection.llen(f'rq:queue:{name}') for name in names)
    with worker_processes(target.url, names, args.workers):
        until(lambda: connection.scard('rq:workers') == args.workers)
        until(lambda: sum(connection.zcard(f'rq:wip:{name}') for name in names) >= args.workers)
        port = free_port()
        base = f'http://127.0.0.1:{port}'
        with dashboard_process(target.url, port) as (process, started):
            served = until(lambda: httpx.get(base + '/', timeout=5).status_code == 200)
            cpu = cpu_seconds(process.pid)
            live = until(lambda: 'id="done-rate">–<' not in httpx.get(base + '/live/overview', timeout=5).text)
            job_id = connection.lindex('rq:queue:q5', args.jobs // args.queues // 2)
            finished = connection.zrange('rq:finished:q0', -1, -1)
            paths = [
                '/',
                '/live/overview',
                '/queues',
                '/queues/q0',
                '/queues/q0/jobs/queued',
                f'/queues/q0/jobs/queued?offset={args.jobs // args.queues // 2}',
                '/queues/q0/jobs/finished',
                '/queues/q0/jobs/queued?q=no.such.function',
                f'/jobs/{job_id.decode()}?queue=q5',
                f'/jobs/{finished[0].decode()}?queue=q0' if finished else '/jobs',
                '/workers',
                '/functions',
                '/scheduled',
            ]
            rows = page_times(base, paths, args.repeat, process.pid)
        busy_workers = sum(connection.zcard(f'rq:wip:{name}') for name in names)
    lines += [
        f'## The dashboard against {queued:,} queued jobs over {args.queues} queues, {args.workers} busy workers',
        '',
        f'- `rqfast dashboard` started to first overview served: **{served - started:.2f} s** (the process used '
        f'{cpu:.2f} s of CPU to get there: on a loaded machine the wall time is that CPU time stretched by the load)',
        f'- to the first live rate on the overview (two history samples): **{live - started:.2f} s**',
        f'- workers busy at the end: {busy_workers}',
        '',
        f'| page | median ms | slowest ms (of {args.repeat}) | dashboard CPU ms per request |',
        '|---|---:|---:|---:|',
        *[f'| `{path}` | {median:.1f} | {slowest:.1f} | {cpu:.1f} |' for path, median, slowest, cpu in rows],
        '',
    ]


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU seconds so far (/proc/<pid>/stat)."""
    fields = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


# --- 2. the sampler's cost per sample


def sampler_cost(target: Target, samples: int, lines: list[str]) -> None:
    from rqfast import keys
    from rqfast.dashboard.catalog import Catalog
    from rqfast.dashboard.sampler import Sampler

    connection = counting_client(target.url)
    connection.delete(keys.dashboard_key('sampler'))  # (the lock of the dashboard process, stopped now)
    sampler = Sampler(connection, Catalog(connection), interval=5)
    sampler.tick()
    counts, times = [], []
    for _ in range(samples):
        before, start = CountingConnection.sent, time.perf_counter()
        sampler.tick()
        times.append(time.perf_counter() - start)
        counts.append(CountingConnection.sent - before)
        time.sleep(0.5)
    lines += [
        '## The history sampler at that scale',
        '',
        f'- Redis commands per sample: median {statistics.median(counts):.0f} (min {min(counts)}, max {max(counts)}),'
        f' one sample every 5 s by default: whatever the job rate',
        f'- milliseconds per sample: median {statistics.median(times) * 1000:.1f}, slowest {max(times) * 1000:.1f}',
        '',
    ]


# --- 3. per-job cost, history on and off


def per_job_cost(url: str, count: int, timeout: float, lines: list[str]) -> None:
    lib = load_lib('rqfast', 'rqfast')
    results = {}
    for mode in ('off', 'on'):
        target = LessTheSampler(url)
        sampler = SamplerThread(url) if mode == 'on' else None
        queue = rq_side.make_queue(lib, target)
        argv = ['--url', url, *counting.module_args(lib), '--class', 'SimpleWorker', '--queue', queue.name]
        if sampler is not None:
            sampler.thread.start()
        try:
            enqueue = functools.partial(rq_side.enqueue_jobs, lib, queue, 'noop')
            runs = [counting.counted_run(target, argv, enqueue, n, timeout) for n in (0, count)]
        finally:
            if sampler is not None:
                sampler.stop.set()
                sampler.thread.join()
        rq_side.check_finished(queue, count)
        empty, loaded = runs
        results[mode] = (
            (loaded.commands - empty.commands) / count,
            (loaded.round_trips - empty.round_trips) / count,
            (loaded.report['elapsed'] - empty.report['elapsed']) / count * 1e6,
            target.taken,
            sampler.sampler.samples if sampler else 0,
        )
    off, on = results['off'], results['on']
    lines += [
        f'## Per-job cost of a SimpleWorker, history on and off ({count:,} no-op jobs; counted rows)',
        '',
        '| | Redis commands / job | round trips / job | µs / job (timing: noisy) |',
        '|---|---:|---:|---:|',
        f'| history off (no dashboard) | {off[0]:.2f} | {off[1]:.2f} | {off[2]:.0f} |',
        f'| history on (a dashboard sampling every 1 s beside it) | {on[0]:.2f} | {on[1]:.2f} | {on[2]:.0f} |',
        '',
        f"With history on, the worker's commands are the server's count less the {on[3]:,} commands the sampler "
        f'sent during the two runs ({on[4]} samples in all, counted on its own connection). The worker writes '
        'no history: its script calls are the same whether a dashboard runs or not.',
        '',
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--jobs', type=int, default=100_000)
    parser.add_argument('--queues', type=int, default=10)
    parser.add_argument('--workers', type=int, default=4)
    parser.add_argument('--repeat', type=int, default=10)
    parser.add_argument('--count', type=int, default=3000, help='jobs of the per-job rows')
    parser.add_argument('--out', help='also write the report to this directory')
    args = parser.parse_args()
    server = PrivateRedis()
    lines = [f'# rqfast dashboard, {date.today()} (`python -m bench.dashboard`)', '']
    try:
        target = Target(server.url)
        scale_run(target, args, lines)
        sampler_cost(target, 5, lines)
        target.flush()
        per_job_cost(server.url, args.count, 300.0, lines)
    finally:
        server.stop()
    report = '\n'.join(lines)
    print(report)
    if args.out:
        path = Path(args.out) / f'{date.today()}-dashboard.md'
        path.write_text(report + '\n')
        print(f'written to {path}', file=sys.stderr)


if __name__ == '__main__':
    main()
