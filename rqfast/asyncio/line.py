"""Script calls of concurrent coroutines sent together: one connection per client and event loop whose
calls, made in the same turn of the loop, go out in one write, their replies read in order.

Each call is still one command, run by Redis on its own and atomically: only the syscalls and the
loop's wake-ups are shared (a hundred coroutines enqueueing at once cost one write and one read loop,
not a hundred of each). A connection error fails every call in flight on the line, with redis-py's
ConnectionError, and the next call opens a new line; a call whose reply was lost may have run.
A silent path (no reply for REPLY_TIMEOUT seconds while calls wait, whatever the client's socket_timeout)
fails them the same way, with rqfast's RedisNoReplyError, as the sync producer's calls (docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import weakref
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .. import defaults
from ..redis_errors import RedisNoReplyError

__all__ = ['Line', 'line_for']


class Line:
    """One pooled connection, taken for good, that sends the calls queued in a turn in one write."""

    def __init__(self, pool: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.pool = pool
        self.loop = loop
        self._conn: Any = None
        self._connecting: asyncio.Future[Any] | None = None
        self._outbox: list[bytes] = []
        self._waiting: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._reader: asyncio.Task[None] | None = None
        self._flush_planned = False
        self._heard = 0.0  # loop time of the last reply (or of the first call sent after a quiet spell)
        self._watchdog: asyncio.TimerHandle | None = None

    @property
    def connected(self) -> bool:
        return self._conn is not None

    async def call(self, packed: bytes) -> Any:
        """Send one packed command with the others of this turn; its reply (a server error raised)."""
        if self._conn is not None and not self._conn.is_connected and not self._waiting:
            self._drop()  # (closed meanwhile: the client's aclose(), a server that went away)
        if self._conn is None:
            await self._connect()
        reply: asyncio.Future[Any] = self.loop.create_future()
        self._outbox.append(packed)
        self._waiting.append(reply)
        if not self._flush_planned:
            self._flush_planned = True
            self.loop.call_soon(self._flush)
        return await reply

    async def _connect(self) -> None:
        """A connection for the line: the first caller takes it from the pool, the others wait for it."""
        connecting = self._connecting
        if connecting is not None:
            await asyncio.shield(connecting)
            return
        connecting = self._connecting = self.loop.create_future()
        try:
            try:  # (a handshake on a silent path: bounded as a call's reply is)
                conn = await asyncio.wait_for(self._connected(), defaults.REPLY_TIMEOUT)
            except asyncio.TimeoutError as exc:
                raise RedisNoReplyError('a new connection', defaults.REPLY_TIMEOUT, RedisTimeoutError()) from exc
            self._conn = conn
            connecting.set_result(None)
        except BaseException as exc:
            connecting.set_exception(exc)
            connecting.exception()  # (retrieved: the callers waiting on it raise it)
            raise
        finally:
            self._connecting = None

    async def _connected(self) -> Any:
        conn = await self.pool.get_connection()
        if not conn.is_connected:
            await conn.connect()
        return conn

    def _flush(self) -> None:
        self._flush_planned = False
        if not self._outbox:
            return
        data, self._outbox = b''.join(self._outbox), []
        try:
            self._conn._writer.write(data)
        except Exception as exc:
            self._fail(RedisConnectionError(f'rqfast.asyncio: writing to Redis failed: {exc}'))
            return
        if self._reader is None:
            self._heard = self.loop.time()
            self._reader = self.loop.create_task(self._read())
        if self._watchdog is None:
            self._watchdog = self.loop.call_later(defaults.REPLY_TIMEOUT, self._check_silence)

    def _check_silence(self) -> None:
        """Calls waiting and no reply for REPLY_TIMEOUT seconds: the path is silent, every call in flight fails
        (RedisNoReplyError) and the connection goes. One timer per line, not one per call."""
        self._watchdog = None
        if not self._waiting:
            return
        quiet = self.loop.time() - self._heard
        if quiet < defaults.REPLY_TIMEOUT:
            self._watchdog = self.loop.call_later(defaults.REPLY_TIMEOUT - quiet, self._check_silence)
            return
        reader, self._reader = self._reader, None
        self._fail(RedisNoReplyError('a script call', defaults.REPLY_TIMEOUT, RedisTimeoutError()))
        if reader is not None:
            reader.cancel()

    async def _read(self) -> None:
        try:
            while self._waiting:
                try:
                    reply = await self._conn.read_response()
                except ResponseError as error:
                    reply = error
                self._heard = self.loop.time()
                waiter = self._waiting.popleft()
                if waiter.done():  # (its caller was cancelled: the reply is read and dropped)
                    continue
                if isinstance(reply, ResponseError):
                    waiter.set_exception(reply)
                else:
                    waiter.set_result(reply)
        except BaseException as exc:
            if self._reader is asyncio.current_task():  # (else the watchdog failed the calls and cancelled it)
                stopped = RedisConnectionError('rqfast.asyncio: the line stopped')
                self._fail(exc if isinstance(exc, Exception) else stopped)
            if not isinstance(exc, Exception):
                raise
        finally:
            if self._reader is asyncio.current_task():
                self._reader = None

    def _fail(self, error: Exception) -> None:
        """Every call in flight fails with `error`; the connection is dropped (the next call opens one)."""
        waiting, self._waiting = self._waiting, collections.deque()
        for waiter in waiting:
            if not waiter.done():
                waiter.set_exception(error)
        self._outbox = []
        self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self.loop.create_task(_drop(self.pool, conn))


async def _drop(pool: Any, conn: Any) -> None:
    with contextlib.suppress(Exception):
        await conn.disconnect(nowait=True)
    with contextlib.suppress(Exception):
        await pool.release(conn)


_LINES: weakref.WeakKeyDictionary[Any, Line] = weakref.WeakKeyDictionary()


def line_for(pool: Any) -> Line:
    """The line of `pool` in the running loop; RuntimeError when the pool's line is connected in another."""
    loop = asyncio.get_running_loop()
    line = _LINES.get(pool)
    if line is not None and line.loop is not loop and line.connected:
        # (as redis.asyncio's own connections: a client belongs to the loop it first ran in)
        raise RuntimeError('rqfast.asyncio: the line of this client is attached to a different loop')
    if line is None or line.loop is not loop:
        line = _LINES[pool] = Line(pool, loop)
    return line
