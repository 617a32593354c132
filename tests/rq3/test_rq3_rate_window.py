"""rqfast's window rate limits (RateLimit(key, rate=N, per=s)) beside rq 3.0.0: rq 3.0 loads such jobs and its
worker runs them without the window (the extra fields ignored), honouring the concurrency part it knows."""

from __future__ import annotations

import pytest
import redis
import rq

import rqfast
from tests import rate_limit_jobs

pytestmark = pytest.mark.timeout(60)


def test_rq3_worker_runs_window_limited_jobs(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    both = rqfast.RateLimit('api', concurrency=2, rate=1, per=60)
    alone = rqfast.RateLimit('solo', rate=1, per=60)
    ids = [q.enqueue(rate_limit_jobs.took, n, rate_limit=both).id for n in range(3)]
    ids.append(q.enqueue(rate_limit_jobs.took, 3, rate_limit=alone).id)
    loaded = [rq.job.Job.fetch(job_id, connection=redis_conn) for job_id in ids]
    assert [job.get_status() for job in loaded] == ['queued', 'queued', 'rate_limited', 'queued']
    assert loaded[0].rate_limit_key == 'api' and loaded[3].rate_limit_key is None
    rq.SimpleWorker(['q'], connection=redis_conn).work(burst=True)  # no window: all four run
    assert sorted(rq.registry.FinishedJobRegistry('q', connection=redis_conn).get_job_ids()) == sorted(ids)
    assert redis_conn.zcard('rq:rl:api:allowed') == 0  # its slots freed by rq 3.0 as it ran them
