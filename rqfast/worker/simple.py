"""SimpleWorker: runs each job in the worker's own process, as RQ's SimpleWorker does."""

from __future__ import annotations

from .. import engine
from ..execution import Outcome, run_job
from ..job import Job
from .base import BaseWorker


class SimpleWorker(BaseWorker):
    def execute(self, job: Job, claim: engine.Claim) -> Outcome:
        return run_job(job, self.death_penalty_class, self._exc_handlers,
                       default_timeout=self.queue_class.DEFAULT_TIMEOUT)
