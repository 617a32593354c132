"""Jobs of the fencing and chaos tests: each leaves an idempotency marker in a directory outside Redis.

`mark(directory, seconds)` appends "start <pid>" to `<directory>/<job id>` when its body begins and
"end <pid>" when it ends (a file, not Redis: the markers survive redis-server being killed), so a test
counts how many times each job ran, and whether a run's body completed.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any


def _job_id() -> str:
    """The running job's id: rqfast's current job, else RQ_JOB_ID (a horse or spawned child sets it). The
    current job first: a test process that ran a horse's code in process keeps a stale RQ_JOB_ID."""
    loaded = sys.modules.get('rqfast')
    job = loaded.get_current_job() if loaded is not None else None
    if job is not None:
        return str(job.id)
    job_id = os.environ.get('RQ_JOB_ID')
    assert job_id, 'no current job'
    return job_id


def _write(directory: str, line: str) -> None:
    with open(os.path.join(directory, _job_id()), 'a') as marker:
        marker.write(f'{line} {os.getpid()}\n')
        marker.flush()


def mark(directory: str, seconds: float = 0.0, outcome: str = 'ok') -> str:
    """Run for `seconds`, leaving start and end markers; then return, or end as `outcome` says."""
    _write(directory, 'start')
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # short sleeps: a SIGSTOP/SIGCONT does not stretch the run
        time.sleep(min(0.05, max(0.0, deadline - time.monotonic())))
    _write(directory, 'end')
    if outcome == 'raise':
        raise ValueError('the job failed as asked')
    if outcome == 'cancelled':
        raise asyncio.CancelledError()
    if outcome == 'base':
        raise ChaosBaseException('a BaseException of its own')
    if outcome == 'exit':
        sys.exit(3)
    if outcome == 'os_exit':
        os._exit(4)
    if outcome == 'keyboard':
        raise KeyboardInterrupt()
    return 'done'


def mark_until(directory: str, release: str, timeout: float = 120.0) -> str:
    """Leave a start marker, run until the file `release` exists (or `timeout` s), leave an end marker: a
    body that ends when the test says, whatever the machine's load."""
    _write(directory, 'start')
    deadline = time.monotonic() + timeout
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.02)
    _write(directory, 'end')
    return 'done'


class ChaosBaseException(BaseException):
    """A BaseException that is neither SystemExit nor KeyboardInterrupt."""


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError('repr raises')

    __str__ = __repr__


class BadStrError(Exception):
    def __str__(self) -> str:
        raise RuntimeError('str raises')


def poison(directory: str, kind: str, *ballast: Any) -> Any:
    """Poison bodies: results or exceptions whose repr/str raise, unpicklable results, a closed connection."""
    _write(directory, 'start')
    _write(directory, 'end')
    if kind == 'bad_repr_result':
        return BadRepr()
    if kind == 'unpicklable':
        return lambda: None
    if kind == 'bad_str_exception':
        raise BadStrError()
    if kind == 'close_connection':
        from rqfast import get_current_job

        job = get_current_job()
        if job is not None:
            job.connection.connection_pool.disconnect()
        return 'closed'
    return None


class SlowRecordWorker:
    """A forking Worker that waits 3 s between its horse's report and the record: a window to kill it in."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        from rqfast.worker import Worker

        class _Slow(Worker):
            def execute(self, *a: Any, **k: Any) -> Any:
                outcome = super().execute(*a, **k)
                time.sleep(3)
                return outcome

        return _Slow(*args, **kwargs)
