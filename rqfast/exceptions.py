"""RQ's exception names, so `except rq.exceptions.X` swaps to `except rqfast.exceptions.X`.

Each of RQ's names is a subclass of rq's class of the same name once rq's module is loaded too
(rq_interop), so `except rq.exceptions.X` in code written for rq also catches what rqfast raises.
"""

from __future__ import annotations

import sys
from typing import Any

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


def __getattr__(name: str) -> Any:
    """rqfast's own errors of a Redis that is full or silent (RedisFullError, RedisNoReplyError), from
    rqfast.redis_errors: imported when asked for, since they subclass redis-py's (a spawned child that
    imports this module does not import redis-py)."""
    if name in ('RedisFullError', 'RedisNoReplyError'):
        from . import redis_errors

        return getattr(redis_errors, name)
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


adopt_rq_bases(sys.modules[__name__])
