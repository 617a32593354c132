"""AsyncQueue: RQ's enqueue API, awaitable, on a redis.asyncio client (docs/async.md).

One implementation of what a job is: each enqueue runs the sync Queue's own call (rqfast.queue.Queue,
here `planner`) up to the one place it would touch Redis, Queue._store, which the planner keeps instead
of sending (Pending). What it keeps is exactly what the sync enqueue would send: the jobs and their
signed records; enqueueing.store_call() turns them into the script call and enqueueing.settle() reads
its reply, on either side. So an enqueue made either way leaves byte-identical Redis state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from .. import keys, scriptload, scripts
from ..cluster import check_keyspaces, is_asyncio, is_asyncio_cluster
from ..dates import now
from ..debounce import Debounce, Held, Throttle
from ..defaults import rq2_compat
from ..enqueueing import EnqueueData, dependency_ids, judged, settle, store_call
from ..job import Job
from ..queue import Queue
from ..registry import BaseRegistry
from ..scriptrecords import EnqueueRecord
from ..text import as_text
from .calls import run
from .job import AsyncJob, Offline

__all__ = ['AsyncQueue', 'AsyncRegistry']


class Pending(NamedTuple):
    """One store the planner kept: Queue._store's arguments, the records signed."""

    jobs: Sequence[Job]
    records: Sequence[EnqueueRecord]
    pipeline: Any
    group: str
    guard: Debounce | Throttle | None


_KEPT: ContextVar[list[Pending] | None] = ContextVar('rqfast_async_kept', default=None)


class Planner(Queue):
    """rqfast's Queue whose one store, _store, is kept (in the calling context's list) and not sent."""

    def _store(
        self,
        jobs: Sequence[Job],
        records: Sequence[EnqueueRecord],
        pipeline: Any = None,
        group: str = '',
        guard: Debounce | Throttle | None = None,
    ) -> Held | None:
        kept = _KEPT.get()
        if kept is None:
            raise TypeError('rqfast.asyncio: the planner queue stores nothing by itself; await its AsyncQueue')
        kept.append(Pending(jobs, self._signed(records), pipeline, group, guard))
        return None


def _unwrapped(value: Any) -> Any:
    """depends_on as the planner takes it: an AsyncJob as its Job, in a list too."""
    if isinstance(value, AsyncJob):
        return value.job
    if isinstance(value, list | tuple):
        return [_unwrapped(item) for item in value]
    return value


class AsyncQueue:
    """RQ's Queue, each call that touches Redis awaitable; on a redis.asyncio Redis or RedisCluster.

    Takes Queue's arguments (default_timeout, job_class, serializer, signing_key, events...); its
    jobs are made by that Queue (`planner`), so every enqueue option of the sync API works the same.
    """

    def __init__(self, name: str = 'default', connection: Any = None, **kwargs: Any) -> None:
        if connection is None:
            raise TypeError("AsyncQueue() missing 1 required argument: 'connection' (a redis.asyncio client)")
        if not is_asyncio(connection):
            raise TypeError(
                f'rqfast.asyncio.AsyncQueue needs a redis.asyncio client (redis.asyncio.Redis or RedisCluster), '
                f'not {type(connection).__module__}.{type(connection).__name__}; for a synchronous client, '
                'use rqfast.Queue'
            )
        if is_asyncio_cluster(connection):
            check_keyspaces()  # (a hash-tagged RQ_KEY_PREFIX, as for a sync RedisCluster)
        if not kwargs.get('is_async', True) or not kwargs.get('async', True):
            raise NotImplementedError('rqfast.asyncio: is_async=False (running jobs at enqueue) is sync only')
        self.connection = connection
        offline: Any = Offline(connection)  # (what the planner's Queue and Jobs hold: no sync call gets through)
        self.planner = Planner(name, connection=offline, **kwargs)
        self.name = name

    def __repr__(self) -> str:
        return f'AsyncQueue({self.name!r})'

    @property
    def key(self) -> str:
        return self.planner.key

    @property
    def serializer(self) -> Any:
        return self.planner.serializer

    # --- enqueueing: the sync Queue's calls, planned, then sent here

    async def enqueue(self, f: Any, *args: Any, **kwargs: Any) -> AsyncJob:
        return await self._one(self.planner.enqueue, f, *args, **kwargs)

    async def enqueue_call(self, func: Any, *args: Any, **kwargs: Any) -> AsyncJob:
        """Queue.enqueue_call's arguments (args=, kwargs=, timeout=, depends_on=, ...)."""
        return await self._one(self.planner.enqueue_call, func, *args, **kwargs)

    async def enqueue_at(self, datetime: datetime, f: Any, *args: Any, **kwargs: Any) -> AsyncJob:
        return await self._one(self.planner.enqueue_at, datetime, f, *args, **kwargs)

    async def enqueue_in(self, time_delta: timedelta, func: Any, *args: Any, **kwargs: Any) -> AsyncJob:
        return await self._one(self.planner.enqueue_at, now() + time_delta, func, *args, **kwargs)

    async def enqueue_job(self, job: AsyncJob | Job, pipeline: Any = None, at_front: bool = False) -> AsyncJob:
        """Store a job made by create_job (Queue.enqueue_job)."""
        plain = job.job if isinstance(job, AsyncJob) else job
        return await self._one(self.planner.enqueue_job, plain, pipeline=pipeline, at_front=at_front)

    def create_job(self, func: Any, *args: Any, **kwargs: Any) -> AsyncJob:
        """Queue.create_job (no I/O): a job to hand enqueue_job."""
        return AsyncJob(self.planner.create_job(func, *args, **kwargs), self.connection)

    prepare_data = staticmethod(Queue.prepare_data)

    async def enqueue_many(
        self, job_datas: Iterable[EnqueueData], pipeline: Any = None, group_id: str | None = None
    ) -> list[AsyncJob]:
        """Queue.enqueue_many: one script call per 1,000 jobs, every job checked before the first."""
        return await self.enqueue_batch(job_datas, pipeline, group_id, join_group=False)

    async def enqueue_batch(
        self, job_datas: Iterable[EnqueueData], pipeline: Any, group_id: str | None, join_group: bool
    ) -> list[AsyncJob]:
        """enqueue_many; with `join_group`, the jobs join group `group_id` too (Group.enqueue_many's)."""
        datas = [d._replace(depends_on=_unwrapped(d.depends_on)) if d.depends_on else d for d in job_datas]
        with keys.within(self.name):
            batch = self.planner._plan_batch(datas, pipeline, group_id, join_group)
            for jobs, records in batch.chunks():
                await self._send(Pending(jobs, self.planner._signed(records), batch.pipeline, batch.group, None))
            guarded = []
            for job, at_front, option in batch.one_by_one:
                guarded.append((await self._one(self.planner._enqueue, job, None, at_front, False, True, option)).job)
            return [AsyncJob(job, self.connection) for job in batch.ordered(guarded)]

    async def _one(self, call: Callable[..., Job], *args: Any, **kwargs: Any) -> AsyncJob:
        """`call` (one of the planner's enqueue calls) planned, then its one store sent."""
        if 'depends_on' in kwargs:
            kwargs['depends_on'] = _unwrapped(kwargs['depends_on'])
        with keys.within(self.name):
            kept: list[Pending] = []
            token = _KEPT.set(kept)
            try:
                job = call(*args, **kwargs)
            finally:
                _KEPT.reset(token)
            (pending,) = kept
            held = await self._send(pending)
        if held is not None:  # throttled: no job was created; the one holding the window stands for it
            job = self.planner._held_job(held)
        return AsyncJob(job, self.connection)

    async def _send(self, pending: Pending) -> Held | None:
        """What store_jobs does for one kept store, awaited: one script call, or queued into a pipeline."""
        moment = now()
        call = store_call(self.name, pending.records, moment, pending.group, pending.guard)
        if pending.pipeline is not None:  # (an asyncio pipeline: the call runs at its execute())
            scriptload.script(call.name).queue(pending.pipeline, call.args)
            scripts.stored(pending.jobs, judged(pending.records, await self._statuses(pending.records)), moment)
            return None
        return settle(pending.jobs, await run(call, self.connection), moment, pending.guard)

    async def _statuses(self, records: Sequence[EnqueueRecord]) -> dict[str, Any]:
        wanted = dependency_ids(records)
        if not wanted:
            return {}
        async with self.connection.pipeline(transaction=False) as reads:
            for dep_id in wanted:
                reads.hget(keys.job_key(dep_id), 'status')
            return dict(zip(wanted, await reads.execute(), strict=True))

    # --- reading

    async def count(self) -> int:
        return int(await self.connection.llen(self.key))

    async def get_job_ids(self, offset: int = 0, length: int = -1) -> list[str]:
        if length == 0 and not rq2_compat():
            return []
        end = offset + (length - 1) if length >= 0 else length
        return [as_text(m) for m in await self.connection.lrange(self.key, offset, end)]

    async def job_ids(self) -> list[str]:
        return await self.get_job_ids()

    async def fetch_job(self, job_id: str) -> AsyncJob | None:
        """The job if it exists and belongs here (a missing job's id leaves the queue, as in RQ)."""
        job = AsyncJob(
            self.planner.job_class(job_id, connection=self.planner.connection, serializer=self.serializer),
            self.connection,
        )
        with keys.within(self.name):
            try:
                await job.refresh()
            except Exception:
                if not await self.connection.exists(job.job.key):
                    async with self.connection.pipeline(transaction=True) as pipe:
                        pipe.lrem(self.key, 1, job_id)
                        pipe.zrem(keys.priority_queue_key(self.name), job_id)
                        await pipe.execute()
                return None
        return job if job.job.origin == self.name else None

    # --- pausing (rqfast's own: rq:paused-queues)

    async def pause(self) -> None:
        with keys.within(self.name):
            await self.connection.sadd(keys.PAUSED_QUEUES, self.name)

    async def resume(self) -> None:
        with keys.within(self.name):
            await self.connection.srem(keys.PAUSED_QUEUES, self.name)

    async def is_paused(self) -> bool:
        with keys.within(self.name):
            return bool(await self.connection.sismember(keys.PAUSED_QUEUES, self.name))

    # --- registries

    def _registry(self, sync: BaseRegistry) -> AsyncRegistry:
        return AsyncRegistry(sync, self.connection)

    failed_job_registry = property(lambda self: self._registry(self.planner.failed_job_registry))
    started_job_registry = property(lambda self: self._registry(self.planner.started_job_registry))
    finished_job_registry = property(lambda self: self._registry(self.planner.finished_job_registry))
    deferred_job_registry = property(lambda self: self._registry(self.planner.deferred_job_registry))
    scheduled_job_registry = property(lambda self: self._registry(self.planner.scheduled_job_registry))
    canceled_job_registry = property(lambda self: self._registry(self.planner.canceled_job_registry))


class AsyncRegistry:
    """A registry's count and job ids, awaitable. Expired entries are left to the workers' upkeep (the
    sync registry's cleanup before counting is not run here)."""

    def __init__(self, registry: BaseRegistry, connection: Any) -> None:
        self.registry = registry
        self.connection = connection

    @property
    def key(self) -> str:
        return self.registry.key

    async def count(self) -> int:
        return int(await self.connection.zcard(self.key))

    async def get_job_ids(self, start: int = 0, end: int = -1, desc: bool = False) -> list[str]:
        members = await self.connection.zrange(self.key, start, end, desc=desc)
        return [self.registry.parse_job_id(member) for member in members]
