"""arq: one Worker on this process' event loop, max_jobs=N, jobs enqueued with ArqRedis.enqueue_job.

arq polls its queue (a sorted set) every poll_delay, 0.5 s by default, taking up to max_jobs jobs each
time: that default would hold one job at a time to 2 jobs/s, so the bench sets 10 ms (each idle poll
costs Redis a little). Results are kept (arq's default, 1 h), as RQ keeps them.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from arq import create_pool
from arq.connections import RedisSettings
from arq.constants import default_queue_name
from arq.worker import Worker, func

from bench.child import NotAvailable
from bench.peers import tally

POLL_DELAY = 0.010
JOBS = ('noop_async', 'io_async', 'io_async_redis', 'pickup_async')


async def _pool(url: str) -> Any:
    return await create_pool(RedisSettings.from_dsn(url))


def enqueue(url: str, job: str, count: int) -> None:
    async def main() -> None:
        pool = await _pool(url)
        for _ in range(count):
            await pool.enqueue_job(job)
        await pool.aclose()

    asyncio.run(main())


def insert(url: str, job: str, count: int, bulk: bool) -> float:
    if bulk:
        raise NotAvailable('arq has no bulk enqueue')

    async def main() -> float:
        pool = await _pool(url)
        await pool.ping()
        start = time.monotonic()
        for _ in range(count):
            await pool.enqueue_job(job)
        elapsed = time.monotonic() - start
        await pool.aclose()
        return elapsed

    return asyncio.run(main())


async def async_sender(url: str, job: str) -> tuple[Any, Any]:
    """(async send(*args), async close()), for the latency rows' producer."""
    pool = await _pool(url)
    await pool.ping()

    async def send(*args: Any) -> None:
        await pool.enqueue_job(job, *args)

    return send, pool.aclose


async def async_producer(url: str, job: str, callers: int) -> tuple[Any, Any]:
    """(async send(), async close()) on one pool with `callers` connections open, for the async rows."""
    pool = await _pool(url)
    await asyncio.gather(*(pool.ping() for _ in range(callers)))

    async def send() -> None:
        await pool.enqueue_job(job)

    return send, pool.aclose


def queued(url: str) -> int:
    async def main() -> int:
        pool = await _pool(url)
        size = int(await pool.zcard(default_queue_name))
        await pool.aclose()
        return size

    return asyncio.run(main())


def work(url: str, job: str, count: int, concurrency: int, timeout: float) -> float:
    async def main() -> float:
        functions = [func(tally.counted(name, with_ctx=True), name=name) for name in JOBS]
        worker = Worker(
            functions,
            redis_settings=RedisSettings.from_dsn(url),
            max_jobs=concurrency,
            poll_delay=POLL_DELAY,
            handle_signals=False,
        )
        start = time.monotonic()
        running = asyncio.ensure_future(worker.main())
        try:
            await tally.CURRENT.wait_async(timeout)
        finally:
            # Stopped the way burst mode ends (at its next poll: the queue is empty, the last jobs' own
            # finish awaited), not by cancelling main(): cancelled mid-command, arq 0.28 on this redis-py
            # sometimes waits forever for a reply in close().
            worker.burst = True
            await asyncio.wait_for(running, timeout)
            await worker.close()
        return start

    return asyncio.run(main())
