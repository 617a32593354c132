"""Running one claimed job: load it, execute it, and record how it ended (claiming the next in the same call).

process_claim is the body of the worker's step: one claim in, the next claim out, one finish_job
script call in between. What an outcome means (the Plan that call writes) is decided in one
place, `_plan` below (its fallback included); how a job is executed (in process, in a forked
horse, in a spawned child) is the subclass's `execute`.
"""

from __future__ import annotations

import logging
import time
import traceback
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import redis
from redis import Redis

from .. import dates, engine, keys
from ..backoff import Backoff
from ..defaults import DEFAULT_RESULT_TTL, WEBHOOK_SHUTDOWN_WAIT
from ..job import Job
from ..jobhash import unreadable_fields
from ..outcome import Outcome, OutcomeKind
from ..security import JobPolicy, restore_sealed, sealed_fields
from ..status import JobStatus, WorkerStatus
from .webhooks import WebhookJob, WebhookSender, status_to_send


def clock(now: datetime | None) -> Callable[[], datetime]:
    """The time a step records: `now` every time when pinned, else the real clock."""
    if now is None:
        return dates.now
    pinned = now
    return lambda: pinned


class Finishing:
    """The claim -> job -> outcome -> Plan -> finish_job path, as the worker's own methods.

    Reads from the worker: connection, name, job_class, serializer, default_result_ttl,
    disable_default_exception_handler, log, the stop flags and the claim/finish calls' connection.
    """

    connection: Redis
    name: str
    log: logging.Logger
    job_class: type[Job]
    serializer: Any
    default_result_ttl: int
    log_job_description: bool
    disable_default_exception_handler: bool
    successful_job_count: int
    failed_job_count: int
    total_working_time: float
    _state: WorkerStatus
    _stop_requested: bool
    _stopped_job_id: str | None
    _in_flight: dict[str, engine.Claim]
    _job_started_monotonic: float | None
    uses_hooks: bool
    _webhook_sender: WebhookSender | None = None  # started with the first webhook to send
    webhook_shutdown_wait: float = WEBHOOK_SHUTDOWN_WAIT  # seconds a stopping worker gives its pending webhooks
    job_policy: JobPolicy | None
    job_observer: Callable[[Job, Outcome], None] | None = None  # told each recorded end (rqfast.metrics)
    runs_jobs_in_process = True  # False: a horse runs the job, and this process never deserializes its payload
    process_through_hooks: Callable[..., engine.Claim]  # JobHooks'
    _log_completed: Callable[[Job], None]  # JobHooks'
    _log_job_ok: Callable[[Job], None]  # JobHooks'
    _log_exception: Callable[..., None]  # JobHooks'
    _engine_connection: Callable[[], Any]  # BaseWorker's
    _ref: Callable[[], engine.WorkerRef]  # BaseWorker's

    def execute(self, job: Job, claim: engine.Claim, now: datetime | None = None) -> Outcome:
        """Run the job and say how it ended (`now`: a pinned time for the times the run records)."""
        raise NotImplementedError

    def process_claim(self, claim: engine.Claim, claim_next: bool = True, now: datetime | None = None) -> engine.Claim:
        """Execute a claimed job and finish it; the answer is the next claim (empty when none)."""
        job_id, queue = claim.job_id or '', claim.queue or ''
        self._in_flight[job_id] = claim
        self._state = WorkerStatus.BUSY
        self._job_started_monotonic = time.monotonic()
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
            self._log_outcome(job, outcome)
        return next_claim

    def _finish(
        self, job: Job, claim: engine.Claim, outcome: Outcome, claim_next: bool, now: datetime | None = None
    ) -> engine.Claim:
        job_id, queue = claim.job_id or '', claim.queue or ''
        stopped = self._stopped_job_id == job_id
        if stopped:
            self._stopped_job_id = None
        plan = self._plan(job, claim, outcome, stopped, clock(now)())
        working = (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0
        try:
            next_claim = self._record(job_id, queue, claim.execution_id, plan, working, claim_next, now)
        finally:
            self._in_flight.pop(job_id, None)
        self._state = WorkerStatus.BUSY if next_claim else WorkerStatus.IDLE
        if not next_claim.recorded:  # fenced off: the job was recovered, or claimed again, meanwhile
            self.log.warning(
                'Worker %s: job %s ended (%s), but this worker no longer owned it (its execution ended: '
                'recovered or claimed again elsewhere); nothing recorded',
                self.name,
                job_id,
                outcome.kind.value,
            )
            return next_claim
        if job.webhooks:
            self._send_webhooks(job, outcome, plan)
        if outcome.kind is OutcomeKind.SUCCESS:
            self.successful_job_count += 1
        else:
            self.failed_job_count += 1
        self.total_working_time += working
        if self.job_observer is not None:  # from what this worker holds: no round trip
            self.job_observer(job, outcome)
        return next_claim

    # --- what an outcome means: engine.plan decides; the worker only adds what it knows (a stop request)

    def _plan(self, job: Job, claim: engine.Claim, outcome: Outcome, stopped: bool, now: datetime) -> engine.Plan:
        if stopped and outcome.kind is OutcomeKind.FAILURE:  # a stop command ended it: its horse was killed
            outcome = Outcome(OutcomeKind.STOPPED, exc_string=outcome.exc_string, exc_info=outcome.exc_info)
        try:
            return self._planned(
                job, claim, outcome, now, self.default_result_ttl, self.disable_default_exception_handler
            )
        except Exception as exc:  # a field that loaded but cannot be used, e.g. retry_intervals "abc"
            unplannable = Outcome(OutcomeKind.POISON, exc_string=outcome.exc_string + self._unplannable(job, exc))
            return self._planned(job, claim, unplannable, now, DEFAULT_RESULT_TTL, False)

    def _planned(
        self, job: Job, claim: engine.Claim, outcome: Outcome, now: datetime, result_ttl: int, disable_handler: bool
    ) -> engine.Plan:
        return engine.plan(
            job,
            outcome,
            now,
            worker_name=self.name,
            execution_id=claim.execution_id,
            started_at=claim.started_at,
            default_result_ttl=result_ttl,
            disable_default_exception_handler=disable_handler,
        )

    def _unplannable(self, job: Job, exc: Exception) -> str:
        fields = ', '.join(
            f'{name}={getattr(job, name)!r}'
            for name in (
                'retries_left',
                'retry_intervals',
                'repeats_left',
                'repeat_intervals',
                'result_ttl',
                'failure_ttl',
            )
        )
        return (
            f'rqfast: the outcome of job {job.id} could not be recorded as its hash asks ({fields}), '
            f'so it failed: {type(exc).__name__}: {exc}\n'
        )

    # --- recording it

    def _record(
        self,
        job_id: str,
        queue: str,
        execution_id: str,
        plan: engine.Plan,
        working: float,
        claim_next: bool,
        now: datetime | None = None,
    ) -> engine.Claim:
        """finish_job, retried with capped backoff while Redis is unreachable: an outcome is never dropped,
        and never recorded twice (a call whose reply was lost is sent again as it was: if it ran, the
        fence holds the second off and its answer is the job the first one claimed)."""
        backoff = Backoff()
        moment = now or dates.now()
        next_execution = uuid.uuid4().hex
        retried = False
        while True:
            try:
                next_claim = engine.finish_job(
                    self._engine_connection(),
                    job_id,
                    queue,
                    execution_id,
                    plan,
                    working,
                    self._ref(),
                    claim_next=claim_next,
                    moment=moment,
                    next_execution=next_execution,
                )
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                delay = backoff.next()
                self.log.error(
                    'Worker %s: could not record job %s: %s; retrying in %.0f s', self.name, job_id, exc, delay
                )
                time.sleep(delay)
                retried = True
                continue
            if retried and not next_claim.recorded and self._recorded_before(job_id, execution_id):
                self.log.info('Worker %s: job %s was recorded by the call whose reply was lost', self.name, job_id)
                next_claim.recorded = True
            return next_claim

    def _recorded_before(self, job_id: str, execution_id: str) -> bool:
        """After a lost reply: whether the job's latest result entry is this execution's (its call ran).
        Only the entry's execution_id is read: nothing is deserialized here."""
        try:
            entries: Any = self.connection.xrevrange(keys.results_key(job_id), count=1)
        except redis.RedisError:
            return False
        return bool(entries) and entries[0][1].get(b'execution_id') == execution_id.encode()

    # --- its webhooks, once its end is recorded: handed to the worker's sending thread (webhooks.py)

    def _send_webhooks(self, job: Job, outcome: Outcome, plan: engine.Plan) -> None:
        status = status_to_send(outcome, plan)
        matching = [webhook for webhook in job.webhooks if webhook.job_status == status]
        if not matching:
            return
        subject = WebhookJob(job.id, self._webhook_func_name(job), job.enqueued_at, job.ended_at)
        exc_string = outcome.exc_string if status is JobStatus.FAILED else None
        if self._webhook_sender is None:
            self._webhook_sender = WebhookSender(self.name)
        for webhook in matching:
            self._webhook_sender.submit(webhook, subject, exc_string)

    def _webhook_func_name(self, job: Job) -> str | None:
        """The function's name for a payload: the job ran in this process (a forking worker's says otherwise)."""
        try:
            func_name = job.func_name
        except Exception:  # its data cannot be read (a poison job)
            return None
        return None if func_name is None else str(func_name)

    def close_webhooks(self) -> None:
        """Send the webhooks still pending, for webhook_shutdown_wait seconds at most (the worker is stopping)."""
        if self._webhook_sender is not None:
            self._webhook_sender.close(self.webhook_shutdown_wait)

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

    def _log_outcome(self, job: Job, outcome: Outcome) -> None:
        """After the fast path's record: RQ's success lines; a failure's error was logged where the job raised."""
        if outcome.kind is OutcomeKind.SUCCESS:
            self._log_completed(job)
            self._log_job_ok(job)
        elif outcome.kind is OutcomeKind.POISON:  # it never started: logged as a job that raised is
            self._log_exception(job, outcome.exc_string)
