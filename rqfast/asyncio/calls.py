"""Sending a script call (scripts.ScriptCall) on a redis.asyncio client: the async twin of Script.__call__.

The same script, the same head (FCALL of its function where the server has functions, else EVALSHA),
the same ARGV as the sync producer sends: only the waiting differs. A server without functions puts
the client's pool on EVALSHA for good, as scriptload does for a sync pool (one set holds both).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import DataError, NoScriptError, OutOfMemoryError, ResponseError

from .. import keys, scriptload
from ..cluster import is_asyncio_cluster
from ..redis_errors import RedisFullError
from ..scripts import ScriptCall
from .line import line_for

__all__ = ['run']


async def run(call: ScriptCall, connection: Any) -> Any:
    """Send `call` on `connection` (a redis.asyncio Redis or RedisCluster); its reply."""
    script = scriptload.script(call.name)
    pool = _plain_pool(connection)

    async def send(head: tuple[Any, ...]) -> Any:
        if pool is not None:
            return await line_for(pool).call(_packed((*head, *call.args)))
        return await connection.execute_command(*head, *call.args)

    try:
        return await _while_slot_moves(lambda: _run(script, connection, send))
    except OutOfMemoryError as exc:  # (Redis full: refused whole, as for the sync producer)
        raise exc if isinstance(exc, RedisFullError) else RedisFullError(f'the {call.name} call', exc) from exc
    except RuntimeError as exc:
        if not _other_loop(exc):
            raise
        raise RuntimeError(
            'rqfast.asyncio: this redis.asyncio client belongs to another event loop (closed, or not this one): '
            'make the client, and the AsyncQueue on it, in the loop that uses them (FastAPI: in its lifespan). '
            'A script call runs whole or not at all: fetch_job on a client of this loop says if it ran'
        ) from exc


def _other_loop(exc: RuntimeError) -> bool:
    """Whether asyncio refused a connection of another loop (asyncio's own messages for both cases)."""
    text = str(exc)
    return 'Event loop is closed' in text or 'attached to a different loop' in text


# redis.asyncio's own execute_command, to tell an instrumented one (as scriptload._EXECUTE_COMMAND)
_EXECUTE_COMMAND = AsyncRedis.execute_command


def _plain_pool(client: Any) -> Any:
    """The pool of a plain redis.asyncio.Redis (no subclass, not single-connection, execute_command not
    wrapped, redis-py 6 or later, hiredis): its script calls go, packed by hiredis, by the pool's line
    (line.py). None for any other client, whose calls go by its execute_command."""
    if type(client) is not AsyncRedis or client.connection is not None or scriptload._hiredis_pack is None:
        return None
    execute_command = AsyncRedis.execute_command
    if execute_command is not _EXECUTE_COMMAND or hasattr(execute_command, '__wrapped__'):
        return None
    return client.connection_pool if scriptload._REDIS_MAJOR >= 6 else None


def _packed(command: tuple[Any, ...]) -> bytes:
    """`command` packed by hiredis (redis.asyncio packs each argument in Python: a third of an awaited
    enqueue's CPU)."""
    assert scriptload._hiredis_pack is not None  # (_plain_pool checked)
    try:
        return scriptload._hiredis_pack(command)
    except TypeError as exc:
        raise DataError(str(exc)) from exc


async def _run(script: scriptload.Script, connection: Any, send: Callable[[tuple[Any, ...]], Awaitable[Any]]) -> Any:
    owner = None if is_asyncio_cluster(connection) else getattr(connection, 'connection_pool', None)
    if owner is not None and owner not in scriptload._NO_FUNCTIONS:
        fcall = ('FCALL', script.function, 1, keys.SLOT_KEY, keys.PREFIX)
        try:
            return await send(fcall)
        except ResponseError as exc:
            if not await _function_missing(script, connection, owner, exc):
                raise
        if owner not in scriptload._NO_FUNCTIONS:
            return await send(fcall)
    evalsha = ('EVALSHA', script.sha, 1, keys.SLOT_KEY, keys.PREFIX)
    try:
        return await send(evalsha)
    except NoScriptError:
        await _once(connection, ('SCRIPT', script.sha), lambda: connection.script_load(script.source))
        return await send(evalsha)


# The loads in flight, per client and what they load: callers that met the same missing script at once
# (a burst of concurrent enqueues after a restart) wait for one load instead of each sending one.
_LOADS: dict[tuple[int, str, str], asyncio.Future[Any]] = {}


async def _once(connection: Any, what: tuple[str, str], load: Callable[[], Awaitable[Any]]) -> Any:
    key = (id(connection), *what)
    loading = _LOADS.get(key)
    if loading is not None:
        return await asyncio.shield(loading)
    loading = _LOADS[key] = asyncio.get_running_loop().create_future()
    try:
        result = await load()
        loading.set_result(result)
        return result
    except BaseException as exc:
        loading.set_exception(exc)
        loading.exception()  # (retrieved: the callers waiting on it raise it)
        raise
    finally:
        del _LOADS[key]


async def _function_missing(script: scriptload.Script, connection: Any, owner: Any, exc: ResponseError) -> bool:
    """Script._function_missing, awaited: True when the FCALL is to be sent again or EVALSHA follows."""
    message = str(exc)
    if isinstance(exc, scriptload._NOT_HERE) or scriptload._unknown_command(message, 'fcall'):
        scriptload._NO_FUNCTIONS.add(owner)
        return True
    if 'function not found' not in message.lower():
        return False
    try:
        await _once(connection, ('FUNCTION', script.function), lambda: _load_function(connection, script))
    except ResponseError as load_error:
        text = str(load_error).lower()
        if isinstance(load_error, scriptload._NOT_HERE) or scriptload._unknown_command(text, 'function'):
            scriptload._NO_FUNCTIONS.add(owner)
        elif 'already exists' not in text:
            raise
    return True


async def _load_function(connection: Any, script: scriptload.Script) -> Any:
    return await connection.execute_command('FUNCTION', 'LOAD', script.library)


async def _while_slot_moves(call: Callable[[], Awaitable[Any]]) -> Any:
    """scriptload._while_slot_moves, awaited: a cluster call refused while its slot moves is sent again."""
    deadline: float | None = None
    while True:
        try:
            return await call()
        except ResponseError as exc:
            if scriptload.SLOT_MOVING not in str(exc):
                raise
            deadline = deadline or time.monotonic() + scriptload.SLOT_MOVING_WAIT
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(scriptload.SLOT_MOVING_PAUSE)
