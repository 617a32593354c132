"""saq with its Redis queue: one Worker on this process' event loop, concurrency=N.

saq's defaults otherwise (job state kept in Redis, its sweep/schedule/stats timers). Jobs are
enqueued with Queue.enqueue; saq has no bulk enqueue (Queue.map also waits for the results).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from saq import Queue, Worker

from bench.child import NotAvailable
from bench.peers import tally

NAME = 'bench_saq'
JOBS = ('noop_async', 'io_async', 'io_async_redis', 'pickup_async')


async def _queue(url: str) -> Any:
    queue = Queue.from_url(url, name=NAME)
    await queue.connect()
    return queue


def enqueue(url: str, job: str, count: int) -> None:
    async def main() -> None:
        queue = await _queue(url)
        for _ in range(count):
            await queue.enqueue(job)
        await queue.disconnect()

    asyncio.run(main())


def insert(url: str, job: str, count: int, bulk: bool) -> float:
    if bulk:
        raise NotAvailable('saq has no bulk enqueue')

    async def main() -> float:
        queue = await _queue(url)
        await queue.count('queued')
        start = time.monotonic()
        for _ in range(count):
            await queue.enqueue(job)
        elapsed = time.monotonic() - start
        await queue.disconnect()
        return elapsed

    return asyncio.run(main())


async def async_sender(url: str, job: str) -> tuple[Any, Any]:
    """(async send(enqueued, tag), async close()), for the latency rows' producer (saq passes keywords)."""
    queue = await _queue(url)

    async def send(enqueued: float, tag: str) -> None:
        await queue.enqueue(job, enqueued=enqueued, tag=tag)

    return send, queue.disconnect


async def async_producer(url: str, job: str, callers: int) -> tuple[Any, Any]:
    """(async send(), async close()) on one queue with `callers` connections open, for the async rows."""
    queue = await _queue(url)
    await asyncio.gather(*(queue.redis.ping() for _ in range(callers)))

    async def send() -> None:
        await queue.enqueue(job)

    return send, queue.disconnect


def queued(url: str) -> int:
    async def main() -> int:
        queue = await _queue(url)
        size = int(await queue.count('queued'))
        await queue.disconnect()
        return size

    return asyncio.run(main())


def work(url: str, job: str, count: int, concurrency: int, timeout: float) -> float:
    async def main() -> float:
        queue = await _queue(url)
        functions = [(name, tally.counted(name, with_ctx=True)) for name in JOBS]
        worker = Worker(queue, functions, concurrency=concurrency)
        start = time.monotonic()
        running = asyncio.ensure_future(worker.start())
        try:
            await tally.CURRENT.wait_async(timeout)
        finally:
            await worker.stop()
            await asyncio.gather(running, return_exceptions=True)
            await queue.disconnect()
        return start

    return asyncio.run(main())
