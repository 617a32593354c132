"""Counted rows: round trips and Redis commands per job, and the worker's resident memory.

A worker runs in its own interpreter (bench.run_worker) twice: on an empty queue and on `count`
queued jobs. Per-job figures are (loaded - empty) / count, which removes startup and shutdown.
Round trips are redis-py socket writes (see _hook/sitecustomize.py), counted in the worker and
every work horse it forks or spawns; commands come from Redis' INFO commandstats.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench import bull_side, rq_side
from bench.child import MeasurementError
from bench.libs import Lib
from bench.redis_server import Target

HOOK_DIR = Path(__file__).resolve().parent / '_hook'
REPO_ROOT = Path(__file__).resolve().parent.parent


@dataclass
class CountedRun:
    round_trips: int
    commands: int
    scripts: int
    transactions: int
    report: dict[str, float]


def subprocess_env(count_round_trips_into: str | None = None) -> dict[str, str]:
    """The environment for worker subprocesses: bench importable, optionally the write counter."""
    env = dict(os.environ)
    # Kept in order: a baseline run has put its directory first, ahead of the repository (libs.import_from).
    paths = [path for path in env.get('PYTHONPATH', '').split(os.pathsep) if path]
    if str(REPO_ROOT) not in paths:
        paths.append(str(REPO_ROOT))
    if count_round_trips_into:
        paths.insert(0, str(HOOK_DIR))
        env['BENCH_RT_FILE'] = count_round_trips_into
    env['PYTHONPATH'] = os.pathsep.join(paths)
    return env


def run_worker_process(argv: list[str], timeout: float, rt_file: str | None = None) -> dict[str, float]:
    command = [sys.executable, '-m', 'bench.run_worker', *argv]
    try:
        done = subprocess.run(command, env=subprocess_env(rt_file), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise MeasurementError(f'worker process timed out after {timeout:.0f} s') from None
    if done.returncode != 0:
        tail = '\n'.join(done.stderr.strip().splitlines()[-3:])
        raise MeasurementError(f'worker process exited {done.returncode}: {tail}')
    report: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def counted_run(
    target: Target, argv: list[str], enqueue: Callable[[int], None], count: int, timeout: float
) -> CountedRun:
    target.flush()
    enqueue(count)
    with tempfile.TemporaryDirectory(prefix='bench-rt-') as tmp:
        rt_file = os.path.join(tmp, 'writes')
        open(rt_file, 'wb').close()
        target.reset_stats()
        report = run_worker_process(argv, timeout, rt_file)
        commands = target.command_counts()
        writes = os.path.getsize(rt_file)
    return CountedRun(writes, commands.data, commands.scripts, commands.transactions, report)


def per_job(
    target: Target,
    argv: Callable[[int], list[str]],
    enqueue: Callable[[int], None],
    count: int,
    timeout: float,
    check: Callable[[int], None],
) -> dict[str, float]:
    """(run on `count` jobs - run on an empty queue) / count, for writes, commands and script calls."""
    empty = counted_run(target, argv(0), enqueue, 0, timeout)
    loaded = counted_run(target, argv(count), enqueue, count, timeout)
    check(count)
    return {
        'round_trips': (loaded.round_trips - empty.round_trips) / count,
        'commands': (loaded.commands - empty.commands) / count,
        'scripts': (loaded.scripts - empty.scripts) / count,
    }


def module_args(lib: Lib) -> list[str]:
    """run_worker's options naming the library, and the directory it must be imported from, if any."""
    return ['--module', lib.module_name, *(['--root', str(lib.root)] if lib.root else [])]


def rq_per_job(lib: Lib, target: Target, worker_class: str, count: int, timeout: float) -> dict[str, float]:
    lib.cls(worker_class)  # n/a early if the class is missing
    queue = rq_side.make_queue(lib, target)
    argv = ['--url', target.url, *module_args(lib), '--class', worker_class, '--queue', queue.name]
    return per_job(
        target,
        lambda n: argv,
        lambda n: rq_side.enqueue_jobs(lib, queue, 'noop', n),
        count,
        timeout,
        lambda n: rq_side.check_finished(queue, n),
    )


def bull_per_job(target: Target, count: int, timeout: float) -> dict[str, float]:
    async def enqueue(n: int) -> None:
        queue = bull_side.make_queue(target)
        await bull_side.add_bulk(queue, 'noop', n)
        await queue.close()

    async def check(n: int) -> None:
        queue = bull_side.make_queue(target)
        await bull_side.check_count(queue, 'completed', n)
        await queue.close()

    def argv(n: int) -> list[str]:  # a BullMQ worker is told how many jobs to wait for
        return ['--url', target.url, '--bullmq', '--jobs', str(n), '--concurrency', '1']

    return per_job(target, argv, lambda n: asyncio.run(enqueue(n)), count, timeout, lambda n: asyncio.run(check(n)))


def rq_memory(lib: Lib, target: Target, count: int, timeout: float) -> dict[str, float]:
    """Resident memory of a SimpleWorker process before and after `count` no-op jobs.

    Its time is not reported, so the worker may share Redis' CPU, where it runs faster on a small VM.
    """
    queue = rq_side.make_queue(lib, target)
    rq_side.enqueue_jobs(lib, queue, 'noop', count)
    argv = [
        '--url',
        target.url,
        *module_args(lib),
        '--class',
        'SimpleWorker',
        '--queue',
        queue.name,
        '--any-cpu',
    ]
    report = run_worker_process(argv, timeout)
    rq_side.check_finished(queue, count)
    return {'rss_start': report['rss_start_mib'], 'rss_end': report['rss_end_mib']}
