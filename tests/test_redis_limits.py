"""What production Redis does to a worker and a producer (issue 32): a full memory, an evicting policy.

Each test runs its own redis-server (tests/redis_servers.py), so it can set maxmemory and the policy.

- full memory (maxmemory, noeviction): an enqueue raises rqfast.exceptions.RedisFullError (a redis-py
  OutOfMemoryError) saying Redis is full, with nothing written; a worker whose finish is refused keeps
  the job, sends the finish again with backoff (logged once, and once more when it went through) and
  records it once Redis has room, in every worker class;
- an evicting policy: the worker warns once at start; a claimed id whose job hash was evicted is
  dropped and logged (the id has no job hash), the worker goes on.

The same under load, with every class at once, is in tests/chaos/test_chaos.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from click.testing import CliRunner

from rqfast import Queue, SimpleWorker, SpawnWorker, Worker, scriptload
from rqfast.cli import main
from rqfast.exceptions import RedisFullError, RedisNoReplyError
from rqfast.worker import waiting

try:
    import fleet
    import redis_servers
    from silent_proxy import SilentProxy
except ImportError:  # tests/ became a package
    from tests import fleet, redis_servers  # type: ignore[no-redef]
    from tests.silent_proxy import SilentProxy  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(120)
CLASSES = ('SimpleWorker', 'Worker', 'SpawnWorker')


@pytest.fixture
def private(tmp_path: Path) -> Iterator[redis.Redis]:
    """A redis-server of this test's own (noeviction, Redis's default policy)."""
    port = redis_servers.free_port()
    conn = redis.Redis(port=port)
    args = ['--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
    with redis_servers.server(tmp_path / 'redis', args, conn.ping):
        yield conn
    conn.close()


def fill(conn: redis.Redis) -> None:
    """Make the server full: 4 MB of filler, then maxmemory below what it uses (noeviction: nothing goes)."""
    for i in range(40):
        conn.set(f'filler:{i}', b'x' * 100_000)
    used = int(conn.info('memory')['used_memory'])
    conn.config_set('maxmemory', used - 1_000_000)


def free(conn: redis.Redis) -> None:
    """Memory frees (the filler goes), the limit stays."""
    conn.delete(*[f'filler:{i}' for i in range(40)])


def test_an_enqueue_into_a_full_redis_raises_one_clear_error(private: redis.Redis) -> None:
    q = Queue('q', connection=private)
    fill(private)
    with pytest.raises(RedisFullError) as raised:
        q.enqueue('builtins.len', 'abc')
    error = raised.value
    assert isinstance(error, redis.exceptions.OutOfMemoryError) and isinstance(error, redis.RedisError)
    assert str(error).startswith('rqfast: Redis is full (used memory > maxmemory, policy noeviction)')
    assert 'nothing of it written' in str(error)
    assert private.keys('rq:job:*') == [] and q.count == 0  # nothing of it written
    with pytest.raises(RedisFullError):
        q.enqueue_many([Queue.prepare_data('builtins.len', args=('ab',))])
    free(private)
    job = q.enqueue('builtins.len', 'abc')  # room again: it goes through
    assert q.job_ids == [job.id]


def test_an_async_enqueue_into_a_full_redis_raises_the_same_error(private: redis.Redis) -> None:
    import asyncio

    import redis.asyncio as aredis

    from rqfast.asyncio import AsyncQueue

    port = private.connection_pool.connection_kwargs['port']

    async def scenario() -> None:
        client = aredis.Redis(port=port)
        try:
            q = AsyncQueue('q', connection=client)
            await q.enqueue('builtins.len', 'a')
            fill(private)
            with pytest.raises(RedisFullError, match='Redis is full'):
                await q.enqueue('builtins.len', 'b')
            free(private)
            await q.enqueue('builtins.len', 'c')
        finally:
            await client.aclose()

    asyncio.run(scenario())
    assert Queue('q', connection=private).count == 2


@pytest.mark.parametrize('worker_class', CLASSES)
def test_a_refused_finish_is_kept_and_recorded_once_redis_has_room(
    private: redis.Redis, tmp_path: Path, worker_class: str
) -> None:
    port = private.connection_pool.connection_kwargs['port']
    marks = tmp_path / 'marks'
    marks.mkdir()
    q = Queue('q', connection=private)
    job = q.enqueue('chaos_jobs.mark', str(marks), 1.5)
    after = q.enqueue('chaos_jobs.mark', str(marks), 0)
    worker = fleet.WorkerProcess(
        f'redis://127.0.0.1:{port}/0', {'class': worker_class, 'idle_wakeup': 1}, tmp_path / 'worker.log'
    )
    try:
        fleet.wait_until(lambda: fleet.runs(marks, job.id)[0] == 1, 60, 'the job to start')
        fill(private)  # while it runs: its finish is refused
        fleet.wait_until(lambda: fleet.runs(marks, job.id)[1] == 1, 30, 'the body to end')
        time.sleep(4)  # its finish refused, sent again with backoff (2 s at most between tries)
        assert private.hget(job.key, 'status') == b'started'
        assert worker.alive()
        free(private)
        fleet.wait_until(lambda: private.hget(after.key, 'status') == b'finished', 30, 'the worker to go on')
        assert private.hget(job.key, 'status') == b'finished'
        assert fleet.runs(marks, job.id) == (1, 1) and fleet.runs(marks, after.id) == (1, 1)
        assert private.xlen(f'rq:results:{job.id}') == 1
        lines = worker.log().splitlines()
        refused = [line for line in lines if f'could not record job {job.id}' in line]
        assert len(refused) == 1 and 'rqfast: Redis is full' in refused[0], refused  # logged once
        assert sum(f'recorded job {job.id} once Redis had room again' in line for line in lines) == 1
    finally:
        worker.stop()


@pytest.mark.parametrize('worker_class', ['SimpleWorker', 'Worker'])
def test_a_job_running_while_redis_is_full_stays_alive(private: redis.Redis, tmp_path: Path, worker_class: str) -> None:
    """The heartbeat is the one script a full Redis still runs (scriptload.ALLOW_OOM): the running job's
    started-registry entry is renewed, so no recovery pass takes it for abandoned once Redis has room."""
    port = private.connection_pool.connection_kwargs['port']
    marks = tmp_path / 'marks'
    marks.mkdir()
    job = Queue('q', connection=private).enqueue('chaos_jobs.mark', str(marks), 6)
    options = {'class': worker_class, 'idle_wakeup': 1, 'worker': {'job_monitoring_interval': 3}}
    worker = fleet.WorkerProcess(f'redis://127.0.0.1:{port}/0', options, tmp_path / 'worker.log')
    try:
        fleet.wait_until(lambda: fleet.runs(marks, job.id)[0] == 1, 60, 'the job to start')
        [(_, claimed)] = private.zrange('rq:wip:q', 0, -1, withscores=True)
        fleet.wait_until(  # (a first beat: the heartbeat's function is loaded before Redis is full)
            lambda: private.zrange('rq:wip:q', 0, -1, withscores=True)[0][1] > claimed, 10, 'a first beat'
        )
        fill(private)
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            private.set('one-more', 'x')  # full indeed
        [(_, first)] = private.zrange('rq:wip:q', 0, -1, withscores=True)
        fleet.wait_until(lambda: private.zrange('rq:wip:q', 0, -1, withscores=True)[0][1] > first, 10, 'a beat')
        assert 'heartbeat failed' not in worker.log()
        free(private)
        fleet.wait_until(lambda: private.hget(job.key, 'status') == b'finished', 30, 'the job to be recorded')
        assert fleet.runs(marks, job.id) == (1, 1)
    finally:
        worker.stop()


# --- an evicting policy


@contextmanager
def redis_with(tmp_path: Path, *options: str) -> Iterator[redis.Redis]:
    port = redis_servers.free_port()
    conn = redis.Redis(port=port)
    args = ['--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', *options]
    with redis_servers.server(tmp_path / 'redis', args, conn.ping):
        yield conn
    conn.close()


EVICTING = "Redis's maxmemory-policy is allkeys-lru, not noeviction"


@pytest.mark.parametrize('worker_class', [SimpleWorker, Worker, SpawnWorker], ids=lambda c: c.__name__)
def test_a_worker_warns_once_at_start_of_an_evicting_policy(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, worker_class: type
) -> None:
    with redis_with(tmp_path, '--maxmemory-policy', 'allkeys-lru') as conn:
        job = Queue('q', connection=conn).enqueue('builtins.len', 'abc')
        with caplog.at_level(logging.WARNING, logger='rqfast'):
            worker_class(['q'], connection=conn).work(burst=True, logging_level='WARNING')
        assert conn.hget(job.key, 'status') == b'finished'
    warned = [r for r in caplog.records if EVICTING in r.getMessage()]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    assert 'set maxmemory-policy noeviction' in warned[0].getMessage()


def test_no_warning_with_noeviction_nor_when_config_get_is_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with redis_with(tmp_path / 'a') as conn, caplog.at_level(logging.WARNING, logger='rqfast'):
        SimpleWorker(['q'], connection=conn).work(burst=True, logging_level='WARNING')
    # a managed Redis that refuses CONFIG (here: renamed away), with an evicting policy: nothing said
    with redis_with(tmp_path / 'b', '--maxmemory-policy', 'allkeys-lru', '--rename-command', 'CONFIG', '') as conn:
        with pytest.raises(redis.ResponseError):
            conn.config_get('maxmemory-policy')
        job = Queue('q', connection=conn).enqueue('builtins.len', 'abc')
        with caplog.at_level(logging.WARNING, logger='rqfast'):
            SimpleWorker(['q'], connection=conn).work(burst=True, logging_level='WARNING')
        assert conn.hget(job.key, 'status') == b'finished'
    assert not [r for r in caplog.records if 'maxmemory-policy' in r.getMessage()]


def test_rqfast_info_warns_of_an_evicting_policy(tmp_path: Path) -> None:
    with redis_with(tmp_path, '--maxmemory-policy', 'volatile-ttl') as conn:
        port = conn.connection_pool.connection_kwargs['port']
        result = CliRunner().invoke(main, ['info', '--url', f'redis://127.0.0.1:{port}/0'])
        assert result.exit_code == 0, result.output
        assert "Warning: Redis's maxmemory-policy is volatile-ttl, not noeviction" in result.output
        conn.config_set('maxmemory-policy', 'noeviction')
        result = CliRunner().invoke(main, ['info', '--url', f'redis://127.0.0.1:{port}/0'])
        assert result.exit_code == 0 and 'maxmemory-policy' not in result.output


@pytest.mark.parametrize('worker_class', [SimpleWorker, Worker, SpawnWorker], ids=lambda c: c.__name__)
def test_evicted_job_hashes_are_dropped_and_logged_the_worker_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, worker_class: type
) -> None:
    """What eviction does to queued jobs: Redis evicts job hashes (volatile-random: keys with a TTL, here
    the jobs' hashes and nothing else), their ids stay queued. Each claim of such an id drops it and
    says so, once; the worker goes on with the rest. The evicted jobs are gone for good: hence the
    warning, and noeviction."""
    with redis_with(tmp_path, '--maxmemory-policy', 'volatile-random') as conn:
        q = Queue('q', connection=conn)
        jobs = [q.enqueue('builtins.len', 'x' * 2000, ttl=600) for _ in range(100)]
        for i in range(20):
            conn.set(f'filler:{i}', b'x' * 100_000)
        conn.config_set('maxmemory', int(conn.info('memory')['used_memory']) - 60_000)
        conn.ping()  # (Redis evicts before a command while it is over maxmemory)
        conn.config_set('maxmemory', 0)  # no more evictions: the lookups below must not evict what they read
        evicted = [job.id for job in jobs if not conn.exists(job.key)]
        assert int(conn.info('stats')['evicted_keys']) == len(evicted) and 0 < len(evicted) < 100
        with caplog.at_level(logging.WARNING, logger='rqfast'):
            worker_class(['q'], connection=conn).work(burst=True, logging_level='WARNING')
        statuses = [conn.hget(job.key, 'status') for job in jobs if job.id not in evicted]
        assert statuses == [b'finished'] * (100 - len(evicted)) and q.count == 0
    messages = [r.getMessage() for r in caplog.records]
    for job_id in evicted:
        dropped = [m for m in messages if job_id in m]
        assert len(dropped) == 1 and 'it has no job hash (deleted, expired or evicted)' in dropped[0], dropped
    assert sum('maxmemory-policy is volatile-random' in m for m in messages) == 1


# --- a silent network path (tests/silent_proxy.py): bounds shortened here, the defaults in tests/chaos


@pytest.fixture
def proxy(private: redis.Redis) -> Iterator[SilentProxy]:
    silent = SilentProxy(private.connection_pool.connection_kwargs['port'])
    yield silent
    silent.close()


def test_an_enqueue_over_a_silent_path_raises_one_clear_error_within_the_bound(
    private: redis.Redis, proxy: SilentProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scriptload, 'REPLY_TIMEOUT', 2)
    producer = redis.Redis(port=proxy.port, socket_timeout=None)  # (redis-py's default before 6: no timeout)
    q = Queue('q', connection=producer)
    q.enqueue('builtins.len', 'a')  # (a connection in the pool, made while the path was fine)
    proxy.silence()
    started = time.monotonic()
    with pytest.raises(RedisNoReplyError) as raised:
        q.enqueue('builtins.len', 'b')
    took = time.monotonic() - started
    assert isinstance(raised.value, redis.exceptions.TimeoutError)
    assert str(raised.value).startswith('rqfast: no reply from Redis to the enqueue_jobs call in time (at most 2 s)')
    assert 'it may or may not have run' in str(raised.value)
    assert took < 2 + 5, took  # the bound, the client's retry backoff aside
    proxy.restore()
    q.enqueue('builtins.len', 'c')  # a new connection: the path is back
    assert Queue('q', connection=private).count >= 2


def test_an_async_enqueue_over_a_silent_path_raises_the_same_error_within_the_bound(
    private: redis.Redis, proxy: SilentProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rqfast.asyncio's calls share a line (one connection): a silent path fails every call waiting on it,
    whatever the client's socket_timeout (none here), and the next call opens a new connection."""
    import asyncio

    import redis.asyncio as aredis

    from rqfast import defaults
    from rqfast.asyncio import AsyncQueue

    monkeypatch.setattr(defaults, 'REPLY_TIMEOUT', 2)

    async def scenario() -> float:
        client = aredis.Redis(port=proxy.port, socket_timeout=None)
        try:
            q = AsyncQueue('q', connection=client)
            await q.enqueue('builtins.len', 'a')  # (the line's connection, made while the path was fine)
            proxy.silence()
            started = time.monotonic()
            waiting = [q.enqueue('builtins.len', str(i)) for i in range(3)]
            outcomes = await asyncio.wait_for(asyncio.gather(*waiting, return_exceptions=True), 30)
            took = time.monotonic() - started
            assert all(isinstance(o, RedisNoReplyError) for o in outcomes), outcomes
            assert 'may or may not have run' in str(outcomes[0])
            proxy.restore()
            await q.enqueue('builtins.len', 'c')  # a new connection: the path is back
            return took
        finally:
            await client.aclose()

    took = asyncio.run(scenario())
    assert 2 <= took < 2 + 5, took
    assert Queue('q', connection=private).count >= 2


def test_an_idle_worker_notices_a_silent_path_and_runs_the_queue_once_it_returns(
    private: redis.Redis, proxy: SilentProxy, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The worker's blocking wait goes unanswered: noticed within its timeout + 1 + WAIT_REPLY_MARGIN s,
    logged, then it reconnects with backoff; a job enqueued while the path is silent runs once it is back."""
    monkeypatch.setattr(waiting, 'WAIT_REPLY_MARGIN', 1)
    monkeypatch.setattr(scriptload, 'REPLY_TIMEOUT', 3)
    over_proxy = redis.Redis(port=proxy.port)
    worker = SimpleWorker(['q'], connection=over_proxy)
    worker.dequeue_timeout = 1
    job: dict[str, Any] = {}

    def silence_then_restore() -> None:
        time.sleep(1.5)  # (the worker waits on its blocking move by now)
        proxy.silence()
        # (Redis itself is fine. Enqueued once the blocking move sent before the silence has timed out:
        # one that took the job would have lost its reply, leaving the id in the intermediate list until
        # maintenance puts it back, a minute later: docs/reliability.md)
        time.sleep(3)
        job['job'] = Queue('q', connection=private).enqueue('builtins.len', 'abc')
        time.sleep(5)
        proxy.restore()

    fault = threading.Thread(target=silence_then_restore)
    fault.start()
    with caplog.at_level(logging.ERROR, logger='rqfast'):
        worker.work(max_jobs=1, logging_level='WARNING')
    fault.join()
    assert job['job'].get_status() == 'finished'
    noticed = [r.getMessage() for r in caplog.records if 'no reply from Redis to a blocking wait' in r.getMessage()]
    assert noticed, [r.getMessage() for r in caplog.records]
    assert proxy.dropped > 0
