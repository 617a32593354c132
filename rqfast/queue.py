"""Queue: RQ's enqueue API. Every enqueue is one call of lua/enqueue_jobs.lua (see enqueueing.py).

What a queue holds and the admin calls are in BaseQueue (queuebase.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from . import keys
from .callbacks import execute_failure_callback, execute_success_callback
from .cluster import in_queue_keyspace
from .dates import epoch_seconds, now
from .debounce import Debounce, Held, Throttle, keyed_option
from .defaults import RQ_KEY_PREFIX, rq2_compat
from .enqueueing import (
    Batch,
    EnqueueArgs,
    EnqueueData,
    EnqueueRecord,
    _pipeline_for,
    _rate_limited_mode,
    _reject_duplicate_ids,
    store_jobs,
)
from .job import Job, JobStatus, Retry
from .jobcreation import CreatingQueue
from .joboptions import check_priority
from .outcome import OutcomeKind
from .rate_limit import RateLimit
from .repeat import Repeat
from .rq_interop import is_rq_job
from .scriptrecords import EnqueueMode
from .security import SIGNATURE_FIELD, sign_fields
from .sync import perform_sync, send_sync_webhooks, sync_death_penalty

if TYPE_CHECKING:
    from redis.client import Pipeline

__all__ = ['EnqueueArgs', 'EnqueueData', 'Queue']

# True while enqueue_job runs _enqueue_job: the dependency check goes into that script call (see enqueue_job).
_CHECKING_DEPENDENCIES: ContextVar[bool] = ContextVar('rqfast_checking_dependencies', default=False)


@in_queue_keyspace('name')
class Queue(CreatingQueue):
    """RQ's Queue: BaseQueue's reads and admin calls, the release of dependents (DependentsQueue), making
    a job from a call (CreatingQueue), and every way to enqueue a job."""

    @property
    def registry_cleaning_key(self) -> str:
        """Under this module's RQ_KEY_PREFIX, read at each call as RQ 3.0's Queue does."""
        return keys.maintenance_lock_key(self.name, RQ_KEY_PREFIX)

    # --- enqueueing (creating a job from a call: CreatingQueue, jobcreation.py)

    def enqueue(self, f: Any, *args: Any, **kwargs: Any) -> Job:
        return self.enqueue_call(**self.parse_args(f, *args, **kwargs)._asdict())

    def enqueue_call(
        self,
        func: Any,
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        timeout: Any = None,
        result_ttl: Any = None,
        ttl: Any = None,
        failure_ttl: Any = None,
        description: str | None = None,
        depends_on: Any = None,
        job_id: str | None = None,
        at_front: bool = False,
        meta: dict[str, Any] | None = None,
        retry: Retry | None = None,
        repeat: Repeat | None = None,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        pipeline: Pipeline | None = None,
        unique: bool = False,
        webhooks: Sequence[Any] | None = None,
        rate_limit: RateLimit | None = None,
        capture_output: bool = False,
        priority: int | None = None,
        debounce: object = None,
        throttle: object = None,
    ) -> Job:
        if unique and not job_id:
            raise ValueError('unique=True requires an explicit job_id')
        keyed = keyed_option(debounce, throttle, depends_on=depends_on, unique=unique, pipeline=pipeline)
        job = self.create_job(
            func,
            args=args,
            kwargs=kwargs,
            result_ttl=result_ttl,
            ttl=ttl,
            failure_ttl=failure_ttl,
            description=description,
            depends_on=depends_on,
            job_id=job_id,
            meta=meta,
            status=JobStatus.QUEUED,
            timeout=timeout,
            retry=retry,
            repeat=repeat,
            on_success=on_success,
            on_failure=on_failure,
            on_stopped=on_stopped,
            webhooks=webhooks,
            rate_limit=rate_limit,
            capture_output=capture_output,
            priority=priority,
        )
        if keyed is not None:
            return self._enqueue(job, None, at_front, False, check_dependencies=True, keyed=keyed)
        return self.enqueue_job(job, pipeline=pipeline, at_front=at_front, unique=unique)

    # --- enqueue_job, setup_dependencies, _enqueue_job: RQ 3.0's path and names, which instrumentation patches
    # (Sentry wraps enqueue_job, opentelemetry-instrumentation-rq setup_dependencies and _enqueue_job).
    # rqfast checks dependencies inside the enqueue script, so setup_dependencies writes nothing and
    # _enqueue_job, reached from enqueue_job, still checks them: one round trip, as before.

    def enqueue_job(
        self, job: Job, pipeline: Pipeline | None = None, at_front: bool = False, unique: bool = False
    ) -> Job:
        """Store and enqueue a created job (deferred when a dependency is unfinished): one round trip."""
        job = self.setup_dependencies(job, pipeline=pipeline)
        token = _CHECKING_DEPENDENCIES.set(True)
        try:
            return self._enqueue_job(job, pipeline=pipeline, at_front=at_front, unique=unique)
        finally:
            _CHECKING_DEPENDENCIES.reset(token)

    def setup_dependencies(self, job: Job, pipeline: Pipeline | None = None) -> Job:
        """RQ's step that defers a job with unfinished dependencies. rqfast's enqueue script decides that
        atomically when it stores the job, so this writes nothing and returns the job."""
        return job

    def _enqueue_job(
        self, job: Job, pipeline: Pipeline | None = None, at_front: bool = False, unique: bool = False
    ) -> Job:
        """RQ's enqueue without the dependency check: the job is queued (and leaves the deferred registry).
        Called by enqueue_job, it checks the dependencies in the same script call (deferred if unmet)."""
        return self._enqueue(job, pipeline, at_front, unique, check_dependencies=_CHECKING_DEPENDENCIES.get())

    def _enqueue(
        self,
        job: Job,
        pipeline: Pipeline | None,
        at_front: bool,
        unique: bool,
        check_dependencies: bool,
        keyed: Debounce | Throttle | None = None,
    ) -> Job:
        if is_rq_job(job):  # rq's own Job (rq beside rqfast): stored as rqfast's
            job = self._job_from_rqs(job)
        if unique and not job.has_id:
            raise ValueError('unique=True requires an explicit job_id')
        if unique and job.depends_on_ids:
            raise ValueError('unique=True is not supported with job dependencies')
        job.origin = self.name
        job.priority = check_priority(job.priority)  # (a job made by hand: checked before it is stored)
        if job.timeout is None:
            job.timeout = self._default_timeout
        job.events = self.events or job.events  # rqfast's own: Queue(events=...) (rqfast.events)
        mode: EnqueueMode = 'queue' if self._is_async else 'store'
        if job.has_rate_limit:
            self._check_rate_limit_namespace(job)
            mode = _rate_limited_mode(job, pipeline, at_front, unique, self._is_async)
        score: int | None = None
        if isinstance(keyed, Debounce):  # scheduled at now + delay, as enqueue_in does (at_front: when it moves)
            mode, score = 'schedule', keyed.score(now())
            if at_front:
                job.enqueue_at_front = True
        record = EnqueueRecord.for_job(
            job,
            mode,
            at_front=at_front,
            unique=unique,
            score=score,
            check_dependencies=check_dependencies,
            allow_failure=bool(job.allow_dependency_failures) and not rq2_compat(),  # RQ 3.0: a failed one is met
        )
        held = self._store([job], [record], pipeline=_pipeline_for(pipeline, unique, self._is_async), guard=keyed)
        if held is not None:  # throttled: no job was created; the one holding the window stands for it
            return self._held_job(held)
        if not self._is_async and job.get_status(refresh=False) not in (JobStatus.DEFERRED, JobStatus.SCHEDULED):
            self.run_sync(job)
        return job

    def _job_from_rqs(self, theirs: Any) -> Job:
        """An rqfast Job with the fields of rq's `theirs` (made by rq's create_job, as django-rq's and other
        tools' code does), for the same id; rq's object itself is left as it was."""
        fields = {_hash_bytes(key): _hash_bytes(value) for key, value in theirs.to_dict().items()}
        job = self.job_class(theirs.id, connection=self.connection, serializer=theirs.serializer)
        job.restore(fields)
        return job

    def _held_job(self, held: Held) -> Job:
        job = self.job_class(held.job_id, connection=self.connection, serializer=self.serializer)
        if held.raw:
            job.restore(held.raw)
        return job

    def _prepare_for_queue(self, job: Job) -> None:
        """What RQ sets on a job before storing it as queued (scripts.save_unique_job's callers); writes nothing."""
        job.origin, job.enqueued_at = self.name, now()
        if job.timeout is None:
            job.timeout = self._default_timeout
        job.set_local_status(JobStatus.QUEUED)

    def _store(
        self,
        jobs: Sequence[Job],
        records: Sequence[EnqueueRecord],
        pipeline: Pipeline | None = None,
        group: str = '',
        guard: Debounce | Throttle | None = None,
    ) -> Held | None:
        records = self._signed(records)
        return store_jobs(self.connection, self.name, jobs, records, pipeline=pipeline, group=group, guard=guard)

    def _signed(self, records: Sequence[EnqueueRecord]) -> Sequence[EnqueueRecord]:
        """`records` with their signature field when this queue signs its jobs (docs/security.md)."""
        key = self.signing_key
        if key is None:
            return records
        return [r.with_field(SIGNATURE_FIELD, sign_fields(key, r.job_id, r.fields)) for r in records]

    @staticmethod
    def prepare_data(
        func: Any,
        args: tuple[Any, ...] | list[Any] | None = None,
        kwargs: dict[str, Any] | None = None,
        timeout: Any = None,
        result_ttl: Any = None,
        ttl: Any = None,
        failure_ttl: Any = None,
        description: str | None = None,
        depends_on: Any = None,
        job_id: str | None = None,
        at_front: bool = False,
        meta: dict[str, Any] | None = None,
        retry: Retry | None = None,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        repeat: Repeat | None = None,
        webhooks: Sequence[Any] | None = None,
        priority: int | None = None,
        debounce: object = None,
        throttle: object = None,
    ) -> EnqueueData:
        return EnqueueData(
            func,
            args,
            kwargs,
            timeout,
            result_ttl,
            ttl,
            failure_ttl,
            description,
            depends_on,
            job_id,
            at_front,
            meta,
            retry,
            on_success,
            on_failure,
            on_stopped,
            repeat,
            webhooks,
            check_priority(priority),
            debounce,
            throttle,
        )

    def enqueue_many(
        self, job_datas: Iterable[EnqueueData], pipeline: Pipeline | None = None, group_id: str | None = None
    ) -> list[Job]:
        """Enqueue many jobs, one script call per 1,000; every job is validated before the first call.
        `group_id` only tags the jobs, as in RQ: rqfast.group.Group.enqueue_many also adds them to it."""
        return self.enqueue_batch(job_datas, pipeline, group_id, join_group=False)

    def enqueue_batch(
        self, job_datas: Iterable[EnqueueData], pipeline: Pipeline | None, group_id: str | None, join_group: bool
    ) -> list[Job]:
        """enqueue_many; with `join_group`, each chunk's script call adds its jobs to group `group_id` too."""
        batch = self._plan_batch(job_datas, pipeline, group_id, join_group)
        for jobs, records in batch.chunks():
            self._store(jobs, records, pipeline=batch.pipeline, group=batch.group)
        guarded = [
            self._enqueue(job, None, at_front, False, True, option) for job, at_front, option in batch.one_by_one
        ]
        return batch.ordered(guarded)

    def _plan_batch(
        self, job_datas: Iterable[EnqueueData], pipeline: Pipeline | None, group_id: str | None, join_group: bool
    ) -> Batch:
        """enqueue_batch's jobs and records, checked and made (no I/O): what its script calls store."""
        datas = list(job_datas)
        if not rq2_compat():
            _reject_duplicate_ids(datas)
        keyed = [(d, keyed_option(*_keyed_fields(d), depends_on=d.depends_on, pipeline=pipeline)) for d in datas]
        if join_group and any(option for _, option in keyed):
            raise ValueError('debounce and throttle are not supported in Group.enqueue_many')
        # each debounced or throttled job is its own guard script call, after the batch's
        one_by_one = [(self._job_from_data(d, JobStatus.QUEUED, group_id), d.at_front, o) for d, o in keyed if o]
        datas = [d for d, option in keyed if option is None]
        plain_datas = [d for d in datas if not d.depends_on]
        dependent_datas = [d for d in datas if d.depends_on]
        plain = [self._job_from_data(d, JobStatus.QUEUED, group_id) for d in plain_datas]
        dependent = [self._job_from_data(d, JobStatus.DEFERRED, group_id) for d in dependent_datas]
        records = [
            EnqueueRecord.for_job(job, 'queue', at_front=d.at_front) for job, d in zip(plain, plain_datas, strict=True)
        ]
        # RQ 3.0: a dependent whose dependencies are met honours at_front, and a deferred one expires after its ttl
        mode: EnqueueMode = 'batch_rq2' if rq2_compat() else 'batch'
        records += [
            EnqueueRecord.for_job(
                job,
                mode,
                at_front=bool(job.enqueue_at_front) or (d.at_front and not rq2_compat()),
                allow_failure=bool(job.allow_dependency_failures),
            )
            for job, d in zip(dependent, dependent_datas, strict=True)
        ]
        group = (group_id or '') if join_group else ''
        return Batch(plain, dependent, records, one_by_one, _pipeline_for(pipeline, False, True), group)

    def _job_from_data(self, data: EnqueueData, status: JobStatus, group_id: str | None) -> Job:
        options = data._asdict()
        del options['at_front']
        options.pop('debounce', None), options.pop('throttle', None)  # (absent from RQ's own EnqueueData)
        return self.create_job(**options, status=status, group_id=group_id)

    # --- scheduling

    def enqueue_at(self, datetime: datetime, f: Any, *args: Any, **kwargs: Any) -> Job:
        options = self.parse_args(f, *args, **kwargs)._asdict()
        at_front, unique, pipeline = options.pop('at_front'), options.pop('unique'), options.pop('pipeline')
        if options.pop('debounce') is not None or options.pop('throttle') is not None:
            raise ValueError('debounce and throttle are not supported with enqueue_at or enqueue_in')
        job = self.create_job(**options)
        if at_front:
            job.enqueue_at_front = True
        return self.schedule_job(job, datetime, pipeline=pipeline, unique=unique)

    def enqueue_in(self, time_delta: timedelta, func: Any, *args: Any, **kwargs: Any) -> Job:
        return self.enqueue_at(now() + time_delta, func, *args, **kwargs)

    def schedule_job(self, job: Job, datetime: datetime, pipeline: Pipeline | None = None, unique: bool = False) -> Job:
        if unique and not job.has_id:
            raise ValueError('unique=True requires an explicit job_id')
        job.origin = self.name
        job.events = self.events or job.events  # rqfast's own: Queue(events=...) (rqfast.events)
        self._check_rate_limit_namespace(job)
        record = EnqueueRecord.for_job(job, 'schedule', unique=unique, score=epoch_seconds(datetime))
        self._store([job], [record], pipeline=_pipeline_for(pipeline, unique, True))
        return job

    def run_job(self, job: Job) -> Job:
        return self.run_sync(job)

    def run_sync(self, job: Job) -> Job:
        """RQ's name for running a job in this process (an is_async=False queue does it at enqueue): the
        outcome is recorded, then the job's callback runs (its error propagates), then its webhooks."""
        outcome = perform_sync(self, job)
        penalty = sync_death_penalty(self)
        if outcome.kind is OutcomeKind.FAILURE:
            execute_failure_callback(job, penalty, *outcome.exc_info)
        else:
            execute_success_callback(job, penalty, outcome.value)
        send_sync_webhooks(job, outcome)
        return job

    def _check_rate_limit_namespace(self, job: Job) -> None:
        """RQ 3.0's refusal of a rate limit on a job or queue class with a key prefix of its own."""
        if job.has_rate_limit and (
            job.redis_job_namespace_prefix != Job.redis_job_namespace_prefix
            or self.redis_queue_namespace_prefix != Queue.redis_queue_namespace_prefix
        ):
            raise ValueError('rate_limit is not supported with custom job or queue key prefixes')


def _hash_bytes(value: Any) -> bytes:
    """A field as HSET stores it (redis-py's encoding: a str subclass such as rq's JobStatus by its text)."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return str.encode(value)
    return repr(value).encode()


def _keyed_fields(data: EnqueueData) -> tuple[object, object]:
    """An EnqueueData's debounce and throttle: None, None for one made by RQ's prepare_data (no such fields)."""
    return getattr(data, 'debounce', None), getattr(data, 'throttle', None)
