"""Floors: what the machine and RQ's layout allow for a row, measured in the same run as the row.

Each is a `floor` column of its own in the table, measured in its own fresh fork taking its turn after
the libraries', run by run, so that it meets the same load; `rqfast / floor` divides rqfast's median by
it. A floor is the best a library could do on this machine doing only what the row cannot do without:

- no-op jobs, concurrency 1 (and the round trips of the latency rows): one trivial script call per job
  (`return 1`, EVALSHA) on the same kind of client (redis-py with hiredis), calls/s (ms each);
- Worker (a fork per job): a bare os.fork() + os._exit(0) + waitpid with redis-py loaded, forks/s;
- SpawnWorker (a process per job): `python -c pass` started and waited for, one at a time, per s;
- the CPU row: the job's own function called in a loop, per s;
- N jobs of 10 ms at once: N threads (N asyncio tasks for the asyncio rows) sleeping 10 ms in turn, with
  one INCR after each sleep for the rows with a Redis call, for the row's number of jobs: per s (the
  machine's own limit: 100 x N/s if its CPU is not the limit);
- enqueue one by one: 1 / (one trivial script round trip + the server time of the four commands RQ's
  enqueue sends, INFO commandstats over rqfast's own enqueues + the least Python that builds RQ's job
  record: its 15 fields, the pickled and compressed call among them);
- Redis CPU per job: the server time of the commands RQ's layout needs for the row (INFO commandstats
  over rqfast's own run: its scripts' Lua work left out), µs per job.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import subprocess
import sys
import threading
import time
import uuid
import zlib
from datetime import datetime, timezone
from typing import Any

from bench import jobs
from bench.redis_server import _SCRIPT_COMMANDS, _TRANSACTION_COMMANDS, Target

TRIVIAL = 'return 1'
_ADMIN = ('info', 'config|resetstat', 'flushdb', 'ping', 'client|setinfo', 'hello', 'select')


def _seconds_per_call(fn: Any, count: int) -> float:
    fn()  # (connected, warm)
    start = time.perf_counter()
    for _ in range(count):
        fn()
    return (time.perf_counter() - start) / count


def round_trip_seconds(target: Target, count: int) -> float:
    """One trivial script call per job on a plain redis-py client (hiredis), seconds each."""
    client = target.connect()
    sha = client.script_load(TRIVIAL)
    return _seconds_per_call(lambda: client.evalsha(sha, 0), count)


def script_rate(target: Target, count: int) -> float:
    return 1 / round_trip_seconds(target, count)


def round_trip_ms(target: Target, count: int) -> dict[str, float]:
    """The latency rows' floor: one trivial round trip, ms (what a job's pickup needs at least once)."""
    ms = round_trip_seconds(target, count) * 1000
    return {'p50': ms, 'p99': ms, 'idle': ms}


def fork_rate(count: int) -> float:
    """A bare fork + _exit + waitpid per job, redis-py loaded, per second."""
    import redis  # noqa: F401  (the parent's size is what a fork copies the page tables of)

    def one() -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)

    return 1 / _seconds_per_call(one, count)


def spawn_rate(count: int) -> float:
    """`python -c pass` started and waited for, one at a time, per second."""
    return 1 / _seconds_per_call(lambda: subprocess.run([sys.executable, '-c', 'pass'], check=True), count)


def cpu_rate(count: int) -> float:
    return 1 / _seconds_per_call(jobs.cpu, count)


def sleep_rate(target: Target, count: int, concurrency: int, with_redis: bool = False) -> float:
    """`count` 10 ms sleeps (each with one INCR after it, `with_redis`) on `concurrency` threads, per second."""
    client = target.connect() if with_redis else None
    left = iter(range(count))
    lock = threading.Lock()

    def run() -> None:
        while True:
            with lock:
                if next(left, None) is None:
                    return
            time.sleep(jobs.IO_SLEEP_SECONDS)
            if client is not None:
                client.incr('bench:floor')

    threads = [threading.Thread(target=run) for _ in range(concurrency)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return count / (time.perf_counter() - start)


def async_sleep_rate(target: Target, count: int, concurrency: int, with_redis: bool = False) -> float:
    """The same with `concurrency` asyncio tasks on one event loop (redis.asyncio for the INCR)."""

    async def main() -> float:
        import redis.asyncio

        client = redis.asyncio.Redis.from_url(target.url) if with_redis else None
        left = iter(range(count))

        async def run() -> None:
            while next(left, None) is not None:
                await asyncio.sleep(jobs.IO_SLEEP_SECONDS)
                if client is not None:
                    await client.incr('bench:floor')

        start = time.perf_counter()
        await asyncio.gather(*(run() for _ in range(concurrency)))
        elapsed = time.perf_counter() - start
        if client is not None:
            await client.aclose()
        return count / elapsed

    return asyncio.run(main())


def rq_record() -> dict[str, Any]:
    """The least Python that builds RQ's job record for a no-op job (its 15 fields)."""
    now = datetime.now(timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')
    data = zlib.compress(pickle.dumps(('bench.jobs.noop', None, (), {}), protocol=pickle.HIGHEST_PROTOCOL))
    return {
        'id': str(uuid.uuid4()),
        'status': 'queued',
        'created_at': now,
        'data': data,
        'success_callback_name': '',
        'failure_callback_name': '',
        'stopped_callback_name': '',
        'started_at': '',
        'ended_at': '',
        'last_heartbeat': '',
        'worker_name': '',
        'group_id': '',
        'origin': 'default',
        'description': 'bench.jobs.noop()',
        'timeout': 180,
        'enqueued_at': now,
    }


def command_seconds(client: Any) -> tuple[float, float]:
    """INFO commandstats so far: (seconds in data commands, inner ones of scripts included; seconds in
    script calls, their inner commands included), the bench's own admin commands left out."""
    commands = scripts = 0.0
    for name, stats in client.info('commandstats').items():
        command = name.removeprefix('cmdstat_')
        seconds = float(stats['usec']) / 1e6
        if command in _SCRIPT_COMMANDS:
            scripts += seconds
        elif command not in _TRANSACTION_COMMANDS and command not in _ADMIN:
            commands += seconds
    return commands, scripts


def enqueue_floor(target: Target, count: int) -> tuple[float, float]:
    """Enqueue one by one: (the floor rate, 1 / (round trip + the four commands' server time + the
    record's Python), per s; the four commands' server time, µs per enqueue)."""
    import rqfast

    round_trip = round_trip_seconds(target, count)
    client = target.connect()
    queue = rqfast.Queue('bench_floor', connection=client)
    queue.enqueue(jobs.noop)
    client.config_resetstat()
    for _ in range(count):
        queue.enqueue(jobs.noop)
    commands = command_seconds(client)[0] / count
    python = _seconds_per_call(rq_record, count)
    return 1 / (round_trip + commands + python), commands * 1e6


def layout_commands_us(target: Target, count: int, concurrency: int) -> float:
    """The server time of the commands RQ's layout needs per no-op job (enqueue included), µs: INFO
    commandstats over rqfast's own run (enqueue_many, then a SimpleWorker at `concurrency`)."""
    import rqfast

    client = target.connect()
    queue = rqfast.Queue('bench_floor', connection=client)
    options = {'concurrency': concurrency} if concurrency > 1 else {}
    queue.enqueue_many([rqfast.Queue.prepare_data(jobs.noop) for _ in range(10)])
    rqfast.SimpleWorker([queue], connection=client, **options).work(burst=True, logging_level='WARNING')
    client.config_resetstat()
    queue.enqueue_many([rqfast.Queue.prepare_data(jobs.noop) for _ in range(count)])
    rqfast.SimpleWorker([queue], connection=client, **options).work(burst=True, logging_level='WARNING')
    commands, _ = command_seconds(client)
    return commands / count * 1e6
