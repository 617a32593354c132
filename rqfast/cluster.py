"""Redis Cluster, single-slot mode: every key under one RQ_KEY_PREFIX carrying a hash tag (`{rq}`).

With a `redis.cluster.RedisCluster` connection, every rqfast key must hash to one slot, so the prefix
must hold a hash tag (a non-empty `{...}`); check_connection() refuses any other prefix before
anything is written. Every script call declares keys.SLOT_KEY as its one KEYS entry, which routes it
to the master of that slot (rqfast.scriptload). What needs a socket of its own (a worker's blocking
waits, its pub/sub command channel) uses node_client(): a plain client of that master.
docs/connections.md, "Redis Cluster", says what works and what does not yet.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from . import keys
from .defaults import RQ_KEY_PREFIX


class ClusterKeyPrefixError(ValueError):
    """A Redis Cluster connection with an RQ_KEY_PREFIX that has no hash tag: rqfast's keys would
    spread over every slot, and its scripts (each touching several keys) would fail with CROSSSLOT."""


class KeyspaceError(ValueError):
    """Sharded by queue (RQFAST_SHARDING=queue), what would span two queues' keyspaces: a dependency on a
    job of another queue, a group (docs/connections.md)."""


_CLUSTER_TYPES: dict[type, bool] = {}  # the answer per connection class, once redis.cluster is loaded


def is_cluster(connection: Any) -> bool:
    """True for a redis-py RedisCluster (or a subclass); redis.cluster is not imported to find out.

    By type(), not isinstance(): a horse's LazyClient would build its client to answer isinstance().
    Asked per Job built (each job a worker runs), so the answer is kept per class.
    """
    kind = type(connection)
    known = _CLUSTER_TYPES.get(kind)
    if known is not None:
        return known
    module = sys.modules.get('redis.cluster')
    if module is None:
        return False  # (not kept: a RedisCluster cannot exist before its module is imported)
    answer = _CLUSTER_TYPES[kind] = issubclass(kind, module.RedisCluster)
    return answer


def hash_tag(prefix: str) -> str | None:
    """The hash tag every key under `prefix` hashes by (Redis's rule: what lies between the first `{`
    and the next `}`, when not empty), or None when the prefix alone does not fix one."""
    start = prefix.find('{')
    if start < 0:
        return None
    end = prefix.find('}', start + 1)
    if end <= start + 1:
        return None
    return prefix[start + 1 : end]


def check_prefix(prefix: str = RQ_KEY_PREFIX) -> None:
    if hash_tag(prefix) is None:
        raise ClusterKeyPrefixError(
            f'rqfast on Redis Cluster needs every key in one hash slot: set RQ_KEY_PREFIX to a prefix with a '
            f"hash tag, e.g. RQ_KEY_PREFIX='{{rq}}' (it is {prefix!r}, which has none)"
        )


def check_keyspaces() -> None:
    """check_prefix(), unless sharded by queue: then every keyspace has the tag `{<prefix>:<queue>}`."""
    if not keys.SHARDED:
        check_prefix()


def keyspace_required(what: str, hint: str) -> None:
    """Sharded by queue, outside every queue's keyspace (the base prefix, where no key is): `what` would
    read nothing there, so a KeyspaceError says where to look instead (`hint`)."""
    if keys.SHARDED and keys.prefix() == keys.BASE:
        raise KeyspaceError(
            f"RQFAST_SHARDING=queue: {what} reads one queue's keyspace, and none is named: {hint}, "
            "or inside `with rqfast.keys.within('<queue>'):`"
        )


def check_connection(connection: Any) -> None:
    """Refuse a cluster connection under a prefix without a hash tag, and an asyncio client (whose
    commands return coroutines): it belongs to rqfast.asyncio's AsyncQueue."""
    if is_cluster(connection):
        check_keyspaces()
    elif is_asyncio(connection):
        raise TypeError(
            f'rqfast: {type(connection).__module__}.{type(connection).__name__} is an asyncio client; '
            'rqfast.Queue and Job need a synchronous one (redis.Redis). For redis.asyncio, use '
            'rqfast.asyncio.AsyncQueue (docs/async.md)'
        )


_ASYNC_TYPES: dict[type, bool] = {}


def is_asyncio(connection: Any) -> bool:
    """True for a redis.asyncio client (Redis or RedisCluster, or a subclass); kept per class."""
    kind = type(connection)
    known = _ASYNC_TYPES.get(kind)
    if known is not None:
        return known
    # (kept either way: a class made before redis.asyncio was imported cannot derive from its clients)
    bases = tuple(
        getattr(sys.modules.get(module), name, None)
        for module, name in (('redis.asyncio.client', 'Redis'), ('redis.asyncio.cluster', 'RedisCluster'))
    )
    found = tuple(base for base in bases if isinstance(base, type))
    answer = _ASYNC_TYPES[kind] = bool(found) and issubclass(kind, found)
    return answer


def is_asyncio_cluster(connection: Any) -> bool:
    module = sys.modules.get('redis.asyncio.cluster')
    return module is not None and isinstance(connection, module.RedisCluster)


def node_client(connection: Any) -> Any:
    """`connection` itself, or for a RedisCluster, a plain Redis client of the master that holds the
    prefix's slot (redis-py's own, shared with the cluster client: build a pool like it to own one)."""
    if not is_cluster(connection):
        return connection
    check_keyspaces()
    return connection.get_node_from_key(keys.SLOT_KEY).redis_connection


Kind = TypeVar('Kind', bound=type)


def in_queue_keyspace(attribute: str) -> Callable[[Kind], Kind]:
    """Sharded by queue (RQFAST_SHARDING=queue): every public method and property of the class runs
    within the keyspace of the queue its instance's `attribute` names (keys.within), so a Queue's or a
    Job's calls build their names there. Otherwise the class is left as it is."""

    def decorate(cls: Kind) -> Kind:
        if not keys.SHARDED:
            return cls
        import inspect  # here: unsharded, a spawned child does not import it

        for name in dir(cls):
            if name.startswith('_') or name == attribute:
                continue
            found = inspect.getattr_static(cls, name)
            if inspect.isfunction(found):
                setattr(cls, name, _within(found, attribute))
            elif isinstance(found, property) and found.fget is not None:
                fset = found.fset and _within(found.fset, attribute)
                setattr(cls, name, property(_within(found.fget, attribute), fset, found.fdel, found.__doc__))
        return cls

    return decorate


def _within(method: Callable[..., Any], attribute: str) -> Callable[..., Any]:
    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        with keys.within(getattr(self, attribute, None)):
            return method(self, *args, **kwargs)

    return run


def queue_keyspace_key(queue: str, key: str) -> str:
    """`key`, built under the base prefix (keys.BASE, as a class attribute's template is), moved into
    `queue`'s keyspace when sharded by queue."""
    if keys.SHARDED and key.startswith(keys.BASE):
        return keys.keyspace(queue) + key[len(keys.BASE) :]
    return key
