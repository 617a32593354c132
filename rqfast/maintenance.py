"""Maintenance: abandoned jobs in the started registry (filled in by the worker engine)."""

from __future__ import annotations

from typing import Any

from redis import Redis


def fail_abandoned_jobs(connection: Redis, queue: str, timestamp: float | None = None, serializer: Any = None,
                        exception_handlers: list | None = None) -> int:
    """Fail or retry the jobs whose worker stopped heartbeating; the number handled."""
    return 0
