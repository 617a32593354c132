"""One job as the job page shows it, read so that the dashboard never runs what a worker would refuse.

The hash is loaded sealed first (rqfast.security.restore_sealed: every plain field, nothing
deserialized). The payload (the call's arguments, meta, the results' return values) is read only
then, and only as a worker would: with the workers' job policy, a job it refuses (unsigned,
tampered, a function or a pickled global outside the allow-list) keeps its payload unread, and an
allowed one is unpickled by the policy's restricted unpickler. Nothing here imports the job's
function or calls anything it names; nothing writes to Redis.
"""

from __future__ import annotations

import json
import pprint
import reprlib
import zlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import keys
from ..events import Event, job_events
from ..executions import Execution, ExecutionRegistry
from ..job import Job
from ..jobhash import unreadable_fields
from ..jobspec import JOB_ID_PATTERN
from ..results import Result, get_key
from ..security import restore_sealed, sealed_fields
from ..text import as_text
from .settings import Settings

if TYPE_CHECKING:
    from redis import Redis

EVENTS_READ = 2000  # newest entries of the queue's event stream searched for the job's events
SHOWN = reprlib.Repr()
SHOWN.maxstring, SHOWN.maxother, SHOWN.maxlist, SHOWN.maxdict, SHOWN.maxlevel = 2000, 500, 100, 100, 6


@dataclass
class Shown:
    """A payload value as text, or why it is not shown."""

    text: str
    shown: bool = True

    @classmethod
    def hidden(cls, reason: str) -> Shown:
        return cls(reason, shown=False)


@dataclass
class RunView:
    """One run of the job: an entry of its results stream (RQ's Result)."""

    id: str
    kind: str  # successful, failed, stopped, retried...
    created_at: datetime
    worker: str
    execution_id: str
    started_at: datetime | None
    ended_at: datetime | None
    value: Shown | None  # the return value (a successful run)
    exception: str | None
    output: str | None  # captured output (capture_output=True)

    @property
    def duration(self) -> float | None:
        if self.started_at is None or self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


@dataclass
class JobView:
    id: str
    queue: str
    raw: dict[str, bytes]
    job: Job | None = None  # loaded sealed (no payload); None when the hash cannot be loaded
    problem: str | None = None  # why it cannot be loaded: its malformed fields
    call: Shown = field(default_factory=lambda: Shown.hidden(''))
    meta: Shown = field(default_factory=lambda: Shown.hidden(''))
    runs: list[RunView] = field(default_factory=list)
    executions: list[Execution] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    @property
    def status(self) -> str:
        return as_text(self.raw.get('status', b''))

    @property
    def progress(self) -> Shown | None:
        stored = self.raw.get('progress')
        if not stored:
            return None
        try:
            return Shown(json.dumps(json.loads(stored), indent=1))
        except ValueError:
            return Shown.hidden(f'not JSON: {SHOWN.repr(stored)}')

    @property
    def progress_share(self) -> float | None:
        """The progress as a share of done, where it reads as one: a number from 0 to 100 (percent), or
        an object with `done` (or `current`) and `of` (or `total`)."""
        stored = self.raw.get('progress')
        try:
            value = json.loads(stored) if stored else None
        except ValueError:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 100:
            return float(value) / 100
        if isinstance(value, dict):
            done, total = value.get('done', value.get('current')), value.get('of', value.get('total'))
            if isinstance(done, int | float) and isinstance(total, int | float) and total > 0:
                return max(0.0, min(1.0, done / total))
        return None

    @property
    def exc_info(self) -> str | None:
        failed = next((run.exception for run in self.runs if run.exception), None)
        return failed or _exc_text(self.raw.get('exc_info')) or None

    @property
    def output(self) -> str | None:
        return next((run.output for run in self.runs if run.output is not None), None)

    def field(self, name: str) -> str:
        return as_text(self.raw.get(name, b''))


def _exc_text(stored: bytes | None) -> str | None:
    """RQ's `exc_info` field: zlib-compressed text (plain text from older writers)."""
    if not stored:
        return None
    try:
        return zlib.decompress(stored).decode('utf-8', 'replace')
    except zlib.error:
        return as_text(stored)


def valid_id(job_id: str) -> bool:
    return bool(JOB_ID_PATTERN.fullmatch(job_id)) and len(job_id) <= 200


def find_queue(connection: Redis, job_id: str, queue: str | None, queue_names: list[str]) -> str | None:
    """The queue whose keyspace holds the job (sharded by queue); unsharded, its origin; None: no such job."""
    if not keys.SHARDED:
        origin = connection.hget(keys.job_key(job_id), 'origin')
        exists = origin is not None or connection.exists(keys.job_key(job_id))
        return (as_text(origin) if origin else queue or '') if exists else None
    candidates = [queue] if queue else queue_names
    pipe = connection.pipeline(transaction=False)
    for name in candidates:
        with keys.within(name):
            pipe.exists(keys.job_key(job_id))
    for name, found in zip(candidates, pipe.execute(), strict=True):
        if found:
            return name
    return None


def load(settings: Settings, job_id: str, queue: str) -> JobView | None:
    """The job as the page shows it; None when there is no such job (or the id cannot be one)."""
    connection = settings.connection
    if not valid_id(job_id):
        return None
    with keys.within(queue):
        raw: dict[Any, bytes] = connection.hgetall(keys.job_key(job_id))  # type: ignore[assignment]
        if not raw:
            return None
        view = JobView(job_id, queue, {as_text(name): value for name, value in raw.items()})
        _load_sealed(view, connection, settings)
        _load_payload(view, connection, settings, raw)
        view.executions = _executions(connection, job_id)
        if view.job is not None and view.job.events:
            view.events = _events(connection, view.job)
    return view


def _load_sealed(view: JobView, connection: Redis, settings: Settings) -> None:
    job = Job(view.id, connection=connection, serializer=settings.job_serializer)
    try:
        restore_sealed(job, view.raw)
    except Exception as exc:
        bad = unreadable_fields(Job(view.id, connection=connection), sealed_fields(view.raw))
        named = ', '.join(f'{name}={SHOWN.repr(value)}' for name, (value, _) in bad.items())
        if 'data' not in view.raw:
            named = 'no data field (the serialized call)' + (f'; {named}' if named else '')
        view.problem = f'this job hash cannot be loaded: {named or f"{type(exc).__name__}: {exc}"}'
        return
    view.job = job


def _load_payload(view: JobView, connection: Redis, settings: Settings, raw: dict[Any, bytes]) -> None:
    """The call, meta and runs; the payload only where a worker would read it."""
    reason = _refusal(view, settings, raw)
    reader = None
    if reason is None:
        reader = Job(view.id, connection=connection, serializer=settings.job_serializer)
        try:
            if settings.policy is not None:
                settings.policy.arm(reader, raw)  # every unpickle restricted to the allow-list
            reader.restore(raw)
            view.call = Shown(_call_text(reader))
            view.meta = Shown(pprint.pformat(reader.meta, width=100, compact=True) if reader.meta else '{}')
        except Exception as exc:
            reason = f'cannot be read: {type(exc).__name__}: {exc}'
            reader = None
    if reason is not None:
        view.call = view.meta = Shown.hidden(reason)
    view.runs = _runs(view, connection, reader, reason)


def _refusal(view: JobView, settings: Settings, raw: dict[Any, bytes]) -> str | None:
    if view.job is None:
        return 'not read: the job hash cannot be loaded'
    if not settings.decode:
        return 'not read: the dashboard was started with --no-decode'
    if settings.policy is not None:
        refused = settings.policy.vet(view.id, raw, settings.job_serializer)
        if refused:
            return 'not read: ' + refused.strip().removeprefix('rqfast: ')
    return None


def _call_text(job: Job) -> str:
    args = ', '.join([SHOWN.repr(arg) for arg in job.args] + [f'{k}={SHOWN.repr(v)}' for k, v in job.kwargs.items()])
    return f'{job.func_name}({args})'


def _runs(view: JobView, connection: Redis, reader: Job | None, reason: str | None) -> list[RunView]:
    entries: Any = connection.xrevrange(get_key(view.id), '+', '-')
    runs = []
    for entry_id, payload in entries:
        fields = {as_text(name): value for name, value in payload.items()}
        value: Shown | None = None
        try:
            stored = 'return_value' in fields
            kept = {name: v for name, v in fields.items() if name != 'return_value'}
            result = Result.restore(view.id, as_text(entry_id), kept, connection)
            if stored and reader is not None:
                loaded = Result.restore(view.id, as_text(entry_id), fields, connection, reader.serializer)
                value = Shown(SHOWN.repr(loaded.return_value))
            elif stored:
                value = Shown.hidden(reason or 'not read')
        except Exception as exc:
            value = Shown.hidden(f'cannot be read: {type(exc).__name__}: {exc}')
            try:
                result = Result.restore(view.id, as_text(entry_id), kept, connection)
            except Exception:
                continue  # an entry this version cannot read at all
        runs.append(
            RunView(
                id=as_text(entry_id),
                kind=result.type.name.lower().replace('_', ' '),
                created_at=result.created_at,
                worker=result.worker_name,
                execution_id=result.execution_id or '',
                started_at=result.execution_started_at,
                ended_at=result.execution_ended_at,
                value=value,
                exception=result.exc_string,
                output=result.output,
            )
        )
    return runs


def _executions(connection: Redis, job_id: str) -> list[Execution]:
    """The job's executions still listed (running, or not yet swept), read without RQ's cleanup (no write)."""
    ids = [as_text(member) for member in connection.zrange(ExecutionRegistry(job_id, connection).key, 0, -1)]
    found = []
    for execution_id in ids:
        try:
            found.append(Execution.fetch(execution_id, job_id, connection))
        except (ValueError, TypeError):
            continue  # its hash expired since the index was read
    return found


def _events(connection: Redis, job: Job) -> list[Event]:
    """The job's events among the newest EVENTS_READ of its queue's stream, oldest first."""
    newest: Any = connection.xrevrange(keys.events_key(job.origin), count=EVENTS_READ)
    events = [Event.from_entry(entry_id, fields) for entry_id, fields in reversed(newest)]
    return [event for event in events if event.job_id == job.id]


__all__ = ['JobView', 'RunView', 'Shown', 'find_queue', 'job_events', 'load', 'valid_id']
