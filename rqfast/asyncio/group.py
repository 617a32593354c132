"""AsyncGroup: rqfast.group.Group's enqueue and reads, awaitable (the group's set, `rq:group:<name>`).

Its jobs join the group in their enqueue's own script call, as Group.enqueue_many's do (the same
Queue._plan_batch, the same records, the same script).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from uuid import uuid4

from ..cluster import KeyspaceError
from ..enqueueing import EnqueueData
from ..group import Group
from ..keys import SHARDED
from ..text import as_text
from .job import AsyncJob
from .queue import AsyncQueue

__all__ = ['AsyncGroup']


class AsyncGroup:
    """A group of jobs under one name; nothing is written until jobs are enqueued into it."""

    def __init__(self, connection: Any, name: str | None = None) -> None:
        if SHARDED:
            raise KeyspaceError('RQFAST_SHARDING=queue: groups are not supported (a group may span queues)')
        self.connection = connection
        self.name = name or uuid4().hex
        self.key = Group.get_key(self.name)

    def __repr__(self) -> str:
        return f'AsyncGroup(id={self.name})'

    async def enqueue_many(
        self, queue: AsyncQueue, job_datas: Iterable[EnqueueData], pipeline: Any = None
    ) -> list[AsyncJob]:
        """Group.enqueue_many: every job tagged with this group and added to it in the same script call."""
        return await queue.enqueue_batch(job_datas, pipeline, self.name, join_group=True)

    async def get_job_ids(self) -> list[str]:
        """The ids in the group's set (the sync Group.get_jobs() cleans up deleted ones first; this does not)."""
        return sorted(as_text(member) for member in await self.connection.smembers(self.key))
