"""Loading a claimed job: the job ready to run, or a stand-in and the 'poison' outcome that says why it cannot run.

The loop's runners (inline.py at concurrency 1, slots.py at N) load each claimed job through the
worker's JobLoader before the runner (runner.py) runs it; RQ's step-by-step API
(dequeue_job_and_maintain_ttl) loads through it too. A worker that runs jobs in other processes
loads a job sealed: its call, meta and result are never deserialized in the worker (security.py).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .. import dates, engine
from ..job import Job
from ..jobhash import unreadable_fields
from ..outcome import Outcome, OutcomeKind
from ..security import restore_sealed, sealed_fields
from ..status import JobStatus
from .context import WorkerContext
from .joblog import JobLog


def clock(now: datetime | None) -> Callable[[], datetime]:
    """The time a step records: `now` every time when pinned, else the real clock."""
    if now is None:
        return dates.now
    pinned = now
    return lambda: pinned


class JobLoader:
    """A claimed job from its hash to a Job ready to run (or a stand-in and the reason it cannot run)."""

    def __init__(self, context: WorkerContext, joblog: JobLog, in_process: bool) -> None:
        self.context = context
        self.joblog = joblog
        self.in_process = in_process  # False: a horse runs the job, and this process never deserializes it

    # --- loading it

    def load(
        self, claim: engine.Claim, now: datetime | None = None, in_process: bool | None = None
    ) -> tuple[Job, Outcome | None]:
        """The claimed job, ready to run; or a stand-in and a 'poison' outcome naming why it cannot run.

        A worker that runs jobs in other processes (runs_jobs_in_process False) loads it sealed: its
        call, meta and result are never deserialized here (security.restore_sealed), unless `in_process`:
        RQ's step-by-step API hands the job to its caller, who performs it in this process.
        """
        context = self.context
        in_process = self.in_process if in_process is None else in_process
        job = context.job_class(claim.job_id, connection=context.connection, serializer=context.serializer)
        if not claim.raw.get(b'data'):  # (a hash without its call: RQ drops the id unseen, rqfast fails it)
            reason = (
                f'rqfast: job {claim.job_id} could not be loaded from its hash, so it was not run: '
                f'its hash has no data (the function and its arguments); fields: '
                f'{", ".join(sorted(k.decode(errors="replace") for k in claim.raw)) or "none"}'
            )
            placeholder = self.placeholder(claim.job_id or '', claim.queue or '', claim.raw, now)
            return placeholder, Outcome(OutcomeKind.POISON, exc_string=reason)
        policy = context.job_policy
        if policy is not None and in_process:
            refused = policy.vet(claim.job_id or '', claim.raw, context.serializer)
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
        job.worker_name = context.name
        job.started_at = job.last_heartbeat = claim.started_at
        return job, None

    def unloadable(self, claim: engine.Claim, now: datetime | None = None) -> tuple[Job, Outcome]:
        """For a job whose loading raised (called in the except block): a stand-in and a failure with the
        traceback, logged as a job that raised is (RQ's error line)."""
        outcome = Outcome(OutcomeKind.FAILURE, exc_string=traceback.format_exc())
        job = self.placeholder(claim.job_id or '', claim.queue or '', claim.raw, now)
        self.joblog.exception(job, outcome.exc_string)
        return job, outcome

    def placeholder(
        self, job_id: str, queue: str, raw: dict[Any, Any] | None = None, now: datetime | None = None
    ) -> Job:
        """A sealed stand-in for a job that cannot be loaded or run (its TTLs kept when the repaired hash loads)."""
        context = self.context
        job = context.job_class(job_id, connection=context.connection, serializer=context.serializer)
        try:
            restore_sealed(job, raw or {})
        except Exception:
            pass
        job.origin = queue
        job.worker_name = context.name
        job.started_at = job.ended_at = job.last_heartbeat = clock(now)()
        job.retries_left = job.repeats_left = None
        return job
