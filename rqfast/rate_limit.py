"""RQ 3.0's concurrency rate limits: `RateLimit`, and reading a key's slots (`RateLimitRegistry`).

`Queue.enqueue(f, ..., rate_limit=RateLimit(key='reports', concurrency=2))` stores the job with
`rate_limit_key` and `rate_limit_concurrency`: at most `concurrency` jobs of one key are queued or
running at once, across every worker (rqfast's and RQ 3.0's). The writes are RQ 3.0's
(docs/rq-3.0-layout.md, section 6), made inside the scripts: the enqueue (lua/enqueue_jobs.lua,
mode "limit"), the finish (lua/finish_job.lua frees the slot and promotes the next waiter in the
same call), a dependent's release, a scheduled job coming due, and maintenance's sweep
(lua/clean_rate_limits.lua). Only a `RateLimit` instance means this: any other `rate_limit=` value is
passed to the job's function, as in RQ 2.12. RateLimitRegistry's calls that change slots (acquire,
release, cancel, cleanup of one key) and `release_slot` are one call each of lua/rate_limit_slots.lua.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import TYPE_CHECKING, Any

from . import keys
from .dates import current_timestamp, epoch_seconds, now, utcformat
from .defaults import MAX_RATE_WINDOW
from .scriptload import call
from .status import JobStatus
from .text import as_text

if TYPE_CHECKING:
    from redis import Redis
    from redis.client import Pipeline

    from .job import Job

__all__ = ['RateLimit', 'RateLimitRegistry', 'clean_rate_limits', 'release_slot']


class RateLimit:
    """RQ 3.0's: at most `concurrency` jobs with this `key` queued or running at the same time. rqfast's
    own (additive): at most `rate` of them started in any `per` seconds, across every rqfast worker (the
    claim takes the start atomically; a job over it waits in the scheduled registry for its turn).
    Either or both; `RateLimit('api', concurrency=5, rate=10, per=1)` keeps both."""

    def __init__(
        self, key: str, concurrency: int | None = None, *, rate: int | None = None, per: float | None = None
    ) -> None:
        if not key:
            raise ValueError('key must not be empty')
        if not isinstance(key, str):
            raise ValueError('key must be a string')
        _check_window(rate, per)
        if concurrency is None and rate is None:
            raise ValueError('RateLimit needs concurrency=, rate= (with per=), or both')
        if concurrency is not None and not _positive_int(concurrency):
            raise ValueError('concurrency must be an integer of at least 1')
        self.key = key
        self.concurrency = concurrency
        self.rate = rate
        self.per = float(per) if per is not None else None

    def apply_to(self, job: Job) -> None:
        """The job's fields: RQ 3.0's for `concurrency`, rqfast's own for the window (checked at each claim)."""
        if self.concurrency is not None:
            job.rate_limit_key, job.rate_limit_concurrency = self.key, self.concurrency
        if self.rate is not None:
            job.rate_limit_window_key, job.rate_limit_rate, job.rate_limit_per = self.key, self.rate, self.per

    def __repr__(self) -> str:
        parts = [f'key={self.key!r}']
        if self.concurrency is not None:
            parts.append(f'concurrency={self.concurrency}')
        if self.rate is not None:
            parts.append(f'rate={self.rate}, per={self.per:g}')
        return f'RateLimit({", ".join(parts)})'


def _check_window(rate: Any, per: Any) -> None:
    """ValueError unless rate= and per= are both absent, or a window: an integer >= 1 per seconds > 0."""
    if rate is None and per is not None:
        raise ValueError('per= is the window of rate=: give rate= too')
    if rate is None:
        return
    if not _positive_int(rate):
        raise ValueError('rate must be an integer of at least 1')
    if per is None:
        raise ValueError('rate= needs per=, the window in seconds (e.g. rate=10, per=1)')
    if isinstance(per, bool) or not isinstance(per, (int, float)) or not math.isfinite(per) or per <= 0:
        raise ValueError('per must be a number of seconds greater than 0')
    if per > MAX_RATE_WINDOW:
        raise ValueError(f'per must be at most {MAX_RATE_WINDOW} seconds')


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


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

    # --- rqfast's window rate limit under the same key (RateLimit(key, rate=N, per=s)): its log

    @property
    def window_key(self) -> str:
        return keys.rate_limit_window_key(self.key)

    def get_window_start_count(self, per: float) -> int:
        """How many jobs of this key started in the last `per` seconds (at most its `rate`)."""
        moment = current_timestamp()
        starts = self.connection.zrangebyscore(self.window_key, f'({moment - per}', '+inf')
        return sum(b':' in member for member in starts)

    def get_planned_job_ids(self) -> list[str]:
        """The jobs waiting for their turn in the window, by planned start (each in its queue's
        ScheduledJobRegistry at that time)."""
        log = self.connection.zrange(self.window_key, 0, -1)
        return [as_text(member) for member in log if b':' not in member]

    @classmethod
    def from_job(cls, job: Job) -> RateLimitRegistry:
        """The registry of the job's rate-limit key."""
        if not job.rate_limit_key:
            raise ValueError(f'Job {job.id} has no rate limit')
        return cls(job.rate_limit_key, job.connection)

    # --- RQ 3.0's writes, for code that drives a key by hand: each is one script call (or, with a
    # caller's pipeline, queued into it)

    def register(self, concurrency: int, pipeline: Pipeline) -> None:
        """The key in rq:rl-keys, with its concurrency (the last registrant's counts), on `pipeline`."""
        pipeline.sadd(self.rl_keys_key, self.key)
        pipeline.hset(self.config_key, 'concurrency', concurrency)

    def add_to_rate_limited(self, job_id: str, pipeline: Pipeline, timestamp: float | None = None) -> None:
        """The job waiting for a slot since `timestamp` (default: now), on `pipeline`."""
        pipeline.zadd(self.rate_limited_key, {job_id: current_timestamp() if timestamp is None else timestamp})

    def acquire_and_enqueue(
        self, concurrency: int, enqueued_at: datetime | None = None, pipeline: Pipeline | None = None
    ) -> list[str]:
        """Fill the free slots (up to `concurrency`) with the waiting jobs, oldest first: each onto its
        queue, status queued, `enqueued_at` (default: now). The promoted ids ([] with a pipeline: the
        call runs when the caller executes it)."""
        return self._slots('acquire', concurrency, enqueued_at, pipeline)

    def release_and_enqueue(self, job_id: str) -> list[str]:
        """Free the job's slot, whatever its status, then fill the free slots; the promoted ids."""
        return self._slots('release', job_id)

    def release_stale_and_enqueue(self, job_id: str) -> list[str]:
        """Free the job's slot only if it no longer needs it (neither queued nor started, and no live
        execution), then fill the free slots; the promoted ids."""
        return self._slots('release_stale', job_id)

    def cancel(self, job_id: str, pipeline: Pipeline | None = None) -> list[str]:
        """A job canceled or deleted: out of the waiting set, and its slot freed unless it still runs.
        With a `pipeline`, only the first (RQ 3.0's): the slot waits for its run's end or cleanup()."""
        if pipeline is not None:
            pipeline.zrem(self.rate_limited_key, job_id)
            return []
        return self._slots('cancel', job_id)

    def cleanup(self) -> None:
        """Free the stale slots, fill the free ones, and drop the key once both its sets are empty
        (maintenance does this for every key: clean_rate_limits)."""
        self._slots('cleanup', '')

    def _slots(
        self, what: str, arg: Any, enqueued_at: datetime | None = None, pipeline: Pipeline | None = None
    ) -> list[str]:
        moment = now()
        text = utcformat(enqueued_at or moment)
        reply = call('rate_limit_slots', self.connection, [what, self.key, epoch_seconds(moment), text, arg], pipeline)
        return [as_text(job_id) for job_id in reply or ()]


def clean_rate_limits(connection: Redis) -> tuple[int, int, int, int]:
    """RQ 3.0's rate-limit sweep over every key in rq:rl-keys, in one script call (see
    lua/clean_rate_limits.lua): (keys seen, slots freed, jobs promoted, keys dropped)."""
    moment = now()
    seen, freed, promoted, dropped = call('clean_rate_limits', connection, [utcformat(moment), epoch_seconds(moment)])
    return int(seen), int(freed), int(promoted), int(dropped)


def release_slot(job: Job) -> list[str]:
    """RQ 3.0's step after a job's outcome is recorded: free its slot unless its status (as the handle
    has it) is queued or started (an immediate retry or repeat keeps it), and promote the waiters; the
    promoted ids. rqfast's finish script does this itself, in the same call as the outcome."""
    if not job.has_rate_limit or job.get_status(refresh=False) in (JobStatus.QUEUED, JobStatus.STARTED):
        return []
    return RateLimitRegistry.from_job(job).release_and_enqueue(job.id)


def rate_limit_of(value: Any) -> RateLimit | None:
    """`value` when it is a RateLimit (RQ 3.0's enqueue option), else None (a kwarg of the function)."""
    return value if isinstance(value, RateLimit) else None
