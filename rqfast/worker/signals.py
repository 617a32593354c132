"""The worker's stop signals: the state of a stop request (StopRequest, an object the worker holds)
and RQ's signal methods on the worker (StopSignals, BaseWorker's mixin); signal names for its log, and
the signal that kills a horse (RQ's rq.worker.base names)."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import redis
from redis import Redis

from .. import dates
from ..exceptions import StopRequested
from ..status import WorkerStatus
from . import keyspaces, workerhash
from .declared import WorkerAttributes

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


class StopSignals(WorkerAttributes):
    """The worker's SIGINT/SIGTERM handling, as BaseWorker's own methods (RQ's names: a subclass
    overrides request_stop or handle_warm_shutdown_request, as HerokuWorker does).

    The first signal is a warm shutdown: the job in hand finishes, then the worker stops (at once if
    it is blocked waiting for a job). A second one, a second or more later, is a cold shutdown: the
    horse is killed and ColdShutdown raised. The waits a stop request ends at once are here too (a
    blocking wait for a job, a suspended worker's). Reads from the worker: connection, name, log, the
    jobs in flight; kill_horse is rq_api.py's (a forking worker's kills its horse).
    """

    _stop_request: StopRequest

    @property
    def _stop_requested(self) -> bool:
        return self._stop_request.requested

    @_stop_requested.setter
    def _stop_requested(self, requested: bool) -> None:
        self._stop_request.requested = requested

    @property
    def _interruptible(self) -> bool:
        return self._stop_request.interruptible

    @_interruptible.setter
    def _interruptible(self, interruptible: bool) -> None:
        self._stop_request.interruptible = interruptible

    @property
    def _shutdown_requested_date(self) -> datetime | None:
        return self._stop_request.at

    @_shutdown_requested_date.setter
    def _shutdown_requested_date(self, moment: datetime | None) -> None:
        self._stop_request.at = moment

    def _interruptibly(self, wait: Callable[..., Any], *args: Any) -> Any:
        """Run a blocking wait that a stop request ends at once (StopRequested), as RQ's idle worker does."""
        return self._stop_request.interruptibly(wait, *args)

    def _wait_while_suspended(self) -> None:
        self.log.info('Worker %s: suspended, run `rqfast resume` to resume', self.name)
        self.set_state(WorkerStatus.SUSPENDED)
        while not self._stop_requested and keyspaces.is_suspended(self.connection, self.queue_names()):
            self._interruptibly(time.sleep, 1)

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self.request_stop)
            signal.signal(signal.SIGTERM, self.request_stop)

    def request_stop(self, signum: int, frame: Any) -> None:
        """Warm shutdown: finish the job in hand, then stop. A second signal is a cold shutdown."""
        self.log.debug('Worker %s: got signal %s', self.name, signal_name(signum))
        self.handle_warm_shutdown_request()
        self._stop_request.request()
        signal.signal(signal.SIGINT, self.request_force_stop)
        signal.signal(signal.SIGTERM, self.request_force_stop)
        if self._in_flight:
            # not from the handler: the interrupted thread may hold the connection pool's lock
            threading.Thread(target=self._stop_request.record, name='rqfast-shutdown', daemon=True).start()
        elif self._stop_request.interruptible:
            raise StopRequested()  # only out of a blocking wait: never between a claim and its record

    def handle_warm_shutdown_request(self) -> None:
        """RQ's hook for what a warm shutdown does at once (HerokuWorker warns its horse)."""
        self.log.info('Worker %s: warm shut down requested', self.name)

    def request_force_stop(self, signum: int, frame: Any) -> None:
        if self._stop_request.too_soon_to_force():
            return
        self.log.warning('Worker %s: cold shut down', self.name)
        self.kill_horse()
        raise ColdShutdown.of(self.name, signum, list(self._in_flight))
