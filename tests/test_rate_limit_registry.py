"""RQ 3.0's RateLimitRegistry writes and release_slot in rqfast: each a single script call, and what
they leave in Redis (the slots, the waiting set, the promoted job on its queue)."""

from __future__ import annotations

from typing import Any

import pytest
import redis

import rqfast
from rqfast import RateLimit
from rqfast.job import Job, JobStatus
from rqfast.rate_limit import RateLimitRegistry, release_slot
from tests import rate_limit_jobs
from tests.test_worker_roundtrips import count_round_trips  # noqa: F401  (a fixture)

pytestmark = pytest.mark.timeout(60)


def zset(conn: redis.Redis, key: str) -> list[str]:
    return [m.decode() for m in conn.zrange(key, 0, -1)]


def two_jobs(conn: redis.Redis, concurrency: int = 1) -> tuple[rqfast.Queue, Job, Job]:
    """One job holding the key's only slot, one waiting for it."""
    q = rqfast.Queue('q', connection=conn)
    rl = RateLimit(key='reports', concurrency=concurrency)
    holder = q.enqueue(rate_limit_jobs.took, job_id='holder', rate_limit=rl)
    waiter = q.enqueue(rate_limit_jobs.took, job_id='waiter', rate_limit=rl)
    return q, holder, waiter


def test_release_slot_frees_a_finished_jobs_slot_and_promotes_the_waiter(redis_conn: redis.Redis) -> None:
    q, holder, waiter = two_jobs(redis_conn)
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['holder']
    assert zset(redis_conn, 'rq:rl:reports:rate_limited') == ['waiter']

    holder.set_status(JobStatus.STARTED)
    assert release_slot(holder) == []  # a running job keeps its slot
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['holder']

    holder.set_status(JobStatus.FINISHED)
    assert release_slot(holder) == ['waiter']
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['waiter']
    assert zset(redis_conn, 'rq:rl:reports:rate_limited') == []
    assert redis_conn.hget('rq:job:waiter', 'status') == b'queued'
    assert redis_conn.hget('rq:job:waiter', 'enqueued_at')
    assert q.job_ids == ['holder', 'waiter']


def test_release_slot_goes_by_the_handles_status_as_rq_does(redis_conn: redis.Redis) -> None:
    """RQ 3.0 reads the cached status: the caller has just recorded the outcome."""
    _, holder, _ = two_jobs(redis_conn)
    holder.set_local_status(JobStatus.QUEUED)  # an immediate retry: stored `failed` does not matter
    redis_conn.hset('rq:job:holder', 'status', 'failed')
    assert release_slot(holder) == []
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['holder']


def test_release_slot_of_a_job_without_a_rate_limit_touches_nothing(redis_conn: redis.Redis) -> None:
    job = rqfast.Queue('q', connection=redis_conn).enqueue(rate_limit_jobs.took)
    job.set_local_status(JobStatus.FINISHED)
    assert release_slot(job) == []
    assert redis_conn.keys('rq:rl*') == []


def test_a_worker_that_finishes_the_holder_frees_the_slot_as_release_slot_would(redis_conn: redis.Redis) -> None:
    q, holder, waiter = two_jobs(redis_conn)
    rqfast.SimpleWorker([q], connection=redis_conn).work(burst=True, max_jobs=1)
    assert holder.get_status() == JobStatus.FINISHED
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['waiter']
    holder.set_local_status(JobStatus.FINISHED)
    assert release_slot(holder) == []  # freed already: nothing more to promote


@pytest.mark.parametrize(
    ('call', 'allowed'),
    [
        (lambda registry: registry.acquire_and_enqueue(2), ['holder', 'waiter']),  # a second slot
        (lambda registry: registry.release_and_enqueue('holder'), ['waiter']),
        (lambda registry: registry.release_stale_and_enqueue('holder'), ['waiter']),
        (lambda registry: registry.cancel('holder'), ['waiter']),
        (lambda registry: registry.cleanup(), ['waiter']),
    ],
    ids=['acquire', 'release', 'release_stale', 'cancel', 'cleanup'],
)
def test_each_slot_write_is_one_script_call(
    redis_conn: redis.Redis,
    count_round_trips: Any,  # noqa: F811  (the imported fixture)
    call: Any,
    allowed: list[str],
) -> None:
    """The holder has ended (`finished`): each call frees its slot or fills a free one, in one call."""
    two_jobs(redis_conn)
    redis_conn.hset('rq:job:holder', 'status', 'finished')
    registry = RateLimitRegistry('reports', redis_conn)
    registry.get_allowed_job_count()  # the connection made
    counted = count_round_trips(lambda: call(registry))
    assert [c for c in counted.commands if c.split()[0] != 'SCRIPT'] in (['EVALSHA'], ['EVAL'])
    assert zset(redis_conn, 'rq:rl:reports:allowed') == allowed
    assert redis_conn.hget('rq:job:waiter', 'status') == b'queued'


def test_cancel_keeps_the_slot_of_a_job_that_still_runs(redis_conn: redis.Redis) -> None:
    """A job canceled while its execution is live keeps its slot until that execution ends."""
    _, holder, _ = two_jobs(redis_conn)
    redis_conn.hset('rq:job:holder', 'status', 'canceled')
    redis_conn.zadd('rq:executions:holder', {'x1': 2**31})
    registry = RateLimitRegistry('reports', redis_conn)
    assert registry.cancel('holder') == []
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['holder']
    redis_conn.delete('rq:executions:holder')
    assert registry.cancel('holder') == ['waiter']


def test_cleanup_of_one_key_drops_it_once_empty_and_leaves_the_others(redis_conn: redis.Redis) -> None:
    _, holder, waiter = two_jobs(redis_conn)
    other = RateLimitRegistry('other', redis_conn)
    with redis_conn.pipeline() as pipe:
        other.register(3, pipe)
        other.add_to_rate_limited('ghost', pipe, timestamp=1)
        pipe.execute()
    for job in (holder, waiter):
        job.delete()
    assert RateLimitRegistry('reports', redis_conn).cleanup() == []
    assert redis_conn.exists('rq:rl:reports', 'rq:rl:reports:allowed', 'rq:rl:reports:rate_limited') == 0
    assert {m.decode() for m in redis_conn.smembers('rq:rl-keys')} == {'other'}
    assert other.concurrency == 3
    assert other.cleanup() == []  # the ghost is dropped, not promoted; then the key goes
    assert redis_conn.smembers('rq:rl-keys') == set()


def test_acquire_with_a_callers_pipeline_runs_when_it_executes(redis_conn: redis.Redis) -> None:
    q, holder, _ = two_jobs(redis_conn)
    redis_conn.zrem('rq:rl:reports:allowed', 'holder')
    registry = RateLimitRegistry('reports', redis_conn)
    with redis_conn.pipeline() as pipe:
        assert registry.acquire_and_enqueue(1, pipeline=pipe) == []
        assert zset(redis_conn, 'rq:rl:reports:rate_limited') == ['waiter']
        pipe.execute()
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['waiter']
    assert q.job_ids == ['holder', 'waiter']
