"""Imported at start-up by every Python process of an RQ-suite run: tests/rq_suite puts this folder first on
PYTHONPATH for the pytest processes, so their multiprocessing children, the interpreters a spawn worker
starts and any `python` the tests run get it too. Does nothing outside such a run (no RQ_SUITE_* variables).

1. Redis on localhost:6379 goes to the run's private redis-server (RQ_SUITE_REDIS_PORT). RQ's tests reach
   Redis through `Redis()` defaults and `redis://127.0.0.1:6379/<db>` URLs in many places (their helper
   module, the CLI tests, worker processes given connection kwargs), and they flush what they find. Remapping
   the port where redis-py builds a connection catches all of them in every process, so none can reach the
   machine's own Redis, while the kwargs the tests compare still say 6379. A connection that would still go
   to port 6379 on this host is refused.
2. In an rqfast run (RQ_SUITE_BLOCK_RQ=1) `import rq` fails: no test may pass because RQ stood in for rqfast.
3. rqfast comes from RQ_SUITE_RQFAST_ROOT and nowhere else. An editable install of another checkout (pip
   install -e) adds a finder that serves any `rqfast.<name>` the checkout under test lacks from that other
   checkout: a module missing here would silently be imported from there. That finder is removed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

_LOOPBACK = frozenset({'localhost', '127.0.0.1', '::1', '0.0.0.0', 'ip6-localhost', 'localhost.localdomain'})
_DEFAULT_PORT = 6379


def _is_default_redis(host: Any, port: Any) -> bool:
    try:
        return str(host).lower() in _LOOPBACK and int(port) == _DEFAULT_PORT
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
            raise RedisConnectionError(f'RQ suite: refusing to connect to {self.host}:{self.port}, the machine Redis')
        return original_connect(self)

    connection_class.__init__ = __init__  # type: ignore[method-assign]
    connection_class._connect = _connect  # type: ignore[method-assign]


class _BlockRQ(MetaPathFinder):
    """Makes `import rq` (and `rq.*`) fail in an rqfast run."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == 'rq' or fullname.startswith('rq.'):
            raise ModuleNotFoundError(f'No module named {fullname!r} (RQ is blocked in an rqfast run)', name=fullname)
        return None


def _drop_foreign_rqfast_finders(root: str) -> None:
    """Removes editable-install finders (setuptools' __editable___*_finder) that map rqfast outside root."""
    root = os.path.realpath(root)
    for finder in list(sys.meta_path):
        mapping = getattr(sys.modules.get(getattr(finder, '__module__', '')), 'MAPPING', None)
        if not isinstance(mapping, dict):
            continue
        paths = [path for name, path in mapping.items() if name == 'rqfast' or name.startswith('rqfast.')]
        if any(os.path.commonpath([os.path.realpath(path), root]) != root for path in paths):
            sys.meta_path.remove(finder)


if os.environ.get('RQ_SUITE_RQFAST_ROOT'):
    _drop_foreign_rqfast_finders(os.environ['RQ_SUITE_RQFAST_ROOT'])
if os.environ.get('RQ_SUITE_REDIS_PORT'):
    _redirect_redis(int(os.environ['RQ_SUITE_REDIS_PORT']))
if os.environ.get('RQ_SUITE_BLOCK_RQ') == '1':
    sys.meta_path.insert(0, _BlockRQ())
