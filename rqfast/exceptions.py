"""RQ's exception names, so `except rq.exceptions.X` swaps to `except rqfast.exceptions.X`."""

from __future__ import annotations

from typing import Any


class NoSuchJobError(Exception):
    pass


class NoSuchGroupError(Exception):
    pass


class DeserializationError(Exception):
    pass


class InvalidJobDependency(Exception):
    pass


class DuplicateJobError(Exception):
    pass


class InvalidJobOperationError(Exception):
    pass


class InvalidJobOperation(Exception):
    pass


class DequeueTimeout(Exception):
    pass


class ShutDownImminentException(BaseException):
    def __init__(self, msg: str, extra_info: dict[str, Any] | None = None) -> None:
        self.extra_info = extra_info or {}
        super().__init__(msg)


class TimeoutFormatError(Exception):
    pass


class AbandonedJobError(Exception):
    pass


class SchedulerNotFound(Exception):
    pass


class DuplicateSchedulerError(Exception):
    pass


class StopRequested(Exception):
    pass


class WorkerConfigurationError(Exception):
    """A worker was given options it cannot run with (bad class path, bad URL, no queues)."""
