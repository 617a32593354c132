"""The Lua scripts in lua/, loaded once and called by EVALSHA (one round trip per call).

Each script is one state change. A typed wrapper per script is the only Python that knows its
ARGV order (a job to store is an EnqueueRecord, scriptrecords.py, which renders its own). rqfast
never sends its own calls through a redis-py pipeline (registered Script objects make
Pipeline.execute() send SCRIPT EXISTS first, an extra round trip); a caller's pipeline, passed as
RQ's `pipeline=`, gets the call queued into it (Script.queue).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from . import keys, scriptload
from .dates import epoch_seconds, now, utcformat
from .defaults import rq2_compat
from .exceptions import DuplicateJobError, InvalidJobOperation
from .scriptload import DirectLine as DirectLine
from .scriptload import LuaUnavailableError as LuaUnavailableError
from .scriptload import Script as Script
from .scriptload import call, script
from .scriptrecords import EnqueueRecord, Value
from .status import JobStatus

if TYPE_CHECKING:  # annotations only: a job horse that never runs a script imports none of these
    from datetime import datetime

    from redis import Redis
    from redis.client import Pipeline

    from .jobspec import JobSpec


class ScriptCall(NamedTuple):
    """One script call as a value, made without I/O: the script's name and its ARGV. run() sends it on
    a redis-py client (or queues it into a caller's pipeline); rqfast.asyncio's executor awaits it on a
    redis.asyncio client. The same call either way: the same writes."""

    name: str
    args: list[Value]


def run(call: ScriptCall, connection: Redis, pipeline: Pipeline | None = None) -> Any:
    """Send `call` now (its reply), or queue it into the caller's `pipeline` (None)."""
    return scriptload.call(call.name, connection, call.args, pipeline)


def enqueue_jobs_call(
    queue: str, now_text: str, now_epoch: int, records: Sequence[EnqueueRecord], group: str = ''
) -> ScriptCall:
    """The enqueue_jobs.lua call storing a batch of jobs (see the script for a record's layout), each
    added to `group` when one is named."""
    args: list[Value] = [queue, now_text, now_epoch, group, len(records)]
    for record in records:
        args += record.argv()
    return ScriptCall('enqueue_jobs', args)


def statuses(reply: Sequence[bytes | str]) -> list[str]:
    """enqueue_jobs.lua's reply: a status per job."""
    return [status.decode() if isinstance(status, bytes) else status for status in reply]


def enqueue_jobs(
    connection: Redis,
    queue: str,
    now_text: str,
    now_epoch: int,
    records: Sequence[EnqueueRecord],
    pipeline: Pipeline | None = None,
    group: str = '',
) -> list[str] | None:
    """Store a batch of jobs (enqueue_jobs_call); a status per job (None when queued into `pipeline`)."""
    reply = run(enqueue_jobs_call(queue, now_text, now_epoch, records, group), connection, pipeline)
    return None if reply is None else statuses(reply)


# enqueue_jobs.lua's answers as a job's status ("stored": queued, then run at once); a dict is 0.4 µs
# cheaper than JobStatus(status) per job
_STATUSES = {**{status.value: status for status in JobStatus}, 'stored': JobStatus.QUEUED}


def stored(jobs: Sequence[JobSpec], statuses: Sequence[str], moment: datetime) -> None:
    """What enqueue_jobs answered, per job: its status and enqueued_at follow, or the error it names."""
    for job, status in zip(jobs, statuses, strict=True):
        if status == 'duplicate':
            raise DuplicateJobError(f'Job with ID {job.id} already exists')
        if status == 'not_failed':
            raise InvalidJobOperation(f'Job {job.id} is not in the failed registry')
        job.set_local_status(_STATUSES.get(status) or JobStatus(status))
        if status in ('queued', 'stored'):
            job.enqueued_at = moment


def requeue_call(job: JobSpec, at_front: bool, moment: datetime) -> ScriptCall:
    """Job.requeue()'s enqueue_jobs call: a 'requeue' record, out of its failed registry onto its queue."""
    record = EnqueueRecord.for_job(job, 'requeue', at_front=at_front)
    return enqueue_jobs_call(job.origin, utcformat(moment), epoch_seconds(moment), [record])


def requeue(connection: Redis, job: JobSpec, at_front: bool) -> None:
    """Job.requeue(): out of its failed registry and back onto its queue, one enqueue_jobs call (a
    'requeue' record); InvalidJobOperation when it is not in the failed registry of its queue."""
    moment = now()
    stored([job], statuses(run(requeue_call(job, at_front, moment), connection)), moment)


def set_progress(connection: Redis, job_id: str, value: str, queue: str, events: int) -> None:
    """Job.set_progress() for a job with events: its progress field and a `progress` event (lua/set_progress.lua)."""
    call('set_progress', connection, [job_id, value, queue, events])


def enqueue_cron_job(
    connection: Redis,
    queue: str,
    now_text: str,
    now_epoch: int,
    record: EnqueueRecord,
    *,
    name: str,
    window: float | None,
    description: str,
    own: Sequence[str],
    score: float,
    history_limit: int,
    history_ttl: int,
) -> tuple[str, float | None]:
    """Store and enqueue one cron job run (see lua/enqueue_cron_job.lua), recording its history: (the job's
    status, None), or ('refused', the history score of the run another scheduler enqueued already), which
    only a `window` (an epoch; None: enqueue unconditionally) can give."""
    args: list[Value] = [queue, now_text, now_epoch, '', 1, *record.argv()]
    args += [name, '' if window is None else repr(window), description, ' '.join(own), repr(score)]
    args += [history_limit, history_ttl]
    status, *refused = call('enqueue_cron_job', connection, args)  # {status} or {"refused", score}
    refused_at = float(refused[0]) if _text(status) == 'refused' else None
    return _text(status), refused_at


def enqueue_debounced_call(
    queue: str, now_text: str, now_epoch: int, record: EnqueueRecord, key: str, key_ttl: int
) -> ScriptCall:
    """Schedule one job (its record's mode "schedule") as the one burst `key` runs, deleting the job the
    burst held if it never started (see lua/enqueue_debounced.lua); its reply: debounced_status()."""
    return ScriptCall('enqueue_debounced', [queue, now_text, now_epoch, '', 1, *record.argv(), key, key_ttl])


def debounced_status(reply: Sequence[Any]) -> str:
    (status,) = reply
    return _text(status)


def enqueue_debounced(
    connection: Redis, queue: str, now_text: str, now_epoch: int, record: EnqueueRecord, key: str, key_ttl: int
) -> str:
    """enqueue_debounced_call, sent: the job's status."""
    return debounced_status(run(enqueue_debounced_call(queue, now_text, now_epoch, record, key, key_ttl), connection))


def enqueue_throttled_call(
    queue: str, now_text: str, now_epoch: int, record: EnqueueRecord, key: str, ttl_ms: int
) -> ScriptCall:
    """Store one job unless `key`'s window is held (see lua/enqueue_throttled.lua); its reply: throttled()."""
    return ScriptCall('enqueue_throttled', [queue, now_text, now_epoch, '', 1, *record.argv(), key, ttl_ms])


def throttled(reply: Sequence[Any]) -> tuple[str, str, dict[bytes, bytes]]:
    """enqueue_throttled.lua's reply: (the job's status, '', {}), or ('throttled', the holder's id, the
    holder's job hash, {} when it is gone) with nothing written."""
    status, *held = reply  # {status} or {"throttled", holder id, its hash}
    if _text(status) != 'throttled':
        return _text(status), '', {}
    holder, flat = held
    return 'throttled', _text(holder), dict(zip(flat[::2], flat[1::2], strict=True))


def enqueue_throttled(
    connection: Redis, queue: str, now_text: str, now_epoch: int, record: EnqueueRecord, key: str, ttl_ms: int
) -> tuple[str, str, dict[bytes, bytes]]:
    """enqueue_throttled_call, sent: throttled()'s answer."""
    return throttled(run(enqueue_throttled_call(queue, now_text, now_epoch, record, key, ttl_ms), connection))


def cancel_job_call(
    job_id: str, now_epoch: int, now_text: str, enqueue_dependents: bool, remove_from_dependencies: bool
) -> ScriptCall:
    """lua/cancel_job.lua's call; its reply: canceled()."""
    return ScriptCall(
        'cancel_job', [job_id, now_epoch, now_text, int(enqueue_dependents), int(remove_from_dependencies)]
    )


def canceled(reply: Sequence[Any]) -> tuple[int, dict[str, list[str]]]:
    """(1, the dependents enqueued by queue) when canceled, (0, {}) when the job does not exist,
    (-1, {}) when it was canceled already."""
    outcome, *released = reply  # {1, origin, id, ...}, {0} or {-1}
    return int(outcome), by_queue(released)


def cancel_job(
    connection: Redis,
    job_id: str,
    now_epoch: int,
    now_text: str,
    enqueue_dependents: bool,
    remove_from_dependencies: bool,
    pipeline: Pipeline | None = None,
) -> tuple[int, dict[str, list[str]]] | None:
    """cancel_job_call, sent: canceled()'s answer (None when queued into `pipeline`)."""
    cancel = cancel_job_call(job_id, now_epoch, now_text, enqueue_dependents, remove_from_dependencies)
    reply = run(cancel, connection, pipeline)
    return None if reply is None else canceled(reply)


def by_queue(flat: Sequence[bytes | str]) -> dict[str, list[str]]:
    """A script's flat {origin, id, origin, id, ...} as RQ 3.0's map of queue name to job ids."""
    mapping: dict[str, list[str]] = {}
    for i in range(0, len(flat), 2):
        mapping.setdefault(_text(flat[i]), []).append(_text(flat[i + 1]))
    return mapping


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def delete_job(
    connection: Redis, job_id: str, remove_from_queue: bool, delete_dependents: bool, pipeline: Pipeline | None = None
) -> int | None:
    """Deletes the job (and its dependents when asked), with its results unless rq2_compat(); the
    number of jobs deleted (None when queued into `pipeline`)."""
    reply = run(delete_job_call(job_id, remove_from_queue, delete_dependents), connection, pipeline)
    return None if reply is None else int(reply)


def delete_job_call(job_id: str, remove_from_queue: bool, delete_dependents: bool) -> ScriptCall:
    """lua/delete_job.lua's call; its reply: the number of jobs deleted."""
    now_text, now_epoch = _now()  # a rate-limited job's freed slot promotes a waiter (enqueued_at)
    return ScriptCall(
        'delete_job',
        [job_id, int(remove_from_queue), int(delete_dependents), now_text, now_epoch, int(not rq2_compat())],
    )


def empty_queue(connection: Redis, queue: str) -> int:
    """LPOP every id and delete its job hash and dependents set (and results, unless rq2_compat());
    the number removed."""
    return int(script('empty_queue')(connection, [queue, int(not rq2_compat())]))


def schedule_jobs(
    connection: Redis,
    name: str,
    ttl: int,
    now_text: str,
    now_epoch: float,
    limit: int,
    acquire: bool,
    move: bool,
    release: int,
    fields: Mapping[str, Value],
    queues: list[str],
) -> tuple[list[tuple[int, int]], float | None]:
    """A scheduler tick or step (see lua/schedule_jobs.lua; release: 0, 1 locks, 2 locks and hash):
    per queue, (lock state, jobs moved); and, when moving, the earliest score left in the scheduled
    registries of the queues held (None: none, or not moving)."""
    args: list[Value] = [name, ttl, now_text, now_epoch, limit, int(acquire), int(move), release, len(fields)]
    for key, value in fields.items():
        args.extend((key, value))
    args.extend((len(queues), *queues))
    reply = script('schedule_jobs')(connection, args)
    due = None
    if len(reply) % 2:
        last = reply.pop()
        due = float(last) if last else None
    return [(int(state), int(moved)) for state, moved in zip(reply[::2], reply[1::2], strict=True)], due


class CleanStats(NamedTuple):
    """clean_registries.lua's counts, by name (in its header's order)."""

    finished_expired: int
    failed_expired: int
    dropped: int
    dead_workers: int
    group_jobs_pruned: int
    groups_dropped: int
    rate_limit_slots_freed: int
    rate_limit_promoted: int
    ready_enqueued: int
    ready_dropped: int


class CleanReply(NamedTuple):
    """clean_registries.lua's reply, by name: the abandoned jobs ({queue, member, fields...} each), the
    rescued intermediate ids (flat: queue, id), the counts, the queues another cleaner held, the ready ids pushed."""

    abandoned: list[Any]
    rescued: list[Any]
    stats: CleanStats
    locked: list[Any]
    ready: list[Any]


def clean_registries(
    connection: Redis,
    now_float: str,
    cutoff: int,
    mode: str,
    lock_ttl: int,
    stuck_after: int,
    first_seen_ttl: int,
    job_fields: Sequence[str],
    queues: list[str],
    group_lock_ttl: int = 0,
) -> CleanReply:
    """A maintenance pass (see lua/clean_registries.lua; `mode` all, started or ready): its CleanReply. A
    whole pass cleans the groups when group_lock_ttl is 0, else only if it takes the group-cleaning lock for
    that many seconds."""
    args: list[Value] = [
        now_float,
        cutoff,
        mode,
        lock_ttl,
        stuck_after,
        first_seen_ttl,
        len(job_fields),
        *job_fields,
        len(queues),
        *queues,
        utcformat(now()),  # promoted rate-limited jobs' enqueued_at
        group_lock_ttl,
    ]
    abandoned, rescued, stats, locked, ready = script('clean_registries')(connection, args)
    return CleanReply(abandoned, rescued, CleanStats(*(int(n) for n in stats)), locked, ready)


# --- the scripts of RQ's public dependency and job calls. `pipeline`: the caller's, where RQ's method takes
# one. TODO(pipeline branch): queue the call into it with scripts.call(name, connection, args, pipeline) once
# that lands; until then the call runs at once, as every rqfast pipeline= did before.


def clean_groups(connection: Redis, names: Sequence[str], prune: bool, drop: bool) -> tuple[list[str], int, int]:
    """RQ's group upkeep (see lua/clean_groups.lua) over `names`, or every group when empty:
    (the groups whose set exists, job ids pruned, groups dropped from rq:groups)."""
    alive, pruned, dropped = call('clean_groups', connection, [int(prune), int(drop), len(names), *names], None)
    return [name.decode() if isinstance(name, bytes) else name for name in alive], int(pruned), int(dropped)


def _run(name: str, connection: Redis, args: Sequence[Value], pipeline: Pipeline | None = None) -> Any:
    return call(name, connection, args, pipeline)


def register_dependency(
    connection: Redis,
    job_id: str,
    origin: str,
    now_epoch: int,
    dependency_ids: Sequence[str],
    pipeline: Pipeline | None = None,
) -> None:
    """The job into its deferred registry and its dependencies' dependents sets (lua/register_dependency.lua)."""
    _run('register_dependency', connection, [job_id, origin, now_epoch, len(dependency_ids), *dependency_ids], pipeline)


def expire_job(connection: Redis, job_id: str, ttl: int, pipeline: Pipeline | None = None) -> None:
    """EXPIRE the job hash and its two dependency sets (lua/expire_job.lua)."""
    _run('expire_job', connection, [job_id, ttl], pipeline)


def enqueue_dependents(
    connection: Redis, job_id: str, status: str, now_text: str, exclude_id: str = '', pipeline: Pipeline | None = None
) -> dict[str, list[str]] | None:
    """Enqueue the dependents (whose dependencies are met) of a job that ended with `status`; the
    ids enqueued by queue (None when queued into `pipeline`)."""
    reply = _run('enqueue_dependents', connection, [job_id, status, now_text, exclude_id], pipeline)
    return None if reply is None else by_queue(reply)


def move_dependents_to_ready(
    connection: Redis, job_id: str, status: str, exclude_id: str = '', pipeline: Pipeline | None = None
) -> dict[str, list[str]] | None:
    """Move the dependents (whose dependencies are met) of a job that ended with `status` into their
    queues' ready registries (lua/move_dependents_to_ready.lua); the ids moved by queue (None when
    queued into `pipeline`)."""
    reply = _run('move_dependents_to_ready', connection, [job_id, status, exclude_id], pipeline)
    return None if reply is None else by_queue(reply)


def enqueue_ready_jobs(connection: Redis, queue: str, job_ids: Sequence[str]) -> list[str]:
    """Push the named jobs of the queue's ready registry that are still ready_to_enqueue (dropping the
    stale entries; lua/enqueue_ready_jobs.lua); the ids enqueued."""
    now_text, now_epoch = _now()
    return [_text(job_id) for job_id in _run('enqueue_ready_jobs', connection, [queue, now_text, now_epoch, *job_ids])]


def register_ready_jobs(
    connection: Redis, queue: str, job_ids: Sequence[str], pipeline: Pipeline | None = None
) -> None:
    """The jobs out of the queue's deferred registry and into its ready registry, status
    ready_to_enqueue (lua/register_ready_jobs.lua)."""
    _run('register_ready_jobs', connection, [queue, epoch_seconds(now()), *job_ids], pipeline)


def add_failed_job(
    connection: Redis,
    job_id: str,
    queue: str,
    score: int,
    ttl: int,
    fields: Mapping[str, Value],
    pipeline: Pipeline | None = None,
) -> None:
    """Save the job and add it to its failed registry at `score` (lua/add_failed_job.lua)."""
    args: list[Value] = [job_id, queue, score, ttl, len(fields)]
    for name, value in fields.items():
        args.extend((name, value))
    _run('add_failed_job', connection, args, pipeline)


# --- RQ 2.12's rq.scripts functions: the same signatures and Redis effects, on rqfast's scripts


def save_unique_job(
    connection: Redis, queue_key: str, job: JobSpec, enqueue: bool = True, at_front: bool = False
) -> bool:
    """Store the job unless its id exists, and push it onto the queue (not with enqueue=False).

    DuplicateJobError when a job with that id exists (nothing is written).
    """
    queue = keys.queue_name_from_key(queue_key)
    record = EnqueueRecord.for_job(job, 'queue' if enqueue else 'store', at_front=at_front, unique=True)
    return _stored_once(job, enqueue_jobs(connection, queue, *_now(), [record]))


def schedule_unique_job(
    connection: Redis, queue_key: str, registry_key: str, job: JobSpec, scheduled_datetime: datetime
) -> bool:
    """Store the job unless its id exists, and schedule it for scheduled_datetime (naive: local time).

    DuplicateJobError when a job with that id exists; ValueError for a registry key that is not the
    queue's scheduled registry (nothing is written).
    """
    queue = keys.queue_name_from_key(queue_key)
    if registry_key != keys.scheduled_registry_key(queue):
        raise ValueError(f'{registry_key!r} is not the scheduled registry of queue {queue!r}')
    record = EnqueueRecord.for_job(job, 'schedule', unique=True, score=epoch_seconds(scheduled_datetime))
    return _stored_once(job, enqueue_jobs(connection, queue, *_now(), [record]))


def _now() -> tuple[str, int]:
    moment = now()
    return utcformat(moment), epoch_seconds(moment)


def _stored_once(job: JobSpec, statuses: list[str] | None) -> bool:
    if statuses is not None and statuses[0] == 'duplicate':  # None: only for a caller's pipeline
        raise DuplicateJobError(f"Job with ID '{job.id}' already exists")
    return True


def acquire_or_refresh_lock(connection: Redis, lock_key: str, owner_token: str, ttl: int) -> str:
    """'acquired' (the lock was free), 'refreshed' (owner_token held it: its TTL is ttl again) or 'taken'."""
    reply = int(script('acquire_or_refresh_lock')(connection, [lock_key, owner_token, ttl]))
    return {1: 'acquired', 2: 'refreshed'}.get(reply, 'taken')


def release_lock(connection: Redis, lock_key: str, owner_token: str) -> bool:
    """Delete the lock if owner_token still holds it; False when it is absent or another's."""
    return bool(script('release_lock')(connection, [lock_key, owner_token]))
