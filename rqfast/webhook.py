"""RQ's Webhook: an HTTP request to make when a job finishes or fails, stored with the job as JSON.

The stored form (validation, to_dict/from_dict; jobhash.py writes and reads it in the job's
`webhooks` field), the payload and send(): one request with the standard library's urlopen, no
retry, errors logged and never raised, as RQ's. Who calls send() and when: a worker's sender
thread (worker/webhooks.py) once the job's end is recorded; Job.send_webhooks for is_async=False.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from types import ModuleType
from typing import Any, Literal, Protocol
from urllib.parse import urlparse

from .as_rq import logger_name


def _logger() -> logging.Logger:
    return logging.getLogger(logger_name('webhook'))


def _urllib_request() -> ModuleType:
    """urllib.request, imported when a webhook is first sent: with http.client, email, ssl and tempfile it
    costs some 15 ms, which every `import rqfast` (and a horse loading a job with webhooks) would pay."""
    import urllib.request

    return urllib.request


def urlopen(request: Any, timeout: float | None = None) -> Any:
    """The standard library's urlopen (the name RQ's tests patch, as rq.webhook.urlopen)."""
    return _urllib_request().urlopen(request, timeout=timeout)


def _request(url: str, **options: Any) -> Any:
    return _urllib_request().Request(url, **options)


class WebhookSubject(Protocol):
    """What a payload reads from the job: a Job, or the worker's snapshot of one (worker/webhooks.py)."""

    @property
    def id(self) -> str: ...

    @property
    def func_name(self) -> str | None: ...

    @property
    def enqueued_at(self) -> datetime | None: ...

    @property
    def ended_at(self) -> datetime | None: ...


def checked_webhooks(webhooks: Any) -> list[Webhook]:
    """A job's webhooks argument as a list, or TypeError (a bare Webhook, a list of URLs), as RQ's."""
    if not isinstance(webhooks, Sequence) or not all(isinstance(webhook, Webhook) for webhook in webhooks):
        raise TypeError('webhooks must be a sequence of Webhook instances')
    return list(webhooks)


@dataclass(init=False)
class Webhook:
    url: str
    job_status: Literal['finished', 'failed']
    method: Literal['GET', 'POST']
    headers: dict[str, str] | None
    timeout: int

    def __init__(
        self,
        url: str,
        job_status: Literal['finished', 'failed'],
        *,
        method: Literal['GET', 'POST'] = 'GET',
        headers: dict[str, str] | None = None,
        timeout: int = 10,
    ) -> None:
        parsed = urlparse(url) if isinstance(url, str) else None
        if parsed is None or parsed.scheme not in ('http', 'https') or not parsed.netloc:
            raise ValueError(f'url must be an http:// or https:// URL, got {url!r}')
        if job_status not in ('finished', 'failed'):
            raise ValueError(f"job_status must be 'finished' or 'failed', got {job_status!r}")
        if method not in ('GET', 'POST'):
            raise ValueError(f"method must be 'GET' or 'POST', got {method!r}")
        if headers and not isinstance(headers, dict):
            raise TypeError(f'headers must be a dict or None, got {type(headers).__name__}')
        if not isinstance(timeout, int) or isinstance(timeout, bool) or timeout <= 0:
            raise ValueError(f'timeout must be a positive integer, got {timeout!r}')
        self.url, self.job_status, self.method, self.headers, self.timeout = url, job_status, method, headers, timeout

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Webhook:
        return cls(
            data['url'],
            data['job_status'],
            method=data.get('method', 'GET'),
            headers=data.get('headers'),
            timeout=data.get('timeout', 10),
        )

    def get_payload(self, job: WebhookSubject, *, exc_string: str | None = None) -> dict[str, Any]:
        """The JSON body of a POST: the job's id, function, status and times (and exc_info when failed)."""
        payload: dict[str, Any] = {
            'job_id': job.id,
            'func_name': job.func_name,
            'status': self.job_status,
            'enqueued_at': job.enqueued_at.isoformat() if job.enqueued_at else None,
            'ended_at': job.ended_at.isoformat() if job.ended_at else None,
        }
        if self.job_status == 'failed':
            payload['exc_info'] = exc_string
        return payload

    def send(self, job: WebhookSubject, *, exc_string: str | None = None) -> None:
        """Make the request: a GET, or a POST of the JSON payload; one attempt, failures logged, never raised."""
        try:
            if self.method == 'POST':
                body = json.dumps(self.get_payload(job, exc_string=exc_string)).encode('utf-8')
                headers = {'Content-Type': 'application/json', **(self.headers or {})}
                request = _request(self.url, data=body, headers=headers, method='POST')
            else:
                request = _request(self.url, headers=dict(self.headers or {}), method='GET')
            with urlopen(request, timeout=self.timeout):
                pass
        except Exception:
            _logger().warning('Failed to send webhook to %s for job %s', self.url, job.id, exc_info=True)
