"""The inline runner: a worker at concurrency 1 runs its job on the loop's own thread (loop.py).

So a SimpleWorker's job runs under SIGALRM timeouts, and a forking or spawn worker watches its horse
from that thread. Each claimed job is loaded (loading.py), run by the worker's runner (runner.py: the
same as at concurrency N, hooks included) and recorded with ONE finish_job call that also claims the
next job, which runs next: one round trip per job, the turns of the loop chained with no call of
their own in between. With RQ's hooks, the hook that records the job (handle_job_success & co.)
makes that call, and the job it claims runs once execute_job has returned.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .. import engine, keys
from ..outcome import Outcome, OutcomeKind
from .context import WorkerContext
from .joblog import JobLog
from .loading import JobLoader
from .recorder import Recorder
from .runner import Runner
from .running import Running
from .waiting import log_dropped


class Inline:
    """Runs each job where the loop runs; its record claims the next."""

    def __init__(
        self, context: WorkerContext, recorder: Recorder, loader: JobLoader, runner: Runner, stop: Any
    ) -> None:
        self.context = context
        self.recorder = recorder
        self.loader = loader
        self.runner = runner
        self.stop = stop  # the worker's StopRequest: a warm shutdown requested while a job runs claims no next
        self.joblog: JobLog = loader.joblog
        self.claimed = engine.Claim()  # what a hook's record claimed (deliver), run next

    def run_from(self, claim: engine.Claim, one_more: Callable[[], bool]) -> engine.Claim:
        """Run the claim, then each job its record claimed, while `one_more()` (asked as each starts) says
        the one after it may be claimed too. The answer is the last record's empty claim (what it saw)."""
        while claim:
            claim = self.run(claim, one_more(), None)
        return claim

    def run(self, claim: engine.Claim, claim_next: bool, now: datetime | None) -> engine.Claim:
        """Run the job on this thread and record it, claiming the next (unless not claim_next); the answer
        is that claim. An error the job did not cause (a script error) is logged with its id, and work goes on."""
        context = self.context
        try:
            with keys.within(claim.queue):  # (sharded by queue: the job's keyspace, its worker's or not)
                next_claim = self.process(claim, claim_next, now)
        except Exception:
            context.log.exception(
                'Worker %s: could not finish job %s; maintenance will find it', context.name, claim.job_id
            )
            self.recorder.idle()
            return engine.Claim()
        log_dropped(context.log, context.name, next_claim)
        return next_claim

    def process(self, claim: engine.Claim, claim_next: bool = True, now: datetime | None = None) -> engine.Claim:
        """Load, run and record a claimed job; the answer is the next claim (empty when none)."""
        recorder, loader = self.recorder, self.loader
        recorder.busy_since = None  # (the run's own, from now)
        recorder.hold(claim)
        running = Running(claim, now=now)
        if self.runner.hooks.hooked:  # (a hook's record is this job's one call)
            running.deliver = lambda outcome: self.deliver(running, outcome, claim_next)
        outcome: Outcome | None = None
        try:
            running.job, outcome = loader.load(claim, now)
            if outcome is None:
                self.joblog.start(running.job, claim.queue or '')
                outcome = self.runner.run(running)
                if outcome is None:  # its hooks recorded it, or left it as it is
                    return self.after_hooks(running)
        except Exception:  # a job must never take the worker down: it fails with what went wrong
            if running.job is None:  # it could not be loaded
                running.job, outcome = loader.unloadable(claim, now)
            else:
                outcome = Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc())
                self.joblog.exception(running.job, outcome.exc_string)
        except BaseException as exc:  # a cold shutdown, or a BaseException that got past the run
            self.abort(running, exc)
            return engine.Claim()
        finally:
            recorder.busy_since = None
        # a warm shutdown requested while the job ran takes no next job
        return self.record(running, outcome, claim_next and not self.stop.requested, now)

    def record(self, running: Running, outcome: Outcome, claim_next: bool, now: datetime | None) -> engine.Claim:
        """The job's one finish_job call (claiming the next); then its horse, if it has one, may go."""
        try:
            next_claim = self.recorder.record(running, outcome, claim_next, now)
        except BaseException:
            self.runner.release(running, recorded=False)
            raise
        self.runner.release(running)
        return next_claim

    def deliver(self, running: Running, outcome: Outcome, claim_next: bool) -> bool:
        """A hook records the job (handle_job_success & co.): the same one call, claiming the next job,
        which runs once the hook has returned; True once recorded."""
        running.deliver = None  # (a second record is one by hand, claiming nothing)
        claim_next = claim_next and not self.stop.requested
        try:
            self.claimed = self.recorder.record(running, outcome, claim_next, running.now, log=False)
        except BaseException:
            self.runner.release(running, recorded=False)
            raise
        self.runner.release(running)
        return self.claimed.recorded

    def after_hooks(self, running: Running) -> engine.Claim:
        """execute_job returned: the job its record claimed runs next; one it did not record is left as it
        left it, started (as in RQ), and no longer kept alive by this worker."""
        claimed, self.claimed = self.claimed, engine.Claim()
        if running.recorded is None:
            self.runner.release(running)
            if self.recorder.release(running.claim.job_id or ''):
                self.recorder.idle()
        return claimed

    def abort(self, running: Running, exc: BaseException) -> None:
        """A BaseException out of the run (a cold shutdown...): the job fails with it (unless recorded
        already); a shutdown goes on up, anything else is logged and the worker goes on."""
        claim, context = running.claim, self.context
        job_id = claim.job_id or ''
        if job_id in self.recorder.in_flight:
            outcome = Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc())
            if running.job is None:
                running.job = self.loader.placeholder(job_id, claim.queue or '', now=running.now)
            self.record(running, outcome, False, running.now)
        if isinstance(exc, (SystemExit, KeyboardInterrupt, GeneratorExit)):
            raise exc
        context.log.error(
            'Worker %s: job %s ended with %s; the worker goes on', context.name, job_id, type(exc).__name__
        )
        self.recorder.idle()

    def stop_job(self, job_id: str) -> bool:
        """A stop-job command ends a job in a horse (the runner kills it); a SimpleWorker's is ignored, as RQ's."""
        return self.runner.stop(job_id)
