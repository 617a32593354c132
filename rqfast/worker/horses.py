"""Several horses at once: a forking or spawn worker at concurrency > 1 (the loop is loop.py's).

Each job in flight has a thread in the worker that hands it to a horse of its own (a fresh process
per job, as at concurrency 1) and watches that horse: its report, its exit, its hard deadline. The
horse pool and the breeder are shared, so a lock keeps their use to one thread at a time; a horse is
killed by its own pid (a stop-job, a timeout, a cold shutdown kills them all).
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

from .. import engine
from ..job import Job
from ..outcome import Outcome
from . import watching
from .pool import HorsePool, kill_group


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


class Horses:
    """The horses a worker runs at once, by job id."""

    def __init__(self, worker: Any) -> None:  # a forking.Worker (SpawnWorker included)
        self.worker = worker
        self.lock = worker._horse_lock
        self.pool = LockedPool(worker._pool, self.lock)
        self.pids: dict[str, int] = {}
        self.stopped: set[str] = set()

    def execute(self, job: Job, claim: engine.Claim) -> tuple[Outcome, bool]:
        """Run the job in a horse of its own and watch it (on the job's thread): how it ended, and
        whether a stop-job ended it."""
        worker = self.worker
        timeout = job.timeout or worker.queue_class.DEFAULT_TIMEOUT
        deadline = time.monotonic() + timeout + worker.horse_kill_grace if timeout > 0 else None
        with self.lock:
            work_horse = worker._pool.take()
            worker._send_job(work_horse, claim)
            worker._pool.keep_spares(worker.waiting_horses)
            worker._pool.reap_exited()
            self.pids[job.id] = work_horse.pid
        if job.id in self.stopped:  # stop-job came before the horse had the job
            self.kill(job.id)
        pid = work_horse.pid

        def kill() -> None:
            kill_group(pid, signal.SIGKILL)

        def forget() -> None:
            self.pids.pop(job.id, None)

        pool: Any = self.pool  # (watch() only reaps, retires and closes through it)
        end = watching.watch(work_horse, deadline, worker.horse_poll_interval, pool, kill, forget)
        with self.lock:
            stopped = job.id in self.stopped and end.report is None
            if stopped:
                worker._stopped_job_id = job.id  # (the horse's end is read as stopped)
            outcome = worker._outcome(job, pid, end, timeout, None)
            worker._stopped_job_id = None
            self.stopped.discard(job.id)
        return outcome, stopped

    def stop(self, job_id: str) -> None:
        self.stopped.add(job_id)
        self.kill(job_id)

    def kill(self, job_id: str, sig: int = signal.SIGKILL) -> None:
        pid = self.pids.get(job_id)
        if pid and kill_group(pid, sig):
            self.worker.log.info('Worker %s: killed horse pid %s (job %s)', self.worker.name, pid, job_id)

    def kill_all(self, sig: int = signal.SIGKILL) -> None:
        for job_id in list(self.pids):
            self.kill(job_id, sig)

    def recorded(self) -> None:
        """Outcomes were recorded: the horses standing by may exit."""
        with self.lock:
            self.worker._pool.recorded()
