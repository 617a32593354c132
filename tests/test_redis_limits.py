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

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from rqfast import Queue
from rqfast.exceptions import RedisFullError

try:
    import fleet
    import redis_servers
except ImportError:  # tests/ became a package
    from tests import fleet, redis_servers  # type: ignore[no-redef]

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
