"""The worker's work loop, at every concurrency: up to N jobs in flight in one process (N = 1 by default).

The loop is an object the worker owns; where a job runs is its runner's:

- inline (concurrency 1, inline.py): on the loop's thread, so SIGALRM timeouts work as in RQ; the
  worker's runner (runner.py) runs the job (in process, or in a horse it watches) and it is recorded
  with ONE finish_job call that also claims the next job, which the loop runs next;
- slots (concurrency N, slots.py): on threads.py's threads, each run by the same runner (a forking or
  spawn worker's in a horse of its own, watched from its thread), or a SimpleWorker's `async def` job
  on its one event loop; they report back here.

Either way a job takes the same path through the runner and the worker's hooks (calling.py).

A turn of the loop: wait until a job ends (or a timeout, a stop-job, a poll is due), then ONE call
records every outcome that came in meanwhile and claims as many jobs as slots are free (the
recorder's: recorder.py). A job is claimed for a free slot (and, while jobs are short, a few more held
ahead: queued for the job threads, which begin them as they end their jobs, without the loop), and is
started (started registry, execution, status, the worker busy) by the same call that claims it, so
RQ's readers see it started at once. Under load several outcomes share a call (with jobs queued ahead,
the loop waits a moment for more: _coalescing), so a busy worker makes fewer round trips than jobs.
When nothing runs and the queues are empty, the loop blocks (waiting.py) until a job comes, or
stops: burst mode, max_jobs, max_idle_time, a shutdown.

Timeouts on slots: an async job is cancelled at its timeout (JobTimeoutException, by its own task);
a thread cannot be killed, so a thread job past its timeout is failed here at its deadline with
JobTimeoutException, its slot given to the next job, and its thread's late report dropped (its
execution has ended: a late finish would not be recorded). A stop-job ends a job the same way
(STOPPED). A warm shutdown claims nothing more and waits for the jobs in flight; a cold shutdown
fails them, each with the reason named, in one call.
"""

from __future__ import annotations

import queue
import sys
import time
from collections import deque
from datetime import datetime
from typing import Any

from .. import dates, engine
from ..backoff import Backoff
from ..defaults import (
    CONCURRENT_COALESCE_MIN_RUN,
    CONCURRENT_COALESCE_PAUSE,
    CONCURRENT_POLL_INTERVAL,
    CONCURRENT_PREFETCH_MAX_RUN,
    CONCURRENT_PREFETCH_SHARE,
    CONCURRENT_SWITCH_INTERVAL,
)
from ..outcome import Outcome, OutcomeKind
from .context import WorkerContext
from .inline import Inline
from .loading import JobLoader
from .recorder import Recorder
from .runner import Runner
from .running import Done, Running
from .slots import Slots
from .stopping import ColdShutdown, StopRequest
from .threads import claimed_timeout, stopped_outcome, timed_out_outcome
from .waiting import REDIS_LOST, empty_wait, log_dropped, redis_lost, stays_suspended

STOP = object()  # a stop-job request on the report queue: (STOP, job id)
COLD_SHUTDOWN = 'rqfast: cold shutdown of worker {name} while the job ran; it was not finished\n'
NOT_STARTED = 'rqfast: cold shutdown of worker {name} before the job, claimed ahead of a free slot, started\n'


class Loop:
    """The loop of one worker running up to `size` jobs at once: on its own thread when 1 (inline.py),
    else in slots (slots.py: threads, one event loop)."""

    def __init__(
        self,
        context: WorkerContext,
        recorder: Recorder,
        loader: JobLoader,
        runner: Runner,
        stop: StopRequest,
        size: int,
    ) -> None:
        self.context = context
        self.recorder = recorder
        self.runner = runner
        self.stop = stop
        self.size = size
        self.in_hand = engine.Claim()  # what the last inline record claimed: run next
        # Inline: the last record claimed nothing and saw the queues empty with nothing to check (Claim.plain):
        # the loop blocks for a job at once, with no claim of its own, and without reading the paused queues.
        self.drained = False
        self.max_jobs: int | None = None
        self.reports: queue.SimpleQueue[tuple[object, Any]] = queue.SimpleQueue()
        self.running: dict[str, Running] = {}  # by execution id: the jobs in slots
        # Claimed ahead of a free slot (a few, while jobs are short: see _prefetch) while jobs run on the
        # event loop, started as a slot frees, with no call in between; they are started in Redis, held
        # (heartbeats) and run like the rest. (On threads they wait in the threads' queue instead: _start.)
        self.ahead: deque[engine.Claim] = deque()
        self.prefetch = max(1, size // CONCURRENT_PREFETCH_SHARE) if size > 1 else 0
        self.run_time: float | None = None  # a moving average of the jobs' run times (s), from their reports
        self.held = 0  # jobs held ahead so far
        self.backoff = Backoff()
        self.started = 0
        self.closed = False  # the loop has ended: a job thread waiting for its record stops waiting
        # the runners: where a job runs
        self.inline = Inline(context, recorder, loader, runner, stop) if size == 1 else None
        self.slots = Slots(context, recorder, loader, runner, self._report, lambda: self.closed) if size > 1 else None

    def _report(self, token: object, done: Done | None) -> None:
        self.reports.put((token, done))

    def stop_job(self, job_id: str) -> bool:
        """A stop-job command (from the command thread): the job ends; False inline for a job in this
        process (ignored, as in RQ)."""
        if self.inline is not None:
            return self.inline.stop_job(job_id)
        self.reports.put((STOP, job_id))
        return True

    # --- the loop

    def work(self, burst: bool, max_jobs: int | None, max_idle_time: int | None) -> int:
        """Run jobs until the queues are empty (burst), max_jobs, max_idle_time or a shutdown; jobs started."""
        # (RQ looks at max_jobs once a job is done: 0 runs one)
        self.started, self.max_jobs = 0, None if max_jobs is None else max(max_jobs, 1)
        # The loop thread gets the GIL back from the job threads sooner after each Redis call
        switch = sys.getswitchinterval()
        if self.slots is not None:
            sys.setswitchinterval(min(switch, CONCURRENT_SWITCH_INTERVAL))
        try:
            self._run(burst, max_idle_time)
            if self.slots is not None:
                self.slots.tails.wait()  # the hooks that go on after their job was recorded return first
        except BaseException as exc:
            reason = f'{exc}\n' if isinstance(exc, ColdShutdown) else COLD_SHUTDOWN.format(name=self.context.name)
            self._fail_all(reason)
            raise
        finally:
            self.closed = True
            sys.setswitchinterval(switch)
            if self.slots is not None:
                self.slots.close()
        return self.started

    def _run(self, burst: bool, max_idle_time: int | None) -> None:
        max_jobs = self.max_jobs
        idle_since = time.monotonic()
        poll_at: float | None = 0.0  # when to look at the queues again for free slots (0: now)
        claim, self.in_hand = self.in_hand, engine.Claim()
        if claim:  # (what worker.step()'s last record claimed)
            self._start(claim)
        while True:
            started = self.started
            drained, self.drained = self.drained, False
            if not drained:  # (drained: the record that ended the inline run just claimed, and saw them empty)
                poll_at = self._turn(burst, poll_at or 0.0)
                if poll_at is None:
                    return
                if self.running or self.started != started:
                    idle_since = time.monotonic()
                if self.running or self.ahead or (poll_at == 0.0 and not self._done(max_jobs)):
                    continue  # (0.0: the last claim filled every slot, and those jobs ended already)
            if self._done(max_jobs):
                return
            started = self.started
            if not self._wait_idle(burst, idle_since, max_idle_time, unpaused=drained):
                return
            if self.started != started:  # (the job the wait brought ran, inline)
                idle_since = time.monotonic()
            poll_at = 0.0

    def _done(self, max_jobs: int | None) -> bool:
        """A stop was asked, or max_jobs have started."""
        return self.stop.requested or (max_jobs is not None and self.started >= max_jobs)

    def step(self, now: datetime | None = None, claim_next: bool = True) -> bool:
        """Inline, one job: run the claim in hand, or claim one (never blocking); False if there was none.
        Its record claims the next (unless not claim_next), which the next step runs."""
        claim, self.in_hand = self.in_hand, engine.Claim()
        while not claim:
            claim = self.recorder.claim(now=now)
            if claim.suspended or not claim.dropped:
                break  # (a claim drops 100 ids without a job hash at most: there may be more behind them)
        if not claim:
            return False
        assert self.inline is not None, 'step() runs one job inline'
        self.in_hand = self.inline.run(claim, claim_next, now)
        return True

    def _turn(self, burst: bool, poll_at: float) -> float | None:
        """Record what ended and claim for the free slots (one call); the next poll time, None to stop."""
        ended = self._collect(self._wait(poll_at))
        while self.ahead and len(self.running) < self.size:  # the slots that freed take the jobs claimed ahead
            self._start(self.ahead.popleft())
        free = self._free()
        # Jobs that ended are recorded by one call that claims for the free slots at no cost: so it always
        # does (a retried or requeued job, or a released dependent, may be waiting), the idle queues aside.
        claim = free if ended or time.monotonic() >= poll_at else 0
        if not ended and not claim:
            return poll_at
        batch = self._record(ended, claim)
        for next_claim in batch.claims:
            if len(self.running) < self.size:
                self._start(next_claim)
            elif self._start(next_claim, ahead=True):  # on a thread, as the next job thread ends its job
                self.held += 1
            else:  # on the event loop: as a slot frees (_turn)
                self.recorder.hold(next_claim)  # started in Redis: its heartbeats begin now
                self.ahead.append(next_claim)
                self.held += 1
        log_dropped(self.context.log, self.context.name, batch)
        if claim and len(batch.claims) < claim and not batch.dropped:
            poll_at = time.monotonic() + CONCURRENT_POLL_INTERVAL  # the queues are empty
        elif batch.claims:
            poll_at = 0.0
        if batch.suspended and not self.running:
            return (
                0.0 if stays_suspended(self.context, self.recorder, self.stop, burst) else None
            )  # (resumed: claim at once)
        return poll_at

    def _wait_idle(self, burst: bool, idle_since: float, max_idle_time: int | None, unpaused: bool = False) -> bool:
        """Nothing in flight, the queues empty: block until a job comes (and claim it); False: time to stop.
        `unpaused`: the last claim saw no paused queue (Claim.plain), so the wait need not read them."""
        wait = empty_wait(self.context, burst, idle_since, max_idle_time)
        if wait is None:
            return False
        try:
            moved = self.stop.interruptibly(self.recorder.waiter().wait, wait, unpaused)
        except REDIS_LOST as exc:
            redis_lost(self.context, self.stop, exc, self.backoff)
            return True
        self.backoff.reset()
        if moved is not None:
            first = self._claim_one(moved)
            if first:
                self._start(first)
            else:
                self.drained = self.inline is not None and self._drained(first)
        return True

    @staticmethod
    def _drained(claim: engine.Claim) -> bool:
        """An empty claim that saw the queues empty, with nothing to check and nothing dropped on the way."""
        return claim.plain and not claim.dropped and not claim.dead_lettered

    def _claim_one(self, moved: tuple[str, str] | None = None) -> engine.Claim:
        """One claim_job call (of the job a blocking wait moved, if any), past ids without a job hash;
        while Redis is unreachable, sent again as it was (if a lost reply's call ran, the answer is the
        job it claimed). An empty claim when the queues are empty or the workers suspended."""
        backoff = Backoff()
        execution_id = engine.new_execution_id()
        while True:
            try:
                claim = self.recorder.claim(moved, execution_id=execution_id)
            except REDIS_LOST as exc:
                redis_lost(self.context, self.stop, exc, backoff)
                continue
            if claim or claim.suspended or not claim.dropped:
                return claim
            moved, execution_id = None, engine.new_execution_id()  # a claim looks at 100 dropped ids at most

    def _free(self) -> int:
        """How many jobs the next call may claim: for the free slots, and to top up the jobs held ahead."""
        if self.stop.requested:
            return 0
        free = self.size + self._prefetch() - len(self.running) - len(self.ahead)
        if self.max_jobs is not None:
            free = min(free, self.max_jobs - self.started - len(self.ahead))
        return max(0, free)

    def _prefetch(self) -> int:
        """How many jobs to hold claimed ahead of a free slot: so a slot that frees starts its next job at
        once, not after the round trip of the call that records its last. Only while the jobs are short:
        a job held ahead waits for the first slot to free, so with long jobs another worker may start it
        sooner (and it is not claimed ahead at all until the first jobs have reported)."""
        run_time = self.run_time
        return self.prefetch if run_time is not None and run_time <= CONCURRENT_PREFETCH_MAX_RUN else 0

    def _wait(self, poll_at: float) -> float | None:
        """Seconds to wait for a report: until the next poll (with a free slot) or the nearest deadline."""
        if not self.running:
            return 0.0
        now = time.monotonic()
        moments = [r.deadline for r in self.running.values() if r.deadline is not None]
        if len(self.running) < self.size and not self.stop.requested:
            moments.append(poll_at)
        if not moments:
            return 1.0  # (a stop request is looked at every second)
        return max(0.0, min(min(moments) - now, 1.0))

    def _collect(self, wait: float | None) -> list[tuple[Running, Done]]:
        """The jobs that ended: reported (waiting up to `wait` s for the first), past their deadline, stopped."""
        ended: list[tuple[Running, Done]] = []
        try:
            item = self.reports.get(timeout=wait) if wait else self.reports.get_nowait()
            while True:
                self._take(item, ended)
                item = self.reports.get_nowait()
        except queue.Empty:
            pass
        pause = self._coalescing() if ended else 0.0
        if pause:  # the job threads have jobs queued ahead to go on with: one call records more outcomes
            time.sleep(pause)
            try:
                while True:
                    self._take(self.reports.get_nowait(), ended)
            except queue.Empty:
                pass
        now = time.monotonic()
        for execution_id, running in list(self.running.items()):
            if running.deadline is not None and now >= running.deadline:
                del self.running[execution_id]
                slots = self._slots()
                outcome = timed_out_outcome(self.context, slots.job_of(running), running.timeout, slots.penalty)
                ended.append((running, slots.done(running, outcome, log=True)))
        return ended

    def _coalescing(self) -> float:
        """Seconds to wait for more reports before a call (one call then records more outcomes): while jobs
        run CONCURRENT_COALESCE_MIN_RUN or longer and the job threads hold enough jobs queued ahead to go on
        with meanwhile (half of what is held ahead); a fifth of a job's run time, CONCURRENT_COALESCE_PAUSE
        at most. Else 0: the call goes at once (no-op jobs lose more to the pause than the calls cost)."""
        slots, run_time = self.slots, self.run_time
        if slots is None or run_time is None or run_time < CONCURRENT_COALESCE_MIN_RUN:
            return 0.0
        if slots.threads.owed * 2 < self.prefetch:
            return 0.0
        return min(CONCURRENT_COALESCE_PAUSE, run_time / 5)

    def _take(self, item: tuple[object, Any], ended: list[tuple[Running, Done]]) -> None:
        token, value = item
        slots = self._slots()
        if token is STOP:
            self._stop(str(value), ended)
            return
        found = self.running.pop(str(token), None)
        if found is not None and value is not None:
            took = time.monotonic() - found.began
            self.run_time = took if self.run_time is None else 0.8 * self.run_time + 0.2 * took
        if value is None:  # a hook that recorded nothing: the job is left started, its slot freed
            if found is not None:
                self.recorder.release(found.claim.job_id or '')
                self.runner.release(found)
        elif found is not None:
            ended.append((found, value))
        elif value.ack is not None:  # a late report: the job was failed at its deadline, or stopped
            slots.tails.answer(value.ack, False)

    def _stop(self, job_id: str, ended: list[tuple[Running, Done]]) -> None:
        """A stop-job: a job held ahead is stopped unstarted; a running one's horse is killed (its watcher
        reports the job stopped), or it is ended here, its thread left to run on."""
        slots = self._slots()
        stopped = [Running(claim) for claim in self.ahead if claim.job_id == job_id]
        for running in stopped:
            self.ahead.remove(running.claim)
        for execution_id, running in list(self.running.items()):
            if running.claim.job_id != job_id:
                continue
            if not running.queued and self.runner.stop(job_id):  # its horse is killed: its watcher reports it stopped
                continue
            del self.running[execution_id]
            running.dropped = True  # (queued ahead: its thread will not run it)
            stopped.append(running)
        for running in stopped:
            outcome = stopped_outcome(self.context, slots.job_of(running), running.task, slots.penalty)
            ended.append((running, slots.done(running, outcome)))

    # --- starting a job: inline, it runs here; else the loop only hands the claim over (slots.py loads,
    # runs and plans it)

    def _start(self, claim: engine.Claim, ahead: bool = False) -> bool:
        """Start a claimed job: inline, run it here; else hand it to a slot. `ahead` (every slot busy):
        queue it for the next job thread that ends its job, which begins it without waking the loop
        (running.queued: no deadline until then); False where it cannot wait there (the event loop)."""
        if self.inline is not None:  # it runs here, and its record claims the next, which runs next...
            self.drained = self._drained(self.inline.run_from(claim, self._one_more))
            return True
        slots = self._slots()
        if ahead and not slots.queues_ahead():
            return False
        timeout = claimed_timeout(claim, self.context.queue_class.DEFAULT_TIMEOUT)
        # (a horse times out by itself, and its watcher kills it after a grace)
        limit = timeout if timeout > 0 and not self.runner.enforces_timeout else None
        running = Running(claim)
        running.timeout = timeout
        if ahead:
            running.queued, running.limit = True, limit
        else:
            now = running.began = time.monotonic()
            running.deadline = None if limit is None else now + limit
        self.recorder.hold(claim)
        self.started += 1
        self.running[claim.execution_id] = running
        if ahead:
            slots.queue_ahead(running)
        else:
            slots.start(running)
        return True

    def _one_more(self) -> bool:
        """Inline, as a job starts: counted; whether its record may claim the next."""
        self.started += 1
        return not self.stop.requested and (self.max_jobs is None or self.started < self.max_jobs)

    def _slots(self) -> Slots:
        assert self.slots is not None, 'jobs in slots: concurrency > 1'
        return self.slots

    # --- recording

    def _record(self, ended: list[tuple[Running, Done]], claim: int, now: datetime | None = None) -> engine.Batch:
        """One call (the recorder's): every outcome in `ended`, and up to `claim` jobs claimed. Inline,
        nothing ends here (each record claimed the next job already): a claim_job call."""
        recorder, runner = self.recorder, self.runner
        if self.inline is not None and not ended:
            first = self._claim_one() if claim else engine.Claim()
            return engine.Batch([], [first] if first else [], suspended=first.suspended)
        still = next(iter(self.running.values())).claim.job_id or '' if self.running else ''
        slots = self._slots()
        try:
            batch = recorder.finish([done.ended for _, done in ended], claim, still, now)
        except BaseException:
            for running, _ in ended:
                runner.release(running, recorded=False)  # (its horse records it itself)
            raise
        for (running, done), recorded in zip(ended, batch.recorded, strict=True):
            if running.ack_fd >= 0:
                runner.release(running)  # its horse, standing by after its report, may exit
            # (a hook logs its own lines)
            recorder.account(running, done.outcome, done.plan, recorded, done.ack is None, done.ended.working_time)
            if done.ack is not None:
                slots.tails.answer(done.ack, recorded)
        if not self.running and not batch.claims:
            recorder.idle()
        return batch

    def _fail_all(self, reason: str) -> None:
        """A cold shutdown: every job in flight fails, with the reason, in one call."""
        if not self.running and not self.ahead:
            return
        now, slots = dates.now(), self._slots()
        ended = []
        not_started = NOT_STARTED.format(name=self.context.name)
        held = [(Running(claim), not_started) for claim in self.ahead]
        in_flight = [(running, not_started if running.queued else reason) for running in self.running.values()]
        for running, why in [*in_flight, *held]:
            running.dropped = True  # (queued ahead: its thread will not run it)
            job = slots.job_of(running)
            job.ended_at = job.last_heartbeat = now
            ended.append((running, slots.done(running, Outcome(OutcomeKind.FAILURE, exc_string=why))))
        self.running.clear()
        self.ahead.clear()
        try:
            self._record(ended, 0, now)
        except Exception as exc:
            self.context.log.error('Worker %s: could not record the jobs in flight: %s', self.context.name, exc)
