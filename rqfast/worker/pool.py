"""The horse pool that Worker and SpawnWorker share: horses started ahead, one per job, reaped, stopped together.

A horse is a process that runs one job (rqfast/horse.py); the pool holds its pid and the worker's
ends of its two pipes. It keeps spares started and waiting for a job, hands one out per job
(dropping any that died while it waited), reaps those that reported and are exiting off the job's
path, and at teardown closes every waiting horse's job pipe (so it exits) and kills one that does
not exit in time. A forked horse comes from the breeder (breeder.py) or, failing that, from the
worker itself (fork()); a SpawnWorker spawns its own (spawn.py) and hands it to the pool (adopt()).
Watching the horse that runs a job is watching.py's.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import horse
from ..as_rq import logger_name
from .breeder import Breeder, BreederError

logger = logging.getLogger(logger_name('worker'))


@dataclass
class Horse:
    """A work horse: its pid (also its process group) and the worker's ends of its two pipes."""

    pid: int  # 0 while it is still to come from the breeder (`ordered`)
    job_fd: int  # the worker writes the job here (-1 once sent)
    report_fd: int  # the horse writes how the job ended here
    ordered: tuple[Breeder, str, float] | None = None  # a spare asked of this breeder: (breeder, module, timeout)


def kill_group(pid: int, sig: int) -> bool:
    """Signal a horse's process group (the job's own children too); False if it is gone already."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return False
    return True


class HorsePool:
    """A worker's horses, waiting or exiting, and the breeder that forks them."""

    def __init__(self, start: Callable[[], Horse], name: str) -> None:
        self._start = start  # the worker's start_horse: fork() or a spawn
        self.name = name  # the worker's, for the log
        self.waiting: list[Horse] = []
        self.exited: list[int] = []  # horses that reported and are exiting: reaped later, off the job's path
        self.open_fds: set[int] = set()  # the worker's ends of every horse's pipes
        self.breeder: Breeder | None = None
        self.breeder_failures = 0
        self.bred: dict[int, Breeder] = {}  # the horses the breeder forked, by pid: it reaps them
        self.unsafe_modules: set[str] = set()  # modules whose preloading took a breeder down
        self._ahead = False  # keep_spares() is starting horses: ask the breeder, do not wait for it

    # --- handing out

    def take(self) -> Horse:
        """A waiting horse that is still alive, or a new one."""
        while self.waiting:
            work_horse = self.waiting.pop(0)
            if work_horse.ordered is not None and not self._delivered(work_horse):
                continue
            if self.reap(work_horse.pid, block=False) is None:
                return work_horse
            logger.warning('Worker %s: horse %s died while waiting for a job', self.name, work_horse.pid)
            self.close(work_horse.job_fd, work_horse.report_fd)
        return self._start()

    def keep_spares(self, count: int) -> None:
        """Start horses until `count` wait. A breeder forks them while the worker goes on (take() gets the pid)."""
        self._ahead = True
        try:
            while len(self.waiting) < count:
                self.waiting.append(self._start())
        finally:
            self._ahead = False

    def _delivered(self, work_horse: Horse) -> bool:
        """Wait for the pid of a horse asked of the breeder; False (its pipes closed) if the breeder failed."""
        assert work_horse.ordered is not None
        breeder, module, timeout = work_horse.ordered
        work_horse.ordered = None
        try:
            work_horse.pid = breeder.next_pid(timeout)
        except BreederError as exc:
            self.close(work_horse.job_fd, work_horse.report_fd)
            if breeder is self.breeder:
                self._breeder_failed(exc, module)
            return False
        self.bred[work_horse.pid] = breeder
        return True

    def adopt(self, pid: int, job_fd: int, report_fd: int) -> Horse:
        """A horse someone started, on the worker's ends of its pipes: the pool closes them."""
        self.open_fds.update((job_fd, report_fd))
        return Horse(pid, job_fd, report_fd)

    # --- reaping

    def reap(self, pid: int, block: bool) -> tuple[int, Any] | None:
        """(wait status, rusage) once the horse has exited; None while it runs (block=False)."""
        breeder = self.bred.get(pid)
        if breeder is not None:
            found = breeder.reaped(pid, block)
            if found is not None:
                del self.bred[pid]
            return found
        try:
            done, status, rusage = os.wait4(pid, 0 if block else os.WNOHANG)
        except ChildProcessError:  # reaped already (SIGCHLD ignored)
            return 0, None
        return (status, rusage) if done else None

    def retire(self, pid: int) -> None:
        """A horse that reported and is exiting: reaped later (reap_exited), off the job's path."""
        self.exited.append(pid)

    def reap_exited(self) -> None:
        self.exited = [pid for pid in self.exited if not self.orphaned(pid) and self.reap(pid, block=False) is None]

    def orphaned(self, pid: int) -> bool:
        """A horse whose breeder died: nobody here can reap it (init does), so nobody waits for it."""
        if pid in self.bred and not self.bred[pid].alive:
            del self.bred[pid]
            return True
        return False

    def close(self, *fds: int) -> None:
        for fd in fds:
            if fd >= 0:
                self.open_fds.discard(fd)
                try:
                    os.close(fd)
                except OSError:
                    pass

    def stop_all(self, exit_wait: float) -> None:
        """A waiting horse exits when its job pipe closes; one that does not, in `exit_wait` seconds, is killed."""
        waiting = [h for h in self.waiting if h.ordered is None or self._delivered(h)]
        self.waiting = []
        for work_horse in waiting:
            self.close(work_horse.job_fd)
        deadline = time.monotonic() + exit_wait
        for pid in [h.pid for h in waiting] + self.exited:
            if self.orphaned(pid):
                continue
            while self.reap(pid, block=False) is None:
                if time.monotonic() > deadline:
                    kill_group(pid, signal.SIGKILL)
                    self.reap(pid, block=True)
                    break
                time.sleep(0.005)
        self.exited = []
        for work_horse in waiting:
            self.close(work_horse.report_fd)
        if self.breeder is not None:
            self.breeder.stop(exit_wait)
            self.breeder = None

    # --- forking one

    def fork(
        self, settings: horse.HorseSettings, module: str, use_breeder: bool, timeout: float, fallback: Any
    ) -> Horse:
        """A forked horse that gets ready and waits for its job: from the breeder if there is one, else forked here.

        `module`: imported before the job comes; `timeout`: seconds the breeder gets to fork it;
        `fallback`: the job's connection when the worker's cannot be rebuilt.
        """
        breeder = self._breeder_for(settings, use_breeder, fallback)  # first: it must not inherit these pipes
        job_read, job_write = os.pipe()
        report_read, report_write = os.pipe()
        try:
            if breeder is not None and self._ahead:
                if self._ordered(breeder, module, job_read, report_write):
                    ordered = self.adopt(0, job_write, report_read)
                    ordered.ordered = (breeder, module, timeout)
                    return ordered
                breeder = None
            pid = self._bred_horse(breeder, module, job_read, report_write, timeout) if breeder else None
            if pid is None:
                pid = self._forked_horse(settings, (job_read, report_write), (job_write, report_read), module, fallback)
        except BaseException:
            self.close(job_write, report_read)
            raise
        finally:
            os.close(job_read)
            os.close(report_write)
        return self.adopt(pid, job_write, report_read)

    def _ordered(self, breeder: Breeder, module: str, job_fd: int, report_fd: int) -> bool:
        """Ask the breeder for a horse without waiting for it (False if the breeder failed)."""
        module = module if module not in self.unsafe_modules else ''
        try:
            breeder.request_horse(module, job_fd, report_fd)
        except BreederError as exc:
            self._breeder_failed(exc, module)
            return False
        return True

    def _bred_horse(self, breeder: Breeder, module: str, job_fd: int, report_fd: int, timeout: float) -> int | None:
        """A horse from the breeder (None if the breeder failed)."""
        module = module if module not in self.unsafe_modules else ''
        try:
            pid = breeder.fork_horse(module, job_fd, report_fd, timeout)
        except BreederError as exc:
            self._breeder_failed(exc, module)
            return None
        self.bred[pid] = breeder
        return pid

    def _breeder_failed(self, exc: BreederError, module: str) -> None:
        logger.warning('Worker %s: %s; forking horses itself for now', self.name, exc)
        if module:  # importing it may be what killed or stalled the breeder: never again
            self.unsafe_modules.add(module)
        self._drop_breeder()

    def _breeder_for(self, settings: horse.HorseSettings, use_breeder: bool, fallback: Any) -> Breeder | None:
        if self.breeder is not None and not self.breeder.alive:
            self._drop_breeder()
        if self.breeder is None and use_breeder and self.breeder_failures < 3:
            self.breeder = Breeder.start(
                lambda job_fd, report_fd: horse_main(settings, job_fd, report_fd, '', fallback),
                sorted(self.open_fds),
                lambda: warm_breeder(settings, fallback),
            )
        return self.breeder

    def _drop_breeder(self) -> None:
        if self.breeder is not None:
            self.breeder_failures += 1
            self.breeder.stop(0)
            self.breeder = None

    def _forked_horse(
        self,
        settings: horse.HorseSettings,
        child_ends: tuple[int, int],
        worker_ends: tuple[int, int],
        module: str,
        fallback: Any,
    ) -> int:
        """A horse forked by the worker itself."""
        horse.flush_stdio()  # or the horse would print what the worker had buffered, again
        pid = os.fork()
        if pid == 0:
            inherited = [*worker_ends, *self.open_fds, *([self.breeder.fileno()] if self.breeder else [])]
            self.close(*inherited)
            horse_main(settings, *child_ends, module, fallback)
        try:
            os.setpgid(pid, pid)  # the horse does it too: whichever comes first, a kill finds the group
        except OSError:
            pass
        return pid


def warm_breeder(settings: horse.HorseSettings, fallback: Any) -> None:
    """In the breeder, once: the horses' warm-up job (horse.warm_up), so that what running a job builds
    once per process (lazy imports, type checks' caches, the warm-up's own first faults) is in every
    horse from its fork, and each horse's own warm-up only has its pages to copy. No Redis call, and only
    rqfast's own code: with a job class or serializer of the app's, each horse warms up alone, as before."""
    own = (settings.job_class, settings.serializer)
    if settings.stand_in is not None and all(getattr(obj, '__module__', '').startswith('rqfast.') for obj in own):
        horse.warm_up(settings, horse.LazyClient(settings.client) if settings.client is not None else fallback)


def horse_main(settings: horse.HorseSettings, job_fd: int, report_fd: int, module: str, fallback: Any) -> None:
    """A forked horse's whole life: serve one job, then exit without returning to the worker's code."""
    code = 1
    try:
        os.setpgid(0, 0)
        horse.serve_one_job(job_fd, report_fd, settings, module, fallback=fallback)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        horse.flush_stdio()
        os._exit(code)
