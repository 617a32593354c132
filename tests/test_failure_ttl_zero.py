"""failure_ttl=0, with rq as the oracle: a job that ends failed is deleted (RQ's Job.cleanup(0) in its
FailedJobRegistry.add), its entry scored now in the failed registry; rq 2.12 and 3.0 alike."""

from __future__ import annotations

import operator

import pytest
import redis
import rq

import rqfast

pytestmark = pytest.mark.timeout(60)


def failed_with_ttl_zero(lib: object, conn: redis.Redis) -> tuple[int, int, list[bytes]]:
    queue = lib.Queue('q', connection=conn)  # type: ignore[attr-defined]
    job = queue.enqueue(operator.truediv, 1, 0, failure_ttl=0, job_id='j')
    lib.SimpleWorker([queue], connection=conn).work(burst=True, logging_level='ERROR')  # type: ignore[attr-defined]
    return conn.exists(job.key), conn.exists('rq:results:j'), conn.zrange('rq:failed:q', 0, -1)


def test_a_failed_job_with_failure_ttl_zero_is_deleted_as_rqs(redis_conn: redis.Redis) -> None:
    expected = failed_with_ttl_zero(rq, redis_conn)
    redis_conn.flushdb()
    assert failed_with_ttl_zero(rqfast, redis_conn) == expected == (0, 0, [b'j'])
