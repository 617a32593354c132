"""A queue's intermediate list (`rq:queue:<name>:intermediate`), where a blocking worker's BLMOVE
parks an id until the claim script starts the job, and RQ's API for ids stranded there.

rqfast's maintenance (lua/clean_registries.lua) sweeps these lists with the same first-seen markers;
this class is RQ's view of one list, for code that inspects or cleans it by hand.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from redis import Redis

from .dates import from_epoch, now
from .defaults import FIRST_SEEN_TTL, STUCK_AFTER
from .text import as_text

if TYPE_CHECKING:
    from .queue import Queue
    from .worker import BaseWorker

STUCK_EXC_STRING = 'Job was stuck in intermediate queue.'


class IntermediateQueue:
    def __init__(self, queue_key: str, connection: Redis) -> None:
        self.queue_key = queue_key
        self.key = self.get_intermediate_queue_key(queue_key)
        self.connection = connection

    @classmethod
    def get_intermediate_queue_key(cls, queue_key: str) -> str:
        return f'{queue_key}:intermediate'

    def get_first_seen_key(self, job_id: str) -> str:
        return f'{self.key}:first_seen:{job_id}'

    def set_first_seen(self, job_id: str) -> bool:
        """Mark when the id was first seen here; False when it was marked before."""
        marker = self.get_first_seen_key(job_id)
        return bool(self.connection.set(marker, now().timestamp(), nx=True, ex=FIRST_SEEN_TTL))

    def get_first_seen(self, job_id: str) -> datetime | None:
        stored = self.connection.get(self.get_first_seen_key(job_id))
        return from_epoch(float(stored)) if stored else None

    def should_be_cleaned_up(self, job_id: str) -> bool:
        """Whether the id has been here longer than a claim ever takes (STUCK_AFTER seconds)."""
        first_seen = self.get_first_seen(job_id)
        return first_seen is not None and now() - first_seen > timedelta(seconds=STUCK_AFTER)

    def get_job_ids(self) -> list[str]:
        return [as_text(job_id) for job_id in self.connection.lrange(self.key, 0, -1)]

    def remove(self, job_id: str) -> None:
        self.connection.lrem(self.key, 1, job_id)

    def cleanup(self, worker: BaseWorker, queue: Queue) -> None:
        """RQ's cleanup: an id whose job is gone goes at once; one stuck past STUCK_AFTER fails its job.

        Ids of jobs in the started registry are being run: they stay, unmarked.
        """
        running = set(queue.started_job_registry.get_job_ids(cleanup=False))
        for job_id in self.get_job_ids():
            if job_id in running:
                continue
            job = queue.fetch_job(job_id)
            if job is None:
                self.remove(job_id)
            elif not self.set_first_seen(job_id) and self.should_be_cleaned_up(job_id):
                worker.handle_job_failure(job, queue, exc_string=STUCK_EXC_STRING)  # type: ignore[attr-defined]
                self.remove(job_id)
