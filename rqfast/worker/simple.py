"""SimpleWorker: runs each job in the worker's own process, as RQ's SimpleWorker does."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .. import engine
from ..job import Job
from ..outcome import Outcome, OutcomeKind
from .base import BaseWorker


class SimpleWorker(BaseWorker):
    runs_jobs_concurrently = True  # concurrency > 1: plain functions on threads, coroutines on one event loop

    def execute(self, job: Job, claim: engine.Claim, now: datetime | None = None) -> Outcome:
        outcome = self._run(job, now)
        if outcome.kind is OutcomeKind.FAILURE:
            self._log_exception(job, outcome.exc_string)
        return outcome

    def execute_job(self, job: Job, queue: Any) -> None:
        """RQ's: the job runs here, through perform_job (only called when a subclass overrides a hook)."""
        self._call_perform_job(job, queue)

    def stop_job(self, job_id: str) -> None:
        """At concurrency > 1 the job stops (its thread left to end, its task cancelled); else ignored, as in RQ."""
        if self._loop is not None:
            self._loop.stop_job(job_id)
