"""The one mapping between a Job and RQ's `rq:job:<id>` hash (section 2 of the layout).

`job_fields` writes what RQ's Job.to_dict writes; `restore_job` reads what RQ's Job.restore reads.
"""

from __future__ import annotations

import json
import zlib
from typing import TYPE_CHECKING, Any

from .dates import now, utcformat, utcparse
from .exceptions import NoSuchJobError
from .text import as_text
from .timeouts import parse_timeout

if TYPE_CHECKING:
    from .job import Job

UNSERIALIZABLE_RETURN_VALUE_PAYLOAD = 'Unserializable return value'


def _date_text(value: Any) -> str:
    return utcformat(value) if value else ''


def _webhook_dict(webhook: Any) -> Any:
    """RQ's Webhook objects, or the dicts a fetched job holds (rqfast stores webhooks but does not send them)."""
    return webhook.to_dict() if hasattr(webhook, 'to_dict') else webhook


def job_fields(job: Job, include_meta: bool = True, include_result: bool = True) -> dict[str, Any]:
    """The full hash RQ's `Job.save()` writes, field for field."""
    fields: dict[str, Any] = {
        'created_at': utcformat(job.created_at or now()),
        'data': zlib.compress(job.data),
        'success_callback_name': job._success_callback_name or '',
        'failure_callback_name': job._failure_callback_name or '',
        'stopped_callback_name': job._stopped_callback_name or '',
        'started_at': _date_text(job.started_at),
        'ended_at': _date_text(job.ended_at),
        'last_heartbeat': _date_text(job.last_heartbeat),
        'worker_name': job.worker_name or '',
        'group_id': job.group_id or '',
    }
    optional: list[tuple[str, Any]] = [
        ('number_of_retries', job.number_of_retries),
        ('retries_left', job.retries_left),
        ('retry_intervals', None if job.retry_intervals is None else json.dumps(job.retry_intervals)),
        ('enqueue_at_front_on_retry', 1 if job.enqueue_at_front_on_retry else None),
        ('origin', job.origin or None),
        ('description', job.description),
        ('enqueued_at', utcformat(job.enqueued_at) if job.enqueued_at else None),
        ('repeats_left', job.repeats_left),
        ('repeat_intervals', None if job.repeat_intervals is None else json.dumps(job.repeat_intervals)),
        ('timeout', job.timeout),
        ('success_callback_timeout', job._success_callback_timeout),
        ('failure_callback_timeout', job._failure_callback_timeout),
        ('stopped_callback_timeout', job._stopped_callback_timeout),
        ('webhooks', json.dumps([_webhook_dict(w) for w in job.webhooks]) if job.webhooks else None),
        ('result_ttl', job.result_ttl),
        ('failure_ttl', job.failure_ttl),
        ('status', job._status.value),
    ]
    fields.update((name, value) for name, value in optional if value is not None)
    if include_result and job._result is not None:
        try:
            fields['result'] = job.serializer.dumps(job._result)
        except Exception:
            fields['result'] = UNSERIALIZABLE_RETURN_VALUE_PAYLOAD
    if include_result and job._exc_info is not None:
        fields['exc_info'] = zlib.compress(str(job._exc_info).encode('utf-8'))
    if job._dependency_ids:
        fields['dependency_id'] = job._dependency_ids[0]
        fields['dependency_ids'] = json.dumps(job._dependency_ids)
    if include_meta and job.meta:
        fields['meta'] = job.serializer.dumps(job.meta)
    if job.ttl:
        fields['ttl'] = job.ttl
    if job.allow_dependency_failures is not None:
        fields['allow_dependency_failures'] = int(job.allow_dependency_failures)
    if job.enqueue_at_front is not None:
        fields['enqueue_at_front'] = int(job.enqueue_at_front)
    return fields


def _int(obj: dict[str, bytes], name: str) -> int | None:
    value = obj.get(name)
    return int(value) if value else None


def _date(obj: dict[str, bytes], name: str) -> Any:
    value = obj.get(name)
    return utcparse(value) if value else None


def restore_job(job: Job, raw: dict[bytes, bytes] | dict[str, bytes]) -> None:
    """Load a job from its hash; raises NoSuchJobError without `data`, ValueError on a bad field."""
    obj: dict[str, bytes] = {k.decode() if type(k) is bytes else k: v for k, v in raw.items()}
    if 'data' not in obj:
        raise NoSuchJobError(f'Unexpected job format: {obj}')
    try:
        job.data = zlib.decompress(obj['data'])
    except zlib.error:
        job.data = obj['data']
    _restore_texts_and_dates(job, obj)
    _restore_numbers_and_status(job, obj)
    _restore_callbacks(job, obj)
    _restore_dependencies_and_retries(job, obj)


def _restore_texts_and_dates(job: Job, obj: dict[str, bytes]) -> None:
    job.created_at = _date(obj, 'created_at') or now()
    job.origin = as_text(obj['origin']) if obj.get('origin') else ''
    job.worker_name = as_text(obj['worker_name']) if obj.get('worker_name') else None
    job.description = as_text(obj['description']) if obj.get('description') else None
    job.enqueued_at = _date(obj, 'enqueued_at')
    job.started_at = _date(obj, 'started_at')
    job.ended_at = _date(obj, 'ended_at')
    job.last_heartbeat = _date(obj, 'last_heartbeat')
    job.group_id = as_text(obj['group_id']) if obj.get('group_id') else None
    try:
        job.meta = job.serializer.loads(obj['meta']) if obj.get('meta') else {}
    except Exception:
        job.meta = {'unserialized': obj.get('meta', {})}
    if obj.get('exc_info'):
        try:
            job._exc_info = zlib.decompress(obj['exc_info']).decode()
        except zlib.error:
            job._exc_info = as_text(obj['exc_info'])


def _restore_numbers_and_status(job: Job, obj: dict[str, bytes]) -> None:
    from .job import JobStatus

    if obj.get('result'):
        try:
            job._result = job.serializer.loads(obj['result'])
        except Exception:
            job._result = UNSERIALIZABLE_RETURN_VALUE_PAYLOAD
    job.timeout = parse_timeout(as_text(obj['timeout'])) if obj.get('timeout') else None
    job.result_ttl = _int(obj, 'result_ttl')
    job.failure_ttl = _int(obj, 'failure_ttl')
    job.ttl = _int(obj, 'ttl')
    job._status = JobStatus(as_text(obj['status'])) if obj.get('status') else JobStatus.CREATED


def _restore_callbacks(job: Job, obj: dict[str, bytes]) -> None:
    for kind in ('success', 'failure', 'stopped'):
        if obj.get(f'{kind}_callback_name'):
            setattr(job, f'_{kind}_callback_name', as_text(obj[f'{kind}_callback_name']))
        if f'{kind}_callback_timeout' in obj:
            setattr(job, f'_{kind}_callback_timeout', int(obj[f'{kind}_callback_timeout']))
    if obj.get('webhooks'):
        try:
            job.webhooks = json.loads(as_text(obj['webhooks']))
        except ValueError:  # RQ logs and drops webhooks it cannot read
            job.webhooks = []


def _restore_dependencies_and_retries(job: Job, obj: dict[str, bytes]) -> None:
    dep_ids, dep_id = obj.get('dependency_ids'), obj.get('dependency_id')
    job._dependency_ids = json.loads(as_text(dep_ids)) if dep_ids else [as_text(dep_id)] if dep_id else []
    allow = obj.get('allow_dependency_failures')
    job.allow_dependency_failures = bool(int(allow)) if allow else None
    job.enqueue_at_front = bool(int(obj['enqueue_at_front'])) if 'enqueue_at_front' in obj else None
    job.number_of_retries = _int(obj, 'number_of_retries')
    job.retries_left = _int(obj, 'retries_left')
    job.retry_intervals = json.loads(as_text(obj['retry_intervals'])) if obj.get('retry_intervals') else None
    front = obj.get('enqueue_at_front_on_retry')
    job.enqueue_at_front_on_retry = bool(int(front)) if front else False
    job.repeats_left = _int(obj, 'repeats_left')
    job.repeat_intervals = json.loads(as_text(obj['repeat_intervals'])) if obj.get('repeat_intervals') else None


# What RQ's readers take as unset, for the fields they parse whenever present; "" for all others.
_RESET_VALUES = {
    'success_callback_timeout': '60',
    'failure_callback_timeout': '60',
    'stopped_callback_timeout': '60',
    'enqueue_at_front': '0',
}


def unreadable_fields(job: Job, raw: dict[bytes, bytes] | dict[str, bytes]) -> dict[str, tuple[Any, str]]:
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
