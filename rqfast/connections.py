"""A Redis connection taken apart and rebuilt elsewhere (a horse, a child process).

A spawned child imports this module only to build its job's connection (rqfast/horse.py), so redis-py at the
top costs a child whose job never uses Redis nothing."""

from __future__ import annotations

import contextlib
import pickle
from collections.abc import Iterator
from typing import Any

from redis import Connection as RedisConnection
from redis import Redis, SSLConnection, UnixDomainSocketConnection
from redis.cluster import ClusterNode
from redis.sentinel import Sentinel

from .cluster import is_cluster
from .defaults import REPLY_TIMEOUT


class NoRedisConnectionException(Exception):
    pass


# Pool kwargs that describe the pool's own runtime state (redis-py 6+: maintenance-notification
# handlers, event dispatchers; some hold locks): dropped before a connection is rebuilt elsewhere.
REDIS_RUNTIME_CONNECTION_KWARGS = (
    'maint_notifications_config',
    'maint_notifications_pool_handler',
    'himport_registry',
    'event_dispatcher',
    'orig_host_address',
    'orig_socket_timeout',
    'orig_socket_connect_timeout',
    'oss_cluster_maint_notifications_handler',
    'redis_connect_func',  # (a RedisCluster's bound on_connect: the rebuilt cluster client sets its own)
)

# fakeredis's answer to INFO it does not implement, as RQ's


def has_sockets(connection: Any) -> bool:
    """Whether `connection` talks to a server over sockets: False for fakeredis, whose server lives in this
    process, so that a worker does not wait on its sockets (select), open a pub/sub client of its own or
    send it pre-packed commands (scripts.DirectLine)."""
    pool = getattr(connection, 'connection_pool', None)
    classes = (type(connection), getattr(pool, 'connection_class', None) or type(None))
    return not any(cls.__module__.startswith('fakeredis') for cls in classes)


def get_connection_kwargs(connection: Redis) -> dict[str, Any]:
    """The pool kwargs that rebuild this connection in another process."""
    kwargs = dict(connection.connection_pool.connection_kwargs)
    for key in REDIS_RUNTIME_CONNECTION_KWARGS:
        kwargs.pop(key, None)
    # redis-py marks an unset kwarg with a bare object() it recognizes by identity: a copy in another
    # process would be taken for a value, so it goes and the child applies its default.
    return {key: value for key, value in kwargs.items() if type(value) is not object}


def sentinel_recipe(pool: Any) -> tuple[Any, ...] | None:
    """What rebuilds a Sentinel-managed pool's Sentinel elsewhere (service name, the sentinels'
    addresses and kwargs, master or replica); None for any other pool."""
    manager = getattr(pool, 'sentinel_manager', None)
    if manager is None:
        return None
    addresses = [
        (client.connection_pool.connection_kwargs.get('host'), client.connection_pool.connection_kwargs.get('port'))
        for client in manager.sentinels
    ]
    return (pool.service_name, addresses, dict(manager.sentinel_kwargs), pool.is_master, pool.check_connection)


def build_pool(pool_class: Any, connection_class: Any, kwargs: dict[str, Any], sentinel: Any = None) -> Any:
    """A new pool of `pool_class`; a Sentinel-managed one from sentinel_recipe()'s answer (or its manager)."""
    if sentinel is None:
        return pool_class(connection_class=connection_class, **kwargs)
    if isinstance(sentinel, tuple):
        service_name, addresses, sentinel_kwargs, is_master, check_connection = sentinel
        sentinel_class: Any = Sentinel  # (untyped in redis-py)
        manager = sentinel_class(addresses, sentinel_kwargs=sentinel_kwargs)
    else:
        manager = sentinel.sentinel_manager
        service_name, is_master, check_connection = sentinel.service_name, sentinel.is_master, sentinel.check_connection
    return pool_class(
        service_name,
        manager,
        connection_class=connection_class,
        is_master=is_master,
        check_connection=check_connection,
        **kwargs,
    )


def pool_like(connection: Redis, **overrides: Any) -> Any:
    """A new pool to the same server as `connection`'s (the same Sentinel master, for a Sentinel pool)."""
    pool: Any = connection.connection_pool
    kwargs = {key: value for key, value in pool.connection_kwargs.items() if key != 'connection_pool'}
    kwargs.update(overrides)
    sentinel = pool if getattr(pool, 'sentinel_manager', None) is not None else None
    return build_pool(type(pool), pool.connection_class, kwargs, sentinel)


def parse_connection(connection: Redis) -> tuple[type[Redis], type[RedisConnection], dict[str, Any]]:
    """(client class, pool connection class, pool kwargs): what rebuilds the connection elsewhere."""
    if is_cluster(connection):  # no pool: (class, None, {'cluster': cluster_recipe()}), for rqfast's worker pool
        return type(connection), None, {'cluster': cluster_recipe(connection)}  # type: ignore[return-value]
    pool_class: type[RedisConnection] = unbounded(connection.connection_pool.connection_class)
    return type(connection), pool_class, get_connection_kwargs(connection)


def client_recipe(connection: Redis, picklable: bool = False) -> tuple[Any, ...] | bytes | None:
    """How to build a client like `connection` on a pool of its own (RQ's parse_connection), in a horse.

    None when it cannot be rebuilt (an exotic pool); `picklable`: as bytes, for a spawned child, so
    that reading its settings does not import redis-py. A RedisCluster: cluster_recipe().
    """
    if is_cluster(connection):
        return cluster_recipe(connection, picklable)
    pool = connection.connection_pool
    kwargs = {
        key: value
        for key, value in pool.connection_kwargs.items()
        if key not in REDIS_RUNTIME_CONNECTION_KWARGS and key != 'connection_pool' and type(value) is not object
    }
    recipe = (type(connection), type(pool), unbounded(pool.connection_class), kwargs, sentinel_recipe(pool))
    try:
        build_client(recipe)  # a throwaway: it connects to nothing
        return pickle.dumps(recipe, protocol=pickle.HIGHEST_PROTOCOL) if picklable else recipe
    except Exception:
        return None


def build_client(recipe: tuple[Any, ...] | bytes, client: Any = None) -> Any:
    """A client from client_recipe()'s answer; given `client` (a horse's LazyClient), that object becomes it."""
    client_class, pool_class, connection_class, kwargs, sentinel = (
        pickle.loads(recipe) if isinstance(recipe, bytes) else recipe
    )
    if pool_class is None:  # a cluster_recipe(): `sentinel` holds the startup nodes and the client's options
        return _build_cluster(client_class, kwargs, sentinel, client)
    pool = build_pool(pool_class, connection_class, kwargs, sentinel)
    if client is None:
        return client_class(connection_pool=pool)
    _set_class(client, client_class)
    client_class.__init__(client, connection_pool=pool)
    return client


def cluster_recipe(connection: Any, picklable: bool = False) -> tuple[Any, ...] | bytes | None:
    """client_recipe() of a RedisCluster: its class, its nodes' connection kwargs, and the addresses of
    the nodes it knows (any one of them bootstraps the rebuilt client); None when they do not pickle."""
    manager = connection.nodes_manager
    kwargs = {
        key: value
        for key, value in manager.connection_kwargs.items()
        if key not in REDIS_RUNTIME_CONNECTION_KWARGS and key != 'connection_pool' and type(value) is not object
    }
    nodes = [(node.host, node.port) for node in manager.nodes_cache.values()] or [
        (node.host, node.port) for node in manager.startup_nodes.values()
    ]
    options = {'require_full_coverage': manager._require_full_coverage}
    if connection.user_on_connect_func is not None:
        kwargs['redis_connect_func'] = connection.user_on_connect_func
    recipe = (type(connection), None, None, kwargs, (nodes, options))
    try:
        data = pickle.dumps(recipe, protocol=pickle.HIGHEST_PROTOCOL)  # (building one would connect)
    except Exception:
        return None
    return data if picklable else recipe


def _build_cluster(client_class: Any, kwargs: dict[str, Any], found: Any, client: Any) -> Any:
    node: Any = ClusterNode  # (untyped in redis-py)
    addresses, options = found
    arguments = {**kwargs, **options, 'startup_nodes': [node(host, port) for host, port in addresses]}
    if client is None:
        return client_class(**arguments)
    _set_class(client, client_class)
    client_class.__init__(client, **arguments)
    return client


_set_class = object.__dict__['__class__'].__set__  # assigns __class__ past LazyClient's property


def eviction_warning(connection: Any) -> str | None:
    """A line warning that this Redis may evict rqfast's keys: its `maxmemory-policy` is not
    `noeviction`. None when it is, or when the server will not say (CONFIG GET refused, as managed
    Redis services do, or any other error): never raises."""
    try:
        answer: Any = connection.config_get('maxmemory-policy')
        found = _policy(answer)
    except Exception:
        return None
    if found is None or found == 'noeviction':
        return None
    return (
        f"Redis's maxmemory-policy is {found}, not noeviction: once Redis is full it may evict job hashes, "
        'queues and registries, and their jobs vanish or fail (docs/reliability.md); set '
        'maxmemory-policy noeviction'
    )


def _policy(answer: Any) -> str | None:
    """The policy in a CONFIG GET answer (a dict; a Redis Cluster client's: a dict per node, the first)."""
    if not isinstance(answer, dict):
        return None
    for key in ('maxmemory-policy', b'maxmemory-policy'):
        if key in answer:
            value = answer[key]
            return value.decode() if isinstance(value, bytes) else str(value)
    for value in answer.values():
        if isinstance(value, dict):
            return _policy(value)
    return None


# A new connection's handshake (HELLO, AUTH, SELECT, CLIENT SETINFO) waits this long at most for its
# replies, whatever the connection's socket_timeout (RQ gives a worker's 415 s): on a silent network
# path a connection made then is an error within the bound, never a wait of minutes (docs/reliability.md).
HANDSHAKE_TIMEOUT = REPLY_TIMEOUT


class _BoundedHandshake:
    """Mixed into redis-py's connection classes (bound_handshakes): the handshake's reads are bounded."""

    socket_timeout: float | None
    _sock: Any

    def on_connect(self, *args: Any, **kwargs: Any) -> Any:
        with _handshake_bound(self):
            return super().on_connect(*args, **kwargs)  # type: ignore[misc]

    def on_connect_check_health(self, *args: Any, **kwargs: Any) -> Any:  # (redis-py 6+: what connect() calls)
        with _handshake_bound(self):
            return super().on_connect_check_health(*args, **kwargs)  # type: ignore[misc]


@contextlib.contextmanager
def _handshake_bound(conn: Any) -> Iterator[None]:
    own: float | None = conn.socket_timeout
    sock: Any = getattr(conn, '_sock', None)
    bounded = sock is not None and (own is None or own > HANDSHAKE_TIMEOUT)
    if bounded:
        sock.settimeout(HANDSHAKE_TIMEOUT)
    try:
        yield
    finally:
        current: Any = getattr(conn, '_sock', None)
        if bounded and current is not None and current is sock:  # (still the socket it made)
            current.settimeout(own)


class BoundedConnection(_BoundedHandshake, RedisConnection):
    _redis_class = RedisConnection


class BoundedSSLConnection(_BoundedHandshake, SSLConnection):
    _redis_class = SSLConnection


class BoundedUnixDomainSocketConnection(_BoundedHandshake, UnixDomainSocketConnection):
    _redis_class = UnixDomainSocketConnection


_BOUNDED = {
    RedisConnection: BoundedConnection,
    SSLConnection: BoundedSSLConnection,
    UnixDomainSocketConnection: BoundedUnixDomainSocketConnection,
}


def unbounded(connection_class: Any) -> Any:
    """redis-py's class for one of bound_handshakes' (a connection rebuilt elsewhere is redis-py's own)."""
    return getattr(connection_class, '_redis_class', connection_class)


def bound_handshakes(connection: Any) -> None:
    """Make the connections `connection`'s pool opens from now on bound their handshake's replies
    (HANDSHAKE_TIMEOUT), when its connection class is one of redis-py's three (a class of one's own, a
    Sentinel or a Redis Cluster pool is left as it is)."""
    pool = getattr(connection, 'connection_pool', None)
    bounded = _BOUNDED.get(getattr(pool, 'connection_class', None))  # type: ignore[arg-type]
    if pool is not None and bounded is not None:
        pool.connection_class = bounded
