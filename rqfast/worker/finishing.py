"""The worker's finisher: how a claimed job is loaded, executed and its end recorded (claiming the next).

A worker holds one Finisher (`worker._finisher`), made with its recorder. process_claim is what the
loop's inline runner (inline.py) does with a job, at concurrency 1: one claim in, the next claim out,
one finish_job script call in between (the recorder, recorder.py, makes it and plans what it
writes). Loading a job (load, and the stand-ins for one that cannot run) serves the slots runner
(steps.py) and RQ's step-by-step API (hooks.py) too.

What a worker class overrides stays the worker's: how a job is executed (`execute`: in process, in
a forked horse, in a spawned child), recording it (`_finish`, which a forking worker wraps), RQ's
hooks (`uses_hooks`: process_through_hooks); the finisher calls those on the worker.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from .. import dates, engine
from ..job import Job
from ..jobhash import unreadable_fields
from ..outcome import Outcome, OutcomeKind
from ..security import restore_sealed, sealed_fields
from ..status import JobStatus, WorkerStatus
from .recorder import Recorder

if TYPE_CHECKING:
    from .base import BaseWorker


def clock(now: datetime | None) -> Callable[[], datetime]:
    """The time a step records: `now` every time when pinned, else the real clock."""
    if now is None:
        return dates.now
    pinned = now
    return lambda: pinned


class Finisher:
    """The claim -> job -> outcome -> its record path of a job run inline.

    Reads from the worker: connection, name, job_class, serializer, job_policy, log and the stop flags;
    calls its execute, _finish and hooks (overridable). Its recorder holds the jobs in flight.
    """

    def __init__(self, worker: BaseWorker, recorder: Recorder) -> None:
        self.worker = worker
        self.recorder = recorder

    def process_claim(self, claim: engine.Claim, claim_next: bool = True, now: datetime | None = None) -> engine.Claim:
        """Execute a claimed job and finish it; the answer is the next claim (empty when none)."""
        worker, recorder = self.worker, self.recorder
        job_id, queue = claim.job_id or '', claim.queue or ''
        recorder.busy_since = None  # (the run's own, from now)
        recorder.hold(claim)
        job: Job | None = None
        outcome: Outcome | None = None
        try:
            job, outcome = self.load(claim, now)
            if outcome is None:
                self.log_start(job, queue)
                if worker.uses_hooks:  # a subclass's execute_job & co. (hooks.py): they record the job
                    return worker.process_through_hooks(job, claim, now)
                outcome = worker.execute(job, claim, now)
        except Exception:  # a job must never take the worker down: it fails with what went wrong
            if job is None:  # it could not be loaded
                job, outcome = self.unloadable(claim, now)
            else:
                outcome = Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc())
                worker._log_exception(job, outcome.exc_string)
        except BaseException as exc:  # a cold shutdown, or a BaseException that got past the run
            if job_id in recorder.in_flight:  # (the hooks' path records the job itself)
                outcome = Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc())
                job = job or self.placeholder(job_id, queue, now=now)
                worker._finish(job, claim, outcome, claim_next=False, now=now)
            if isinstance(exc, (SystemExit, KeyboardInterrupt, GeneratorExit)):
                raise  # a shutdown: the worker stops
            worker.log.error(
                'Worker %s: job %s ended with %s; the worker goes on', worker.name, job_id, type(exc).__name__
            )
            worker._state = WorkerStatus.IDLE
            return engine.Claim()
        finally:
            recorder.busy_since = None
        assert outcome is not None
        # a warm shutdown requested while the job ran takes no next job
        next_claim = worker._finish(job, claim, outcome, claim_next and not worker._stop_requested, now)
        if next_claim.recorded:
            recorder.log_outcome(job, outcome)
        return next_claim

    def finish(
        self, job: Job, claim: engine.Claim, outcome: Outcome, claim_next: bool, now: datetime | None = None
    ) -> engine.Claim:
        """Record how the job ended (the recorder's finish_job call), claiming the next unless not claim_next."""
        worker = self.worker
        stopped = worker._stopped_job_id == claim.job_id
        if stopped:
            worker._stopped_job_id = None
        plan = self.recorder.plan(job, claim, outcome, stopped, clock(now)())
        return self.recorder.finish_one(job, claim, outcome, plan, claim_next, now)

    # --- loading it

    def load(
        self, claim: engine.Claim, now: datetime | None = None, in_process: bool | None = None
    ) -> tuple[Job, Outcome | None]:
        """The claimed job, ready to run; or a stand-in and a 'poison' outcome naming why it cannot run.

        A worker that runs jobs in other processes (runs_jobs_in_process False) loads it sealed: its
        call, meta and result are never deserialized here (security.restore_sealed), unless `in_process`:
        RQ's step-by-step API hands the job to its caller, who performs it in this process.
        """
        worker = self.worker
        in_process = worker.runs_jobs_in_process if in_process is None else in_process
        job = worker.job_class(claim.job_id, connection=worker.connection, serializer=worker.serializer)
        policy = worker.job_policy
        if policy is not None and in_process:
            refused = policy.vet(claim.job_id or '', claim.raw, worker.serializer)
            if refused:  # judged before anything in the job is deserialized or imported
                placeholder = self.placeholder(claim.job_id or '', claim.queue or '', claim.raw, now)
                return placeholder, Outcome(OutcomeKind.POISON, exc_string=refused)
        try:
            if policy is not None:
                policy.arm(job, claim.raw)  # before restore: meta is unpickled there
            if in_process:
                job.restore(claim.raw)
            else:
                restore_sealed(job, claim.raw)
        except Exception as exc:
            checked = claim.raw if in_process else sealed_fields(claim.raw)
            bad = unreadable_fields(job, checked)
            named = ', '.join(f'{name}={value!r}' for name, (value, _) in bad.items())
            reason = (
                f'rqfast: job {claim.job_id} could not be loaded from its hash, so it was not run: '
                f'unreadable field(s) {named or "?"}: {type(exc).__name__}: {exc}\n{traceback.format_exc()}'
            )
            resets = {name: reset for name, (_, reset) in bad.items()}
            placeholder = self.placeholder(claim.job_id or '', claim.queue or '', {**claim.raw, **resets}, now)
            return placeholder, Outcome(OutcomeKind.POISON, exc_string=reason, value=resets)
        job.set_local_status(JobStatus.STARTED)
        job.worker_name = worker.name
        job.started_at = job.last_heartbeat = claim.started_at
        return job, None

    def unloadable(self, claim: engine.Claim, now: datetime | None = None) -> tuple[Job, Outcome]:
        """For a job whose loading raised (called in the except block): a stand-in and a failure with the
        traceback, logged as a job that raised is (RQ's error line)."""
        outcome = Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc())
        job = self.placeholder(claim.job_id or '', claim.queue or '', claim.raw, now)
        self.worker._log_exception(job, outcome.exc_string)
        return job, outcome

    def placeholder(
        self, job_id: str, queue: str, raw: dict[Any, Any] | None = None, now: datetime | None = None
    ) -> Job:
        """A sealed stand-in for a job that cannot be loaded or run (its TTLs kept when the repaired hash loads)."""
        worker = self.worker
        job = worker.job_class(job_id, connection=worker.connection, serializer=worker.serializer)
        try:
            restore_sealed(job, raw or {})
        except Exception:
            pass
        job.origin = queue
        job.worker_name = worker.name
        job.started_at = job.ended_at = job.last_heartbeat = clock(now)()
        job.retries_left = job.repeats_left = None
        return job

    # --- RQ's log lines (the success and failure ones are hooks.py's)

    def log_start(self, job: Job, queue: str) -> None:
        worker = self.worker
        if worker.log_job_description:
            worker.log.info('Worker %s: %s: %s (%s)', worker.name, queue, job.description, job.id)
        else:
            worker.log.info('Worker %s: %s: %s', worker.name, queue, job.id)
