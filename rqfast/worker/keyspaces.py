"""Sharded by queue (RQFAST_SHARDING=queue), a worker of several queues: one keyspace per queue.

A script call touches one keyspace (on a Redis Cluster, one slot), so what a worker does across its
queues is split into one call per queue's keyspace, in the worker's queue order:

- a claim asks each queue's keyspace in turn; the first that yields a job (or says the workers are
  suspended) wins, so RQ's queue order holds;
- finishing a job (and claiming the next in the same call) is one call in the job's keyspace when no
  queue before the job's is served: a busy first queue costs one round trip per job, as on one Redis.
  Queues before the job's are asked first (a claim each: a job there wins, and the finish claims
  nothing); when the job's queue is empty, those after it are asked next;
- at concurrency N, outcomes are recorded per keyspace, each call claiming what the earlier ones left;
- the worker registers, heartbeats, dies and runs maintenance in every queue's keyspace (so RQ's tools,
  each reading one keyspace, see it as a worker of that queue); its command channel and its state
  field are those of its first queue's keyspace (the process's: keys.settle).

Otherwise (one queue, or not sharded) every function here is the engine's one call.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from .. import dates, engine, keys

if TYPE_CHECKING:
    from redis import Redis


class Beating(Protocol):
    """What beat() needs of the worker hash (workerhash.WorkerHash, whose module is above this one)."""

    def beat(
        self, in_flight: list[engine.Claim], started: float | None, worker_ttl: int, monitoring: int, grace: int
    ) -> bool: ...


def claim_job(
    connection: Redis,
    worker: engine.WorkerRef,
    moved: tuple[str, str] | None = None,
    moment: datetime | None = None,
    execution_id: str = '',
) -> engine.Claim:
    """engine.claim_job, in each keyspace in turn (the one a blocking wait moved a job in first)."""
    if not keys.spans(worker.queues):
        return engine.claim_job(connection, worker, moved, moment=moment, execution_id=execution_id)
    order = list(worker.queues)
    if moved is not None:
        order = [moved[0], *(queue for queue in order if queue != moved[0])]
    return _claim_in(connection, worker, order, moved, moment or dates.now(), execution_id or uuid.uuid4().hex)


def _claim_in(
    connection: Redis,
    worker: engine.WorkerRef,
    queues: list[str],
    moved: tuple[str, str] | None,
    moment: datetime,
    execution_id: str,
) -> engine.Claim:
    """One claim per queue's keyspace, in order, until one yields a job or says suspended; the ids any
    of them dropped or moved aside are all in the answer."""
    claim, dropped, dead, plain = engine.Claim(), [], [], True
    for queue in queues:
        with keys.within(queue):
            claim = engine.claim_job(
                connection,
                replace(worker, queues=[queue]),
                moved if moved is not None and moved[0] == queue else None,
                moment=moment,
                execution_id=execution_id,
            )
        dropped += claim.dropped
        dead += claim.dead_lettered
        plain = plain and claim.plain
        if claim or claim.suspended:
            break
    claim.dropped, claim.dead_lettered, claim.plain = dropped, dead, plain and not claim
    return claim


def finish_job(
    connection: Redis,
    job_id: str,
    queue: str,
    execution_id: str,
    plan: engine.Plan,
    working_time: float,
    worker: engine.WorkerRef | None,
    claim_next: bool = True,
    moment: datetime | None = None,
    next_execution: str = '',
) -> engine.Claim:
    """engine.finish_job; over several keyspaces, the queues before the job's are asked first, then the
    job's own (in the finishing call), then those after it (the module's docstring)."""
    if worker is None or not keys.spans(worker.queues):
        return engine.finish_job(
            connection, job_id, queue, execution_id, plan, working_time, worker, claim_next, moment, next_execution
        )
    moment, next_execution = moment or dates.now(), next_execution or uuid.uuid4().hex
    order = list(worker.queues)
    at = order.index(queue) if queue in order else len(order)
    ahead = engine.Claim()
    if claim_next and at > 0:
        ahead = _claim_in(connection, worker, order[:at], None, moment, next_execution)
    took = bool(ahead) or ahead.suspended
    with keys.within(queue):
        done = engine.finish_job(
            connection,
            job_id,
            queue,
            execution_id,
            plan,
            working_time,
            replace(worker, queues=[queue]),
            claim_next=claim_next and not took,
            moment=moment,
            next_execution=next_execution,
        )
    answer = done
    answer.plain = False  # (it speaks for its own keyspace only: the wait reads the paused queues first)
    if took:
        answer = ahead
    elif claim_next and not done and not done.suspended and at + 1 < len(order):
        answer = _claim_in(connection, worker, order[at + 1 :], None, moment, next_execution)
    if answer is not done:
        parts = [ahead, done] if took else [ahead, done, answer]
        answer.recorded = done.recorded
        answer.dropped = [job_id for part in parts for job_id in part.dropped]
        answer.dead_lettered = [dead for part in parts for dead in part.dead_lettered]
    return answer


def finish_jobs(
    connection: Redis,
    worker: engine.WorkerRef,
    ended: list[engine.Ended],
    claim_count: int,
    still_running: str = '',
    moment: datetime | None = None,
    still_queue: str | None = None,
    execution_ids: list[str] | None = None,
    resent: bool = False,
) -> engine.Batch:
    """engine.finish_jobs; over several keyspaces, one call per keyspace in queue order that has an
    outcome to record or a claim left to make (each claims what the ones before it did not).
    `still_queue`: the queue of the job `still_running` names, whose keyspace alone is told of it
    (the others' worker hash names no job of another keyspace). `execution_ids` (claim_execution_ids)
    and `resent`: a call sent again as it was after a lost reply (engine.finish_jobs)."""
    if not keys.spans(worker.queues):
        return engine.finish_jobs(connection, worker, ended, claim_count, still_running, moment, execution_ids, resent)
    moment = moment or dates.now()
    by_queue: dict[str, list[int]] = {}
    for index, outcome in enumerate(ended):
        by_queue.setdefault(outcome.queue, []).append(index)
    batch = engine.Batch([False] * len(ended), [])
    left = claim_count
    for position, queue in enumerate([*dict.fromkeys(worker.queues), *(q for q in by_queue if q not in worker.queues)]):
        mine = by_queue.get(queue, [])
        claim = left if queue in worker.queues else 0
        if not mine and not claim:
            continue
        # (each queue claims with ids of its own, so a call sent again claims with the same ones)
        ids = execution_ids[position * claim_count :] if execution_ids is not None else None
        with keys.within(queue):
            still = still_running if still_queue in (None, queue) else ''
            mine_ended = [ended[i] for i in mine]
            part = engine.finish_jobs(
                connection, replace(worker, queues=[queue]), mine_ended, claim, still, moment, ids, resent
            )
        for index, recorded in zip(mine, part.recorded, strict=True):
            batch.recorded[index] = recorded
        batch.claims += part.claims
        batch.dropped += part.dropped
        batch.dead_lettered += part.dead_lettered
        left -= len(part.claims)
        if part.suspended:
            batch.suspended, left = True, 0
    return batch


def claim_execution_ids(queues: list[str], claim_count: int) -> list[str]:
    """The execution ids finish_jobs claims with, made before its first try so that a call sent again
    after a lost reply carries the same: claim_count, or claim_count per queue over several keyspaces."""
    parts = len(dict.fromkeys(queues)) if keys.spans(queues) else 1
    return [engine.new_execution_id() for _ in range(claim_count * parts)]


def beat(
    worker_hash: Beating,
    queues: list[str],
    in_flight: list[engine.Claim],
    started: float | None,
    worker_ttl: int,
    monitoring: int,
    grace: int,
) -> bool:
    """WorkerHash.beat in each keyspace, with the jobs in flight there; True when any is suspended."""
    if not keys.spans(queues):
        return worker_hash.beat(in_flight, started, worker_ttl, monitoring, grace)
    suspended = False
    for names in keys.by_keyspace(queues):
        mine = [claim for claim in in_flight if claim.queue in names]
        suspended = worker_hash.beat(mine, started if mine else None, worker_ttl, monitoring, grace) or suspended
    return suspended


def is_suspended(connection: Any, queues: list[str]) -> bool:
    """Whether <prefix>suspended is set in any of these queues' keyspaces."""
    suspended = False
    for _ in keys.by_keyspace(queues):
        suspended = bool(connection.exists(keys.SUSPENDED)) or suspended
    return suspended
