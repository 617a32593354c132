"""Queue: RQ's enqueue API. Every enqueue is one call of lua/enqueue_jobs.lua (see enqueueing.py).

What a queue holds and the admin calls are in BaseQueue (queuebase.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Any

from . import keys, registry, scripts
from .callbacks import execute_failure_callback, execute_success_callback
from .dates import epoch_seconds, now
from .defaults import ENQUEUE_CHUNK, RQ_KEY_PREFIX, rq2_compat
from .dependents import DependentsQueue
from .enqueueing import _OPTION_NAMES, EnqueueArgs, EnqueueData, enqueue_record, store_jobs
from .job import Job, JobStatus, Retry
from .outcome import OutcomeKind
from .rate_limit import RateLimit, rate_limit_of
from .repeat import Repeat
from .security import SIGNATURE_FIELD, sign_fields
from .sync import perform_sync, send_sync_webhooks, sync_death_penalty
from .timeouts import parse_timeout

__all__ = ['EnqueueArgs', 'EnqueueData', 'Queue']


class Queue(DependentsQueue):
    """RQ's Queue: BaseQueue's reads and admin calls, the release of dependents (DependentsQueue), and
    every way to enqueue a job."""

    @property
    def registry_cleaning_key(self) -> str:
        """Under this module's RQ_KEY_PREFIX, read at each call as RQ 3.0's Queue does."""
        return keys.maintenance_lock_key(self.name, RQ_KEY_PREFIX)

    # --- creating jobs

    def create_job(
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
        meta: dict[str, Any] | None = None,
        status: JobStatus = JobStatus.QUEUED,
        retry: Retry | None = None,
        repeat: Repeat | None = None,
        *,
        on_success: Any = None,
        on_failure: Any = None,
        on_stopped: Any = None,
        webhooks: Sequence[Any] | None = None,
        group_id: str | None = None,
        rate_limit: RateLimit | None = None,
        capture_output: bool = False,
    ) -> Job:
        if not isinstance(capture_output, bool):
            raise TypeError(f'capture_output must be True or False, not {capture_output!r}')
        timeout = parse_timeout(timeout)
        if timeout is None:
            timeout = self._default_timeout
        elif timeout == 0:
            raise ValueError('0 timeout is not allowed. Use -1 for infinite timeout')
        ttl = parse_timeout(ttl)
        if ttl is not None and ttl <= 0:
            raise ValueError('Job ttl must be greater than 0')
        job = self.job_class.create(
            func,
            args=args,
            kwargs=kwargs,
            connection=self.connection,
            result_ttl=result_ttl,
            ttl=ttl,
            failure_ttl=failure_ttl,
            status=status,
            description=description,
            depends_on=depends_on,
            timeout=timeout,
            id=job_id,
            origin=self.name,
            meta=meta,
            serializer=self.serializer,
            on_success=on_success,
            on_failure=on_failure,
            on_stopped=on_stopped,
            webhooks=webhooks,
            group_id=group_id,
        )
        if retry:
            job.retries_left, job.retry_intervals = retry.max, retry.intervals
            job.enqueue_at_front_on_retry = retry.enqueue_at_front
        if repeat:
            job.repeats_left, job.repeat_intervals = repeat.times, repeat.intervals
        if rate_limit is not None:
            rate_limit.apply_to(job)
        job.capture_output = capture_output
        return job

    @classmethod
    def parse_args(cls, f: Any, *args: Any, **kwargs: Any) -> EnqueueArgs:
        if not isinstance(f, str) and getattr(f, '__module__', None) == '__main__':
            raise ValueError('Functions from the __main__ module cannot be processed by workers')
        options = {name: kwargs.pop(name, None) for name in _OPTION_NAMES}
        webhooks = kwargs.pop('webhooks', None)
        # RQ 3.0's option only when given a RateLimit; any other value stays the function's kwarg (RQ 2.12)
        rate_limit = kwargs.pop('rate_limit') if rate_limit_of(kwargs.get('rate_limit')) else None
        capture_output = kwargs.pop('capture_output', False)  # rqfast's own option (docs/features.md)
        if 'args' in kwargs or 'kwargs' in kwargs:
            if args:
                raise ValueError('Extra positional arguments cannot be used when using explicit args and kwargs')
            args, kwargs = kwargs.pop('args', None), kwargs.pop('kwargs', None)
        return EnqueueArgs(
            f,
            options['job_timeout'],
            options['description'],
            options['result_ttl'],
            options['ttl'],
            options['failure_ttl'],
            options['depends_on'],
            options['job_id'],
            bool(options['at_front']),
            options['meta'],
            options['retry'],
            options['repeat'],
            options['on_success'],
            options['on_failure'],
            options['on_stopped'],
            options['pipeline'],
            bool(options['unique']),
            args,
            kwargs,
            webhooks,
            rate_limit,
            capture_output,
        )

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
        pipeline: Any = None,
        unique: bool = False,
        webhooks: Sequence[Any] | None = None,
        rate_limit: RateLimit | None = None,
        capture_output: bool = False,
    ) -> Job:
        if unique and not job_id:
            raise ValueError('unique=True requires an explicit job_id')
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
        )
        return self.enqueue_job(job, pipeline=pipeline, at_front=at_front, unique=unique)

    def enqueue_job(self, job: Job, pipeline: Any = None, at_front: bool = False, unique: bool = False) -> Job:
        """Store and enqueue a created job (deferred when a dependency is unfinished): one round trip."""
        return self._enqueue(job, pipeline, at_front, unique, check_dependencies=True)

    def _enqueue_job(self, job: Job, pipeline: Any = None, at_front: bool = False, unique: bool = False) -> Job:
        """RQ's enqueue without the dependency check: the job is queued (and leaves the deferred registry)."""
        return self._enqueue(job, pipeline, at_front, unique, check_dependencies=False)

    def _enqueue(self, job: Job, pipeline: Any, at_front: bool, unique: bool, check_dependencies: bool) -> Job:
        if unique and not job.has_id:
            raise ValueError('unique=True requires an explicit job_id')
        if unique and job.depends_on_ids:
            raise ValueError('unique=True is not supported with job dependencies')
        job.origin = self.name
        if job.timeout is None:
            job.timeout = self._default_timeout
        mode = 'queue' if self._is_async else 'store'
        if job.has_rate_limit:
            self._check_rate_limit_namespace(job)
            mode = _rate_limited_mode(job, pipeline, at_front, unique, self._is_async)
        record = enqueue_record(
            job,
            mode,
            at_front=at_front,
            unique=unique,
            check_dependencies=check_dependencies,
            allow_failure=bool(job.allow_dependency_failures) and not rq2_compat(),  # RQ 3.0: a failed one is met
        )
        self._store([job], [record], pipeline=_pipeline_for(pipeline, unique, self._is_async))
        if not self._is_async and job.get_status(refresh=False) != JobStatus.DEFERRED:
            self.run_sync(job)
        return job

    def _prepare_for_queue(self, job: Job) -> None:
        """What RQ sets on a job before storing it as queued (scripts.save_unique_job's callers); writes nothing."""
        job.origin, job.enqueued_at = self.name, now()
        if job.timeout is None:
            job.timeout = self._default_timeout
        job.set_local_status(JobStatus.QUEUED)

    def _store(self, jobs: Sequence[Job], records: list[list[Any]], pipeline: Any = None, group: str = '') -> None:
        if self.signing_key is not None:
            for job, record in zip(jobs, records, strict=True):
                signature = sign_fields(self.signing_key, job.id, scripts.record_fields(record))
                scripts.add_record_field(record, SIGNATURE_FIELD, signature)
        store_jobs(self.connection, self.name, jobs, records, pipeline=pipeline, group=group)

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
        )

    def enqueue_many(
        self, job_datas: Iterable[EnqueueData], pipeline: Any = None, group_id: str | None = None
    ) -> list[Job]:
        """Enqueue many jobs, one script call per 1,000; every job is validated before the first call.
        `group_id` only tags the jobs, as in RQ: rqfast.group.Group.enqueue_many also adds them to it."""
        return self.enqueue_batch(job_datas, pipeline, group_id, join_group=False)

    def enqueue_batch(
        self, job_datas: Iterable[EnqueueData], pipeline: Any, group_id: str | None, join_group: bool
    ) -> list[Job]:
        """enqueue_many; with `join_group`, each chunk's script call adds its jobs to group `group_id` too."""
        datas = list(job_datas)
        if not rq2_compat():
            _reject_duplicate_ids(datas)
        plain_datas = [d for d in datas if not d.depends_on]
        dependent_datas = [d for d in datas if d.depends_on]
        plain = [self._job_from_data(d, JobStatus.QUEUED, group_id) for d in plain_datas]
        dependent = [self._job_from_data(d, JobStatus.DEFERRED, group_id) for d in dependent_datas]
        records = [enqueue_record(job, 'queue', at_front=d.at_front) for job, d in zip(plain, plain_datas, strict=True)]
        # RQ 3.0: a dependent whose dependencies are met honours at_front, and a deferred one expires after its ttl
        mode = 'batch_rq2' if rq2_compat() else 'batch'
        records += [
            enqueue_record(
                job,
                mode,
                at_front=bool(job.enqueue_at_front) or (d.at_front and not rq2_compat()),
                allow_failure=bool(job.allow_dependency_failures),
            )
            for job, d in zip(dependent, dependent_datas, strict=True)
        ]
        everything = plain + dependent
        pipeline = _pipeline_for(pipeline, False, True)
        group = (group_id or '') if join_group else ''
        for start in range(0, len(everything), ENQUEUE_CHUNK):
            chunk = slice(start, start + ENQUEUE_CHUNK)
            self._store(everything[chunk], records[chunk], pipeline=pipeline, group=group)
        unmet = [job for job in dependent if job.get_status(refresh=False) == JobStatus.DEFERRED]
        met = [job for job in dependent if job.get_status(refresh=False) != JobStatus.DEFERRED]
        return plain + unmet + met

    def _job_from_data(self, data: EnqueueData, status: JobStatus, group_id: str | None) -> Job:
        options = data._asdict()
        del options['at_front']
        return self.create_job(**options, status=status, group_id=group_id)

    # --- scheduling

    def enqueue_at(self, datetime: datetime, f: Any, *args: Any, **kwargs: Any) -> Job:
        options = self.parse_args(f, *args, **kwargs)._asdict()
        at_front, unique, pipeline = options.pop('at_front'), options.pop('unique'), options.pop('pipeline')
        job = self.create_job(**options)
        if at_front:
            job.enqueue_at_front = True
        return self.schedule_job(job, datetime, pipeline=pipeline, unique=unique)

    def enqueue_in(self, time_delta: timedelta, func: Any, *args: Any, **kwargs: Any) -> Job:
        return self.enqueue_at(now() + time_delta, func, *args, **kwargs)

    def schedule_job(self, job: Job, datetime: datetime, pipeline: Any = None, unique: bool = False) -> Job:
        if unique and not job.has_id:
            raise ValueError('unique=True requires an explicit job_id')
        job.origin = self.name
        self._check_rate_limit_namespace(job)
        record = enqueue_record(job, 'schedule', unique=unique, score=epoch_seconds(datetime))
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


def _reject_duplicate_ids(datas: Sequence[EnqueueData]) -> None:
    """RQ 3.0's enqueue_many check, before anything is written: two jobs with one id would share a key."""
    seen: set[str] = set()
    for data in datas:
        if data.job_id is not None:
            if data.job_id in seen:
                raise ValueError(f"Job ID '{data.job_id}' appears more than once in enqueue_many()")
            seen.add(data.job_id)


def _rate_limited_mode(job: Job, pipeline: Any, at_front: bool, unique: bool, is_async: bool) -> str:
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


def _pipeline_for(pipeline: Any, unique: bool, is_async: bool) -> Any:
    """The caller's pipeline, or None where RQ does not use it either: a unique enqueue (RQ's
    check-and-save script runs at once, so DuplicateJobError raises at the call) and a queue made
    with is_async=False (the job runs at the call, so it is stored then)."""
    return pipeline if not unique and is_async else None


# get_queue() of a registry (a layer below) makes one of these.
registry.BaseRegistry.queue_class = Queue
