"""The worker's stop signals (StopSignals, BaseWorker's mixin), signal names for its log, and the
signal that kills a horse (RQ's rq.worker.base names)."""

from __future__ import annotations

import signal
import threading
from typing import Any

import redis

from .. import dates
from ..exceptions import StopRequested
from . import records
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


class StopSignals(WorkerAttributes):
    """The worker's SIGINT/SIGTERM handling, as BaseWorker's own methods (RQ's names: a subclass
    overrides request_stop or handle_warm_shutdown_request, as HerokuWorker does).

    The first signal is a warm shutdown: the job in hand finishes, then the worker stops (at once if
    it is blocked waiting for a job). A second one, a second or more later, is a cold shutdown: the
    horse is killed and ColdShutdown raised. Reads from the worker: connection, name, log, the jobs
    in flight and whether it waits interruptibly; kill_horse is rq_api.py's (a forking worker's kills its horse).
    """

    def _install_signal_handlers(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self.request_stop)
            signal.signal(signal.SIGTERM, self.request_stop)

    def request_stop(self, signum: int, frame: Any) -> None:
        """Warm shutdown: finish the job in hand, then stop. A second signal is a cold shutdown."""
        self.log.debug('Worker %s: got signal %s', self.name, signal_name(signum))
        self.handle_warm_shutdown_request()
        self._shutdown_requested_date = dates.now()
        self._stop_requested = True
        signal.signal(signal.SIGINT, self.request_force_stop)
        signal.signal(signal.SIGTERM, self.request_force_stop)
        if self._in_flight:
            # not from the handler: the interrupted thread may hold the connection pool's lock
            threading.Thread(target=self._record_shutdown_request, name='rqfast-shutdown', daemon=True).start()
        elif self._interruptible:
            raise StopRequested()  # only out of a blocking wait: never between a claim and its record

    def handle_warm_shutdown_request(self) -> None:
        """RQ's hook for what a warm shutdown does at once (HerokuWorker warns its horse)."""
        self.log.info('Worker %s: warm shut down requested', self.name)

    def _record_shutdown_request(self) -> None:
        try:
            records.write_shutdown_request(self.connection, self.name, self._shutdown_requested_date or dates.now())
        except redis.RedisError as exc:
            self.log.warning('Worker %s: could not record the shutdown request: %s', self.name, exc)

    def request_force_stop(self, signum: int, frame: Any) -> None:
        if self._shutdown_requested_date and (dates.now() - self._shutdown_requested_date).total_seconds() < 1:
            return
        self.log.warning('Worker %s: cold shut down', self.name)
        self.kill_horse()
        raise ColdShutdown.of(self.name, signum, list(self._in_flight))
