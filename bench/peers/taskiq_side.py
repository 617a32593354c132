"""taskiq with taskiq-redis' RedisStreamBroker (the one its README shows; it acknowledges messages).

One receiver on this process' event loop (taskiq's run_receiver_task, what `taskiq worker` runs in
each of its processes), max_async_tasks=N. No result backend (taskiq's default; nobody reads them).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from taskiq.api import run_receiver_task
from taskiq_redis import RedisStreamBroker

from bench.child import NotAvailable
from bench.peers import tally

STREAM = 'bench_taskiq'
JOBS = ('noop_async', 'io_async', 'io_async_redis', 'pickup_async')


async def _broker(url: str) -> tuple[Any, dict[str, Any]]:
    broker = RedisStreamBroker(url=url, queue_name=STREAM)
    tasks = {name: broker.register_task(tally.counted(name), task_name=name) for name in JOBS}
    await broker.startup()  # creates the consumer group, which reads the messages sent from now on
    return broker, tasks


def enqueue(url: str, job: str, count: int) -> None:
    async def main() -> None:
        broker, tasks = await _broker(url)
        for _ in range(count):
            await tasks[job].kiq()
        await broker.shutdown()

    asyncio.run(main())


def insert(url: str, job: str, count: int, bulk: bool) -> float:
    if bulk:
        raise NotAvailable('taskiq has no bulk enqueue')

    async def main() -> float:
        broker, tasks = await _broker(url)
        task = tasks[job]
        start = time.monotonic()
        for _ in range(count):
            await task.kiq()
        elapsed = time.monotonic() - start
        await broker.shutdown()
        return elapsed

    return asyncio.run(main())


async def async_sender(url: str, job: str) -> tuple[Any, Any]:
    """(async send(*args), async close()), for the latency rows' producer."""
    broker, tasks = await _broker(url)
    task = tasks[job]

    async def send(*args: Any) -> None:
        await task.kiq(*args)

    return send, broker.shutdown


async def async_producer(url: str, job: str, callers: int) -> tuple[Any, Any]:
    """(async send(), async close()) on one broker with `callers` connections of its pool open, for the
    async rows."""
    import redis.asyncio

    broker, tasks = await _broker(url)
    client = redis.asyncio.Redis(connection_pool=broker.connection_pool)
    await asyncio.gather(*(client.ping() for _ in range(callers)))
    task = tasks[job]

    async def send() -> None:
        await task.kiq()

    return send, broker.shutdown


def queued(url: str) -> int:
    """Messages in the stream that the group has not yet read (its lag)."""

    async def main() -> int:
        broker, _ = await _broker(url)
        import redis.asyncio

        client = redis.asyncio.Redis.from_url(url)
        groups = await client.xinfo_groups(STREAM)
        length = await client.xlen(STREAM)
        await client.aclose()
        await broker.shutdown()
        lags: list[Any] = [group.get('lag') for group in groups]
        if any(lag is None for lag in lags):  # Redis < 7 has no lag: the stream's length (nothing read yet)
            return int(length)
        return sum(int(lag) for lag in lags)

    return asyncio.run(main())


def work(url: str, job: str, count: int, concurrency: int, timeout: float) -> float:
    async def main() -> float:
        broker, _ = await _broker(url)
        start = time.monotonic()
        running = asyncio.ensure_future(run_receiver_task(broker, max_async_tasks=concurrency, run_startup=False))
        try:
            await tally.CURRENT.wait_async(timeout)
        finally:
            await asyncio.sleep(0.01)  # the last jobs' acks
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await broker.shutdown()
        return start

    return asyncio.run(main())
