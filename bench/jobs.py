"""The job functions every library runs; imported as ``bench.jobs`` so workers and horses can find them.

asyncio is imported inside the coroutines only: at module level it would cost every spawned child of
every library ~120M instructions (a third of a no-op SpawnWorker child) for jobs that never use it.
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

CPU_OPERATIONS = 1000
IO_SLEEP_SECONDS = 0.010
# The jobs "with one Redis call" INCR this key on the measured server (the URL is in this variable, set
# by the run before any worker starts): the job's own call, and the count every run checks.
REDIS_URL_VARIABLE = 'BENCH_REDIS_URL'
INCR_KEY = 'bench:incr'


def noop() -> None:
    """Does nothing: what is left is the queue's own cost."""


def cpu() -> float:
    """1,000 sin/cos operations (500 of each)."""
    total = 0.0
    for i in range(CPU_OPERATIONS // 2):
        total += math.sin(i) * math.cos(i)
    return total


def io_sleep() -> None:
    """Stands for a 10 ms call to another service."""
    time.sleep(IO_SLEEP_SECONDS)


async def io_async() -> None:
    """io_sleep as a coroutine: for the workers that run many at once on an event loop."""
    import asyncio

    await asyncio.sleep(IO_SLEEP_SECONDS)


async def noop_async() -> None:
    """noop as a coroutine, for the libraries that run only coroutines (arq, saq, taskiq)."""


def io_sleep_redis() -> None:
    """io_sleep, then one Redis call of the job's own (an INCR on a private key), as most real jobs make."""
    time.sleep(IO_SLEEP_SECONDS)
    _sync_client().incr(INCR_KEY)


async def io_async_redis() -> None:
    """io_async, then one Redis call of the job's own, on an asyncio client of this event loop."""
    import asyncio

    await asyncio.sleep(IO_SLEEP_SECONDS)
    await _async_client(asyncio.get_running_loop()).incr(INCR_KEY)


_clients: dict[Any, Any] = {}  # one client (a pool) per process, and one per event loop


def _sync_client() -> Any:
    client = _clients.get(os.getpid())
    if client is None:
        import redis

        client = _clients[os.getpid()] = redis.Redis.from_url(os.environ[REDIS_URL_VARIABLE])
    return client


def _async_client(loop: Any) -> Any:
    client = _clients.get(loop)
    if client is None:
        import redis.asyncio

        client = _clients[loop] = redis.asyncio.Redis.from_url(os.environ[REDIS_URL_VARIABLE])
    return client


# The latency rows' jobs (bench/latency.py): each records, on starting, its pickup latency (its start
# minus `enqueued`, the producer's time.time() as it sent the job) under `tag`, as a line appended to the
# file this variable names (O_APPEND: the lines of a worker's threads, horses and children do not mix).
PICKUP_FILE_VARIABLE = 'BENCH_PICKUP_FILE'
_pickup_fd: dict[int, int] = {}


def pickup(enqueued: float, tag: str) -> None:
    """Records its pickup latency; does nothing else (a no-op job)."""
    started = time.time()
    fd = _pickup_fd.get(os.getpid())
    if fd is None:
        fd = _pickup_fd[os.getpid()] = os.open(os.environ[PICKUP_FILE_VARIABLE], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f'{tag} {started - float(enqueued):.6f}\n'.encode())


async def pickup_async(enqueued: float, tag: str) -> None:
    """pickup as a coroutine."""
    pickup(enqueued, tag)


# BullMQ processors are coroutines called as processor(job, token); they route on the job's name.


async def bull_processor(job: Any, token: str) -> Any:
    import asyncio

    if job.name == 'cpu':
        return cpu()
    if job.name in ('io_sleep', 'io_async'):
        await asyncio.sleep(IO_SLEEP_SECONDS)
    if job.name == 'io_async_redis':
        await io_async_redis()
    if job.name == 'pickup':
        pickup(job.data['enqueued'], job.data['tag'])
    return None


RQ_JOBS = {
    'noop': noop,
    'cpu': cpu,
    'io_sleep': io_sleep,
    'io_async': io_async,
    'noop_async': noop_async,
    'io_sleep_redis': io_sleep_redis,
    'io_async_redis': io_async_redis,
    'pickup': pickup,
    'pickup_async': pickup_async,
}
