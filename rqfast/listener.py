"""A pub/sub listener on a connection and thread of its own: the worker's for RQ's commands
(rqfast/worker/commands.py), the scheduler's for the jobs a claim plans (rqfast/scheduler.py).

It subscribes on a client of its own (on a Redis Cluster, the master of the prefix's slot: PUBLISH
reaches every node), hands each message to its handler, and survives a lost connection: retried with a
capped backoff, and on a cluster subscribed again on the node that now holds the slot.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from redis import Redis
from redis.backoff import NoBackoff
from redis.retry import Retry as RedisRetry

from .backoff import Backoff
from .cluster import is_cluster, node_client
from .connections import has_sockets, pool_like

LISTEN_WAKEUP = 5.0  # seconds a read on the channel waits before the thread looks whether it was stopped


class ChannelListener:
    """Subscribes to `channels` and hands each message to `handle`, in a thread blocked in a read."""

    def __init__(
        self,
        connection: Redis,
        channels: list[str],
        handle: Callable[[dict[str, Any]], None],
        name: str,
        owner: str,
        thread_name: str,
        log: logging.Logger,
    ) -> None:
        self.connection = connection
        self.channels = channels
        self.handle = handle
        self.name = name  # the worker's (or the scheduler's: owner), for the log
        self.owner = owner
        self.thread_name = thread_name
        self.log = log
        self.pubsub: Any = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        pool = node_client(self.connection).connection_pool
        if not hasattr(pool, 'connection_kwargs') or not has_sockets(self.connection):
            return  # fakeredis: no sockets to listen on
        self.pubsub = self._subscribed()
        self.thread = threading.Thread(target=self._listen, args=(self.pubsub,), name=self.thread_name, daemon=True)
        self.thread.start()

    def _subscribed(self) -> Any:
        """A PubSub subscribed to the channels, on a client of its own. On a Redis Cluster, of the master of
        the prefix's slot (PUBLISH reaches every node), asked again after a lost connection (_reopened)."""
        node = node_client(self.connection)
        # listen() reconnects and resubscribes; redis-py's own retries are off so that a close ends the thread
        client = Redis(connection_pool=pool_like(node, retry=RedisRetry(NoBackoff(), 0)))
        pubsub = client.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        pubsub.subscribe(*self.channels)
        return pubsub

    def _reopened(self, pubsub: Any) -> Any:
        """On a Redis Cluster, after `pubsub` lost its connection: a new one on the slot's master as the
        cluster client now knows it (a failover moved it). A ConnectionError when no node answers yet
        (the caller tries again later: the lost PubSub, once its reconnect failed, waits on its own
        subscribed event and would never read nor reconnect again)."""
        if not is_cluster(self.connection):
            return pubsub  # (its own reconnect reaches the same server)
        try:
            fresh = self._subscribed()
        except redis.ConnectionError:
            raise
        except Exception as exc:  # (a cluster failing over: CLUSTERDOWN, a slot not covered yet...)
            raise redis.ConnectionError(f'no node to listen on yet: {exc}') from exc
        if self.pubsub is not pubsub:  # stopped meanwhile
            fresh.close()
            return pubsub
        self.pubsub = fresh
        try:
            pubsub.close()
        except Exception:
            pass
        return fresh

    def stop(self) -> None:
        pubsub, self.pubsub = self.pubsub, None
        if pubsub is not None:
            try:
                pubsub.close()
            except Exception:
                pass
        self.thread = None

    def _listen(self, pubsub: Any) -> None:
        """Hand each message to `handle` until stop(). As in RQ's worker, a lost connection is retried (with
        capped backoff) and any other error reading the channel ends the thread; an error handling a
        message is only logged."""
        backoff = Backoff()
        lost = False
        while self.pubsub is pubsub:
            try:
                if lost:
                    pubsub = self._reopened(pubsub)
                    lost = False
                message = pubsub.get_message(timeout=LISTEN_WAKEUP)
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                if self.pubsub is not pubsub:
                    return  # closed at teardown
                delay = backoff.next()
                self.log.warning('%s %s: lost its channel: %s; retrying in %.0f s', self.owner, self.name, exc, delay)
                time.sleep(delay)
                lost = True
                continue
            except Exception as exc:
                if self.pubsub is pubsub:
                    self.log.warning('%s %s: pubsub thread exiting on %s', self.owner, self.name, exc)
                return
            backoff.reset()
            if message is not None and message.get('type') == 'message':
                try:
                    self.handle(message)
                except Exception:
                    self.log.exception('%s %s: could not handle %r', self.owner, self.name, message.get('data'))
