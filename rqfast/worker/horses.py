"""InHorses: the runner of a forking or spawn worker: each job in a horse of its own, at any concurrency.

The thread that runs the job (the loop's at concurrency 1, a slot's at N) takes a horse from the pool,
hands it the job and watches it (watching.py): its report, its exit, its hard deadline. What its end
means for the job is made here too (reports.py: a report, a horse that died, was stopped or killed
after its timeout). Several threads do this at once at concurrency N: the pool (shared, and read by
one thread at a time through a breeder's socket) is used under a lock, and each horse is known by its
job, so a stop-job kills that job's horse and a cold shutdown kills them all.

How a job gets to its process is the pool's (pool.py: horses forked by the breeder ahead of their
job, or spawned by a SpawnWorker's start_horse): the one piece another way of starting horses replaces.

After its report a horse stands by until its outcome is recorded: `release()` writes it one byte then
(and only then, for that horse alone), so a horse whose worker dies before recording its outcome sees
the pipe close instead and records the outcome itself (rqfast/orphaned.py).
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from typing import Any

from .. import horse, pipes
from ..job import Job
from ..orphaned import RECORDED
from ..outcome import Outcome, OutcomeKind
from . import reports, watching
from .calling import HookCaller
from .context import WorkerContext
from .joblog import JobLog
from .loading import clock
from .pool import Horse, HorsePool, kill_group
from .runner import Runner
from .running import Running


class LockedPool:
    """The pool's reaping and closing, one thread at a time (a breeder's socket is read by one)."""

    def __init__(self, pool: HorsePool, lock: threading.RLock) -> None:
        self.pool = pool
        self.lock = lock

    def reap(self, pid: int, block: bool) -> tuple[int, Any] | None:
        while True:
            with self.lock:
                found = self.pool.reap(pid, block=False)
            if found is not None or not block:
                return found
            time.sleep(0.01)  # (blocking here would hold every other slot's horse back)

    def retire(self, pid: int) -> None:
        with self.lock:
            self.pool.retire(pid)

    def close(self, *fds: int) -> None:
        with self.lock:
            self.pool.close(*fds)


class InHorses(Runner):
    """Runs each job in a horse of its own and watches it from the calling thread (Worker's, SpawnWorker's)."""

    enforces_timeout = True  # the horse raises JobTimeoutException itself; its watcher kills it after a grace

    def __init__(self, worker: Any, context: WorkerContext, hooks: HookCaller, joblog: JobLog) -> None:
        super().__init__(worker, context, hooks, joblog)
        self.lock = threading.RLock()  # reentrant: a cold shutdown's signal handler kills the horses too
        self.pool = HorsePool(lambda: worker.start_horse(), context.name)  # how a job gets to its process
        self.locked = LockedPool(self.pool, self.lock)
        self.pids: dict[str, int] = {}  # the horses running now, by job id
        self.stopped: set[str] = set()  # jobs a stop-job ended (their horse killed)
        self.assigned_pid = 0  # RQ's worker._horse_pid, when a caller sets it
        self.killed = 0  # the pid last killed (a cold shutdown kills a horse twice: logged once)
        self.job_module = ''  # the module of the last job's function, by name (the next horses preload it)

    # --- a job in a horse

    def execute(self, job: Job, running: Running) -> Outcome:
        """Hand the job to a horse and watch it (on this thread): how it ended."""
        worker = self.worker
        timeout = job.timeout or self.context.queue_class.DEFAULT_TIMEOUT
        deadline = time.monotonic() + timeout + worker.horse_kill_grace if timeout > 0 else None
        with self.lock:
            work_horse = self.pool.take()
            self._send(work_horse, running)
            self.pool.keep_spares(worker.spare_horses())
            self.pool.reap_exited()
        if job.id in self.stopped:  # a stop-job came before the horse had the job
            self.kill(job.id)
        end = self.watch(work_horse, deadline, job.id)
        return self.outcome(job, running, work_horse.pid, end, timeout)

    def hand_over(self, work_horse: Horse, running: Running) -> None:
        """Send the claimed job to the horse; its job pipe stays open for the acknowledgement (release())."""
        with self.lock:
            self._send(work_horse, running)

    def _send(self, work_horse: Horse, running: Running) -> None:
        claim = running.claim
        job = (claim.job_id, claim.raw, claim.started_at, claim.queue or '', claim.execution_id)
        try:
            pipes.write_message(work_horse.job_fd, pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL))
        except BrokenPipeError:  # the horse died just now: watching it tells how
            pass
        running.ack_fd, work_horse.job_fd = work_horse.job_fd, -1
        self.pids[claim.job_id or ''] = work_horse.pid

    def watch(self, work_horse: Horse, deadline: float | None, job_id: str) -> reports.HorseEnd:
        """Its report, its exit, or its deadline (then it is killed), from this thread."""
        pid = work_horse.pid

        def kill() -> None:
            kill_group(pid, signal.SIGKILL)

        def forget() -> None:  # (first: no command kills its pid once it has been reaped)
            if self.pids.get(job_id) == pid:
                self.pids.pop(job_id, None)

        pool: Any = self.locked  # (watch() only reaps, retires and closes through it)
        return watching.watch(work_horse, deadline, self.worker.horse_poll_interval, pool, kill, forget)

    def outcome(self, job: Job, running: Running, pid: int, end: reports.HorseEnd, timeout: int) -> Outcome:
        """What the horse's end means for the job: its report, or why it sent none (stopped, killed after
        its timeout, died)."""
        stopped = job.id in self.stopped
        if stopped:
            self.stopped.discard(job.id)
        running.reported = end.report is not None
        if end.report is not None:
            report = horse.decode_report(end.report)
            self.job_module = report.module
            running.func_name = report.func_name or None
            if report.kind == OutcomeKind.FAILURE:
                self.joblog.exception(job, report.exc_string, report.func_name)
            return reports.reported_outcome(job, report)
        context = self.context
        job.ended_at = job.last_heartbeat = clock(running.now)()
        if stopped:
            running.stopped = True
            context.log.warning(
                'Worker %s: job %s stopped by user, moving job to FailedJobRegistry', context.name, job.id
            )
            self.worker.run_stopped_callback(job)
            return Outcome(OutcomeKind.FAILURE, exc_string=reports.STOPPED_EXC_STRING)
        if end.timed_out:
            exc_string = reports.killed_after_timeout_exc_string(timeout, self.worker.horse_kill_grace)
        else:
            exc_string = reports.terminated_exc_string(end.status)
        context.log.warning('Worker %s: job %s failed (%s)', context.name, job.id, exc_string.strip())
        self.worker.handle_work_horse_killed(job, pid, end.status, end.rusage)
        return Outcome(OutcomeKind.FAILURE, exc_string=exc_string)

    def release(self, running: Running, recorded: bool = True) -> None:
        """The job's outcome is recorded: its horse, standing by, may exit (a byte on its job pipe). When
        recording failed (`recorded` False) the pipe only closes, and the horse records its outcome itself."""
        fd, running.ack_fd = running.ack_fd, -1
        if fd < 0:
            return
        if recorded:
            try:
                os.write(fd, RECORDED)
            except OSError:  # the horse is gone
                pass
        self.pool.close(fd)  # (the pool's set of open pipes: no breeder socket is read here)

    # --- stopping and killing

    def stop(self, job_id: str) -> bool:
        """A stop-job: the job's horse is killed, and its end read as stopped."""
        self.stopped.add(job_id)
        self.kill(job_id)
        return True

    def kill(self, job_id: str, sig: int = signal.SIGKILL) -> None:
        pid = self.pids.get(job_id)
        if pid:
            self._kill(pid, sig)

    def _kill(self, pid: int, sig: int) -> None:
        with self.lock:
            killed = kill_group(pid, sig)
            first = killed and self.killed != pid
            if killed:
                self.killed = pid
        if first:
            self.context.log.info('Worker %s: killed horse pid %s', self.context.name, pid)

    def kill_all(self, sig: int = signal.SIGKILL) -> None:
        """Kill every running horse's process group (the jobs' own children too)."""
        pids = set(self.pids.values())
        if self.assigned_pid:
            pids.add(self.assigned_pid)
        for pid in pids:
            self._kill(pid, sig)

    @property
    def horse_pid(self) -> int:
        """A running horse's pid (RQ's worker.horse_pid: its only one at concurrency 1), 0 when none runs."""
        if self.assigned_pid:
            return self.assigned_pid
        return next(iter(list(self.pids.values())), 0)

    @horse_pid.setter
    def horse_pid(self, pid: int) -> None:
        self.assigned_pid = pid

    def close(self, wait: float) -> None:
        """The worker stops: its waiting horses exit (or are killed `wait` seconds later), the breeder too."""
        self.pool.stop_all(wait)
