"""Worker (ForkingWorker): every job runs in its own forked work horse, as in RQ's default worker.

The worker claims and finishes jobs through the engine; the horse only runs the job and sends back
how it ended (rqfast/horse.py), so a job costs the horse no connection and no round trip. Horses are
forked by the breeder (breeder.py), a single-threaded fork of the worker, one job per horse, and each
is forked ahead of its job and waits for it on a pipe. While a horse runs, the worker's heartbeat
thread keeps the job alive and the worker watches the horse: a horse that dies, is killed or
outlives its timeout fails the job, and the worker carries on.

This file is the worker's side of one job: hand it to a horse, watch it, say what its end means.
The horses' lifecycle (started ahead, reaped, stopped together) is the pool's (pool.py), shared
with the SpawnWorker; watching one horse is watching.py's.
"""

from __future__ import annotations

import functools
import os
import pickle
import signal
import threading
import time
from datetime import datetime
from typing import Any

from .. import engine, horse, pipes
from ..connections import client_recipe
from ..defaults import HORSE_KILL_GRACE
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from . import reports, watching
from .base import BaseWorker
from .calling import replaced
from .finishing import clock
from .hooks import perform_in_horse
from .pool import Horse, HorsePool, kill_group

__all__ = ['ForkingWorker', 'Horse', 'Worker']

HORSE_HOOKS = ('perform_job', 'handle_job_success', 'handle_job_failure', 'handle_job_retry', 'handle_exception')


class Worker(BaseWorker):
    """RQ's default worker: a fresh forked work horse per job."""

    runs_jobs_concurrently = True  # concurrency > 1: up to N horses at once (horses.py)
    runs_jobs_in_process = False  # only the horse deserializes a job's payload (security.restore_sealed)

    # The horse raises JobTimeoutException itself when the timeout passes (SIGALRM, as in RQ). A horse
    # still running this many seconds later (a job stuck in C code) is killed by the worker, as in RQ.
    horse_kill_grace = HORSE_KILL_GRACE
    # How often the worker looks at a horse whose report pipe stays quiet (a grandchild may hold it open).
    horse_poll_interval = 1.0
    # Horses started ahead and waiting for a job.
    waiting_horses = 1
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
        self._horse_pid = 0
        self._horse_killed = 0  # the horse kill_horse last killed
        self._horse_lock = threading.RLock()  # reentrant: a cold shutdown's signal handler kills the horse too
        self._pool = HorsePool(lambda: self.start_horse(), self.name)
        self._settings: horse.HorseSettings | None = None
        self._job_module = ''  # the module of the last job's function, by name
        self._horse_reported = False  # whether the last horse reported its job (else it died, or was stopped)
        self._reported_func_name: tuple[str, str | None] = ('', None)  # (job id, its function) for webhooks

    @property
    def horse_pid(self) -> int:
        return self._horse_pid

    def bootstrap(self, *args: Any, **kwargs: Any) -> None:
        super().bootstrap(*args, **kwargs)
        os.environ['RQ_WORKER_ID'] = self.name  # as RQ sets it: the horses inherit it
        self._pool.keep_spares(self.waiting_horses)

    def teardown(self) -> None:
        try:
            self._pool.stop_all(self.horse_exit_wait)
        finally:
            super().teardown()

    def execute(self, job: Job, claim: engine.Claim, now: datetime | None = None) -> Outcome:
        timeout = job.timeout or self.queue_class.DEFAULT_TIMEOUT
        deadline = time.monotonic() + timeout + self.horse_kill_grace if timeout > 0 else None
        work_horse = self._pool.take()
        with self._horse_lock:
            self._horse_pid = work_horse.pid
        self._send_job(work_horse, claim)
        if self._stopped_job_id == job.id:  # stop-job came before the horse had the job
            self.kill_horse()
        self._pool.keep_spares(self.waiting_horses)
        self._pool.reap_exited()
        end = watching.watch(
            work_horse, deadline, self.horse_poll_interval, self._pool, self.kill_horse, self._forget_horse
        )
        return self._outcome(job, work_horse.pid, end, timeout, now)

    def execute_job(self, job: Job, queue: Any) -> None:
        """RQ's: the job runs in a horse (through perform_job there, if a subclass overrides a hook);
        a horse that ends without reporting fails it here, through handle_job_failure, as in RQ."""
        in_hand = self._in_hand_for(job, queue)
        outcome = self.execute(job, in_hand.claim, in_hand.now)
        if not self._horse_reported:
            self._call_failure_in_worker(job, queue, outcome.exc_string)
        elif self._hooks_after_report():  # (the horse logged nothing: its failure was logged by _outcome)
            self._handle_outcome(job, queue, outcome, log=False)
            if outcome.kind is OutcomeKind.SUCCESS:
                self._log_job_ok(job)
        else:
            self._record_outcome(job, queue, outcome)
            if outcome.kind is OutcomeKind.SUCCESS:
                self._log_job_ok(job)

    def _finish(self, *args: Any, **kwargs: Any) -> engine.Claim:
        try:
            return super()._finish(*args, **kwargs)
        finally:
            self._pool.recorded()  # the horse standing by may exit

    def _send_job(self, work_horse: Horse, claim: engine.Claim) -> None:
        job = (claim.job_id, claim.raw, claim.started_at, claim.queue or '', claim.execution_id)
        message = pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            pipes.write_message(work_horse.job_fd, message)
        except BrokenPipeError:  # the horse died just now: watching it tells how
            pass
        self._pool.ack_after_record.append(work_horse.job_fd)  # closed, with a byte, once the outcome is recorded
        work_horse.job_fd = -1

    def _forget_horse(self) -> None:
        with self._horse_lock:
            self._horse_pid = 0

    # --- starting one

    def start_horse(self) -> Horse:
        """A forked horse that gets ready and waits for its job (the SpawnWorker spawns one instead)."""
        settings = self.horse_settings()  # made once, in the worker, not in every horse
        return self._pool.fork(settings, self._preload(), self.use_breeder, self.breeder_timeout, self.connection)

    def _preload(self) -> str:
        return self._job_module if self.preload_job_module else ''

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
                perform=functools.partial(perform_in_horse, self) if self._hooks_in_horse() else None,
                worker_pid=os.getpid(),
                default_result_ttl=self.default_result_ttl,
                disable_default_exception_handler=self.disable_default_exception_handler,
                policy=self.job_policy,
            )
        return self._settings

    def _hooks_in_horse(self) -> bool:
        """Whether the horse runs the job through the worker's perform_job (RQ's hooks that run in the horse)."""
        return any(replaced(self, name) for name in HORSE_HOOKS)

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

    # --- what it means

    def _outcome(self, job: Job, pid: int, end: reports.HorseEnd, timeout: int, now: datetime | None) -> Outcome:
        self._horse_reported = end.report is not None
        self._reported_func_name = (job.id, None)
        if end.report is not None:
            report = horse.decode_report(end.report)
            self._job_module = report.module
            self._reported_func_name = (job.id, report.func_name or None)
            if report.kind == OutcomeKind.FAILURE:
                self._log_exception(job, report.exc_string, report.func_name)
            return reports.reported_outcome(job, report)
        job.ended_at = job.last_heartbeat = clock(now)()
        if self._stopped_job_id == job.id:
            self.log.warning('Worker %s: job %s stopped by user, moving job to FailedJobRegistry', self.name, job.id)
            self.run_stopped_callback(job)
            return Outcome(OutcomeKind.FAILURE, exc_string=reports.STOPPED_EXC_STRING)
        if end.timed_out:
            exc_string = reports.killed_after_timeout_exc_string(timeout, self.horse_kill_grace)
        else:
            exc_string = reports.terminated_exc_string(end.status)
        self.log.warning('Worker %s: job %s failed (%s)', self.name, job.id, exc_string.strip())
        self.handle_work_horse_killed(job, pid, end.status, end.rusage)
        return Outcome(OutcomeKind.FAILURE, exc_string=exc_string)

    def _webhook_func_name(self, job: Job) -> str | None:
        """From the horse's report: this process never deserializes the job's data (None if it sent none)."""
        reported_for, func_name = self._reported_func_name
        return func_name if reported_for == job.id else None

    def _handle_stopped_job(self, job: Job, queue: Any, execution: Any = None) -> None:
        """RQ 3.0's step for a job stopped by a stop-job command: its stopped callback (whose error is
        logged, not raised), then the job failed as stopped (rqfast's loop does this in _outcome)."""
        self.log.warning('Worker %s: job %s stopped by user, moving job to FailedJobRegistry', self.name, job.id)
        self.run_stopped_callback(job)
        self.handle_job_failure(job, queue=queue, exc_string=reports.STOPPED_EXC_STRING, execution=execution)

    def run_stopped_callback(self, job: Job) -> None:
        """The job's on_stopped callback runs in the worker, under its own timeout, as in RQ."""
        try:
            job.execute_stopped_callback(self.death_penalty_class)
        except Exception:
            self.log.exception('Job %s: error while executing stopped callback', job.id)

    # --- commands

    def kill_horse(self, sig: int = signal.SIGKILL) -> None:
        """Kill the running horse's process group (the job's own children too)."""
        with self._horse_lock:
            pid = self._horse_pid
            killed = bool(pid) and kill_group(pid, sig)
            first = killed and self._horse_killed != pid  # (a cold shutdown kills it twice: logged once)
            if killed:
                self._horse_killed = pid
        if first:
            self.log.info('Worker %s: killed horse pid %s', self.name, pid)
        loop = self._loop
        if loop is not None and loop.horses is not None:  # every horse, at concurrency > 1
            loop.horses.kill_all(sig)

    def stop_job(self, job_id: str) -> None:
        if self._loop is not None and self._loop.stop_job(job_id):  # at concurrency > 1
            return
        self._stopped_job_id = job_id
        self.kill_horse()


ForkingWorker = Worker


def stand_in_job(job_class: Any, connection: Any, serializer: Any) -> dict[bytes, bytes]:
    """The hash of a job that calls len(()): what a forked horse runs to warm up."""
    job = Job.create('builtins.len', args=((),), connection=connection, serializer=serializer, timeout=60)
    return {
        key.encode(): value if isinstance(value, bytes) else str(value).encode()
        for key, value in job.to_dict().items()
        if value is not None
    }
