"""A job class whose loading fails in the worker (tests/test_worker_foreign_classes.py): importable
by reference, as a spawned horse's settings name it."""

from __future__ import annotations

import os

from rqfast.job import Job
from rqfast.status import JobStatus


class StartFailsJob(Job):
    """Loads, then fails as the worker marks it started: a failure before the job starts."""

    def set_local_status(self, status: JobStatus) -> None:
        if status == JobStatus.STARTED:
            raise ImportError('start_fails: no module named rqfast_missing_plugin')
        super().set_local_status(status)


class HorseFailsJob(Job):
    """Loads in the worker, and fails as a horse loads it (a process other than $RQFAST_TEST_WORKER_PID)."""

    def set_local_status(self, status: JobStatus) -> None:
        if status == JobStatus.STARTED and str(os.getpid()) != os.environ.get('RQFAST_TEST_WORKER_PID'):
            raise ImportError('horse_fails: no module named rqfast_missing_plugin')
        super().set_local_status(status)
