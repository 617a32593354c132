"""The concurrent single-enqueue rows (issue 35): N callers enqueueing one job each, all at once.

rqfast: N coroutines awaiting `rqfast.asyncio.AsyncQueue.enqueue` on one redis.asyncio client. RQ (and
rqfast's sync API, the second row): what RQ users do today from async code, `Queue.enqueue` in a thread
pool of N (`run_in_executor`), on one client whose pool the threads share. BullMQ: N coroutines awaiting
`Queue.add`. arq, saq and taskiq (their columns when the selection names these rows: `--only async`):
N coroutines awaiting each one's own async producer (`ArqRedis.enqueue_job`, `Queue.enqueue`,
`task.kiq()`) on one client of theirs, set up as the peers rows set them up (bench/peers/). Each run checks
that the queue holds exactly the jobs enqueued.

Before the clock starts, each opens its N connections (N concurrent PINGs; BullMQ's client has one) and
enqueues one job (loading its scripts, if it has any); rqfast removes its queue's list after that job,
BullMQ's and a peer's is counted in its check.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench import bull_side, jobs
from bench.child import MeasurementError, NotAvailable
from bench.libs import Lib
from bench.peers import Peer, harness, side
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
        queue = bull_side.make_queue(target)  # one connection (BullMQ's client is single_connection_client)
        await queue.add('noop', {})  # the warm-up job (loads its script): counted below
        elapsed = await _callers(count, callers, lambda: queue.add('noop', {}))
        await bull_side.check_count(queue, 'waiting', count + 1)
        await queue.close()
        return elapsed

    return {f'async-{callers}': count / asyncio.run(main())}


PEER_JOB = 'noop_async'  # the peers' no-op job (bench/jobs.py), as on the peers' enqueue rows


def peer(who: Peer, target: Target, count: int, callers: int) -> dict[str, float]:
    """arq, saq or taskiq: its async producer (the side module's async_producer) awaited from `callers`
    coroutines."""
    module = side(who)
    harness.quiet(target)
    if not hasattr(module, 'async_producer'):
        raise NotAvailable(f'{who.name} has no async producer')

    async def main() -> float:
        send, close = await module.async_producer(target.url, PEER_JOB, callers)
        await send()  # the warm-up job: counted below
        elapsed = await _callers(count, callers, send)
        await close()
        return elapsed

    elapsed = asyncio.run(main())
    waiting = module.queued(target.url)
    if waiting != count + 1:
        raise MeasurementError(f'{waiting} jobs queued, {count} were enqueued (and 1 before the clock started)')
    return {f'async-{callers}': count / elapsed}
