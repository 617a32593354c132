"""The script loader: FCALL where the server has Redis functions, EVALSHA where it has not, and a reload
when Redis has forgotten a function or a script (restart, FUNCTION FLUSH, SCRIPT FLUSH)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
import redis

from rqfast import Queue, SimpleWorker, scriptload, scripts
from rqfast.job import JobStatus


def _forget_scripts(connection: redis.Redis) -> None:
    """What a restarted server without persistence has forgotten: every function and script."""
    connection.function_flush()
    connection.script_flush()


def test_a_flushed_script_is_loaded_again(connection: redis.Redis) -> None:
    queue = Queue('flush', connection=connection)
    first = queue.enqueue('operator.add', 1, 2)
    _forget_scripts(connection)

    second = queue.enqueue('operator.add', 3, 4)

    assert queue.job_ids == [first.id, second.id]


def test_the_worker_line_reloads_a_flushed_script(redis_conn: redis.Redis) -> None:
    line = scripts.DirectLine(redis_conn)
    queue = Queue('flush', connection=redis_conn)
    job = queue.enqueue('operator.add', 1, 2)
    _forget_scripts(redis_conn)

    answer = scripts.script('empty_queue')(line, ['flush'])
    line.close()

    assert answer == 1
    assert not redis_conn.exists(job.key)


def test_a_worker_goes_on_after_its_scripts_are_flushed(redis_conn: redis.Redis) -> None:
    queue = Queue('flush', connection=redis_conn)
    jobs = [queue.enqueue('operator.add', i, 1) for i in range(3)]
    _forget_scripts(redis_conn)

    SimpleWorker([queue], connection=redis_conn).work(burst=True, logging_level='WARNING')

    assert [job.get_status() for job in jobs] == [JobStatus.FINISHED] * 3
    assert [job.return_value() for job in jobs] == [1, 2, 3]


def _libraries(connection: redis.Redis) -> list[str]:
    """FUNCTION LIST's library names (a flat list per library under RESP2, a map under RESP3)."""
    found = []
    for library in connection.function_list():
        fields = library if isinstance(library, dict) else dict(zip(library[::2], library[1::2], strict=True))
        found.append(fields[b'library_name'].decode())
    return found


def _script_calls(connection: redis.Redis) -> dict[str, int]:
    stats = connection.info('commandstats')
    return {name: int(stats.get(f'cmdstat_{name}', {}).get('calls', 0)) for name in ('fcall', 'evalsha', 'eval')}


def test_a_server_with_functions_runs_each_script_as_a_function_loaded_once(connection: redis.Redis) -> None:
    """One library per script and version (its name carries the text's sha1), loaded by the first call
    that missed it; every call after it is one FCALL."""
    connection.function_flush()
    queue = Queue('functions', connection=connection)
    queue.enqueue('operator.add', 1, 2)
    queue.enqueue('operator.add', 3, 4)

    enqueue = scriptload.script('enqueue_jobs')
    assert enqueue.function in _libraries(connection) and enqueue.function.endswith(enqueue.sha[:16])
    assert len(queue.job_ids) == 2


def test_a_server_with_functions_calls_them(redis_conn: redis.Redis) -> None:
    queue = Queue('functions', connection=redis_conn)
    queue.enqueue('operator.add', 1, 2)  # (loaded, if it was not)
    redis_conn.config_resetstat()

    queue.enqueue('operator.add', 3, 4)
    SimpleWorker([queue], connection=redis_conn).work(burst=True, logging_level='WARNING')

    calls = _script_calls(redis_conn)
    assert calls['fcall'] >= 2 and calls['evalsha'] == 0 and calls['eval'] == 0


@pytest.fixture
def no_functions_user(redis_conn: redis.Redis, redis_url: str) -> redis.Redis:
    """A client whose ACL user may run scripts but neither FCALL nor FUNCTION: as a Redis 6 server answers."""
    name, password = f'nofn-{uuid.uuid4().hex[:8]}', uuid.uuid4().hex
    redis_conn.acl_setuser(
        name,
        enabled=True,
        passwords=[f'+{password}'],
        keys=['*'],
        channels=['*'],
        commands=['+@all', '-fcall', '-function'],
    )
    client = redis.Redis.from_url(redis_url, username=name, password=password)
    yield client
    client.close()
    redis_conn.acl_deluser(name)


def test_a_client_that_may_not_call_functions_uses_scripts(
    redis_conn: redis.Redis, no_functions_user: redis.Redis
) -> None:
    queue = Queue('scripts', connection=no_functions_user)
    redis_conn.function_flush()
    queue.enqueue('operator.add', 1, 2)
    redis_conn.config_resetstat()

    jobs = [queue.enqueue('operator.add', i, 1) for i in range(3)]
    SimpleWorker([queue], connection=no_functions_user).work(burst=True, logging_level='WARNING')

    assert [job.get_status() for job in jobs] == [JobStatus.FINISHED] * 3
    calls = _script_calls(redis_conn)
    assert calls['fcall'] == 0 and calls['evalsha'] >= 4
    assert _libraries(redis_conn) == []  # (it could not load any)


def test_the_worker_line_reloads_a_flushed_function(redis_conn: redis.Redis) -> None:
    line = scripts.DirectLine(redis_conn)
    queue = Queue('flush', connection=redis_conn)
    queue.enqueue('operator.add', 1, 2)
    scripts.script('empty_queue')(line, ['flush'])  # (loaded)
    job = queue.enqueue('operator.add', 1, 2)
    redis_conn.function_flush()
    redis_conn.config_resetstat()

    answer = scripts.script('empty_queue')(line, ['flush'])
    line.close()

    assert answer == 1 and not redis_conn.exists(job.key)
    assert _script_calls(redis_conn)['fcall'] == 2  # (missed, loaded, sent again)
    assert scriptload.script('empty_queue').function in _libraries(redis_conn)


def test_a_spliced_command_is_the_command_packed_whole() -> None:
    """What the worker line sends for pre-packed runs of arguments is byte for byte execute_command's."""
    from hiredis import pack_command

    from rqfast.scriptload import Packed, packed

    sent: list[bytes] = []

    class Line:
        def send_packed_command(self, chunks: list[bytes], check_health: bool = True) -> None:
            sent.extend(chunks)

        def read_response(self) -> str:
            return 'ok'

    line = scripts.DirectLine.__new__(scripts.DirectLine)
    line._pack = pack_command
    line._client = type('Client', (), {'connection': Line()})()
    runs: list[list[object]] = [['EVALSHA', 'f' * 40, 0], ['é', 1, 2.5, b'\x80\x04N.', ''], [], ['last', 7]]
    pieces: list[object] = [runs[0], packed(runs[1]), runs[2], packed(runs[3])]

    assert isinstance(pieces[1], Packed)
    assert line.execute_spliced(pieces) == 'ok'
    assert sent == [pack_command(tuple(a for run in runs for a in run))]


def test_a_replica_gets_scripts(redis_conn: redis.Redis, tmp_path: Path) -> None:
    """A replica takes no FUNCTION LOAD and no FCALL of a function that may write: its client calls
    scripts, as before functions, and a script that only reads runs there."""
    from tests import redis_servers

    port = redis_servers.free_port()
    primary = redis_conn.connection_pool.connection_kwargs['port']
    replica = redis.Redis(port=port)
    args = ['--port', str(port), '--bind', '127.0.0.1', '--save', '', '--replicaof', '127.0.0.1', str(primary)]
    with redis_servers.server(tmp_path, args, replica.ping, 'replica'):
        assert scripts.release_lock(replica, 'rq:no-such-lock', 'token') is False  # (a GET, nothing written)
        assert replica.connection_pool in scriptload._NO_FUNCTIONS
        redis_conn.set('rq:held-lock', 'token')
        deadline = time.monotonic() + 60  # (replicated: the replica's first sync may take a while here)
        while replica.get('rq:held-lock') is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert replica.get('rq:held-lock') == b'token'
        with pytest.raises(redis.exceptions.ResponseError, match='READONLY|read only'):
            scripts.release_lock(replica, 'rq:held-lock', 'token')  # (its DEL: a write, refused there)
    replica.close()


def test_a_server_that_knows_no_fcall_is_told_by_its_refusal() -> None:
    """Redis 7 quotes an unknown command, Redis 6 (and others) put it in backticks."""
    assert scriptload._unknown_command("ERR unknown command 'FCALL', with args beginning with: 'x'", 'fcall')
    assert scriptload._unknown_command('ERR unknown command `FCALL`, with args beginning with: `x`', 'fcall')
    assert scriptload._unknown_command('ERR unknown command `FUNCTION`, with args beginning with:', 'function')
    assert not scriptload._unknown_command('ERR Function not found', 'fcall')
    assert not scriptload._unknown_command("ERR unknown command 'EVALSHA'", 'fcall')
