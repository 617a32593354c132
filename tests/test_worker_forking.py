"""rqfast.Worker (ForkingWorker): a fresh forked horse per job, watched by the worker (tests/horse_contract.py)."""

from __future__ import annotations

import os

import pytest
import redis
import rq

import rqfast
import rqfast.worker

try:
    from horse_contract import KILLED, HorseContract, rq_job
except ImportError:  # tests/ became a package
    from tests.horse_contract import KILLED, HorseContract, rq_job  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


class TestWorker(HorseContract):
    worker_class = rqfast.Worker
    parent_is_worker = False
    worker_path = 'rqfast.Worker'


def test_public_names() -> None:
    assert rqfast.ForkingWorker is rqfast.Worker is rqfast.worker.Worker is rqfast.worker.ForkingWorker
    assert issubclass(rqfast.SpawnWorker, rqfast.Worker)


def test_the_horse_inherits_the_worker_and_preloads_the_last_jobs_module(redis_conn: redis.Redis) -> None:
    """Forked horses see what the worker process loaded; the worker itself never imports job modules."""
    queue = rq.Queue('q', connection=redis_conn)
    ids = [queue.enqueue('jobs_isolation.where_am_i').id for _ in range(2)]
    worker = rqfast.Worker(['q'], connection=redis_conn)
    before = set(os.sys.modules)
    worker.work(burst=True, logging_level='WARNING')
    assert all(rq_job(redis_conn, job_id).return_value()['worker_loaded'] for job_id in ids)
    assert 'jobs_isolation' not in set(os.sys.modules) - before
    assert worker._runner.job_module == 'jobs_isolation'


@pytest.mark.timeout(30)
def test_without_a_breeder_the_worker_forks_its_horses(redis_conn: redis.Redis) -> None:
    queue = rq.Queue('q', connection=redis_conn)
    ok = queue.enqueue('jobs_isolation.where_am_i')
    killed = queue.enqueue('jobs_isolation.kill_self')
    after = queue.enqueue('jobs_isolation.where_am_i')
    worker = rqfast.Worker(['q'], connection=redis_conn)
    worker.use_breeder = False
    worker.work(burst=True, logging_level='WARNING')
    assert rq_job(redis_conn, ok.id).return_value()['ppid'] == os.getpid()
    assert rq_job(redis_conn, killed.id).latest_result().exc_string == KILLED
    assert rq_job(redis_conn, after.id).get_status() == 'finished'


@pytest.mark.timeout(30)
def test_the_worker_carries_on_when_its_breeder_dies(redis_conn: redis.Redis) -> None:
    queue = rq.Queue('q', connection=redis_conn)
    first = queue.enqueue('jobs_isolation.kill_parent')
    rest = [queue.enqueue('jobs_isolation.where_am_i') for _ in range(3)]
    rqfast.Worker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    assert rq_job(redis_conn, first.id).return_value() == 'done'
    assert all(rq_job(redis_conn, job.id).get_status() == 'finished' for job in rest)
