"""rqfast.SpawnWorker: a fresh interpreter per job, started ahead of it (tests/horse_contract.py)."""

from __future__ import annotations

import os
from typing import Any

import pytest
import redis
import rq

import rqfast

try:
    from horse_contract import HorseContract, rq_job
except ImportError:  # tests/ became a package
    from tests.horse_contract import HorseContract, rq_job  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


class TestSpawnWorker(HorseContract):
    worker_class = rqfast.SpawnWorker
    parent_is_worker = True
    worker_path = 'rqfast.SpawnWorker'


def test_a_child_imports_only_what_its_job_needs(redis_conn: redis.Redis) -> None:
    job = rq.Queue('q', connection=redis_conn).enqueue('jobs_isolation.where_am_i')
    rqfast.SpawnWorker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    where = rq_job(redis_conn, job.id).return_value()
    assert where['worker_loaded'] is False
    assert where['redis_loaded'] is False  # the job never used its connection, so redis-py was never imported


def test_children_start_ahead_and_none_outlives_the_worker(redis_conn: redis.Redis, monkeypatch: Any) -> None:
    queue = rq.Queue('q', connection=redis_conn)
    ids = [queue.enqueue('jobs_isolation.where_am_i').id for _ in range(2)]
    started: list[int] = []
    original = rqfast.SpawnWorker.start_horse

    def start_horse(self: rqfast.SpawnWorker) -> Any:
        horse = original(self)
        started.append(horse.pid)
        return horse

    monkeypatch.setattr(rqfast.SpawnWorker, 'start_horse', start_horse)
    worker = rqfast.SpawnWorker(['q'], connection=redis_conn)
    worker.work(burst=True, logging_level='WARNING')
    ran = [rq_job(redis_conn, job_id).return_value()['pid'] for job_id in ids]
    assert ran == started[:2]  # each job ran in a child started before it was claimed
    assert len(started) == 3  # and one more was waiting when the queue ran dry
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # reaped: no child left behind
