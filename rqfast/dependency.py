"""RQ's rq.dependency: sorting jobs that have dependencies into those that can run now and those that wait.

RQ's enqueue_many uses it; rqfast's enqueue script checks dependencies itself, so nothing in rqfast
calls it: it is here for code that calls RQ's helper. Each job is registered as a dependent (deferred
registry, its dependencies' dependents sets: Job.register_dependency, one script call), then its
dependencies are read (rqfast.dependencies) with their hashes WATCHed on `pipeline`, as RQ's does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from redis.exceptions import WatchError

from .job import Job

__all__ = ['Dependency']


class Dependency:
    @classmethod
    def get_jobs_with_met_dependencies(cls, jobs: Iterable[Job], pipeline: Any) -> tuple[list[Job], list[Job]]:
        """(jobs whose dependencies are met, the others); every job is registered as a dependent."""
        met: list[Job] = []
        waiting: list[Job] = []
        for job in jobs:
            while True:
                try:
                    if job.depends_on_ids:
                        pipeline.watch(*[job.key_for(job_id) for job_id in job.depends_on_ids])
                    job.register_dependency()  # its own script call: the check below reads what it wrote
                    ready = job.dependencies_are_met(pipeline=pipeline)
                    pipeline.execute()  # (nothing queued: ends the WATCH)
                except WatchError:
                    continue
                (met if ready else waiting).append(job)
                break
        return met, waiting
