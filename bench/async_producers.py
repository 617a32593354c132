"""The concurrent single-enqueue rows (issue 35): N callers enqueueing one job each, all at once.

rqfast: N coroutines awaiting `rqfast.asyncio.AsyncQueue.enqueue` on one redis.asyncio client. RQ (and
rqfast's sync API, the second row): what RQ users do today from async code, `Queue.enqueue` in a thread
pool of N (`run_in_executor`), on one client whose pool the threads share. BullMQ: N coroutines awaiting
`Queue.add`. Each run checks that the queue holds exactly the jobs enqueued.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench import bull_side, jobs
from bench.child import NotAvailable
from bench.libs import Lib
from bench.redis_server import Target
from bench.rq_side import check_queued, make_queue


async def _callers(count: int, callers: int, enqueue: Any) -> float:
    """`count` calls of `enqueue()` from `callers` coroutines taking turns; the seconds it took."""
    per_caller, extra = divmod(count, callers)

    async def caller(n: int) -> None:
        for _ in range(n):
            await enqueue()

    start = time.monotonic()
    await asyncio.gather(*(caller(per_caller + (i < extra)) for i in range(callers)))
    return time.monotonic() - start


def thread_pool(lib: Lib, target: Target, count: int, callers: int) -> float:
    """Queue.enqueue run in a thread pool of `callers` from as many coroutines."""
    queue = make_queue(lib, target)

    async def main() -> float:
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(callers) as pool:
            await asyncio.gather(*(loop.run_in_executor(pool, queue.connection.ping) for _ in range(callers)))
            return await _callers(count, callers, lambda: loop.run_in_executor(pool, queue.enqueue, jobs.noop))

    elapsed = asyncio.run(main())
    check_queued(queue, count)
    return count / elapsed


def awaited(lib: Lib, target: Target, count: int, callers: int) -> float:
    """rqfast.asyncio's AsyncQueue.enqueue awaited from `callers` coroutines."""
    try:
        module = importlib.import_module(f'{lib.module_name}.asyncio')
        redis_asyncio = importlib.import_module('redis.asyncio')
    except ImportError as exc:
        raise NotAvailable(f'{lib.module_name}.asyncio: {exc}') from None
    check = make_queue(lib, target)

    async def main() -> float:
        client = redis_asyncio.Redis.from_url(target.url, max_connections=callers)
        queue = module.AsyncQueue(check.name, connection=client)
        await asyncio.gather(*(client.ping() for _ in range(callers)))  # connect before timing
        await queue.enqueue(jobs.noop)  # (and load the script)
        await client.delete(queue.key)
        elapsed = await _callers(count, callers, lambda: queue.enqueue(jobs.noop))
        await client.aclose()
        return elapsed

    elapsed = asyncio.run(main())
    check_queued(check, count)
    return count / elapsed


def measure(lib: Lib, target: Target, count: int, callers: int) -> dict[str, float]:
    """The two rows: awaited (RQ, which has no asyncio API: its thread pool) and the thread pool."""
    threads = thread_pool(lib, target, count, callers)
    target.flush()
    if lib.module_name == 'rq':
        return {f'async-{callers}': threads, f'async-{callers}-threads': threads}
    return {f'async-{callers}': awaited(lib, target, count, callers), f'async-{callers}-threads': threads}


def bull(target: Target, count: int, callers: int) -> dict[str, float]:
    async def main() -> float:
        queue = bull_side.make_queue(target)
        await queue.getJobCounts('waiting')
        elapsed = await _callers(count, callers, lambda: queue.add('noop', {}))
        await bull_side.check_count(queue, 'waiting', count)
        await queue.close()
        return elapsed

    return {f'async-{callers}': count / asyncio.run(main())}
