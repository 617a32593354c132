"""The worker's side duties, each on a thread of its own: heartbeats, maintenance and the scheduler.

They run on a clock, not per job, so the loop never waits for them and they add nothing to a
job's round trips. Each calls back into the worker (heartbeat, run_maintenance_tasks), so a
subclass that overrides one of those changes what its thread does, as in RQ. The Duties methods
below become BaseWorker's.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis import Redis

from ..dates import now
from ..defaults import RECOVERY_INTERVAL

logger = logging.getLogger('rqfast.worker')


def heartbeat_interval(job_monitoring_interval: int, worker_ttl: int) -> float:
    """Three times per monitoring interval (and per half worker TTL): a running job's heartbeat TTL is
    the interval plus JOB_HEARTBEAT_GRACE, so two lost beats in a row cost nothing."""
    return max(1.0, min(job_monitoring_interval, worker_ttl / 2) / 3)


class Upkeep:
    """The heartbeat and maintenance threads: started with the worker, stopped at its teardown."""

    def __init__(self, name: str) -> None:
        self.name = name  # the worker's, for the log and the threads
        self.stopped = threading.Event()

    def start(
        self,
        heartbeat: Callable[[], Any],
        every: float,
        maintain: Callable[[], None],
        interval: int,
        recover: Callable[[], None] | None = None,
        recovery_interval: float = RECOVERY_INTERVAL,
    ) -> None:
        """Beat every `every` seconds; maintain now and every `interval` seconds (at least 1); between
        two maintenance passes, `recover` (abandoned jobs only) every `recovery_interval` seconds."""
        threading.Thread(target=self._beat, args=(heartbeat, every), name='rqfast-heartbeat', daemon=True).start()
        threading.Thread(
            target=self._maintain,
            args=(maintain, max(1, interval), recover, max(0.5, recovery_interval)),
            name='rqfast-maintenance',
            daemon=True,
        ).start()

    def stop(self) -> None:
        self.stopped.set()

    def _beat(self, heartbeat: Callable[[], Any], every: float) -> None:
        while not self.stopped.wait(every):
            try:
                heartbeat()
            except Exception as exc:  # a lost connection must not kill the heartbeat thread
                logger.warning('Worker %s: heartbeat failed: %s', self.name, exc)

    def _maintain(
        self, maintain: Callable[[], None], interval: int, recover: Callable[[], None] | None, every: float
    ) -> None:
        maintain()  # at start, as RQ does, without delaying the worker's start
        last = time.monotonic()
        tick = min(float(interval), every) if recover is not None else float(interval)
        while not self.stopped.wait(tick):
            if time.monotonic() - last >= interval - 0.01 or recover is None:
                maintain()
                last = time.monotonic()
            else:
                try:
                    recover()
                except Exception as exc:  # a lost connection must not kill the maintenance thread
                    logger.warning('Worker %s: recovery pass failed: %s', self.name, exc)


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
    job_policy: Any
    _exc_handlers: list[Callable[..., Any]]
    queue_names: Callable[[], list[str]]
    heartbeat: Callable[[], bool]
    scheduler: Any = None
    last_cleaned_at: datetime | None = None

    def start_upkeep(self) -> Upkeep:
        """Start the heartbeat and maintenance threads; stop() the answer at teardown."""
        upkeep = Upkeep(self.name)
        every = heartbeat_interval(self.job_monitoring_interval, self.worker_ttl)
        recover = self.recover_abandoned_jobs
        upkeep.start(self.heartbeat, every, self.run_maintenance_tasks, self.maintenance_interval, recover)
        return upkeep

    def recover_abandoned_jobs(self) -> None:
        """The cheap pass between two maintenance passes: only the abandoned jobs of this worker's queues
        (one script call, no lock: each is recorded fenced on its started-registry entry, so once)."""
        from ..maintenance import recover_abandoned

        recover_abandoned(
            self.connection,
            self.queue_names(),
            serializer=self.serializer,
            exception_handlers=self._exc_handlers,
            job_class=self.job_class,
        )

    @property
    def should_run_maintenance_tasks(self) -> bool:
        """RQ's: not yet run, or last run more than maintenance_interval seconds ago (the thread's schedule)."""
        if self.last_cleaned_at is None:
            return True
        return (now() - self.last_cleaned_at).total_seconds() > self.maintenance_interval

    def clean_registries(self) -> None:
        """Abandoned jobs, expired entries, stranded ids, dead workers (this worker's queues) and groups: one call."""
        from ..maintenance import clean_registries, pass_group_lock_ttl

        clean_registries(
            self.connection,
            self.queue_names(),
            serializer=self.serializer,
            exception_handlers=self._exc_handlers,
            job_class=self.job_class,
            policy=self.job_policy,
            group_lock_ttl=pass_group_lock_ttl(self.maintenance_interval),
        )
        self.last_cleaned_at = now()

    def clean_group_registries(self) -> None:
        """RQ 3.0's: clean the groups unless another worker did in this maintenance window (the
        maintenance pass does the same in its one call; see rqfast.group.clean_groups_once)."""
        from ..group import clean_groups_once

        if clean_groups_once(self.connection, self.maintenance_interval):
            self.log.info('Worker %s: cleaning group registries', self.name)

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
