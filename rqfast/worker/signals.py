"""RQ's signal methods on the worker (StopSignals, BaseWorker's mixin): SIGINT and SIGTERM as a warm, then a
cold shutdown. The state of a stop request is stopping.py's StopRequest, which the worker holds."""

from __future__ import annotations

import signal
import threading
from datetime import datetime
from typing import Any

from ..exceptions import StopRequested
from .declared import WorkerAttributes
from .stopping import SHUTDOWN_SIGNAL as SHUTDOWN_SIGNAL  # RQ's rq.worker.base names
from .stopping import ColdShutdown, StopRequest, signal_name
from .stopping import _signames as _signames


class StopSignals(WorkerAttributes):
    """The worker's SIGINT/SIGTERM handling, as BaseWorker's own methods (RQ's names: a subclass
    overrides request_stop or handle_warm_shutdown_request, as HerokuWorker does).

    The first signal is a warm shutdown: the job in hand finishes, then the worker stops (at once if
    it is blocked waiting for a job). A second one, a second or more later, is a cold shutdown: the
    horse is killed and ColdShutdown raised. Reads from the worker: its name and log, the jobs in
    flight (its recorder's); kill_horse is rq_api.py's (a forking worker's kills its horses).
    """

    _stop_request: StopRequest

    @property
    def _stop_requested(self) -> bool:
        return self._stop_request.requested

    @_stop_requested.setter
    def _stop_requested(self, requested: bool) -> None:
        self._stop_request.requested = requested

    @property
    def _shutdown_requested_date(self) -> datetime | None:
        return self._stop_request.at

    @_shutdown_requested_date.setter
    def _shutdown_requested_date(self, moment: datetime | None) -> None:
        self._stop_request.at = moment

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
        if self._recorder.in_flight:
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
        raise ColdShutdown.of(self.name, signum, list(self._recorder.in_flight))
