"""The worker engine: claiming jobs and recording how they ended, one script call each.

`claim_job` and `finish_job` are the only two calls a worker makes per job; finish_job claims the
next job in the same round trip, so a busy worker makes about one round trip per job. What an
outcome means (finished, failed, retried, repeated, stopped) is decided here, in `plan_*`; the
Lua scripts only make the writes atomically. Nothing here assumes one job in flight per process:
every call names its job, execution and worker explicitly.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from redis import Redis

from . import scripts
from .dates import epoch_seconds, now, utcformat
from .job import Job, JobStatus, Retry
from .jobhash import job_fields
from .results import Result, encode_exc_string, encode_return_value
from .text import as_text

DEFAULT_RESULT_TTL = 500
DEFAULT_FAILURE_TTL = 31536000
DEFAULT_WORKER_TTL = 420
DEFAULT_JOB_MONITORING_INTERVAL = 30


@dataclass
class Claim:
    """A job the engine marked started for a worker, or why there was none."""

    job_id: str | None = None
    queue: str | None = None
    execution_id: str = ''
    raw: dict[bytes, bytes] = field(default_factory=dict)
    started_at: datetime | None = None  # the claim's time: the execution's created_at
    dropped: list[str] = field(default_factory=list)  # ids popped without a job hash
    suspended: bool = False

    def __bool__(self) -> bool:
        return self.job_id is not None


@dataclass
class WorkerRef:
    """What the scripts need to know about the claiming worker."""

    name: str
    queues: list[str]
    job_monitoring_interval: int = DEFAULT_JOB_MONITORING_INTERVAL
    idle_ttl: int = DEFAULT_WORKER_TTL + 60


@dataclass
class Plan:
    """The writes that record one outcome (finish_job.lua's arguments, by name)."""

    registry: str = ''
    registry_score: int | str = ''
    job_ttl: int | str = ''
    release_as: str = ''
    put_back: str = ''
    schedule_score: int | str = ''
    counter: str = ''
    stream_ttl: int | str = ''
    fields: dict[str, Any] = field(default_factory=dict)
    stream: dict[str, Any] = field(default_factory=dict)


def _claim_from_reply(reply: list[Any], execution_id: str, moment: datetime) -> Claim:
    job_id, queue, flat, dropped, suspended = reply
    claim = Claim(dropped=[as_text(d) for d in dropped or []], suspended=bool(suspended))
    if job_id:
        claim.job_id, claim.queue, claim.execution_id = as_text(job_id), as_text(queue), execution_id
        claim.raw = {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}
        claim.started_at = moment
    return claim


def _times(moment: datetime) -> list[Any]:
    return [utcformat(moment), repr(moment.timestamp()), epoch_seconds(moment)]


def claim_job(connection: Redis, worker: WorkerRef, moved: tuple[str, str] | None = None) -> Claim:
    """Claim the next job (or the one a blocking BLMOVE put in `moved`'s intermediate list)."""
    moment = now()
    execution_id = uuid.uuid4().hex
    moved_queue, moved_id = moved or ('', '')  # the Waiter's (queue, id)
    reply = scripts.claim_job(
        connection,
        worker.name,
        _times(moment),
        worker.job_monitoring_interval,
        worker.idle_ttl,
        execution_id,
        moved_id,
        moved_queue,
        worker.queues,
    )
    return _claim_from_reply(reply, execution_id, moment)


def finish_job(
    connection: Redis,
    job_id: str,
    queue: str,
    execution_id: str,
    plan: Plan,
    working_time: float,
    worker: WorkerRef | None,
    claim_next: bool = True,
) -> Claim:
    """Record `plan` for the job; with claim_next, claim the worker's next job in the same call."""
    moment = now()
    next_execution = uuid.uuid4().hex
    reply = scripts.finish_job(
        connection,
        worker.name if worker else '',
        _times(moment),
        job_id,
        queue,
        execution_id,
        plan,
        working_time,
        claim_next and worker is not None,
        worker.job_monitoring_interval if worker else DEFAULT_JOB_MONITORING_INTERVAL,
        worker.idle_ttl if worker else 0,
        next_execution,
        worker.queues if worker else [],
    )
    return _claim_from_reply(reply, next_execution, moment)


# --- what an outcome means: RQ 2.12's rules, as Plans


def _ended_fields(job: Job, status: JobStatus | None) -> dict[str, Any]:
    fields: dict[str, Any] = {
        'started_at': utcformat(job.started_at) if job.started_at else '',
        'ended_at': utcformat(job.ended_at) if job.ended_at else '',
        'last_heartbeat': utcformat(job.last_heartbeat) if job.last_heartbeat else '',
        'worker_name': job.worker_name or '',
    }
    if status is not None:
        fields['status'] = status.value
    return fields


def _saved_in_memory(job: Job) -> dict[str, Any]:
    """`result` and `meta` as RQ's full job.save() writes them on the requeue paths (retry, Retry, Repeat)."""
    full = job_fields(job)
    return {name: full[name] for name in ('result', 'meta') if name in full}


def _execution_fields(
    worker_name: str, execution_id: str, started: datetime | None, ended: datetime | None
) -> dict[str, Any]:
    fields: dict[str, Any] = {'worker_name': worker_name}
    if execution_id:
        fields['execution_id'] = execution_id
    if execution_id and started:
        fields['execution_started_at'] = repr(started.timestamp())
    if execution_id and ended:
        fields['execution_ended_at'] = repr(ended.timestamp())
    return fields


def _put_back(plan: Plan, interval: int, at_front: bool) -> None:
    if interval:
        plan.put_back, plan.schedule_score = 'schedule', epoch_seconds(now() + timedelta(seconds=interval))
    else:
        plan.put_back = 'front' if at_front else 'queue'


def plan_success(
    job: Job,
    return_value: Any,
    worker_name: str,
    execution_id: str,
    execution_started: datetime | None,
    default_result_ttl: int = DEFAULT_RESULT_TTL,
) -> Plan:
    """A job that returned: finished registry and result stream (unless result_ttl is 0), dependents."""
    result_ttl = job.get_result_ttl(default_result_ttl)
    plan = Plan(release_as='finished', counter='successful_job_count')
    plan.fields = _ended_fields(job, JobStatus.FINISHED if result_ttl != 0 else None)
    if result_ttl != 0:
        plan.registry = 'finished'
        plan.registry_score = '+inf' if result_ttl == -1 else epoch_seconds(now()) + result_ttl
        plan.stream = {
            'type': Result.Type.SUCCESSFUL.value,
            **_execution_fields(worker_name, execution_id, execution_started, job.ended_at),
        }
        encoded = encode_return_value(job.serializer, return_value)
        if encoded is not None:
            plan.stream['return_value'] = encoded
        plan.stream_ttl = result_ttl
    if job.repeats_left is not None and job.repeats_left > 0:
        interval = 0
        if job.repeat_intervals:
            from .repeat import Repeat

            interval = Repeat.get_interval(job.repeats_left - 1, job.repeat_intervals)
        job.repeats_left -= 1
        job.set_local_result(return_value)
        plan.fields['repeats_left'] = job.repeats_left
        plan.fields.update(_saved_in_memory(job))
        _put_back(plan, interval, bool(job.enqueue_at_front))
        plan.job_ttl = job.ttl or ''
    elif result_ttl == 0:
        plan.job_ttl = 'delete'
    elif result_ttl > 0:
        plan.job_ttl = result_ttl
    else:
        plan.job_ttl = 'persist'
    return plan


def plan_failure(
    job: Job,
    exc_string: str,
    worker_name: str,
    execution_id: str,
    execution_started: datetime | None,
    stopped: bool = False,
    retry: bool = True,
) -> Plan:
    """A job that raised (or was stopped): retried while it has retries left, else failed."""
    plan = Plan(counter='failed_job_count')
    if retry and job.should_retry and not stopped:
        interval = job.get_retry_interval()
        job.retries_left = (job.retries_left or 1) - 1
        plan.fields = _ended_fields(job, None)
        plan.fields['retries_left'] = job.retries_left
        plan.fields.update(_saved_in_memory(job))
        _put_back(plan, interval, job.enqueue_at_front_on_retry)
        plan.job_ttl = job.ttl or ''
        return plan
    plan.fields = _ended_fields(job, JobStatus.STOPPED if stopped else JobStatus.FAILED)
    _fail_into_registry(plan, job)
    plan.stream = {
        'type': Result.Type.FAILED.value,
        'exc_string': encode_exc_string(exc_string),
        **_execution_fields(worker_name, execution_id, execution_started, None if stopped else job.ended_at),
    }
    plan.release_as = '' if stopped else 'failed'
    return plan


def _fail_into_registry(plan: Plan, job: Job) -> None:
    ttl = job.failure_ttl if job.failure_ttl is not None else DEFAULT_FAILURE_TTL
    plan.registry = 'failed'
    plan.registry_score = ttl if ttl < 0 else epoch_seconds(now()) + ttl
    plan.job_ttl = ttl if ttl > 0 else ''
    plan.stream_ttl = job.failure_ttl if job.failure_ttl is not None else ''


def plan_retry_result(
    job: Job, retry: Retry, worker_name: str, execution_id: str, execution_started: datetime | None
) -> Plan:
    """A job that returned a Retry: run again (RETRIED) until retry.max, then failed (MAX_RETRIES_EXCEEDED)."""
    plan = Plan(counter='failed_job_count')
    execution = _execution_fields(worker_name, execution_id, execution_started, job.ended_at)
    encoded = encode_return_value(job.serializer, retry)
    if job.number_of_retries and job.number_of_retries >= retry.max:
        plan.fields = _ended_fields(job, JobStatus.FAILED)
        _fail_into_registry(plan, job)
        plan.stream = {'type': Result.Type.MAX_RETRIES_EXCEEDED.value, 'return_value': encoded, **execution}
        plan.release_as = 'failed'
        return plan
    interval = Retry.get_interval(job.number_of_retries or 0, retry.intervals)
    job.number_of_retries = (job.number_of_retries or 0) + 1
    job.set_local_result(retry)
    plan.fields = _ended_fields(job, None)
    plan.fields['number_of_retries'] = job.number_of_retries
    plan.fields.update(_saved_in_memory(job))
    plan.stream = {'type': Result.Type.RETRIED.value, 'return_value': encoded, **execution}
    plan.stream_ttl = job.failure_ttl if job.failure_ttl is not None else ''
    _put_back(plan, interval, False)
    plan.job_ttl = job.ttl or ''
    return plan
