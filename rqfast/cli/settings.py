"""Where the CLI finds Redis and its settings, read as `rq` reads them.

The order is RQ's: --url (or RQ_REDIS_URL), else the --config settings module, else the
environment. Both the module and the environment are read by RQ's names: REDIS_URL, then
SENTINEL (a dict), then REDIS_HOST, REDIS_PORT, REDIS_DB, REDIS_PASSWORD and REDIS_SSL*.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import click
import redis
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException
from redis.sentinel import Sentinel

from ..cluster import check_keyspaces
from ..defaults import set_compat
from .errors import CliError

F = TypeVar('F', bound=Callable[..., Any])

_TRUE = {'y', 'yes', 't', 'true', '1'}
_FALSE = {'n', 'no', 'f', 'false', '0', ''}


def _stacked(options: list[Callable[[Any], Any]], func: F) -> F:
    """`func` with click options applied so that --help lists them in this order."""
    for option in reversed(options):
        func = option(func)
    return func


def _remember_cluster(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        ctx.meta['rqfast.cluster'] = True
    return value


# --cluster: the URL names a node of a Redis Cluster (rqfast.cluster; every command takes it)
cluster_option = click.option(
    '--cluster',
    is_flag=True,
    envvar='RQFAST_CLUSTER',
    expose_value=False,
    callback=_remember_cluster,
    help="The URL is a Redis Cluster node's (as is one with the cluster=true option): use a RedisCluster client.",
)


def client_from_url(url: str, connection_class: type[redis.Redis]) -> redis.Redis:
    """`connection_class.from_url(url)`; a RedisCluster when the URL says cluster=true or --cluster was given."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    said = [value.lower() for name, value in query if name == 'cluster']
    context = click.get_current_context(silent=True)
    flagged = context is not None and context.find_root().meta.get('rqfast.cluster', False)
    if not said and not flagged:
        return connection_class.from_url(url)
    if said and said[-1] not in _TRUE | _FALSE:
        raise ValueError(f'the URL option cluster is a boolean (true or false), not {said[-1]!r}')
    url = urlunsplit(parts._replace(query=urlencode([(n, v) for n, v in query if n != 'cluster'])))
    if not flagged and said[-1] in _FALSE:
        return connection_class.from_url(url)
    check_keyspaces()  # before the client connects
    try:
        client: Any = RedisCluster.from_url(url)  # (not a redis.Redis, but it answers the same commands)
    except (RedisClusterException, redis.RedisError) as exc:  # it connects at once: a node down, or no cluster
        where = f'{parts.hostname}:{parts.port or 6379}'
        raise CliError(f'cannot connect to a Redis Cluster through {where}: {exc}') from exc
    return client  # type: ignore[no-any-return]


def redis_options(func: F) -> F:
    """The options every command shares with `rq`: where Redis is and where the code is."""
    options = [
        cluster_option,
        click.option(
            '--url',
            '-u',
            envvar=['RQFAST_REDIS_URL', 'RQ_REDIS_URL'],
            help='Redis URL (default: REDIS_URL, or REDIS_HOST/PORT/DB, from --config or the environment).',
        ),
        click.option(
            '--config',
            '-c',
            envvar=['RQFAST_CONFIG', 'RQ_CONFIG'],
            help='Settings module (REDIS_URL, QUEUES, NAME, ...), as for rq.',
        ),
        click.option(
            '--path',
            '-P',
            default=['.'],
            multiple=True,
            show_default=True,
            help='Put this directory first on the import path (repeatable).',
        ),
        click.option(
            '--connection-class',
            envvar=['RQFAST_CONNECTION_CLASS', 'RQ_CONNECTION_CLASS'],
            default='redis.Redis',
            show_default=True,
            help='Redis client class.',
        ),
    ]
    return _stacked(options, func)


def class_options(func: F) -> F:
    """The worker commands' class options (`rqfast worker`, `rqfast worker-pool`), as rq's."""
    options = [
        click.option(
            '--worker-class',
            '-w',
            envvar=['RQFAST_WORKER_CLASS', 'RQ_WORKER_CLASS'],
            help='Worker class (default rqfast.Worker; rq.Worker, rq.SimpleWorker... map to rqfast).',
        ),
        click.option(
            '--job-class', '-j', envvar=['RQFAST_JOB_CLASS', 'RQ_JOB_CLASS'], help='Job class (rqfast.job.Job).'
        ),
        click.option(
            '--queue-class', envvar=['RQFAST_QUEUE_CLASS', 'RQ_QUEUE_CLASS'], help='Queue class (rqfast.Queue).'
        ),
        click.option('--serializer', '-S', help='json, pickle (the default), or a dotted path.'),
    ]
    return _stacked(options, func)


def prepend_paths(paths: Sequence[str]) -> None:
    """Put the --path directories first on sys.path, in the order given."""
    for path in reversed(paths):
        sys.path.insert(0, path)


def read_settings(module: str | None) -> dict[str, Any]:
    """The UPPERCASE names of the --config module; {} without one."""
    if not module:
        return {}
    try:
        settings = importlib.import_module(module)
    except Exception as exc:  # the settings module is user code: any error in it is a configuration error
        hint = ' (did you mean --concurrency/-C?)' if module.strip().isdigit() else ''
        message = f'--config: could not import settings module {module!r}: {type(exc).__name__}: {exc}{hint}'
        raise CliError(message) from exc
    values = {name: value for name, value in vars(settings).items() if name.isupper() and not name.startswith('_')}
    if 'RQFAST_COMPAT' in values:  # which RQ release's behaviour to follow (defaults.set_compat)
        try:
            set_compat(str(values['RQFAST_COMPAT']))
        except ValueError as exc:
            raise CliError(f'--config: {exc}') from exc
    return values


def connect(
    url: str | None, config: str | None, settings: Mapping[str, Any], connection_class: type[redis.Redis]
) -> redis.Redis:
    """A client for --url, else the settings module, else the environment; pinged, so a bad one fails now."""
    try:
        if url:
            connection = client_from_url(url, connection_class)
        else:
            connection = redis_from_settings(settings if config else os.environ, connection_class)
    except (ValueError, TypeError) as exc:
        raise CliError(f'invalid Redis connection settings: {exc}') from exc
    try:
        connection.ping()
    except redis.RedisError as exc:
        raise CliError(f'cannot connect to Redis at {describe(connection)}: {exc}') from exc
    return connection


def redis_from_settings(
    settings: Mapping[str, Any], connection_class: type[redis.Redis], sentinel_class: Any = Sentinel
) -> redis.Redis:
    """RQ's get_redis_from_config: REDIS_URL, else SENTINEL, else REDIS_HOST and friends."""
    if settings.get('REDIS_URL'):
        return client_from_url(settings['REDIS_URL'], connection_class)
    sentinel = settings.get('SENTINEL')
    if isinstance(sentinel, Mapping):
        return _sentinel_master(sentinel, connection_class, sentinel_class)
    return connection_class(
        host=settings.get('REDIS_HOST', 'localhost'),
        port=int(settings.get('REDIS_PORT', 6379)),
        db=int(settings.get('REDIS_DB', 0)),
        password=settings.get('REDIS_PASSWORD'),
        ssl=_flag(settings.get('REDIS_SSL', False), 'REDIS_SSL'),
        ssl_ca_certs=settings.get('REDIS_SSL_CA_CERTS'),
        ssl_cert_reqs=settings.get('REDIS_SSL_CERT_REQS', 'required'),
        ssl_ca_data=settings.get('REDIS_SSL_CA_DATA'),
        ssl_keyfile=settings.get('REDIS_SSL_KEYFILE'),
        ssl_certfile=settings.get('REDIS_SSL_CERTFILE'),
    )


def _sentinel_master(
    sentinel: Mapping[str, Any], connection_class: type[redis.Redis], sentinel_class: Any
) -> redis.Redis:
    kwargs = {
        'db': sentinel.get('DB', 0),
        'username': sentinel.get('USERNAME'),
        'password': sentinel.get('PASSWORD'),
        'socket_timeout': sentinel.get('SOCKET_TIMEOUT'),
        'ssl': sentinel.get('SSL', False),
        **sentinel.get('CONNECTION_KWARGS', {}),
    }
    instances = sentinel.get('INSTANCES', [('localhost', 26379)])
    manager = sentinel_class(instances, sentinel_kwargs=sentinel.get('SENTINEL_KWARGS', {}), **kwargs)
    master: redis.Redis = manager.master_for(sentinel.get('MASTER_NAME', 'mymaster'), redis_class=connection_class)
    return master


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, str):
        return bool(value)
    if value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise ValueError(f'{name} is a boolean and must be "True" or "False", not {value!r}')


def describe(connection: redis.Redis) -> str:
    """host:port/db (or the socket path) of a client, for error messages."""
    pool = getattr(connection, 'connection_pool', None)
    if pool is None:  # a RedisCluster
        node: Any = connection.get_default_node()  # type: ignore[attr-defined]
        return f'the Redis Cluster of {node.host}:{node.port}' if node is not None else 'the Redis Cluster'
    kwargs = pool.connection_kwargs
    if kwargs.get('path'):
        return f'unix://{kwargs["path"]}'
    if 'host' not in kwargs:
        return 'the configured server'
    return f'{kwargs["host"]}:{kwargs.get("port", 6379)}/{kwargs.get("db", 0)}'
