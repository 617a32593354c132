"""SimpleWorker: runs each job in the worker's own process, as RQ's SimpleWorker does."""

from __future__ import annotations

import sys
from datetime import datetime

from .. import engine
from ..execution import fail_job, run_job
from ..job import Job
from ..outcome import Outcome
from .base import BaseWorker
from .finishing import clock


class SimpleWorker(BaseWorker):
    def execute(self, job: Job, claim: engine.Claim, now: datetime | None = None) -> Outcome:
        timeout = self.queue_class.DEFAULT_TIMEOUT
        try:
            return run_job(job, self.death_penalty_class, self._exc_handlers, default_timeout=timeout, clock=clock(now))
        except (SystemExit, KeyboardInterrupt):  # the job exited, or a cold shutdown: a failure, as in RQ
            return fail_job(job, sys.exc_info(), self.death_penalty_class, self._exc_handlers, clock(now))
