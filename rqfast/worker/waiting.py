"""Waiting for a job when every queue is empty: a blocking move, so a popped id is never lost.

One queue: BLMOVE from the queue into its intermediate list (RQ's own list), and the claim script
takes it from there. Several queues: one BLMOVE per queue, each on its own connection, sent at
once; the first to answer wins, the others are unblocked (CLIENT UNBLOCK) and any id they moved
in the meantime is put back at the head of its queue. An id is always in a queue, an
intermediate list or the started registry. Paused queues (Queue.pause()) are left out of the wait;
with every queue paused the worker just sleeps the wait out, then claims (and checks) again.
Sharded by queue (keyspaces.py), each queue's wait goes to the master of its own keyspace.
"""

from __future__ import annotations

import logging
import select
import time
from collections.abc import Callable
from typing import Any, Protocol

from redis import Redis
from redis.exceptions import AskError, ClusterDownError, OutOfMemoryError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .. import cluster, keys, suspension, workerscripts
from ..backoff import Backoff
from ..cluster import node_client
from ..connections import has_sockets
from ..defaults import IDLE_WAKEUP, WAIT_REPLY_MARGIN
from ..status import WorkerStatus
from ..text import as_text
from . import keyspaces

# Redis out of reach for a while, as the worker sees it: a lost connection or a timeout, or a Redis Cluster
# failing over (CLUSTERDOWN: every node refuses every command until a replica has taken over, so nothing
# ran) or moving a slot (TRYAGAIN), or full (OOM: at maxmemory with noeviction, a script call is refused
# before it writes anything; rqfast.exceptions.RedisFullError). The loop and the recorder back off and
# send the call again; a full Redis is logged once per wait (redis_lost, Recorder._retrying).
REDIS_LOST = (RedisConnectionError, RedisTimeoutError, ClusterDownError, TryAgainError, OutOfMemoryError)


def full_message(exc: Exception, backoff: Backoff) -> tuple[int, str] | None:
    """For a full Redis: the level (ERROR the first time in a backoff, DEBUG after) and the line's
    tail; None for any other error. Call before backoff.next()."""
    if not isinstance(exc, OutOfMemoryError):
        return None
    level = logging.ERROR if backoff.delay == backoff.first else logging.DEBUG
    return level, f'{exc}; keeping it and sending it again every {backoff.cap:.0f} s at most until Redis has room'


class Interrupting(Protocol):
    """The worker's stop request as the loop's waits see it (signals.StopRequest)."""

    requested: bool

    def interruptibly(self, wait: Callable[..., Any], *args: Any) -> Any: ...


class Named(Protocol):
    """The worker's name, log and idle wait (its context)."""

    @property
    def name(self) -> str: ...
    @property
    def log(self) -> logging.Logger: ...
    @property
    def dequeue_timeout(self) -> int: ...
    def queue_names(self) -> list[str]: ...
    @property
    def connection(self) -> Any: ...


class StateKeeper(Protocol):
    def set_state(self, state: WorkerStatus, write: bool = True) -> None: ...


def empty_wait(context: Named, burst: bool, idle_since: float, max_idle_time: int | None) -> int | None:
    """The queues are empty and nothing is in flight: seconds to block for a job, or None when it is
    time to stop (burst mode, or idle for max_idle_time), logged as RQ logs it."""
    if burst:
        context.log.info('Worker %s: done, quitting', context.name)
        return None
    wait = idle_wait(context.dequeue_timeout, idle_since, max_idle_time)
    if wait is None:
        context.log.info('Worker %s: idle for %d seconds, quitting', context.name, max_idle_time)
    return wait


def stays_suspended(context: Named, recorder: StateKeeper, stop: Interrupting, burst: bool) -> bool:
    """The workers are suspended (nothing in flight): wait until resumed (a stop ends the wait); False
    (logged) in burst mode."""
    if burst:
        context.log.info('Worker %s: suspended in burst mode, exiting', context.name)
        return False
    context.log.info('Worker %s: suspended, run `rqfast resume` to resume', context.name)
    recorder.set_state(WorkerStatus.SUSPENDED)
    while not stop.requested and keyspaces.is_suspended(context.connection, context.queue_names()):
        stop.interruptibly(time.sleep, 1)
    return True


def redis_lost(context: Named, stop: Interrupting, exc: Exception, backoff: Backoff) -> None:
    """Redis unreachable (or full) while the loop claims or waits: logged, then the backoff's next pause
    (a stop ends it). A full Redis is logged once per backoff (then at DEBUG)."""
    full = full_message(exc, backoff)
    delay = backoff.next()
    if full is not None:
        context.log.log(full[0], 'Worker %s: could not claim or wait: %s', context.name, full[1])
        stop.interruptibly(time.sleep, delay)
        return
    context.log.error('Worker %s: could not connect to Redis: %s; retrying in %.0f s', context.name, exc, delay)
    stop.interruptibly(time.sleep, delay)


def idle_wait(dequeue_timeout: int, idle_since: float, max_idle_time: int | None) -> int | None:
    """Seconds an idle worker blocks for a job now; None once max_idle_time has passed."""
    if max_idle_time is None:
        return dequeue_timeout
    left = max_idle_time - (time.monotonic() - idle_since)
    if left <= 0:
        return None
    return max(1, min(dequeue_timeout, int(left + 0.999)))


def log_dropped(log: logging.Logger, name: str, claim: Any) -> None:
    """What a claim popped and could not run: ids without a job hash, ids moved to rq:dead-letter:<q>."""
    for job_id in claim.dropped:
        log.warning('Worker %s: dropped job id %s: it has no job hash (deleted, expired or evicted)', name, job_id)
    for queue, job_id, reason in claim.dead_lettered:
        where = keys.dead_letter_key(queue)
        log.error('Worker %s: job id %r cannot be run (%s); moved aside to %s', name, job_id, reason, where)


REDIRECTED_PAUSE = 0.2  # seconds between waits redirected while a slot moves (docs/connections.md)


def _answered(socks: list[Any], timeout: int) -> list[Any]:
    """The sockets whose blocking move answered within its `timeout` + 1 s; Redis answers each when its
    timeout passes, so none by WAIT_REPLY_MARGIN s later means a silent path: redis-py's TimeoutError."""
    ready, _, _ = select.select(socks, [], [], timeout + 1)
    if not ready:
        ready, _, _ = select.select(socks, [], [], WAIT_REPLY_MARGIN)
    if not ready:
        raise RedisTimeoutError(
            f'rqfast: no reply from Redis to a blocking wait {timeout + 1 + WAIT_REPLY_MARGIN} s after it was '
            f'sent ({timeout} s timeout): Redis, or the network path to it, is silent'
        )
    return ready


class Waiter:
    """Blocks until a job id arrives on one of `queues`; owns its blocking connections."""

    def __init__(self, connection: Redis, queues: list[str], longest_wait: float = IDLE_WAKEUP):
        self.connection = connection
        self.queues = queues
        # a wait's connections give up on a reply this long after its blocking move's own timeout passed
        self.wait_bound = longest_wait + 1 + WAIT_REPLY_MARGIN
        self._nodes: list[Any] = []  # per queue, where its wait is sent (_ensure_connections)
        self._connections: list[Any] = []
        self._client_ids: list[int] = []

    def _ensure_connections(self) -> None:
        if self._connections:
            return
        # on a Redis Cluster, the master of the slot of the queue's keyspace (one for every queue but
        # sharded by queue): asked again after an error closed the connections (a failover moves the
        # slot; script calls follow MOVED)
        for queue in self.queues:
            with keys.within(queue):
                node = node_client(self.connection)
            pool = node.connection_pool
            kwargs = dict(pool.connection_kwargs)
            # (bounded: a handshake or a reply that never comes on a silent network raises; _wait_many)
            kwargs['socket_timeout'] = self.wait_bound
            conn = pool.connection_class(**kwargs)
            conn.connect()
            conn.send_command('CLIENT', 'ID')
            self._client_ids.append(int(conn.read_response()))
            self._connections.append(conn)
            self._nodes.append(node)

    def close(self) -> None:
        for conn in self._connections:
            conn.disconnect()
        self._connections, self._client_ids, self._nodes = [], [], []

    def wait(self, timeout: int) -> tuple[str, str] | None:
        """(queue, id) of a job moved into that queue's intermediate list, or None after `timeout` s."""
        if not has_sockets(self.connection):
            active = self._active(self._paused())
            return self._wait_fake(timeout, active) if active else self._all_paused(timeout)
        try:
            self._ensure_connections()
            active = self._active(self._paused())
            return self._wait_many(timeout, active) if active else self._all_paused(timeout)
        except (AskError, TryAgainError):  # (MovedError is an AskError) the cluster is moving the slot: the
            self.close()  # next claim's script call follows the cluster client there, and so does the next wait
            time.sleep(min(timeout, REDIRECTED_PAUSE))
            return None
        except BaseException:
            self.close()  # a connection with a reply pending is of no further use
            raise

    def _paused(self) -> set[str]:
        """The paused queues: read on the wait's own connection (its replies bounded: a silent path is
        noticed here too), but on a Redis Cluster or fakeredis (on the worker's, per keyspace)."""
        if self._connections and not cluster.is_cluster(self.connection):
            conn = self._connections[0]
            conn.send_command('SMEMBERS', keys.PAUSED_QUEUES)
            return {as_text(member) for member in conn.read_response()}
        paused: set[str] = set()
        for _ in keys.by_keyspace(self.queues):  # (sharded by queue: each queue's keyspace says)
            paused |= suspension.paused_queues(self.connection)
        return paused

    def _active(self, paused: set[str]) -> list[int]:
        return [i for i, queue in enumerate(self.queues) if queue not in paused]

    @staticmethod
    def _all_paused(timeout: int) -> None:
        time.sleep(timeout)  # every queue paused: resume() is seen by the next claim

    def _wait_fake(self, timeout: int, active: list[int]) -> tuple[str, str] | None:
        """fakeredis has no sockets to wait on: a short blocking move per queue in turn."""
        share: Any = max(timeout / len(active), 0.1)  # fakeredis takes fractions of a second
        for queue in (self.queues[i] for i in active):
            with keys.within(queue):
                job_id = self.connection.blmove(
                    keys.queue_key(queue), keys.intermediate_queue_key(queue), share, 'LEFT', 'RIGHT'
                )
            if job_id is not None:
                return queue, as_text(job_id)
        return None

    def _wait_many(self, timeout: int, active: list[int]) -> tuple[str, str] | None:
        for index in active:
            queue = self.queues[index]
            with keys.within(queue):
                source, target = keys.queue_key(queue), keys.intermediate_queue_key(queue)
            self._connections[index].send_command('BLMOVE', source, target, 'LEFT', 'RIGHT', timeout)
        pending = {index: self._connections[index] for index in active}
        ready = _answered([conn._sock for conn in pending.values()], timeout)
        moved: list[tuple[str, str]] = []
        ready_socks = set(ready)
        for index, conn in list(pending.items()):
            if conn._sock in ready_socks:
                reply = conn.read_response()
                del pending[index]
                if reply is not None:
                    moved.append((self.queues[index], as_text(reply)))
        for index, conn in pending.items():
            self._nodes[index].client_unblock(self._client_ids[index])
            reply = conn.read_response()
            if reply is not None:
                moved.append((self.queues[index], as_text(reply)))
        if not moved:
            return None
        moved.sort(key=lambda pair: self.queues.index(pair[0]))
        back = moved[1:]
        for names in keys.by_keyspace([queue for queue, _ in back]) if back else ():
            workerscripts.return_jobs(self.connection, [pair for pair in back if pair[0] in names])
        return moved[0]
