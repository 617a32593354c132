"""The runner: how a worker class runs one claimed job, the same at every concurrency.

A worker holds one runner (BaseWorker.runner_class): `run(running)` runs one claimed, loaded job on
the calling thread and says how it ended, for the loop to record. The loop calls it on its own thread
at concurrency 1 (inline.py: SIGALRM timeouts work there) and on the slots' threads at N (slots.py),
so a job takes the same path, the same hooks and the same log lines at every concurrency. Only where
the job runs differs by class: this Runner runs it in this process (SimpleWorker); horses.py's
InHorses hands it to a horse of its own (Worker, SpawnWorker).

With a hook replaced (calling.py), `run` goes through the worker's execute_job, which has the job
executed by the worker's `execute` (whose default is the runner's `execute`) and recorded; without
one it calls `execute` itself: what those defaults would do, without the calls.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

from .. import dates
from ..execution import fail_job, run_job
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from .calling import HookCaller
from .context import WorkerContext
from .joblog import JobLog
from .loading import clock
from .running import Running
from .stopping import ColdShutdown


class Runner:
    """Runs a job in this process (SimpleWorker's runner); thread-safe, as the hooks' job in hand is per thread."""

    # Whether a job's own process enforces its timeout (a horse), with the runner killing it past a grace;
    # else the loop fails a job on a slot's thread at its deadline (SIGALRM reaches only the main thread).
    enforces_timeout = False

    def __init__(self, worker: Any, context: WorkerContext, hooks: HookCaller, joblog: JobLog) -> None:
        self.worker = worker  # its extension points (start_horse, handle_work_horse_killed...: horses.py)
        self.context = context
        self.hooks = hooks
        self.joblog = joblog

    def run(self, running: Running) -> Outcome | None:
        """How the job ended, for the caller to record; None when its hooks recorded it themselves
        (through running.deliver) or left it unrecorded."""
        if self.hooks.hooked:
            return self.hooks.run(running)
        assert running.job is not None
        return self.execute(running.job, running)

    def execute(self, job: Job, running: Running) -> Outcome:
        """Run the job here (the worker's `execute`): through RQ's perform_job when it, or a handler, is
        replaced; an exception is logged where the job raised, as RQ logs it."""
        if self.hooks.performs:
            return self.hooks.perform_here(job, running)
        context = self.context
        penalty, handlers = running.penalty or context.death_penalty_class, context.exception_handlers
        times = dates.now if running.now is None else clock(running.now)
        try:
            outcome = run_job(job, penalty, handlers, default_timeout=context.queue_class.DEFAULT_TIMEOUT, clock=times)
        except ColdShutdown:  # the worker's own stop: the job is failed with it, and the worker stops
            raise
        except BaseException:  # SystemExit, KeyboardInterrupt, CancelledError... from the job: a failure, as in RQ
            outcome = fail_job(job, sys.exc_info(), penalty, handlers, times)
        if outcome.kind is OutcomeKind.FAILURE:
            self.joblog.exception(job, outcome.exc_string)
        return outcome

    def release(self, running: Running, recorded: bool = True) -> None:
        """Its outcome is recorded (or `recorded` False: recording it failed): nothing to let go here."""

    def stop(self, job_id: str) -> bool:
        """A stop-job: False, a job in this process cannot be ended from here (at concurrency > 1 the loop
        ends it and leaves its thread to run on; at 1 it is ignored, as in RQ)."""
        return False

    @property
    def horse_pid(self) -> int:
        return 0

    def kill_all(self, sig: int = signal.SIGKILL) -> None:
        """No horse to kill."""

    def close(self, wait: float) -> None:
        """The worker stops: nothing of its own to stop."""
