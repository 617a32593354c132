"""RQ 3.0's concurrency rate limits with rq 3.0.0 as the oracle: what rqfast's enqueue and finish write,
field by field against rq 3.0's own for the same calls, and a mixed fleet of rq 3.0 and rqfast workers
on one queue, rate-limited jobs from both producers, never more than `concurrency` at once.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis
import rq
import rq.command

import rqfast
from tests import rate_limit_jobs
from tests.snapshot import assert_same, implementation, normalize, snapshot

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
HELPER = ROOT / 'tests' / 'worker_process.py'


def api(impl: Any) -> Any:
    """rq's or rqfast's top-level package (RateLimit is exported there by both)."""
    return importlib.import_module(impl.name)


def enqueues(impl: Any, conn: redis.Redis) -> list[Any]:
    """Two keys: three jobs for two slots, and a key of one slot taken by a job at the front."""
    q = impl.Queue('q', connection=conn)
    reports = api(impl).RateLimit(key='reports', concurrency=2)
    single = api(impl).RateLimit(key='single', concurrency=1)
    jobs = [q.enqueue(rate_limit_jobs.took, n, job_id=f'r{n}', rate_limit=reports) for n in range(3)]
    q.enqueue(rate_limit_jobs.took, job_id='plain')
    jobs.append(q.enqueue(rate_limit_jobs.took, job_id='s0', rate_limit=single, at_front=True, ttl=300, meta={'a': 1}))
    jobs.append(q.enqueue(rate_limit_jobs.took, job_id='s1', rate_limit=single, description='waits', result_ttl=9))
    return [(job.id, job.get_status(refresh=False).value, job.enqueued_at is None) for job in jobs]


def rate_limit_state(conn: redis.Redis) -> dict[str, Any]:
    return normalize(snapshot(conn))


@pytest.mark.parametrize('producer', ['rqfast'])
def test_enqueue_writes_what_rq3_writes(producer: str, redis_conn: redis.Redis) -> None:
    redis_conn.flushdb()
    expected_answers = enqueues(implementation('rq'), redis_conn)
    expected = rate_limit_state(redis_conn)
    redis_conn.flushdb()
    answers = enqueues(implementation(producer), redis_conn)
    assert answers == expected_answers
    assert expected_answers[2] == ('r2', 'rate_limited', True) and expected_answers[0][1] == 'queued'
    assert_same(expected, rate_limit_state(redis_conn), 'rate-limited enqueue:')


def finish_one(impl: str, conn: redis.Redis) -> dict[str, Any]:
    """Two jobs for one slot; the worker runs one: its slot goes to the other, promoted onto the queue."""
    conn.flushdb()
    q = (rq.Queue if impl == 'rq' else rqfast.Queue)('q', connection=conn)
    single = (rq.RateLimit if impl == 'rq' else rqfast.RateLimit)(key='single', concurrency=1)
    for n in range(2):
        q.enqueue(rate_limit_jobs.took, n, job_id=f's{n}', rate_limit=single)
    worker_cls = rq.SimpleWorker if impl == 'rq' else rqfast.SimpleWorker
    worker_cls([q], connection=conn).work(burst=True, max_jobs=1)
    snap = snapshot(conn)
    wanted = {
        'rq:job:s1',
        'rq:queue:q',
        'rq:rl:single',
        'rq:rl:single:allowed',
        'rq:rl:single:rate_limited',
        'rq:rl-keys',
    }
    state = normalize(type(snap)({k: v for k, v in snap.items() if k in wanted}))
    state['s0 status'] = {'type': 'string', 'ttl': 'none', 'value': conn.hget('rq:job:s0', 'status')}
    return state


def test_finish_releases_and_promotes_as_rq3(redis_conn: redis.Redis) -> None:
    expected = finish_one('rq', redis_conn)
    assert expected['s0 status']['value'] == b'finished' and expected['rq:job:s1']['value']['status'] == 'queued'
    assert_same(expected, finish_one('rqfast', redis_conn), 'release after finish:')


def start(url: str, impl: str, name: str) -> subprocess.Popen[bytes]:
    options = {'impl': impl, 'name': name, 'queues': ['q'], 'work': {'logging_level': 'WARNING'}}
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')])}
    return subprocess.Popen([sys.executable, str(HELPER), url, json.dumps(options)], env=env)


def wait_until(condition: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.05)


def test_mixed_fleet_never_exceeds_the_concurrency(redis_url: str, redis_conn: redis.Redis) -> None:
    """30 rate-limited jobs (concurrency 2) from both producers, dependents included, on two rq 3.0 and two
    rqfast workers at once: each runs exactly once, never more than 2 at a time (counted inside the jobs),
    and both kinds of worker run some of them."""
    redis_conn.flushdb()
    names = [f'{impl}-{n}' for n, impl in enumerate(['rq', 'rqfast', 'rq', 'rqfast'])]
    workers = [start(redis_url, name.split('-')[0], name) for name in names]
    try:
        wait_until(lambda: redis_conn.scard('rq:workers') == len(names))
        tags = enqueue_fleet_jobs(redis_conn, redis_url)
        wait_until(lambda: redis_conn.hlen('rl:runs') == len(tags) and redis_conn.zcard('rq:finished:q') == 34)
        for name in names:
            rq.command.send_shutdown_command(redis_conn, name)
        for proc in workers:
            assert proc.wait(30) == 0
    finally:
        for proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    runs = {k.decode(): int(v) for k, v in redis_conn.hgetall('rl:runs').items()}
    assert runs == {tag: 1 for tag in tags}
    assert 1 <= int(redis_conn.get('rl:peak')) <= 2
    assert redis_conn.zcard('rq:rl:reports:allowed') == 0 and redis_conn.zcard('rq:rl:reports:rate_limited') == 0
    ran_on = {
        redis_conn.hget(f'rq:job:{job_id.decode()}', 'worker_name').decode().split('-')[0]
        for job_id in redis_conn.zrange('rq:finished:q', 0, -1)
    }
    assert ran_on == {'rq', 'rqfast'}


def enqueue_fleet_jobs(conn: redis.Redis, url: str) -> list[str]:
    """26 rate-limited jobs enqueued by rq 3.0 and rqfast in turn, and 4 rate-limited dependents of plain
    jobs, each enqueued by the other producer (so either kind of worker releases them)."""
    queues = {'rq': rq.Queue('q', connection=conn), 'rqfast': rqfast.Queue('q', connection=conn)}
    limits = {
        'rq': rq.RateLimit(key='reports', concurrency=2),
        'rqfast': rqfast.RateLimit(key='reports', concurrency=2),
    }
    tags = []
    for n in range(26):
        impl = ('rq', 'rqfast')[n % 2]
        tags.append(f't{n}')
        queues[impl].enqueue(rate_limit_jobs.limited, url, f't{n}', 0.03, rate_limit=limits[impl])
    for n, impl in enumerate(['rq', 'rqfast', 'rq', 'rqfast']):
        parent = queues[impl].enqueue(rate_limit_jobs.took, job_id=f'p{n}')
        other = 'rqfast' if impl == 'rq' else 'rq'
        tags.append(f'd{n}')
        queues[other].enqueue(
            rate_limit_jobs.limited, url, f'd{n}', 0.03, rate_limit=limits[other], depends_on=parent.id
        )
    return tags


def delete_while_running(worker: str, conn: redis.Redis, url: str) -> dict[str, Any]:
    """A rate-limited job deletes itself while it runs: it keeps its slot until it ends, then the waiter gets it."""
    conn.flushdb()
    q = rq.Queue('q', connection=conn)
    single = rq.RateLimit(key='reports', concurrency=1)
    q.enqueue(rate_limit_jobs.delete_myself, url, job_id='gone', rate_limit=single)
    q.enqueue(rate_limit_jobs.took, job_id='next', rate_limit=single)
    worker_cls = rq.SimpleWorker if worker == 'rq' else rqfast.SimpleWorker
    worker_cls([q], connection=conn).work(burst=True, max_jobs=1)
    return {
        'inside': conn.get('rl:inside'),
        'allowed': conn.zrange('rq:rl:reports:allowed', 0, -1),
        'waiting': conn.zrange('rq:rl:reports:rate_limited', 0, -1),
        'next': conn.hget('rq:job:next', 'status'),
        'queue': conn.lrange('rq:queue:q', 0, -1),
    }  # not compared: rq's finish saves the deleted job again, rqfast's does not (a difference in docs/switching.md)


def test_a_job_deleted_while_it_runs_as_rq3(redis_url: str, redis_conn: redis.Redis) -> None:
    expected = delete_while_running('rq', redis_conn, redis_url)
    assert expected['inside'] == b'gone' and expected['allowed'] == [b'next']
    assert delete_while_running('rqfast', redis_conn, redis_url) == expected


def dependent_released(worker: str, conn: redis.Redis) -> dict[str, Any]:
    """A rate-limited dependent released by its parent's finish while its key's one slot is taken: it waits."""
    conn.flushdb()
    q = rq.Queue('q', connection=conn)
    single = rq.RateLimit(key='single', concurrency=1)
    parent = q.enqueue(rate_limit_jobs.took, job_id='parent')
    q.enqueue(rate_limit_jobs.took, job_id='holder', rate_limit=single)
    q.enqueue(rate_limit_jobs.took, 1, job_id='kid', rate_limit=single, depends_on=parent)
    worker_cls = rq.SimpleWorker if worker == 'rq' else rqfast.SimpleWorker
    worker_cls([q], connection=conn).work(burst=True, max_jobs=1)
    snap = snapshot(conn)
    wanted = {'rq:job:kid', 'rq:queue:q', 'rq:deferred:q', 'rq:ready:q', 'rq:rl:single', 'rq:rl-keys'}
    wanted |= {'rq:rl:single:allowed', 'rq:rl:single:rate_limited', 'rq:job:parent:dependents'}
    return normalize(type(snap)({k: v for k, v in snap.items() if k in wanted}))


def test_a_released_dependent_waits_as_rq3(redis_conn: redis.Redis) -> None:
    expected = dependent_released('rq', redis_conn)
    assert expected['rq:job:kid']['value']['status'] == 'rate_limited'
    assert_same(expected, dependent_released('rqfast', redis_conn), 'released rate-limited dependent:')


def scheduled_due(scheduler: str, conn: redis.Redis) -> dict[str, Any]:
    """A rate-limited job scheduled by rq 3.0 comes due while its key's one slot is taken: it waits."""
    from datetime import timedelta

    import rq.scheduler

    import rqfast.scheduler

    conn.flushdb()
    q = rq.Queue('q', connection=conn)
    single = rq.RateLimit(key='single', concurrency=1)
    q.enqueue(rate_limit_jobs.took, job_id='holder', rate_limit=single)
    q.enqueue_in(timedelta(seconds=-1), rate_limit_jobs.took, 1, job_id='later', rate_limit=single)
    cls = rq.scheduler.RQScheduler if scheduler == 'rq' else rqfast.scheduler.RQScheduler
    runner = cls(['q'], connection=conn)
    runner.acquire_locks()
    runner.enqueue_scheduled_jobs()
    runner.release_locks()
    snap = snapshot(conn)
    wanted = {'rq:job:later', 'rq:queue:q', 'rq:scheduled:q', 'rq:rl:single', 'rq:rl-keys'}
    wanted |= {'rq:rl:single:allowed', 'rq:rl:single:rate_limited'}
    return normalize(type(snap)({k: v for k, v in snap.items() if k in wanted}))


def test_a_due_scheduled_job_waits_as_rq3(redis_conn: redis.Redis) -> None:
    expected = scheduled_due('rq', redis_conn)
    assert expected['rq:job:later']['value']['status'] == 'rate_limited'
    assert_same(expected, scheduled_due('rqfast', redis_conn), 'due rate-limited job:')


def admin_call(impl: str, action: str, conn: redis.Redis) -> dict[str, Any]:
    """Cancel or delete the job holding the one slot, or requeue a failed rate-limited job: rq 3.0 frees
    the slot and promotes the waiter / parks the requeued job."""
    conn.flushdb()
    q = rq.Queue('q', connection=conn)
    single = rq.RateLimit(key='single', concurrency=1)
    if action == 'requeue':
        q.enqueue(rate_limit_jobs.limited, 'not a url', 'x', job_id='holder', rate_limit=single)
        rq.SimpleWorker([q], connection=conn).work(burst=True)
        q.enqueue(rate_limit_jobs.took, job_id='waiter', rate_limit=single)
    else:
        q.enqueue(rate_limit_jobs.took, job_id='holder', rate_limit=single)
        q.enqueue(rate_limit_jobs.took, job_id='waiter', rate_limit=single)
    job = (rq.job.Job if impl == 'rq' else rqfast.Job).fetch('holder', connection=conn)
    getattr(job, action)()
    snap = snapshot(conn)
    wanted = {
        'rq:job:waiter',
        'rq:job:holder',
        'rq:queue:q',
        'rq:rl:single',
        'rq:rl-keys',
        'rq:canceled:q',
        'rq:failed:q',
    }
    wanted |= {'rq:rl:single:allowed', 'rq:rl:single:rate_limited'}
    return normalize(type(snap)({k: v for k, v in snap.items() if k in wanted}))


@pytest.mark.parametrize('action', ['cancel', 'delete', 'requeue'])
def test_cancel_delete_requeue_as_rq3(action: str, redis_conn: redis.Redis) -> None:
    expected = admin_call('rq', action, redis_conn)
    assert expected['rq:rl:single:allowed']['value']
    assert_same(expected, admin_call('rqfast', action, redis_conn), f'{action} of a rate-limited job:')
