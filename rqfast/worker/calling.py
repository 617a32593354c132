"""How the worker calls RQ's hooks: as RQ 2.12 or RQ 3.0 calls them, in RQ's order, by what the override accepts.

RQ applications subclass the worker and override its hooks (to time jobs, close database connections,
report to an error tracker...), and instrumentation patches them on the class (Sentry's RQ integration
wraps perform_job and handle_exception). Without any of that, the runner (runner.py) runs a job the
short way, which is what the defaults would do. When a hook is replaced (a subclass's method, or a
patch on the class or the instance, whatever wraps it: `replaced()` compares with rqfast's own
definitions by identity), every job goes through them, at every concurrency, where RQ calls them:

- execute_job(job, queue), in the worker: the default has the job executed (`execute`: in process,
  or in a horse) and recorded;
- perform_job(job, queue[, execution]), where the job runs (in a forking worker's horse): the default
  runs the job, then calls handle_exception (with the job's status FAILED) and handle_job_failure,
  handle_job_success or handle_job_retry;
- handle_job_success / handle_job_failure / handle_job_retry: the default records the outcome. On the
  loop's path that hands it to the loop (Running.deliver), which records it (at concurrency 1 the
  same call claims the next job) before the hook goes on; in a horse it only hands it to the worker,
  which records it when the horse reports: a horse makes no Redis call of its own, in this path too.

Each is called with the arguments RQ 2.12 or RQ 3.0 passes, by the override's signature (HookCalls),
read when the worker starts, never per job:

- execute_job(job, queue): both;
- perform_job(job, queue) in 2.12, perform_job(job, queue, execution) in 3.0 (positional);
- handle_job_success(job=, queue=, started_job_registry=), 3.0 adding execution= (keywords only);
- handle_job_failure(job=, queue=, started_job_registry=, exc_string=), 3.0 adding execution=; for a
  horse that died, in the worker: handle_job_failure(job, queue=, exc_string=[, execution=]);
- handle_job_retry(job=, queue=, retry=, started_job_registry=, execution=): both.

An override that takes **kwargs gets execution=, as RQ 3.0 gives it; one that names only 2.12's
parameters does not. A hook that raises before its job is recorded fails the job with a record that
names the hook. Called directly (as RQ's tests and some tools do, with a job no worker claimed), the
hooks run and record at once.
"""

from __future__ import annotations

import inspect
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

from .. import dates, engine
from ..defaults import rq2_compat
from ..execution import fail_job, run_job
from ..executions import Execution
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from .context import WorkerContext
from .joblog import JobLog
from .loading import clock
from .recorder import Recorder
from .running import Running
from .stopping import ColdShutdown

# The hooks that send a job through execute_job when one is replaced; the last five run where the job
# runs (a forking worker's horse), through perform_job.
HOOKS = (
    'execute_job',
    'execute',
    'perform_job',
    'handle_job_success',
    'handle_job_failure',
    'handle_job_retry',
    'handle_exception',
)
PERFORM_HOOKS = HOOKS[2:]

_OWN: dict[str, list[Any]] = {}  # rqfast's own definitions of each hook (own_hooks())

_PROBE = object()


def own_hooks(klass: type) -> type:
    """A class decorator: the hooks `klass` defines are rqfast's own (not a replacement; see replaced())."""
    for name in HOOKS:
        if name in vars(klass):
            _OWN.setdefault(name, []).append(vars(klass)[name])
    return klass


def replaced(worker: Any, name: str) -> bool:
    """Whether `name` on this worker is not rqfast's own: a subclass's method, or a patch on the class or
    the instance, be it a plain function, a functools.wraps wrapper or a wrapt proxy (which copy the
    original's name and module, so only identity tells them apart)."""
    if name in vars(worker):
        return True
    for klass in type(worker).__mro__:
        found = vars(klass).get(name)
        if found is not None:
            return not any(found is own for own in _OWN.get(name, ()))
    return False


def accepts(method: Any, *args: Any, **kwargs: Any) -> bool:
    """Whether `method` can be called with these arguments (one with no signature to read: yes)."""
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):  # a C function, a callable without a signature: RQ 3.0's call
        return True
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True


class HookCalls:
    """For each hook of one worker, whether it is called with RQ 3.0's `execution` (see above)."""

    def __init__(self, worker: Any) -> None:
        p = _PROBE
        self.perform = accepts(worker.perform_job, p, p, p)
        self.success = accepts(worker.handle_job_success, job=p, queue=p, started_job_registry=p, execution=p)
        self.failure = accepts(
            worker.handle_job_failure, job=p, queue=p, started_job_registry=p, exc_string='', execution=p
        )
        self.horse_failure = accepts(worker.handle_job_failure, p, queue=p, exc_string='', execution=p)
        self.exception = replaced(worker, 'handle_exception')  # called with the job's exc_info, as RQ does
        self.retry = accepts(worker.handle_job_retry, job=p, queue=p, retry=p, started_job_registry=p, execution=p)


def failed_hook(worker: Any) -> str:
    """The innermost hook in the traceback being handled, as `Class.hook()` ('' if none is in it)."""
    found = ''
    tb = sys.exc_info()[2]
    while tb is not None:
        if tb.tb_frame.f_code.co_name in HOOKS:
            found = tb.tb_frame.f_code.co_name
        tb = tb.tb_next
    return f'{type(worker).__name__}.{found}()' if found else ''


def hook_failure_text(worker: Any, job_id: str, ran: Any) -> str:
    """What a job's record says when a hook raised before it was recorded: which hook, how the job's
    own run had ended, and the traceback (of the exception being handled)."""
    hook = failed_hook(worker) or f"{type(worker).__name__}'s hooks"
    kind = getattr(getattr(ran, 'kind', None), 'value', None)
    if kind is None:
        how = 'before the job ran, or while it ran'
    elif kind == 'failure':
        how = 'after the job raised'
    else:
        how = f'after the job ran ({kind})'
    text = f'rqfast: {hook} raised {how}; the job was recorded failed because of the hook\n'
    text += traceback.format_exc()
    if kind == 'failure' and getattr(ran, 'exc_string', ''):
        text += "\nThe job's own exception:\n" + ran.exc_string
    return text


def _started_registry(queue: Any) -> Any:
    try:
        return queue.started_job_registry
    except Exception:  # a stand-in queue (None, a foreign object): RQ's default ignores it too
        return None


class HookCaller:
    """Calls the worker's hooks as RQ does, and holds the job each thread has in hand (a worker at
    concurrency > 1 runs several at once, one per thread). The worker's hook methods (hooks.py) are
    thin: their defaults call this; it calls the worker's public hooks, never its private parts."""

    def __init__(self, worker: Any, context: WorkerContext, recorder: Recorder, joblog: JobLog) -> None:
        self.worker = worker  # whose hooks it calls (its public extension points)
        self.context = context
        self.recorder = recorder
        self.joblog = joblog
        self.hands = threading.local()  # .running: the job this thread has in hand
        self.is_horse = False
        self.hooked = False  # a hook is replaced: the loop's jobs go through execute_job
        self.performs = False  # perform_job or a handler is replaced: RQ's perform_job runs the job where it runs
        self._calls: HookCalls | None = None
        # after a record by hand: what the runner lets go of the job (its horse may exit); set by the worker
        self.release: Callable[[Running], None] = lambda running: None

    def look(self) -> bool:
        """Whether a hook is replaced (when the worker is made, and when work() starts: a patch since counts)."""
        worker = self.worker
        self.performs = any(replaced(worker, name) for name in PERFORM_HOOKS)
        self.hooked = self.performs or replaced(worker, 'execute_job') or replaced(worker, 'execute')
        self._calls = None
        return self.hooked

    def calls(self) -> HookCalls:
        if self._calls is None:
            self._calls = HookCalls(self.worker)
        return self._calls

    # --- the job in hand

    @property
    def held(self) -> Running | None:
        running: Running | None = getattr(self.hands, 'running', None)
        return running

    def hold(self, running: Running | None) -> None:
        self.hands.running = running

    def for_job(self, job: Job, queue: Any, execution: Any = None, given: bool = False) -> Running:
        """The job this thread has in hand; for a job called in directly (or again, once recorded), one of
        its own, ending `execution`, else (unless `given`: the hooks' RQ 3.0 `execution=`, None meaning
        none) the one prepare_execution made for it, if any."""
        running = self.held
        if running is None or running.claim.job_id != job.id or (running.by_hand and running.recorded is not None):
            name = getattr(queue, 'name', None) or job.origin
            if execution is None and not given:
                execution = self.recorder.local_execution()
            execution_id = execution.id if execution is not None and execution.job_id == job.id else ''
            claim = engine.Claim(job.id, name, execution_id, started_at=job.started_at or dates.now())
            running = Running(claim, job)
            running.by_hand = True
            if execution_id:
                running.execution = execution
            self.hold(running)
        return running

    def for_claim(self, job: Job, claim: engine.Claim, now: Any) -> Running:
        """worker.execute()'s job: the one in hand if it is this claim's, else one of its own (called by hand)."""
        running = self.held
        if running is not None and running.claim is claim:
            return running
        return Running(claim, job, now)

    # --- the loop's path: execute_job (on the thread the job runs from, at any concurrency)

    def run(self, running: Running) -> Outcome | None:
        """execute_job runs the job, and what it records goes through running.deliver. The answer: the
        failure to record when it raised before recording, else None (recorded, or left as it left it).
        A BaseException that is not an Exception (SystemExit...) goes on to the caller."""
        job = running.job
        assert job is not None
        self.hold(running)
        execution = running.execution = self.execution_for(job, running)
        self.recorder.held[execution.id] = execution  # RQ's worker.execution while the job is in hand
        try:
            self.worker.execute_job(job, self.context.queue_named(running.claim.queue or job.origin))
        except Exception:
            if running.recorded is None:
                return self.hook_failed(job, running)
            self.context.log.exception('Worker %s: error after job %s was recorded', self.context.name, job.id)
        finally:
            self.hold(None)
            self.recorder.end_execution(execution)
        return None

    def conclude(self, job: Job, queue: Any, outcome: Outcome, running: Running) -> None:
        """execute_job's tail: record how the job ended, unless RQ's perform_job ran it (its handlers
        recorded it, or chose not to)."""
        if running.recorded is None and not running.performed:
            self.record(job, queue, outcome)
            if outcome.kind is OutcomeKind.SUCCESS:
                self.joblog.job_ok(job)

    # --- perform_job: the job run here, then the hook for how it ended (RQ's order)

    def perform(self, job: Job, queue: Any, execution: Any = None) -> bool:
        """perform_job's default: run the job in this process, then handle_job_success, _failure or _retry."""
        running = self.for_job(job, queue, execution)
        outcome = running.ran = self.run_job(job, running)
        return self.handle_outcome(job, queue, outcome, log=not self.is_horse)

    def run_job(self, job: Job, running: Running) -> Outcome:
        """The job run in this process, under the penalty that works where it runs; its exception
        handlers here unless handle_exception is replaced (then it runs them, as RQ's does)."""
        penalty = running.penalty or self.context.death_penalty_class
        handlers = [] if self.performs and self.calls().exception else self.context.exception_handlers
        timeout, times = self.context.queue_class.DEFAULT_TIMEOUT, clock(running.now)
        try:
            return run_job(job, penalty, handlers, default_timeout=timeout, clock=times)
        except ColdShutdown:  # the worker's own stop: the job is failed with it, and the worker stops
            raise
        except BaseException:  # SystemExit, KeyboardInterrupt, CancelledError... from the job: a failure, as in RQ
            return fail_job(job, sys.exc_info(), penalty, handlers, times)

    def perform_here(self, job: Job, running: Running) -> Outcome:
        """A job executed in this process with perform_job replaced (or a handler): RQ's perform_job runs
        it; its handlers record it (through the loop) or not. How it ran is the answer."""
        running.performed = True
        self.call_perform_job(job, self.context.queue_named(running.claim.queue or job.origin), running)
        if running.recorded is not None:
            return running.recorded
        return running.ran or Outcome(OutcomeKind.FAILURE, exc_string=not_recorded(self.worker, job.id))

    def perform_in_horse(self, job: Job, execution_id: str = '') -> Outcome:
        """A horse with hooks (a forked copy of the worker, or one made in a spawned child): the worker's
        perform_job runs the job, as in RQ's horse. What handle_job_success/failure recorded is the
        horse's report; a perform_job that records nothing fails the job (it would otherwise stay
        started until maintenance found it)."""
        self.is_horse = True
        running = Running(engine.Claim(job.id, job.origin, execution_id, started_at=job.started_at), job)
        self.hold(running)
        execution = running.execution = self.execution_for(job, running)
        self.recorder.held[execution.id] = execution
        try:
            self.call_perform_job(job, self.context.queue_named(job.origin), running)
        except BaseException:
            if running.recorded is not None:
                return running.recorded
            return Outcome(OutcomeKind.FAILURE, exc_string=hook_failure_text(self.worker, job.id, running.ran))
        return running.recorded or Outcome(OutcomeKind.FAILURE, exc_string=not_recorded(self.worker, job.id))

    def call_perform_job(self, job: Job, queue: Any, running: Running) -> bool:
        if self.calls().perform:
            return bool(self.worker.perform_job(job, queue, self.execution_for(job, running)))
        return bool(self.worker.perform_job(job, queue))

    def handle_outcome(self, job: Job, queue: Any, outcome: Outcome, log: bool = True) -> bool:
        """perform_job's tail: the hook for how the job ended; True unless it failed."""
        running = self.for_job(job, queue)
        running.ran = outcome
        calls, worker = self.calls(), self.worker
        registry = _started_registry(queue)
        extra = {'execution': self.execution_for(job, running)}
        if outcome.kind is OutcomeKind.SUCCESS:
            kwargs = extra if calls.success else {}
            worker.handle_job_success(job=job, queue=queue, started_job_registry=registry, **kwargs)
            if log:
                self.joblog.job_ok(job)
            return True
        if outcome.kind is OutcomeKind.RETRY:
            retry = outcome.value
            worker.handle_job_retry(job=job, queue=queue, retry=retry, started_job_registry=registry, **extra)
            return True
        if outcome.kind is OutcomeKind.FAILURE:
            if calls.exception and outcome.exc_info is not None:  # it logs (RQ's default) and runs the handlers
                worker.handle_exception(job, *outcome.exc_info)  # (the job's status is FAILED by now, as in RQ)
            elif log:
                self.joblog.exception(job, outcome.exc_string)
            kwargs = extra if calls.failure else {}
            exc_string = outcome.exc_string
            worker.handle_job_failure(
                job=job, exc_string=exc_string, queue=queue, started_job_registry=registry, **kwargs
            )
            return False
        self.record(job, queue, outcome)  # (stopped, poison: no hook of RQ's)
        return True

    def call_failure_in_worker(self, job: Job, queue: Any, exc_string: str) -> None:
        """handle_job_failure for a horse that ended without reporting, as RQ's worker calls it."""
        running = self.for_job(job, queue)
        if self.calls().horse_failure:
            execution = self.execution_for(job, running)
            self.worker.handle_job_failure(job, queue=queue, exc_string=exc_string, execution=execution)
        else:
            self.worker.handle_job_failure(job, queue=queue, exc_string=exc_string)

    # --- recording (handle_job_success & co.'s default)

    def record(self, job: Job, queue: Any, outcome: Outcome, execution: Any = None) -> None:
        """Record how the job ended: through the loop when it holds the job, at once when called by hand,
        not at all in a horse (its worker records what it reports)."""
        # handle_job_*(execution=None) by hand: RQ 3.0 ends no execution, RQ 2.12 the worker's
        running = self.for_job(job, queue, execution, given=not rq2_compat())
        running.recorded = outcome
        if self.is_horse:
            return
        if running.deliver is not None:  # the loop records it (with the others of the moment, at concurrency > 1)
            if running.deliver(outcome) and outcome.kind is OutcomeKind.SUCCESS:
                self.joblog.completed(job)
            return
        try:
            self.recorder.record(running, outcome, claim_next=False, now=running.now, log=False)
        finally:
            self.release(running)
        self.recorder.held.pop(running.claim.execution_id, None)  # ended (RQ's cleanup_execution)
        if outcome.kind is OutcomeKind.SUCCESS:
            self.joblog.completed(job)

    def handled_value(self, job: Job) -> Any:
        """What handle_job_success records as the result: the value of the job's own run, if it ran here."""
        running = self.held
        ran = running.ran if running is not None and running.claim.job_id == job.id else None
        return ran.value if ran is not None and ran.kind is OutcomeKind.SUCCESS else None

    # --- their arguments

    def execution_for(self, job: Job, running: Running) -> Execution:
        """The job's current execution (rqfast's Execution), as RQ 3.0's hooks get it."""
        if running.execution is None:
            claim = running.claim
            current = self.recorder.local_execution()
            if current is not None and current.job_id == job.id and current.id == claim.execution_id:
                running.execution = current
            else:
                running.execution = Execution(claim.execution_id, job.id, self.context.connection, self.context.name)
                if claim.started_at is not None:
                    running.execution.created_at = running.execution.last_heartbeat = claim.started_at
        return running.execution

    def hook_failed(self, job: Job, running: Running) -> Outcome:
        """The exception being handled came from a hook (or the code calling it) before the job was
        recorded: logged with its traceback, as RQ logs a failing job; the job fails, saying so."""
        exc_string = hook_failure_text(self.worker, job.id, running.ran)
        context = self.context
        context.log.error('Worker %s: job %s: %s', context.name, job.id, exc_string, extra={'job_id': job.id})
        return Outcome(OutcomeKind.FAILURE, exc_string=exc_string)


def not_recorded(worker: Any, job_id: str) -> str:
    return f'rqfast: {type(worker).__name__}.perform_job() returned without recording how job {job_id} ended\n'
