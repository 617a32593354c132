"""Worker (ForkingWorker): every job runs in its own forked work horse, as in RQ's default worker.

The worker claims and finishes jobs through the engine; the horse only runs the job and sends back
how it ended (rqfast/horse.py), so a job costs the horse no connection and no round trip. Horses are
forked by the breeder (breeder.py), a single-threaded fork of the worker, one job per horse, and each
is forked ahead of its job and waits for it on a pipe. While a horse runs, the worker's heartbeat
thread keeps the job alive and the worker watches the horse: a horse that dies, is killed or
outlives its timeout fails the job, and the worker carries on.

Handing a job to a horse, watching it and reading its end is the runner's (horses.py's InHorses, the
same at every concurrency); the horses' lifecycle (started ahead, reaped, stopped together) is the
pool's (pool.py), shared with the SpawnWorker. This file is what a forking worker is made of: its
settings, how it starts a horse, and RQ's methods that differ for a worker with horses.
"""

from __future__ import annotations

import os
from typing import Any

from .. import horse
from ..connections import client_recipe
from ..defaults import HORSE_KILL_GRACE
from ..job import Job
from ..outcome import OutcomeKind
from . import reports
from .base import BaseWorker
from .calling import own_hooks
from .horses import InHorses
from .pool import Horse

__all__ = ['ForkingWorker', 'Horse', 'Worker']


@own_hooks
class Worker(BaseWorker):
    """RQ's default worker: a fresh forked work horse per job."""

    runs_jobs_concurrently = True  # concurrency > 1: up to N horses at once
    runs_jobs_in_process = False  # only the horse deserializes a job's payload (security.restore_sealed)
    runner_class = InHorses  # each job in a horse of its own (horses.py)
    _runner: InHorses

    # The horse raises JobTimeoutException itself when the timeout passes (SIGALRM, as in RQ). A horse
    # still running this many seconds later (a job stuck in C code) is killed by the worker, as in RQ.
    horse_kill_grace = HORSE_KILL_GRACE
    # How often the worker looks at a horse whose report pipe stays quiet (a grandchild may hold it open).
    horse_poll_interval = 1.0
    # Horses started ahead and waiting for a job: None (the default) keeps one per slot, the worker's
    # `concurrency` (at least 1); an int sets the number. Each takes one job and exits; the next is
    # started as a job is handed over, off that job's path.
    waiting_horses: int | None = None
    # Seconds a waiting horse gets to exit on its own when the worker stops, before it is killed.
    horse_exit_wait = 2.0
    # The module of the last job's function is imported ahead (by the breeder, or else by the waiting
    # horse; never by the worker), so a run of jobs from one module does not pay the import in every horse.
    preload_job_module = True
    # Horses are forked by a breeder (breeder.py), a single-threaded fork of the worker, not by the worker.
    use_breeder = True
    # Seconds the breeder gets to fork a horse (a preloaded module may hang) before the worker gives up on it.
    breeder_timeout = 30.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._settings: horse.HorseSettings | None = None

    @property
    def _horse_pid(self) -> int:
        """RQ's: the running horse (a caller may set it, as RQ's tests do, for kill_horse to signal)."""
        return self._runner.horse_pid

    @_horse_pid.setter
    def _horse_pid(self, pid: int) -> None:
        self._runner.horse_pid = pid

    def bootstrap(self, *args: Any, **kwargs: Any) -> None:
        super().bootstrap(*args, **kwargs)
        os.environ['RQ_WORKER_ID'] = self.name  # as RQ sets it: the horses inherit it
        self._runner.pool.keep_spares(self.spare_horses())

    def spare_horses(self) -> int:
        """How many horses wait for a job ahead of it: `waiting_horses`, or one per slot."""
        wanted = self.waiting_horses if self.waiting_horses is not None else self.concurrency
        return max(1, wanted)

    def teardown(self) -> None:
        try:
            self._runner.close(self.horse_exit_wait)
        finally:
            super().teardown()

    def execute_job(self, job: Job, queue: Any) -> None:
        """RQ's: the job runs in a horse (through perform_job there, if a hook is replaced); a horse that
        ends without reporting fails it here, through handle_job_failure, as in RQ."""
        hooks = self._hooks
        running = hooks.for_job(job, queue)
        outcome = self.execute(job, running.claim, running.now)
        if not running.reported:
            hooks.call_failure_in_worker(job, queue, outcome.exc_string)
        elif self._hooks_after_report():  # (the horse logged nothing: its failure was logged as it came)
            hooks.handle_outcome(job, queue, outcome, log=False)
            if outcome.kind is OutcomeKind.SUCCESS:
                hooks.joblog.job_ok(job)
        else:
            hooks.conclude(job, queue, outcome, running)

    # --- starting one

    def start_horse(self) -> Horse:
        """A forked horse that gets ready and waits for its job (the SpawnWorker spawns one instead)."""
        settings = self.horse_settings()  # made once, in the worker, not in every horse
        pool = self._runner.pool
        return pool.fork(settings, self._preload(), self.use_breeder, self.breeder_timeout, self.connection)

    def _preload(self) -> str:
        return self._runner.job_module if self.preload_job_module else ''

    def horse_settings(self) -> horse.HorseSettings:
        if self._settings is None:
            self._settings = horse.HorseSettings(
                self.name,
                client_recipe(self.connection),
                self.job_class,
                self.serializer,
                self.death_penalty_class,
                list(self._exc_handlers),
                self.queue_class.DEFAULT_TIMEOUT,
                stand_in=self._stand_in(),
                perform=self._hooks.perform_in_horse if self._hooks.performs else None,
                worker_pid=os.getpid(),
                default_result_ttl=self.default_result_ttl,
                disable_default_exception_handler=self.disable_default_exception_handler,
                policy=self.job_policy,
            )
        return self._settings

    def _hooks_after_report(self) -> bool:
        """Whether the handlers run in the worker once the horse reported (a spawned child has no hooks)."""
        return False

    def _stand_in(self) -> dict[bytes, bytes] | None:
        """A warm-up job for the horses, when a spare CPU can run it while the current job runs.

        On a single CPU the warm-up would only compete with the running job for it.
        """
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1
        if cpus < 2:
            return None
        try:
            return stand_in_job(self.job_class, self.connection, self.serializer)
        except Exception:  # a serializer that cannot encode it: no warm-up
            return None

    # --- RQ's steps for a worker with horses

    def _handle_stopped_job(self, job: Job, queue: Any, execution: Any = None) -> None:
        """RQ 3.0's step for a job stopped by a stop-job command: its stopped callback (whose error is
        logged, not raised), then the job failed as stopped (rqfast's runner does this as the horse ends)."""
        self.log.warning('Worker %s: job %s stopped by user, moving job to FailedJobRegistry', self.name, job.id)
        self.run_stopped_callback(job)
        self._hooks.for_job(job, queue, execution).stopped = True  # (recorded as stopped)
        self.handle_job_failure(job, queue=queue, exc_string=reports.STOPPED_EXC_STRING, execution=execution)

    def run_stopped_callback(self, job: Job) -> None:
        """The job's on_stopped callback runs in the worker, under its own timeout, as in RQ."""
        try:
            job.execute_stopped_callback(self.death_penalty_class)
        except Exception:
            self.log.exception('Job %s: error while executing stopped callback', job.id)

    def stop_job(self, job_id: str) -> None:
        self._stopped_job_id = job_id  # (RQ's)
        super().stop_job(job_id)


ForkingWorker = Worker


def stand_in_job(job_class: Any, connection: Any, serializer: Any) -> dict[bytes, bytes]:
    """The hash of a job that calls len(()): what a forked horse runs to warm up."""
    job = Job.create('builtins.len', args=((),), connection=connection, serializer=serializer, timeout=60)
    return {
        key.encode(): value if isinstance(value, bytes) else str(value).encode()
        for key, value in job.to_dict().items()
        if value is not None
    }
