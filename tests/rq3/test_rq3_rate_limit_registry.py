"""RQ 3.0's RateLimitRegistry writes and release_slot with rq 3.0.0 as the oracle: the same state
made by each library, the same call, and the same keys and fields after it (rqfast: one script call)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
import redis

from tests import rate_limit_jobs
from tests.snapshot import assert_same, normalize, snapshot

pytestmark = pytest.mark.timeout(60)


def lib(name: str, module: str = '') -> Any:
    return importlib.import_module(f'{name}.{module}' if module else name)


def state(name: str, conn: redis.Redis) -> tuple[Any, Any, Any]:
    """Key `k`, one slot: `a` holds it, `w1` and `w2` wait; `done` holds a stale slot of key `k2` (2
    slots) whose `w3` waits; a ghost id waits too."""
    conn.flushdb()
    api, rl = lib(name), lib(name, 'rate_limit')
    q = api.Queue('q', connection=conn)
    one, two = api.RateLimit(key='k', concurrency=1), api.RateLimit(key='k2', concurrency=1)
    holder = q.enqueue(rate_limit_jobs.took, job_id='a', rate_limit=one)
    for job_id in ('w1', 'w2'):
        q.enqueue(rate_limit_jobs.took, job_id=job_id, rate_limit=one)
    done = q.enqueue(rate_limit_jobs.took, job_id='done', rate_limit=two)
    q.enqueue(rate_limit_jobs.took, job_id='w3', rate_limit=two, at_front=True)
    conn.hset('rq:rl:k2', 'concurrency', 2)
    conn.zrem('rq:rl:k2:allowed', 'done')  # freed by hand, so that k2 has room for the cases below
    conn.zadd('rq:rl:k2:allowed', {'done': 1})
    conn.zadd('rq:rl:k:rate_limited', {'ghost': 0})
    conn.hset('rq:job:done', 'status', 'finished')
    return rl, holder, done


CASES: dict[str, Callable[[Any, redis.Redis, Any, Any], Any]] = {
    'acquire': lambda rl, conn, a, d: rl.RateLimitRegistry('k2', conn).acquire_and_enqueue(2),
    'release': lambda rl, conn, a, d: rl.RateLimitRegistry('k', conn).release_and_enqueue('a'),
    'release_stale_kept': lambda rl, conn, a, d: rl.RateLimitRegistry('k', conn).release_stale_and_enqueue('a'),
    'release_stale': lambda rl, conn, a, d: rl.RateLimitRegistry('k2', conn).release_stale_and_enqueue('done'),
    'cancel_waiting': lambda rl, conn, a, d: rl.RateLimitRegistry('k', conn).cancel('w1'),
    'cancel_stale': lambda rl, conn, a, d: rl.RateLimitRegistry('k2', conn).cancel('done'),
    'cleanup': lambda rl, conn, a, d: rl.RateLimitRegistry('k2', conn).cleanup(),
    'cleanup_ghost': lambda rl, conn, a, d: rl.RateLimitRegistry('k', conn).cleanup(),
    'release_slot_queued': lambda rl, conn, a, d: rl.release_slot(a),
    'release_slot_finished': lambda rl, conn, a, d: (d.set_status('finished'), rl.release_slot(d))[1],
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_rate_limit_registry_writes_what_rq3_writes(case: str, redis_conn: redis.Redis) -> None:
    rl, holder, done = state('rq', redis_conn)
    expected_answer = CASES[case](rl, redis_conn, holder, done)
    expected = normalize(snapshot(redis_conn))
    rl, holder, done = state('rqfast', redis_conn)
    answer = CASES[case](rl, redis_conn, holder, done)
    assert (answer or []) == (expected_answer or [])
    assert_same(expected, normalize(snapshot(redis_conn)), f'{case}:')
