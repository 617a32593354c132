"""RQ's extension points on the worker: execute_job, perform_job, handle_job_success, handle_job_failure,
handle_job_retry, handle_exception.

RQ applications subclass the worker and override these (to time jobs, close database connections,
report to an error tracker...). rqfast's loop does not need them: its finisher (finishing.py) executes a job and
records it with one finish_job call that also claims the next job. So the loop goes through them
only when a subclass, or a patch on the worker, replaces one (`uses_hooks`, looked at when the
worker is made and when work() starts); then they are called where RQ calls them:

- execute_job(job, queue), in the worker: the default runs the job (in process, or in a horse) and
  records how it ended;
- perform_job(job, queue[, execution]), where the job runs (in a forking worker's horse): the
  default runs the job, then calls handle_job_success, handle_job_failure or handle_job_retry;
- handle_job_success / handle_job_failure / handle_job_retry: the default records the outcome (one
  finish_job call, claiming nothing). In a horse they only hand the outcome to the worker, which
  records it when the horse reports: a horse makes no Redis call of its own, in this path too.

Each is called with the arguments RQ 2.12 or RQ 3.0 passes, by the override's signature (calling.py).
A hook that raises before its job is recorded fails the job with a record that names the hook, and
the worker logs it with its traceback.

Called directly (as RQ's tests and some tools do, with a job no worker claimed), they run and record
at once. With hooks, the next job is claimed by its own call: one more round trip per job.

A SimpleWorker at concurrency > 1 calls execute_job on each job's thread (steps.py): the job
in hand is the thread's own, and recording hands the outcome to the worker's loop, which records it
with the others that ended meanwhile; the hook goes on once it is recorded, as at concurrency 1.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .. import engine
from ..defaults import rq2_compat
from ..execution import fail_job, run_exception_handlers, run_job
from ..imports import import_attribute
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from ..security import is_sealed
from ..status import WorkerStatus
from .calling import HOOKS, HookCalling, HookCalls, JobInHand, hook_failure_text, replaced
from .finishing import clock
from .signals import ColdShutdown


def handler_list(handlers: Any) -> list[Any]:
    """A worker's exception_handlers argument as a list: one handler (RQ takes that too), a list, or None."""
    if handlers is None:
        return []
    return list(handlers) if isinstance(handlers, list | tuple) else [handlers]


class JobHooks(HookCalling):
    """RQ's extension points as the worker's methods (defaults: what the loop does without them)."""

    log_result_lifespan = True
    _hands: threading.local | None = None  # the job in hand, per thread (a worker at concurrency > 1 has several)
    _is_horse = False
    uses_hooks = False

    def push_exc_handler(self, handler: Callable[..., Any] | str) -> None:
        self._exc_handlers.append(import_attribute(handler) if isinstance(handler, str) else handler)

    def pop_exc_handler(self) -> Callable[..., Any]:
        return self._exc_handlers.pop()

    @property
    def _in_hand(self) -> JobInHand | None:
        hands = self._hands
        return None if hands is None else getattr(hands, 'job', None)

    @_in_hand.setter
    def _in_hand(self, in_hand: JobInHand | None) -> None:
        if self._hands is None:  # (a worker made without BaseWorker.__init__)
            self._hands = threading.local()
        self._hands.job = in_hand

    def look_for_hooks(self) -> None:
        self.uses_hooks = any(replaced(self, name) for name in HOOKS)
        self._calls = HookCalls(self)

    @property
    def is_horse(self) -> bool:
        return self._is_horse

    # --- RQ's extension points

    def execute_job(self, job: Job, queue: Any) -> None:
        """Run the job and record how it ended (a forking worker runs it in a horse)."""
        in_hand = self._in_hand_for(job, queue)
        outcome = self.execute(job, in_hand.claim, in_hand.now)
        self._record_outcome(job, queue, outcome)
        if outcome.kind is OutcomeKind.SUCCESS:
            self._log_job_ok(job)

    def perform_job(self, job: Job, queue: Any, execution: Any = None) -> bool:
        """Run the job in this process, then handle_job_success, _failure or _retry; True unless it failed."""
        in_hand = self._in_hand_for(job, queue, execution)
        outcome = in_hand.ran = self._run(job, in_hand.now, in_hand.penalty)
        return self._handle_outcome(job, queue, outcome, log=not self._is_horse)

    def handle_job_success(self, job: Job, queue: Any, started_job_registry: Any = None, execution: Any = None) -> None:
        """Record the job as finished (its result, dependents, counters), or hand it to the worker from a horse."""
        ran = self._in_hand.ran if self._in_hand is not None else None
        value = ran.value if ran is not None and ran.kind is OutcomeKind.SUCCESS else None
        self._record_outcome(job, queue, Outcome(OutcomeKind.SUCCESS, value), execution)

    def handle_job_failure(
        self, job: Job, queue: Any, started_job_registry: Any = None, exc_string: str = '', execution: Any = None
    ) -> None:
        """Record the job as failed (retried while it has retries left), or hand it to the worker from a horse."""
        self._record_outcome(job, queue, Outcome(OutcomeKind.FAILURE, exc_string=exc_string), execution)

    def handle_job_retry(
        self, job: Job, queue: Any, retry: Any, started_job_registry: Any = None, execution: Any = None
    ) -> None:
        """A job that returned a Retry: run again (requeued or scheduled), or failed once retry.max is reached."""
        self._record_outcome(job, queue, Outcome(OutcomeKind.RETRY, retry), execution)

    def handle_exception(self, job: Job, *exc_info: Any) -> None:
        """Log the job's exception and walk the exception handlers (rqfast's run does both itself, unless a
        subclass overrides this: then perform_job calls it, as RQ's does). A horse leaves the log to its worker."""
        if not self._is_horse:
            self._log_exception(job, ''.join(traceback.format_exception(*exc_info)))
        run_exception_handlers(job, exc_info, self._exc_handlers)

    def dequeue_job_and_maintain_ttl(self, timeout: int | None, max_idle_time: int | None = None) -> Any:
        """Claim one job, waiting up to `timeout` seconds (None: not at all): (job, queue), or None.

        RQ's step-by-step API: perform_job or execute_job then records the claimed job's execution.
        """
        deadline = time.monotonic() + min(timeout, max_idle_time or timeout) if timeout else None
        moved = None
        while True:
            claim = self._claim(moved)
            if claim:
                break
            left = deadline - time.monotonic() if deadline is not None else 0
            if left <= 0:
                return None
            moved = self._waiter_for().wait(max(1, int(left + 0.999)))
        self._in_flight[claim.job_id or ''] = claim
        job, poison = self._finisher.load(claim, in_process=True)  # the caller performs it here
        if poison is not None:
            self._finish(job, claim, poison, False)
            return None
        self._finisher.log_start(job, claim.queue or '')
        self._in_hand = JobInHand(claim)
        return job, self._queue_named(claim.queue or job.origin)

    # --- how they run

    def _run(self, job: Job, now: datetime | None, penalty: Any = None) -> Outcome:
        timeout = self.queue_class.DEFAULT_TIMEOUT
        penalty = penalty or self.death_penalty_class
        handlers = [] if self._hook_calls().exception else self._exc_handlers  # (else handle_exception runs them)
        try:
            return run_job(job, penalty, handlers, default_timeout=timeout, clock=clock(now))
        except ColdShutdown:  # the worker's own stop: the job is failed with it, and the worker stops
            raise
        except BaseException:  # SystemExit, KeyboardInterrupt, CancelledError... from the job: a failure, as in RQ
            return fail_job(job, sys.exc_info(), penalty, handlers, clock(now))

    def _in_hand_for(self, job: Job, queue: Any, execution: Any = None, given: bool = False) -> JobInHand:
        """The claim being run; for a job called in directly (or again, once recorded), one of its own,
        ending `execution`, else (unless `given`: the hooks' RQ 3.0 `execution=`, None meaning none)
        the one prepare_execution made for it, if any."""
        in_hand = self._in_hand
        if in_hand is None or in_hand.claim.job_id != job.id or (in_hand.by_hand and in_hand.recorded is not None):
            name = getattr(queue, 'name', None) or job.origin
            if execution is None and not given:
                execution = self._local_execution()
            execution_id = execution.id if execution is not None and execution.job_id == job.id else ''
            started_at = job.started_at or clock(None)()
            claim = engine.Claim(job.id, name, execution_id, started_at=started_at)
            in_hand = self._in_hand = JobInHand(claim, by_hand=True)
            if execution_id:
                in_hand.execution = execution
        return in_hand

    def _record_outcome(self, job: Job, queue: Any, outcome: Outcome, execution: Any = None) -> None:
        # handle_job_*(execution=None) by hand: RQ 3.0 ends no execution, RQ 2.12 the worker's
        in_hand = self._in_hand_for(job, queue, execution, given=not rq2_compat())
        in_hand.recorded = outcome
        if self._is_horse:
            return  # the worker records what the horse reports
        if in_hand.deliver is not None:  # a job thread at concurrency > 1: the loop records it
            if in_hand.deliver(outcome) and outcome.kind is OutcomeKind.SUCCESS:
                self._log_completed(job)
            return
        self._finish(job, in_hand.claim, outcome, False, in_hand.now)
        self._held_executions().pop(in_hand.claim.execution_id, None)  # ended (RQ's cleanup_execution)
        if outcome.kind is OutcomeKind.SUCCESS:
            self._log_completed(job)

    def process_through_hooks(self, job: Job, claim: engine.Claim, now: datetime | None) -> engine.Claim:
        """The loop's step for a worker with hooks: execute_job, then claim the next job by itself.

        A job execute_job did not record (an override that does not call RQ's default) is left as
        the override left it, started, until maintenance finds it abandoned.
        """
        in_hand = self._in_hand = JobInHand(claim, now)
        self.execution = self._execution_for(job, in_hand)  # RQ's worker.execution while the job is in hand
        try:
            self.execute_job(job, self._queue_named(claim.queue or job.origin))
        except BaseException:
            if in_hand.recorded is None:
                self._finish(job, claim, self._hook_failed(job, in_hand), False, now)
            elif isinstance(sys.exc_info()[1], Exception):
                self.log.exception('Worker %s: error after job %s was recorded', self.name, job.id)
            if not isinstance(sys.exc_info()[1], Exception):
                raise
        finally:
            self._in_hand = None
            self._end_execution(in_hand.execution)
            if self._in_flight.pop(job.id, None) is not None:  # not recorded: no longer this worker's to keep alive
                self._state = WorkerStatus.IDLE
        return engine.Claim()

    def _queue_named(self, name: str) -> Any:
        for queue in self.queues:
            if queue.name == name:
                return queue
        return self.queue_class(name, connection=self.connection)

    # --- RQ's log lines

    def _log_completed(self, job: Job) -> None:
        taken = job.ended_at - job.started_at if job.ended_at and job.started_at else None
        if self.log_job_description:
            self.log.info('Successfully completed %s job in %ss on worker %s', job.description, taken, self.name)
        else:
            self.log.info('Successfully completed job %s in %ss on worker %s', job.id, taken, self.name)

    def _log_job_ok(self, job: Job) -> None:
        self.log.info('Worker %s: %s: %s (%s)', self.name, job.origin, 'Job OK', job.id)
        if self.log_result_lifespan:
            result_ttl = job.get_result_ttl(self.default_result_ttl)
            if result_ttl == 0:
                self.log.info('Worker %s: job %s result discarded immediately', self.name, job.id)
            elif result_ttl > 0:
                self.log.info('Worker %s: job %s result is kept for %s seconds', self.name, job.id, result_ttl)
            else:
                self.log.info(
                    'Worker %s: job %s result will never expire, clean up result key manually', self.name, job.id
                )

    def _log_exception(self, job: Job, exc_string: str, func_name: str = '') -> None:
        """RQ's error line; `func_name`: the horse's word for it (a worker process never deserializes the call)."""
        extra: dict[str, Any] = {'func': func_name}
        try:
            if not is_sealed(job):
                func_name = job.func_name
                extra = {'func': func_name, 'arguments': job.args, 'kwargs': job.kwargs}
        except Exception:  # a job whose data cannot be read
            func_name, extra = '<DeserializationError>', {}
        func_name = func_name or '<not loaded in the worker>'
        extra.update({'queue': job.origin, 'job_id': job.id})
        self.log.error(
            'Worker %s: job %s: exception raised while executing (%s)\n%s',
            self.name,
            job.id,
            func_name,
            exc_string,
            extra=extra,
        )


def perform_in_horse(worker: JobHooks, job: Job, execution_id: str = '') -> Outcome:
    """A forking worker's horse with hooks: the worker's perform_job runs the job, as in RQ's horse.

    What handle_job_success/failure recorded is the horse's report; perform_job that records
    nothing fails the job (it would otherwise stay started until maintenance found it).
    """
    worker._is_horse = True
    claim = engine.Claim(job.id, job.origin, execution_id, started_at=job.started_at)
    in_hand = worker._in_hand = JobInHand(claim)
    worker.execution = worker._execution_for(job, in_hand)
    try:
        worker._call_perform_job(job, worker._queue_named(job.origin))
    except BaseException:
        if in_hand.recorded is not None:
            return in_hand.recorded
        return Outcome(OutcomeKind.FAILURE, exc_string=hook_failure_text(worker, job.id, in_hand.ran))
    if in_hand.recorded is None:
        reason = f'rqfast: {type(worker).__name__}.perform_job() returned without recording how job {job.id} ended\n'
        return Outcome(OutcomeKind.FAILURE, exc_string=reason)
    return in_hand.recorded


def execute_on_thread(
    worker: JobHooks, job: Job, claim: engine.Claim, penalty: Any, deliver: Callable[[Outcome], bool]
) -> tuple[Outcome | None, bool]:
    """A worker at concurrency > 1 with hooks, on the job's thread: execute_job runs the job, and what
    it records goes to the worker's loop through `deliver` (which returns once it is recorded).

    The answer: the Outcome for the loop to record when execute_job raised before recording (else
    None), and whether anything was recorded: an override that records nothing leaves the job as it
    left it, started, as at concurrency 1.
    """
    in_hand = worker._in_hand = JobInHand(claim, penalty=penalty, deliver=deliver)
    try:
        worker.execute_job(job, worker._queue_named(claim.queue or job.origin))
    except BaseException:  # (on a thread, a SystemExit from the hook cannot stop the worker: it fails the job)
        if in_hand.recorded is None:
            return worker._hook_failed(job, in_hand), True
        worker.log.exception('Worker %s: error after job %s was recorded', worker.name, job.id)
    finally:
        worker._in_hand = None
    return None, in_hand.recorded is not None
