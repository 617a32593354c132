"""huey with RedisHuey: one consumer in this process with N thread workers (`huey_consumer -k thread -w N`).

Its defaults otherwise: blocking reads (BRPOP), the scheduler thread, results stored (a job returning
None stores nothing).
"""

from __future__ import annotations

import time
from typing import Any

from huey import RedisHuey

from bench.peers import tally

NAME = 'bench_huey'
_hueys: dict[str, tuple[Any, dict[str, Any]]] = {}


def _huey(url: str) -> tuple[Any, dict[str, Any]]:
    if url not in _hueys:
        huey = RedisHuey(NAME, url=url)
        tasks = {
            job: huey.task(name=job)(tally.counted(job)) for job in ('noop', 'io_sleep', 'io_sleep_redis', 'pickup')
        }
        _hueys[url] = huey, tasks
    return _hueys[url]


def enqueue(url: str, job: str, count: int) -> None:
    _, tasks = _huey(url)
    for _ in range(count):
        tasks[job]()


def insert(url: str, job: str, count: int, bulk: bool) -> float:
    if bulk:
        from bench.child import NotAvailable

        raise NotAvailable('huey has no bulk enqueue')
    huey, tasks = _huey(url)
    huey.storage.conn.ping()
    task = tasks[job]
    start = time.monotonic()
    for _ in range(count):
        task()
    return time.monotonic() - start


def sender(url: str, job: str) -> tuple[Any, Any]:
    """(send(*args): one job of `job` with these arguments, close()), for the latency rows' producer."""
    huey, tasks = _huey(url)
    huey.storage.conn.ping()
    task = tasks[job]
    return (lambda *args: task(*args)), (lambda: None)


def queued(url: str) -> int:
    huey, _ = _huey(url)
    return int(huey.pending_count())


def work(url: str, job: str, count: int, concurrency: int, timeout: float) -> float:
    huey, _ = _huey(url)
    consumer = huey.create_consumer(workers=concurrency, worker_type='thread')
    start = time.monotonic()
    consumer.start()
    try:
        tally.CURRENT.wait(timeout)
    finally:
        consumer.stop(graceful=True)
    return start
