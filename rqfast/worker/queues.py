"""The queues a worker is given, as RQ's worker takes them: names, rqfast queues, or any queue object.

Any object with a `name` (and a `connection`) is a queue, as RQ's worker duck-types them: django-rq's
DjangoRQ, a subclass of rq.Queue, or RQ's own Queue, so an app can switch only its worker class. A
queue that is not rqfast's is rebuilt as the worker's queue_class under the same name.

The same holds for the classes a worker is handed (django-rq hands its JOB_CLASS and the class of its
queues, rq's Job and DjangoRQ by default, to any WORKER_CLASS): a job or queue class that is not
rqfast's (rq 2.12's, rq 3.0's, or a subclass of them) is replaced by rqfast's own, so jobs are loaded
and recorded through rqfast's job model whichever rq is installed (`own_job_class`, `own_queue_class`).
"""

from __future__ import annotations

from typing import Any

from redis import Redis

from .. import keys
from ..cluster import check_connection
from ..imports import import_attribute
from ..queue import Queue
from ..queue import own_job_class as own_job_class  # the worker's job class, as a queue's


def queue_list(queues: Any) -> list[Any]:
    """One queue (a name or a queue object) or an iterable of them, as a list."""
    if isinstance(queues, str) or hasattr(queues, 'name'):
        return [queues]
    return list(queues)


def connection_of(queues: list[Any], connection: Redis | None) -> Redis:
    """The worker's connection: the one given, else the first queue's (as RQ's get_connection_from_queues).

    A worker may be made with no queue (RQ's tests and tools do, to read or register one); work() needs one.
    """
    if connection is None and not queues:
        raise ValueError('a worker needs at least one queue, or a connection')
    if connection is None:
        connection = next((q.connection for q in queues if getattr(q, 'connection', None) is not None), None)
    if connection is None:
        raise TypeError('a worker needs a connection')
    check_connection(connection)  # a Redis Cluster needs a hash-tagged RQ_KEY_PREFIX (rqfast.cluster)
    settle_keyspace(queues)
    return connection


def settle_keyspace(queues: list[Any]) -> None:
    """Sharded by queue (RQFAST_SHARDING=queue), the keyspace of the worker's first queue becomes its
    process's (keys.settle): its command channel's and its state's. A worker of several queues works
    in each queue's keyspace, one call each (keyspaces.py)."""
    if not keys.SHARDED or not queues or keys.in_block():  # (made in a within() block, as Worker.all() there makes
        return  # them, to be read: it is in that keyspace already, and the process's stays as it is)
    first = queues[0]
    keys.settle(str(first if isinstance(first, str) else getattr(first, 'name', first)))


def socket_timeout(worker_ttl: int) -> int:
    """RQ's socket timeout for a worker's connection: its blocking wait (worker_ttl - 15, at least 1) plus 10 s.

    rqfast's waits are shorter (IDLE_WAKEUP, on connections of their own), so this only bounds how long any
    other command may hang, as it does in RQ.
    """
    return max(1, worker_ttl - 15) + 10


def configure_socket_timeout(connection: Redis, seconds: int) -> None:
    """Give the connection's pool RQ's socket timeout unless it has a longer one (RQ's _set_connection)."""
    pool = getattr(connection, 'connection_pool', None)  # (none on a RedisCluster: its nodes' pools are its own)
    kwargs = getattr(pool, 'connection_kwargs', None)
    if kwargs is None:
        return
    current = kwargs.get('socket_timeout')
    if current is None or current < seconds:
        kwargs['socket_timeout'] = seconds


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


def own_queue_class(queue_class: Any) -> type[Queue]:
    """The class the worker makes its queues with: `queue_class` when it is rqfast's Queue or a subclass,
    else rqfast's Queue (with the foreign class's DEFAULT_TIMEOUT, the one setting a worker reads from it).

    django-rq's DjangoRQ and any other subclass of rq's Queue only change how jobs are enqueued.
    """
    cls = import_attribute(queue_class) if isinstance(queue_class, str) else queue_class
    if isinstance(cls, type) and issubclass(cls, Queue):
        return cls
    timeout = getattr(cls, 'DEFAULT_TIMEOUT', Queue.DEFAULT_TIMEOUT)
    if timeout == Queue.DEFAULT_TIMEOUT:
        return Queue
    return type(f'{getattr(cls, "__name__", "Foreign")}OnRqfast', (Queue,), {'DEFAULT_TIMEOUT': timeout})
