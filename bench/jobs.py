"""The job functions every library runs; imported as ``bench.jobs`` so workers and horses can find them.

asyncio is imported inside the coroutines only: at module level it would cost every spawned child of
every library ~120M instructions (a third of a no-op SpawnWorker child) for jobs that never use it.
"""

from __future__ import annotations

import math
import time
from typing import Any

CPU_OPERATIONS = 1000
IO_SLEEP_SECONDS = 0.010


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


# BullMQ processors are coroutines called as processor(job, token); they route on the job's name.


async def bull_processor(job: Any, token: str) -> Any:
    import asyncio

    if job.name == 'cpu':
        return cpu()
    if job.name in ('io_sleep', 'io_async'):
        await asyncio.sleep(IO_SLEEP_SECONDS)
    return None


RQ_JOBS = {'noop': noop, 'cpu': cpu, 'io_sleep': io_sleep, 'io_async': io_async}
