"""The one mapping between a Job and RQ's `rq:job:<id>` hash (section 2 of the layout): `JobRecord` lists
every stored field (attribute, Python type, default, encoding); `job_fields` writes what RQ's Job.to_dict
writes, `restore_job` reads what RQ's Job.restore reads, both loops over JobRecord's fields.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from datetime import datetime
from operator import attrgetter
from types import ModuleType
from typing import Any

from .dates import now, utcformat, utcparse
from .defaults import CALLBACK_TIMEOUT, UNSERIALIZABLE_RETURN_VALUE_PAYLOAD, rq2_compat
from .exceptions import NoSuchJobError
from .status import JobStatus
from .text import as_text, json_module
from .timeouts import parse_timeout

__all__ = ['HASH_FIELDS', 'UNSERIALIZABLE_RETURN_VALUE_PAYLOAD', 'Codec', 'encode_meta', 'JobRecord', 'job_fields']
__all__ += ['restore_job', 'unreadable_fields']


WRITE: Any = object()  # Codec.none: call `write` for None as well


class Codec:
    """How one attribute is stored in the hash.

    `write(job, value)` is the stored value of a value other than None (no `write`: the value itself),
    and None leaves the field out; `none` is what None is stored as (None: left out). `read(job,
    stored)` is the value back. An empty stored value reads as absent unless `read_empty` (RQ parses
    those fields whenever present). An absent field resets the attribute to its default unless `keep`.
    (Codec, StoredField and _Stored are slotted classes: a NamedTuple costs every spawned child more to make.)
    """

    __slots__ = ('write', 'read', 'none', 'read_empty', 'keep')

    def __init__(
        self,
        write: Callable[[Any, Any], Any] | None,
        read: Callable[[Any, bytes], Any],
        none: Any = None,
        read_empty: bool = False,
        keep: bool = False,
    ) -> None:
        self.write, self.read, self.none, self.read_empty, self.keep = write, read, none, read_empty, keep


def _text(job: Any, stored: bytes) -> str:
    return as_text(stored)


def _int(job: Any, stored: bytes) -> int:
    return int(stored)


# json is imported where a JSON field is written or read: a spawned child whose job has none (the
# usual one: no retries, dependencies nor webhooks) never imports it.


def _json(job: Any, value: Any) -> str:
    return str(json_module().dumps(value))


def _nonempty_json(job: Any, value: Any) -> str | None:
    return _json(job, value) if value else None


def _read_json(job: Any, stored: bytes) -> Any:
    return json_module().loads(as_text(stored))


def _date(job: Any, value: datetime) -> str:
    return utcformat(value)


def _read_date(job: Any, stored: bytes) -> datetime:
    return utcparse(stored)


def _flag(job: Any, value: bool) -> int:
    return int(value)


def _read_flag(job: Any, stored: bytes) -> bool:
    return bool(int(stored))


def _or_none(job: Any, value: Any) -> Any:
    return value or None


def _read_data(job: Any, stored: bytes) -> bytes:
    try:
        return zlib.decompress(stored)
    except zlib.error:
        return stored


def _write_meta(job: Any, value: dict[str, Any]) -> bytes | None:
    return encode_meta(job, value) if value else None


def encode_meta(job: Any, value: dict[str, Any]) -> bytes:
    """The stored meta. RQ 3.0: meta this process could not read (_read_meta's placeholder, unchanged)
    is written back as it was stored; RQ 2.12 (rq2_compat()) serializes the placeholder."""
    if isinstance(value, dict) and len(value) == 1 and not rq2_compat():  # (a worker's sealed meta is no dict)
        unread = value.get('unserialized')
        if isinstance(unread, bytes):
            return unread
    return job.serializer.dumps(value)  # type: ignore[no-any-return]


def _read_meta(job: Any, stored: bytes) -> Any:
    try:
        return job.serializer.loads(stored)
    except Exception:
        return {'unserialized': stored}


def _write_result(job: Any, value: Any) -> Any:
    try:
        return job.serializer.dumps(value)
    except Exception:
        return UNSERIALIZABLE_RETURN_VALUE_PAYLOAD


def _read_result(job: Any, stored: bytes) -> Any:
    try:
        return job.serializer.loads(stored)
    except Exception:
        return UNSERIALIZABLE_RETURN_VALUE_PAYLOAD


def _write_exc_info(job: Any, value: Any) -> bytes:
    return zlib.compress(str(value).encode('utf-8'))


def _read_exc_info(job: Any, stored: bytes) -> str:
    """Text, never unpickled (bytes that are not UTF-8, such as a pickle written there, read replaced)."""
    try:
        stored = zlib.decompress(stored)
    except zlib.error:
        pass
    return stored.decode(errors='replace') if isinstance(stored, bytes) else as_text(stored)


def _webhook_dict(webhook: Any) -> Any:
    """A Webhook's stored form (a plain dict is taken as already stored)."""
    return webhook.to_dict() if hasattr(webhook, 'to_dict') else webhook


def _write_webhooks(job: Any, value: list[Any]) -> str | None:
    return _json(job, [_webhook_dict(webhook) for webhook in value]) if value else None


def webhook_module() -> ModuleType:
    """rqfast.webhook, imported when a job has webhooks (read here, checked by jobspec.py): a spawned
    child whose job has none never imports it (nor dataclasses)."""
    from . import webhook

    return webhook


def _read_webhooks(job: Any, stored: bytes) -> list[Any]:
    """Webhook objects, as RQ reads them; RQ logs and drops webhooks it cannot read."""
    try:
        return [webhook_module().Webhook.from_dict(data) for data in _read_json(job, stored)]
    except (ValueError, TypeError, KeyError, AttributeError):
        return []


# One codec per way of storing a field, named for JobRecord's table below.
TEXT = Codec(None, _text, none='')  # always written, '' for None
OPTIONAL_TEXT = Codec(None, _text)  # left out when None
NONEMPTY_TEXT = Codec(_or_none, _text)  # left out when ''
DATE = Codec(_date, _read_date, none='')
OPTIONAL_DATE = Codec(_date, _read_date)
CREATED_AT = Codec(lambda job, v: utcformat(v or now()), _read_date, none=WRITE)  # None: now
INT = Codec(None, _int)
POSITIVE_INT = Codec(_or_none, _int)  # left out when 0
EVENTS_CAP = Codec(_or_none, lambda job, v: int(v) if v.isdigit() and int(v) > 0 else None)  # bad: none, not poison
TIMEOUT = Codec(None, lambda job, v: parse_timeout(as_text(v)))
JSON = Codec(_json, _read_json)
NONEMPTY_JSON = Codec(_nonempty_json, _read_json)
FLAG = Codec(_flag, _read_flag)
STRICT_FLAG = Codec(_flag, _read_flag, read_empty=True)
TRUE_FLAG = Codec(lambda job, v: 1 if v else None, _read_flag)  # left out when false
STATUS = Codec(lambda job, v: v.value, lambda job, v: JobStatus(as_text(v)))
CALLBACK_NAME = Codec(None, _text, none='', keep=True)
CALLBACK_TIMEOUT_CODEC = Codec(None, _int, read_empty=True, keep=True)
WEBHOOKS = Codec(_write_webhooks, _read_webhooks, keep=True)
DATA = Codec(lambda job, v: zlib.compress(v), _read_data)
META = Codec(_write_meta, _read_meta)
RESULT = Codec(_write_result, _read_result, keep=True)
EXC_INFO = Codec(_write_exc_info, _read_exc_info, keep=True)


class _Stored:
    """A JobRecord field as its class body gives it: the codec, and a default or a factory (for a mutable one)."""

    __slots__ = ('codec', 'default', 'factory')

    def __init__(self, codec: Codec, default: Any, factory: Callable[[], Any] | None) -> None:
        self.codec, self.default, self.factory = codec, default, factory


def _stored(codec: Codec, default: Any = None, factory: Callable[[], Any] | None = None) -> Any:
    """A JobRecord field: its default (or a factory, for a mutable one) and its codec."""
    return _Stored(codec, default, factory)


# A plain class, not a dataclass: the dataclasses module (and the inspect it imports) would cost every
# spawned child's import. _record_fields below does what the decorator did with the class body.
class JobRecord:
    """Every field of RQ's `rq:job:<id>` hash, as the Job handle holds it in memory (Job subclasses this).

    The hash field is the attribute's name without its leading underscore: an attribute is private
    where RQ's Job reads it through a method (`get_status()`, `return_value()`, `exc_info`,
    `success_callback`...). Fields are in the order RQ's Job.to_dict writes them. Job has no
    generated __init__: it sets only the per-instance values (`created_at`, `meta`, `webhooks`,
    `_dependency_ids`) and reads every other default from the class, which keeps construction cheap
    on the worker's hot path.
    """

    created_at: datetime | None = _stored(CREATED_AT)
    data: bytes = _stored(DATA, b'')  # the serialized call (func_name, instance, args, kwargs), zlib'ed
    _success_callback_name: str | None = _stored(CALLBACK_NAME)
    _failure_callback_name: str | None = _stored(CALLBACK_NAME)
    _stopped_callback_name: str | None = _stored(CALLBACK_NAME)
    started_at: datetime | None = _stored(DATE)
    ended_at: datetime | None = _stored(DATE)
    last_heartbeat: datetime | None = _stored(DATE)
    worker_name: str | None = _stored(TEXT)
    group_id: str | None = _stored(TEXT)
    number_of_retries: int | None = _stored(INT)
    retries_left: int | None = _stored(INT)
    retry_intervals: list[int] | None = _stored(JSON)
    enqueue_at_front_on_retry: bool = _stored(TRUE_FLAG, False)
    origin: str = _stored(NONEMPTY_TEXT, '')
    description: str | None = _stored(OPTIONAL_TEXT)
    enqueued_at: datetime | None = _stored(OPTIONAL_DATE)
    repeats_left: int | None = _stored(INT)
    repeat_intervals: list[int] | None = _stored(JSON)
    rate_limit_key: str | None = _stored(NONEMPTY_TEXT)  # RQ 3.0's rate limit (rqfast.rate_limit)
    rate_limit_concurrency: int | None = _stored(POSITIVE_INT)
    rate_limit_window_key: str | None = _stored(NONEMPTY_TEXT)  # rqfast's window limit, RateLimit(key, rate=, per=)
    rate_limit_rate: int | None = _stored(POSITIVE_INT)  # (additive fields: the claim scripts read the three)
    rate_limit_per: float | None = _stored(JSON)
    timeout: int | None = _stored(TIMEOUT)
    _success_callback_timeout: int | None = _stored(CALLBACK_TIMEOUT_CODEC)  # None: defaults.CALLBACK_TIMEOUT
    _failure_callback_timeout: int | None = _stored(CALLBACK_TIMEOUT_CODEC)
    _stopped_callback_timeout: int | None = _stored(CALLBACK_TIMEOUT_CODEC)
    webhooks: list[Any] = _stored(WEBHOOKS, factory=list)
    result_ttl: int | None = _stored(INT)
    failure_ttl: int | None = _stored(INT)
    _status: JobStatus = _stored(STATUS, JobStatus.CREATED)
    _result: Any = _stored(RESULT)  # RQ's deprecated `result` field; results live in rq:results:<id>
    _exc_info: str | None = _stored(EXC_INFO)
    _dependency_ids: list[str] = _stored(NONEMPTY_JSON, factory=list)  # also written as `dependency_id`: the first
    meta: dict[str, Any] = _stored(META, factory=dict)
    ttl: int | None = _stored(POSITIVE_INT)
    allow_dependency_failures: bool | None = _stored(FLAG)
    enqueue_at_front: bool | None = _stored(STRICT_FLAG)
    _rqfast_trace: str | None = _stored(NONEMPTY_TEXT)  # rqfast's: the enqueuer's W3C traceparent (tracing.py)
    capture_output: bool = _stored(TRUE_FLAG, False)  # rqfast's own (additive): the worker captures its output
    priority: int | None = _stored(INT)  # rqfast's own (additive): the job's priority lane, 0..9 (0 first)
    events: int | None = _stored(EVENTS_CAP)  # rqfast's own (additive): its queue's events cap (rqfast.events)

    @property
    def has_rate_limit(self) -> bool:
        """RQ 3.0's: the job holds a concurrency slot while queued or running (rqfast.rate_limit)."""
        return bool(self.rate_limit_key and self.rate_limit_concurrency)


class StoredField:
    __slots__ = ('name', 'attribute', 'codec')

    def __init__(self, name: str, attribute: str, codec: Codec) -> None:
        self.name = name  # in the hash
        self.attribute = attribute  # on the job
        self.codec = codec


def _record_fields(record: type) -> list[tuple[str, _Stored]]:
    """JobRecord's fields in the order of its body; each default becomes the class attribute (a field
    with a factory has none, its value is made per instance), as a dataclass's would."""
    found = [(name, value) for name, value in vars(record).items() if isinstance(value, _Stored)]
    for name, stored in found:
        if stored.factory is None:
            setattr(record, name, stored.default)
        else:
            delattr(record, name)
    return found


_FIELDS = _record_fields(JobRecord)
FIRST_DEPENDENCY = Codec(lambda job, v: v[0] if v else None, lambda job, v: [as_text(v)])

# Every field a job's hash can hold, in the order RQ writes them: JobRecord's fields, plus
# `dependency_id`, the first of `_dependency_ids` again (RQ reads it when `dependency_ids` is absent).
HASH_FIELDS = [StoredField(name.lstrip('_'), name, stored.codec) for name, stored in _FIELDS]
HASH_FIELDS.insert(
    [f.name for f in HASH_FIELDS].index('dependency_ids'),
    StoredField('dependency_id', '_dependency_ids', FIRST_DEPENDENCY),
)

# restore_job's tables: hash field -> (attribute, read, read_empty), but `data` and `dependency_id` (read apart)
_READ = {f.name: (f.attribute, f.codec.read, f.codec.read_empty) for f in HASH_FIELDS}
# A field name from redis-py's bytes or a caller's str: known ones looked up (restore_job's hot path), others decoded
_NAMES: dict[bytes | str, str] = {key: f.name for f in HASH_FIELDS for key in (f.name, f.name.encode())}
del _READ['data'], _READ['dependency_id']
# What an absent field resets its attribute to: a value, or a fresh object from a factory.
_RESET: dict[str, Any] = {}
_FRESH: list[tuple[str, Callable[[], Any]]] = []
for _name, _stored_field in _FIELDS:
    if _stored_field.codec.keep or _name == 'data':
        continue
    if _stored_field.factory is not None:
        _FRESH.append((_name, _stored_field.factory))
    else:
        _RESET[_name] = _stored_field.default


def _writes(left_out: tuple[str, ...]) -> tuple[Callable[[Any], tuple[Any, ...]], list[tuple[str, Any, Any]]]:
    """job_fields' table: one call that reads every attribute written, and (hash field, write) for each."""
    written = [f for f in HASH_FIELDS if f.name not in left_out]
    return attrgetter(*[f.attribute for f in written]), [(f.name, f.codec.write, f.codec.none) for f in written]


# By the fields left out, each made when first used: a spawned child that only reads its job makes none.
_WRITES: dict[tuple[str, ...], tuple[Callable[[Any], tuple[Any, ...]], list[tuple[str, Any, Any]]]] = {}


def job_fields(
    job: JobRecord, include_meta: bool = True, include_result: bool = True, left_out: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The full hash RQ's `Job.save()` writes, field for field; but the fields named in `left_out` (not computed)."""
    left_out += (() if include_meta else ('meta',)) + (() if include_result else ('result', 'exc_info'))
    get_values, writes = _WRITES.get(left_out) or _WRITES.setdefault(left_out, _writes(left_out))
    stored: dict[str, Any] = {}
    for (name, write, none), value in zip(writes, get_values(job), strict=True):
        if value is None and none is not WRITE:
            value = none
        elif write is not None:
            value = write(job, value)
        if value is not None:
            stored[name] = value
    return stored


def restore_job(job: JobRecord, raw: dict[bytes, bytes] | dict[str, bytes]) -> None:
    """Load a job from its hash; raises NoSuchJobError without `data`, ValueError on a bad field."""
    # str keys as well as redis-py's bytes: a caller may override fields of a fetched hash (`{**raw, 'status': ''}`)
    names = _NAMES
    obj: dict[str, bytes] = {names[k] if k in names else as_text(k): v for k, v in raw.items()}
    if 'data' not in obj:
        raise NoSuchJobError(f'Unexpected job format: {obj}')
    job.data = _read_data(job, obj['data'])
    values = _RESET.copy()
    for name, stored in obj.items():
        entry = _READ.get(name)
        if entry is not None and (stored or entry[2]):
            values[entry[0]] = entry[1](job, stored)
    if values['created_at'] is None:
        values['created_at'] = now()
    if '_dependency_ids' not in values and obj.get('dependency_id'):
        values['_dependency_ids'] = FIRST_DEPENDENCY.read(job, obj['dependency_id'])
    for attribute, factory in _FRESH:
        if attribute not in values:
            values[attribute] = factory()
    # One update rather than an assignment per field: restore runs once per job on the worker's hot
    # path. No stored attribute is a property (data, which is one, is set above).
    vars(job).update(values)


# What RQ's readers take as unset, for the fields they parse whenever present; "" for all others.
_RESET_VALUES = {
    'success_callback_timeout': str(CALLBACK_TIMEOUT),
    'failure_callback_timeout': str(CALLBACK_TIMEOUT),
    'stopped_callback_timeout': str(CALLBACK_TIMEOUT),
    'enqueue_at_front': '0',
}


def unreadable_fields(job: JobRecord, raw: dict[bytes, bytes] | dict[str, bytes]) -> dict[str, tuple[Any, str]]:
    """The fields restore_job cannot parse: name -> (the stored value, the value that resets it)."""
    obj: dict[str, bytes] = {as_text(k): v for k, v in raw.items()}
    bad: dict[str, tuple[Any, str]] = {}
    for name, value in obj.items():
        if name == 'data':
            continue
        try:
            restore_job(job, {'data': b'', name: value})
        except Exception:
            bad[name] = (value, _RESET_VALUES.get(name, ''))
    return bad
