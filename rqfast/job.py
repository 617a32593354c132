"""Job: a handle on one `rq:job:<id>` hash, with RQ 2.12's API.

The job's fields and call live in memory in JobSpec (jobspec.py), their encoding in jobhash.py;
this module adds what reads and writes Redis, and running the job here (the work is jobrun.py's). The
writes that change a job's state are Lua scripts (lua/), called through rqfast.scripts.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from . import callbacks, jobrun, keys
from .cluster import in_queue_keyspace, keyspace_required
from .dates import epoch_seconds, now, utcformat
from .defaults import CALLBACK_TIMEOUT, REGISTRY_CLASSES, UNSERIALIZABLE_RETURN_VALUE_PAYLOAD, rq2_compat
from .dependencies import dependencies_are_met, releasable_dependents
from .exceptions import InvalidJobOperation, NoSuchJobError
from .imports import class_at
from .jobhash import encode_meta, job_fields, restore_job
from .joboptions import Callback, Retry
from .jobrun import running_job, scripts
from .jobspec import (
    JOB_ID_PATTERN,
    UNEVALUATED,
    Dependency,
    JobSpec,
    call_string,
    parse_job_id,
    validate_job_id,
)
from .status import JobStatus
from .text import as_text, json_module
from .types import FunctionReferenceType, JobDependencyType

if TYPE_CHECKING:
    from redis import Redis
    from redis.client import Pipeline

    from .results import Result

__all__ = [
    'CALLBACK_TIMEOUT',
    'JOB_ID_PATTERN',
    'UNEVALUATED',
    'UNSERIALIZABLE_RETURN_VALUE_PAYLOAD',
    'FunctionReferenceType',
    'JobDependencyType',
    'Callback',
    'Dependency',
    'Job',
    'JobStatus',
    'Retry',
    'call_string',
    'cancel_job',
    'get_current_job',
    'parse_job_id',
    'requeue_job',
    'validate_job_id',
]


def _result_class() -> type[Result]:
    """rqfast.results' Result, imported when a job's results are first read or written: a spawned child
    that only loads and runs its job imports none of it."""
    from .results import Result

    return Result


def get_current_job(connection: Redis | None = None, job_class: Any = None) -> Job | None:
    """The job running in this context (thread or task), or None outside a job."""
    return cast('Job | None', running_job())


def cancel_job(job_id: str, connection: Redis, serializer: Any = None, enqueue_dependents: bool = False) -> None:
    Job.fetch(job_id, connection=connection, serializer=serializer).cancel(enqueue_dependents=enqueue_dependents)


def requeue_job(job_id: str, connection: Redis, serializer: Any = None) -> Job:
    return Job.fetch(job_id, connection=connection, serializer=serializer).requeue()


@in_queue_keyspace('origin')
class Job(JobSpec):
    """A job's fields in memory; fetch() reads them, the queue and worker scripts write them."""

    redis_job_namespace_prefix = keys.JOB_PREFIX
    _cached_result: Result | None = None

    # perform() PERSISTs the job's key first, as RQ's does, so it cannot expire while it runs; rqfast's
    # runners turn that off (execution.run_job): a worker's claim script has persisted it already.
    persist_on_perform: bool = True

    # --- running it in this process (rqfast.jobrun)

    def perform(self) -> Any:
        """Run the function with this job as the current job; await it if it is a coroutine."""
        self._result = jobrun.perform(self)
        return self._result

    async def perform_async(self, timeout: float | None) -> Any:
        """Await the job's coroutine function as the current job of this task, for at most `timeout` seconds."""
        self._result = await jobrun.perform_async(self, timeout)
        return self._result

    def _execute(self) -> Any:
        return jobrun.execute(self)

    def prepare_for_execution(self, worker_name: str, pipeline: Any) -> None:
        """RQ's: mark the job started by `worker_name` (one HSET, queued on `pipeline`).

        rqfast's workers start a job in their claim script instead; this is for code that runs jobs itself.
        """
        self.worker_name = worker_name
        self.last_heartbeat = self.started_at = now()
        self._status = JobStatus.STARTED
        fields = {
            'last_heartbeat': utcformat(self.last_heartbeat),
            'status': self._status.value,
            'started_at': utcformat(self.started_at),
            'worker_name': worker_name,
        }
        pipeline.hset(self.key, mapping=fields)

    # RQ 2.12's methods; RQ 3.0 has these as functions (rqfast.callbacks), which rqfast's own code calls.
    def execute_success_callback(self, death_penalty_class: Any, result: Any) -> None:
        callbacks.execute_success_callback(self, death_penalty_class, result)

    def execute_failure_callback(self, death_penalty_class: Any, *exc_info: Any) -> None:
        callbacks.execute_failure_callback(self, death_penalty_class, *exc_info)

    def execute_stopped_callback(self, death_penalty_class: Any) -> None:
        callbacks.execute_stopped_callback(self, death_penalty_class)

    def send_webhooks(self, status: str | JobStatus, *, exc_string: str | None = None) -> None:
        """Send, here and now, each webhook registered for `status` ('finished' or 'failed'), as RQ's.

        Errors are logged by Webhook.send, never raised. rqfast's workers do not call this: they send
        from a thread of their own, so an endpoint never delays the next job (worker/webhooks.py).
        """
        for webhook in self.webhooks:
            if webhook.job_status == status:
                webhook.send(self, exc_string=exc_string)

    # --- progress: rqfast's own `progress` field of the job hash (RQ ignores it)

    def set_progress(self, value: Any) -> None:
        """Record how far the job has got (any JSON value: 42, 0.5, "step 3 of 7", {"done": 3}); one HSET
        (one script call for a job with events, which also writes a `progress` event: rqfast.events)."""
        try:
            encoded = json_module().dumps(value, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f'set_progress: a JSON value (number, text, list, dict...) is needed, got {value!r}'
            ) from exc
        if self.events:  # rqfast's events: the field and a `progress` event, in one script call
            scripts().set_progress(self.connection, self.id, encoded, self.origin, self.events)
            return
        self.connection.hset(self.key, 'progress', encoded)

    @property
    def progress(self) -> Any:
        """The value the job last gave set_progress(), read from Redis now (None before any)."""
        stored = self.connection.hget(self.key, 'progress')
        return None if stored is None else json_module().loads(stored)

    # --- status

    def get_status(self, refresh: bool = True) -> JobStatus:
        if refresh:
            status = self.connection.hget(self.key, 'status')
            if not status:
                raise InvalidJobOperation(f'Failed to retrieve status for job: {self.id}')
            self._status = JobStatus(status.decode() if isinstance(status, bytes) else status)
        return self._status

    def set_status(self, status: JobStatus | str, pipeline: Pipeline | None = None) -> None:
        """Write the status (a JobStatus or its value, as RQ takes) to the hash."""
        self._status = JobStatus(status)
        (pipeline if pipeline is not None else self.connection).hset(self.key, 'status', self._status.value)

    def get_meta(self, refresh: bool = True) -> dict[str, Any]:
        if refresh:
            meta = self.connection.hget(self.key, 'meta')
            self.meta = self.serializer.loads(cast(bytes, meta)) if meta else {}
        return self.meta

    is_finished = property(lambda self: self.get_status() == JobStatus.FINISHED)
    is_queued = property(lambda self: self.get_status() == JobStatus.QUEUED)
    is_failed = property(lambda self: self.get_status() == JobStatus.FAILED)
    is_started = property(lambda self: self.get_status() == JobStatus.STARTED)
    is_deferred = property(lambda self: self.get_status() == JobStatus.DEFERRED)
    is_canceled = property(lambda self: self.get_status() == JobStatus.CANCELED)
    is_scheduled = property(lambda self: self.get_status() == JobStatus.SCHEDULED)
    is_stopped = property(lambda self: self.get_status() == JobStatus.STOPPED)
    is_ready_to_enqueue = property(lambda self: self.get_status() == JobStatus.READY_TO_ENQUEUE)  # RQ 3.0

    def get_position(self) -> int | None:
        if not self.origin:
            return None
        position = self.connection.lpos(keys.queue_key(self.origin), self.id)
        return None if position is None else int(position)  # type: ignore[arg-type]

    # --- dependencies

    @property
    def dependency_ids(self) -> list[str]:
        return sorted(as_text(m) for m in self.connection.smembers(self.dependencies_key))

    @property
    def _dependency_id(self) -> str | None:
        return self._dependency_ids[0] if self._dependency_ids else None

    @property
    def dependency(self) -> Job | None:
        if not self._dependency_ids:
            return None
        return self.fetch(self._dependency_ids[0], connection=self.connection, serializer=self.serializer)

    @property
    def dependent_ids(self) -> list[str]:
        return [as_text(m) for m in self.connection.smembers(self.dependents_key)]

    def fetch_dependencies(self, watch: bool = False, pipeline: Pipeline | None = None) -> list[Job]:
        """The dependencies that still exist; with watch, their hashes are WATCHed on `pipeline` first."""
        if watch and pipeline is not None and self._dependency_ids:  # (redis-py leaves watch untyped)
            pipeline.watch(*[self.key_for(job_id) for job_id in self._dependency_ids])  # type: ignore[no-untyped-call]
        jobs = self.fetch_many(self._dependency_ids, connection=self.connection, serializer=self.serializer)
        return [job for job in jobs if job]

    def register_dependency(self, pipeline: Pipeline | None = None) -> None:
        """Into the deferred registry of its queue and its dependencies' dependents sets (one script call)."""
        moment = epoch_seconds(now())
        scripts().register_dependency(self.connection, self.id, self.origin, moment, self._dependency_ids, pipeline)

    def dependencies_are_met(
        self,
        parent_job: Job | None = None,
        pipeline: Pipeline | None = None,
        exclude_job_id: str | None = None,
        refresh_job_status: bool = True,
    ) -> bool:
        """Whether every dependency in Redis is finished (or failed, with allow_dependency_failures) or gone.

        `parent_job` is checked by its status (refreshed with refresh_job_status) and must not be
        canceled or stopped; with a `pipeline`, the dependencies' hashes are WATCHed on it, as in RQ.
        """
        return dependencies_are_met(self, parent_job, pipeline, exclude_job_id, refresh_job_status)

    # --- reading and writing

    @classmethod
    def exists(cls, job_id: str, connection: Redis) -> bool:
        keyspace_required('Job.exists(id)', 'queue.fetch_job(id) is not None')
        return bool(connection.exists(keys.job_key(job_id)))

    @classmethod
    def fetch(cls, id: str, connection: Redis | None = None, serializer: Any = None) -> Job:
        keyspace_required('Job.fetch(id)', 'queue.fetch_job(id)')
        job = cls(parse_job_id(id), connection=connection, serializer=serializer)
        job.refresh()
        return job

    @classmethod
    def fetch_many(cls, job_ids: Iterable[str], connection: Redis, serializer: Any = None) -> list[Job | None]:
        keyspace_required('Job.fetch_many(ids)', 'queue.fetch_many(ids)')
        ids = [parse_job_id(job_id) for job_id in job_ids]
        with connection.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.hgetall(keys.job_key(job_id))
            hashes = pipe.execute()
        jobs: list[Job | None] = []
        for job_id, raw in zip(ids, hashes, strict=True):
            job = None
            if raw:
                job = cls(job_id, connection=connection, serializer=serializer)
                job.restore(raw)
            jobs.append(job)
        return jobs

    def refresh(self) -> None:
        raw = self.connection.hgetall(self.key)
        if not raw:
            raise NoSuchJobError(f'No such job: {self.key}')
        self.restore(raw)  # type: ignore[arg-type]

    def restore(self, raw_data: dict[bytes, bytes]) -> None:
        restore_job(self, raw_data)

    def to_dict(self, include_meta: bool = True, include_result: bool = True) -> dict[str, Any]:
        return job_fields(self, include_meta=include_meta, include_result=include_result)

    def save(self, pipeline: Pipeline | None = None, include_meta: bool = True, include_result: bool = True) -> None:
        mapping: dict[Any, Any] = self.to_dict(include_meta=include_meta, include_result=include_result)
        (pipeline if pipeline is not None else self.connection).hset(self.key, mapping=mapping)

    def save_meta(self) -> None:
        self.connection.hset(self.key, 'meta', encode_meta(self, self.meta))

    def heartbeat(self, timestamp: datetime, ttl: int, pipeline: Pipeline | None = None, xx: bool = False) -> None:
        self.last_heartbeat = timestamp
        (pipeline if pipeline is not None else self.connection).hset(self.key, 'last_heartbeat', utcformat(timestamp))

    def cancel(
        self, pipeline: Pipeline | None = None, enqueue_dependents: bool = False, remove_from_dependencies: bool = False
    ) -> dict[str, list[str]]:
        """Cancel: out of its queue and registry, into the canceled registry (one script call); RQ 3.0's
        map of queue name to the dependents released, which that call enqueues too.

        With a `pipeline`, the call is queued into it and the checks are made now, as RQ makes them; with
        enqueue_dependents, RQ 3.0 wants it watched, and the map is the dependents releasable now.
        """
        if pipeline is not None and self.is_canceled:
            raise InvalidJobOperation(f'Cannot cancel already canceled job: {self.id}')
        if pipeline is not None and self.has_rate_limit:  # RQ 3.0 refuses it (its promotion is a later step)
            raise InvalidJobOperation('Cannot cancel a rate-limited job with a caller-supplied pipeline')
        expected: dict[str, list[str]] = {}
        if pipeline is not None and enqueue_dependents and not rq2_compat():  # RQ 2.12: any pipeline, no map
            expected = releasable_dependents(self, pipeline, exclude_job_id=self.id)
        moment = now()
        args = (epoch_seconds(moment), utcformat(moment), enqueue_dependents, remove_from_dependencies)
        reply = scripts().cancel_job(self.connection, self.id, *args, pipeline=pipeline)
        outcome, released = reply if reply is not None else (1, expected)
        self._canceled(outcome)
        return released

    def _canceled(self, outcome: int) -> None:
        """cancel_job.lua's outcome for this job (rqfast.asyncio's cancel reads it here too)."""
        if outcome == -1:
            raise InvalidJobOperation(f'Cannot cancel already canceled job: {self.id}')
        if outcome == 0:
            raise NoSuchJobError(f'No such job: {self.key}')
        self._status = JobStatus.CANCELED

    def requeue(self, at_front: bool = False) -> Job:
        """Out of its failed registry and back onto its queue, in one script call.

        InvalidJobOperation when the job is not in the failed registry of its queue.
        """
        self._before_requeue(at_front)
        scripts().requeue(self.connection, self, at_front)  # (enqueueing, Queue's, is not imported for it)
        return self

    def _before_requeue(self, at_front: bool) -> None:
        """What requeue() resets before its script call (rqfast.asyncio's requeue too)."""
        self.started_at = self.ended_at = None
        self._exc_info = ''
        if self.has_rate_limit:  # waits for a slot again (the script sees its fields); promoted as asked, as RQ 3.0
            self.enqueue_at_front = at_front

    def cleanup(self, ttl: int | None = None, pipeline: Pipeline | None = None, remove_from_queue: bool = True) -> None:
        """RQ's: ttl 0 deletes the job, a positive ttl expires its hash and dependency sets, else nothing."""
        if ttl == 0:
            self.delete(pipeline=pipeline, remove_from_queue=remove_from_queue)
        elif ttl is not None and ttl > 0:
            scripts().expire_job(self.connection, self.id, ttl, pipeline)

    def delete(
        self, pipeline: Pipeline | None = None, remove_from_queue: bool = True, delete_dependents: bool = False
    ) -> None:
        """Delete the job's keys and take it out of its queue and registries (one script call)."""
        scripts().delete_job(self.connection, self.id, remove_from_queue, delete_dependents, pipeline=pipeline)

    def delete_dependents(self, pipeline: Pipeline | None = None) -> None:
        for job in self.fetch_many(self.dependent_ids, connection=self.connection, serializer=self.serializer):
            if job is not None:
                job.delete(pipeline=pipeline, remove_from_queue=False)
        (pipeline if pipeline is not None else self.connection).delete(self.dependents_key)

    # --- results

    def results(self) -> list[Result]:
        return _result_class().all(self, serializer=self.serializer)

    def latest_result(self, timeout: int = 0) -> Result | None:
        return _result_class().fetch_latest(self, serializer=self.serializer, timeout=timeout)

    @property
    def output(self) -> str | None:
        """What the latest run printed, when enqueued with capture_output=True (its latest result's `output`)."""
        result = self.latest_result()
        return result.output if result is not None else None

    def return_value(self, refresh: bool = False) -> Any:
        if refresh or not self._cached_result:
            self._cached_result = self.latest_result()
        if self._cached_result and self._cached_result.type == self._cached_result.Type.SUCCESSFUL:
            return self._cached_result.return_value
        return None

    @property
    def result(self) -> Any:
        warnings.warn('job.result is deprecated, use job.return_value instead.', DeprecationWarning, stacklevel=2)
        value = self.return_value()
        if value is None and self._result is None:
            raw = self.connection.hget(self.key, 'result')
            if raw is not None:
                self._result = self.serializer.loads(cast(bytes, raw))
        return value if value is not None else self._result

    @property
    def exc_info(self) -> str | None:
        latest = self.latest_result()
        if latest and latest.type == latest.Type.FAILED:
            return latest.exc_string
        return self._exc_info

    # --- running again

    def retry(self, queue: Any, pipeline: Pipeline | None) -> None:
        """RQ's: one retry used up, then back onto `queue` now, or scheduled after the retry interval."""
        if not self.retries_left:
            raise InvalidJobOperation(f'Job {self.id} has no retries left')
        interval = self.get_retry_interval()
        self.retries_left -= 1
        if interval:
            self._status = JobStatus.SCHEDULED
            queue.schedule_job(self, now() + timedelta(seconds=interval), pipeline=pipeline)
        else:
            queue.enqueue_job(self, pipeline=pipeline, at_front=bool(self.enqueue_at_front_on_retry))

    def _handle_retry_result(
        self,
        queue: Any,
        pipeline: Pipeline | None,
        retry: Retry,
        execution_id: str,
        execution_started_at: datetime,
        execution_ended_at: datetime,
        worker_name: str = '',
    ) -> None:
        """RQ's step for a job that returned a Retry (the worker's finish script does it for the jobs it
        runs): a RETRIED result, one more retry counted, then onto `queue` or scheduled, all in `pipeline`."""
        _result_class().create_retried(
            self, self.failure_ttl, retry, worker_name, execution_id, execution_started_at, execution_ended_at, pipeline
        )
        interval = Retry.get_interval(self.number_of_retries or 0, retry.intervals)
        self.number_of_retries = (self.number_of_retries or 0) + 1
        if interval:
            self.set_local_status(JobStatus.SCHEDULED)
            queue.schedule_job(self, now() + timedelta(seconds=interval), pipeline=pipeline)
        else:
            queue._enqueue_job(self, pipeline=pipeline)

    # --- registries

    def _registry(self, kind: str) -> Any:
        registry_class = class_at(REGISTRY_CLASSES[kind])  # a layer above: looked up when asked for
        return registry_class(self.origin, connection=self.connection, job_class=type(self), serializer=self.serializer)

    @property
    def started_job_registry(self) -> Any:
        return self._registry('started')

    @property
    def failed_job_registry(self) -> Any:
        return self._registry('failed')

    @property
    def finished_job_registry(self) -> Any:
        return self._registry('finished')

    @property
    def execution_registry(self) -> Any:
        """This job's executions (rqfast.executions.ExecutionRegistry)."""
        return class_at(REGISTRY_CLASSES['executions'])(self.id, connection=self.connection)

    def get_executions(self) -> list[Any]:
        """The job's live executions (rqfast.executions.Execution), as the claim script recorded them."""
        return self.execution_registry.get_executions()  # type: ignore[no-any-return]
