"""Job and worker statuses, and the sets of them the rest of the code asks about (a leaf module)."""

from __future__ import annotations

from enum import Enum


class JobStatus(str, Enum):
    CREATED = 'created'
    QUEUED = 'queued'
    FINISHED = 'finished'
    FAILED = 'failed'
    STARTED = 'started'
    DEFERRED = 'deferred'
    SCHEDULED = 'scheduled'
    STOPPED = 'stopped'
    CANCELED = 'canceled'
    # Written only by RQ 3.0 (a dependent between release and push; a job waiting for a rate-limit
    # slot): rqfast reads them so it can fetch jobs an rq 3.0 producer or worker left there.
    READY_TO_ENQUEUE = 'ready_to_enqueue'
    RATE_LIMITED = 'rate_limited'


# A job in one of these has ended: it will not run again unless requeued.
TERMINAL_STATUSES = frozenset({JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED})
# Waiting to run: in a queue, or in the registry that will put it in one.
WAITING_STATUSES = frozenset({JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED})
# A parent in one of these never releases its dependents (RQ's dependencies_are_met).
BLOCKING_PARENT_STATUSES = frozenset({JobStatus.CANCELED, JobStatus.STOPPED})
# Statuses whose job sits in the failed registry.
FAILED_REGISTRY_STATUSES = frozenset({JobStatus.FAILED, JobStatus.STOPPED})


class WorkerStatus(str, Enum):
    STARTED = 'started'
    SUSPENDED = 'suspended'
    BUSY = 'busy'
    IDLE = 'idle'
