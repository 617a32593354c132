"""A job in flight as the worker holds it while it runs (Running), and how it comes back to the loop (Done).

One record per claimed job, whatever the concurrency and wherever it runs: the loop's inline runner
makes one per job at concurrency 1, the slots at N; the runner (runner.py, horses.py) and RQ's hooks
(calling.py) read and fill it. A hook called by hand, outside the loop (RQ's step-by-step API), gets
one of its own (by_hand).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple

from .. import engine
from ..executions import Execution
from ..job import Job
from ..outcome import Outcome


class Running:
    """A claimed job while it runs: its claim and job, where and until when it runs, and how it ended.

    (A plain class: its fields but the first three are class-level defaults until set, so the record
    costs the loop three stores per job, not one per field.)"""

    job: Job | None = None  # set once loaded
    now: datetime | None = None  # a pinned time (step(now)): the times the run records
    penalty: Any = None  # the death penalty that works where it runs (None: the worker's own)
    deliver: Callable[[Outcome], bool] | None = None  # a hook's record goes to the loop here (True once recorded)
    deadline: float | None = None  # monotonic: a job on a thread is failed by the loop then
    timeout: int = 0
    began: float = 0.0  # monotonic, when its slot took it
    queued: bool = False  # claimed ahead into the thread pool's queue: `begin()` when a thread takes it
    limit: int | None = None  # queued: the seconds the loop gives it once begun (None: no deadline here)
    dropped: bool = False  # the loop ended it before its thread took it (stopped, a cold shutdown): not run
    task: Any = None  # an async job's task on the event loop
    acks: int = 0  # its hooks' records the loop answered (threads.Tails: the hooks go on after them)
    stopped: bool = False  # a stop-job ended it
    ran: Outcome | None = None  # how the job's own run ended (handle_job_success records its value)
    performed: bool = False  # RQ's perform_job ran it here: what its handlers recorded (or not) stands
    recorded: Outcome | None = None  # what its hooks recorded
    execution: Execution | None = None  # what RQ 3.0's hooks get as `execution` (made when first asked for)
    by_hand: bool = False  # made for a hook called directly, not by the worker's loop
    reported: bool = True  # run in a horse: whether the horse reported (False: it died, or was stopped)
    func_name: str | None = None  # the function's name as its horse reported it (for its webhooks)
    ack_fd: int = -1  # its horse's job pipe: one byte there once the outcome is recorded lets the horse exit

    def __init__(self, claim: engine.Claim, job: Job | None = None, now: datetime | None = None) -> None:
        self.claim = claim
        if job is not None:
            self.job = job
        if now is not None:
            self.now = now

    def begin(self, now: float) -> None:
        """A job queued ahead, as a thread takes it: its run time and deadline start now."""
        self.began = now
        if self.limit is not None:
            self.deadline = now + self.limit
        self.queued = False


class Done(NamedTuple):
    """A job's report to the loop: how it ended, the Plan recording it, and the outcome as finish_jobs takes it;
    `ack`: the job's thread waits on it until the loop has recorded it (a worker subclass's hooks)."""

    outcome: Outcome
    plan: engine.Plan
    ended: engine.Ended
    ack: Ack | None = None


class Ack:
    """A job thread's wait for the loop to record its outcome: set with whether it was recorded."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.recorded = False

    def set(self, recorded: bool) -> None:
        self.recorded = recorded
        self._event.set()

    def wait(self, gone: Callable[[], bool]) -> bool:
        """True once recorded; False if fenced off, dropped (too late), or the loop is `gone()`."""
        while not self._event.wait(1.0):
            if gone():
                return False
        return self.recorded

    def is_set(self) -> bool:
        return self._event.is_set()
