"""Running one claimed job: load it, execute it, and record how it ended (claiming the next in the same call).

process_claim is what the loop's inline runner (inline.py) does with a job, at concurrency 1: one
claim in, the next claim out, one finish_job script call in between (the worker's recorder.py makes
it, and plans what it writes); how a job is executed (in process, in a forked horse, in a spawned
child) is the subclass's `execute`. Loading a job (_load_job and its stand-ins) serves the slots
runner too (steps.py).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .. import dates, engine
from ..defaults import WEBHOOK_SHUTDOWN_WAIT
from ..job import Job
from ..jobhash import unreadable_fields
from ..outcome import Outcome, OutcomeKind
from ..security import restore_sealed, sealed_fields
from ..status import JobStatus, WorkerStatus
from .declared import WorkerAttributes
from .recorder import Recorder
from .webhooks import WebhookSender


def clock(now: datetime | None) -> Callable[[], datetime]:
    """The time a step records: `now` every time when pinned, else the real clock."""
    if now is None:
        return dates.now
    pinned = now
    return lambda: pinned


class Finishing(WorkerAttributes):
    """The claim -> job -> outcome -> its record path of a job run inline, as the worker's own methods.

    Reads from the worker: connection, name, job_class, serializer, log, the stop flags and its
    recorder (recorder.py: the jobs in flight, the finish call, what follows it).
    """

    _recorder: Recorder
    webhook_shutdown_wait: float = WEBHOOK_SHUTDOWN_WAIT  # seconds a stopping worker gives its pending webhooks
    job_observer: Callable[[Job, Outcome], None] | None = None  # told each recorded end (rqfast.metrics)
    runs_jobs_in_process = True  # False: a horse runs the job, and this process never deserializes its payload

    def execute(self, job: Job, claim: engine.Claim, now: datetime | None = None) -> Outcome:
        """Run the job and say how it ended (`now`: a pinned time for the times the run records)."""
        raise NotImplementedError

    def process_claim(self, claim: engine.Claim, claim_next: bool = True, now: datetime | None = None) -> engine.Claim:
        """Execute a claimed job and finish it; the answer is the next claim (empty when none)."""
        job_id, queue = claim.job_id or '', claim.queue or ''
        self._job_started_monotonic = None  # (the run's own, from now)
        self._recorder.hold(claim)
        job: Job | None = None
        outcome: Outcome | None = None
        try:
            job, outcome = self._load_job(claim, now)
            if outcome is None:
                self._log_start(job, queue)
                if self.uses_hooks:  # a subclass's execute_job & co. (hooks.py): they record the job
                    return self.process_through_hooks(job, claim, now)
                outcome = self.execute(job, claim, now)
        except Exception:  # a job must never take the worker down: it fails with what went wrong
            if job is None:  # it could not be loaded
                job, outcome = self._unloadable(claim, now)
            else:
                outcome = Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc())
                self._log_exception(job, outcome.exc_string)
        except BaseException as exc:  # a cold shutdown, or a BaseException that got past the run
            if job_id in self._in_flight:  # (the hooks' path records the job itself)
                outcome = Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc())
                job = job or self._placeholder_job(job_id, queue, now=now)
                self._finish(job, claim, outcome, claim_next=False, now=now)
            if isinstance(exc, (SystemExit, KeyboardInterrupt, GeneratorExit)):
                raise  # a shutdown: the worker stops
            self.log.error('Worker %s: job %s ended with %s; the worker goes on', self.name, job_id, type(exc).__name__)
            self._state = WorkerStatus.IDLE
            return engine.Claim()
        finally:
            self._job_started_monotonic = None
        assert outcome is not None
        # a warm shutdown requested while the job ran takes no next job
        next_claim = self._finish(job, claim, outcome, claim_next and not self._stop_requested, now)
        if next_claim.recorded:
            self._recorder.log_outcome(job, outcome)
        return next_claim

    def _finish(
        self, job: Job, claim: engine.Claim, outcome: Outcome, claim_next: bool, now: datetime | None = None
    ) -> engine.Claim:
        """Record how the job ended (the recorder's finish_job call), claiming the next unless not claim_next."""
        stopped = self._stopped_job_id == claim.job_id
        if stopped:
            self._stopped_job_id = None
        plan = self._recorder.plan(job, claim, outcome, stopped, clock(now)())
        return self._recorder.finish_one(job, claim, outcome, plan, claim_next, now)

    # --- its webhooks, once its end is recorded: the recorder hands them to the worker's sending thread

    @property
    def _webhook_sender(self) -> WebhookSender | None:
        return self._recorder.webhooks

    def _webhook_func_name(self, job: Job) -> str | None:
        """The function's name for a payload: the job ran in this process (a forking worker's says otherwise)."""
        try:
            func_name = job.func_name
        except Exception:  # its data cannot be read (a poison job)
            return None
        return None if func_name is None else str(func_name)

    def close_webhooks(self) -> None:
        """Send the webhooks still pending, for webhook_shutdown_wait seconds at most (the worker is stopping)."""
        self._recorder.close(self.webhook_shutdown_wait)

    # --- loading it

    def _load_job(
        self, claim: engine.Claim, now: datetime | None = None, in_process: bool | None = None
    ) -> tuple[Job, Outcome | None]:
        """The claimed job, ready to run; or a stand-in and a 'poison' outcome naming why it cannot run.

        A worker that runs jobs in other processes (runs_jobs_in_process False) loads it sealed: its
        call, meta and result are never deserialized here (security.restore_sealed), unless `in_process`:
        RQ's step-by-step API hands the job to its caller, who performs it in this process.
        """
        in_process = self.runs_jobs_in_process if in_process is None else in_process
        job = self.job_class(claim.job_id, connection=self.connection, serializer=self.serializer)
        policy = self.job_policy
        if policy is not None and in_process:
            refused = policy.vet(claim.job_id or '', claim.raw, self.serializer)
            if refused:  # judged before anything in the job is deserialized or imported
                placeholder = self._placeholder_job(claim.job_id or '', claim.queue or '', claim.raw, now)
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
            placeholder = self._placeholder_job(claim.job_id or '', claim.queue or '', {**claim.raw, **resets}, now)
            return placeholder, Outcome(OutcomeKind.POISON, exc_string=reason, value=resets)
        job.set_local_status(JobStatus.STARTED)
        job.worker_name = self.name
        job.started_at = job.last_heartbeat = claim.started_at
        return job, None

    def _unloadable(self, claim: engine.Claim, now: datetime | None = None) -> tuple[Job, Outcome]:
        """For a job whose loading raised (called in the except block): a stand-in and a failure with the
        traceback, logged as a job that raised is (RQ's error line)."""
        outcome = Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc())
        job = self._placeholder_job(claim.job_id or '', claim.queue or '', claim.raw, now)
        self._log_exception(job, outcome.exc_string)
        return job, outcome

    def _placeholder_job(
        self, job_id: str, queue: str, raw: dict[Any, Any] | None = None, now: datetime | None = None
    ) -> Job:
        """A sealed stand-in for a job that cannot be loaded or run (its TTLs kept when the repaired hash loads)."""
        job = self.job_class(job_id, connection=self.connection, serializer=self.serializer)
        try:
            restore_sealed(job, raw or {})
        except Exception:
            pass
        job.origin = queue
        job.worker_name = self.name
        job.started_at = job.ended_at = job.last_heartbeat = clock(now)()
        job.retries_left = job.repeats_left = None
        return job

    # --- RQ's log lines (the success and failure ones are hooks.py's)

    def _log_start(self, job: Job, queue: str) -> None:
        if self.log_job_description:
            self.log.info('Worker %s: %s: %s (%s)', self.name, queue, job.description, job.id)
        else:
            self.log.info('Worker %s: %s: %s', self.name, queue, job.id)
