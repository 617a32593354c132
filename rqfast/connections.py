"""A Redis connection taken apart and rebuilt elsewhere (a horse, a child process), and the server's version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # redis-py is imported where a connection is used: a horse imports this module without it
    from redis import Connection as RedisConnection
    from redis import Redis


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
)

# fakeredis's answer to INFO it does not implement, as RQ's
_UNKNOWN_VERSION = (5, 0, 9)
_VERSION_ATTRIBUTE = '__rq_redis_server_version'  # RQ's cache on the connection object


def get_connection_kwargs(connection: Redis) -> dict[str, Any]:
    """The pool kwargs that rebuild this connection in another process."""
    kwargs = dict(connection.connection_pool.connection_kwargs)
    for key in REDIS_RUNTIME_CONNECTION_KWARGS:
        kwargs.pop(key, None)
    # redis-py marks an unset kwarg with a bare object() it recognizes by identity: a copy in another
    # process would be taken for a value, so it goes and the child applies its default.
    return {key: value for key, value in kwargs.items() if type(value) is not object}


def parse_connection(connection: Redis) -> tuple[type[Redis], type[RedisConnection], dict[str, Any]]:
    """(client class, pool connection class, pool kwargs): what rebuilds the connection elsewhere."""
    pool_class: type[RedisConnection] = connection.connection_pool.connection_class
    return type(connection), pool_class, get_connection_kwargs(connection)


def get_version(connection: Redis) -> tuple[int, int, int]:
    """The server's version as (major, minor, patch), asked once per connection object."""
    cached = getattr(connection, _VERSION_ATTRIBUTE, None)
    if cached:
        return cached  # type: ignore[no-any-return]
    from redis.exceptions import ResponseError

    try:
        text = str(connection.info('server')['redis_version'])
    except ResponseError:
        return _UNKNOWN_VERSION
    parts = [int(part) for part in text.split('.')[:3]]
    version = (parts + [0, 0, 0])[:3]
    found = (version[0], version[1], version[2])
    setattr(connection, _VERSION_ATTRIBUTE, found)
    return found
