"""The worker's scripts: claim a job, finish one (or a batch) and claim the next, register a
worker, heartbeat it and its jobs in flight, put back jobs it moved. A typed wrapper per script is
the only Python that knows its ARGV order (scripts.py holds the others: enqueueing, admin, RQ's
rq.scripts functions).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from .defaults import (
    JOB_HEARTBEAT_GRACE,
    MAX_DROPPED_PER_CLAIM,
    MAX_JOB_ID_LENGTH,
    RATE_WINDOW_GUARD,
    RESULTS_MAXLEN,
)
from .scriptload import Packed, packed, script, spliceable
from .scriptrecords import Plan, Value, shape_text
from .text import as_text

if TYPE_CHECKING:
    from redis import Redis
    from redis.client import Pipeline


class ClaimReply(NamedTuple):
    """claim_job.lua's reply, and finish_job.lua's (which adds `recorded`), read by name."""

    job_id: bytes | None  # (false: no job claimed)
    queue: bytes | None
    job_hash: list[bytes] | None  # the claimed job's hash as a flat HGETALL, before the claim
    dropped: list[bytes]  # ids popped that had no job hash
    suspended: int  # 1 if <prefix>suspended is set
    dead_lettered: list[bytes] | tuple[()] = ()  # ids moved aside, flat: queue, id, reason, ...
    recorded: int = 1  # finish_job's: 0 when its fence held the outcome off
    plain: int = 0  # 1: nothing claimed, and no suspension, paused queue or priority lane was seen


class BatchReply(NamedTuple):
    """finish_jobs.lua's reply, read by name."""

    recorded: list[int]  # per outcome: 1, or 0 when a fence held it off
    claims: list[list[Any]]  # each {job id, queue, job hash as a flat HGETALL before the claim}
    dropped: list[bytes]
    suspended: int
    dead_lettered: list[bytes]  # flat: queue, id, reason, ...


class HeartbeatReply(NamedTuple):
    """heartbeat.lua's reply, read by name."""

    suspended: bool
    lost: list[str]  # ids of the jobs in flight whose execution is gone (fenced off)


def claim_job(
    connection: Redis,
    worker_name: str,
    times: list[Value],
    monitoring_interval: int,
    idle_ttl: int,
    execution_id: str,
    moved_id: str,
    moved_queue: str,
    queues: list[str],
    grace: int = JOB_HEARTBEAT_GRACE,
) -> ClaimReply:
    """See lua/claim_job.lua."""
    args = [
        worker_name,
        *times,
        monitoring_interval,
        grace,
        MAX_DROPPED_PER_CLAIM,
        idle_ttl,
        execution_id,
        moved_id,
        moved_queue,
        MAX_JOB_ID_LENGTH,
        RATE_WINDOW_GUARD,
        len(queues),
        *queues,
    ]
    return ClaimReply(*script('claim_job')(connection, args))


def finish_job(
    connection: Redis,
    worker_name: str,
    times: list[Value],
    job_id: str,
    queue: str,
    execution_id: str,
    plan: Plan,
    working_time: float,
    claim_next: bool,
    monitoring_interval: int,
    idle_ttl: int,
    next_execution_id: str,
    queues: list[str],
    fence: str = '',
    grace: int = JOB_HEARTBEAT_GRACE,
    pipeline: Pipeline | None = None,
) -> ClaimReply | None:
    """See lua/finish_job.lua: records `plan`, then answers as claim_job.

    With a `fence` (a started-registry member), only while that member and the job's started status hold.
    With a caller's `pipeline`, the call is queued into it (no answer: None).
    """
    shape = outcome_shape(plan, claim_next, monitoring_interval, grace, idle_ttl)
    args = [worker_name, *times, *_outcome_rest(job_id, queue, execution_id, fence, plan, working_time, shape)]
    args.extend((next_execution_id, len(queues), *queues, plan.event_detail))
    if pipeline is not None:
        script('finish_job').queue(pipeline, args)
        return None
    return ClaimReply(*script('finish_job')(connection, args))


def _outcome_rest(
    job_id: str, queue: str, execution_id: str, fence: str, plan: Plan, working_time: float, shape: str
) -> list[Value]:
    """finish_job.lua's ARGV after the worker name and the times, up to the next claim's execution id."""
    return [
        job_id,
        queue,
        execution_id,
        fence,
        shape,
        plan.registry_score,
        plan.schedule_score,
        repr(float(working_time)),
        *plan.fields.values(),
        *plan.stream.values(),
    ]


def outcome_shape(plan: Plan, claim_next: bool, monitoring_interval: int, grace: int, idle_ttl: int) -> str:
    """finish_job.lua's ARGV[10]: the outcome's constants and the claim's, a newline after each (the
    script reads a shape once per server: a worker sends the same few, call after call)."""
    outcome = (plan.registry, plan.job_ttl, plan.release_as, plan.put_back, plan.counter, plan.stream_ttl)
    claim = (int(claim_next), monitoring_interval, grace, idle_ttl)
    return _shape(outcome, plan.event, claim, tuple(plan.fields), tuple(plan.stream))


@lru_cache(maxsize=256)
def _shape(
    outcome: tuple[Value, ...], event: str, claim: tuple[int, ...], fields: tuple[str, ...], stream: tuple[str, ...]
) -> str:
    claim_next, monitoring_interval, grace, idle_ttl = claim
    tokens: list[Value] = [*outcome, RESULTS_MAXLEN, event, claim_next, monitoring_interval, grace]
    tokens += [MAX_DROPPED_PER_CLAIM, MAX_JOB_ID_LENGTH, RATE_WINDOW_GUARD, idle_ttl]
    tokens += [len(fields), *fields, len(stream), *stream]
    texts = (t.decode() if isinstance(t, bytes) else repr(t) if isinstance(t, float) else str(t) for t in tokens)
    return shape_text(texts, 'an outcome field name or setting')


TIMES = 3  # the times every worker script takes (engine._times): UTC text, float epoch, integer epoch


class BatchOutcome(NamedTuple):
    """One outcome's ARGV for finish_jobs, but the call's times (which go between `head` and `rest`);
    `packed`: the same two already packed (scriptload.packed), or None without hiredis."""

    head: list[Value]
    rest: list[Value]
    packed: tuple[Packed, Packed] | None


def batch_outcome(
    job_id: str,
    queue: str,
    execution_id: str,
    plan: Plan,
    working_time: float,
    monitoring_interval: int,
    grace: int = JOB_HEARTBEAT_GRACE,
) -> BatchOutcome:
    """Made where the job ran, so that the worker's loop thread only joins them (finish_jobs)."""
    shape = outcome_shape(plan, False, monitoring_interval, grace, 0)
    rest = _outcome_rest(job_id, queue, execution_id, '', plan, working_time, shape)
    rest.extend(('', 0, plan.event_detail))  # no claim: no execution id, no queue; the event's detail
    # the outcome's own header, then finish_job.lua's ARGV from 2: count, worker name "" (times follow)
    head: list[Value] = [job_id, execution_id, plan.counter, repr(float(working_time)), 1 + TIMES + len(rest), '']
    head_packed, rest_packed = packed(head), packed(rest)
    both = None if head_packed is None or rest_packed is None else (head_packed, rest_packed)
    return BatchOutcome(head, rest, both)


def finish_jobs(
    connection: Redis,
    worker_name: str,
    times: list[Value],
    outcomes: list[BatchOutcome],
    monitoring_interval: int,
    idle_ttl: int,
    still_running: str,
    execution_ids: list[str],
    queues: list[str],
    grace: int = JOB_HEARTBEAT_GRACE,
    resent: bool = False,
) -> BatchReply:
    """See lua/finish_jobs.lua: records each outcome (made by batch_outcome) as finish_job does,
    claims up to len(execution_ids) jobs. `resent`: the call is sent again as it was after a lost
    reply; an execution id the first call claimed with is answered with its job."""
    if len(times) != TIMES:
        raise ValueError(f'finish_jobs takes {TIMES} times, not {len(times)}')
    args: list[Value] = [worker_name, *times, monitoring_interval, grace, MAX_DROPPED_PER_CLAIM]
    args.extend((MAX_JOB_ID_LENGTH, RATE_WINDOW_GUARD, idle_ttl, still_running, len(outcomes)))
    claims: list[Value] = [len(execution_ids), *execution_ids, len(queues), *queues]
    if resent:
        claims.append(1)
    times_packed = packed(times)
    if times_packed is not None and all(o.packed is not None for o in outcomes) and spliceable(connection):
        # the outcomes were packed on their job threads: only the call's own arguments are packed here
        pieces: list[list[Value] | Packed] = [args]
        for outcome in outcomes:
            assert outcome.packed is not None
            pieces.extend((outcome.packed[0], times_packed, outcome.packed[1]))
        pieces.append(claims)
        return BatchReply(*script('finish_jobs').call_spliced(connection, pieces))
    for head, rest, _ in outcomes:
        args.extend(head)
        args.extend(times)
        args.extend(rest)
    args.extend(claims)
    return BatchReply(*script('finish_jobs')(connection, args))


def register_worker(
    connection: Redis,
    name: str,
    what: str,
    ttl: int,
    now_text: str,
    queues: list[str],
    fields: Mapping[str, Value] | None = None,
) -> bool:
    """Birth ("birth", with the hash fields) or death ("death"); False when the name is taken."""
    args: list[Value] = [name, what, ttl, now_text, len(queues), *queues]
    if fields is not None:
        args.append(len(fields))
        for key, value in fields.items():
            args.extend((key, value))
    return bool(script('register_worker')(connection, args))


def heartbeat(
    connection: Redis,
    name: str,
    worker_ttl: int,
    times: list[Value],
    job_ttl: int,
    working_time: str,
    jobs: list[tuple[str, str, str]],
    grace: int = JOB_HEARTBEAT_GRACE,
) -> HeartbeatReply:
    """Heartbeat the worker and its jobs in flight (id, queue, execution id)."""
    args: list[Value] = [name, worker_ttl, *times, job_ttl, grace, working_time, len(jobs)]
    for job in jobs:
        args.extend(job)
    suspended, lost = script('heartbeat')(connection, args)
    return HeartbeatReply(bool(suspended), [as_text(job_id) for job_id in lost])


def return_jobs(connection: Redis, moved: list[tuple[str, str]]) -> int:
    """Put (queue, id) pairs moved into intermediate lists back at the head of their queues."""
    args: list[Value] = []
    for queue, job_id in moved:
        args.extend((queue, job_id))
    return int(script('return_jobs')(connection, args))
