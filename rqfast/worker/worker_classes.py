"""RQ's rq.worker.worker_classes: the worker classes, and the three that only change one behaviour.

HerokuWorker keeps the job running through Heroku's SIGTERM (its horse ignores it) and warns the
horse with SIGRTMIN, which ends the job with ShutDownImminentException a few seconds later.
RoundRobinWorker and RandomWorker are workers whose dequeue strategy (order.py) is fixed.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Any

from ..horse import HorseSettings, ImminentShutdown
from .forking import Worker
from .order import DequeueStrategy
from .signals import SHUTDOWN_SIGNAL
from .simple import SimpleWorker
from .spawn import SpawnWorker

__all__ = [
    'SHUTDOWN_SIGNAL',
    'HerokuWorker',
    'RandomWorker',
    'RoundRobinWorker',
    'SimpleWorker',
    'SpawnWorker',
    'Worker',
]


class HerokuWorker(Worker):
    """A worker for Heroku's dynos: SIGTERM does not kill the horse; it gets `imminent_shutdown_delay` seconds."""

    imminent_shutdown_delay = 6
    frame_properties = list(ImminentShutdown.frame_properties)

    def horse_settings(self) -> HorseSettings:
        settings = super().horse_settings()
        settings.imminent_shutdown_delay = self.imminent_shutdown_delay
        return settings

    def handle_warm_shutdown_request(self) -> None:
        """Warn the running horse with SIGRTMIN; the worker stops once its job has ended."""
        if self.horse_pid:
            self.log.info('Worker %s: warm shut down requested, sending horse SIGRTMIN signal', self.key)
            self.kill_horse(sig=signal.SIGRTMIN)
        else:
            self.log.warning('Warm shut down requested, no horse found')

    # The horse's side, under RQ's names (a horse installs it through its settings).

    def setup_work_horse_signals(self) -> None:
        ImminentShutdown(self.imminent_shutdown_delay).install()

    def request_stop_sigrtmin(self, signum: int, frame: FrameType | None) -> None:
        ImminentShutdown(self.imminent_shutdown_delay).warn(signum, frame)

    def request_force_stop_sigrtmin(self, signum: int, frame: FrameType | None) -> None:
        ImminentShutdown(self.imminent_shutdown_delay).shut_down(signum, frame)


class RoundRobinWorker(Worker):
    """Takes its next job from the queue after the one the last job came from."""

    def work(self, *args: Any, **kwargs: Any) -> bool:
        kwargs['dequeue_strategy'] = DequeueStrategy.ROUND_ROBIN
        return super().work(*args, **kwargs)


class RandomWorker(Worker):
    """Looks at its queues in a new random order for every job."""

    def work(self, *args: Any, **kwargs: Any) -> bool:
        kwargs['dequeue_strategy'] = DequeueStrategy.RANDOM
        return super().work(*args, **kwargs)
