"""The worker's recorder: the jobs it holds, and how their ends are recorded, at any concurrency.

One object owns what both work loops did each their own way: the jobs in flight (what the heartbeat
keeps alive), the Plan an outcome writes (engine.plan, with its fallback for a hash that cannot be
planned), the finish call retried with capped backoff while Redis is unreachable (finish_job for one
job and its next claim, finish_jobs for several; an outcome is never dropped, and never recorded
twice), and what follows a recorded end: the counters, the webhooks (to webhooks.py's sending
thread), the job observer and RQ's log lines. A fenced-off end (the job was recovered or claimed
again meanwhile) records nothing, and is logged the same way whichever loop it came from.
"""

from __future__ import annotations

import logging
import time
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any

import redis

from .. import dates, engine, keys
from ..backoff import Backoff
from ..defaults import DEFAULT_RESULT_TTL
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from ..status import JobStatus, WorkerStatus
from . import keyspaces
from .waiting import REDIS_LOST
from .webhooks import WebhookJob, WebhookSender, status_to_send

if TYPE_CHECKING:
    from .base import BaseWorker

PLANNED_FIELDS = ('retries_left', 'retry_intervals', 'repeats_left', 'repeat_intervals', 'result_ttl', 'failure_ttl')


class Recorder:
    """The jobs a worker holds in flight and the record of each end (its counters, webhooks, log lines)."""

    def __init__(self, worker: BaseWorker) -> None:
        self.worker = worker
        self.in_flight: dict[str, engine.Claim] = {}  # by job id: the heartbeat keeps these alive
        self.webhooks: WebhookSender | None = None  # started with the first webhook to send
        self.busy_since: float | None = None  # monotonic: since when a job has been in hand (the heartbeat's)

    # --- holding

    def hold(self, claim: engine.Claim) -> None:
        """A claimed job is the worker's to run (and to keep alive) until its end is recorded."""
        self.in_flight[claim.job_id or ''] = claim
        self.worker._state = WorkerStatus.BUSY
        if self.busy_since is None:
            self.busy_since = time.monotonic()

    def idle(self) -> None:
        """Nothing in flight, nothing claimed: the worker is idle."""
        self.worker._state = WorkerStatus.IDLE
        self.busy_since = None

    def release(self, job_id: str) -> bool:
        """No longer held (recorded, or left as a hook left it); False if it was not."""
        return self.in_flight.pop(job_id, None) is not None

    # --- what an outcome means: engine.plan decides; the worker only adds what it knows (a stop request)

    def plan(self, job: Job, claim: engine.Claim, outcome: Outcome, stopped: bool, now: datetime) -> engine.Plan:
        worker = self.worker
        if stopped and outcome.kind is OutcomeKind.FAILURE:  # a stop command ended it: its horse was killed
            outcome = Outcome(OutcomeKind.STOPPED, exc_string=outcome.exc_string, exc_info=outcome.exc_info)
        try:
            return self._planned(
                job, claim, outcome, now, worker.default_result_ttl, worker.disable_default_exception_handler
            )
        except Exception as exc:  # a field that loaded but cannot be used, e.g. retry_intervals "abc"
            unplannable = Outcome(OutcomeKind.POISON, exc_string=outcome.exc_string + unplannable_text(job, exc))
            return self._planned(job, claim, unplannable, now, DEFAULT_RESULT_TTL, False)

    def _planned(
        self, job: Job, claim: engine.Claim, outcome: Outcome, now: datetime, result_ttl: int, disable_handler: bool
    ) -> engine.Plan:
        return engine.plan(
            job,
            outcome,
            now,
            worker_name=self.worker.name,
            execution_id=claim.execution_id,
            started_at=claim.started_at,
            default_result_ttl=result_ttl,
            disable_default_exception_handler=disable_handler,
        )

    # --- recording: one job (and its next claim), or several (and as many claims)

    def finish_one(
        self,
        job: Job,
        claim: engine.Claim,
        outcome: Outcome,
        plan: engine.Plan,
        claim_next: bool,
        now: datetime | None = None,
    ) -> engine.Claim:
        """One finish_job call: the job's end, and its next claim (unless not claim_next)."""
        job_id = claim.job_id or ''
        working = working_time(job)
        try:
            next_claim = self._finish_job(job_id, claim.queue or '', claim.execution_id, plan, working, claim_next, now)
        finally:
            self.release(job_id)
        self.worker._state = WorkerStatus.BUSY if next_claim else WorkerStatus.IDLE
        self.account(job, outcome, plan, next_claim.recorded, log=False, working=working)
        return next_claim

    def finish_many(
        self, ended: list[tuple[Job, engine.Ended]], claim: int, still_running: str, now: datetime | None = None
    ) -> engine.Batch:
        """One finish_jobs call: every outcome in `ended`, and up to `claim` jobs claimed (none once a
        call failed: the failed call may have claimed them already). Accounting is the caller's
        (account(), per job), once what it holds for the recorded jobs is let go."""
        outcomes = [done for _, done in ended]
        for _, done in ended:
            self.release(done.job_id)
        still = self.in_flight.get(still_running)
        backoff = Backoff()
        while True:
            try:
                worker = self.worker
                return keyspaces.finish_jobs(
                    worker._engine_connection(),
                    worker._ref(),
                    outcomes,
                    claim,
                    still_running=still_running,
                    moment=now,
                    still_queue=still.queue if still is not None else None,
                )
            except REDIS_LOST as exc:
                self._retrying(f'{len(outcomes)} job(s)', exc, backoff)
                claim = 0

    def _finish_job(
        self,
        job_id: str,
        queue: str,
        execution_id: str,
        plan: engine.Plan,
        working: float,
        claim_next: bool,
        now: datetime | None = None,
    ) -> engine.Claim:
        """finish_job, retried: a call whose reply was lost is sent again as it was (if it ran, the
        fence holds the second off and its answer is the job the first one claimed)."""
        backoff = Backoff()
        moment = now or dates.now()
        next_execution = uuid.uuid4().hex
        retried = False
        while True:
            worker = self.worker
            try:
                next_claim = keyspaces.finish_job(
                    worker._engine_connection(),
                    job_id,
                    queue,
                    execution_id,
                    plan,
                    working,
                    worker._ref(),
                    claim_next=claim_next,
                    moment=moment,
                    next_execution=next_execution,
                )
            except REDIS_LOST as exc:
                self._retrying(f'job {job_id}', exc, backoff)
                retried = True
                continue
            if retried and not next_claim.recorded and self._recorded_before(job_id, execution_id):
                worker.log.info('Worker %s: job %s was recorded by the call whose reply was lost', worker.name, job_id)
                next_claim.recorded = True
            return next_claim

    def _retrying(self, what: str, exc: Exception, backoff: Backoff) -> None:
        delay = backoff.next()
        worker = self.worker
        worker.log.error('Worker %s: could not record %s: %s; retrying in %.0f s', worker.name, what, exc, delay)
        time.sleep(delay)

    def _recorded_before(self, job_id: str, execution_id: str) -> bool:
        """After a lost reply: whether the job's latest result entry is this execution's (its call ran).
        Only the entry's execution_id is read: nothing is deserialized here."""
        try:
            entries: Any = self.worker.connection.xrevrange(keys.results_key(job_id), count=1)
        except redis.RedisError:
            return False
        return bool(entries) and entries[0][1].get(b'execution_id') == execution_id.encode()

    # --- what follows a recorded end

    def account(
        self, job: Job, outcome: Outcome, plan: engine.Plan, recorded: bool, log: bool, working: float | None = None
    ) -> None:
        """After the call: the counters, webhooks and observer of a recorded end (and, with `log`, RQ's
        lines for it); a fenced-off end is only logged. (`working`: its working time, when the caller has it.)"""
        worker = self.worker
        if not recorded:  # fenced off: the job was recovered, or claimed again, meanwhile
            worker.log.warning(
                'Worker %s: job %s ended (%s), but this worker no longer owned it (its execution ended: '
                'recovered or claimed again elsewhere); nothing recorded',
                worker.name,
                job.id,
                outcome.kind.value,
            )
            return
        if job.webhooks:
            self.send_webhooks(job, outcome, plan)
        if outcome.kind is OutcomeKind.SUCCESS:
            worker.successful_job_count += 1
        else:
            worker.failed_job_count += 1
        worker.total_working_time += working_time(job) if working is None else working
        if worker.job_observer is not None:  # from what this worker holds: no round trip
            worker.job_observer(job, outcome)
        if log and (outcome.kind is not OutcomeKind.SUCCESS or worker.log.isEnabledFor(logging.INFO)):
            self.log_outcome(job, outcome)  # (a success logs INFO lines only)

    def log_outcome(self, job: Job, outcome: Outcome) -> None:
        """RQ's success lines; a failure's error was logged where the job raised."""
        worker = self.worker
        if outcome.kind is OutcomeKind.SUCCESS:
            worker._log_completed(job)
            worker._log_job_ok(job)
        elif outcome.kind is OutcomeKind.POISON:  # it never started: logged as a job that raised is
            worker._log_exception(job, outcome.exc_string)

    def send_webhooks(self, job: Job, outcome: Outcome, plan: engine.Plan) -> None:
        """Its webhooks, handed to the worker's sending thread (webhooks.py)."""
        status = status_to_send(outcome, plan)
        matching = [webhook for webhook in job.webhooks if webhook.job_status == status]
        if not matching:
            return
        subject = WebhookJob(job.id, self.worker._webhook_func_name(job), job.enqueued_at, job.ended_at)
        exc_string = outcome.exc_string if status is JobStatus.FAILED else None
        if self.webhooks is None:
            self.webhooks = WebhookSender(self.worker.name)
        for webhook in matching:
            self.webhooks.submit(webhook, subject, exc_string)

    def close(self, wait: float) -> None:
        """Send the webhooks still pending, for `wait` seconds at most (the worker is stopping)."""
        if self.webhooks is not None:
            self.webhooks.close(wait)


def working_time(job: Job) -> float:
    return (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0


def unplannable_text(job: Job, exc: Exception) -> str:
    fields = ', '.join(f'{name}={getattr(job, name)!r}' for name in PLANNED_FIELDS)
    return (
        f'rqfast: the outcome of job {job.id} could not be recorded as its hash asks ({fields}), '
        f'so it failed: {type(exc).__name__}: {exc}\n'
    )
