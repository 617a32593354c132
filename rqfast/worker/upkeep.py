"""The worker's side duties, each on a thread of its own: heartbeats, maintenance and the scheduler.

They run on a clock, not per job, so the loop never waits for them and they add nothing to a
job's round trips. Each calls back into the worker (heartbeat, run_maintenance_tasks), so a
subclass that overrides one of those changes what its thread does, as in RQ. The Duties methods
below become BaseWorker's.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis import Redis

from ..dates import now

logger = logging.getLogger('rqfast.worker')


def heartbeat_interval(job_monitoring_interval: int, worker_ttl: int) -> float:
    """Twice per monitoring interval (and per half worker TTL), so one lost beat costs nothing."""
    return max(1.0, min(job_monitoring_interval, worker_ttl / 2) / 2)


class Upkeep:
    """The heartbeat and maintenance threads: started with the worker, stopped at its teardown."""

    def __init__(self, name: str) -> None:
        self.name = name  # the worker's, for the log and the threads
        self.stopped = threading.Event()

    def start(self, heartbeat: Callable[[], Any], every: float, maintain: Callable[[], None], interval: int) -> None:
        """Beat every `every` seconds; maintain now and every `interval` seconds (at least 1)."""
        threading.Thread(target=self._beat, args=(heartbeat, every), name='rqfast-heartbeat', daemon=True).start()
        threading.Thread(
            target=self._maintain, args=(maintain, max(1, interval)), name='rqfast-maintenance', daemon=True
        ).start()

    def stop(self) -> None:
        self.stopped.set()

    def _beat(self, heartbeat: Callable[[], Any], every: float) -> None:
        while not self.stopped.wait(every):
            try:
                heartbeat()
            except Exception as exc:  # a lost connection must not kill the heartbeat thread
                logger.warning('Worker %s: heartbeat failed: %s', self.name, exc)

    def _maintain(self, maintain: Callable[[], None], interval: int) -> None:
        maintain()  # at start, as RQ does, without delaying the worker's start
        while not self.stopped.wait(interval):
            maintain()


class Duties:
    """RQ's maintenance and scheduler methods, as the worker's own, and the threads that run them.

    Reads from the worker: connection, name, queues, serializer, job_class, the exception handlers
    (which maintenance runs for abandoned jobs) and the intervals.
    """

    connection: Redis
    name: str
    log: logging.Logger
    queues: list[Any]
    serializer: Any
    job_class: Any
    worker_ttl: int
    job_monitoring_interval: int
    maintenance_interval: int
    _exc_handlers: list[Callable[..., Any]]
    queue_names: Callable[[], list[str]]
    heartbeat: Callable[[], bool]
    scheduler: Any = None
    last_cleaned_at: datetime | None = None

    def start_upkeep(self) -> Upkeep:
        """Start the heartbeat and maintenance threads; stop() the answer at teardown."""
        upkeep = Upkeep(self.name)
        every = heartbeat_interval(self.job_monitoring_interval, self.worker_ttl)
        upkeep.start(self.heartbeat, every, self.run_maintenance_tasks, self.maintenance_interval)
        return upkeep

    @property
    def should_run_maintenance_tasks(self) -> bool:
        """RQ's: not yet run, or last run more than maintenance_interval seconds ago (the thread's schedule)."""
        if self.last_cleaned_at is None:
            return True
        return (now() - self.last_cleaned_at).total_seconds() > self.maintenance_interval

    def clean_registries(self) -> None:
        """Abandoned jobs, expired entries, stranded ids, dead workers (this worker's queues) and groups: one call."""
        from ..maintenance import clean_registries

        clean_registries(
            self.connection,
            self.queue_names(),
            serializer=self.serializer,
            exception_handlers=self._exc_handlers,
            job_class=self.job_class,
        )
        self.last_cleaned_at = now()

    def run_maintenance_tasks(self) -> None:
        scheduler = self.scheduler  # one whose thread died is started again (not at the first run), as in RQ
        if scheduler is not None and self.last_cleaned_at is not None and scheduler.needs_restart():
            scheduler.acquire_locks(auto_start=True)
        try:
            self.clean_registries()
        except Exception as exc:  # maintenance must never take the worker down
            self.log.warning('Worker %s: maintenance failed: %s', self.name, exc)

    def start_scheduler(self, burst: bool = False) -> None:
        try:
            from ..scheduler import RQScheduler
        except ImportError:
            self.log.warning('Worker %s: the scheduler is not available yet', self.name)
            return
        self.scheduler = RQScheduler(self.queues, connection=self.connection)
        self.scheduler.start(burst=burst)

    def stop_scheduler(self) -> None:
        if self.scheduler is not None:  # stopped, and kept for reading afterwards, as RQ's worker does
            self.scheduler.stop()
