"""Classes a SpawnWorker's child imports by name: worker, job, queue, death penalty (test_worker_spawn.py)."""

from __future__ import annotations

from typing import Any

from rqfast import Queue, SpawnWorker
from rqfast.job import Job
from rqfast.timeouts import UnixSignalDeathPenalty


class CustomJob(Job):
    pass


class CustomQueue(Queue):
    pass


class CustomDeathPenalty(UnixSignalDeathPenalty):
    pass


class RecordingSpawnWorker(SpawnWorker):
    """Records, from inside the horse, the classes it runs the job with."""

    def perform_job(self, job: Any, queue: Any, *args: Any) -> Any:
        names = (type(self), type(job), type(queue), self.death_penalty_class)
        self.connection.set('spawn-worker-config', ' '.join(cls.__name__ for cls in names))
        return super().perform_job(job, queue, *args)
