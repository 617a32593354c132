"""A horse whose worker died: it records its job's outcome itself, as RQ's horse does.

After its report, a horse stands by until its worker writes one byte on the job pipe, which it does
once the outcome is recorded (worker_recorded). End of file instead means the worker died first
(SIGKILL, out of memory), and the report may never be recorded: the horse records it with one
finish_job call fenced on the execution it was given (record_orphaned), so nothing is written if
the worker did record it, or if the job was recovered or claimed again meanwhile. The engine is
imported only then: a horse whose worker lives imports none of it.
"""

from __future__ import annotations

import os
import select
import time
from datetime import datetime
from typing import Any

from .as_rq import lazy_logger
from .dates import now
from .defaults import DEFAULT_RESULT_TTL, HORSE_STANDBY
from .outcome import Outcome


def _logger() -> Any:
    return lazy_logger('worker')


RECORDED = b'\x01'  # what the worker writes on a horse's job pipe once it has recorded the horse's outcome


def worker_recorded(job_fd: int, wait: float = HORSE_STANDBY) -> bool:
    """After its report, a horse stands by until its worker says the outcome is recorded (a byte on the
    job pipe). End of file instead: the worker died first, and the horse records the outcome itself
    (fenced: at most once). No word within `wait` seconds (the worker is retrying while Redis is
    down): the worker is left to record it."""
    poller = select.poll()
    poller.register(job_fd, select.POLLIN | select.POLLHUP)
    if not poller.poll(wait * 1000):
        return True
    try:
        return os.read(job_fd, 1) == RECORDED
    except OSError:
        return False


def record_orphaned(
    connection: Any,
    job: Any,
    outcome: Outcome,
    queue: str,
    execution_id: str,
    started_at: datetime,
    worker_name: str,
    default_result_ttl: int | None,
    disable_default_exception_handler: bool,
    attempts: int = 8,
) -> bool:
    """A horse whose worker died records its job's outcome itself, as RQ's horse does: one finish_job
    call, fenced on the execution (so nothing is written if the job was recovered or claimed again
    meanwhile), with no worker hash to update. Retried a few times over ~10 s while Redis is
    unreachable. True when recorded."""
    from . import engine

    moment = now()
    result_ttl = default_result_ttl if default_result_ttl is not None else DEFAULT_RESULT_TTL
    try:
        plan = engine.plan(
            job,
            outcome,
            moment,
            worker_name=worker_name,
            execution_id=execution_id,
            started_at=started_at,
            default_result_ttl=result_ttl,
            disable_default_exception_handler=disable_default_exception_handler,
        )
    except Exception:
        _logger().exception('Job %s: its worker died, and its outcome could not be planned', job.id)
        return False
    working = (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0
    for attempt in range(attempts):
        try:
            done = engine.finish_job(connection, job.id, queue, execution_id, plan, working, None, claim_next=False)
        except Exception as exc:
            _logger().warning('Job %s: its worker died; recording it failed (%s), retrying', job.id, exc)
            time.sleep(min(2.0, 0.25 * 2**attempt))
            continue
        if done.recorded:
            _logger().warning('Job %s: its worker died while it ran; the horse recorded its outcome', job.id)
        else:
            _logger().warning("Job %s: its worker died, and the job is no longer its execution's: not recorded", job.id)
        return done.recorded
    return False
