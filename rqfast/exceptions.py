"""RQ's exception names, so `except rq.exceptions.X` swaps to `except rqfast.exceptions.X`.

Each of RQ's names is a subclass of rq's class of the same name once rq's module is loaded too
(rq_interop), so `except rq.exceptions.X` in code written for rq also catches what rqfast raises.
"""

from __future__ import annotations

import sys
from typing import Any

from redis.exceptions import OutOfMemoryError

from .rq_interop import BaseStandIn, StandIn, adopt_rq_bases


class NoSuchJobError(StandIn):
    pass


class NoSuchGroupError(StandIn):
    pass


class DeserializationError(StandIn):
    pass


class InvalidJobDependency(StandIn):
    pass


class DuplicateJobError(StandIn):
    pass


class InvalidJobOperationError(StandIn):
    pass


class InvalidJobOperation(StandIn):
    pass


class DequeueTimeout(StandIn):
    pass


class ShutDownImminentException(BaseStandIn):
    def __init__(self, msg: str, extra_info: dict[str, Any] | None = None) -> None:
        self.extra_info = extra_info or {}
        BaseException.__init__(self, msg)  # not super(): rq's namesake, once adopted, requires extra_info


class TimeoutFormatError(StandIn):
    pass


class AbandonedJobError(StandIn):
    pass


class SchedulerNotFound(StandIn):
    pass


class DuplicateSchedulerError(StandIn):
    pass


class StopRequested(StandIn):
    pass


class WorkerConfigurationError(Exception):
    """A worker was given options it cannot run with (bad class path, bad URL, no queues)."""


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


adopt_rq_bases(sys.modules[__name__])
