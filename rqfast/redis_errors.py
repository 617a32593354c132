"""rqfast's own errors of a Redis that refuses or does not answer a call (also as rqfast.exceptions.<name>).

- `RedisFullError`: Redis is at maxmemory with noeviction, and refused a script call whole (nothing written).
- `RedisNoReplyError`: no reply within rqfast's bound (defaults.REPLY_TIMEOUT): Redis, or the network
  path to it, is silent.

Both subclass redis-py's own (OutOfMemoryError, TimeoutError), so `except redis.RedisError` catches them.
"""

from __future__ import annotations

from redis.exceptions import OutOfMemoryError
from redis.exceptions import TimeoutError as RedisTimeoutError


class RedisFullError(OutOfMemoryError):
    """Redis refused a write: its memory is at `maxmemory` and its policy evicts nothing (noeviction).

    rqfast's own (RQ has no such name): a subclass of redis-py's OutOfMemoryError, so `except
    redis.exceptions.ResponseError` (or RedisError) catches it too. Raised by a script call refused
    whole: nothing of it was written."""

    def __init__(self, what: str, error: BaseException) -> None:
        super().__init__(
            f'rqfast: Redis is full (used memory > maxmemory, policy noeviction): {what} was refused and '
            f'nothing of it written; free memory or raise maxmemory, then send it again (Redis said: {error})'
        )


class RedisNoReplyError(RedisTimeoutError):
    """No reply from Redis within rqfast's bound (defaults.REPLY_TIMEOUT) to one of its script calls:
    Redis, or the network path to it, is silent. rqfast's own; a subclass of redis-py's TimeoutError.
    The call may or may not have run."""

    def __init__(self, what: str, seconds: float, error: BaseException) -> None:
        super().__init__(
            f'rqfast: no reply from Redis to {what} in time (at most {seconds:g} s): Redis, or the '
            f'network path to it, is silent; it may or may not have run: look before sending it again ({error})'
        )
