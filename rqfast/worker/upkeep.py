"""The worker's side duties, each on a thread of its own: heartbeats, maintenance and the scheduler.

They run on a clock, not per job, so the loop never waits for them and they add nothing to a
job's round trips. Each calls back into the worker (heartbeat, run_maintenance_tasks), so a
subclass that overrides one of those changes what its thread does, as in RQ.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from redis import Redis

from .. import keys
from ..as_rq import logger_name
from ..dates import now
from ..defaults import RECOVERY_INTERVAL
from ..group import clean_groups_once
from ..maintenance import clean_registries, pass_group_lock_ttl, recover_abandoned
from ..scheduler import RQScheduler

logger = logging.getLogger(logger_name('worker'))


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
    """The worker's maintenance and scheduler: a collaborator the worker holds (BaseWorker._duties), with
    its own state: the heartbeat and maintenance threads while the worker works (Upkeep), the scheduler
    it started (RQ's `worker.scheduler`) and when it last cleaned (RQ's `worker.last_cleaned_at`).

    The threads call back into the worker (heartbeat, run_maintenance_tasks), so a subclass that
    overrides one of those changes what its thread does, as in RQ; those and RQ's clean_registries
    stay the worker's methods and hand this object what they read from the worker.
    """

    def __init__(self, connection: Redis, name: str, log: logging.Logger) -> None:
        self.connection = connection
        self.name = name  # the worker's, for the log and the threads
        self.log = log
        self.upkeep: Upkeep | None = None
        self.scheduler: Any = None
        self.last_cleaned_at: datetime | None = None

    def start(
        self,
        heartbeat: Callable[[], Any],
        every: float,
        maintain: Callable[[], None],
        interval: int,
        recover: Callable[[], None] | None,
    ) -> None:
        """Start the heartbeat and maintenance threads (Upkeep.start); stop() stops them."""
        self.upkeep = Upkeep(self.name)
        self.upkeep.start(heartbeat, every, maintain, interval, recover)

    def stop(self) -> None:
        if self.upkeep is not None:
            self.upkeep.stop()

    def recover(self, queue_names: list[str], **options: Any) -> None:
        """The cheap pass between two maintenance passes: only the abandoned jobs of these queues
        (one script call, no lock: each is recorded fenced on its started-registry entry, so once)."""
        for names in keys.by_keyspace(queue_names):  # (sharded by queue: one call per queue's keyspace)
            recover_abandoned(self.connection, names, **options)

    def should_run(self, maintenance_interval: int) -> bool:
        """Not yet run, or last run more than maintenance_interval seconds ago (the thread's schedule)."""
        if self.last_cleaned_at is None:
            return True
        return (now() - self.last_cleaned_at).total_seconds() > maintenance_interval

    def clean(self, queue_names: list[str], maintenance_interval: int, **options: Any) -> None:
        """Abandoned jobs, expired entries, stranded ids, dead workers (these queues) and groups: one call."""
        group_lock_ttl = pass_group_lock_ttl(maintenance_interval)
        for names in keys.by_keyspace(queue_names):
            clean_registries(self.connection, names, group_lock_ttl=group_lock_ttl, **options)
        self.last_cleaned_at = now()

    def clean_groups(self, maintenance_interval: int) -> None:
        """Clean the groups unless another worker did in this maintenance window (the maintenance pass
        does the same in its one call; see rqfast.group.clean_groups_once)."""
        if clean_groups_once(self.connection, maintenance_interval):
            self.log.info('Worker %s: cleaning group registries', self.name)

    def restart_scheduler(self) -> None:
        """A scheduler whose thread died is started again (not at the first run), as in RQ."""
        scheduler = self.scheduler
        if scheduler is not None and self.last_cleaned_at is not None and scheduler.needs_restart():
            scheduler.acquire_locks(auto_start=True)

    def start_scheduler(self, queues: list[Any], burst: bool) -> None:
        self.scheduler = RQScheduler(queues, connection=self.connection)
        self.scheduler.start(burst=burst)

    def stop_scheduler(self) -> None:
        if self.scheduler is not None:  # stopped, and kept for reading afterwards, as RQ's worker does
            self.scheduler.stop()
