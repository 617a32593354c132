"""RQ's rq.utils names, for code that imports them from there.

Each name lives in the rqfast module that owns its concern (dates, text, imports, timeouts, the
connection helpers...); this module re-exports them and defines only the few small helpers that
have no better home. rqfast's own code imports from the homes, not from here.
"""

from __future__ import annotations

import sys
from collections.abc import Generator, Iterable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

from .dates import current_timestamp, now, str_to_date, utcformat, utcparse
from .imports import (
    backend_class,
    class_at,
    import_attribute,
    import_subclass,
    normalize_config_path,
    validate_absolute_path,
)
from .imports import function_reference as resolve_function_reference
from .jobspec import call_string as get_call_string
from .jobspec import parse_job_id
from .text import NOT_JSON_SERIALIZABLE, as_text, decode_redis_hash, safe_json_dumps, truncate_long_string
from .timeouts import parse_timeout

if TYPE_CHECKING:
    from redis import Redis

    from .job import Job
    from .queue import Queue
    from .worker import BaseWorker

__all__ = [
    'NOT_JSON_SERIALIZABLE',
    'Platform',
    'as_text',
    'backend_class',
    'ceildiv',
    'compact',
    'current_timestamp',
    'decode_redis_hash',
    'ensure_job_list',
    'get_call_string',
    'get_connection_from_queues',
    'get_platform',
    'get_version',
    'import_attribute',
    'import_job_class',
    'import_queue_class',
    'import_worker_class',
    'is_nonstring_iterable',
    'missing_keys',
    'normalize_config_path',
    'now',
    'parse_composite_key',
    'parse_names',
    'parse_timeout',
    'resolve_function_reference',
    'safe_json_dumps',
    'split_list',
    'str_to_date',
    'truncate_long_string',
    'utcformat',
    'utcparse',
    'validate_absolute_path',
]

_T = TypeVar('_T')


class Platform(Enum):
    WINDOWS = 'windows'
    MAC = 'mac'
    LINUX = 'linux'
    OTHERS = 'others'


def get_platform() -> Platform:
    """The operating system this process runs on."""
    name = sys.platform.lower()
    if name.startswith('win'):
        return Platform.WINDOWS
    if name == 'darwin':
        return Platform.MAC
    if name.startswith('linux'):
        return Platform.LINUX
    return Platform.OTHERS


_UNKNOWN_VERSION = (5, 0, 9)
_VERSION_ATTRIBUTE = '__rq_redis_server_version'  # RQ's cache on the connection object


def get_version(connection: Redis) -> tuple[int, int, int]:
    """The server's version as (major, minor, patch), asked once per connection object."""
    cached = getattr(connection, _VERSION_ATTRIBUTE, None)
    if cached:
        return cached  # type: ignore[no-any-return]
    from redis.exceptions import ResponseError  # here: a job importing these helpers in a child loads no redis-py

    try:
        text = str(connection.info('server')['redis_version'])
    except ResponseError:
        return _UNKNOWN_VERSION
    parts = [int(part) for part in text.split('.')[:3]]
    version = (parts + [0, 0, 0])[:3]
    found = (version[0], version[1], version[2])
    setattr(connection, _VERSION_ATTRIBUTE, found)
    return found


def import_job_class(name: str) -> type[Job]:
    base: type[Job] = class_at('rqfast.job.Job')  # by path: a job importing rq.utils loads no Job
    return import_subclass(name, base, 'job')


def import_queue_class(name: str) -> type[Queue]:
    base: type[Queue] = class_at('rqfast.queue.Queue')  # by path (why: import_job_class)
    return import_subclass(name, base, 'queue')


def import_worker_class(name: str) -> type[BaseWorker]:
    base: type[BaseWorker] = class_at('rqfast.worker.BaseWorker')  # by path (why: import_job_class)
    return import_subclass(name, base, 'worker')


def compact(items: Iterable[_T | None]) -> list[_T]:
    """The items that are not None."""
    return [item for item in items if item is not None]


def is_nonstring_iterable(obj: Any) -> bool:
    return isinstance(obj, Iterable) and not isinstance(obj, str)


def ensure_job_list(obj: Any) -> list[Any]:
    """A list of the items of an iterable (not a string), or [obj]."""
    return list(obj) if is_nonstring_iterable(obj) else [obj]


def ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def split_list(items: Sequence[_T], segment_size: int) -> Generator[Sequence[_T], None, None]:
    """The sequence in consecutive slices of segment_size items (the last may be shorter)."""
    for start in range(0, len(items), segment_size):
        yield items[start : start + segment_size]


def parse_names(queues_or_names: Iterable[Any]) -> list[str]:
    """Queue names from queues (anything with a name, as django-rq's) or names."""
    return [str(getattr(q, 'name', q)) if not isinstance(q, str) else q for q in queues_or_names]


def get_connection_from_queues(queues_or_names: Iterable[Any]) -> Redis | None:
    """The connection of the first queue object given; None for names only."""
    for queue in queues_or_names:
        if not isinstance(queue, str) and getattr(queue, 'connection', None) is not None:
            return queue.connection  # type: ignore[no-any-return]
    return None


def parse_composite_key(composite_key: str) -> tuple[str, str]:
    """(job id, execution id) from a started-registry member `<job id>:<execution id>`."""
    job_id = parse_job_id(composite_key)
    return job_id, composite_key[len(job_id) + 1 :]


def missing_keys(connection: Redis, key_names: Sequence[str]) -> list[str]:
    """RQ 3.0's: the keys that do not exist. One EXISTS answers when all do (the common case); only
    then is each key asked about, in one pipelined round trip."""
    if not key_names or connection.exists(*key_names) == len(key_names):
        return []
    with connection.pipeline(transaction=False) as pipeline:
        for key in key_names:
            pipeline.exists(key)
        found = pipeline.execute()
    return [key for key, exists in zip(key_names, found, strict=True) if not exists]
