"""AsyncJob: a job as rqfast.job.Job holds it (`.job`), with the calls that touch Redis awaitable.

Its data (id, func_name, args, meta, origin, enqueued_at...) is the Job's, read through. The Job itself
holds no usable connection (Offline): a sync call on it says to await this object's method instead.
Each call here sends what the sync Job sends: the same script calls (scripts.*_call) and reads.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from .. import keys, scripts
from ..dates import epoch_seconds, now, utcformat
from ..exceptions import InvalidJobOperation, NoSuchJobError
from ..jobhash import encode_meta
from ..results import Result, get_key
from ..status import JobStatus
from ..text import as_text
from .calls import run

if TYPE_CHECKING:
    from ..job import Job

__all__ = ['AsyncJob', 'JobFailedError', 'Offline', 'SyncCallError']


class SyncCallError(TypeError, AttributeError):
    """A synchronous Redis call on an asyncio producer's job or queue. An AttributeError too, so that code
    that only probes a connection (getattr(conn, 'x', None), as instrumentation does) gets its default."""


class Offline:
    """The connection an async producer's Queue and Jobs hold: any use of it is a sync Redis call,
    which an asyncio producer must not make; the error names the awaitable to use instead."""

    def __init__(self, client: Any) -> None:
        self.client = client  # the redis.asyncio client the AsyncQueue and AsyncJob use

    def __bool__(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        raise SyncCallError(
            f'rqfast.asyncio: a synchronous Redis call ({name}) on a job or queue of an asyncio producer; '
            'await the AsyncQueue/AsyncJob method of the same name instead (docs/async.md)'
        )


class JobFailedError(Exception):
    """`await job.result()`: the job ended without a value (failed, stopped, out of retries)."""

    def __init__(self, result: Result) -> None:
        self.result = result
        super().__init__(f'job {result.job_id} ended {result.type.name}: {result.exc_string or ""}'.rstrip(': '))


_FINAL = (Result.Type.SUCCESSFUL, Result.Type.FAILED, Result.Type.STOPPED, Result.Type.MAX_RETRIES_EXCEEDED)


class AsyncJob:
    """One job of an asyncio producer; `job` is its rqfast.job.Job (the data, no I/O)."""

    def __init__(self, job: Job, connection: Any) -> None:
        self.job = job
        self.connection = connection

    def __getattr__(self, name: str) -> Any:
        return getattr(self.job, name)

    def __repr__(self) -> str:
        return f'AsyncJob({self.job.id!r})'

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AsyncJob) and other.job.id == self.job.id

    def __hash__(self) -> int:
        return hash(self.job.id)

    @property
    def id(self) -> str:
        return self.job.id

    def _keyspace(self) -> Any:
        return keys.within(self.job.origin or None)  # (sharded by queue: the job's queue's keyspace)

    async def refresh(self) -> None:
        with self._keyspace():
            raw = await self.connection.hgetall(self.job.key)
        if not raw:
            raise NoSuchJobError(f'No such job: {self.job.key}')
        self.job.restore(raw)

    async def get_status(self, refresh: bool = True) -> JobStatus:
        if refresh:
            with self._keyspace():
                status = await self.connection.hget(self.job.key, 'status')
            if not status:
                raise InvalidJobOperation(f'Failed to retrieve status for job: {self.job.id}')
            self.job.set_local_status(JobStatus(as_text(status)))
        return self.job.get_status(refresh=False)

    async def get_meta(self, refresh: bool = True) -> dict[str, Any]:
        if refresh:
            with self._keyspace():
                meta = await self.connection.hget(self.job.key, 'meta')
            self.job.meta = self.job.serializer.loads(meta) if meta else {}
        return dict(self.job.meta)

    async def save_meta(self) -> None:
        """Job.save_meta(): the job's `meta` as it is now, stored."""
        with self._keyspace():
            await self.connection.hset(self.job.key, 'meta', encode_meta(self.job, self.job.meta))

    async def get_position(self) -> int | None:
        if not self.job.origin:
            return None
        with self._keyspace():
            position = await self.connection.lpos(keys.queue_key(self.job.origin), self.job.id)
        return None if position is None else int(position)

    async def delete(self, remove_from_queue: bool = True, delete_dependents: bool = False) -> None:
        """Job.delete(): its keys, out of its queue and registries (one script call)."""
        call = scripts.delete_job_call(self.job.id, remove_from_queue, delete_dependents)
        with self._keyspace():
            await run(call, self.connection)

    async def cancel(
        self, enqueue_dependents: bool = False, remove_from_dependencies: bool = False
    ) -> dict[str, list[str]]:
        """Job.cancel(): out of its queue and registry, into the canceled registry (one script call)."""
        moment = now()
        call = scripts.cancel_job_call(
            self.job.id, epoch_seconds(moment), utcformat(moment), enqueue_dependents, remove_from_dependencies
        )
        with self._keyspace():
            outcome, released = scripts.canceled(await run(call, self.connection))
        self.job._canceled(outcome)
        return released

    async def requeue(self, at_front: bool = False) -> AsyncJob:
        """Job.requeue(): out of its failed registry, back onto its queue (one script call)."""
        self.job._before_requeue(at_front)
        moment = now()
        with self._keyspace():
            reply = await run(scripts.requeue_call(self.job, at_front, moment), self.connection)
        scripts.stored([self.job], scripts.statuses(reply), moment)
        return self

    async def results(self) -> list[Result]:
        with self._keyspace():
            entries = await self.connection.xrevrange(get_key(self.job.id), '+', '-')
        return [self._result(rid, payload) for rid, payload in entries]

    async def latest_result(self, timeout: float = 0) -> Result | None:
        """The newest result; with a `timeout` (seconds), waits that long for a first one (XREAD BLOCK),
        as RQ 3.0's latest_result(timeout=) does. None when there is none."""
        with self._keyspace():
            key = get_key(self.job.id)
            if timeout:
                response = await self.connection.xread({key: '0-0'}, block=max(1, int(timeout * 1000)))
                if not response:
                    return None
                rid, payload = response[0][1][-1]
            else:
                response = await self.connection.xrevrange(key, '+', '-', count=1)
                if not response:
                    return None
                rid, payload = response[0]
        return self._result(rid, payload)

    async def return_value(self) -> Any:
        """Job.return_value(): the value of its latest successful result (None if its latest is not one)."""
        latest = await self.latest_result()
        return latest.return_value if latest is not None and latest.type is Result.Type.SUCCESSFUL else None

    async def result(self, timeout: float | None = None) -> Any:
        """Wait for the job's outcome on its results stream (XREAD BLOCK, no polling) and return its value.

        A retried run's result is passed over: the wait goes on for the last one. JobFailedError when the
        job failed, stopped or ran out of retries; TimeoutError when none came within `timeout` seconds
        (None: wait as long as it takes)."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        last = '0-0'
        with self._keyspace():
            key = get_key(self.job.id)
        while True:
            block = 0 if deadline is None else int((deadline - loop.time()) * 1000)
            if deadline is not None and block <= 0:
                raise TimeoutError(f'no result for job {self.job.id} within {timeout} s')
            response = await self.connection.xread({key: last}, block=block)
            if not response:
                raise TimeoutError(f'no result for job {self.job.id} within {timeout} s')
            for rid, payload in response[0][1]:
                last = as_text(rid)
                result = self._result(rid, payload)
                if result.type is Result.Type.SUCCESSFUL:
                    return result.return_value
                if result.type in _FINAL:
                    raise JobFailedError(result)

    def _result(self, rid: Any, payload: dict[Any, Any]) -> Result:
        return Result.restore(self.job.id, as_text(rid), payload, self.connection, self.job.serializer)
