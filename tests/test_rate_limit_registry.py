"""RQ 3.0's RateLimitRegistry writes and release_slot in rqfast: each a single script call, and what
they leave in Redis (the slots, the waiting set, the promoted job on its queue)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import redis

import rqfast
from rqfast import RateLimit
from rqfast.job import Job, JobStatus
from rqfast.rate_limit import RateLimitRegistry, release_slot
from rqfast.scheduler import RQScheduler
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
    assert [c for c in counted.commands if c.split()[0] not in ('SCRIPT', 'FUNCTION')] in (
        ['EVALSHA'],
        ['EVAL'],
        ['FCALL'],
    )
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
    RateLimitRegistry('reports', redis_conn).cleanup()
    assert redis_conn.exists('rq:rl:reports', 'rq:rl:reports:allowed', 'rq:rl:reports:rate_limited') == 0
    assert {m.decode() for m in redis_conn.smembers('rq:rl-keys')} == {'other'}
    assert other.concurrency == 3
    other.cleanup()  # the ghost is dropped, not promoted; then the key goes
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


def test_cancel_of_a_rate_limited_job_with_a_callers_pipeline_is_refused(redis_conn: redis.Redis) -> None:
    _, holder, _ = two_jobs(redis_conn)
    with redis_conn.pipeline() as pipe, pytest.raises(rqfast.exceptions.InvalidJobOperation):
        holder.cancel(pipeline=pipe)
    assert redis_conn.hget('rq:job:holder', 'status') == b'queued'
    assert zset(redis_conn, 'rq:rl:reports:allowed') == ['holder']


def test_a_rate_limit_on_a_class_with_its_own_key_prefix_is_refused(redis_conn: redis.Redis) -> None:
    class PrefixedJob(Job):
        redis_job_namespace_prefix = 'custom:job:'

    class PrefixedQueue(rqfast.Queue):
        redis_queue_namespace_prefix = 'custom:queue:'

    rl = RateLimit(key='reports', concurrency=1)
    with pytest.raises(ValueError, match='custom job or queue key prefixes'):
        rqfast.Queue('q', connection=redis_conn, job_class=PrefixedJob).enqueue(rate_limit_jobs.took, rate_limit=rl)
    with pytest.raises(ValueError, match='custom job or queue key prefixes'):
        PrefixedQueue('q', connection=redis_conn).enqueue_in(timedelta(hours=1), rate_limit_jobs.took, rate_limit=rl)
    assert redis_conn.dbsize() == 0


def test_a_due_retry_with_enqueue_at_front_waits_then_is_promoted_at_the_front(redis_conn: redis.Redis) -> None:
    """RQ 3.0's scheduler: a due job goes to the front when it should (a retry with enqueue_at_front); a
    rate-limited one keeps that for its promotion (enqueue_at_front noted on the job)."""
    q, holder, _ = two_jobs(redis_conn)
    redis_conn.delete('rq:rl:reports:rate_limited', 'rq:job:waiter')
    redis_conn.lrem('rq:queue:q', 0, 'waiter')
    # holder: failed once, its retry (enqueue_at_front=True) scheduled, its slot freed
    ran = {'enqueue_at_front_on_retry': '1', 'ended_at': '2026-01-01T00:00:00.000000Z', 'status': 'scheduled'}
    redis_conn.hset('rq:job:holder', mapping=ran)
    redis_conn.lrem('rq:queue:q', 0, 'holder')
    redis_conn.zrem('rq:rl:reports:allowed', 'holder')
    redis_conn.zadd('rq:scheduled:q', {'holder': 1})
    blocker = q.enqueue(rate_limit_jobs.took, job_id='blocker', rate_limit=RateLimit(key='reports', concurrency=1))
    plain = q.enqueue(rate_limit_jobs.took, job_id='plain')
    scheduler = RQScheduler([q], connection=redis_conn)
    scheduler.acquire_locks()
    scheduler.enqueue_scheduled_jobs()
    assert redis_conn.hget('rq:job:holder', 'status') == b'rate_limited'
    assert redis_conn.hget('rq:job:holder', 'enqueue_at_front') == b'1'
    blocker.set_local_status(JobStatus.FINISHED)
    redis_conn.hset('rq:job:blocker', 'status', 'finished')
    assert release_slot(blocker) == ['holder']
    assert q.job_ids == ['holder', 'blocker', plain.id]  # promoted in front of the jobs queued before
