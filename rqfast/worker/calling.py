"""How the worker calls RQ's hooks: as RQ 2.12 or RQ 3.0 calls them, by what the override accepts.

The two RQ versions call the same hooks with different arguments:

- execute_job(job, queue): both;
- perform_job(job, queue) in 2.12, perform_job(job, queue, execution) in 3.0 (positional);
- handle_job_success(job=, queue=, started_job_registry=), 3.0 adding execution= (keywords only);
- handle_job_failure(job=, queue=, started_job_registry=, exc_string=), 3.0 adding execution=; for a
  horse that died, in the worker: handle_job_failure(job, queue=, exc_string=[, execution=]);
- handle_job_retry(job=, queue=, retry=, started_job_registry=, execution=): both.

An override written for either keeps working: whether each hook takes `execution` is read from its
signature once, when the worker is made and when work() starts (HookCalls), never per job. An
override that takes **kwargs gets execution=, as RQ 3.0 gives it; one that names only 2.12's
parameters does not.
"""

from __future__ import annotations

import inspect
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from .. import engine
from ..executions import Execution
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from .declared import WorkerAttributes

HOOKS = (
    'execute_job',
    'perform_job',
    'handle_job_success',
    'handle_job_failure',
    'handle_job_retry',
    'handle_exception',
)
_RQFAST_WORKER = __name__.rpartition('.')[0]

_PROBE = object()


@dataclass
class JobInHand:
    """The job the hooks are running: its claim, the pinned time, and what ended it once recorded."""

    claim: engine.Claim
    now: datetime | None = None
    ran: Outcome | None = None  # what perform_job's run ended with (handle_job_success records its value)
    recorded: Outcome | None = None
    # On a job thread of a worker at concurrency > 1 (steps.py): the death penalty that works
    # there, and how an outcome goes to the worker's loop, which records it (True once recorded)
    penalty: Any = None
    deliver: Callable[[Outcome], bool] | None = None
    execution: Execution | None = None  # what RQ 3.0's hooks get as `execution` (made when first asked for)
    by_hand: bool = False  # made for a hook called directly, not by the worker's loop


def replaced(worker: Any, name: str) -> bool:
    """Whether `name` on this worker is not rqfast's own: a subclass's method, or a patch on the class or instance."""
    if name in vars(worker):
        return True
    for klass in type(worker).__mro__:
        found = vars(klass).get(name)
        if found is not None:
            return not str(getattr(found, '__module__', '')).startswith(_RQFAST_WORKER)
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


class HookCalling(WorkerAttributes):
    """The worker's side of calling the hooks as RQ does (JobHooks's, in hooks.py)."""

    _calls: HookCalls | None = None  # how each hook is called, read when the worker starts
    _in_hand_for: Callable[..., JobInHand]
    _record_outcome: Callable[..., None]
    _log_job_ok: Callable[[Job], None]
    perform_job: Callable[..., bool]
    handle_job_success: Callable[..., None]
    handle_job_failure: Callable[..., None]
    handle_job_retry: Callable[..., None]
    handle_exception: Callable[..., None]

    def _handle_outcome(self, job: Job, queue: Any, outcome: Outcome, log: bool = True) -> bool:
        """perform_job's tail: the hook for how the job ended; True unless it failed."""
        in_hand = self._in_hand_for(job, queue)
        in_hand.ran = outcome
        calls = self._hook_calls()
        registry = _started_registry(queue)
        extra = {'execution': self._execution_for(job, in_hand)}
        if outcome.kind is OutcomeKind.SUCCESS:
            kwargs = extra if calls.success else {}
            self.handle_job_success(job=job, queue=queue, started_job_registry=registry, **kwargs)
            if log:
                self._log_job_ok(job)
            return True
        if outcome.kind is OutcomeKind.RETRY:
            retry = outcome.value
            self.handle_job_retry(job=job, queue=queue, retry=retry, started_job_registry=registry, **extra)
            return True
        if outcome.kind is OutcomeKind.FAILURE:
            if calls.exception and outcome.exc_info is not None:  # it logs (RQ's default) and runs the handlers
                self.handle_exception(job, *outcome.exc_info)
            elif log:
                self._log_exception(job, outcome.exc_string)
            kwargs = extra if calls.failure else {}
            exc_string = outcome.exc_string
            self.handle_job_failure(
                job=job, exc_string=exc_string, queue=queue, started_job_registry=registry, **kwargs
            )
            return False
        self._record_outcome(job, queue, outcome)  # (stopped, poison: no hook of RQ's)
        return True

    def _call_perform_job(self, job: Job, queue: Any) -> bool:
        if self._hook_calls().perform:
            return bool(self.perform_job(job, queue, self._execution_for(job, self._in_hand_for(job, queue))))
        return bool(self.perform_job(job, queue))

    def _call_failure_in_worker(self, job: Job, queue: Any, exc_string: str) -> None:
        """handle_job_failure for a horse that ended without reporting, as RQ's worker calls it."""
        in_hand = self._in_hand_for(job, queue)
        if self._hook_calls().horse_failure:
            execution = self._execution_for(job, in_hand)
            self.handle_job_failure(job, queue=queue, exc_string=exc_string, execution=execution)
        else:
            self.handle_job_failure(job, queue=queue, exc_string=exc_string)

    def _hook_calls(self) -> HookCalls:
        if self._calls is None:
            self._calls = HookCalls(self)
        return self._calls

    def _execution_for(self, job: Job, in_hand: JobInHand) -> Execution:
        """The job's current execution (rqfast's Execution), as RQ 3.0's hooks get it."""
        if in_hand.execution is None:
            claim = in_hand.claim
            current = self._local_execution()
            if current is not None and current.job_id == job.id and current.id == claim.execution_id:
                in_hand.execution = current
            else:
                in_hand.execution = Execution(claim.execution_id, job.id, self.connection, self.name)
                if claim.started_at is not None:
                    in_hand.execution.created_at = in_hand.execution.last_heartbeat = claim.started_at
        return in_hand.execution

    def _hook_failed(self, job: Job, in_hand: JobInHand) -> Outcome:
        """The exception being handled came from a hook (or the code calling it) before the job was
        recorded: logged with its traceback, as RQ logs a failing job; the job fails, saying so."""
        exc_string = hook_failure_text(self, job.id, in_hand.ran)
        self.log.error('Worker %s: job %s: %s', self.name, job.id, exc_string, extra={'job_id': job.id})
        return Outcome(OutcomeKind.FAILURE, exc_string=exc_string)
