"""dramatiq with its RedisBroker, as its docs set it up: one Worker (threads) in this process.

dramatiq's CLI starts one process per CPU with 8 threads each; here one process, worker_threads=N.
Default middleware (retries, time limit, age limit, ...). No results (dramatiq keeps none by default).
"""

from __future__ import annotations

import time
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker

from bench.peers import tally

QUEUE = 'bench_dramatiq'


def _broker(url: str) -> tuple[Any, dict[str, Any]]:
    broker = RedisBroker(url=url)
    dramatiq.set_broker(broker)
    actors = {}
    for job in ('noop', 'io_sleep', 'io_sleep_redis', 'pickup'):
        actors[job] = dramatiq.actor(actor_name=job, queue_name=QUEUE, broker=broker)(tally.counted(job))
    return broker, actors


def enqueue(url: str, job: str, count: int) -> None:
    broker, actors = _broker(url)
    for _ in range(count):
        actors[job].send()
    broker.close()


def insert(url: str, job: str, count: int, bulk: bool) -> float:
    broker, actors = _broker(url)
    broker.client.ping()
    actor = actors[job]
    start = time.monotonic()
    if bulk:  # dramatiq's way to send many messages at once; it enqueues them one by one
        dramatiq.group([actor.message() for _ in range(count)], broker=broker).run()
    else:
        for _ in range(count):
            actor.send()
    elapsed = time.monotonic() - start
    broker.close()
    return elapsed


def sender(url: str, job: str) -> tuple[Any, Any]:
    """(send(*args), close()), for the latency rows' producer."""
    broker, actors = _broker(url)
    broker.client.ping()
    actor = actors[job]
    return (lambda *args: actor.send(*args)), broker.close


def queued(url: str) -> int:
    broker, _ = _broker(url)
    size = int(broker.do_qsize(QUEUE))
    broker.close()
    return size


def work(url: str, job: str, count: int, concurrency: int, timeout: float) -> float:
    broker, _ = _broker(url)
    worker = dramatiq.Worker(broker, queues={QUEUE}, worker_threads=concurrency)
    start = time.monotonic()
    worker.start()
    try:
        tally.CURRENT.wait(timeout)
    finally:
        worker.stop(timeout=10_000)
        broker.close()
    return start
