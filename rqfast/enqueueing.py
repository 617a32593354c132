"""Storing jobs: the records lua/enqueue_jobs.lua takes, and the one call that stores them.

Queue's enqueue paths store through here. Job.requeue makes the same enqueue_jobs call through
scripts.requeue, which reads its answer as store_jobs does (scripts.stored): a job goes back onto its
queue without the job module knowing the Queue class, or importing this module (7 ms a spawned
child, which loads Jobs, does not pay).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from . import keys, scripts
from .dates import epoch_seconds, now, utcformat
from .defaults import ENQUEUE_CHUNK
from .options import DEFAULTS
from .rate_limit import RateLimit
from .scriptrecords import EnqueueRecord
from .status import JobStatus

if TYPE_CHECKING:
    from datetime import datetime

    from redis import Redis
    from redis.client import Pipeline

    from .debounce import Debounce, Held, Throttle
    from .joboptions import Retry
    from .jobspec import JobSpec
    from .repeat import Repeat

__all__ = [
    'Batch',
    'EnqueueArgs',
    'EnqueueData',
    'EnqueueRecord',
    'store_jobs',
]  # EnqueueRecord: the record lua/enqueue_jobs.lua takes (scriptrecords.py)


# What Queue.prepare_data builds and Queue.parse_args returns (RQ's names).
EnqueueData = namedtuple(
    'EnqueueData',
    [
        'func',
        'args',
        'kwargs',
        'timeout',
        'result_ttl',
        'ttl',
        'failure_ttl',
        'description',
        'depends_on',
        'job_id',
        'at_front',
        'meta',
        'retry',
        'on_success',
        'on_failure',
        'on_stopped',
        'repeat',
        'webhooks',
        'priority',  # rqfast's own options (docs/features.md); RQ's EnqueueData ends at webhooks
        'debounce',  # (rqfast.debounce)
        'throttle',
    ],
    defaults=(None, None, None),
)


class EnqueueArgs(NamedTuple):
    """What Queue.parse_args returns: the function, its arguments, and every option of enqueue() (rqfast.options'
    table, which tests/test_options.py holds these fields and defaults to; Queue.enqueue_call takes them by name)."""

    func: Any
    timeout: Any = None
    description: str | None = None
    result_ttl: Any = None
    ttl: Any = None
    failure_ttl: Any = None
    depends_on: Any = None
    job_id: str | None = None
    at_front: bool = False
    meta: dict[str, Any] | None = None
    retry: Retry | None = None
    repeat: Repeat | None = None
    on_success: Any = None
    on_failure: Any = None
    on_stopped: Any = None
    pipeline: Pipeline | None = None
    unique: bool = False
    args: Any = None
    kwargs: Any = None
    webhooks: Any = None
    rate_limit: RateLimit | None = None  # RQ 3.0's option (a rqfast.RateLimit); RQ 2.12's EnqueueArgs has no such field
    capture_output: bool = False  # rqfast's own option: the worker keeps what the job prints with its result
    priority: int | None = None  # rqfast's own option: the job's priority lane, 0..9 (0 runs first)
    debounce: object = None  # rqfast's own: (key, delay), only the last enqueue of a burst runs (rqfast.debounce)
    throttle: object = None  # rqfast's own: (key, ttl), at most one job per ttl under the key (rqfast.debounce)


_ARGS, _KWARGS = EnqueueArgs._fields.index('args'), EnqueueArgs._fields.index('kwargs')
_DEFAULT_ROW = [DEFAULTS.get(name) for name in EnqueueArgs._fields]


def enqueue_args(func: Any, args: Any, kwargs: Any, options: Mapping[str, Any] | None = None) -> EnqueueArgs:
    """Queue.parse_args' answer: the call and its options by name (None: every option at its default)."""
    row = _DEFAULT_ROW.copy() if options is None else [options.get(name) for name in EnqueueArgs._fields]
    row[0], row[_ARGS], row[_KWARGS] = func, args, kwargs
    return EnqueueArgs._make(row)


def store_jobs(
    connection: Redis,
    queue: str,
    jobs: Sequence[JobSpec],
    records: Sequence[EnqueueRecord],
    pipeline: Pipeline | None = None,
    group: str = '',
    guard: Debounce | Throttle | None = None,
) -> Held | None:
    """One enqueue_jobs.lua call for `records` (one per job), each joining `group` when one is named;
    each job's status and enqueued_at follow. With a `guard` (debounce= or throttle=, one record, no
    pipeline) the call is its guard script's instead: the job that holds a throttle window is returned
    when the job was not stored.

    Queued into a caller's `pipeline`, the script's reply only comes with the caller's execute(): the
    jobs then get the status the script will give them, read from their dependencies now, as RQ's
    enqueue does with a pipeline (a dependency that changes before execute() is the script's to judge).

    The I/O-free halves, store_call() and settle(), are what rqfast.asyncio sends the same way.
    """
    moment = now()
    reply = scripts.run(store_call(queue, records, moment, group, guard), connection, pipeline)
    if reply is None:
        scripts.stored(jobs, expected_statuses(connection, records), moment)
        return None
    return settle(jobs, reply, moment, guard)


def store_call(
    queue: str,
    records: Sequence[EnqueueRecord],
    moment: datetime,
    group: str = '',
    guard: Debounce | Throttle | None = None,
) -> scripts.ScriptCall:
    """The one script call store_jobs sends for `records` at `moment` (no I/O)."""
    if guard is not None:
        return guard.call(queue, moment, records[0])
    return scripts.enqueue_jobs_call(queue, utcformat(moment), epoch_seconds(moment), records, group)


def settle(jobs: Sequence[JobSpec], reply: Any, moment: datetime, guard: Debounce | Throttle | None) -> Held | None:
    """store_call's reply read back (no I/O): each job's status and enqueued_at, or the error the script
    names; the job holding a throttle window when none was stored."""
    if guard is not None:
        status, held = guard.read(reply)
        if held is not None:
            return held
        statuses = [status]
    else:
        statuses = scripts.statuses(reply)
    scripts.stored(jobs, statuses, moment)
    return None


def expected_statuses(connection: Redis, records: Sequence[EnqueueRecord]) -> list[str]:
    """What enqueue_jobs.lua will answer for `records` (not unique, not requeue), judging the
    dependencies as it does (missing or finished: met; failed: met in a batch that allows it)."""
    wanted = dependency_ids(records)
    statuses: dict[str, bytes | str | None] = {}
    if wanted:
        with connection.pipeline(transaction=False) as reads:
            for dep_id in wanted:
                reads.hget(keys.job_key(dep_id), 'status')
            statuses = dict(zip(wanted, reads.execute(), strict=True))
    return judged(records, statuses)


def dependency_ids(records: Sequence[EnqueueRecord]) -> list[str]:
    """The dependencies expected_statuses reads the status of."""
    return sorted({dep_id for record in records for dep_id in record.dependency_ids})


def judged(records: Sequence[EnqueueRecord], statuses: Mapping[str, bytes | str | None]) -> list[str]:
    """expected_statuses' answer, given each dependency's status (no I/O)."""
    expected = []
    for record in records:
        met = {None, b'finished', 'finished'} | ({b'failed', 'failed'} if record.allow_failure else set())
        if record.mode == 'schedule':
            expected.append('scheduled')
        elif any(statuses[dep_id] not in met for dep_id in record.dependency_ids):
            expected.append('deferred')
        else:
            expected.append('stored' if record.mode == 'store' else 'queued')
    return expected


class Batch(NamedTuple):
    """An enqueue_many made and checked (Queue._plan_batch), before anything is stored: its jobs without a
    dependency, then with one, a record each (stored in chunks()), and the debounced or throttled jobs,
    each its own guard script call after the batch's (an (job, at_front, option) each)."""

    plain: list[Any]
    dependent: list[Any]
    records: list[EnqueueRecord]
    one_by_one: list[tuple[Any, bool, Any]]
    pipeline: Pipeline | None
    group: str

    def chunks(self) -> Iterator[tuple[list[Any], list[EnqueueRecord]]]:
        """The jobs and records of each script call: ENQUEUE_CHUNK at most."""
        everything = self.plain + self.dependent
        for start in range(0, len(everything), ENQUEUE_CHUNK):
            yield everything[start : start + ENQUEUE_CHUNK], self.records[start : start + ENQUEUE_CHUNK]

    def ordered(self, guarded: list[Any]) -> list[Any]:
        """The jobs as enqueue_many returns them once stored (RQ's order): the plain ones, the deferred
        dependents, the dependents queued, then the `guarded` ones."""
        unmet = [job for job in self.dependent if job.get_status(refresh=False) == JobStatus.DEFERRED]
        met = [job for job in self.dependent if job.get_status(refresh=False) != JobStatus.DEFERRED]
        return self.plain + unmet + met + guarded


def _reject_duplicate_ids(datas: Sequence[EnqueueData]) -> None:
    """RQ 3.0's enqueue_many check, before anything is written: two jobs with one id would share a key."""
    seen: set[str] = set()
    for data in datas:
        if data.job_id is not None:
            if data.job_id in seen:
                raise ValueError(f"Job ID '{data.job_id}' appears more than once in enqueue_many()")
            seen.add(data.job_id)


def _pipeline_for(pipeline: Pipeline | None, unique: bool, is_async: bool) -> Pipeline | None:
    """The caller's pipeline, or None where RQ does not use it either: a unique enqueue (RQ's
    check-and-save script runs at once, so DuplicateJobError raises at the call) and a queue made
    with is_async=False (the job runs at the call, so it is stored then)."""
    return pipeline if not unique and is_async else None


def _rate_limited_mode(
    job: JobSpec, pipeline: Pipeline | None, at_front: bool, unique: bool, is_async: bool
) -> Literal['limit']:
    """RQ 3.0's checks of a rate-limited enqueue, before anything is written; enqueue_jobs.lua's mode."""
    RateLimit(job.rate_limit_key or '', job.rate_limit_concurrency or 0)  # the job's own fields: ValueError if bad
    if unique:
        raise ValueError('unique=True is not supported with rate-limited jobs')
    if not is_async:
        raise ValueError('rate_limit is not supported on synchronous queues (is_async=False)')
    if pipeline is not None:
        raise ValueError('rate-limited jobs cannot be enqueued with a pipeline')
    if at_front:
        job.enqueue_at_front = True  # stored: the promotion, possibly later and elsewhere, honours it
    return 'limit'
