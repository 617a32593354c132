"""Job functions and callbacks of the small RQ 3.0 application in app3.py (importable by both runs)."""

from __future__ import annotations

from typing import Any


def add(a: int, b: int) -> int:
    return a + b


def boom(message: str) -> None:
    raise ValueError(message)


def record_success(job: Any, connection: Any, result: Any) -> None:
    connection.rpush('app:callbacks', f'success {job.id} {result}')


def record_failure(job: Any, connection: Any, exc_type: Any, exc_value: Any, tb: Any) -> None:
    connection.rpush('app:callbacks', f'failure {job.id} {exc_type.__name__}: {exc_value}')
