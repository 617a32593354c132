"""Watching the horse that runs a job: its report, its exit, its deadline.

The worker reads the horse's report pipe until the report arrives, the horse ends, or the job's
deadline passes (then it kills the horse). A horse that reported is left to exit on its own and
reaped later, off the job's path; one that ended without a report is reaped here, for its status.
What the end means for the job is reports.py's and the worker's (Worker._outcome).
"""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from typing import Any

from .. import pipes
from . import reports
from .pool import Horse, HorsePool


def watch(
    work_horse: Horse,
    deadline: float | None,
    poll_interval: float,
    pool: HorsePool,
    kill: Callable[[], None],
    forget: Callable[[], None],
) -> reports.HorseEnd:
    """Read the horse's report until it arrives, the horse ends, or the deadline passes.

    `poll_interval`: how often to look at a horse whose pipe stays quiet (a grandchild may hold it
    open); `kill`: kills the horse; `forget`: the worker stops naming it as its running horse (first,
    so that no command kills its pid once it has been reaped).
    """
    reader = pipes.MessageReader()
    poller = select.poll()
    poller.register(work_horse.report_fd, select.POLLIN)
    reaped: tuple[int, Any] | None = None
    timed_out = False
    try:
        while reader.message is None and reaped is None:
            wait = poll_interval
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    timed_out = True
                    kill()
                    break
            if poller.poll(wait * 1000):
                data = os.read(work_horse.report_fd, 1 << 16)
                if not data:
                    break
                reader.feed(data)
            else:
                reaped = pool.reap(work_horse.pid, block=False)
                _drain(poller, work_horse.report_fd, reader)
    except BaseException:
        kill()
        raise
    finally:
        forget()
        pool.close(work_horse.report_fd)
        if reader.message is None and reaped is None:
            reaped = pool.reap(work_horse.pid, block=True)
    if reader.message is not None:
        if reaped is None:
            pool.retire(work_horse.pid)
        return reports.HorseEnd(reader.message)
    status, rusage = reaped or (0, None)
    return reports.HorseEnd(None, status, rusage, timed_out)


def _drain(poller: Any, fd: int, reader: pipes.MessageReader) -> None:
    while reader.message is None and poller.poll(0):
        data = os.read(fd, 1 << 16)
        if not data:
            return
        reader.feed(data)
