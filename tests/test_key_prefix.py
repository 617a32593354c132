"""RQ_KEY_PREFIX (RQ 3.0's setting): read from the environment at import, like RQ 3.0, so the tests
run rqfast in subprocesses with it set (as RQ 3.0's tests/test_key_prefix.py does). Beside rq 3.0,
tests/rq3/test_rq3_key_prefix.py checks that both read each other's prefixed state.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
import redis

pytestmark = pytest.mark.timeout(60)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PRODUCER = """
import sys
from datetime import timedelta
from redis import Redis
from rqfast import Queue, RateLimit
conn = Redis.from_url(sys.argv[1])
q = Queue('q', connection=conn)
a = q.enqueue('operator.add', 1, 2, job_id='a')
q.enqueue('operator.add', 3, 4, job_id='child', depends_on=a)
q.enqueue('operator.truediv', 1, 0, job_id='bad')
q.enqueue_in(timedelta(hours=1), 'operator.add', 5, 6, job_id='later')
limit = RateLimit(key='db', concurrency=1)
q.enqueue('operator.add', 7, 8, job_id='rl1', rate_limit=limit)
q.enqueue('operator.add', 9, 10, job_id='rl2', rate_limit=limit)
"""

SHUTDOWN = """
import sys
from redis import Redis
from rqfast.command import send_shutdown_command
send_shutdown_command(Redis.from_url(sys.argv[1]), sys.argv[2])
"""


def env_with(prefix: str) -> dict[str, str]:
    return {**os.environ, 'RQ_KEY_PREFIX': prefix, 'PYTHONPATH': ROOT}


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out waiting for {what}')
        time.sleep(0.05)


@pytest.mark.parametrize('prefix', ['myapp', '{rq}'])
def test_prefixed_producer_worker_and_commands_leave_no_rq_key(
    redis_url: str, redis_conn: redis.Redis, prefix: str
) -> None:
    env = env_with(prefix)
    worker = subprocess.Popen(
        [sys.executable, '-m', 'rqfast.cli', 'worker', '-u', redis_url, '--name', 'wp', '--with-scheduler', 'q'],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: redis_conn.exists(f'{prefix}:worker:wp'), 'the worker to register')
        subprocess.run([sys.executable, '-c', PRODUCER, redis_url], env=env, check=True)
        wait_for(lambda: redis_conn.zcard(f'{prefix}:finished:q') == 4, 'a, child, rl1 and rl2 to finish')
        # the shutdown command travels on the prefixed pub/sub channel
        subprocess.run([sys.executable, '-c', SHUTDOWN, redis_url, 'wp'], env=env, check=True)
        assert worker.wait(30) == 0, worker.stderr.read() if worker.stderr else ''
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        if worker.stderr:
            worker.stderr.close()
    names = sorted(key.decode() for key in redis_conn.scan_iter(count=1000))
    assert names, 'nothing was written'
    assert [name for name in names if not name.startswith(f'{prefix}:')] == []
    finished = {m.decode() for m in redis_conn.zrange(f'{prefix}:finished:q', 0, -1)}
    assert finished == {'a', 'child', 'rl1', 'rl2'}
    assert [m.decode() for m in redis_conn.zrange(f'{prefix}:failed:q', 0, -1)] == ['bad']
    assert [m.decode() for m in redis_conn.zrange(f'{prefix}:scheduled:q', 0, -1)] == ['later']
    assert redis_conn.smembers(f'{prefix}:queues') == {f'{prefix}:queue:q'.encode()}
    assert redis_conn.sismember(f'{prefix}:rl-keys', 'db')
    assert redis_conn.smembers(f'{prefix}:workers') == set()  # deregistered after the command
    assert redis_conn.hget(f'{prefix}:worker:wp', 'death')


def test_unprefixed_process_sees_none_of_a_prefixed_deployment(redis_url: str, redis_conn: redis.Redis) -> None:
    subprocess.run([sys.executable, '-c', PRODUCER, redis_url], env=env_with('other'), check=True)
    from rqfast import Queue

    assert Queue.all(connection=redis_conn) == []
    assert Queue('q', connection=redis_conn).count == 0
    assert Queue('q', connection=redis_conn).fetch_job('a') is None


@pytest.mark.parametrize('bad', ['app%s', 'team"x', 'rq\n', ''])
def test_invalid_prefix_is_refused_at_import(bad: str) -> None:
    out = subprocess.run([sys.executable, '-c', 'import rqfast'], env=env_with(bad), capture_output=True, text=True)
    assert out.returncode != 0
    assert 'Invalid RQ_KEY_PREFIX' in out.stderr


def test_default_prefix_is_rq() -> None:
    from rqfast import keys
    from rqfast.defaults import RQ_KEY_PREFIX

    assert RQ_KEY_PREFIX == 'rq'
    assert keys.PREFIX == 'rq:'
    assert keys.queue_key('q') == 'rq:queue:q'
