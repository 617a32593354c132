"""What a horse's report, or its absence, means for the job: the worker's side of rqfast/horse.py."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..horse import Report
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from ..timeouts import JobTimeoutException

STOPPED_EXC_STRING = 'Job stopped by user, work-horse terminated.'


@dataclass
class HorseEnd:
    """How watching a horse ended: its report (None if it sent none) and, if it was reaped, its status."""

    report: bytes | None
    status: int = 0
    rusage: Any = None
    timed_out: bool = False


class _Serialized:
    """A return value the horse already serialized with the job's serializer."""

    def __init__(self, data: bytes) -> None:
        self.data = data


class _PassSerialized:
    """The job's serializer in the worker: a value the horse serialized passes through as it is.

    So the worker never unpickles what a job returned, and never imports the job's modules for it.
    """

    def __init__(self, serializer: Any) -> None:
        self._serializer = serializer

    def dumps(self, obj: Any) -> bytes:
        return obj.data if isinstance(obj, _Serialized) else self._serializer.dumps(obj)

    def loads(self, data: bytes) -> Any:
        return self._serializer.loads(data)


def killed_after_timeout_exc_string(timeout: int, grace: int) -> str:
    """A horse the worker killed: the job's own timeout signal did not end it (it blocked SIGALRM, or C code)."""
    name = f'{JobTimeoutException.__module__}.{JobTimeoutException.__qualname__}'
    return (
        f'Work-horse killed by the worker: still running {grace} seconds after its timeout.\n'
        f'{name}: Task exceeded maximum timeout value ({timeout} seconds)\n'
    )


def reported_outcome(job: Job, report: Report) -> Outcome:
    """The Outcome the engine records, with the horse's times on the job and its return value as it sent it."""
    job.started_at = report.started_at or job.started_at
    job.ended_at, job.last_heartbeat = report.ended_at, report.last_heartbeat
    value = report.value
    kind = OutcomeKind(report.kind)
    if kind is OutcomeKind.SUCCESS and value is not None:
        job.serializer = _PassSerialized(job.serializer)
        value = _Serialized(value)
    return Outcome(kind, value, report.exc_string, output=report.output)


def terminated_exc_string(status: int) -> str:
    """RQ's words for a horse that ended without recording its job."""
    signal_note = f' (signal {os.WTERMSIG(status)})' if status and os.WIFSIGNALED(status) else ''
    return f'Work-horse terminated unexpectedly; waitpid returned {status}{signal_note}; '
