"""A mixed fleet beside rq 3.0: an rq 3.0 SimpleWorker and an rqfast SimpleWorker race for one queue
of 2,000 jobs (failures and dependents included); each job runs exactly once. It is
tests/test_worker_fleet.py run with rq 3.0 installed, once with rqfast as the producer and once with
rq 3.0 (whose dependents an rqfast worker may release, and the other way round).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
import rq

from tests import test_worker_fleet as fleet
from tests import worker_jobs

pytestmark = pytest.mark.timeout(90)


def rq3_enqueue_all(conn: redis.Redis) -> list[str]:
    """fleet.enqueue_all, through rq 3.0's Queue."""
    q = rq.Queue('fleet', connection=conn)
    plain = fleet.TOTAL - fleet.FAILING - 2 * fleet.PAIRS
    ids = [job.id for job in q.enqueue_many([q.prepare_data(worker_jobs.count_run) for _ in range(plain)])]
    ids += [
        job.id for job in q.enqueue_many([q.prepare_data(worker_jobs.count_run, (True,)) for _ in range(fleet.FAILING)])
    ]
    for _ in range(fleet.PAIRS):
        parent = q.enqueue(worker_jobs.count_run)
        ids += [parent.id, q.enqueue(worker_jobs.count_run, depends_on=parent).id]
    return ids


@pytest.mark.parametrize('producer', ['rqfast', 'rq'])
def test_rq3_and_rqfast_workers_share_a_queue(
    producer: str, redis_url: str, redis_conn: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert rq.VERSION.startswith('3.')
    if producer == 'rq':
        monkeypatch.setattr(fleet, 'enqueue_all', rq3_enqueue_all)
    fleet.test_rq_and_rqfast_workers_share_a_queue(redis_url, redis_conn, tmp_path)
