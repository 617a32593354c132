"""Job functions for the rate-limit tests (tests/test_rate_limit.py, tests/rq3/): importable by rq's
and rqfast's workers alike, they need no current job, only the Redis URL they are given."""

from __future__ import annotations

import time

# How many run at once, and the most ever seen: one atomic step, so no two runs can read the same count.
ENTER = """
local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n
"""


def limited(url: str, tag: str, pause: float = 0.05) -> str:
    """Counts itself in `rl:running` (the peak in `rl:peak`) while it sleeps `pause` s, and its runs in
    the hash `rl:runs` (field: `tag`)."""
    import redis

    conn = redis.Redis.from_url(url)
    try:
        conn.eval(ENTER, 2, 'rl:running', 'rl:peak')
        time.sleep(pause)
        conn.decr('rl:running')
        conn.hincrby('rl:runs', tag, 1)
    finally:
        conn.close()
    return tag


def took(argument: object = None, **kwargs: object) -> dict[str, object]:
    """Returns its keyword arguments (RQ 2.12 passes a `rate_limit=` that is not a RateLimit here)."""
    return dict(kwargs)


def delete_myself(url: str) -> None:
    """Deletes its own job while it runs (through rqfast or rq, whichever worker runs it); stores in
    `rl:inside` the ids holding a slot of key `reports` right after (RQ 3.0: the running job keeps its slot)."""
    import redis

    import rqfast

    job = rqfast.get_current_job()
    if job is None:
        import rq

        job = rq.get_current_job()
    assert job is not None
    job.delete()
    conn = redis.Redis.from_url(url)
    try:
        conn.set('rl:inside', ','.join(m.decode() for m in conn.zrange('rq:rl:reports:allowed', 0, -1)))
    finally:
        conn.close()
