"""The Lua scripts in lua/, loaded once and called by EVALSHA (one round trip per call).

Each script is one state change. A typed wrapper per script is the only Python that knows its
ARGV order. rqfast never sends its own calls through a redis-py pipeline (registered Script objects
make Pipeline.execute() send SCRIPT EXISTS first, an extra round trip); a caller's pipeline, passed
as RQ's `pipeline=`, gets the call queued into it (Script.queue).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from . import keys
from .dates import epoch_seconds, now, utcformat
from .defaults import HEARTBEAT_GRACE, MAX_DROPPED_PER_CLAIM, RESULTS_MAXLEN
from .exceptions import DuplicateJobError

if TYPE_CHECKING:  # annotations only: a job horse that never runs a script imports none of these
    from datetime import datetime
    from pathlib import Path

    from redis import Redis
    from redis.client import Pipeline

    from .jobspec import JobSpec


def _search_path() -> tuple[Path, Path]:
    from pathlib import Path

    here = Path(__file__).resolve().parent
    return here / 'lua', here.parent / 'lua'  # installed: the wheel ships them as rqfast/lua/; a checkout


def _lua_dir() -> Path:
    search = _search_path()
    for path in search:
        if (path / '_common.lua').is_file():
            return path
    raise RuntimeError(f'rqfast: Lua scripts not found in {", ".join(map(str, search))}')


class Script:
    """A script file with the shared key-name prelude in front, called by its sha1."""

    def __init__(self, name: str) -> None:
        directory = _lua_dir()
        prelude = (directory / '_common.lua').read_text()
        self.name = name
        self.source = (prelude + (directory / f'{name}.lua').read_text()).encode()
        import hashlib

        self.sha = hashlib.sha1(self.source).hexdigest()

    def __call__(self, connection: Redis, args: Sequence[Any]) -> Any:
        client: Any = connection  # a Redis or a DirectLine; redis-py leaves execute_command untyped
        try:
            return client.execute_command('EVALSHA', self.sha, 0, keys.PREFIX, *args)
        except Exception as exc:
            from redis.exceptions import NoScriptError

            if not isinstance(exc, NoScriptError):
                _explain_no_lua(exc)
                raise
            client.script_load(self.source)
            return client.execute_command('EVALSHA', self.sha, 0, keys.PREFIX, *args)

    def queue(self, pipeline: Pipeline, args: Sequence[Any]) -> None:
        """Queue the call into a caller's pipeline: it runs, and replies, when the caller executes it.

        The call must not depend on the script being cached: an EVALSHA that meets NOSCRIPT inside a
        MULTI fails at EXEC with the caller's other commands applied (a half-written state change), and
        the NOSCRIPT-retry of __call__ cannot happen there. So the first call of a script in the batch
        the pipeline holds is an EVAL with the whole source, which also caches it on the server; later
        calls in the same batch are EVALSHAs, which Redis runs after that EVAL, in order, on the same
        connection (so a pipeline of many enqueues sends the source once, not once per job). Inside a
        MULTI nothing runs in between; in a non-transactional one (not atomic anyway) only another
        client's SCRIPT FLUSH in between could take the script away.
        """
        if pipeline.watching and not pipeline.explicit_transaction:
            pipeline.multi()  # WATCH mode would run the call at once; RQ's enqueue switches to MULTI too
        stack = pipeline.command_stack
        batch, sent = _sent_in_batch.get(pipeline, (None, set()))
        if batch is not stack:  # execute() and reset() start a new command_stack: a new batch
            sent = set()
            _sent_in_batch[pipeline] = (stack, sent)
        client: Any = pipeline  # redis-py leaves execute_command untyped
        if self.sha in sent:
            client.execute_command('EVALSHA', self.sha, 0, keys.PREFIX, *args)
        else:
            client.execute_command('EVAL', self.source, 0, keys.PREFIX, *args)
            sent.add(self.sha)


# Per caller's pipeline: its batch (the command_stack list itself, held so that identity compares
# safely) and the shas of the scripts sent in full in it.
_sent_in_batch: weakref.WeakKeyDictionary[Any, tuple[list[Any], set[str]]] = weakref.WeakKeyDictionary()

class LuaUnavailableError(RuntimeError):
    """The server runs no Lua scripts: plain fakeredis, without its `lua` extra (lupa)."""


def _explain_no_lua(exc: Exception) -> None:
    """A server that does not know EVALSHA gets a message saying what to install (only on the error path)."""
    if "unknown command 'evalsha'" in str(exc).lower():
        raise LuaUnavailableError(
            'rqfast runs every state change as a Lua script, and this Redis server does not run Lua. '
            'With fakeredis, install its Lua support: pip install "fakeredis[lua]"'
        ) from exc


_scripts: dict[str, Script] = {}


def call(name: str, connection: Redis, args: Sequence[Any], pipeline: Pipeline | None = None) -> Any:
    """Run the script now (its reply), or queue it into the caller's `pipeline` (None: no reply yet)."""
    if pipeline is None:
        return script(name)(connection, args)
    script(name).queue(pipeline, args)
    return None


def script(name: str) -> Script:
    found = _scripts.get(name)
    if found is None:
        found = _scripts[name] = Script(name)
    return found


def enqueue_record(
    job: JobSpec,
    mode: str,
    at_front: bool = False,
    unique: bool = False,
    score: int | str = '',
    allow_failure: bool = False,
) -> list[Any]:
    """One job's record for enqueue_jobs.lua (whose header explains `mode`); the script sets status
    and, unless it schedules the job, enqueued_at itself."""
    from .jobhash import job_fields

    fields = job_fields(job)
    fields.pop('status', None)
    if mode != 'schedule':  # a scheduled job keeps the enqueued_at it has (a repeat's, a retry's), as in RQ
        fields.pop('enqueued_at', None)
    dependency_ids = job.depends_on_ids
    record: list[Any] = [
        job.id,
        mode,
        int(bool(at_front)),
        int(unique),
        job.ttl or '',
        score,
        int(allow_failure),
        len(dependency_ids),
        *dependency_ids,
        len(fields),
    ]
    for name, value in fields.items():
        record.extend((name, value))
    return record


def record_dependencies(record: list[Any]) -> tuple[str, list[str], bool]:
    """An enqueue record's mode, its dependency ids, and whether a failed one counts as met (as the
    script judges: in batch mode only)."""
    mode, count = record[1], record[7]
    return mode, list(record[8 : 8 + count]), mode == 'batch' and record[6] == 1


def enqueue_jobs(
    connection: Redis,
    queue: str,
    now_text: str,
    now_epoch: int,
    records: list[list[Any]],
    pipeline: Pipeline | None = None,
) -> list[str] | None:
    """Store a batch of jobs (see lua/enqueue_jobs.lua for a record's layout); a status per job
    (None when queued into `pipeline`)."""
    args: list[Any] = [queue, now_text, now_epoch, len(records)]
    for record in records:
        args.extend(record)
    statuses = call('enqueue_jobs', connection, args, pipeline)
    if statuses is None:
        return None
    return [status.decode() if isinstance(status, bytes) else status for status in statuses]


def cancel_job(
    connection: Redis,
    job_id: str,
    now_epoch: int,
    now_text: str,
    enqueue_dependents: bool,
    remove_from_dependencies: bool,
    pipeline: Pipeline | None = None,
) -> int | None:
    """1 when canceled, 0 when the job does not exist, -1 when it was canceled already (None when
    queued into `pipeline`)."""
    args = [job_id, now_epoch, now_text, int(enqueue_dependents), int(remove_from_dependencies)]
    reply = call('cancel_job', connection, args, pipeline)
    return None if reply is None else int(reply)


def delete_job(
    connection: Redis, job_id: str, remove_from_queue: bool, delete_dependents: bool, pipeline: Pipeline | None = None
) -> int | None:
    """Deletes the job (and its dependents when asked); the number of jobs deleted (None when queued
    into `pipeline`)."""
    reply = call('delete_job', connection, [job_id, int(remove_from_queue), int(delete_dependents)], pipeline)
    return None if reply is None else int(reply)


def empty_queue(connection: Redis, queue: str) -> int:
    """LPOP every id and delete its job hash and dependents set; the number removed."""
    return int(script('empty_queue')(connection, [queue]))


def claim_job(
    connection: Redis,
    worker_name: str,
    times: list[Any],
    monitoring_interval: int,
    idle_ttl: int,
    execution_id: str,
    moved_id: str,
    moved_queue: str,
    queues: list[str],
) -> list[Any]:
    """See lua/claim_job.lua: {job id, queue, job hash (flat), dropped ids, suspended}."""
    args = [
        worker_name,
        *times,
        monitoring_interval,
        HEARTBEAT_GRACE,
        MAX_DROPPED_PER_CLAIM,
        idle_ttl,
        execution_id,
        moved_id,
        moved_queue,
        len(queues),
        *queues,
    ]
    return script('claim_job')(connection, args)  # type: ignore[no-any-return]


def finish_job(
    connection: Redis,
    worker_name: str,
    times: list[Any],
    job_id: str,
    queue: str,
    execution_id: str,
    plan: Any,
    working_time: float,
    claim_next: bool,
    monitoring_interval: int,
    idle_ttl: int,
    next_execution_id: str,
    queues: list[str],
    fence: str = '',
) -> list[Any]:
    """See lua/finish_job.lua: records `plan` (an engine.Plan), then answers as claim_job.

    With a `fence` (a started-registry member), only while that member and the job's started status hold.
    """
    args: list[Any] = [
        worker_name,
        *times,
        job_id,
        queue,
        execution_id,
        fence,
        plan.registry,
        plan.registry_score,
        plan.job_ttl,
        plan.release_as,
        plan.put_back,
        plan.schedule_score,
        plan.counter,
        repr(float(working_time)),
        plan.stream_ttl,
        RESULTS_MAXLEN,
        len(plan.fields),
    ]
    for name, value in plan.fields.items():
        args.extend((name, value))
    args.append(len(plan.stream))
    for name, value in plan.stream.items():
        args.extend((name, value))
    args.extend((int(claim_next), monitoring_interval, HEARTBEAT_GRACE, MAX_DROPPED_PER_CLAIM, idle_ttl))
    args.extend((next_execution_id, len(queues), *queues))
    return script('finish_job')(connection, args)  # type: ignore[no-any-return]


def register_worker(
    connection: Redis,
    name: str,
    what: str,
    ttl: int,
    now_text: str,
    queues: list[str],
    fields: dict[str, Any] | None = None,
) -> bool:
    """Birth ("birth", with the hash fields) or death ("death"); False when the name is taken."""
    args: list[Any] = [name, what, ttl, now_text, len(queues), *queues]
    if fields is not None:
        args.append(len(fields))
        for key, value in fields.items():
            args.extend((key, value))
    return bool(script('register_worker')(connection, args))


def heartbeat(
    connection: Redis,
    name: str,
    worker_ttl: int,
    times: list[Any],
    job_ttl: int,
    working_time: str,
    jobs: list[tuple[str, str, str]],
) -> bool:
    """Heartbeat the worker and its jobs in flight (id, queue, execution id); True if suspended."""
    args: list[Any] = [name, worker_ttl, *times, job_ttl, HEARTBEAT_GRACE, working_time, len(jobs)]
    for job in jobs:
        args.extend(job)
    return bool(script('heartbeat')(connection, args))


def return_jobs(connection: Redis, moved: list[tuple[str, str]]) -> int:
    """Put (queue, id) pairs moved into intermediate lists back at the head of their queues."""
    args: list[Any] = []
    for queue, job_id in moved:
        args.extend((queue, job_id))
    return int(script('return_jobs')(connection, args))


def schedule_jobs(
    connection: Redis,
    name: str,
    ttl: int,
    now_text: str,
    now_epoch: int,
    limit: int,
    acquire: bool,
    move: bool,
    release: int,
    fields: dict[str, Any],
    queues: list[str],
) -> list[tuple[int, int]]:
    """A scheduler tick or step (see lua/schedule_jobs.lua; release: 0, 1 locks, 2 locks and hash):
    per queue, (lock state, jobs moved)."""
    args: list[Any] = [name, ttl, now_text, now_epoch, limit, int(acquire), int(move), release, len(fields)]
    for key, value in fields.items():
        args.extend((key, value))
    args.extend((len(queues), *queues))
    reply = script('schedule_jobs')(connection, args)
    return [(int(reply[i]), int(reply[i + 1])) for i in range(0, len(reply), 2)]


def clean_registries(
    connection: Redis,
    now_float: str,
    cutoff: int,
    whole: bool,
    lock_ttl: int,
    stuck_after: int,
    first_seen_ttl: int,
    job_fields: Sequence[str],
    queues: list[str],
) -> list[Any]:
    """A maintenance pass (see lua/clean_registries.lua): {abandoned, rescued, stats, locked queues}."""
    args: list[Any] = [
        now_float,
        cutoff,
        'all' if whole else 'started',
        lock_ttl,
        stuck_after,
        first_seen_ttl,
        len(job_fields),
        *job_fields,
        len(queues),
        *queues,
    ]
    return script('clean_registries')(connection, args)  # type: ignore[no-any-return]


# --- the scripts of RQ's public dependency and job calls. `pipeline`: the caller's, where RQ's method takes
# one. TODO(pipeline branch): queue the call into it with scripts.call(name, connection, args, pipeline) once
# that lands; until then the call runs at once, as every rqfast pipeline= did before.


def _run(name: str, connection: Redis, args: Sequence[Any], pipeline: Any = None) -> Any:
    return script(name)(connection, args)


def register_dependency(
    connection: Redis, job_id: str, origin: str, now_epoch: int, dependency_ids: Sequence[str], pipeline: Any = None
) -> None:
    """The job into its deferred registry and its dependencies' dependents sets (lua/register_dependency.lua)."""
    _run('register_dependency', connection, [job_id, origin, now_epoch, len(dependency_ids), *dependency_ids], pipeline)


def expire_job(connection: Redis, job_id: str, ttl: int, pipeline: Any = None) -> None:
    """EXPIRE the job hash and its two dependency sets (lua/expire_job.lua)."""
    _run('expire_job', connection, [job_id, ttl], pipeline)


def enqueue_dependents(
    connection: Redis, job_id: str, status: str, now_text: str, exclude_id: str = '', pipeline: Any = None
) -> None:
    """Enqueue the dependents (whose dependencies are met) of a job that ended with `status`."""
    _run('enqueue_dependents', connection, [job_id, status, now_text, exclude_id], pipeline)


def add_failed_job(
    connection: Redis, job_id: str, queue: str, score: int, ttl: int, fields: dict[str, Any], pipeline: Any = None
) -> None:
    """Save the job and add it to its failed registry at `score` (lua/add_failed_job.lua)."""
    args: list[Any] = [job_id, queue, score, ttl, len(fields)]
    for name, value in fields.items():
        args.extend((name, value))
    _run('add_failed_job', connection, args, pipeline)


class DirectLine:
    """One connection a worker holds for its claim/finish calls, sending each command packed in one go.

    redis-py's execute_command costs about 20 µs more per call (argument encoding in Python, pool and
    retry bookkeeping): some 7% of a no-op job. Errors are redis-py's own; on a connection error the
    socket is dropped, the error raised, and the next call reconnects.
    """

    def __init__(self, connection: Redis) -> None:
        from redis import Redis as Client

        self._client = Client(connection_pool=connection.connection_pool, single_connection_client=True)
        self._pack: Callable[..., bytes] | None = None
        try:
            from hiredis import pack_command

            self._pack = pack_command
        except ImportError:  # redis-py's own packing then
            pass

    def execute_command(self, *args: Any) -> Any:
        from redis.exceptions import ConnectionError, TimeoutError

        line: Any = self._client.connection  # redis-py's Connection methods are untyped
        if line is None:
            return self._client.execute_command(*args)  # type: ignore[no-untyped-call]
        packed = [self._pack(args)] if self._pack is not None else line.pack_command(*args)
        try:
            line.send_packed_command(packed, check_health=False)
            return line.read_response()
        except (ConnectionError, TimeoutError, OSError):
            line.disconnect()
            raise

    def script_load(self, source: bytes) -> Any:
        return self._client.script_load(source)

    def close(self) -> None:
        self._client.close()


# --- RQ 2.12's rq.scripts functions: the same signatures and Redis effects, on rqfast's scripts


def save_unique_job(
    connection: Redis, queue_key: str, job: JobSpec, enqueue: bool = True, at_front: bool = False
) -> bool:
    """Store the job unless its id exists, and push it onto the queue (not with enqueue=False).

    DuplicateJobError when a job with that id exists (nothing is written).
    """
    queue = keys.queue_name_from_key(queue_key)
    record = enqueue_record(job, 'queue' if enqueue else 'store', at_front=at_front, unique=True)
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
    record = enqueue_record(job, 'schedule', unique=True, score=epoch_seconds(scheduled_datetime))
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
