"""The typed records Python hands the Lua scripts: one job to store (`EnqueueRecord`, for
lua/enqueue_jobs.lua and the guard and cron scripts that fall through into it) and the writes that
record one outcome (`Plan`, for lua/finish_job.lua and finish_jobs.lua). Each names its fields; the
record's own method (or the worker script's wrapper, for a Plan) is the one place that knows their
ARGV order.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from . import tracing
from .jobhash import job_fields

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from .jobspec import JobSpec

# One script argument, as redis-py encodes it (str as UTF-8, int and float as their text).
Value = str | bytes | int | float

# enqueue_jobs.lua's modes (its header explains each).
EnqueueMode = Literal['queue', 'requeue', 'batch', 'batch_rq2', 'store', 'schedule', 'limit']


# What a record's fields leave out: the status (the script sets it) and but for "schedule" enqueued_at
_LEFT_OUT = ('status', 'enqueued_at')
_SCHEDULED_LEFT_OUT = ('status',)


@dataclass(slots=True)
class EnqueueRecord:
    """One job for lua/enqueue_jobs.lua (its header explains each field), rendered by argv().

    A value: nothing changes a record once made (with_field makes another). Not frozen=True, whose
    __init__ costs about 0.7 µs more per job, 2% of an enqueue_many.
    """

    job_id: str
    mode: EnqueueMode
    # the job hash to write, without status (the script sets it) nor, but for "schedule", enqueued_at;
    # a priority first (the script reads the job's lane there)
    fields: dict[str, Value]
    at_front: bool = False
    unique: bool = False  # nothing written when the job hash exists ("duplicate")
    ttl: int | None = None  # the job's TTL (None or 0: none)
    score: int | None = None  # "schedule": the scheduled registry's score (an epoch)
    allow_failure: bool = False  # a failed dependency counts as met
    dependency_ids: Sequence[str] = ()  # none: the job is queued whatever its dependencies' state

    @classmethod
    def for_job(
        cls,
        job: JobSpec,
        mode: EnqueueMode,
        at_front: bool = False,
        unique: bool = False,
        score: int | None = None,
        allow_failure: bool = False,
        check_dependencies: bool = True,
    ) -> EnqueueRecord:
        """The record storing `job`: its hash fields as RQ's Job.save() writes them. Without
        check_dependencies the record names no dependency, so the job is queued whatever their state
        (RQ's Queue._enqueue_job)."""
        # a scheduled job keeps the enqueued_at it has (a repeat's, a retry's), as in RQ
        fields = job_fields(job, left_out=_SCHEDULED_LEFT_OUT if mode == 'schedule' else _LEFT_OUT)
        if tracing.ENABLED and tracing.TRACE_FIELD not in fields:  # the enqueuer's span, the parent of the job's run
            traceparent = job._rqfast_trace = tracing.current_traceparent()
            if traceparent:
                fields[tracing.TRACE_FIELD] = traceparent
        if 'priority' in fields:  # first: enqueue_jobs.lua reads a job's priority lane there
            fields = {'priority': fields.pop('priority'), **fields}
        return cls(
            job.id,
            mode,
            fields,
            bool(at_front),
            bool(unique),
            job.ttl,
            score,
            bool(allow_failure),
            job.depends_on_ids if check_dependencies else (),
        )

    def with_field(self, name: str, value: Value) -> EnqueueRecord:
        """The same record writing one more hash field (last)."""
        return replace(self, fields={**self.fields, name: value})

    def argv(self) -> list[Value]:
        """The record as enqueue_jobs.lua reads it: id, mode, at_front, unique, ttl, score, allow_failure,
        the dependency ids (counted), the fields' shape (fields_shape), the fields' values but the empty."""
        dependency_ids, fields = self.dependency_ids, self.fields
        values: list[Value] = []
        empty: list[str] = []
        for name, value in fields.items():
            if value == '' or value == b'':
                empty.append(name)
            else:
                values.append(value)
        return [
            self.job_id,
            self.mode,
            int(self.at_front),
            int(self.unique),
            self.ttl or '',
            '' if self.score is None else self.score,
            int(self.allow_failure),
            len(dependency_ids),
            *dependency_ids,
            fields_shape(tuple(fields), tuple(empty)),
            *values,
        ]


def shape_text(tokens: Iterable[str], what: str) -> str:
    """A script's shape argument (enqueue_jobs.lua's record fields, finish_job.lua's outcome): the
    tokens, a newline after each; a token holding a newline (`what` says what it is) is refused."""
    texts = list(tokens)
    for text in texts:
        if '\n' in text:
            raise ValueError(f'rqfast: {what} holds a newline: {text!r}')
    return ''.join(f'{text}\n' for text in texts)


@lru_cache(maxsize=256)
def fields_shape(names: tuple[str, ...], empty: tuple[str, ...]) -> str:
    """A record's field names in order (shape_text), `=` ending those whose value is empty (sent as no
    argument): enqueue_jobs.lua reads a shape once per server, as jobs of one kind repeat it."""
    for name in names:
        if name.endswith('='):
            raise ValueError(f'rqfast: a job hash field name ending in "=": {name!r}')
    blank = set(empty)
    return shape_text((f'{name}=' if name in blank else name for name in names), 'a job hash field name')


@dataclass(slots=True)
class Plan:
    """The writes that record one outcome (finish_job.lua's arguments, by name): made by
    planning.plan(), sent by workerscripts.finish_job/batch_outcome."""

    registry: str = ''  # 'failed', 'finished' or '' (none)
    registry_score: int | str = ''  # its score ('+inf': never expires)
    job_ttl: int | str = ''  # seconds, 'persist', 'delete' or '' (unchanged)
    release_as: str = ''  # the status the dependents are released for ('': none)
    put_back: str = ''  # 'queue', 'front', 'schedule' or '' (not run again)
    schedule_score: int | str = ''  # 'schedule': its epoch
    counter: str = ''  # the worker's counter to increment
    stream_ttl: int | str = ''  # the result stream's TTL
    fields: dict[str, Value] = field(default_factory=dict)  # job hash fields to write
    stream: dict[str, Value] = field(default_factory=dict)  # the result entry's fields ({}: none)
    # rqfast's lifecycle event (rqfast.events), written only for a job enqueued with events on; not
    # compared: the writes of an outcome are the same with or without it
    event: str = field(default='', compare=False)
    event_detail: str = field(default='', compare=False)
