"""A mixed fleet: RQ's SimpleWorker and rqfast's SimpleWorker on one queue, 2,000 jobs.

Both workers run at once, in processes of their own, and race for the same queue. Every job counts
its runs in a Redis hash, so the test sees that each ran exactly once, by one worker or the other, and
that nothing is left in a queue, an intermediate list or the started registry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import redis
import rq.command

import rqfast
from rqfast.registry import DeferredJobRegistry, FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

try:
    import worker_jobs
except ImportError:  # tests/ became a package
    from tests import worker_jobs  # type: ignore[no-redef]

pytestmark = [pytest.mark.timeout(60), pytest.mark.trial]  # a long trial: `python -m pytest -m trial`

HELPER = Path(__file__).with_name('worker_process.py')
TOTAL, FAILING, PAIRS = 2000, 100, 50


def wait_until(condition: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f'timed out waiting for {what}'
        time.sleep(0.05)


def start(url: str, impl: str, log: Path) -> tuple[str, subprocess.Popen[bytes]]:
    name = f'{impl}-{uuid.uuid4().hex[:8]}'
    options = {'impl': impl, 'name': name, 'queues': ['fleet'], 'work': {'logging_level': 'WARNING'}}
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(HELPER.parent.parent), os.environ.get('PYTHONPATH', '')])}
    with open(log, 'wb') as out:
        proc = subprocess.Popen(
            [sys.executable, str(HELPER), url, json.dumps(options)], stdout=out, stderr=subprocess.STDOUT, env=env
        )
    return name, proc


def enqueue_all(conn: redis.Redis) -> list[str]:
    """2,000 jobs: plain runs, failures, and parents whose children the finishing worker releases."""
    q = rqfast.Queue('fleet', connection=conn)
    plain = TOTAL - FAILING - 2 * PAIRS
    ids = [job.id for job in q.enqueue_many([q.prepare_data(worker_jobs.count_run) for _ in range(plain)])]
    ids += [job.id for job in q.enqueue_many([q.prepare_data(worker_jobs.count_run, (True,)) for _ in range(FAILING)])]
    for _ in range(PAIRS):
        parent = q.enqueue(worker_jobs.count_run)
        ids += [parent.id, q.enqueue(worker_jobs.count_run, depends_on=parent).id]
    return ids


def test_rq_and_rqfast_workers_share_a_queue(redis_url: str, redis_conn: redis.Redis, tmp_path: Path) -> None:
    workers = [start(redis_url, impl, tmp_path / f'{impl}.log') for impl in ('rq', 'rqfast')]
    try:
        wait_until(
            lambda: all(redis_conn.hget(f'rq:worker:{name}', 'state') == b'idle' for name, _ in workers),
            20,
            'both workers to start',
        )
        ids = enqueue_all(redis_conn)
        assert len(ids) == TOTAL

        def done() -> bool:
            finished = FinishedJobRegistry('fleet', connection=redis_conn).count
            return len(ids) == finished + FailedJobRegistry('fleet', connection=redis_conn).count

        wait_until(done, 40, 'every job to finish')
        counts = {
            name: {
                k.decode(): int(v)
                for k, v in redis_conn.hgetall(f'rq:worker:{name}').items()
                if k.endswith(b'_job_count')
            }
            for name, _ in workers
        }
        for name, _ in workers:
            rq.command.send_shutdown_command(redis_conn, name)
        for name, proc in workers:
            assert proc.wait(15) == 0, (tmp_path / f'{name.split("-")[0]}.log').read_text()
    finally:
        for _, proc in workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)

    runs = {k.decode(): int(v) for k, v in redis_conn.hgetall('runs').items()}
    assert len(runs) == TOTAL and set(runs) == set(ids)
    assert set(runs.values()) == {1}, 'a job ran more than once'
    assert FailedJobRegistry('fleet', connection=redis_conn).count == FAILING
    assert FinishedJobRegistry('fleet', connection=redis_conn).count == TOTAL - FAILING
    assert DeferredJobRegistry('fleet', connection=redis_conn).count == 0
    assert StartedJobRegistry('fleet', connection=redis_conn).get_job_ids(cleanup=False) == []
    assert redis_conn.llen('rq:queue:fleet') == 0 and redis_conn.llen('rq:queue:fleet:intermediate') == 0
    assert not redis_conn.keys('rq:execution:*')

    by_worker: dict[str, int] = {}
    for raw in redis_conn.hgetall('runs'):
        worker = redis_conn.hget(f'rq:job:{raw.decode()}', 'worker_name').decode()
        by_worker[worker] = by_worker.get(worker, 0) + 1
    assert set(by_worker) == {name for name, _ in workers}, by_worker  # both took part
    for name, _ in workers:
        ran = counts[name].get('successful_job_count', 0) + counts[name].get('failed_job_count', 0)
        assert ran == by_worker[name], (name, counts[name], by_worker[name])
    assert sum(by_worker.values()) == TOTAL
