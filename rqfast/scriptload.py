"""Loading the Lua scripts in lua/ and calling them: EVALSHA (one round trip), or queued into a caller's pipeline.

rqfast.scripts wraps each script in a typed function; this module is what those wrappers call.
A script names the helper files it uses (lua/_*.lua) in `--@include <file>` lines: it is sent with
them in front (_source), so each script carries only what it uses.
"""

from __future__ import annotations

import hashlib
import sys
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from redis import Redis
from redis import __version__ as redis_version
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import DataError, NoPermissionError, NoScriptError, OutOfMemoryError, ReadOnlyError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import keys
from .defaults import REPLY_TIMEOUT
from .redis_errors import RedisFullError, RedisNoReplyError

_hiredis_pack: Callable[..., bytes] | None
try:  # an optional dependency: hiredis packs commands when installed (DirectLine, packed(), _send_pooled)
    from hiredis import pack_command as _hiredis_pack
except ImportError:  # redis-py's own packing then, and nothing packed ahead
    _hiredis_pack = None

if TYPE_CHECKING:
    from redis.client import Pipeline


def _search_path() -> tuple[Path, Path]:
    here = Path(__file__).resolve().parent
    return here / 'lua', here.parent / 'lua'  # installed: the wheel ships them as rqfast/lua/; a checkout


def _lua_dir() -> Path:
    search = _search_path()
    for path in search:
        if (path / '_common.lua').is_file():
            return path
    raise RuntimeError(f'rqfast: Lua scripts not found in {", ".join(map(str, search))}')


INCLUDE = '--@include '  # an include line: `--@include _argv.lua` (a Lua comment: each file stays valid Lua)


def _source(directory: Path, name: str) -> str:
    """The text sent for script `name`: the files its include lines name, and theirs (each once, every
    file after the files it includes, in the order their include lines come), then its own text."""
    return ''.join(_parts(directory, name).values())


def _parts(directory: Path, name: str) -> dict[str, str]:
    """_source's files and their texts, in its order: the script's own file last."""
    texts: dict[str, str] = {}

    def add(file: str, via: tuple[str, ...]) -> None:
        if file in texts:
            return
        if file in via:
            raise RuntimeError(f'rqfast: Lua include cycle: {" -> ".join((*via, file))}')
        text = (directory / file).read_text()
        for line in text.splitlines():
            if line.startswith(INCLUDE):
                add(line[len(INCLUDE) :].strip(), (*via, file))
        texts[file] = text if text.endswith('\n') else text + '\n'

    add(f'{name}.lua', ())
    return texts


FUNCTION_PREFIX = 'rqfast_'


# The globals the scripts read, as the library's locals: a function's globals table is empty, each
# read of a global a miss there and a second lookup through its metatable, some sixty per job. They
# are nil while the library loads (it registers through `loading`, the loading API's `redis`, and reads
# no other global then); the first call sets them.
_API = 'redis, unpack, tonumber, tostring, ipairs, pairs, string, table, math, setmetatable, type, pcall, error'


def _library(name: str, parts: dict[str, str], function: str) -> str:
    """Script `name` as a Redis function library (FUNCTION LOAD) holding one function, `function`: the
    included files run once, when the library loads (their helpers defined once per server rather than
    once per call); the script's own text is the function's body, run per call with KEYS and ARGV set
    as EVALSHA sets them (locals of the library here), the globals it reads as locals too (_API) and
    the key table of the call's prefix (use_prefix, lua/_common.lua)."""
    *helpers, own = parts.values()
    prefix = '  use_prefix(args[1])\n' if '_common.lua' in parts else ''
    return (
        f'#!lua name={function}\n'
        'local loading = redis\n'
        f'local function api() return {_API} end\n'
        f'local {_API}\n'
        'local KEYS, ARGV\n'
        + ''.join(helpers)
        + 'local function main()\n'
        + own
        + 'end\n'
        + f"loading.register_function{{function_name='{function}', callback=function(keys, args)\n"
        + f'  if not unpack then {_API} = api() end\n'
        + '  KEYS, ARGV = keys, args\n'
        + prefix
        + '  return main()\n'
        + ("end, flags={'allow-oom'}}\n" if name in ALLOW_OOM else 'end}\n')
    )


# Scripts a full Redis (maxmemory, noeviction) still runs: the heartbeat, so that jobs running while it
# is full stay alive (their started-registry entries are renewed: nothing grows, fields are replaced).
# As a function: flag allow-oom; as EVALSHA: its first write is an EXPIRE, which is not refused (Redis
# refuses a script's write only while the script has written nothing).
ALLOW_OOM = frozenset({'heartbeat'})


# Redis Cluster, while the prefix's slot moves to another master (docs/connections.md): between the
# script that moves its keys and marks it MIGRATING on the old master and the SETSLOT that hands it
# over, a script sent there is refused at its first key ("Script attempted to access a non local key"),
# before it writes anything, since every key has left. The call is sent again after a pause (then it
# is redirected to the new master) for SLOT_MOVING_WAIT seconds at most; the move takes milliseconds.
SLOT_MOVING = 'non local key'
SLOT_MOVING_WAIT = 10.0
SLOT_MOVING_PAUSE = 0.05


def _while_slot_moves(call: Callable[[], Any]) -> Any:
    deadline: float | None = None
    while True:
        try:
            return call()
        except ResponseError as exc:
            if SLOT_MOVING not in str(exc):
                raise
            deadline = deadline or time.monotonic() + SLOT_MOVING_WAIT
            if time.monotonic() >= deadline:
                raise
            time.sleep(SLOT_MOVING_PAUSE)


def _full(name: str, exc: OutOfMemoryError) -> RedisFullError:
    """Redis at maxmemory with noeviction refused the call (a function without allow-oom is refused
    whole; an EVALSHA script at its first write that may grow memory, before any other write): one
    clear error, nothing written."""
    return exc if isinstance(exc, RedisFullError) else RedisFullError(f'the {name} call', exc)


def _silent(name: str, exc: RedisTimeoutError) -> RedisTimeoutError:
    """No reply in time: one clear error (rqfast.exceptions.RedisNoReplyError, a redis-py TimeoutError)."""
    return exc if isinstance(exc, RedisNoReplyError) else RedisNoReplyError(f'the {name} call', REPLY_TIMEOUT, exc)


class Script:
    """A script file with the files it includes in front (see _source): called as a Redis function
    (FCALL) where the server has them, else by its sha1 (EVALSHA).

    A server with functions (Redis 7+, Valkey) gets the script once as a function library
    (_library: FUNCTION LOAD), named after the script and its text's sha1, so that every version of
    rqfast has its own and a mixed fleet's coexist; the library defines the helpers once per server,
    where a script defines them again on every call. A call that finds no such function (a restarted
    server without persistence, FUNCTION FLUSH) loads it and is sent again, as EVALSHA does on NOSCRIPT.
    A server without them (Redis 6, a client whose ACL forbids FCALL or FUNCTION LOAD, a replica) answers the
    first FCALL with an error that puts its connection pool on EVALSHA for good (_NO_FUNCTIONS). Redis
    Cluster clients (RedisCluster: redis-py asks the server for an FCALL's keys, a round trip per call)
    and callers' pipelines (Script.queue) use scripts.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._parts = _parts(_lua_dir(), name)
        self.source = ''.join(self._parts.values()).encode()
        self.sha = hashlib.sha1(self.source).hexdigest()
        self.function = f'{FUNCTION_PREFIX}{name}_{self.sha[:16]}'

    @property
    def library(self) -> str:
        """The text FUNCTION LOAD takes for this script (see _library)."""
        return _library(self.name, self._parts, self.function)

    def __call__(self, connection: Redis, args: Sequence[Any]) -> Any:
        client: Any = connection  # a Redis or a DirectLine; redis-py leaves execute_command untyped
        pool = _plain_pool(client)
        try:
            if pool is not None:
                return _while_slot_moves(lambda: self._run(client, lambda head: _send_pooled(pool, (*head, *args))))
            return _while_slot_moves(lambda: self._run(client, lambda head: client.execute_command(*head, *args)))
        except OutOfMemoryError as exc:
            raise _full(self.name, exc) from exc
        except RedisTimeoutError as exc:
            raise _silent(self.name, exc) from exc

    def call_spliced(self, connection: Any, pieces: Sequence[Sequence[Any] | Packed]) -> Any:
        """__call__ with the arguments in pieces: lists of them, and runs of them packed already
        (packed()); on a connection that splices (spliceable())."""
        try:
            return _while_slot_moves(
                lambda: self._run(connection, lambda head: connection.execute_spliced([head, *pieces]))
            )
        except OutOfMemoryError as exc:
            raise _full(self.name, exc) from exc
        except RedisTimeoutError as exc:
            raise _silent(self.name, exc) from exc

    def _run(self, client: Any, send: Callable[[tuple[Any, ...]], Any]) -> Any:
        """send(head) with the head of an FCALL of this script's function, or of an EVALSHA; loading
        the function or the script when the server lacks it, and sending again."""
        owner = _functions_owner(client)
        slot_key, prefix = keys.SLOT_KEY, keys.PREFIX  # (the keyspace's: sharded by queue, the call's queue's)
        if owner is not None and owner not in _NO_FUNCTIONS:
            fcall = ('FCALL', self.function, 1, slot_key, prefix)
            try:
                return send(fcall)
            except ResponseError as exc:
                if not self._function_missing(client, owner, exc):
                    raise
            if owner not in _NO_FUNCTIONS:
                return send(fcall)
        evalsha = ('EVALSHA', self.sha, 1, slot_key, prefix)
        try:
            return send(evalsha)
        except Exception as exc:
            if not isinstance(exc, NoScriptError):
                _explain_no_lua(exc)
                raise
            client.script_load(self.source)
            return send(evalsha)

    def _function_missing(self, client: Any, owner: Any, exc: ResponseError) -> bool:
        """After an FCALL failed with `exc`: True when it is to be sent again (the function is loaded
        now) or the server takes no FCALL (its owner is in _NO_FUNCTIONS now: EVALSHA follows); False
        for any other error (the call's own)."""
        message = str(exc)
        if isinstance(exc, _NOT_HERE) or _unknown_command(message, 'fcall'):
            _NO_FUNCTIONS.add(owner)
            return True
        if 'function not found' not in message.lower():
            return False
        try:
            client.execute_command('FUNCTION', 'LOAD', self.library)
        except ResponseError as load_error:
            text = str(load_error).lower()
            if isinstance(load_error, _NOT_HERE) or _unknown_command(text, 'function'):
                _NO_FUNCTIONS.add(owner)
            elif 'already exists' not in text:  # (another client loaded it meanwhile: it is there)
                raise
        return True

    def queue(self, pipeline: Pipeline, args: Sequence[Any]) -> None:
        """Queue the call into a caller's pipeline: it runs, and replies, when the caller executes it.

        The call must not depend on the script being cached: an EVALSHA that meets NOSCRIPT inside a
        MULTI fails at EXEC with the caller's other commands applied (a half-written state change), and
        the NOSCRIPT-retry of __call__ cannot happen there. So the first call of a script in the batch
        the pipeline holds is an EVAL with the whole source, which also caches it on the server; later
        calls in the same batch are EVALSHAs, which Redis runs after that EVAL, in order, on the same
        connection (so a pipeline of many enqueues sends the source once, not once per job). Inside a
        MULTI nothing runs in between; in a non-transactional one (not atomic anyway) only another
        client's SCRIPT FLUSH in between could take the script away.
        """
        if getattr(pipeline, 'watching', False) and not pipeline.explicit_transaction:
            pipeline.multi()  # WATCH mode would run the call at once; RQ's enqueue switches to MULTI too
        strategy: Any = getattr(pipeline, '_execution_strategy', None)  # a ClusterPipeline batches in there
        if strategy is None:  # (redis.asyncio's ClusterPipeline before redis-py 6 keeps it as _command_stack)
            held: Any = pipeline
            stack = held.command_stack if hasattr(held, 'command_stack') else held._command_stack
        else:  # (redis.asyncio's ClusterPipeline keeps it private)
            stack = strategy.command_queue if hasattr(strategy, 'command_queue') else strategy._command_queue
        batch, sent = _sent_in_batch.get(pipeline, (None, set()))
        if batch is not stack:  # execute() and reset() start a new command_stack: a new batch
            sent = set()
            _sent_in_batch[pipeline] = (stack, sent)
        client: Any = pipeline  # redis-py leaves execute_command untyped
        if self.sha in sent:
            client.execute_command('EVALSHA', self.sha, 1, keys.SLOT_KEY, keys.PREFIX, *args)
        else:
            client.execute_command('EVAL', self.source, 1, keys.SLOT_KEY, keys.PREFIX, *args)
            sent.add(self.sha)


# Per caller's pipeline: its batch (the command_stack list itself, held so that identity compares
# safely) and the shas of the scripts sent in full in it.
_sent_in_batch: weakref.WeakKeyDictionary[Any, tuple[list[Any], set[str]]] = weakref.WeakKeyDictionary()


# The connection pools (or other clients) whose server takes no FCALL, or whose user may not use it or
# FUNCTION LOAD, or that is a replica (it takes no FUNCTION LOAD, and no FCALL of a function that may
# write, where a script that only reads runs): their calls are EVALSHAs from then on (Script._run).
_NOT_HERE = (NoPermissionError, ReadOnlyError)
_NO_FUNCTIONS: weakref.WeakSet[Any] = weakref.WeakSet()


def _functions_owner(client: Any) -> Any:
    """What _NO_FUNCTIONS keys a client's server by: its connection pool (a Redis client, a DirectLine);
    None for a client that calls scripts only (a RedisCluster, or one without a pool)."""
    if _is_cluster(client):
        return None
    return getattr(client, 'connection_pool', None)


def _is_cluster(client: Any) -> bool:
    if type(client) is DirectLine or type(client) is Redis:  # (the usual clients: no isinstance of a Protocol)
        return False
    module = sys.modules.get('redis.cluster')
    return module is not None and isinstance(client, module.RedisCluster)


def _unknown_command(message: str, command: str) -> bool:
    """Whether `message` is a server's refusal of `command` as unknown: Redis 7 quotes it ('fcall'), Redis
    6 and others in backticks (`FCALL`)."""
    text = message.lower()
    return 'unknown command' in text and any(f'{quote}{command}' in text for quote in "'`")


class LuaUnavailableError(RuntimeError):
    """The server runs no Lua scripts: plain fakeredis, without its `lua` extra (lupa)."""


def _explain_no_lua(exc: Exception) -> None:
    """A server that does not know EVALSHA gets a message saying what to install (only on the error path)."""
    if "unknown command 'evalsha'" in str(exc).lower():
        raise LuaUnavailableError(
            'rqfast runs every state change as a Lua script, and this Redis server does not run Lua. '
            'With fakeredis, install its Lua support: pip install "fakeredis[lua]"'
        ) from exc


_scripts: dict[str, Script] = {}


def call(name: str, connection: Redis, args: Sequence[Any], pipeline: Pipeline | None = None) -> Any:
    """Run the script now (its reply), or queue it into the caller's `pipeline` (None: no reply yet)."""
    if pipeline is None:
        return script(name)(connection, args)
    script(name).queue(pipeline, args)
    return None


def script(name: str) -> Script:
    found = _scripts.get(name)
    if found is None:
        found = _scripts[name] = Script(name)
    return found


# redis-py's own execute_command, to tell an instrumented one (OpenTelemetry, Sentry, ddtrace wrap it).
_EXECUTE_COMMAND = Redis.execute_command
_REDIS_MAJOR = int(redis_version.split('.')[0]) if redis_version.split('.')[0].isdigit() else 0


def _plain_pool(client: Any) -> Any:
    """The connection pool of a plain redis.Redis (no subclass, not a single-connection client, no
    client-side cache, execute_command not wrapped by instrumentation, redis-py 6 or later, hiredis):
    its script calls are sent by _send_pooled. None for any other client, which gets execute_command."""
    if type(client) is not Redis or client.connection is not None or _hiredis_pack is None:
        return None
    execute_command = Redis.execute_command
    if execute_command is not _EXECUTE_COMMAND or hasattr(execute_command, '__wrapped__') or _REDIS_MAJOR < 6:
        return None  # (wrapped before rqfast was imported: functools.wraps and wrapt set __wrapped__)
    pool = client.connection_pool
    return pool if getattr(pool, 'cache', None) is None else None


def _send_pooled(pool: Any, command: tuple[Any, ...]) -> Any:
    """What redis-py's execute_command does for a command without a reply callback (EVALSHA has
    none), but its observability hooks: a connection from the pool, the command packed by hiredis,
    sent and its reply read under the connection's Retry (a connection error disconnects, then the
    Retry decides), the connection back to the pool. About 7 µs less per call than execute_command,
    which packs each argument again in Python (a fifth of an enqueue's own CPU)."""
    assert _hiredis_pack is not None  # (_plain_pool checked)
    try:
        packed = [_hiredis_pack(command)]
    except TypeError as exc:  # an argument of no type Redis takes, as redis-py's hiredis packer says it
        raise DataError(str(exc)) from exc
    conn = pool.get_connection()
    own = getattr(conn, 'socket_timeout', None)
    deadline = time.monotonic() + REPLY_TIMEOUT  # (a silent network: see bound())
    bounded = False

    def send() -> Any:
        nonlocal bounded
        left = deadline - time.monotonic()
        if left <= 0:
            raise _PastDeadline()
        if own is None or own > left:
            bound(conn, left)
            bounded = True
        conn.send_packed_command(packed)
        return conn.read_response()

    try:
        return conn.retry.call_with_retry(send, lambda error: conn.disconnect())
    except _PastDeadline:  # (not one of the errors the connection's Retry retries: it ends the call)
        raise RedisTimeoutError(f'no reply in {REPLY_TIMEOUT} s, its connection retries included') from None
    finally:
        try:
            if bounded:
                bound(conn, own)
            if getattr(conn, 'should_reconnect', bool)():  # (redis-py's maintenance notifications)
                conn.disconnect()
                conn.connect()
        finally:
            pool.release(conn)


class _PastDeadline(Exception):
    """A script call's attempts have taken REPLY_TIMEOUT: no more (_send_pooled)."""


def bound(conn: Any, seconds: float | None) -> None:
    """Give a redis-py connection (and its socket, if connected) the socket timeout `seconds`: a read,
    or a reconnect's handshake, that gets no reply for that long raises redis-py's TimeoutError. rqfast
    bounds its own script calls so (REPLY_TIMEOUT in all, a pooled call's retries included; a worker's
    claim and finish connection per call): a silent network path (one that drops everything without
    closing) is an error within the bound, never a hang."""
    conn.socket_timeout = seconds
    sock = getattr(conn, '_sock', None)
    if sock is not None:
        try:
            sock.settimeout(seconds)
        except OSError:
            pass


class DirectLine:
    """One connection a worker holds for its claim/finish calls, sending each command packed in one go.

    redis-py's execute_command costs about 20 µs more per call (argument encoding in Python, pool and
    retry bookkeeping): some 7% of a no-op job. Errors are redis-py's own; on a connection error the
    socket is dropped, the error raised, and the next call reconnects.
    """

    def __init__(self, connection: Redis) -> None:
        self._client = Redis(connection_pool=connection.connection_pool, single_connection_client=True)
        self._pack: Callable[..., bytes] | None = _hiredis_pack
        line: Any = self._client.connection
        own = getattr(line, 'socket_timeout', None)
        if line is not None and (own is None or own > REPLY_TIMEOUT):
            bound(line, REPLY_TIMEOUT)  # (the worker's own connection: a silent network is noticed)

    def execute_command(self, *args: Any) -> Any:
        line: Any = self._client.connection  # redis-py's Connection methods are untyped
        if line is None:
            return self._client.execute_command(*args)  # type: ignore[no-untyped-call]
        packed = [self._pack(args)] if self._pack is not None else line.pack_command(*args)
        try:
            line.send_packed_command(packed, check_health=False)
            return line.read_response()
        except (RedisConnectionError, RedisTimeoutError, OSError):
            line.disconnect()
            raise

    @property
    def connection_pool(self) -> Any:
        """Its client's pool (the connection's): what rqfast keys its server's facts by."""
        return self._client.connection_pool

    @property
    def splices(self) -> bool:
        """Whether execute_spliced can be used (it needs hiredis)."""
        return self._pack is not None

    def execute_spliced(self, pieces: list[Any]) -> Any:
        """execute_command of the arguments in `pieces`, in order: sequences of arguments, and runs
        packed already (Packed), joined into one command."""
        line: Any = self._client.connection
        if line is None or self._pack is None:
            raise RedisConnectionError('rqfast: no connection to send a spliced command on')
        count, chunks = 0, [b'']
        for piece in pieces:
            if isinstance(piece, Packed):
                count += piece.length
                chunks.append(piece.data)
            elif piece:
                data = self._pack(tuple(piece))
                count += len(piece)
                chunks.append(data[data.index(b'\r\n') + 2 :])
        chunks[0] = b'*%d\r\n' % count
        try:
            line.send_packed_command([b''.join(chunks)], check_health=False)
            return line.read_response()
        except (RedisConnectionError, RedisTimeoutError, OSError):
            line.disconnect()
            raise

    def script_load(self, source: bytes) -> Any:
        return self._client.script_load(source)

    def close(self) -> None:
        self._client.close()


class Packed(NamedTuple):
    """A run of `count` command arguments packed as RESP bulk strings (no array header), to be
    spliced into a command by DirectLine.execute_spliced: packed where it costs the caller nothing
    (a worker's job thread packs its outcome, not the loop thread that sends it)."""

    data: bytes
    length: int  # how many arguments


def packed(args: Sequence[Any]) -> Packed | None:
    """`args` packed as execute_command packs them (hiredis), or None without hiredis."""
    if _hiredis_pack is None or not args:
        return None
    data: bytes = _hiredis_pack(tuple(args))
    return Packed(data[data.index(b'\r\n') + 2 :], len(args))  # (without its "*<count>" header)


def spliceable(connection: Any) -> bool:
    """True for a connection that takes packed runs of arguments (a DirectLine with hiredis)."""
    return bool(getattr(connection, 'splices', False))
