"""rqfast.Worker (ForkingWorker): a fresh forked horse per job, watched by the worker (tests/horse_contract.py)."""

from __future__ import annotations

import os
from typing import Any

import pytest
import redis
import rq

import rqfast
import rqfast.connections
import rqfast.horse
import rqfast.worker
import rqfast.worker.pool

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


def test_one_horse_waits_per_slot(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []
    original = rqfast.Worker.start_horse

    def start_horse(self: rqfast.Worker) -> Any:
        horse = original(self)
        started.append(horse.pid)
        return horse

    monkeypatch.setattr(rqfast.Worker, 'start_horse', start_horse)
    queue = rq.Queue('q', connection=redis_conn)
    ids = [queue.enqueue('jobs_isolation.where_am_i').id for _ in range(2)]
    rqfast.Worker(['q'], connection=redis_conn, concurrency=3).work(burst=True, logging_level='WARNING')
    assert len(started) == 3 + 2  # three waiting before the first claim, and one more per job handed over
    assert all(rq_job(redis_conn, job_id).get_status() == 'finished' for job_id in ids)


class _CountedJob(rqfast.Job):
    made = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        type(self).made += 1
        super().__init__(*args, **kwargs)


def test_the_breeder_warms_up_on_rqfasts_own_code_only(redis_conn: redis.Redis) -> None:
    """The warm-up the breeder runs once (so every horse starts warm) makes no connection, and runs no
    job class of the app's: a horse of such a worker warms up on its own, after its fork."""
    worker = rqfast.Worker(['q'], connection=redis_conn)
    settings = worker.horse_settings()
    assert settings.stand_in is not None or len(os.sched_getaffinity(0)) < 2
    made: list[str] = []
    original = settings.job_class.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append('job')
        original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(settings.job_class, '__init__', counted)
        patch.setattr(rqfast.connections, 'build_client', lambda *args: made.append('client'))
        rqfast.worker.pool.warm_breeder(settings, None)
    assert made == (['job'] if settings.stand_in is not None else [])  # rqfast's Job: warmed, no client built
    rqfast.worker.pool.warm_breeder(settings.replace(job_class=_CountedJob), None)
    assert _CountedJob.made == 0  # the app's job class: not in the breeder
