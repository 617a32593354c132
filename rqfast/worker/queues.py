"""The queues a worker is given, as RQ's worker takes them: names, rqfast queues, or any queue object.

Any object with a `name` (and a `connection`) is a queue, as RQ's worker duck-types them: django-rq's
DjangoRQ, a subclass of rq.Queue, or RQ's own Queue, so an app can switch only its worker class. A
queue that is not rqfast's is rebuilt as the worker's queue_class under the same name.
"""

from __future__ import annotations

from typing import Any

from redis import Redis

from ..queue import Queue


def queue_list(queues: Any) -> list[Any]:
    """One queue (a name or a queue object) or an iterable of them, as a list."""
    if isinstance(queues, str) or hasattr(queues, 'name'):
        return [queues]
    return list(queues)


def connection_of(queues: list[Any], connection: Redis | None) -> Redis:
    """The worker's connection: the one given, else the first queue's (as RQ's get_connection_from_queues)."""
    if not queues:
        raise ValueError('a worker needs at least one queue')
    if connection is None:
        connection = next((q.connection for q in queues if getattr(q, 'connection', None) is not None), None)
    if connection is None:
        raise TypeError('a worker needs a connection')
    return connection


def worker_queue(queue: Any, connection: Redis, queue_class: type[Queue], job_class: Any, serializer: Any) -> Queue:
    if isinstance(queue, Queue):
        return queue
    if isinstance(queue, str):
        return queue_class(queue, connection=connection, job_class=job_class, serializer=serializer)
    name = getattr(queue, 'name', None)
    if not isinstance(name, str):
        raise TypeError(f'a worker takes queue names or queue objects with a name, not {queue!r}')
    own = getattr(queue, 'connection', None) or connection
    return queue_class(name, connection=own, job_class=job_class, serializer=serializer)
