"""RQ's Webhook: an HTTP request to make when a job finishes or fails, stored with the job as JSON.

This is the stored form (validation, to_dict/from_dict, the payload); jobhash.py writes and reads
it in the job's `webhooks` field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

if TYPE_CHECKING:
    from .jobspec import JobSpec


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

    def get_payload(self, job: JobSpec, *, exc_string: str | None = None) -> dict[str, Any]:
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
