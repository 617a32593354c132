"""The enqueue path's shortcuts keep RQ's behaviour: a script call sent on a pooled connection by hand
(scriptload._send_pooled) still goes through instrumentation, subclasses, and redis-py's retries; job
ids are uuid4 strings; parse_args without keyword arguments answers as with them."""

from __future__ import annotations

import functools
import os
import uuid
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.connection import Connection
from redis.retry import Retry

from rqfast import Queue, defaults, keys, scriptload

J = 'tests.jobs'
SCRIPT_CALLS = ('FCALL', 'EVALSHA')  # a function where the server has them (Redis 7), else a script


def test_a_plain_client_sends_script_calls_on_its_pool(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = Queue('pooled', connection=redis_conn)
    assert scriptload._plain_pool(redis_conn) is redis_conn.connection_pool
    queue.enqueue(f'{J}.noop')  # (the script loaded: a first call on a fresh server is sent twice)
    queue.empty()
    sent: list[Any] = []
    send_pooled = scriptload._send_pooled
    monkeypatch.setattr(
        scriptload, '_send_pooled', lambda pool, command: sent.append(command[0]) or send_pooled(pool, command)
    )

    jobs = [queue.enqueue(f'{J}.noop') for _ in range(3)]

    assert sent[0] in SCRIPT_CALLS and sent == [sent[0]] * 3
    assert queue.job_ids == [job.id for job in jobs]
    assert redis_conn.hget(jobs[0].key, 'status') == b'queued'
    assert not redis_conn.connection_pool._in_use_connections  # type: ignore[attr-defined]


def test_an_instrumented_execute_command_sees_the_script_calls(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    original = redis.Redis.execute_command

    def traced(self: redis.Redis, *args: Any, **options: Any) -> Any:  # as OpenTelemetry's wrapper
        seen.append(args[0])
        return original(self, *args, **options)

    monkeypatch.setattr(redis.Redis, 'execute_command', traced)
    Queue('traced', connection=redis_conn).enqueue(f'{J}.noop')

    assert set(SCRIPT_CALLS) & set(seen)


def test_an_execute_command_wrapped_before_rqfast_was_imported_sees_the_calls(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[Any] = []
    original = redis.Redis.execute_command

    @functools.wraps(original)
    def traced(self: redis.Redis, *args: Any, **options: Any) -> Any:  # as Sentry's patch
        seen.append(args[0])
        return original(self, *args, **options)

    monkeypatch.setattr(redis.Redis, 'execute_command', traced)
    monkeypatch.setattr(scriptload, '_EXECUTE_COMMAND', traced)  # (what rqfast saw at its import)
    Queue('traced', connection=redis_conn).enqueue(f'{J}.noop')

    assert set(SCRIPT_CALLS) & set(seen)


def test_a_subclass_gets_its_own_execute_command(redis_conn: redis.Redis) -> None:
    class Counting(redis.Redis):
        calls = 0

        def execute_command(self, *args: Any, **options: Any) -> Any:
            Counting.calls += 1
            return super().execute_command(*args, **options)

    client = Counting(connection_pool=redis_conn.connection_pool)
    Queue('sub', connection=client).enqueue(f'{J}.noop')

    assert Counting.calls >= 1


def _fail_first_send(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The first script call is dropped before it is sent; the count of script calls sent."""
    sent = [0]
    original = Connection.send_packed_command

    def flaky(self: Connection, command: Any, check_health: bool = True) -> None:
        if any(call.encode() in b''.join(command[:1]) for call in SCRIPT_CALLS):  # (not a new connection's handshake)
            sent[0] += 1
            if sent[0] == 1:
                self.disconnect()
                raise redis.ConnectionError('dropped (test)')
        original(self, command, check_health)

    monkeypatch.setattr(Connection, 'send_packed_command', flaky)
    return sent


def test_a_dropped_connection_is_retried_as_redis_py_does(
    redis_url: str, redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = redis.Redis.from_url(redis_url, retry=Retry(NoBackoff(), 2))
    sent = _fail_first_send(monkeypatch)

    job = Queue('retried', connection=client).enqueue(f'{J}.noop')

    assert sent[0] == 2
    assert redis_conn.lrange('rq:queue:retried', 0, -1) == [job.id.encode()]


def test_without_retries_the_connection_error_is_raised(
    redis_url: str, redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = redis.Redis.from_url(redis_url, retry=Retry(NoBackoff(), 0))
    sent = _fail_first_send(monkeypatch)

    with pytest.raises(redis.ConnectionError):
        Queue('unretried', connection=client).enqueue(f'{J}.noop')

    assert sent[0] == 1
    assert not client.connection_pool._in_use_connections  # type: ignore[attr-defined]
    assert redis_conn.llen('rq:queue:unretried') == 0


@pytest.mark.parametrize(
    'raw', [bytes(16), b'\xff' * 16, bytes(range(16)), os.urandom(16)], ids=['zeros', 'ones', 'counting', 'random']
)
def test_job_ids_are_uuid4_strings_of_the_same_random_bytes(raw: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keys.os, 'urandom', lambda n: raw)

    assert keys.new_job_id() == str(uuid.UUID(bytes=raw, version=4))


def test_parse_args_without_keywords_gives_every_option_its_default() -> None:
    plain = Queue.parse_args(f'{J}.noop', 1, 2)
    with_keyword = Queue.parse_args(f'{J}.noop', 1, 2, x=3)  # (the slow path: the options are popped)

    assert plain._replace(kwargs=None) == with_keyword._replace(kwargs=None)
    assert plain.kwargs == {}


def test_enqueue_many_pushes_plain_and_prioritized_jobs_in_order(redis_conn: redis.Redis) -> None:
    """enqueue_jobs.lua pushes plain jobs together in one RPUSH: one with a priority (pushed on its own)
    still lands between the jobs before and after it, as with one push per job."""
    queue = Queue('order', connection=redis_conn)
    datas = [Queue.prepare_data(f'{J}.noop', priority=5 if i % 3 == 1 else None) for i in range(8)]
    datas.insert(4, Queue.prepare_data(f'{J}.noop', at_front=True))

    jobs = queue.enqueue_many(datas)

    in_list = [job_id.decode() for job_id in redis_conn.lrange('rq:queue:order', 0, -1)]
    assert in_list == [jobs[4].id] + [job.id for job in jobs[:4] + jobs[5:]]


def test_a_chunk_of_enqueue_many_fits_one_rpush() -> None:
    """enqueue_jobs.lua pushes a call's plain jobs with one unpack(), which Lua (in Redis) limits to
    LUAI_MAXCSTACK (8,000) values."""
    assert defaults.ENQUEUE_CHUNK < 8000
