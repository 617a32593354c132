"""Maintenance: abandoned jobs, expired registry entries, stranded ids, dead workers and groups.

A pass is one script call for all of a worker's queues (lua/clean_registries.lua), done under
RQ's rq:clean_registries:<q> locks. It settles what needs no decision and returns the abandoned
jobs (started, but their worker stopped heartbeating); each is planned here with engine.plan, as
any other outcome, and recorded with finish_job.lua, fenced on its started-registry entry: 1 + k
calls for k abandoned jobs, which are rare. Then, best effort, the failure callback and the
exception handlers of each abandoned job run with AbandonedJobError, as RQ runs them in the
cleaning process. A whole pass also does RQ 3.0's rate-limit sweep (in the same call; abandoned
jobs still hold their slots then, and their finish calls free them). RQ 3.0 also sends the `failed`
webhooks of the abandoned jobs that end failed, and gives the callbacks no traceback (None).
"""

from __future__ import annotations

import logging
import threading
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from . import engine, keys, scripts
from .as_rq import logger_name
from .callbacks import execute_failure_callback
from .dates import epoch_seconds, now
from .defaults import FIRST_SEEN_TTL, MAINTENANCE_LOCK_TTL, STUCK_AFTER, rq2_compat
from .exceptions import AbandonedJobError
from .execution import run_exception_handlers
from .intermediate_queue import IntermediateQueue
from .job import Job
from .jobhash import restore_job, unreadable_fields
from .outcome import Outcome, OutcomeKind
from .security import JobPolicy, restore_sealed
from .serializers import resolve_serializer
from .status import JobStatus
from .text import as_text
from .timeouts import BaseDeathPenalty, UnixSignalDeathPenalty

if TYPE_CHECKING:
    from redis import Redis

logger = logging.getLogger(logger_name('maintenance'))

# What engine.plan reads of an abandoned job; the pass returns these with each one.
PLANNED_FIELDS = ('retries_left', 'retry_intervals', 'enqueue_at_front_on_retry', 'failure_ttl', 'ttl')
_FIELDS = (*PLANNED_FIELDS, 'failure_callback_name', 'webhooks')

# How an abandoned job's failure callback is run: (job, death penalty class, *exc_info).
FailureCallbackRunner = Callable[..., None]


@dataclass
class Report:
    """What one pass did."""

    abandoned: list[tuple[str, str, str]] = field(default_factory=list)  # (queue, id, 'failed' | 'retried')
    rescued: list[tuple[str, str]] = field(default_factory=list)  # (queue, id) put back from intermediate
    finished_expired: int = 0
    failed_expired: int = 0
    dropped: int = 0  # intermediate ids without a job to put back
    dead_workers: int = 0
    group_jobs_pruned: int = 0  # ids of jobs gone, out of their group
    groups_dropped: int = 0  # groups left empty, out of rq:groups
    locked: list[str] = field(default_factory=list)  # queues another cleaner held
    rate_limit_slots_freed: int = 0  # RQ 3.0 rate-limit slots of jobs that no longer run
    rate_limit_promoted: int = 0  # waiting rate-limited jobs moved into the freed slots
    ready_enqueued: int = 0  # RQ 3.0 dependents left in rq:ready:<q> by a crashed rq 3.0 process, pushed
    ready_dropped: int = 0  # rq:ready:<q> entries whose job is gone or no longer ready_to_enqueue


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
    policy: JobPolicy | None = None,
    group_lock_ttl: int = 0,
) -> Report:
    """The whole pass for `queues`; `timestamp` pins the expiry cutoff (default: now); `policy`: the
    worker's, for the failure callbacks of abandoned jobs; `group_lock_ttl`: see group_lock_ttl()."""
    aftermath = _Aftermath(exception_handlers or ())
    return _run(connection, list(queues), True, timestamp, serializer, aftermath, job_class, policy, group_lock_ttl)


def group_lock_ttl(maintenance_interval: float) -> int:
    """RQ 3.0's group-cleaning lock TTL for a worker passing every `maintenance_interval` seconds: it
    expires just before the next pass, so one worker cleans the groups per window (at least 1 s)."""
    return max(int(maintenance_interval) - 1, 1)


def pass_group_lock_ttl(maintenance_interval: float) -> int:
    """The lock TTL a worker's whole pass takes before it cleans groups: RQ 3.0's, or 0 (every pass
    cleans them, as RQ 2.12's workers do) with rq2_compat()."""
    return 0 if rq2_compat() else group_lock_ttl(maintenance_interval)


def recover_abandoned(
    connection: Redis,
    queues: Sequence[str],
    serializer: Any = None,
    exception_handlers: Sequence[Any] | None = None,
    job_class: type[Job] = Job,
) -> Report:
    """Only the abandoned jobs of `queues` (a worker's frequent recovery pass): one call, plus one per job found."""
    return _run(connection, list(queues), False, None, serializer, _Aftermath(exception_handlers or ()), job_class)


def fail_abandoned_jobs(
    connection: Redis,
    queue: str,
    timestamp: float | None = None,
    serializer: Any = None,
    exception_handlers: list[Any] | None = None,
    job_class: type[Job] = Job,
    failure_callback: FailureCallbackRunner | None = None,
    death_penalty_class: type[BaseDeathPenalty] | None = None,
) -> int:
    """RQ's StartedJobRegistry.cleanup: fail or retry the jobs whose worker stopped heartbeating; how many.
    `failure_callback`: what runs each one's failure callback (default: run_failure_callback), under
    `death_penalty_class` (default: SIGALRM's) on the main thread."""
    aftermath = _Aftermath(exception_handlers or (), failure_callback, death_penalty_class)
    report = _run(connection, [queue], False, timestamp, serializer, aftermath, job_class)
    return len(report.abandoned)


def recover_ready(connection: Redis, queue: str) -> list[str]:
    """RQ 3.0's ReadyJobRegistry.cleanup, without the lock as there: the dependents an RQ 3.0 process
    left in rq:ready:<queue> (released, not yet pushed) are enqueued; returns their ids."""
    moment = now()
    reply = scripts.clean_registries(
        connection, repr(moment.timestamp()), epoch_seconds(moment), 'ready', 0, 0, 0, _FIELDS, [queue]
    )
    return [as_text(job_id) for job_id in reply.ready]


def _run(
    connection: Redis,
    queues: list[str],
    whole: bool,
    timestamp: float | None,
    serializer: Any,
    aftermath: _Aftermath,
    job_class: type[Job],
    policy: JobPolicy | None = None,
    group_lock_ttl: int = 0,
) -> Report:
    """One script call for the pass, then one finish_job call per abandoned job it found."""
    moment = now()
    cutoff = int(timestamp) if timestamp is not None else epoch_seconds(moment)
    reply = scripts.clean_registries(
        connection,
        repr(moment.timestamp()),
        cutoff,
        'all' if whole else 'started',
        MAINTENANCE_LOCK_TTL,
        STUCK_AFTER,
        FIRST_SEEN_TTL,
        _FIELDS,
        queues,
        group_lock_ttl,
    )
    found, rescued = reply.abandoned, reply.rescued
    report = Report(**reply.stats._asdict(), locked=[as_text(q) for q in reply.locked])
    serializer = resolve_serializer(serializer)
    settled: list[_Settled] = []
    for queue, member, values in found:
        raw = dict(zip(_FIELDS, values, strict=True))
        job = _abandoned_job(job_class, connection, serializer, as_text(queue), as_text(member), raw)
        if _settle(connection, job, as_text(queue), as_text(member), moment, report):
            failed = report.abandoned[-1][2] == 'failed'
            webhooks = failed and bool(raw['webhooks']) and not rq2_compat()  # RQ 3.0 sends `failed` webhooks
            fetch = bool(raw['failure_callback_name'] or aftermath.handlers or webhooks)
            settled.append(_Settled(job, fetch, webhooks, abandoned_exc_string(moment)))
    for i in range(0, len(rescued), 2):
        report.rescued.append((as_text(rescued[i]), as_text(rescued[i + 1])))
        logger.warning(
            '%s: job %s was stuck in the intermediate queue; put back', report.rescued[-1][0], report.rescued[-1][1]
        )
    if settled:
        _after_abandoned(connection, settled, serializer, aftermath, job_class, policy)
    return report


def _abandoned_job(
    job_class: type[Job], connection: Redis, serializer: Any, queue: str, member: str, raw: dict[str, Any]
) -> Job:
    """The job as far as its plan needs it; a field it cannot read counts as unset (as Lua's tonumber did)."""
    job = job_class(member.split(':')[0], connection=connection, serializer=serializer)
    planned = {name: value for name, value in raw.items() if name in PLANNED_FIELDS and value is not None}
    for name in unreadable_fields(job, planned):
        del planned[name]
    restore_job(job, {'data': b'', **planned})
    job.origin = queue
    return job


def _settle(connection: Redis, job: Job, queue: str, member: str, moment: datetime, report: Report) -> bool:
    """Plan and record one abandoned job, fenced on its started-registry member; False if settled meanwhile."""
    exc_string = abandoned_exc_string(moment)
    outcome = Outcome(OutcomeKind.ABANDONED, exc_string=exc_string)
    try:
        plan = engine.plan(job, outcome, moment)
    except Exception as exc:  # e.g. retry_intervals "[]": failed, as a job whose retry cannot be planned
        logger.warning('Job %s: abandoned; its retry could not be planned (%s), so it failed', job.id, exc)
        job.retries_left = None
        plan = engine.plan(job, outcome, moment)
    if not engine.record_abandoned(connection, job.id, queue, member, plan, moment):
        return False
    retried = plan.put_back != ''
    report.abandoned.append((queue, job.id, 'retried' if retried else 'failed'))
    logger.warning('StartedJobRegistry cleanup: %s %s', job.id, 'abandoned, retried' if retried else exc_string)
    return True


class _NoDeathPenalty(BaseDeathPenalty):
    """SIGALRM works on the main thread only; a maintenance thread runs callbacks without a limit."""

    def setup_death_penalty(self) -> None:
        pass

    def cancel_death_penalty(self) -> None:
        pass


@dataclass
class _Aftermath:
    """What runs after abandoned jobs are recorded: the exception handlers, and how (and under which
    death penalty) each job's failure callback runs."""

    handlers: Sequence[Any] = ()
    failure_callback: FailureCallbackRunner | None = None
    death_penalty_class: type[BaseDeathPenalty] | None = None

    def penalty(self) -> type[BaseDeathPenalty]:
        if threading.current_thread() is not threading.main_thread():
            return _NoDeathPenalty
        return self.death_penalty_class or UnixSignalDeathPenalty


class _Settled(NamedTuple):
    job: Job  # as planned
    fetch: bool  # it has a failure callback, handlers or webhooks to run: load it whole
    webhooks: bool  # it ended failed and has webhooks: send its `failed` ones (RQ 3.0)
    exc_string: str


def run_failure_callback(job: Job, death_penalty_class: type[BaseDeathPenalty], *exc_info: Any) -> None:
    """RQ 3.0's rqfast.callbacks function; under RQ 2.12 compat the job's method, which a Job subclass may
    override, as 2.12's cleanup calls it."""
    if rq2_compat():
        job.execute_failure_callback(death_penalty_class, *exc_info)
    else:
        execute_failure_callback(job, death_penalty_class, *exc_info)


def _after_abandoned(
    connection: Redis,
    settled: list[_Settled],
    serializer: Any,
    aftermath: _Aftermath,
    job_class: type[Job],
    policy: JobPolicy | None = None,
) -> None:
    """As RQ's cleanup: each job's failure callback, then the exception handlers, with AbandonedJobError
    (and the cleaning stack under 2.12 compat, no traceback in 3.0), then the `failed` webhooks. A job with
    none of these is not fetched: there is nothing to run."""
    penalty = aftermath.penalty()
    run_callback = aftermath.failure_callback or run_failure_callback
    for planned, fetch, webhooks, exc_string in settled:
        job = _fetched(planned.id, connection, serializer, job_class, policy) if fetch else planned
        if job is None:
            continue
        exc_info = (AbandonedJobError, AbandonedJobError(), traceback.extract_stack() if rq2_compat() else None)
        try:
            run_callback(job, penalty, *exc_info)
        except Exception as exc:  # a callback must not stop the pass for the other jobs
            logger.warning('Job %s: failure callback for an abandoned job raised: %s', job.id, exc)
        run_exception_handlers(job, exc_info, aftermath.handlers)
        if webhooks:
            job.send_webhooks(JobStatus.FAILED, exc_string=exc_string)


def _fetched(
    job_id: str, connection: Redis, serializer: Any, job_class: type[Job], policy: JobPolicy | None = None
) -> Job | None:
    """The job, sealed: a worker process never deserializes a job's call, meta or result (security.py)."""
    try:
        raw = connection.hgetall(keys.job_key(job_id))
        if not raw:
            return None
        job = job_class(job_id, connection=connection, serializer=serializer)
        if policy is not None:
            policy.arm(job, raw)  # the callback's name is checked before it is imported
        restore_sealed(job, raw)
        return job
    except Exception as exc:
        logger.warning('Job %s: abandoned, but could not be loaded to run its failure callback: %s', job_id, exc)
        return None


def clean_intermediate_queue(worker: Any, queue: Any) -> None:
    """Deprecated in RQ 2.x: IntermediateQueue(queue.key, connection).cleanup(worker, queue)."""
    warnings.warn(
        'clean_intermediate_queue is deprecated. Use IntermediateQueue.cleanup instead.',
        DeprecationWarning,
        stacklevel=2,
    )
    IntermediateQueue(queue.key, connection=queue.connection).cleanup(worker, queue)
