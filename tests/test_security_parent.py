"""The parent process of Worker and SpawnWorker never deserializes a job's data, meta or result.

A pickle in any of those fields can run code when it is loaded; only the horse, which runs the job
(and exits), may load them. Each payload here appends the pid of whoever unpickles it to a file:
the horse's pid shows the payload is live, the test's own pid (the worker's parent) must never show.
"""

from __future__ import annotations

import threading
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
import redis
import rq

import rqfast
from rqfast import Callback, Queue, Retry, engine, maintenance
from rqfast.command import send_command

try:
    import security_jobs as sj
    from polling import wait_for
except ImportError:  # tests/ became a package
    from tests import security_jobs as sj  # type: ignore[no-redef]
    from tests.polling import wait_for  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)
CLASSES = [rqfast.Worker, rqfast.SpawnWorker]
J = sj.__name__


def plant(conn: redis.Redis, job_id: str, path: str, data: bool = True, meta: bool = True, result: bool = True) -> None:
    """Replace the job's stored call, meta and result with payloads that record who unpickles them."""
    job = rqfast.job.Job.fetch(job_id, connection=conn)
    fields: dict[str, Any] = {}
    if data:
        fields['data'] = zlib.compress(sj.marker_pickle(path, (job.func_name, None, tuple(job.args), job.kwargs)))
    if meta:
        fields['meta'] = sj.marker_pickle(path)
    if result:
        fields['result'] = sj.marker_pickle(path, 'old result')
    conn.hset(rqfast.keys.job_key(job_id), mapping=fields)


def check(path: str, expect_horse: bool = True) -> None:
    seen = sj.pids(path)
    assert os_pid() not in seen, f'the worker process deserialized a payload: {seen}'
    if expect_horse:
        assert seen, 'the payload was never loaded, not even by the horse: the test proves nothing'


def os_pid() -> int:
    import os

    return os.getpid()


@pytest.mark.parametrize('worker_class', CLASSES, ids=lambda c: c.__name__)
def test_finished_failed_and_retried_jobs(redis_conn: redis.Redis, tmp_path: Path, worker_class: type) -> None:
    path = str(tmp_path / 'pids')
    queue = Queue('q', connection=redis_conn)
    ok = queue.enqueue(f'{J}.noop', meta={'a': 1})
    failed = queue.enqueue(f'{J}.fail', on_failure=Callback(f'{J}.on_callback'))
    retried = queue.enqueue(f'{J}.fail', retry=Retry(max=1))
    repeated = queue.enqueue(f'{J}.noop', repeat=rqfast.Repeat(times=1))
    for job in (ok, failed, retried, repeated):
        plant(redis_conn, job.id, path)
    stored_meta = redis_conn.hget(retried.key, 'meta')

    worker_class(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')

    check(path)
    assert rq.job.Job.fetch(ok.id, connection=redis_conn).get_status() == 'finished'
    assert rq.job.Job.fetch(failed.id, connection=redis_conn).get_status() == 'failed'
    assert redis_conn.lrange(f'security-callbacks:{failed.id}', 0, -1) == [b'ran']
    assert rq.job.Job.fetch(retried.id, connection=redis_conn).get_status() == 'failed'
    assert redis_conn.hget(retried.key, 'meta') == stored_meta  # written back as stored, not re-pickled
    assert rq.job.Job.fetch(repeated.id, connection=redis_conn).get_status() == 'finished'


@pytest.mark.parametrize('worker_class', CLASSES, ids=lambda c: c.__name__)
def test_a_stopped_job_and_its_stopped_callback(redis_conn: redis.Redis, tmp_path: Path, worker_class: type) -> None:
    path = str(tmp_path / 'pids')
    queue = Queue('q', connection=redis_conn)
    job = queue.enqueue(f'{J}.sleep', 30, on_stopped=Callback(f'{J}.on_callback'))
    plant(redis_conn, job.id, path)
    worker = worker_class(['q'], connection=redis_conn)

    def stop() -> None:
        wait_for(lambda: sj.pids(path), timeout=30)  # the horse has loaded the job
        send_command(redis_conn, worker.name, 'stop-job', job_id=job.id)  # (the helper would load the job here)

    stopper = threading.Thread(target=stop)
    stopper.start()
    worker.work(burst=True, logging_level='WARNING')
    stopper.join()

    check(path)
    assert rq.job.Job.fetch(job.id, connection=redis_conn).get_status() == 'stopped'
    assert redis_conn.lrange(f'security-callbacks:{job.id}', 0, -1) == [b'ran']


def test_maintenance_runs_an_abandoned_jobs_failure_callback_without_loading_its_payload(
    redis_conn: redis.Redis, tmp_path: Path
) -> None:
    path = str(tmp_path / 'pids')
    queue = Queue('q', connection=redis_conn)
    job = queue.enqueue(f'{J}.noop', on_failure=Callback(f'{J}.on_callback'))
    plant(redis_conn, job.id, path)
    engine.claim_job(redis_conn, engine.WorkerRef('', ['q'], job_monitoring_interval=30))

    assert maintenance.fail_abandoned_jobs(redis_conn, 'q', timestamp=time.time() + 200) == 1

    check(path, expect_horse=False)
    assert redis_conn.lrange(f'security-callbacks:{job.id}', 0, -1) == [b'ran']
    assert sj.pids(path) == []
