"""The worker's recorder: what the worker holds and how it tells Redis, at any concurrency.

One object owns the worker's side of the engine: its claims (claim_job calls, the blocking wait for a
job), the jobs it holds in flight (what the heartbeat keeps alive) and their executions, its state
(idle, busy...), and the record of each end: the Plan an outcome writes (engine.plan, with its fallback
for a hash that cannot be planned), the finish call retried with capped backoff while Redis is
unreachable (finish_job for one job and its next claim, finish_jobs for several; an outcome is never
dropped, and never recorded twice), and what follows a recorded end: the counters, the webhooks (to
webhooks.py's sending thread), the job observer and RQ's log lines. A fenced-off end (the job was
recovered or claimed again meanwhile) records nothing, and is logged the same way whatever the
concurrency. It is the only writer of the jobs in flight and of the worker's state: the loop, the
runners and the worker's own methods call it.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import Any

import redis

from .. import cluster, dates, engine, keys, scripts
from ..backoff import Backoff
from ..connections import has_sockets
from ..defaults import DEFAULT_RESULT_TTL
from ..executions import Execution
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from ..security import is_sealed
from ..status import JobStatus, WorkerStatus
from . import keyspaces
from .context import WorkerContext
from .joblog import JobLog
from .order import QueueOrder
from .running import Done, Running
from .waiting import REDIS_LOST, Waiter, full_message, log_dropped
from .webhooks import WebhookJob, WebhookSender, status_to_send
from .workerhash import WorkerHash

PLANNED_FIELDS = ('retries_left', 'retry_intervals', 'repeats_left', 'repeat_intervals', 'result_ttl', 'failure_ttl')


class Recorder:
    """The jobs a worker claims and holds in flight, its state, and the record of each end."""

    def __init__(self, context: WorkerContext, worker_hash: WorkerHash, order: QueueOrder, joblog: JobLog) -> None:
        self.context = context
        self.hash = worker_hash
        self.order = order
        self.joblog = joblog
        self.in_flight: dict[str, engine.Claim] = {}  # by job id: the heartbeat keeps these alive
        self.held: dict[str, Execution] = {}  # executions made by hand (RQ's prepare_execution, worker.execution)
        self.state: WorkerStatus | str = WorkerStatus.STARTED  # ('?' read back from a hash without one)
        self.webhooks: WebhookSender | None = None  # started with the first webhook to send
        self.busy_since: float | None = None  # monotonic: since when a job has been in hand (the heartbeat's)
        self._line: Any = None  # the claim and finish calls' own connection (line())
        self._waiter: Waiter | None = None
        self._full_since: float | None = None  # monotonic: since when a finish has been refused by a full Redis

    # --- the state and the jobs held

    def set_state(self, state: WorkerStatus | str, write: bool = True) -> None:
        """The worker's state; written into its hash unless not `write` (a state read back from it, '?' for
        a hash without one)."""
        self.state = state
        if write:
            self.hash.write_state(WorkerStatus(state))

    def hold(self, claim: engine.Claim, busy: bool = True) -> None:
        """A claimed job is the worker's to run (and to keep alive) until its end is recorded; the worker is
        busy (unless not `busy`: RQ's by-hand steps leave that to prepare_execution)."""
        self.in_flight[claim.job_id or ''] = claim
        self.order.claimed_from(claim.queue or '')  # (round robin: the next claim starts after its queue)
        if busy:
            self.state = WorkerStatus.BUSY
            if self.busy_since is None:
                self.busy_since = time.monotonic()

    def idle(self) -> None:
        """Nothing in flight, nothing claimed: the worker is idle."""
        self.state = WorkerStatus.IDLE
        self.busy_since = None

    def release(self, job_id: str) -> bool:
        """No longer held (recorded, or left as a hook left it); False if it was not."""
        return self.in_flight.pop(job_id, None) is not None

    def local_execution(self) -> Execution | None:
        """The worker's execution as this process knows it (one made by hand first), without reading Redis."""
        if self.held:
            return next(iter(self.held.values()))
        for claim in list(self.in_flight.values()):
            if claim.execution_id:
                return Execution(claim.execution_id, claim.job_id or '', self.context.connection, self.context.name)
        return None

    def end_execution(self, execution: Execution | None) -> None:
        """The execution ended: no longer one of this worker's."""
        if execution is not None:
            self.held.pop(execution.id, None)

    # --- claiming

    def line(self) -> Any:
        """The claim/finish calls' own connection, held rather than taken from the pool per call (the pool
        polls a connection for pending data every time it hands one out) and fed pre-packed commands."""
        if self._line is None:
            connection = self.context.connection
            real = has_sockets(connection) and not cluster.is_cluster(connection)
            # fakeredis: its own client, no sockets for packed commands; a RedisCluster follows MOVED itself
            self._line = scripts.DirectLine(connection) if real else connection
        return self._line

    def ref(self) -> engine.WorkerRef:
        """The worker as the scripts name it: its name, its queues in claim order, its TTLs."""
        context = self.context
        interval, grace = context.job_monitoring_interval, context.heartbeat_grace
        return engine.WorkerRef(context.name, self.order.next(), interval, context.worker_ttl + 60, grace)

    def claim(
        self, moved: tuple[str, str] | None = None, now: datetime | None = None, execution_id: str = ''
    ) -> engine.Claim:
        """One claim script call (of the job a blocking wait moved, if any); never blocks. `execution_id`:
        that of a claim whose reply was lost (see engine.claim_job). The claim is not held yet (hold())."""
        claim = keyspaces.claim_job(self.line(), self.ref(), moved, now, execution_id)
        log_dropped(self.context.log, self.context.name, claim)
        return claim

    def waiter(self) -> Waiter:
        """The blocking wait for a job on the worker's queues (in their claim order)."""
        if self._waiter is None or self._waiter.queues != self.order.names:
            if self._waiter is not None:
                self._waiter.close()
            self._waiter = Waiter(self.context.connection, list(self.order.names), self.context.dequeue_timeout)
        return self._waiter

    # --- what an outcome means: engine.plan decides; the worker only adds what it knows (a stop request)

    def plan(self, job: Job, claim: engine.Claim, outcome: Outcome, stopped: bool, now: datetime) -> engine.Plan:
        context = self.context
        if stopped and outcome.kind is OutcomeKind.FAILURE:  # a stop command ended it: its horse was killed
            outcome = Outcome(OutcomeKind.STOPPED, exc_string=outcome.exc_string, exc_info=outcome.exc_info)
        try:
            ttl, disable = context.default_result_ttl, context.disable_default_exception_handler
            return self._planned(job, claim, outcome, now, ttl, disable)
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
            worker_name=self.context.name,
            execution_id=claim.execution_id,
            started_at=claim.started_at,
            default_result_ttl=result_ttl,
            disable_default_exception_handler=disable_handler,
        )

    # --- recording: one entry, finish(), for one job or several (and as many claims)

    def done(self, running: Running, outcome: Outcome, now: datetime | None = None, pack: bool = False) -> Done:
        """How the job ended and what records it: its Plan and the outcome as finish() takes it (`pack`:
        its finish_jobs arguments made now, where the job ran, off the loop's thread)."""
        job, claim = running.job, running.claim
        assert job is not None
        plan = self.plan(job, claim, outcome, running.stopped, now or dates.now())
        working, queue = working_time(job), claim.queue or ''
        if pack:
            interval = self.context.job_monitoring_interval
            return Done(outcome, plan, engine.ended(job.id, queue, claim.execution_id, plan, working, interval))
        return Done(outcome, plan, engine.Ended(job.id, queue, claim.execution_id, plan, working))

    def finish(
        self, ended: list[engine.Ended], claim: int, still_running: str = '', now: datetime | None = None
    ) -> engine.Batch:
        """Record how these jobs ended and claim up to `claim` jobs, in one call; the recorded jobs are no
        longer held. One job, at most one claim and nothing else in flight (a worker at concurrency 1):
        finish_job, its fast path; else finish_jobs (`still_running`: a job of the worker that runs on).
        Retried while Redis is unreachable, sent again as it was: never recorded twice, and the jobs a
        call whose reply was lost claimed are its answer (never left started with no one running them).
        Accounting is the caller's (account(), per job)."""
        for done in ended:
            self.release(done.job_id)
        if len(ended) == 1 and claim <= 1 and not still_running:
            one = ended[0]
            found = self._finish_job(
                one.job_id, one.queue, one.execution_id, one.plan, one.working_time, claim == 1, now
            )
            claims = [found] if found else []
            batch = engine.Batch([found.recorded], claims, found.dropped, found.suspended, found.dead_lettered)
            batch.plain = found.plain
            return batch
        still = self.in_flight.get(still_running)
        backoff = Backoff()
        worker = self.ref()
        moment = now or dates.now()
        execution_ids = keyspaces.claim_execution_ids(worker.queues, claim)
        resent = False
        while True:
            try:
                batch = keyspaces.finish_jobs(
                    self.line(),
                    worker,
                    ended,
                    claim,
                    still_running=still_running,
                    moment=moment,
                    still_queue=still.queue if still is not None else None,
                    execution_ids=execution_ids,
                    resent=resent,
                )
            except REDIS_LOST as exc:
                self._retrying(f'{len(ended)} job(s)', exc, backoff)
                resent = True
                continue
            self._recovered(f'{len(ended)} job(s)')
            if resent:  # (an outcome the lost call recorded is fenced off now: it was recorded)
                for index, done in enumerate(ended):
                    if not batch.recorded[index] and self._recorded_before(done.job_id, done.execution_id):
                        batch.recorded[index] = True
            return batch

    def record(
        self, running: Running, outcome: Outcome, claim_next: bool, now: datetime | None = None, log: bool = True
    ) -> engine.Claim:
        """One job's end (finish(), claiming the next unless not claim_next); then the counters, webhooks
        and (with `log`) RQ's lines of a recorded end. The answer is the next claim (empty when none)."""
        job, claim = running.job, running.claim
        assert job is not None
        plan = self.plan(job, claim, outcome, running.stopped, now or dates.now())
        working = working_time(job)
        ended = engine.Ended(job.id, claim.queue or '', claim.execution_id, plan, working)
        batch = self.finish([ended], int(claim_next), '', now)
        if batch.claims:
            found = batch.claims[0]
            self.state = WorkerStatus.BUSY
        else:  # (none claimed: what the call saw instead)
            found = engine.Claim(
                dropped=batch.dropped, suspended=batch.suspended, dead_lettered=batch.dead_lettered, plain=batch.plain
            )
            self.state = WorkerStatus.IDLE
        found.recorded = batch.recorded[0]
        self.account(running, outcome, plan, found.recorded, log=log, working=working)
        return found

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
        next_execution = engine.new_execution_id()
        retried = False
        while True:
            try:
                next_claim = keyspaces.finish_job(
                    self.line(),
                    job_id,
                    queue,
                    execution_id,
                    plan,
                    working,
                    self.ref(),
                    claim_next=claim_next,
                    moment=moment,
                    next_execution=next_execution,
                )
            except REDIS_LOST as exc:
                self._retrying(f'job {job_id}', exc, backoff)
                retried = True
                continue
            self._recovered(f'job {job_id}')
            if retried and not next_claim.recorded and self._recorded_before(job_id, execution_id):
                self.context.log.info(
                    'Worker %s: job %s was recorded by the call whose reply was lost', self.context.name, job_id
                )
                next_claim.recorded = True
            return next_claim

    def _retrying(self, what: str, exc: Exception, backoff: Backoff) -> None:
        full = full_message(exc, backoff)
        delay = backoff.next()
        log, name = self.context.log, self.context.name
        if full is None:
            log.error('Worker %s: could not record %s: %s; retrying in %.0f s', name, what, exc, delay)
        else:  # (once per refused finish, then at DEBUG; _recovered says when it went through)
            log.log(full[0], 'Worker %s: could not record %s: %s', name, what, full[1])
            self._full_since = self._full_since or time.monotonic()
        time.sleep(delay)

    def _recovered(self, what: str) -> None:
        """A finish went through after Redis was full: said once."""
        if self._full_since is not None:
            waited, self._full_since = time.monotonic() - self._full_since, None
            self.context.log.warning(
                'Worker %s: recorded %s once Redis had room again (full for %.1f s)', self.context.name, what, waited
            )

    def _recorded_before(self, job_id: str, execution_id: str) -> bool:
        """After a lost reply: whether the job's latest result entry is this execution's (its call ran).
        Only the entry's execution_id is read: nothing is deserialized here."""
        try:
            entries: Any = self.context.connection.xrevrange(keys.results_key(job_id), count=1)
        except redis.RedisError:
            return False
        return bool(entries) and entries[0][1].get(b'execution_id') == execution_id.encode()

    # --- what follows a recorded end

    def account(
        self,
        running: Running,
        outcome: Outcome,
        plan: engine.Plan,
        recorded: bool,
        log: bool,
        working: float | None = None,
    ) -> None:
        """After the call: the counters, webhooks and observer of a recorded end (and, with `log`, RQ's
        lines for it); a fenced-off end is only logged. (`working`: its working time, when the caller has it.)"""
        context, job = self.context, running.job
        assert job is not None
        if not recorded:  # fenced off: the job was recovered, or claimed again, meanwhile
            context.log.warning(
                'Worker %s: job %s ended (%s), but this worker no longer owned it (its execution ended: '
                'recovered or claimed again elsewhere); nothing recorded',
                context.name,
                job.id,
                outcome.kind.value,
            )
            return
        if job.webhooks:
            self.send_webhooks(running, outcome, plan)
        context.tally(outcome, working_time(job) if working is None else working)
        observer = context.job_observer
        if observer is not None:  # from what this worker holds: no round trip
            observer(job, outcome)
        if log and (outcome.kind is not OutcomeKind.SUCCESS or context.log.isEnabledFor(logging.INFO)):
            self.log_outcome(job, outcome)  # (a success logs INFO lines only)

    def log_outcome(self, job: Job, outcome: Outcome) -> None:
        """RQ's success lines; a failure's error was logged where the job raised."""
        if outcome.kind is OutcomeKind.SUCCESS:
            self.joblog.completed(job)
            self.joblog.job_ok(job)
        elif outcome.kind is OutcomeKind.POISON:  # it never started: logged as a job that raised is
            self.joblog.exception(job, outcome.exc_string)

    def send_webhooks(self, running: Running, outcome: Outcome, plan: engine.Plan) -> None:
        """Its webhooks, handed to the worker's sending thread (webhooks.py)."""
        job = running.job
        assert job is not None
        status = status_to_send(outcome, plan)
        matching = [webhook for webhook in job.webhooks if webhook.job_status == status]
        if not matching:
            return
        subject = WebhookJob(job.id, function_name(running), job.enqueued_at, job.ended_at)
        exc_string = outcome.exc_string if status is JobStatus.FAILED else None
        if self.webhooks is None:
            self.webhooks = WebhookSender(self.context.name)
        for webhook in matching:
            self.webhooks.submit(webhook, subject, exc_string)

    def close(self, wait: float) -> None:
        """The worker stops: its wait's and calls' connections go back, and its pending webhooks are sent
        for `wait` seconds at most."""
        if self._waiter is not None:
            self._waiter.close()
            self._waiter = None
        if self._line is not None and self._line is not self.context.connection:
            self._line.close()  # gives its connection back to the pool
        self._line = None
        self.close_webhooks(wait)

    def close_webhooks(self, wait: float) -> None:
        if self.webhooks is not None:
            self.webhooks.close(wait)


def function_name(running: Running) -> str | None:
    """The job's function for its webhooks' payload: its horse's word for it, or its own when it was loaded here."""
    job = running.job
    if running.func_name is not None or job is None or is_sealed(job):
        return running.func_name  # (a sealed job's data is never read in the worker)
    try:
        func_name = job.func_name
    except Exception:  # its data cannot be read (a poison job)
        return None
    return None if func_name is None else str(func_name)


def working_time(job: Job) -> float:
    return (job.ended_at - job.started_at).total_seconds() if job.ended_at and job.started_at else 0.0


def unplannable_text(job: Job, exc: Exception) -> str:
    fields = ', '.join(f'{name}={getattr(job, name)!r}' for name in PLANNED_FIELDS)
    return (
        f'rqfast: the outcome of job {job.id} could not be recorded as its hash asks ({fields}), '
        f'so it failed: {type(exc).__name__}: {exc}\n'
    )
