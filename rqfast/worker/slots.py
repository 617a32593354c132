"""The slots runner of a worker with concurrency > 1: what it does with a claimed job off its loop's
thread (loop.py): load it, run it on a thread, as a task of the event loop or in a horse of its own
(horses.py), and plan how it is recorded; each job ends in a report to the loop.

A job is loaded on a job thread, which runs it, or hands it to the event loop when its function is
`async def`. Once a job turned out async, the next claims are loaded on the event loop's thread
itself, where they start at once (a plain function loaded there goes on to a thread): a hop less.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import dates, engine, keys
from ..execution import fail_job, run_job, run_job_async
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from ..timeouts import NoDeathPenalty, UnixSignalDeathPenalty
from .hooks import execute_on_thread
from .horses import Horses
from .threads import Ack, Done, EventLoop, Report, Running, Tails, Threads, broken_outcome, is_async

if TYPE_CHECKING:
    from .base import BaseWorker


class Slots:
    """Where the jobs of a loop with N slots run: threads, one event loop, or horses (a forking or spawn
    worker's). Each job's steps happen off the loop's thread and end in a Done handed to `report`."""

    def __init__(self, worker: BaseWorker, report: Report, gone: Callable[[], bool]) -> None:
        self.worker = worker
        self.report = report
        self.gone = gone  # the loop has ended: a job thread waiting for its record stops waiting
        self.threads = Threads(worker.name, report)
        self.events: EventLoop | None = None
        self._events_lock = threading.Lock()
        self.async_next = False  # the last job loaded was async: the next is loaded on the event loop's thread
        self.tails = Tails()
        # a forking or spawn worker's jobs run in horses of their own (horses.py)
        self.horses = None if worker.runs_jobs_in_process else Horses(worker)
        penalty = worker.death_penalty_class
        # SIGALRM reaches only the main thread: on the job threads the loop enforces the timeout
        self.penalty: Any = NoDeathPenalty if issubclass(penalty, UnixSignalDeathPenalty) else penalty

    def start(self, running: Running) -> None:
        """Hand a claimed job over: loaded and run on a thread, or on the event loop's thread."""
        if self.async_next and self.events is not None:  # the event loop's thread loads it: one hop less
            self.events.call(lambda: self._prepare_on_loop(running))
        else:
            self.threads.submit(running.claim.execution_id, lambda: self._guarded(self._load_and_run, running))

    def close(self) -> None:
        self.threads.close()
        if self.events is not None:
            self.events.close()

    def _guarded(self, step: Callable[[Running], Done | None], running: Running) -> Done | None:
        """A step of a job on a thread or the event loop; when it raises (a log handler, a plan that
        failed twice...), the job fails and its slot is freed."""
        try:
            with keys.within(running.claim.queue):  # (sharded by queue: the job's keyspace)
                return step(running)
        except Exception:
            return self.done(running, Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc()))

    def _prepare_on_loop(self, running: Running) -> None:
        done = self._guarded(self._load_on_loop, running)
        if done is not None:
            self.report(running.claim.execution_id, done)

    def _load_on_loop(self, running: Running) -> Done | None:
        """On the event loop's thread (the last job loaded was async): load the job and start its task
        there, or hand it to a thread when it is not async after all."""
        poison = self._load(running)
        if poison is not None:
            return poison
        if is_async(self.job_of(running)):
            self._run_on_loop(running)
        else:
            self.async_next = False
            self.threads.submit(running.claim.execution_id, lambda: self._guarded(self._run_sync, running))
        return None

    def _load(self, running: Running) -> Done | None:
        """Loads the job into `running`; a Done if it cannot run."""
        worker, claim = self.worker, running.claim
        try:
            job, poison = worker._finisher.load(claim)
        except Exception:  # logged as a job that raised is
            job, poison = worker._finisher.unloadable(claim)
        running.job = job
        if poison is not None:
            return self.done(running, poison)
        worker._finisher.log_start(job, claim.queue or '')
        return None

    def _load_and_run(self, running: Running) -> Done | None:
        """On a job thread: load the job, run it (or hand it to its horse, or the event loop), plan its record."""
        poison = self._load(running)
        if poison is not None:
            return poison
        if self.horses is not None:
            running.deadline = None  # its horse times out by itself, and its watcher kills it after a grace
            outcome, stopped = self.horses.execute(self.job_of(running), running.claim)
            return self.done(running, outcome, stopped)
        if self.worker.uses_hooks:  # a subclass's execute_job runs the job here; its record comes through _deliver
            return self._through_hooks(running)
        if is_async(self.job_of(running)):
            with self._events_lock:
                if self.events is None:
                    self.events = EventLoop(self.worker.name, self.report)
            self._run_on_loop(running)
            return None  # the event loop reports it
        self.async_next = False
        return self._run_sync(running)

    def _run_on_loop(self, running: Running) -> None:
        assert self.events is not None
        self.async_next = True  # the next claims are loaded on the event loop's thread
        running.deadline = None  # its task times out by itself
        broken = lambda: self.done(running, broken_outcome(self.job_of(running)))  # noqa: E731
        coroutine = self._run_async(running, self.worker.queue_class.DEFAULT_TIMEOUT)
        running.task = self.events.submit(running.claim.execution_id, coroutine, broken)

    def _run_sync(self, running: Running) -> Done:
        job, worker = self.job_of(running), self.worker
        default = worker.queue_class.DEFAULT_TIMEOUT
        try:
            outcome = run_job(job, self.penalty, worker._exc_handlers, default_timeout=default)
        except BaseException:  # a SystemExit from a job fails it, as in RQ; the thread goes on
            outcome = fail_job(job, sys.exc_info(), self.penalty, worker._exc_handlers)
        return self.done(running, outcome)

    async def _run_async(self, running: Running, default_timeout: int) -> Done:
        assert running.job is not None
        outcome = await run_job_async(running.job, self.worker._exc_handlers, default_timeout=default_timeout)
        return self.done(running, outcome)

    def _through_hooks(self, running: Running) -> Done | None:
        """On a job thread: a worker subclass's execute_job (hooks.py) runs the job and records it
        through _deliver; a hook that records nothing leaves the job started (as at concurrency 1)."""
        claim, deliver = running.claim, lambda outcome: self._deliver(running, outcome)
        try:
            failed, recorded = execute_on_thread(self.worker, self.job_of(running), claim, self.penalty, deliver)
        finally:
            self.tails.ended(running.acks)
        if failed is not None:
            return self.done(running, failed)
        if not recorded:
            self.report(claim.execution_id, None)
        return None

    def _deliver(self, running: Running, outcome: Outcome) -> bool:
        """From the hooks: the loop records the outcome; True once it has (as RQ's handle_job_success
        returns once the job is recorded), False if it was not (fenced off, or too late)."""
        ack = Ack()
        self.report(running.claim.execution_id, self.done(running, outcome, log=False)._replace(ack=ack))
        recorded = ack.wait(self.gone)
        if ack.is_set():
            running.acks += 1
        return recorded

    def done(self, running: Running, outcome: Outcome, stopped: bool = False, log: bool = True) -> Done:
        """How the job ended and the Plan recording it (made where it ran, off the loop's path)."""
        worker, job, claim = self.worker, self.job_of(running), running.claim
        if log and outcome.kind is OutcomeKind.FAILURE and outcome.exc_info is not None:
            worker._log_exception(job, outcome.exc_string)  # (as SimpleWorker.execute logs it)
        plan = worker._recorder.plan(job, claim, outcome, stopped, dates.now())
        working = (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0
        interval = worker.job_monitoring_interval
        return Done(outcome, plan, engine.ended(job.id, claim.queue or '', claim.execution_id, plan, working, interval))

    # --- a job that ended before it was loaded (past its deadline, stopped, a cold shutdown)

    def job_of(self, running: Running) -> Job:
        if running.job is None:  # not loaded yet
            claim = running.claim
            running.job = self.worker._finisher.placeholder(claim.job_id or '', claim.queue or '')
        return running.job
