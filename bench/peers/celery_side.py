"""celery with a Redis broker: one worker in this process (celery's own embedded worker).

The pool is the one celery's docs give for each case in one process: `solo` at concurrency 1, `threads`
above (prefork would be N processes). No result backend (task_ignore_result: nobody reads the
results), prefetch multiplier at its default (4), acks at their default (early). A lone worker has no
peers: mingle, gossip and heartbeats are off, as in celery's embedded test worker.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Celery, group
from celery.contrib.testing.worker import start_worker

from bench.peers import tally

QUEUE = 'bench_celery'


_apps: dict[str, tuple[Any, dict[str, Any]]] = {}


def _app(url: str) -> tuple[Any, dict[str, Any]]:
    """One app per process and URL: celery registers a task name once."""
    if url not in _apps:
        _apps[url] = _new_app(url)
    return _apps[url]


def _new_app(url: str) -> tuple[Any, dict[str, Any]]:
    app = Celery('bench', broker=url, set_as_current=True)
    app.conf.update(
        task_ignore_result=True,
        task_default_queue=QUEUE,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
    tasks = {job: app.task(tally.counted(job), name=job) for job in ('noop', 'io_sleep', 'io_sleep_redis', 'pickup')}
    return app, tasks


def enqueue(url: str, job: str, count: int) -> None:
    app, tasks = _app(url)
    with app.producer_or_acquire() as producer:
        for _ in range(count):
            tasks[job].apply_async(producer=producer)


def insert(url: str, job: str, count: int, bulk: bool) -> float:
    app, tasks = _app(url)
    task = tasks[job]
    with app.connection_for_write() as conn:
        conn.ensure_connection()
        task.delay()  # the first send sets up the producer and declares the queue: not timed
        start = time.monotonic()
        if bulk:  # celery's way to send many tasks at once (a group); it publishes them one by one
            group(task.s() for _ in range(count)).apply_async()
        else:
            for _ in range(count):
                task.delay()
        elapsed = time.monotonic() - start
    app.connection_for_write().default_channel.client.lpop(QUEUE)  # the untimed first one
    return elapsed


def sender(url: str, job: str) -> tuple[Any, Any]:
    """(send(*args), close()), for the latency rows' producer."""
    app, tasks = _app(url)
    task = tasks[job]
    with app.connection_for_write() as conn:
        conn.ensure_connection()
    return (lambda *args: task.delay(*args)), (lambda: None)


def queued(url: str) -> int:
    app, _ = _app(url)
    with app.connection_for_read() as conn:
        return int(conn.default_channel.client.llen(QUEUE))


def work(url: str, job: str, count: int, concurrency: int, timeout: float) -> float:
    app, _ = _app(url)
    pool = 'solo' if concurrency == 1 else 'threads'
    start = time.monotonic()
    with start_worker(
        app, pool=pool, concurrency=concurrency, perform_ping_check=False, loglevel=logging.WARNING, shutdown_timeout=30
    ):
        tally.CURRENT.wait(timeout)
    return start
