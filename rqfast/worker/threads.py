"""Where a worker with concurrency > 1 runs its jobs: a pool of threads and one event loop.

Plain functions run on `Threads` (one thread per job in flight, kept for the next job); `async def`
functions run as tasks of the one event loop of `EventLoop`, on a thread of its own. Neither talks
to Redis: each hands back how its job ended by calling `report(token, outcome)`, and the worker's
loop (loop.py) records it. A thread cannot be killed: one whose job outlived its timeout, or
was stopped, is left to end on its own and its late report is dropped by the loop; a fresh thread
takes its place, so the worker still has its N slots. The Outcome of a job that cannot say how it
ended (past its deadline, stopped, its task broken) is made here too, for the loop to record.
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import select
import selectors
import sys
import threading
import warnings
from collections.abc import Callable, Coroutine
from typing import Any

from .. import dates, engine
from ..execution import fail_job
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from ..text import as_text
from ..timeouts import JobTimeoutException, parse_timeout
from .context import WorkerContext
from .running import Ack

Report = Callable[[object, Any], None]
STOPPED = 'rqfast: job stopped by a stop-job command while it ran on a thread or the event loop\n'


class Tails:
    """The hooks that go on after the loop answered their record (the code after super().execute_job()):
    the worker waits for them before it stops, as at concurrency 1 execute_job returns first."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._count = 0

    def answer(self, ack: Ack, recorded: bool) -> None:
        """From the loop: the record is answered, and its hook goes on."""
        with self._changed:
            self._count += 1
        ack.set(recorded)

    def ended(self, answered: int) -> None:
        """From a job thread: its hook returned, after `answered` answers."""
        if answered:
            with self._changed:
                self._count -= answered
                self._changed.notify_all()

    def wait(self) -> None:
        """Until every answered hook has returned (a second signal still interrupts it)."""
        with self._changed:
            while self._count > 0:
                self._changed.wait(1.0)


class Threads:
    """Threads that each run one job at a time; a new one starts when none is free."""

    def __init__(self, name: str, report: Report) -> None:
        self.name = name  # the worker's, for the threads' names
        self.report = report
        self._work: queue.SimpleQueue[tuple[object, Callable[[], Any]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._free = 0
        self._owed = 0  # queued ahead with no free thread: the next threads to end take them
        self._started = 0
        self._closed = False

    def submit(self, token: object, run: Callable[[], Any], ahead: bool = False) -> None:
        """Run `run` on a free thread; what it returns is reported (None: nothing to report). `ahead`:
        with no free thread, queue it for the next thread that ends its job (no new thread for it)."""
        with self._lock:
            if self._free > 0:
                self._free -= 1
            elif ahead:
                self._owed += 1
            else:
                self._started += 1
                thread = threading.Thread(target=self._serve, name=f'rqfast-job-{self._started}', daemon=True)
                thread.start()
        self._work.put((token, run))

    @property
    def owed(self) -> int:
        """Jobs queued ahead that no thread has taken yet."""
        return self._owed

    def _serve(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            token, run = item
            try:
                done = run()
                if done is not None:
                    self.report(token, done)
            finally:
                with self._lock:
                    closed = self._closed
                    if self._owed > 0:  # it takes a job queued ahead, without the loop
                        self._owed -= 1
                    elif not closed:
                        self._free += 1
            if closed:  # nobody will hand it work again
                return

    def close(self) -> None:
        """Ends the free threads now, and each busy one when its job is done."""
        with self._lock:
            self._closed = True
            free, self._free = self._free, 0
        for _ in range(free):
            self._work.put(None)


class EventLoop:
    """One asyncio event loop on a thread of its own, running every `async def` job of the worker."""

    def __init__(self, name: str, report: Report) -> None:
        self.report = report
        self.loop = new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=f'rqfast-loop-{name}', daemon=True)
        self.thread.start()

    def call(self, run: Callable[[], Any]) -> None:
        """Run `run()` on the loop's thread, soon (from any thread)."""
        self.loop.call_soon_threadsafe(run)

    def submit(self, token: object, run: Coroutine[Any, Any, Any], broken: Callable[[], Any]) -> LoopTask:
        """Run the coroutine as a task and report what it returns; `broken()` is reported instead when
        it ends with no answer (cancelled, or a BaseException got out of it). From any thread."""
        task = LoopTask(self.loop)
        coroutine = self._reporting(token, run, broken)
        if threading.get_ident() == self.thread.ident:
            task.start(coroutine)  # (a job loaded on the loop's thread starts at once)
        else:
            self.loop.call_soon_threadsafe(task.start, coroutine)
        return task

    async def _reporting(self, token: object, run: Coroutine[Any, Any, Any], broken: Callable[[], Any]) -> None:
        try:
            done = await run
        except asyncio.CancelledError:
            self.report(token, broken())
            raise
        except BaseException:  # (a SystemExit from a job: the loop goes on)
            self.report(token, broken())
            return
        self.report(token, done)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


class LoopTask:
    """An async job's task on the loop, as the worker's thread holds it: `cancel()` from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.task: asyncio.Task[None] | None = None

    def start(self, coroutine: Coroutine[Any, Any, None]) -> None:
        self.task = self.loop.create_task(coroutine)

    def cancel(self) -> None:
        self.loop.call_soon_threadsafe(self._cancel)  # (after start: the loop runs its callbacks in order)

    def _cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()


def new_event_loop() -> asyncio.AbstractEventLoop:
    """asyncio's loop, with timers on time (a loop of another event loop policy, e.g. uvloop's, as it is)."""
    if not hasattr(selectors, 'EpollSelector') or not _default_policy():
        return asyncio.new_event_loop()  # (kqueue's timeouts are in nanoseconds already)
    return asyncio.SelectorEventLoop(PreciseEpollSelector())


def _default_policy() -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)  # (policies are deprecated from Python 3.14)
        get_policy = getattr(asyncio, 'get_event_loop_policy', None)
        default = getattr(asyncio, 'DefaultEventLoopPolicy', None)
        return get_policy is None or default is None or type(get_policy()) is default


if hasattr(selectors, 'EpollSelector'):

    class PreciseEpollSelector(selectors.EpollSelector):
        """epoll, waking on time: epoll's own timeout is in whole milliseconds, rounded up, so a 10 ms
        asyncio.sleep() took 10.5 ms on average, and the jobs whose timers fell in the same millisecond
        all ended in the same tick (and then ran in lock-step: claimed, loaded and recorded together).
        A timed wait is made with select() on the epoll fd itself (microseconds), then epoll is read."""

        def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            if timeout is not None and timeout > 0 and self.fileno() < FD_SETSIZE:
                if not select.select([self.fileno()], [], [], timeout)[0]:
                    return []
                timeout = 0
            return super().select(timeout)


FD_SETSIZE = 1024  # select() takes file descriptors below it only


def is_async(job: Job) -> bool:
    try:
        func = job.func
    except Exception:  # it fails on the thread, where its error is recorded
        return False
    return inspect.iscoroutinefunction(func)  # (an async callable object runs on a thread, in asyncio.run)


def claimed_timeout(claim: engine.Claim, default: int) -> int:
    """The job's timeout, read from its claimed hash (its thread loads the rest)."""
    stored = claim.raw.get(b'timeout') or b''
    seconds = _timeouts.get(stored)  # (the loop thread reads one per job: most jobs share a few values)
    if seconds is None:
        try:
            seconds = parse_timeout(as_text(stored)) or 0
        except Exception:  # loading the job fails it with the reason
            seconds = 0
        if len(_timeouts) < 256:
            _timeouts[stored] = seconds
    return seconds or default


_timeouts: dict[Any, int] = {}  # a stored timeout -> its seconds (0: none, or unreadable)


# --- how a job ended, when it could not say: its thread runs on, or its task was cancelled


def timed_out_outcome(context: WorkerContext, job: Job, timeout: int, penalty: Any) -> Outcome:
    """A job past its deadline: failed with JobTimeoutException, its failure callback and handlers run."""
    message = f'Task exceeded maximum timeout value ({timeout} seconds)'
    context.log.warning('Worker %s: job %s failed: %s (its thread runs on)', context.name, job.id, message)
    try:
        raise JobTimeoutException(message)
    except JobTimeoutException:
        return fail_job(job, sys.exc_info(), penalty, context.exception_handlers)


def stopped_outcome(context: WorkerContext, job: Job, task: Any, penalty: Any) -> Outcome:
    """A job stopped by a stop-job command: its task (an async job's) cancelled, its stopped callback run."""
    if task is not None:
        task.cancel()
    job.ended_at = job.last_heartbeat = dates.now()
    context.log.warning('Worker %s: job %s stopped by user', context.name, job.id)
    try:
        job.execute_stopped_callback(penalty)
    except Exception:
        context.log.exception('Job %s: error while executing stopped callback', job.id)
    return Outcome(OutcomeKind.STOPPED, exc_string=STOPPED)


def broken_outcome(job: Job) -> Outcome:
    """An async job's task that ended with no outcome (cancelled, or a BaseException got out)."""
    job.ended_at = job.last_heartbeat = dates.now()
    return Outcome(OutcomeKind.FAILURE, exc_string=f'rqfast: the task of job {job.id} ended without an outcome\n')
