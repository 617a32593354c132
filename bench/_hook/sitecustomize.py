"""Counts redis-py socket writes (one write = one round trip) in every process of a counted run.

bench/counting.py puts this directory first on PYTHONPATH and names a file in BENCH_RT_FILE;
then every Python process started below it, including forked and spawned work horses, appends
one byte to that file per send_packed_command call. The file's size is the count: O_APPEND
writes are atomic, so parent and horses can count into the same file.
"""

import os
from typing import Any

_PATH = os.environ.get('BENCH_RT_FILE')


def _install(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def tick() -> None:
        os.write(fd, b'.')

    try:
        from redis.connection import AbstractConnection
    except ImportError:
        return
    sync_send = AbstractConnection.send_packed_command

    def counted_send(self: Any, *args: Any, **kwargs: Any) -> Any:
        tick()
        return sync_send(self, *args, **kwargs)

    AbstractConnection.send_packed_command = counted_send  # type: ignore[method-assign]

    try:
        from redis.asyncio.connection import AbstractConnection as AsyncConnection
    except ImportError:
        return
    async_send = AsyncConnection.send_packed_command

    async def counted_async_send(self: Any, *args: Any, **kwargs: Any) -> Any:
        tick()
        return await async_send(self, *args, **kwargs)

    AsyncConnection.send_packed_command = counted_async_send  # type: ignore[method-assign]


if _PATH:
    _install(_PATH)
