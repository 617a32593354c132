"""The same measurements for BullMQ's Python client (optional; asyncio-based).

BullMQ has no worker classes like RQ's: one asyncio Worker runs `concurrency` jobs at a time in a
single process. Every figure is checked against BullMQ's own completed count.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable
from typing import Any

from bench import jobs
from bench.child import MeasurementError, run_group
from bench.redis_server import Target

QUEUE_NAME = 'bench_bullmq'


def make_queue(target: Target) -> Any:
    return importlib.import_module('bullmq').Queue(QUEUE_NAME, {'connection': target.url})


async def add_bulk(queue: Any, job_name: str, count: int) -> None:
    await queue.addBulk([{'name': job_name, 'data': {}} for _ in range(count)])


async def check_count(queue: Any, state: str, expected: int) -> None:
    counts = await queue.getJobCounts(state)
    if counts.get(state) != expected:
        raise MeasurementError(f'{counts.get(state)} of {expected} jobs are {state}: {counts}')


def bulk_insert(target: Target, count: int) -> float:
    async def main() -> float:
        queue = make_queue(target)
        await queue.getJobCounts('waiting')  # connect before timing
        start = time.monotonic()
        await add_bulk(queue, 'noop', count)
        elapsed = time.monotonic() - start
        await check_count(queue, 'waiting', count)
        await queue.close()
        return count / elapsed

    return asyncio.run(main())


def single_insert(target: Target, count: int) -> float:
    async def main() -> float:
        queue = make_queue(target)
        await queue.getJobCounts('waiting')
        start = time.monotonic()
        for _ in range(count):
            await queue.add('noop', {})
        elapsed = time.monotonic() - start
        await check_count(queue, 'waiting', count)
        await queue.close()
        return count / elapsed

    return asyncio.run(main())


def concurrent_insert(target: Target, count: int, producers: int, timeout: float) -> float:
    per_producer = count // producers

    def setup() -> Any:
        loop = asyncio.new_event_loop()
        queue = loop.run_until_complete(_connected_queue(target))

        async def produce() -> None:
            for _ in range(per_producer):
                await queue.add('noop', {})

        return lambda: loop.run_until_complete(produce())

    _, elapsed = run_group(producers, setup, timeout)

    async def check() -> None:
        queue = make_queue(target)
        await check_count(queue, 'waiting', per_producer * producers)
        await queue.close()

    asyncio.run(check())
    return per_producer * producers / elapsed


async def _connected_queue(target: Target) -> Any:
    queue = make_queue(target)
    await queue.getJobCounts('waiting')
    return queue


def worker_rate(
    target: Target,
    job_name: str,
    count: int,
    concurrency: int,
    timeout: float,
    at_done: Callable[[], None] | None = None,
) -> float:
    """Jobs/s of one BullMQ Worker with `concurrency` draining `count` queued jobs; `at_done` runs as
    soon as the last job completed, before the worker closes (the peers rows read Redis' CPU there)."""

    async def main() -> float:
        queue = make_queue(target)
        await add_bulk(queue, job_name, count)
        elapsed = await drain(target, count, concurrency, timeout, at_done)
        await check_count(queue, 'completed', count)
        await queue.close()
        return count / elapsed

    return asyncio.run(main())


async def drain(
    target: Target, count: int, concurrency: int, timeout: float, at_done: Callable[[], None] | None = None
) -> float:
    """Run a Worker until `count` jobs completed (or, for 0, until it found the queue empty)."""
    worker_class = importlib.import_module('bullmq').Worker
    done = asyncio.Event()
    outcome = {'completed': 0, 'failed': 0}

    def on_done(kind: str) -> Any:
        def handler(*_: Any) -> None:
            outcome[kind] += 1
            if outcome['completed'] + outcome['failed'] >= count:
                done.set()

        return handler

    opts = {'connection': target.url, 'concurrency': concurrency, 'autorun': False}
    worker = worker_class(QUEUE_NAME, jobs.bull_processor, opts)
    worker.on('completed', on_done('completed'))
    worker.on('failed', on_done('failed'))
    start = time.monotonic()
    running = asyncio.ensure_future(worker.run())
    await asyncio.wait_for(done.wait() if count else _until_drained(worker), timeout)
    elapsed = time.monotonic() - start
    if at_done is not None:
        at_done()
    await worker.close()
    await running
    if outcome['failed']:
        raise MeasurementError(f'{outcome["failed"]} of {count} BullMQ jobs failed')
    return elapsed


async def _until_drained(worker: Any) -> None:
    while not worker.drained:
        await asyncio.sleep(0.01)
