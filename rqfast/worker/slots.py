"""The slots of a worker with concurrency > 1: what happens to a claimed job off its loop's thread (loop.py).

Each job is loaded and run on a thread of threads.py's pool, by the worker's runner (runner.py: the
same as at concurrency 1, its hooks included; a forking or spawn worker's runner hands it to a horse
and watches it from that thread), and its outcome planned there; it ends in a report to the loop,
which records it with the others that ended meanwhile. A hook's record goes to the loop the same
way, and the hook goes on once the loop has recorded it.

A SimpleWorker's `async def` job, when no hook is replaced, runs as a task of the one event loop
instead. Once a job turned out async, the next claims are loaded on the event loop's thread itself,
where they start at once (a plain function loaded there goes on to a thread): a hop less.
"""

from __future__ import annotations

import threading
import time
import traceback
from collections.abc import Callable

from .. import keys
from ..execution import run_job_async
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from ..timeouts import NoDeathPenalty, UnixSignalDeathPenalty
from .context import WorkerContext
from .loading import JobLoader
from .recorder import Recorder
from .runner import Runner
from .running import Ack, Done, Running
from .threads import EventLoop, Report, Tails, Threads, broken_outcome, is_async


class Slots:
    """Where the jobs of a loop with N slots run: on threads (in process, or watching a horse each), or
    as tasks of one event loop. Each job's steps happen off the loop's thread and end in a Done handed
    to `report`."""

    def __init__(
        self,
        context: WorkerContext,
        recorder: Recorder,
        loader: JobLoader,
        runner: Runner,
        report: Report,
        gone: Callable[[], bool],
    ) -> None:
        self.context = context
        self.recorder = recorder
        self.loader = loader
        self.runner = runner
        self.joblog = loader.joblog
        # a SimpleWorker's `async def` job, when no hook is replaced, runs as a task of the event loop
        self.in_process = loader.in_process
        self.report = report
        self.gone = gone  # the loop has ended: a job thread waiting for its record stops waiting
        self.threads = Threads(context.name, report)
        self.events: EventLoop | None = None
        self._events_lock = threading.Lock()
        self.async_next = False  # the last job loaded was async: the next is loaded on the event loop's thread
        self.tails = Tails()
        penalty = context.death_penalty_class
        # SIGALRM reaches only the main thread: on the job threads the loop enforces the timeout
        self.penalty = NoDeathPenalty if issubclass(penalty, UnixSignalDeathPenalty) else penalty

    def start(self, running: Running) -> None:
        """Hand a claimed job over: loaded and run on a thread, or on the event loop's thread."""
        if self.async_next and self.events is not None:  # the event loop's thread loads it: one hop less
            self.events.call(lambda: self._prepare_on_loop(running))
        else:
            self.threads.submit(running.claim.execution_id, lambda: self._take_up(running))

    def queues_ahead(self) -> bool:
        """Whether a job claimed ahead of a free slot can wait for a job thread (queue_ahead); not while
        jobs run on the event loop (async ones), where the loop holds it until a slot frees."""
        return not (self.async_next and self.events is not None)

    def queue_ahead(self, running: Running) -> None:
        """Queue a job claimed ahead of a free slot (running.queued) for the next job thread that ends
        its job: it begins there, with no hop through the loop."""
        self.threads.submit(running.claim.execution_id, lambda: self._take_up(running), ahead=True)

    def _take_up(self, running: Running) -> Done | None:
        """On a job thread: the job begins (unless the loop dropped it while it was queued)."""
        if running.dropped:
            return None
        if running.queued:
            running.begin(time.monotonic())
        return self._guarded(self._load_and_run, running)

    def close(self) -> None:
        self.threads.close()
        if self.events is not None:
            self.events.close()

    def _guarded(self, step: Callable[[Running], Done | None], running: Running) -> Done | None:
        """A step of a job on a thread or the event loop; when it raises (a log handler, a hook's
        SystemExit, a plan that failed twice...), the job fails and its slot is freed: a thread cannot
        stop the worker."""
        try:
            with keys.within(running.claim.queue):  # (sharded by queue: the job's keyspace)
                return step(running)
        except BaseException:
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
        if self.in_process and not self.runner.hooks.hooked and is_async(self.job_of(running)):
            self._run_on_loop(running)
        else:
            self.async_next = False
            self.threads.submit(running.claim.execution_id, lambda: self._guarded(self._run, running))
        return None

    def _load(self, running: Running) -> Done | None:
        """Loads the job into `running`; a Done if it cannot run."""
        claim = running.claim
        try:
            job, poison = self.loader.load(claim)
        except Exception:  # logged as a job that raised is
            job, poison = self.loader.unloadable(claim)
        running.job = job
        if poison is not None:
            return self.done(running, poison)
        self.joblog.start(job, claim.queue or '')
        return None

    def _load_and_run(self, running: Running) -> Done | None:
        """On a job thread: load the job, run it (or hand it to the event loop), plan its record."""
        poison = self._load(running)
        if poison is not None:
            return poison
        runner, job = self.runner, self.job_of(running)
        if runner.hooks.hooked:
            self.async_next = False
            return self._run(running)
        if self.in_process and is_async(job):
            with self._events_lock:
                if self.events is None:
                    self.events = EventLoop(self.context.name, self.report)
            self._run_on_loop(running)
            return None  # the event loop reports it
        self.async_next = False
        running.penalty = self.penalty
        return self.done(running, runner.execute(job, running))  # (no hook replaced: the runner's own execute)

    def _run(self, running: Running) -> Done | None:
        """The runner runs the job on this thread; a hook's record reaches the loop through _deliver (and
        a hook that records nothing leaves the job started, as at concurrency 1)."""
        running.penalty = self.penalty
        if not self.runner.hooks.hooked:
            return self.done(running, self.runner.execute(self.job_of(running), running))
        running.deliver = lambda outcome: self._deliver(running, outcome)
        try:
            outcome = self.runner.run(running)
        finally:
            self.tails.ended(running.acks)
        if outcome is not None:
            return self.done(running, outcome)
        if running.recorded is None:
            self.report(running.claim.execution_id, None)
        return None

    def _run_on_loop(self, running: Running) -> None:
        assert self.events is not None
        self.async_next = True  # the next claims are loaded on the event loop's thread
        running.deadline = None  # its task times out by itself
        broken = lambda: self.done(running, broken_outcome(self.job_of(running)))  # noqa: E731
        coroutine = self._run_async(running, self.context.queue_class.DEFAULT_TIMEOUT)
        running.task = self.events.submit(running.claim.execution_id, coroutine, broken)

    async def _run_async(self, running: Running, default_timeout: int) -> Done:
        job = running.job
        assert job is not None
        outcome = await run_job_async(job, self.context.exception_handlers, default_timeout=default_timeout)
        if outcome.kind is OutcomeKind.FAILURE:
            self.joblog.exception(job, outcome.exc_string)
        return self.done(running, outcome)

    def _deliver(self, running: Running, outcome: Outcome) -> bool:
        """From the hooks: the loop records the outcome; True once it has (as RQ's handle_job_success
        returns once the job is recorded), False if it was not (fenced off, or too late)."""
        ack = Ack()
        self.report(running.claim.execution_id, self.done(running, outcome)._replace(ack=ack))
        recorded = ack.wait(self.gone)
        if ack.is_set():
            running.acks += 1
        return recorded

    def done(self, running: Running, outcome: Outcome, log: bool = False) -> Done:
        """How the job ended and the Plan recording it (made where it ran, off the loop's path); `log`: RQ's
        error line for a failure the loop made (a job past its deadline)."""
        job = self.job_of(running)
        if log and outcome.kind is OutcomeKind.FAILURE:
            self.joblog.exception(job, outcome.exc_string)
        return self.recorder.done(running, outcome, pack=True)

    # --- a job that ended before it was loaded (past its deadline, stopped, a cold shutdown)

    def job_of(self, running: Running) -> Job:
        if running.job is None:  # not loaded yet
            claim = running.claim
            running.job = self.loader.placeholder(claim.job_id or '', claim.queue or '')
        return running.job
