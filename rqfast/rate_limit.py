"""RQ 3.0's concurrency rate limits: `RateLimit`, and reading a key's slots (`RateLimitRegistry`).

`Queue.enqueue(f, ..., rate_limit=RateLimit(key='reports', concurrency=2))` stores the job with
`rate_limit_key` and `rate_limit_concurrency`: at most `concurrency` jobs of one key are queued or
running at once, across every worker (rqfast's and RQ 3.0's). The writes are RQ 3.0's
(docs/rq-3.0-layout.md, section 6), made inside the scripts: the enqueue (lua/enqueue_jobs.lua,
mode "limit"), the finish (lua/finish_job.lua frees the slot and promotes the next waiter in the
same call), a dependent's release, a scheduled job coming due, and maintenance's sweep
(lua/clean_rate_limits.lua). Only a `RateLimit` instance means this: any other `rate_limit=` value is
passed to the job's function, as in RQ 2.12.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import keys
from .dates import epoch_seconds, now, utcformat
from .scriptload import call
from .text import as_text

if TYPE_CHECKING:
    from redis import Redis

__all__ = ['RateLimit', 'RateLimitRegistry', 'clean_rate_limits']


class RateLimit:
    """At most `concurrency` jobs with this `key` queued or running at the same time (RQ 3.0's)."""

    def __init__(self, key: str, concurrency: int) -> None:
        if not key:
            raise ValueError('key must not be empty')
        if not isinstance(key, str):
            raise ValueError('key must be a string')
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ValueError('concurrency must be an integer of at least 1')
        self.key = key
        self.concurrency = concurrency

    def __repr__(self) -> str:
        return f'RateLimit(key={self.key!r}, concurrency={self.concurrency})'


class RateLimitRegistry:
    """A rate-limit key's slots as stored (reads only; every write is a script's): the jobs holding
    a slot (`allowed`) and those waiting for one (`rate_limited`), oldest first. RQ 3.0's names."""

    rl_keys_key = keys.RATE_LIMIT_KEYS

    def __init__(self, key: str, connection: Redis) -> None:
        self.key = key
        self.connection = connection

    @classmethod
    def all(cls, connection: Redis) -> list[RateLimitRegistry]:
        return [cls(as_text(key), connection) for key in connection.smembers(cls.rl_keys_key)]

    @property
    def config_key(self) -> str:
        return keys.rate_limit_config_key(self.key)

    @property
    def allowed_key(self) -> str:
        return keys.rate_limit_allowed_key(self.key)

    @property
    def rate_limited_key(self) -> str:
        return keys.rate_limit_waiting_key(self.key)

    @property
    def concurrency(self) -> int:
        """The registered concurrency (the last registrant's); 0 when unset."""
        value = self.connection.hget(self.config_key, 'concurrency')
        return int(value) if value else 0

    def get_allowed_job_ids(self) -> list[str]:
        return [as_text(job_id) for job_id in self.connection.zrange(self.allowed_key, 0, -1)]

    def get_rate_limited_job_ids(self) -> list[str]:
        return [as_text(job_id) for job_id in self.connection.zrange(self.rate_limited_key, 0, -1)]

    def get_allowed_job_count(self) -> int:
        return int(self.connection.zcard(self.allowed_key))

    def get_rate_limited_job_count(self) -> int:
        return int(self.connection.zcard(self.rate_limited_key))


def clean_rate_limits(connection: Redis) -> tuple[int, int, int, int]:
    """RQ 3.0's rate-limit sweep over every key in rq:rl-keys, in one script call (see
    lua/clean_rate_limits.lua): (keys seen, slots freed, jobs promoted, keys dropped)."""
    moment = now()
    seen, freed, promoted, dropped = call('clean_rate_limits', connection, [utcformat(moment), epoch_seconds(moment)])
    return int(seen), int(freed), int(promoted), int(dropped)


def rate_limit_of(value: Any) -> RateLimit | None:
    """`value` when it is a RateLimit (RQ 3.0's enqueue option), else None (a kwarg of the function)."""
    return value if isinstance(value, RateLimit) else None
