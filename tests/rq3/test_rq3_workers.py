"""Jobs cross between rq 3.0 and rqfast: an rqfast worker runs what rq 3.0 enqueued (dependents
included), an rq 3.0 worker runs what rqfast enqueued; both are checked against rq 3.0 running its
own jobs (the oracle), read back through rq 3.0 and through rqfast.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
import redis
import rq
import rq.results
import rq.worker
from rq import RateLimit

import rqfast
import rqfast.worker
from tests.rq3 import probe_jobs

pytestmark = pytest.mark.timeout(60)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAIRS = [('rq', 'rq'), ('rq', 'rqfast'), ('rqfast', 'rq')]  # (producer, worker); the first is the oracle


def queue(impl: str, conn: redis.Redis, name: str = 'q') -> Any:
    return (rq.Queue if impl == 'rq' else rqfast.Queue)(name, connection=conn)


def run_worker(impl: str, conn: redis.Redis, name: str = 'w3') -> None:
    cls = rq.worker.SimpleWorker if impl == 'rq' else rqfast.worker.SimpleWorker
    cls(['q'], name=name, connection=conn).work(burst=True, logging_level='WARNING')


def outcome(conn: redis.Redis, ids: list[str]) -> dict[str, Any]:
    """Status, return value and result type of each job, as rq 3.0 and as rqfast read them."""
    out: dict[str, Any] = {}
    for job_id in ids:
        job3 = rq.job.Job.fetch(job_id, connection=conn)
        jobf = rqfast.Job.fetch(job_id, connection=conn)
        result = job3.latest_result()
        out[job_id] = (
            str(job3.get_status().value),
            str(jobf.get_status()),
            job3.return_value(),
            jobf.return_value(),
            int(result.type.value) if result else None,
        )
    out['registries'] = {
        name: sorted(m.decode() for m in conn.zrange(f'rq:{name}:q', 0, -1))
        for name in ('finished', 'failed', 'deferred', 'wip', 'ready')
    }
    out['queue'] = [m.decode() for m in conn.lrange('rq:queue:q', 0, -1)]
    return out


def chain(producer: str, conn: redis.Redis) -> list[str]:
    """A three-job chain, a job depending on two parents, and a failing job with a dependent."""
    q = queue(producer, conn)
    a = q.enqueue(probe_jobs.add, 1, 1, job_id='a')
    b = q.enqueue(probe_jobs.add, 2, 2, job_id='b', depends_on=a)
    q.enqueue(probe_jobs.add, 3, 3, job_id='c', depends_on=b)
    d = q.enqueue(probe_jobs.add, 4, 4, job_id='d')
    q.enqueue(probe_jobs.add, 5, 5, job_id='e', depends_on=[a, d])
    bad = q.enqueue(probe_jobs.boom, 'no', job_id='bad')
    q.enqueue(probe_jobs.add, 6, 6, job_id='after_bad', depends_on=bad)
    return ['a', 'b', 'c', 'd', 'e', 'bad', 'after_bad']


def run_chain(producer: str, worker: str, conn: redis.Redis) -> dict[str, Any]:
    conn.flushdb()
    ids = chain(producer, conn)
    run_worker(worker, conn)
    return outcome(conn, ids)


@pytest.mark.parametrize(('producer', 'worker'), PAIRS[1:])
def test_dependents_cross_between_rq3_and_rqfast(producer: str, worker: str, redis_conn: redis.Redis) -> None:
    expected = run_chain('rq', 'rq', redis_conn)
    assert expected['c'][0] == 'finished' and expected['after_bad'][0] == 'deferred'
    assert run_chain(producer, worker, redis_conn) == expected


def test_rqfast_dependent_released_by_rq3_worker_runs_on_rqfast(redis_conn: redis.Redis) -> None:
    """rq 3.0 releases a dependent through ready_to_enqueue; an rqfast worker then runs it."""
    q = rq.Queue('q', connection=redis_conn)
    parent = rqfast.Queue('q', connection=redis_conn).enqueue(probe_jobs.add, 1, 2, job_id='p')
    rqfast.Queue('q', connection=redis_conn).enqueue(probe_jobs.add, 3, 4, job_id='kid', depends_on=parent)
    rq.worker.SimpleWorker([q], name='rq3', connection=redis_conn).work(burst=True, max_jobs=1)
    assert rqfast.Job.fetch('kid', connection=redis_conn).get_status() == 'queued'
    assert redis_conn.zcard('rq:ready:q') == 0
    run_worker('rqfast', redis_conn)
    assert rq.job.Job.fetch('kid', connection=redis_conn).return_value() == 7


def rate_limited(producer: str, worker: str, conn: redis.Redis) -> dict[str, Any]:
    conn.flushdb()
    rl = RateLimit(key='reports', concurrency=2)
    q = rq.Queue('q', connection=conn)
    ids = [q.enqueue(probe_jobs.add, n, n, job_id=f'rl{n}', rate_limit=rl).id for n in range(4)]
    run_worker(worker, conn)
    out = outcome(conn, ids)
    out['rl_keys'] = sorted(k.decode() for k in conn.keys('rq:rl*'))
    return out


def test_rq3_rate_limited_jobs_on_rqfast_worker(redis_conn: redis.Redis) -> None:
    expected = rate_limited('rq', 'rq', redis_conn)
    assert all(expected[f'rl{n}'][0] == 'finished' for n in range(4))
    assert rate_limited('rq', 'rqfast', redis_conn) == expected


def forking_worker(impl: str, url: str, name: str) -> subprocess.Popen[bytes]:
    """A forking worker (rq 3.0's `rq worker` or `rqfast worker`) in a process of its own, --burst on q."""
    module = 'rq.cli' if impl == 'rq' else 'rqfast.cli'
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    return subprocess.Popen(
        [sys.executable, '-m', module, 'worker', '--burst', '-u', url, '-n', name, 'q'],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a stop/kill of the horse's process group must never reach us
    )


def wait_for(check: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError('condition not met in time')


@pytest.mark.parametrize('impl', ['rq', 'rqfast'])
def test_rq3_send_stop_execution_command(impl: str, redis_url: str, redis_conn: redis.Redis) -> None:
    """rq 3.0 finds the execution through Worker.all() and stops it; the job ends stopped, as with rq 3.0."""
    from rq.command import send_stop_execution_command

    job = rq.Queue('q', connection=redis_conn).enqueue(probe_jobs.wait_for_key, redis_url, 'never', 30)
    proc = forking_worker(impl, redis_url, 'stoppable')
    try:
        wait_for(lambda: redis_conn.exists('running:never'))
        [worker] = wait_for(lambda: [w for w in rq.Worker.all(connection=redis_conn) if w.get_current_executions(True)])
        [execution] = worker.get_current_executions()
        assert execution.job_id == job.id and execution.worker_name == 'stoppable'
        send_stop_execution_command(redis_conn, job.id, execution.id)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    fetched = rq.job.Job.fetch(job.id, connection=redis_conn)
    assert fetched.get_status() == 'stopped'
    assert fetched.latest_result().type == rq.results.Result.Type.FAILED
    assert redis_conn.scard('rq:worker:stoppable:executions') == 0
