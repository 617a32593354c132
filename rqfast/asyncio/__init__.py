"""rqfast's asyncio producer API on redis.asyncio (docs/async.md): `await queue.enqueue(...)`,
`await job.result(timeout=...)`. The same jobs, records and scripts as the sync API."""

from __future__ import annotations

from .group import AsyncGroup
from .job import AsyncJob, JobFailedError, SyncCallError
from .queue import AsyncQueue, AsyncRegistry

Queue = AsyncQueue
Job = AsyncJob

__all__ = ['AsyncGroup', 'AsyncJob', 'AsyncQueue', 'AsyncRegistry', 'Job', 'JobFailedError', 'Queue', 'SyncCallError']
