"""A stop request, as the worker's loop and runners see it: StopRequest (an object the worker holds: asked or
not, when, whether a wait may end at once) and ColdShutdown (what a second stop signal raises); signal
names for the log, and the signal that kills a horse (RQ's rq.worker.base names). RQ's signal methods
on the worker are signals.py's."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from datetime import datetime
from typing import Any

import redis
from redis import Redis

from .. import dates
from ..exceptions import StopRequested
from . import workerhash

# SIGKILL where the platform has it: a horse cannot ignore it
SHUTDOWN_SIGNAL: signal.Signals = getattr(signal, 'SIGKILL', signal.SIGTERM)

_signames = {getattr(signal, name): name for name in dir(signal) if name.startswith('SIG') and '_' not in name}


class ColdShutdown(SystemExit):
    """A cold shutdown (a second stop signal): it stops the worker, and its text is the failure
    reason of the job it interrupts ("SystemExit" alone said nothing)."""

    @classmethod
    def of(cls, worker_name: str, signum: int, running: list[str]) -> ColdShutdown:
        return cls(
            f'rqfast: cold shutdown of worker {worker_name} ({signal_name(signum)} after a warm shutdown request); '
            f'job(s) interrupted: {", ".join(running) or "none"}'
        )


def signal_name(signum: int) -> str:
    """'SIGTERM' for 15; 'SIG_UNKNOWN' for a number that names no signal."""
    try:
        return signal.Signals(signum).name
    except (KeyError, ValueError):
        return 'SIG_UNKNOWN'


class StopRequest:
    """Whether the worker was asked to stop and when, and whether it is blocked where a stop may end the
    wait at once: a collaborator the worker holds (BaseWorker._stop_request). RQ's request_stop and
    request_force_stop (StopSignals) set and read it; the loop reads it between jobs."""

    def __init__(self, connection: Redis, name: str, log: logging.Logger) -> None:
        self.connection = connection
        self.name = name  # the worker's
        self.log = log
        self.requested = False
        self.at: datetime | None = None  # RQ's shutdown_requested_date
        self.interruptible = False  # blocked waiting for a job: a stop request may raise there

    def request(self) -> None:
        self.at = dates.now()
        self.requested = True

    def too_soon_to_force(self) -> bool:
        """A second signal within a second of the first is the same keypress (no cold shutdown)."""
        return self.at is not None and (dates.now() - self.at).total_seconds() < 1

    def record(self) -> None:
        """Write the request's date into the worker hash (on a thread of its own: see request_stop)."""
        try:
            workerhash.write_shutdown_request(self.connection, self.name, self.at or dates.now())
        except redis.RedisError as exc:
            self.log.warning('Worker %s: could not record the shutdown request: %s', self.name, exc)

    def interruptibly(self, wait: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking wait that a stop request ends at once (StopRequested), as RQ's idle worker does."""
        self.interruptible = True
        try:
            if self.requested:
                raise StopRequested()
            return wait(*args)
        finally:
            self.interruptible = False
