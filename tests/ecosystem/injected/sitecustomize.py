"""Imported at start-up by every Python process of an ecosystem-suite run (tests/ecosystem puts this folder
first on PYTHONPATH): Redis on localhost:6379 goes to the run's private redis-server.

django-rq's, rq-dashboard's and rq-scheduler's suites reach Redis at localhost:6379 (`Redis()` defaults,
their settings) and flush the databases they take. Remapping the port where redis-py builds a connection
catches every process (their workers, `manage.py` subprocesses), so none reaches the machine's own
Redis, while the settings the tests compare still say 6379; a connection that would still go to port
6379 on this host is refused. Does nothing outside such a run (RQFAST_ECOSYSTEM_REDIS_PORT unset).
"""

from __future__ import annotations

import os
from typing import Any

_LOOPBACK = frozenset({'localhost', '127.0.0.1', '::1', '0.0.0.0', 'ip6-localhost', 'localhost.localdomain'})


def _is_default_redis(host: Any, port: Any) -> bool:
    try:
        return str(host).lower() in _LOOPBACK and int(port) == 6379
    except (TypeError, ValueError):
        return False


def _redirect_redis(private_port: int) -> None:
    import redis.connection
    from redis.exceptions import ConnectionError as RedisConnectionError

    connection_class = redis.connection.Connection
    original_init: Any = connection_class.__init__
    original_connect: Any = connection_class._connect

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        if _is_default_redis(getattr(self, 'host', None), getattr(self, 'port', None)):
            self.port = private_port

    def _connect(self: Any) -> Any:
        if _is_default_redis(self.host, self.port):
            raise RedisConnectionError(f'ecosystem run: refusing to connect to {self.host}:{self.port}')
        return original_connect(self)

    connection_class.__init__ = __init__  # type: ignore[method-assign]
    connection_class._connect = _connect  # type: ignore[method-assign]


if os.environ.get('RQFAST_ECOSYSTEM_REDIS_PORT'):
    _redirect_redis(int(os.environ['RQFAST_ECOSYSTEM_REDIS_PORT']))
