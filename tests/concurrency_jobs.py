"""Job functions for the concurrency tests: each notes in Redis that it runs, so a test sees how many
jobs were in flight at once (`in_flight` now, `most_in_flight` the highest)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from rqfast import get_current_job
from rqfast.job import Retry

_MOST = """
local now = redis.call('INCR', KEYS[1])
local most = tonumber(redis.call('GET', KEYS[2]) or '0')
if now > most then redis.call('SET', KEYS[2], now) end
return now
"""


def _enter() -> Any:
    job = get_current_job()
    assert job is not None
    job.connection.eval(_MOST, 2, 'in_flight', 'most_in_flight')
    return job


def _leave(job: Any) -> None:
    job.connection.decr('in_flight')


def sleep_then(seconds: float, value: Any = 'ok') -> Any:
    job = _enter()
    try:
        time.sleep(seconds)
    finally:
        _leave(job)
    return value


def stamp_then_sleep(seconds: float) -> None:
    """Notes its id and when it began (time.time()) on the list `began`, then sleeps."""
    job = get_current_job()
    assert job is not None
    job.connection.rpush('began', f'{job.id} {time.time()!r}')
    time.sleep(seconds)


def until_tick(period: float) -> None:
    """Sleeps to the next multiple of `period` on the wall clock, so the jobs in flight all end together."""
    time.sleep(period - time.time() % period)


async def async_sleep_then(seconds: float, value: Any = 'aok') -> Any:
    job = _enter()
    try:
        await asyncio.sleep(seconds)
    finally:
        _leave(job)
    return value


async def async_where() -> list[int]:
    """The event loop and thread this coroutine runs on."""
    await asyncio.sleep(0.05)
    return [id(asyncio.get_running_loop()), threading.get_ident()]


def fail_after(seconds: float) -> None:
    time.sleep(seconds)
    raise ValueError('asked to fail')


def retry_once() -> Any:
    job = get_current_job()
    assert job is not None
    return 'retried' if job.number_of_retries else Retry(max=1)


def sleep_then_write(seconds: float, key: str) -> str:
    """Outlives its timeout, then writes `key` (to show the thread ended, and nothing else did)."""
    job = get_current_job()
    assert job is not None
    time.sleep(seconds)
    job.connection.set(key, '1')
    return 'late'


def wait_for_key(key: str, timeout: float = 20.0) -> str:
    job = _enter()
    try:
        deadline = time.monotonic() + timeout
        while not job.connection.exists(key) and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        _leave(job)
    return 'released'


async def async_wait_for_key(key: str, timeout: float = 20.0) -> str:
    job = _enter()
    try:
        deadline = time.monotonic() + timeout
        while not job.connection.exists(key) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
    finally:
        _leave(job)
    return 'released'


def noop() -> None:
    return None


def crash(code: int = 3) -> None:
    """Ends its process at once (a horse: the worker sees it die without a report)."""
    import os

    os._exit(code)


def where() -> list[int]:
    """The thread this function runs on (and no event loop: it runs on a job thread)."""
    return [0, threading.get_ident()]


async def async_exit() -> None:
    """A coroutine that raises SystemExit (a BaseException that is no Exception)."""
    await asyncio.sleep(0.01)
    raise SystemExit(3)
