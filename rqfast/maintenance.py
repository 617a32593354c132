"""Maintenance: abandoned jobs, expired registry entries, stranded ids and dead workers.

A pass is one script call for all of a worker's queues (lua/clean_registries.lua), done under
RQ's rq:clean_registries:<q> locks. What Lua cannot do runs here afterwards, best effort: the
failure callback and the exception handlers of each abandoned job, with AbandonedJobError, as RQ
runs them in the cleaning process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from redis import Redis

from . import scripts
from .dates import epoch_seconds, now, utcformat
from .exceptions import AbandonedJobError, NoSuchJobError
from .execution import fail_job
from .job import Job
from .results import encode_exc_string
from .serializers import resolve_serializer
from .text import as_text
from .timeouts import BaseDeathPenalty, UnixSignalDeathPenalty

logger = logging.getLogger('rqfast.maintenance')

DEFAULT_FAILURE_TTL = 31536000
LOCK_TTL = 899  # RQ's rq:clean_registries:<q> TTL
STUCK_AFTER = 60  # seconds an id may sit in an intermediate list before it is put back
FIRST_SEEN_TTL = 86400


@dataclass
class Report:
    """What one pass did."""

    abandoned: list[tuple[str, str, str]] = field(default_factory=list)  # (queue, id, 'failed' | 'retried')
    rescued: list[tuple[str, str]] = field(default_factory=list)  # (queue, id) put back from intermediate
    finished_expired: int = 0
    failed_expired: int = 0
    dropped: int = 0  # intermediate ids without a job to put back
    dead_workers: int = 0
    locked: list[str] = field(default_factory=list)  # queues another cleaner held


def abandoned_exc_string(moment: datetime) -> str:
    """RQ's text for the result entry of an abandoned job (`str()` of an aware UTC datetime)."""
    return f'Moved to FailedJobRegistry, due to AbandonedJobError, at {moment}'


def clean_registries(
    connection: Redis,
    queues: Sequence[str],
    timestamp: float | None = None,
    serializer: Any = None,
    exception_handlers: Sequence[Any] | None = None,
    job_class: type[Job] = Job,
) -> Report:
    """The whole pass for `queues`; `timestamp` pins the expiry cutoff (default: now)."""
    return _run(connection, list(queues), True, timestamp, serializer, exception_handlers, job_class)


def fail_abandoned_jobs(
    connection: Redis,
    queue: str,
    timestamp: float | None = None,
    serializer: Any = None,
    exception_handlers: list[Any] | None = None,
    job_class: type[Job] = Job,
) -> int:
    """RQ's StartedJobRegistry.cleanup: fail or retry the jobs whose worker stopped heartbeating; how many."""
    report = _run(connection, [queue], False, timestamp, serializer, exception_handlers, job_class)
    return len(report.abandoned)


def _run(
    connection: Redis,
    queues: list[str],
    whole: bool,
    timestamp: float | None,
    serializer: Any,
    exception_handlers: Sequence[Any] | None,
    job_class: type[Job],
) -> Report:
    moment = now()
    now_epoch = epoch_seconds(moment)
    cutoff = int(timestamp) if timestamp is not None else now_epoch
    exc_string = abandoned_exc_string(moment)
    handled, rescued, stats, locked = scripts.clean_registries(
        connection,
        utcformat(moment),
        repr(moment.timestamp()),
        now_epoch,
        cutoff,
        encode_exc_string(exc_string),
        DEFAULT_FAILURE_TTL,
        whole,
        LOCK_TTL,
        STUCK_AFTER,
        FIRST_SEEN_TTL,
        queues,
    )
    report = Report(
        finished_expired=int(stats[0]),
        failed_expired=int(stats[1]),
        dropped=int(stats[2]),
        dead_workers=int(stats[3]),
        locked=[as_text(q) for q in locked],
    )
    with_callback: list[str] = []
    for i in range(0, len(handled), 4):
        queue, job_id, outcome = as_text(handled[i]), as_text(handled[i + 1]), as_text(handled[i + 2])
        report.abandoned.append((queue, job_id, outcome))
        logger.warning(
            'StartedJobRegistry cleanup: %s %s', job_id, exc_string if outcome == 'failed' else 'abandoned, retried'
        )
        if int(handled[i + 3]) or exception_handlers:
            with_callback.append(job_id)
    for i in range(0, len(rescued), 2):
        report.rescued.append((as_text(rescued[i]), as_text(rescued[i + 1])))
        logger.warning(
            '%s: job %s was stuck in the intermediate queue; put back', report.rescued[-1][0], report.rescued[-1][1]
        )
    if with_callback:
        _run_failure_callbacks(connection, with_callback, serializer, exception_handlers or (), job_class)
    return report


class _NoDeathPenalty(BaseDeathPenalty):
    """SIGALRM works on the main thread only; a maintenance thread runs callbacks without a limit."""

    def setup_death_penalty(self) -> None:
        pass

    def cancel_death_penalty(self) -> None:
        pass


def _run_failure_callbacks(
    connection: Redis, job_ids: list[str], serializer: Any, handlers: Sequence[Any], job_class: type[Job]
) -> None:
    penalty = UnixSignalDeathPenalty if threading.current_thread() is threading.main_thread() else _NoDeathPenalty
    serializer = resolve_serializer(serializer)
    for job_id in job_ids:
        try:
            job = job_class.fetch(job_id, connection=connection, serializer=serializer)
        except NoSuchJobError:
            continue
        except Exception as exc:
            logger.warning('Job %s: abandoned, but could not be loaded to run its failure callback: %s', job_id, exc)
            continue
        try:
            fail_job(job, (AbandonedJobError, AbandonedJobError(), None), penalty, handlers)
        except Exception as exc:  # a callback must not stop the pass for the other jobs
            logger.warning('Job %s: failure callback for an abandoned job raised: %s', job_id, exc)
