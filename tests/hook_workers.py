"""Worker subclasses at module level, so a spawned child can import them by name (test_hook_signatures.py).

They note each hook call, with the process it ran in, in the file named by $RQFAST_HOOK_TRAIL.
"""

from __future__ import annotations

import os
from typing import Any

from rqfast.worker import SpawnWorker


def _note(hook: str, job: Any, execution: Any = None) -> None:
    with open(os.environ['RQFAST_HOOK_TRAIL'], 'a') as trail:
        execution_id = execution.id if execution is not None else '-'
        trail.write(f'{hook} {job.id} {os.getpid()} {execution_id}\n')


class Rq3SpawnWorker(SpawnWorker):
    """RQ 3.0's signatures: perform_job and the handlers run in the spawned child, as in RQ 3.0."""

    def perform_job(self, job: Any, queue: Any, execution: Any) -> bool:
        _note('perform_job', job, execution)
        return bool(super().perform_job(job, queue, execution))

    def handle_job_success(self, job: Any, queue: Any, started_job_registry: Any, execution: Any) -> None:
        _note('success', job, execution)
        super().handle_job_success(job, queue, started_job_registry, execution)

    def handle_job_failure(
        self, job: Any, queue: Any, started_job_registry: Any = None, exc_string: str = '', execution: Any = None
    ) -> None:
        _note('failure', job, execution)
        super().handle_job_failure(job, queue, started_job_registry, exc_string, execution)
