"""Job functions written for RQ (they import `rq`), run by rqfast's workers in tests/ecosystem/project."""

from __future__ import annotations

import time

from rq import get_current_job


def ok(value: int = 1) -> int:
    return value


def fail(message: str = 'boom') -> None:
    raise ValueError(message)


def sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def my_id() -> str | None:
    """rq.get_current_job() from inside the job: its id, or None."""
    job = get_current_job()
    return None if job is None else job.id


async def my_id_async() -> str | None:
    job = get_current_job()
    return None if job is None else job.id


def catches_rqs_timeout(seconds: float) -> str:
    """Job code written for rq: it cleans up when rq's JobTimeoutException interrupts it."""
    import rq.timeouts

    try:
        time.sleep(seconds)
    except rq.timeouts.JobTimeoutException:
        return 'cleaned up'
    return 'not interrupted'
