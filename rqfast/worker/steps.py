"""What a worker with concurrency > 1 does with a claimed job off its loop's thread (loop.py):
load it, run it on a thread or as a task of the event loop, and plan how it is recorded.

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

from .. import dates, engine
from ..execution import fail_job, run_job, run_job_async
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from .hooks import execute_on_thread
from .slots import Ack, Done, EventLoop, Running, Tails, Threads, broken_outcome, is_async

if TYPE_CHECKING:
    from .base import BaseWorker
    from .horses import Horses


class JobSteps:
    """The steps of a job off the loop's thread, for the Loop's slots; each ends in a Done or a report."""

    worker: BaseWorker
    threads: Threads
    events: EventLoop | None
    horses: Horses | None
    penalty: Any
    async_next: bool  # the last job loaded was async: the next is loaded on the event loop's thread
    closed: bool  # the loop has ended
    tails: Tails
    _events_lock: threading.Lock

    def _report(self, token: object, done: Done | None) -> None:
        raise NotImplementedError

    def _guarded(self, step: Callable[[Running], Done | None], running: Running) -> Done | None:
        """A step of a job on a thread or the event loop; when it raises (a log handler, a plan that
        failed twice...), the job fails and its slot is freed."""
        try:
            return step(running)
        except Exception:
            return self._done(running, Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc()))

    def _prepare_on_loop(self, running: Running) -> None:
        done = self._guarded(self._load_on_loop, running)
        if done is not None:
            self._report(running.claim.execution_id, done)

    def _load_on_loop(self, running: Running) -> Done | None:
        """On the event loop's thread (the last job loaded was async): load the job and start its task
        there, or hand it to a thread when it is not async after all."""
        poison = self._load(running)
        if poison is not None:
            return poison
        if is_async(self._job_of(running)):
            self._run_on_loop(running)
        else:
            self.async_next = False
            self.threads.submit(running.claim.execution_id, lambda: self._guarded(self._run_sync, running))
        return None

    def _load(self, running: Running) -> Done | None:
        """Loads the job into `running`; a Done if it cannot run."""
        worker, claim = self.worker, running.claim
        try:
            job, poison = worker._load_job(claim)
        except Exception:  # logged as a job that raised is
            job, poison = worker._unloadable(claim)
        running.job = job
        if poison is not None:
            return self._done(running, poison)
        worker._log_start(job, claim.queue or '')
        return None

    def _load_and_run(self, running: Running) -> Done | None:
        """On a job thread: load the job, run it (or hand it to its horse, or the event loop), plan its record."""
        poison = self._load(running)
        if poison is not None:
            return poison
        if self.horses is not None:
            running.deadline = None  # its horse times out by itself, and its watcher kills it after a grace
            outcome, stopped = self.horses.execute(self._job_of(running), running.claim)
            return self._done(running, outcome, stopped)
        if self.worker.uses_hooks:  # a subclass's execute_job runs the job here; its record comes through _deliver
            return self._through_hooks(running)
        if is_async(self._job_of(running)):
            with self._events_lock:
                if self.events is None:
                    self.events = EventLoop(self.worker.name, self._report)
            self._run_on_loop(running)
            return None  # the event loop reports it
        self.async_next = False
        return self._run_sync(running)

    def _run_on_loop(self, running: Running) -> None:
        assert self.events is not None
        self.async_next = True  # the next claims are loaded on the event loop's thread
        running.deadline = None  # its task times out by itself
        broken = lambda: self._done(running, broken_outcome(self._job_of(running)))  # noqa: E731
        coroutine = self._run_async(running, self.worker.queue_class.DEFAULT_TIMEOUT)
        running.task = self.events.submit(running.claim.execution_id, coroutine, broken)

    def _run_sync(self, running: Running) -> Done:
        job, worker = self._job_of(running), self.worker
        default = worker.queue_class.DEFAULT_TIMEOUT
        try:
            outcome = run_job(job, self.penalty, worker._exc_handlers, default_timeout=default)
        except BaseException:  # a SystemExit from a job fails it, as in RQ; the thread goes on
            outcome = fail_job(job, sys.exc_info(), self.penalty, worker._exc_handlers)
        return self._done(running, outcome)

    async def _run_async(self, running: Running, default_timeout: int) -> Done:
        assert running.job is not None
        outcome = await run_job_async(running.job, self.worker._exc_handlers, default_timeout=default_timeout)
        return self._done(running, outcome)

    def _through_hooks(self, running: Running) -> Done | None:
        """On a job thread: a worker subclass's execute_job (hooks.py) runs the job and records it
        through _deliver; a hook that records nothing leaves the job started (as at concurrency 1)."""
        claim, deliver = running.claim, lambda outcome: self._deliver(running, outcome)
        try:
            failed, recorded = execute_on_thread(self.worker, self._job_of(running), claim, self.penalty, deliver)
        finally:
            self.tails.ended(running.acks)
        if failed is not None:
            return self._done(running, failed)
        if not recorded:
            self._report(claim.execution_id, None)
        return None

    def _deliver(self, running: Running, outcome: Outcome) -> bool:
        """From the hooks: the loop records the outcome; True once it has (as RQ's handle_job_success
        returns once the job is recorded), False if it was not (fenced off, or too late)."""
        ack = Ack()
        self._report(running.claim.execution_id, self._done(running, outcome, log=False)._replace(ack=ack))
        recorded = ack.wait(lambda: self.closed)
        if ack.is_set():
            running.acks += 1
        return recorded

    def _done(self, running: Running, outcome: Outcome, stopped: bool = False, log: bool = True) -> Done:
        """How the job ended and the Plan recording it (made where it ran, off the loop's path)."""
        worker, job, claim = self.worker, self._job_of(running), running.claim
        if log and outcome.kind is OutcomeKind.FAILURE and outcome.exc_info is not None:
            worker._log_exception(job, outcome.exc_string)  # (as SimpleWorker.execute logs it)
        plan = worker._recorder.plan(job, claim, outcome, stopped, dates.now())
        working = (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0
        interval = worker.job_monitoring_interval
        return Done(outcome, plan, engine.ended(job.id, claim.queue or '', claim.execution_id, plan, working, interval))

    # --- a job that ended before it was loaded (past its deadline, stopped, a cold shutdown)

    def _job_of(self, running: Running) -> Job:
        if running.job is None:  # not loaded yet
            claim = running.claim
            running.job = self.worker._placeholder_job(claim.job_id or '', claim.queue or '')
        return running.job
