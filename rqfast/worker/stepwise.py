"""RQ's step-by-step worker API, for code that drives a worker by hand (RQ's tests, some tools).

rqfast's loop never calls these: its claim script starts a job (execution, started registry, job
and worker hashes) in the same call that pops it, and its heartbeat script keeps it alive. RQ
splits the start in two, prepare_execution (in the worker: the execution, the worker busy) and
prepare_job_execution (in the horse: the job and worker hashes); here both write what RQ's write,
each as one MULTI/EXEC transaction, as RQ's do. The Stepwise methods become BaseWorker's.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from .. import keys
from ..dates import now, utcformat
from ..defaults import HEARTBEAT_GRACE
from ..executions import Execution, heartbeat_ttl, prepare_execution
from ..job import Job
from ..status import JobStatus, WorkerStatus
from .declared import WorkerAttributes
from .running import Running
from .workerhash import write_current_job, write_heartbeat

Method = TypeVar('Method', bound=Callable[..., Any])


def in_job_keyspace(method: Method) -> Method:
    """Sharded by queue, the method runs within the keyspace of its job's queue (a worker of several
    queues writes each job's keys in its own keyspace, keys.within); otherwise it is left as it is."""

    @functools.wraps(method)
    def run(self: Any, job: Any, *args: Any, **kwargs: Any) -> Any:
        with keys.within(getattr(job, 'origin', None)):
            return method(self, job, *args, **kwargs)

    return cast(Method, run) if keys.SHARDED else method


class Stepwise(WorkerAttributes):
    """dequeue_job_and_maintain_ttl, prepare_execution, prepare_job_execution, maintain_heartbeats,
    cleanup_execution: RQ's, by hand."""

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None) -> Any:
        """Claim one job, waiting up to `timeout` seconds (None: not at all): (job, queue), or None.

        perform_job or execute_job then records the claimed job's execution.
        """
        recorder = self._recorder
        deadline = time.monotonic() + min(timeout, max_idle_time or timeout) if timeout else None
        moved = None
        while True:
            claim = recorder.claim(moved)
            if claim:
                break
            left = deadline - time.monotonic() if deadline is not None else 0
            if left <= 0:
                return None
            moved = recorder.waiter().wait(max(1, int(left + 0.999)))
        recorder.hold(claim, busy=False)  # (prepare_execution makes the worker busy, as RQ's)
        job, poison = self._loader.load(claim, in_process=True)  # the caller performs it here
        if poison is not None:
            recorder.record(Running(claim, job), poison, claim_next=False)
            return None
        self._loader.joblog.start(job, claim.queue or '')
        self._hooks.hold(Running(claim, job))
        return job, self._context.queue_named(claim.queue or job.origin)

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        """Seconds a started job stays alive without a heartbeat (the claim script's rule), for a job
        that has run `working_time` seconds of its timeout (RQ 3.0's argument)."""
        timeout = job.timeout
        if timeout and timeout > 0 and working_time > 0:
            timeout = max(1, int(timeout - working_time))
        return heartbeat_ttl(timeout, self.job_monitoring_interval)

    @in_job_keyspace
    def prepare_execution(self, job: Job) -> Execution:
        """A new execution of the job, recorded as the claim script records one; the worker is busy."""
        execution = prepare_execution(self, job)  # type: ignore[arg-type]
        self._recorder.set_state(WorkerStatus.BUSY, write=False)
        return execution

    @in_job_keyspace
    def prepare_job_execution(self, job: Job, remove_from_intermediate_queue: bool = False) -> None:
        """The job started by this worker (its status, started_at, worker_name), the worker's current job."""
        moment = now()
        ttl = self.get_heartbeat_ttl(job)
        with self.connection.pipeline() as pipeline:
            write_current_job(pipeline, self.name, job.id)
            pipeline.hset(
                keys.worker_key(self.name),
                mapping={'current_job_working_time': 0, 'last_heartbeat': utcformat(moment)},
            )
            pipeline.expire(keys.worker_key(self.name), ttl)
            started_at = utcformat(moment)
            pipeline.hset(
                job.key,
                mapping={
                    'status': JobStatus.STARTED.value,
                    'started_at': started_at,
                    'last_heartbeat': started_at,
                    'worker_name': self.name,
                },
            )
            pipeline.persist(job.key)  # a started job outlives its queued `ttl`, as the claim script makes it
            if remove_from_intermediate_queue:
                pipeline.lrem(keys.intermediate_queue_key(job.origin), 1, job.id)
            rqfast_job = hasattr(job, 'set_local_status')
            if not rqfast_job:  # a job of rq's own class, handed in by its caller: the same status, and in memory
                job.set_status(JobStatus.STARTED, pipeline=pipeline)
            pipeline.execute()
        job.worker_name, job.started_at, job.last_heartbeat = self.name, moment, moment
        if rqfast_job:
            job.set_local_status(JobStatus.STARTED)

    @in_job_keyspace
    def maintain_heartbeats(self, job: Job, execution: Execution | None = None) -> None:
        """Keep the worker, the job and its execution (RQ 3.0 passes it; else the worker's) alive
        (the heartbeat script: a deleted job stays deleted)."""
        execution = execution if execution is not None else self._recorder.local_execution()
        execution_id = execution.id if execution is not None else ''
        moment = now()
        working_time = (moment - job.started_at).total_seconds() if job.started_at else 0.0
        write_heartbeat(
            self.connection,
            self.name,
            self.job_monitoring_interval + 60,
            moment,
            self.get_heartbeat_ttl(job, working_time=working_time),
            '',
            [(job.id, job.origin, execution_id)],
            HEARTBEAT_GRACE,  # RQ's, on RQ's by-hand path
        )

    @in_job_keyspace
    def cleanup_execution(self, job: Job, pipeline: Any, execution: Execution | None = None) -> None:
        """Clear the worker's current job and delete the execution (RQ 3.0 passes it; else the
        worker's), in the caller's pipeline."""
        write_current_job(pipeline, self.name, None)
        execution = execution if execution is not None else self._recorder.local_execution()
        if execution is not None:
            execution.delete(job=job, pipeline=pipeline)
            self._recorder.end_execution(execution)
