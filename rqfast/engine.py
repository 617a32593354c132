"""The worker engine: claiming jobs and recording how they ended, one script call each.

`claim_job` and `finish_job` are the only two calls a worker makes per job; finish_job claims the
next job in the same round trip, so a busy worker makes about one round trip per job. What an
outcome means (finished, failed, retried, repeated, stopped, poison, abandoned) is decided by
`plan` (planning.py, re-exported here as `engine.plan`), for the worker, the sync path and
maintenance alike; the Lua scripts only make the writes atomically. Nothing here assumes one job
in flight per process: every call names its job, execution and worker explicitly (`finish_jobs`
records several outcomes and makes several claims in one call).
"""

from __future__ import annotations

import itertools
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from . import workerscripts
from .dates import epoch_seconds, now, utcformat
from .defaults import (
    DEFAULT_JOB_MONITORING_INTERVAL,
    DEFAULT_WORKER_TTL,
    JOB_HEARTBEAT_GRACE,
)
from .outcome import Outcome, OutcomeKind
from .planning import plan
from .scriptrecords import Plan, Value
from .text import as_text

if TYPE_CHECKING:
    from redis import Redis
    from redis.client import Pipeline


__all__ = [
    'Batch',
    'Claim',
    'Ended',
    'Outcome',
    'OutcomeKind',
    'Plan',
    'WorkerRef',
    'claim_job',
    'finish_job',
    'finish_jobs',
    'plan',
    'record_outcome',
]


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
    dead_lettered: list[tuple[str, str, str]] = field(default_factory=list)  # (queue, id, reason): ids moved aside
    # For the claim a finish_job call returned: False when that call recorded nothing, because the
    # finished execution no longer owned its job (fenced off: see lua/finish_job.lua).
    recorded: bool = True
    # Nothing claimed, and the claim saw no suspension, paused queue or priority lane: an idle worker may
    # block on its queues at once (waiting.py), with no claim or read of the paused queues first.
    plain: bool = False

    def __bool__(self) -> bool:
        return self.job_id is not None


@dataclass
class WorkerRef:
    """What the scripts need to know about the claiming worker."""

    name: str
    queues: list[str]
    job_monitoring_interval: int = DEFAULT_JOB_MONITORING_INTERVAL
    idle_ttl: int = DEFAULT_WORKER_TTL + 60
    heartbeat_grace: int = JOB_HEARTBEAT_GRACE  # a running job's heartbeat TTL: the interval plus this


def _claim_from_reply(reply: workerscripts.ClaimReply | None, execution_id: str, moment: datetime) -> Claim:
    assert reply is not None
    claim = Claim(dropped=[as_text(d) for d in reply.dropped or []], suspended=bool(reply.suspended))
    if reply.dead_lettered:
        claim.dead_lettered = _dead_lettered(reply.dead_lettered)
    claim.recorded = bool(reply.recorded)
    claim.plain = reply.plain == 1
    if reply.job_id:
        claim.job_id, claim.queue, claim.execution_id = as_text(reply.job_id), as_text(reply.queue), execution_id
        flat = reply.job_hash or []
        claim.raw = {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}
        claim.started_at = moment
    return claim


def _dead_lettered(flat: Any) -> list[tuple[str, str, str]]:
    """(queue, id, reason) triples from a reply's flat list of them."""
    texts = [as_text(item) for item in flat or []]
    return list(zip(texts[::3], texts[1::3], texts[2::3], strict=True))


def _times(moment: datetime) -> list[Value]:
    return [utcformat(moment), repr(moment.timestamp()), epoch_seconds(moment)]


def claim_job(
    connection: Redis,
    worker: WorkerRef,
    moved: tuple[str, str] | None = None,
    moment: datetime | None = None,
    execution_id: str = '',
) -> Claim:
    """Claim the next job (or the one a blocking BLMOVE put in `moved`'s intermediate list).

    `execution_id`: '' for a new one; the one of a claim sent before whose reply was lost, to get the
    job it started (if it ran) rather than claim another.
    """
    moment = moment or now()
    execution_id = execution_id or uuid.uuid4().hex
    moved_queue, moved_id = moved or ('', '')  # the Waiter's (queue, id)
    reply = workerscripts.claim_job(
        connection,
        worker.name,
        _times(moment),
        worker.job_monitoring_interval,
        worker.idle_ttl,
        execution_id,
        moved_id,
        moved_queue,
        worker.queues,
        grace=worker.heartbeat_grace,
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
    moment: datetime | None = None,
    next_execution: str = '',
) -> Claim:
    """Record `plan` for the job; with claim_next, claim the worker's next job in the same call.

    `next_execution`: '' for a new one; the one of a call sent before whose reply was lost (the
    answer is then the job that call claimed, if it ran, with `recorded` False: it recorded the plan).
    """
    moment = moment or now()
    next_execution = next_execution or uuid.uuid4().hex
    reply = workerscripts.finish_job(
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
        grace=worker.heartbeat_grace if worker else JOB_HEARTBEAT_GRACE,
    )
    return _claim_from_reply(reply, next_execution, moment)


def record_outcome(
    connection: Redis, job_id: str, queue: str, plan: Plan, moment: datetime, pipeline: Pipeline | None = None
) -> None:
    """Record `plan` for a job no worker ran (job_lifecycle.record_job_failure): one finish script
    call, queued into the caller's `pipeline` when given."""
    _finish_unclaimed(connection, job_id, queue, plan, moment, pipeline=pipeline)


class _ExecutionIds:
    """Unique execution ids, 32 hex digits as uuid4().hex: a random prefix per process, then a count
    (no system call per id: a busy worker's loop thread makes thousands a second)."""

    def __init__(self) -> None:
        self.pid = 0
        self.prefix = ''
        self.count = itertools.count()

    def next(self) -> str:
        if self.pid != os.getpid():  # a forked child draws its own prefix
            self.pid, self.prefix = os.getpid(), os.urandom(8).hex()
        return f'{self.prefix}{next(self.count):016x}'


_execution_ids = _ExecutionIds()
new_execution_id = _execution_ids.next  # (a unique id as uuid4().hex is, at a fifth of its cost)


class Ended(NamedTuple):
    """One outcome for finish_jobs: the job, its run and the Plan that records it."""

    job_id: str
    queue: str
    execution_id: str
    plan: Plan
    working_time: float
    # its ARGV for the call, made beforehand (ended()) where the job ran; None: made by finish_jobs
    args: workerscripts.BatchOutcome | None = None


def ended(
    job_id: str, queue: str, execution_id: str, plan: Plan, working_time: float, monitoring_interval: int
) -> Ended:
    """An Ended with its ARGV made now: a worker's job thread makes it, off its loop thread's path."""
    args = workerscripts.batch_outcome(job_id, queue, execution_id, plan, working_time, monitoring_interval)
    return Ended(job_id, queue, execution_id, plan, working_time, args)


@dataclass
class Batch:
    """finish_jobs' answer: per outcome whether it was recorded, the jobs claimed, what was dropped."""

    recorded: list[bool]
    claims: list[Claim]
    dropped: list[str] = field(default_factory=list)
    suspended: bool = False
    dead_lettered: list[tuple[str, str, str]] = field(default_factory=list)
    plain: bool = False  # Claim.plain, for one finish_job call's claim


def finish_jobs(
    connection: Redis,
    worker: WorkerRef,
    ended: list[Ended],
    claim_count: int,
    still_running: str = '',
    moment: datetime | None = None,
    execution_ids: list[str] | None = None,
    resent: bool = False,
) -> Batch:
    """Record several outcomes (each as finish_job does) and claim up to `claim_count` jobs: one call.

    `still_running`: a job of the worker's that runs on (its current job when nothing is claimed);
    '' when none does: with nothing claimed, the worker is idle. `execution_ids`: the claims' (at
    least claim_count; new ones by default). `resent`: the call is sent again as it was (the same
    outcomes, moment and execution ids) after its reply was lost: the jobs the first call claimed
    are the answer, not claimed again.
    """
    moment = moment or now()
    if execution_ids is None:
        execution_ids = [_execution_ids.next() for _ in range(claim_count)]
    else:
        execution_ids = execution_ids[:claim_count]
    reply = workerscripts.finish_jobs(
        connection,
        worker.name,
        _times(moment),
        [
            e.args
            or workerscripts.batch_outcome(
                e.job_id, e.queue, e.execution_id, e.plan, e.working_time, worker.job_monitoring_interval
            )
            for e in ended
        ],
        worker.job_monitoring_interval,
        worker.idle_ttl,
        still_running,
        execution_ids,
        worker.queues,
        grace=worker.heartbeat_grace,
        resent=resent,
    )
    claims = []
    for (job_id, queue, flat), execution_id in zip(reply.claims, execution_ids, strict=False):
        raw = {flat[i]: flat[i + 1] for i in range(0, len(flat), 2)}
        claims.append(Claim(as_text(job_id), as_text(queue), execution_id, raw, moment))
    dropped = [as_text(d) for d in reply.dropped or []]
    batch = Batch([bool(r) for r in reply.recorded], claims, dropped, bool(reply.suspended))
    if reply.dead_lettered:
        batch.dead_lettered = _dead_lettered(reply.dead_lettered)
    return batch


def record_abandoned(connection: Redis, job_id: str, queue: str, member: str, plan: Plan, moment: datetime) -> bool:
    """Record an abandoned job's plan, fenced: only while the job is still started and `member`
    (`<id>:<execution id>`) is still in its started registry. The member goes either way; False
    when the fence no longer held (the job was settled meanwhile) and nothing was recorded."""
    reply = _finish_unclaimed(connection, job_id, queue, plan, moment, fence=member)
    return reply is not None and bool(reply.recorded)


def _finish_unclaimed(
    connection: Redis,
    job_id: str,
    queue: str,
    plan: Plan,
    moment: datetime,
    fence: str = '',
    pipeline: Pipeline | None = None,
) -> workerscripts.ClaimReply | None:
    """One finish_job call for a job no live worker holds: no worker, no next claim; fenced on
    `fence` when given, queued into `pipeline` when given (None then)."""
    return workerscripts.finish_job(
        connection, '', _times(moment), job_id, queue, '', plan, 0.0, False, DEFAULT_JOB_MONITORING_INTERVAL, 0, '', [],
        fence=fence, pipeline=pipeline,
    )  # fmt: skip
