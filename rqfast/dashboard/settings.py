"""What a dashboard is told: its Redis, how it reads job payloads, and who may do what."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..security import JobPolicy
from ..serializers import Serializer, resolve_serializer

if TYPE_CHECKING:
    from redis import Redis

DEFAULT_PORT = 9181  # rq-dashboard's: a deployment that ran it keeps its port and its proxy rule
DEFAULT_HOST = '127.0.0.1'
SAMPLE_INTERVAL = 5.0  # seconds between two history samples
REFRESH = 3.0  # seconds between two live updates of a page


@dataclass(frozen=True)
class Settings:
    """A dashboard's configuration; `create_app(Settings(connection=...))` or the `rqfast dashboard` options.

    policy: the workers' job policy (allow-list, signing key): a job it refuses has its payload (arguments,
    meta, result) left unread, as a worker would leave it unrun. None reads payloads as a worker without a
    policy runs them (`decode=False`: never read any).
    """

    connection: Redis
    serializer: Any = None
    policy: JobPolicy | None = None
    decode: bool = True
    read_only: bool = False
    basic_auth: tuple[str, str] | None = None
    token: str | None = None
    secret: bytes = field(default_factory=lambda: os.urandom(32))  # signs CSRF tokens and the login cookie
    sample: bool = True  # this process samples the history (one dashboard at a time does, by a lock)
    sample_interval: float = SAMPLE_INTERVAL
    refresh: float = REFRESH

    def __post_init__(self) -> None:
        if self.basic_auth is not None and (len(self.basic_auth) != 2 or not all(self.basic_auth)):
            raise ValueError('basic_auth: a (user, password) pair, neither empty')
        if self.token is not None and not self.token:
            raise ValueError('token: a non-empty string, or None')
        if self.sample_interval < 1 or self.refresh < 0.5:
            raise ValueError('sample_interval: at least 1 second; refresh: at least 0.5 seconds')
        if not isinstance(self.secret, bytes) or len(self.secret) < 16:
            raise ValueError('secret: at least 16 bytes')

    @property
    def job_serializer(self) -> Serializer:
        return resolve_serializer(self.serializer)

    @property
    def protected(self) -> bool:
        """Whether a request must show who it is (basic auth or the token)."""
        return self.basic_auth is not None or self.token is not None
