"""What an outcome means: `plan(job, outcome, now)` turns how a run ended (finished, failed,
retried, repeated, stopped, poison, abandoned) into the writes that record it, a `Plan` (defined in
scriptrecords.py, beside the other records the scripts take), by RQ 2.12's rules. Pure: it reads the
job and the time it is given, changes nothing; engine.py sends the Plan to the finish script, for
the worker, the sync path and maintenance alike.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple

from .dates import epoch_seconds, utcformat
from .defaults import (
    DEFAULT_FAILURE_TTL,
    DEFAULT_RESULT_TTL,
    UNSERIALIZABLE_RETURN_VALUE_PAYLOAD,
    rq2_compat,
)
from .jobhash import job_fields
from .outcome import Outcome, OutcomeKind
from .repeat import Repeat
from .results import Result, encode_exc_string, encode_return_value
from .scriptrecords import Plan, Value
from .status import JobStatus

if TYPE_CHECKING:
    from .job import Job, Retry


# --- what an outcome means: RQ 2.12's rules, as Plans


class _Run(NamedTuple):
    """The run an outcome belongs to, as the recorder knows it."""

    now: datetime
    worker_name: str
    execution_id: str
    started_at: datetime | None
    sync: bool


def plan(
    job: Job,
    outcome: Outcome,
    now: datetime,
    *,
    worker_name: str = '',
    execution_id: str = '',
    started_at: datetime | None = None,
    default_result_ttl: int = DEFAULT_RESULT_TTL,
    disable_default_exception_handler: bool = False,
    sync: bool = False,
) -> Plan:
    """The writes that record `outcome` for `job`, as RQ 2.12 makes them. Pure: the job is only read.

    Args:
        now: the moment of the outcome; every score and interval counts from it.
        worker_name, execution_id, started_at: the run's, for the result entry ('' and None: no worker
            or no execution, as for a sync run or an abandoned job).
        disable_default_exception_handler: the worker's option: a job that raised and ends failed (or
            stopped, or poison) gets only its status written (no failed registry, no result entry, no
            TTL), as in RQ; a returned Retry past its max is recorded in full all the same.
        sync: a run of an is_async=False queue (RQ's run_sync): never retried on failure, no ended_at
            then, and no dependents released on success or failure.
    """
    run = _Run(now, worker_name, execution_id, started_at, sync)
    kind = outcome.kind
    if kind is OutcomeKind.SUCCESS:
        result = _succeeded(job, outcome.value, run, default_result_ttl)
    elif kind is OutcomeKind.RETRY:
        result = _retry_returned(job, outcome.value, run)
    elif kind is OutcomeKind.ABANDONED:
        result = _abandoned(job, outcome.exc_string, run)
    else:
        result = _raised(job, outcome, run)
        if disable_default_exception_handler and result.registry == 'failed':  # RQ only sets the status then
            status = result.fields['status']
            result = Plan(release_as=result.release_as, counter=result.counter, fields={'status': status})
    if outcome.output is not None and result.stream:  # capture_output=True: rqfast's own field, RQ ignores it
        result.stream['output'] = outcome.output
    result.event, result.event_detail = _event(result, outcome)
    return result


def _event(plan: Plan, outcome: Outcome) -> tuple[str, str]:
    """The outcome's lifecycle event and its detail (the exception's type name, when the job raised)."""
    kind = outcome.kind
    raised = kind not in (OutcomeKind.SUCCESS, OutcomeKind.RETRY)
    detail = exc_type_name(outcome.exc_info, outcome.exc_string) if raised else ''
    if kind is OutcomeKind.SUCCESS:
        return 'finished', ''  # (a Repeat job's too: its next run starts again)
    if plan.put_back:
        return 'scheduled' if plan.put_back == 'schedule' else 'retried', detail
    return str(plan.fields.get('status', '')), detail


def exc_type_name(exc_info: object, exc_string: str) -> str:
    """`ValueError`, `mymodule.Boom`: from exc_info when the run has it, else the traceback's last line."""
    if isinstance(exc_info, tuple) and exc_info and isinstance(exc_info[0], type):
        return exc_info[0].__name__
    for line in reversed(exc_string.strip().splitlines()):
        name = line.split(':', 1)[0].strip()
        if name and not line[:1].isspace() and name.replace('.', '').replace('_', '').isalnum():
            return name
    return ''


def _ended_fields(job: Job, status: JobStatus | None, ended_at: datetime | None) -> dict[str, Value]:
    fields: dict[str, Value] = {
        'started_at': utcformat(job.started_at) if job.started_at else '',
        'ended_at': utcformat(ended_at) if ended_at else '',
        'last_heartbeat': utcformat(job.last_heartbeat) if job.last_heartbeat else '',
        'worker_name': job.worker_name or '',
    }
    if status is not None:
        fields['status'] = status.value
    return fields


def _saved_again(job: Job) -> dict[str, Value]:
    """`result` and `meta` as RQ's full job.save() writes them when a failed job is retried (unchanged)."""
    full = job_fields(job)
    return {name: full[name] for name in ('result', 'meta') if name in full}


def _saved_with(job: Job, value: object) -> dict[str, Value]:
    """`result` and `meta` as RQ's full job.save() writes them on the requeue paths of Retry and Repeat."""
    fields: dict[str, Value] = {}
    if value is not None:
        try:
            fields['result'] = job.serializer.dumps(value)
        except Exception:
            fields['result'] = UNSERIALIZABLE_RETURN_VALUE_PAYLOAD
    if job.meta:
        fields['meta'] = job.serializer.dumps(job.meta)
    return fields


def _execution_fields(run: _Run, ended: datetime | None) -> dict[str, Value]:
    fields: dict[str, Value] = {'worker_name': run.worker_name}
    if run.execution_id:
        fields['execution_id'] = run.execution_id
        if run.started_at:
            fields['execution_started_at'] = repr(run.started_at.timestamp())
        if ended:
            fields['execution_ended_at'] = repr(ended.timestamp())
    return fields


def _put_back(plan: Plan, interval: int, at_front: bool, moment: datetime) -> None:
    if interval:
        plan.put_back, plan.schedule_score = 'schedule', epoch_seconds(moment + timedelta(seconds=interval))
    else:
        plan.put_back = 'front' if at_front else 'queue'


def _fail_into_registry(plan: Plan, job: Job, moment: datetime) -> None:
    ttl = job.failure_ttl if job.failure_ttl is not None else DEFAULT_FAILURE_TTL
    plan.registry = 'failed'
    plan.registry_score = ttl if ttl < 0 else epoch_seconds(moment) + ttl
    plan.job_ttl = ttl if ttl > 0 else 'delete' if ttl == 0 else ''  # 0: RQ's Job.cleanup(0) deletes the job
    plan.stream_ttl = job.failure_ttl if job.failure_ttl is not None else ''


def _succeeded(job: Job, value: object, run: _Run, default_result_ttl: int) -> Plan:
    """Finished registry and result stream (unless result_ttl is 0), dependents; a Repeat job goes back."""
    result_ttl = job.get_result_ttl(default_result_ttl)
    plan = Plan(release_as='' if run.sync else 'finished', counter='successful_job_count')
    plan.fields = _ended_fields(job, JobStatus.FINISHED if result_ttl != 0 else None, job.ended_at)
    if result_ttl != 0:
        plan.registry = 'finished'
        plan.registry_score = '+inf' if result_ttl == -1 else epoch_seconds(run.now) + result_ttl
        plan.stream = {'type': Result.Type.SUCCESSFUL.value, **_execution_fields(run, job.ended_at)}
        encoded = encode_return_value(job.serializer, value)
        if encoded is not None:
            plan.stream['return_value'] = encoded
        plan.stream_ttl = result_ttl
    repeats_left = job.repeats_left
    if repeats_left is not None and repeats_left > 0:
        interval, later = Repeat.next_interval(repeats_left, job.repeat_intervals)
        plan.fields['repeats_left'] = repeats_left - 1
        if later != job.repeat_intervals:
            plan.fields['repeat_intervals'] = json.dumps(later)
        plan.fields.update(_saved_with(job, value))
        _put_back(plan, interval, bool(job.enqueue_at_front), run.now)
        plan.job_ttl = job.ttl or ''
    elif result_ttl == 0:
        plan.job_ttl = 'delete'
    elif result_ttl > 0:
        plan.job_ttl = result_ttl
    else:
        plan.job_ttl = 'persist'
    return plan


def _retry_returned(job: Job, retry: Retry, run: _Run) -> Plan:
    """A returned Retry: run again (RETRIED) until retry.max, then failed (MAX_RETRIES_EXCEEDED)."""
    plan = Plan(counter='failed_job_count')
    execution = _execution_fields(run, job.ended_at)
    encoded = encode_return_value(job.serializer, retry) or ''  # (a Retry: never None)
    retries = job.number_of_retries or 0
    if retries and retries >= retry.max:
        plan.fields = _ended_fields(job, JobStatus.FAILED, job.ended_at)
        _fail_into_registry(plan, job, run.now)
        plan.stream = {'type': Result.Type.MAX_RETRIES_EXCEEDED.value, 'return_value': encoded, **execution}
        plan.release_as = 'failed'
        return plan
    plan.fields = _ended_fields(job, None, job.ended_at)
    plan.fields['number_of_retries'] = retries + 1
    plan.fields.update(_saved_with(job, retry))
    plan.stream = {'type': Result.Type.RETRIED.value, 'return_value': encoded, **execution}
    plan.stream_ttl = job.failure_ttl if job.failure_ttl is not None else ''
    at_front = False
    if (
        not rq2_compat()
    ):  # RQ 3.0: the returned Retry's enqueue_at_front sticks to the job, as Retry(...) given at enqueue
        at_front = bool(job.enqueue_at_front_on_retry or retry.enqueue_at_front)
        if at_front and not job.enqueue_at_front_on_retry:
            plan.fields['enqueue_at_front_on_retry'] = 1  # the scheduler puts an interval's retry at the front too
    _put_back(plan, retry.get_interval(retries, retry.intervals), at_front, run.now)
    plan.job_ttl = job.ttl or ''
    return plan


def _raised(job: Job, outcome: Outcome, run: _Run) -> Plan:
    """FAILURE (retried while retries are left, except in a sync run), STOPPED and POISON (never retried)."""
    kind = outcome.kind
    if kind is OutcomeKind.FAILURE and not run.sync and job.should_retry:
        return _retried(job, run)
    stopped = kind is OutcomeKind.STOPPED
    plan = Plan(counter='failed_job_count', release_as='' if stopped or run.sync else 'failed')
    ended_at = None if run.sync else job.ended_at  # RQ's sync run sets ended_at only on success
    plan.fields = _ended_fields(job, JobStatus.STOPPED if stopped else JobStatus.FAILED, ended_at)
    if kind is OutcomeKind.POISON and outcome.value:
        plan.fields = {**outcome.value, **plan.fields}  # unreadable fields reset, so RQ's readers load it
    _fail_into_registry(plan, job, run.now)
    plan.stream = {
        'type': Result.Type.FAILED.value,
        'exc_string': encode_exc_string(outcome.exc_string),
        **_execution_fields(run, None if stopped else ended_at),
    }
    return plan


def _retried(job: Job, run: _Run) -> Plan:
    """RQ's Job.retry after a failure: one retry fewer, then back on the queue or scheduled after its interval."""
    plan = Plan(counter='failed_job_count')
    plan.fields = _ended_fields(job, None, job.ended_at)
    plan.fields['retries_left'] = (job.retries_left or 1) - 1
    plan.fields.update(_saved_again(job))
    _put_back(plan, job.get_retry_interval(), job.enqueue_at_front_on_retry, run.now)
    plan.job_ttl = job.ttl or ''
    return plan


def _abandoned(job: Job, exc_string: str, run: _Run) -> Plan:
    """A job whose worker is gone: retried while it has retries left (only retries_left written, as RQ's
    cleanup), else failed with RQ's AbandonedJobError text in a result entry by no worker."""
    if job.should_retry:
        plan = Plan(fields={'retries_left': (job.retries_left or 1) - 1})
        _put_back(plan, job.get_retry_interval(), job.enqueue_at_front_on_retry, run.now)
        plan.job_ttl = job.ttl or ''
        return plan
    plan = Plan(fields={'status': JobStatus.FAILED.value}, release_as='failed')
    _fail_into_registry(plan, job, run.now)
    plan.stream = {'type': Result.Type.FAILED.value, 'worker_name': '', 'exc_string': encode_exc_string(exc_string)}
    return plan
