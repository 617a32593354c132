"""The worker sets as seen from Redis (RQ's rq.worker_registration): `rq:workers` and
`rq:workers:<queue>`, holding worker keys.

rqfast's worker joins and leaves them in its register_worker script (worker/workerhash.py owns the
worker hash); these functions are RQ's API over the same sets, for tools and tests.
"""

from __future__ import annotations

from typing import Any, Protocol

from redis import Redis

from . import keys
from .text import as_text

WORKERS_BY_QUEUE_KEY = keys.workers_by_queue_key('%s')  # 'rq:workers:%s'
REDIS_WORKER_KEYS = keys.WORKERS
MAX_KEYS = 1000  # members per SREM when clean_worker_registry drops dead workers


class _RegisteredWorker(Protocol):
    """What register() and unregister() read of a worker (rqfast.worker.BaseWorker has it)."""

    @property
    def key(self) -> str: ...

    @property
    def connection(self) -> Redis: ...

    def queue_names(self) -> list[str]: ...


def register(worker: _RegisteredWorker, pipeline: Any = None) -> None:
    """Add the worker's key to rq:workers and to the set of each of its queues."""
    target = pipeline if pipeline is not None else worker.connection.pipeline()
    target.sadd(keys.WORKERS, worker.key)
    for queue in worker.queue_names():
        target.sadd(keys.workers_by_queue_key(queue), worker.key)
    if pipeline is None:
        target.execute()


def unregister(worker: _RegisteredWorker, pipeline: Any = None) -> None:
    """Take the worker's key out of rq:workers and its queues' sets."""
    target = pipeline if pipeline is not None else worker.connection.pipeline()
    target.srem(keys.WORKERS, worker.key)
    for queue in worker.queue_names():
        target.srem(keys.workers_by_queue_key(queue), worker.key)
    if pipeline is None:
        target.execute()


def get_keys(queue: Any = None, connection: Redis | None = None) -> set[str]:
    """The worker keys of a queue, or of every worker (with connection only)."""
    if queue is not None:
        connection, key = queue.connection, keys.workers_by_queue_key(queue.name)
    elif connection is not None:
        key = keys.WORKERS
    else:
        raise ValueError('"Queue" or "connection" argument is required')
    assert connection is not None
    return {as_text(member) for member in connection.smembers(key)}


def clean_worker_registry(queue: Any) -> None:
    """Drop the keys of workers whose hash is gone from rq:workers and the queue's set."""
    worker_keys = sorted(get_keys(queue))
    if not worker_keys or queue.connection.exists(*worker_keys) == len(worker_keys):
        return  # as RQ 3.0: one EXISTS for them all in the usual case, every worker alive
    with queue.connection.pipeline() as pipeline:
        for key in worker_keys:
            pipeline.exists(key)
        dead = [key for key, alive in zip(worker_keys, pipeline.execute(), strict=True) if not alive]
        for start in range(0, len(dead), MAX_KEYS):
            chunk = dead[start : start + MAX_KEYS]
            pipeline.srem(keys.workers_by_queue_key(queue.name), *chunk)
            pipeline.srem(keys.WORKERS, *chunk)
        pipeline.execute()
