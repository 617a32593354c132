"""Worker (ForkingWorker): every job runs in its own forked work horse, as in RQ's default worker.

The worker claims and finishes jobs through the engine; the horse only runs the job and sends back
how it ended (rqfast/horse.py), so a job costs the horse no connection and no round trip. Horses are
forked by the breeder (breeder.py), a single-threaded fork of the worker, one job per horse, and each
is forked ahead of its job and waits for it on a pipe. While a horse runs, the worker's heartbeat
thread keeps the job alive and the worker watches the horse: a horse that dies, is killed or
outlives its timeout fails the job, and the worker carries on.
"""

from __future__ import annotations

import errno
import os
import pickle
import select
import signal
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Any

from .. import engine, horse
from ..dates import now
from ..execution import Outcome
from ..job import Job
from ..timeouts import JobTimeoutException
from . import reports
from .base import BaseWorker
from .breeder import Breeder, BreederError


@dataclass
class Horse:
    """A work horse: its pid (also its process group) and the worker's ends of its two pipes."""

    pid: int
    job_fd: int  # the worker writes the job here (-1 once sent)
    report_fd: int  # the horse writes how the job ended here


class Worker(BaseWorker):
    """RQ's default worker: a fresh forked work horse per job."""

    # The horse raises JobTimeoutException itself when the timeout passes (SIGALRM, as in RQ). A horse
    # still running this many seconds later (a job stuck in C code) is killed by the worker, as in RQ.
    horse_kill_grace = 60
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
        self._horse_lock = threading.RLock()  # reentrant: a cold shutdown's signal handler kills the horse too
        self._waiting: list[Horse] = []
        self._exited: list[int] = []  # horses that reported and are exiting: reaped later, off the job's path
        self._open_fds: set[int] = set()  # the worker's ends of every horse's pipes
        self._settings: horse.HorseSettings | None = None
        self._job_module = ''  # the module of the last job's function, by name
        self._breeder: Breeder | None = None
        self._breeder_failures = 0
        self._bred: dict[int, Breeder] = {}  # the horses the breeder forked, by pid: it reaps them
        self._unsafe_modules: set[str] = set()  # modules whose preloading took a breeder down

    @property
    def horse_pid(self) -> int:
        return self._horse_pid

    def bootstrap(self, *args: Any, **kwargs: Any) -> None:
        super().bootstrap(*args, **kwargs)
        os.environ['RQ_WORKER_ID'] = self.name  # as RQ sets it: the horses inherit it
        self._start_waiting_horses()

    def teardown(self) -> None:
        try:
            self._stop_horses()
        finally:
            super().teardown()

    def execute(self, job: Job, claim: engine.Claim) -> Outcome:
        timeout = job.timeout or self.queue_class.DEFAULT_TIMEOUT
        deadline = time.monotonic() + timeout + self.horse_kill_grace if timeout > 0 else None
        work_horse = self._take_horse()
        with self._horse_lock:
            self._horse_pid = work_horse.pid
        self._send_job(work_horse, claim)
        if self._stopped_job_id == job.id:  # stop-job came before the horse had the job
            self.kill_horse()
        self._start_waiting_horses()
        self._reap_exited()
        end = self._watch(work_horse, deadline)
        return self._outcome(job, work_horse.pid, end, timeout)

    # --- horses

    def _take_horse(self) -> Horse:
        while self._waiting:
            work_horse = self._waiting.pop(0)
            if self._reap(work_horse.pid, block=False) is None:
                return work_horse
            self.log.warning('Worker %s: horse %s died while waiting for a job', self.name, work_horse.pid)
            self._close(work_horse.job_fd, work_horse.report_fd)
        return self.start_horse()

    def _send_job(self, work_horse: Horse, claim: engine.Claim) -> None:
        message = pickle.dumps((claim.job_id, claim.raw, claim.started_at), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            horse.write_message(work_horse.job_fd, message)
        except BrokenPipeError:  # the horse died just now: watching it tells how
            pass
        self._close(work_horse.job_fd)
        work_horse.job_fd = -1

    def _start_waiting_horses(self) -> None:
        while len(self._waiting) < self.waiting_horses:
            self._waiting.append(self.start_horse())

    def start_horse(self) -> Horse:
        """A forked horse that gets ready and waits for its job (the SpawnWorker spawns one instead)."""
        settings = self.horse_settings()  # made once, in the worker, not in every horse
        breeder = self._breeder_for(settings)  # first: a breeder started now must not inherit these pipes
        job_read, job_write = os.pipe()
        report_read, report_write = os.pipe()
        try:
            pid = self._bred_horse(breeder, job_read, report_write) if breeder else None
            if pid is None:
                pid = self._forked_horse(settings, (job_read, report_write), (job_write, report_read))
        except BaseException:
            self._close(job_write, report_read)
            raise
        finally:
            os.close(job_read)
            os.close(report_write)
        self._open_fds.update((job_write, report_read))
        return Horse(pid, job_write, report_read)

    def _bred_horse(self, breeder: Breeder, job_fd: int, report_fd: int) -> int | None:
        """A horse from the breeder (None if the breeder failed)."""
        module = self._preload() if self._preload() not in self._unsafe_modules else ''
        try:
            pid = breeder.fork_horse(module, job_fd, report_fd, self.breeder_timeout)
        except BreederError as exc:
            self.log.warning('Worker %s: %s; forking horses itself for now', self.name, exc)
            if module:  # importing it may be what killed or stalled the breeder: never again
                self._unsafe_modules.add(module)
            self._drop_breeder()
            return None
        self._bred[pid] = breeder
        return pid

    def _breeder_for(self, settings: horse.HorseSettings) -> Breeder | None:
        if self._breeder is not None and not self._breeder.alive:
            self._drop_breeder()
        if self._breeder is None and self.use_breeder and self._breeder_failures < 3:
            self._breeder = Breeder.start(
                lambda job_fd, report_fd: self._horse_main(settings, job_fd, report_fd, ''), sorted(self._open_fds)
            )
        return self._breeder

    def _drop_breeder(self) -> None:
        if self._breeder is not None:
            self._breeder_failures += 1
            self._breeder.stop(0)
            self._breeder = None

    def _forked_horse(
        self, settings: horse.HorseSettings, child_ends: tuple[int, int], worker_ends: tuple[int, int]
    ) -> int:
        """A horse forked by the worker itself."""
        horse.flush_stdio()  # or the horse would print what the worker had buffered, again
        pid = os.fork()
        if pid == 0:
            inherited = [*worker_ends, *self._open_fds, *([self._breeder.fileno()] if self._breeder else [])]
            self._close(*inherited)
            self._horse_main(settings, *child_ends, self._preload())
        try:
            os.setpgid(pid, pid)  # the horse does it too: whichever comes first, a kill finds the group
        except OSError:
            pass
        return pid

    def _horse_main(self, settings: horse.HorseSettings, job_fd: int, report_fd: int, module: str) -> None:
        code = 1
        try:
            os.setpgid(0, 0)
            horse.serve_one_job(job_fd, report_fd, settings, module, fallback=self.connection)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            horse.flush_stdio()
            os._exit(code)

    def _preload(self) -> str:
        return self._job_module if self.preload_job_module else ''

    def horse_settings(self) -> horse.HorseSettings:
        if self._settings is None:
            self._settings = horse.HorseSettings(
                self.name,
                horse.client_recipe(self.connection),
                self.job_class,
                self.serializer,
                self.death_penalty_class,
                list(self._exc_handlers),
                self.queue_class.DEFAULT_TIMEOUT,
                stand_in=self._stand_in(),
            )
        return self._settings

    def _stand_in(self) -> dict[bytes, bytes] | None:
        """A warm-up job for the horses, when a spare CPU can run it while the current job runs.

        On a single CPU the warm-up would only compete with the running job for it.
        """
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1
        if cpus < 2:
            return None
        try:
            return horse.stand_in_job(self.job_class, self.connection, self.serializer)
        except Exception:  # a serializer that cannot encode it: no warm-up
            return None

    def _stop_horses(self) -> None:
        """A waiting horse exits when its job pipe closes; one that does not, in time, is killed."""
        waiting, self._waiting = self._waiting, []
        for work_horse in waiting:
            self._close(work_horse.job_fd)
        deadline = time.monotonic() + self.horse_exit_wait
        for pid in [h.pid for h in waiting] + self._exited:
            if self._orphaned(pid):
                continue
            while self._reap(pid, block=False) is None:
                if time.monotonic() > deadline:
                    self._kill_group(pid, signal.SIGKILL)
                    self._reap(pid, block=True)
                    break
                time.sleep(0.005)
        self._exited = []
        for work_horse in waiting:
            self._close(work_horse.report_fd)
        if self._breeder is not None:
            self._breeder.stop(self.horse_exit_wait)
            self._breeder = None

    def _reap_exited(self) -> None:
        self._exited = [pid for pid in self._exited if not self._orphaned(pid) and self._reap(pid, block=False) is None]

    def _orphaned(self, pid: int) -> bool:
        """A horse whose breeder died: nobody here can reap it (init does), so nobody waits for it."""
        if pid in self._bred and not self._bred[pid].alive:
            del self._bred[pid]
            return True
        return False

    def _close(self, *fds: int) -> None:
        for fd in fds:
            if fd >= 0:
                self._open_fds.discard(fd)
                try:
                    os.close(fd)
                except OSError:
                    pass

    def _reap(self, pid: int, block: bool) -> tuple[int, Any] | None:
        """(wait status, rusage) once the horse has exited; None while it runs (block=False)."""
        breeder = self._bred.get(pid)
        if breeder is not None:
            found = breeder.reaped(pid, block)
            if found is not None:
                del self._bred[pid]
            return found
        try:
            done, status, rusage = os.wait4(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped already (SIGCHLD ignored)
            return 0, None
        return (status, rusage) if done else None

    # --- watching one

    def _watch(self, work_horse: Horse, deadline: float | None) -> reports.HorseEnd:
        """Read the horse's report until it arrives, the horse ends, or the deadline passes."""
        reader = horse.MessageReader()
        poller = select.poll()
        poller.register(work_horse.report_fd, select.POLLIN)
        reaped: tuple[int, Any] | None = None
        timed_out = False
        try:
            while reader.message is None and reaped is None:
                wait = self.horse_poll_interval
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                    if wait <= 0:
                        timed_out = True
                        self.kill_horse()
                        break
                if poller.poll(wait * 1000):
                    data = os.read(work_horse.report_fd, 1 << 16)
                    if not data:
                        break
                    reader.feed(data)
                else:
                    reaped = self._reap(work_horse.pid, block=False)
                    self._drain(poller, work_horse.report_fd, reader)
        except BaseException:
            self.kill_horse()
            raise
        finally:
            with self._horse_lock:
                self._horse_pid = 0
            self._close(work_horse.report_fd)
            if reader.message is None and reaped is None:
                reaped = self._reap(work_horse.pid, block=True)
        if reader.message is not None:
            if reaped is None:
                self._exited.append(work_horse.pid)
            return reports.HorseEnd(reader.message)
        status, rusage = reaped or (0, None)
        return reports.HorseEnd(None, status, rusage, timed_out)

    @staticmethod
    def _drain(poller: Any, fd: int, reader: horse.MessageReader) -> None:
        while reader.message is None and poller.poll(0):
            data = os.read(fd, 1 << 16)
            if not data:
                return
            reader.feed(data)

    # --- what it means

    def _outcome(self, job: Job, pid: int, end: reports.HorseEnd, timeout: int) -> Outcome:
        if end.report is not None:
            report = horse.decode_report(end.report)
            self._job_module = report.module
            return reports.reported_outcome(job, report)
        job.ended_at = job.last_heartbeat = now()
        if self._stopped_job_id == job.id:
            self.log.warning('Worker %s: job %s stopped by user, moving job to FailedJobRegistry', self.name, job.id)
            self.run_stopped_callback(job)
            return Outcome('failure', exc_string=reports.STOPPED_EXC_STRING)
        if end.timed_out:
            exc_string = reports.killed_after_timeout_exc_string(timeout, self.horse_kill_grace)
        else:
            exc_string = reports.terminated_exc_string(end.status)
        self.log.warning('Worker %s: job %s failed (%s)', self.name, job.id, exc_string.strip())
        self.handle_work_horse_killed(job, pid, end.status, end.rusage)
        return Outcome('failure', exc_string=exc_string)

    def run_stopped_callback(self, job: Job) -> None:
        """The job's on_stopped callback runs in the worker, under its own timeout, as in RQ."""
        try:
            callback = job.stopped_callback
            if callback is not None:
                with self.death_penalty_class(job.stopped_callback_timeout, JobTimeoutException, job_id=job.id):
                    callback(job, job.connection)
        except Exception:
            self.log.exception('Job %s: error while executing stopped callback', job.id)

    def handle_work_horse_killed(self, job: Job, retpid: int, ret_val: int, rusage: Any) -> None:
        if self.work_horse_killed_handler is not None:
            try:
                self.work_horse_killed_handler(job, retpid, ret_val, rusage)
            except Exception:
                self.log.exception('Worker %s: work_horse_killed_handler failed', self.name)

    # --- commands

    def kill_horse(self, sig: int = signal.SIGKILL) -> None:
        """Kill the running horse's process group (the job's own children too)."""
        with self._horse_lock:
            pid = self._horse_pid
            killed = bool(pid) and self._kill_group(pid, sig)
        if killed:
            self.log.info('Worker %s: killed horse pid %s', self.name, pid)

    @staticmethod
    def _kill_group(pid: int, sig: int) -> bool:
        try:
            os.killpg(pid, sig)
        except OSError as exc:
            if exc.errno != errno.ESRCH:  # already gone is fine
                raise
            return False
        return True

    def stop_job(self, job_id: str) -> None:
        self._stopped_job_id = job_id
        self.kill_horse()


ForkingWorker = Worker
