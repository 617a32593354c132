"""The count every peer run checks: each job, once its work is done, adds one to the run's tally.

The worker runs in the run's own process (threads or one event loop), so the tally is a plain
in-process counter; the last job records when it ended, which is where a run's time stops.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from bench import jobs
from bench.child import MeasurementError


class Tally:
    def __init__(self, target: int) -> None:
        self.target = target
        self._counter = itertools.count(1)  # next() is atomic under the GIL: no lock on the jobs' path
        self.done = threading.Event()
        self.finished_at = 0.0
        self._callbacks: list[Callable[[], None]] = []

    def mark(self) -> None:
        if next(self._counter) == self.target:
            self.finished_at = time.monotonic()
            self.done.set()
            for callback in list(self._callbacks):
                callback()

    def total(self) -> int:
        """Jobs counted so far; call once the worker stopped (it takes a number)."""
        return next(self._counter) - 1

    def wait(self, timeout: float) -> None:
        if not self.done.wait(timeout):
            raise MeasurementError(f'{self.total()} of {self.target} jobs done after {timeout:.0f} s')

    async def wait_async(self, timeout: float) -> None:
        """The same, on an event loop: woken by the last job (from any thread), no polling."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not future.done():
                future.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(settle)

        self._callbacks.append(wake)
        if self.done.is_set():
            return
        try:
            await asyncio.wait_for(future, timeout)
        except asyncio.TimeoutError:
            raise MeasurementError(f'{self.total()} of {self.target} jobs done after {timeout:.0f} s') from None


CURRENT = Tally(0)  # the run's tally, set by the harness before any job runs


def start(target: int) -> Tally:
    global CURRENT
    CURRENT = Tally(target)
    return CURRENT


def counted(job: str, with_ctx: bool = False) -> Callable[..., Any]:
    """bench.jobs.<job> wrapped to add one to the tally once it returned, under the job's own name.

    with_ctx: the function takes the context argument its library passes first (arq, saq)."""
    fn = jobs.RQ_JOBS[job]
    wrapped: Callable[..., Any]
    if inspect.iscoroutinefunction(fn):
        if with_ctx:

            async def wrapped(ctx: Any, *args: Any, **kwargs: Any) -> None:
                await fn(*args, **kwargs)
                CURRENT.mark()
        else:

            async def wrapped(*args: Any, **kwargs: Any) -> None:
                await fn(*args, **kwargs)
                CURRENT.mark()
    else:

        def wrapped(*args: Any, **kwargs: Any) -> None:
            fn(*args, **kwargs)
            CURRENT.mark()

    wrapped.__name__ = wrapped.__qualname__ = job
    return wrapped
