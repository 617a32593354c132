"""rqfast.asyncio's producer: the same Redis state as the sync producer for every enqueue option, one clear
error for bad input, and `await job.result(timeout=)` against a real worker.

(a) Each scenario runs once on rqfast.Queue (made awaitable by Facade, nothing else changes) and once on
rqfast.asyncio.AsyncQueue, each on a freshly flushed db of the session's real server; the dumps are
normalised (tests/snapshot.py: ids, datetimes, epochs near now) and compared key by key, field by field.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

import rqfast
from rqfast.asyncio import AsyncGroup, AsyncJob, AsyncQueue, JobFailedError
from rqfast.group import Group
from rqfast.job import Dependency
from rqfast.queue import Queue
from rqfast.security import SIGNATURE_FIELD, sign_fields
from rqfast.serializers import JSONSerializer

try:
    import jobs
    from snapshot import assert_same, id_map_for, implementation, normalize, snapshot
    from test_interop_enqueue import SIMPLE_CALLS
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import (  # type: ignore[no-redef]
        assert_same,
        id_map_for,
        implementation,
        normalize,
        snapshot,
    )
    from tests.test_interop_enqueue import SIMPLE_CALLS  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(120)

HERE = os.path.dirname(os.path.abspath(__file__))
RQFAST = implementation('rqfast')


async def aclose(client: Any) -> None:
    """client.aclose(), or close() on redis-py 5.0.0 (aclose came in 5.0.1)."""
    await (client.aclose() if hasattr(client, 'aclose') else client.close())


class Facade:
    """A sync rqfast.Queue or Job, its calls awaitable (the Jobs they return too), so one scenario drives
    either producer."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.target, name)
        if not callable(attribute):
            return attribute

        async def call(*args: Any, **kwargs: Any) -> Any:
            args = tuple(_plain(arg) for arg in args)
            return _facade(attribute(*args, **{key: _plain(value) for key, value in kwargs.items()}))

        return call


def _plain(value: Any) -> Any:
    if isinstance(value, Facade):
        return value.target
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _facade(value: Any) -> Any:
    if isinstance(value, rqfast.Job):
        return Facade(value)
    if isinstance(value, list):
        return [_facade(item) for item in value]
    return value


Make = Callable[..., Any]  # make(name='q', **Queue kwargs): a queue of the producer under test
Scenario = Callable[[Make], Awaitable[list[Any]]]


def run_both(url: str, scenario: Scenario) -> None:
    """`scenario` with the sync producer, then with the async one: the same normalised db."""
    dumps = {}
    sync = redis.Redis.from_url(url)
    try:
        for side in ('sync', 'async'):
            sync.flushdb()

            async def go(side: str = side) -> list[Any]:
                client = aredis.Redis.from_url(url)
                try:
                    if side == 'sync':
                        return await scenario(lambda name='q', **kw: Facade(Queue(name, connection=sync, **kw)))
                    return await scenario(lambda name='q', **kw: AsyncQueue(name, connection=client, **kw))
                finally:
                    await aclose(client)

            ids = asyncio.run(go())
            id_map = id_map_for(*[getattr(i, 'id', i) for i in ids])
            dumps[side] = normalize(_signatures_checked(snapshot(sync)), id_map)
        sync.flushdb()
    finally:
        sync.close()
    assert dumps['sync'], 'the scenario wrote nothing: it checks nothing'
    assert_same(dumps['sync'], dumps['async'])


SIGNING_KEY = b'secret key'


def _signatures_checked(snap: Any) -> Any:
    """Each job's signature checked against its id and fields (it signs the id, which differs between the
    two runs), then shown as valid."""
    for key, entry in snap.items():
        fields = entry['value']
        if entry['type'] == 'hash' and SIGNATURE_FIELD in fields:
            job_id = key.rsplit(':', 1)[1]
            assert fields[SIGNATURE_FIELD].decode() == sign_fields(SIGNING_KEY, job_id, fields), key
            fields[SIGNATURE_FIELD] = b'<valid signature>'
    return snap


def _simple(name: str) -> Scenario:
    async def scenario(make: Make) -> list[Any]:
        func, args, kwargs = SIMPLE_CALLS[name](RQFAST)
        return [await make().enqueue(func, *args, **kwargs)]

    return scenario


@pytest.mark.parametrize('option', sorted(SIMPLE_CALLS))
def test_rqs_enqueue_options_write_the_same_either_way(redis_url: str, option: str) -> None:
    run_both(redis_url, _simple(option))


# rqfast's own options and the calls beyond enqueue(): name -> scenario. OPTIONS_WALKED names each
# enqueue_call parameter these and SIMPLE_CALLS exercise; a test holds it to Queue.enqueue_call's signature.
async def _depends(make: Make) -> list[Any]:
    q = make()
    first = await q.enqueue(jobs.add, 1, 2)
    second = await q.enqueue(jobs.add, 3, 4, depends_on=first, ttl=60)
    third = await q.enqueue(jobs.add, 5, 6, depends_on=[first.id, second])
    dependency = Dependency(jobs=[first.id], allow_failure=True, enqueue_at_front=True)
    fourth = await q.enqueue(jobs.add, 7, 8, depends_on=dependency)
    return [first, second, third, fourth]


async def _throttle_twice(make: Make) -> list[Any]:
    q = make()
    held = await q.enqueue(jobs.add, 1, 2, throttle=('key', 30))
    again = await q.enqueue(jobs.add, 3, 4, throttle=('key', 30))
    assert again.id == held.id
    return [held]


async def _debounce_twice(make: Make) -> list[Any]:
    q = make()
    first = await q.enqueue(jobs.add, 1, 2, debounce=('key', 30))
    second = await q.enqueue(jobs.add, 3, 4, debounce=('key', 30), at_front=True)
    return [first, second]


async def _unique(make: Make) -> list[Any]:
    q = make()
    job = await q.enqueue(jobs.add, 1, 2, job_id='only-one', unique=True)
    with pytest.raises(rqfast.exceptions.DuplicateJobError):
        await q.enqueue(jobs.add, 1, 2, job_id='only-one', unique=True)
    return [job]


async def _rate_limited(make: Make) -> list[Any]:
    q = make()
    limit = rqfast.RateLimit('api', concurrency=1)
    return [await q.enqueue(jobs.add, i, i, rate_limit=limit, at_front=i == 2) for i in range(3)]


async def _enqueue_many(make: Make) -> list[Any]:
    q = make()
    first = await q.enqueue(jobs.add, 0, 0)
    datas = [
        Queue.prepare_data(jobs.add, (1, 2), job_id='a', priority=2),
        Queue.prepare_data(jobs.add, (3, 4), depends_on=_plain(first), at_front=True),  # (an AsyncJob, async)
        Queue.prepare_data(jobs.add, (5, 6), depends_on='no-such-job', result_ttl=5),
        Queue.prepare_data(jobs.add, (7, 8), throttle=('t', 10)),
        Queue.prepare_data(jobs.add, (9, 10), retry=rqfast.Retry(max=2), meta={'m': 1}),
    ]
    made = await q.enqueue_many(datas, group_id='g1')
    return [first, *made]


async def _scheduled(make: Make) -> list[Any]:
    q = make()
    at = await q.enqueue_at(datetime(2030, 1, 1, tzinfo=timezone.utc), jobs.add, 1, 2, at_front=True, job_timeout=9)
    later = await q.enqueue_in(timedelta(minutes=5), jobs.add, 3, 4, meta={'x': 1})
    return [at, later]


async def _enqueue_call(make: Make) -> list[Any]:
    q = make()
    job = await q.enqueue_call(
        jobs.echo, args=(1,), kwargs={'k': 2}, timeout=30, result_ttl=10, failure_ttl=20, description='d', webhooks=None
    )
    return [job]


async def _queue_settings(make: Make) -> list[Any]:
    made = []
    signed = make('signed', signing_key=SIGNING_KEY)
    made.append(await signed.enqueue(jobs.add, 1, 2))
    made += await signed.enqueue_many([Queue.prepare_data(jobs.add, (i, i)) for i in range(2)])
    made.append(await signed.enqueue_at(datetime(2030, 1, 1, tzinfo=timezone.utc), jobs.add, 5, 5))
    made.append(await make('events', events=True).enqueue(jobs.add, 1, 2))
    made.append(await make('timeout', default_timeout=77).enqueue(jobs.add, 1, 2))
    made.append(await make('json', serializer=JSONSerializer).enqueue(jobs.add, 1, 2))
    return made


async def _priority_capture(make: Make) -> list[Any]:
    q = make()
    first = await q.enqueue(jobs.add, 1, 2, priority=0, capture_output=True)
    return [first, await q.enqueue(jobs.add, 3, 4, priority=9)]


async def _job_writes(make: Make) -> list[Any]:
    q = make()
    kept = await q.enqueue(jobs.add, 1, 2, meta={'a': 1})
    gone = await q.enqueue(jobs.add, 3, 4)
    assert await kept.get_position() == 0 and await gone.get_position() == 1
    kept.meta['b'] = [2]
    await kept.save_meta()
    assert await kept.get_meta() == {'a': 1, 'b': [2]}
    await gone.delete()
    return [kept]


async def _cancel_and_requeue(make: Make) -> list[Any]:
    # a failed job (run at once by a synchronous queue), then requeued, and a queued one canceled
    sync = redis.Redis.from_url(os.environ['RQFAST_ASYNC_TEST_URL'])
    failed = Queue('q', connection=sync, is_async=False).enqueue(jobs.div_by_zero)
    sync.close()
    q = make()
    job = await q.fetch_job(failed.id)
    await job.requeue(at_front=True)
    other = await q.enqueue(jobs.add, 1, 2)
    await other.cancel()
    return [failed, other]


async def _group(make: Make) -> list[Any]:
    q = make()
    datas = [Queue.prepare_data(jobs.add, (i, i), meta={'i': i}) for i in range(3)]
    if isinstance(q, AsyncQueue):
        made = await AsyncGroup(q.connection, 'g').enqueue_many(q, datas)
        assert await AsyncGroup(q.connection, 'g').get_job_ids() == sorted(job.id for job in made)
    else:
        made = Group.create(q.target.connection, 'g').enqueue_many(q.target, datas)
    return made


SCENARIOS: dict[str, Scenario] = {
    'job_writes': _job_writes,
    'group': _group,
    'depends_on': _depends,
    'throttle': _throttle_twice,
    'debounce': _debounce_twice,
    'unique': _unique,
    'rate_limit': _rate_limited,
    'enqueue_many': _enqueue_many,
    'enqueue_at_in': _scheduled,
    'enqueue_call': _enqueue_call,
    'queue_settings': _queue_settings,
    'priority_capture_output': _priority_capture,
    'cancel_requeue': _cancel_and_requeue,
}

OPTIONS_WALKED = {
    'timeout', 'result_ttl', 'ttl', 'failure_ttl', 'description', 'depends_on', 'job_id', 'at_front', 'meta',
    'retry', 'repeat', 'on_success', 'on_failure', 'on_stopped', 'unique', 'webhooks', 'rate_limit',
    'capture_output', 'priority', 'debounce', 'throttle',
}  # fmt: skip


@pytest.mark.parametrize('name', sorted(SCENARIOS))
def test_rqfast_options_and_calls_write_the_same_either_way(
    redis_url: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv('RQFAST_ASYNC_TEST_URL', redis_url)
    run_both(redis_url, SCENARIOS[name])


def test_every_enqueue_option_is_walked() -> None:
    """A new enqueue option fails here until a scenario above enqueues with it both ways."""
    options = set(inspect.signature(Queue.enqueue_call).parameters) - {'self', 'func', 'args', 'kwargs', 'pipeline'}
    assert options - OPTIONS_WALKED == set()


def test_a_pipeline_holds_the_enqueue_until_execute(redis_url: str) -> None:
    async def go() -> None:
        client = aredis.Redis.from_url(redis_url)
        try:
            await client.flushdb()
            q = AsyncQueue('q', connection=client)
            async with client.pipeline() as pipe:
                job = await q.enqueue(jobs.add, 1, 2, pipeline=pipe)
                assert await q.count() == 0
                await pipe.execute()
            assert await q.job_ids() == [job.id]
            assert await job.get_status() == rqfast.job.JobStatus.QUEUED
        finally:
            await aclose(client)

    asyncio.run(go())


# ---------------------------------------------------------------------------------------------------
# many coroutines at once: their calls share one write (rqfast/asyncio/line.py), each its own command


def test_concurrent_enqueues_each_land_once(redis_url: str, redis_conn: redis.Redis) -> None:
    async def go() -> list[AsyncJob]:
        client = aredis.Redis.from_url(redis_url)
        try:
            q = AsyncQueue('q', connection=client)
            made = await asyncio.gather(*(q.enqueue(jobs.add, i, i) for i in range(300)))
            await client.function_flush()  # each call of the next burst meets "function not found" and reloads
            await client.script_flush()
            made += await asyncio.gather(*(q.enqueue(jobs.add, i, i, priority=i % 10) for i in range(100)))
            await aclose(client)  # a closed client's next call opens a new line
            made.append(await q.enqueue(jobs.add, 0, 0))
            return made
        finally:
            await aclose(client)

    made = asyncio.run(go())
    ids = [job.id for job in made]
    assert len(set(ids)) == 401
    assert sorted(i.decode() for i in redis_conn.lrange('rq:queue:q', 0, -1)) == sorted(ids)
    assert all(redis_conn.hget(f'rq:job:{i}', 'status') == b'queued' for i in ids)


def test_a_cancelled_caller_leaves_the_others_replies_in_order(redis_url: str, redis_conn: redis.Redis) -> None:
    async def go() -> list[Any]:
        client = aredis.Redis.from_url(redis_url)
        try:
            q = AsyncQueue('q', connection=client)
            await q.enqueue(jobs.add, 0, 0)
            tasks = [asyncio.ensure_future(q.enqueue(jobs.add, i, i, job_id=f'job-{i}')) for i in range(50)]
            await asyncio.sleep(0)
            tasks[10].cancel()
            done = await asyncio.gather(*tasks, return_exceptions=True)
            after = await q.enqueue(jobs.add, 1, 1, job_id='after')
            return [*done, after]
        finally:
            await aclose(client)

    done = asyncio.run(go())
    assert isinstance(done[10], asyncio.CancelledError)
    assert [job.id for i, job in enumerate(done[:50]) if i != 10] == [f'job-{i}' for i in range(50) if i != 10]
    assert done[50].id == 'after' and redis_conn.hget('rq:job:after', 'status') == b'queued'


# ---------------------------------------------------------------------------------------------------
# (b) bad input


def test_a_sync_client_given_to_the_async_queue_is_refused(redis_conn: redis.Redis) -> None:
    with pytest.raises(TypeError, match=r'redis\.asyncio client.*use rqfast\.Queue'):
        AsyncQueue('q', connection=redis_conn)


def test_an_async_client_given_to_the_sync_queue_is_refused(redis_url: str) -> None:
    client = aredis.Redis.from_url(redis_url)
    with pytest.raises(TypeError, match=r'asyncio client.*rqfast\.asyncio\.AsyncQueue'):
        Queue('q', connection=client)
    with pytest.raises(TypeError, match=r'asyncio client.*rqfast\.asyncio\.AsyncQueue'):
        rqfast.Job.create(jobs.add, connection=client)


def test_a_sync_call_on_an_async_job_names_the_awaitable(redis_url: str) -> None:
    async def go() -> None:
        client = aredis.Redis.from_url(redis_url)
        try:
            job = await AsyncQueue('q', connection=client).enqueue(jobs.add, 1, 2)
            with pytest.raises(TypeError, match='await the AsyncQueue/AsyncJob method'):
                job.job.refresh()
            assert getattr(job.job.connection, 'connection_pool', None) is None  # (a probe gets its default)
        finally:
            await aclose(client)

    asyncio.run(go())


def test_a_client_of_a_closed_loop_is_one_clear_error(redis_url: str, redis_conn: redis.Redis) -> None:
    client = aredis.Redis.from_url(redis_url)
    q = AsyncQueue('q', connection=client)

    async def enqueue() -> AsyncJob:
        return await q.enqueue(jobs.add, 1, 2)

    first = asyncio.run(enqueue())
    with pytest.raises(RuntimeError, match='belongs to another event loop'):
        asyncio.run(enqueue())
    ids = [i.decode() for i in redis_conn.lrange('rq:queue:q', 0, -1)]
    assert first.id in ids and all(redis_conn.hget(f'rq:job:{i}', 'status') == b'queued' for i in ids)


class _CuttingProxy:
    """A TCP proxy to Redis that cuts the client's connection once it has forwarded `cut_after` bytes of a
    command holding `marker`: the server gets half a command, as when a connection drops mid-enqueue."""

    def __init__(self, port: int, marker: bytes, keep: int) -> None:
        self.port, self.marker, self.keep = port, marker, keep

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection('127.0.0.1', self.port)

        async def down() -> None:
            try:
                while data := await up_reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass

        pump = asyncio.create_task(down())
        try:
            while data := await reader.read(65536):
                at = data.find(self.marker)
                if at >= 0:  # half of it, then the line drops
                    up_writer.write(data[: at + self.keep])
                    await up_writer.drain()
                    await asyncio.sleep(0.05)
                    break
                up_writer.write(data)
                await up_writer.drain()
        finally:
            pump.cancel()
            writer.close()
            up_writer.close()


def test_a_connection_lost_mid_enqueue_is_one_clear_error_and_writes_nothing(
    redis_url: str, redis_conn: redis.Redis
) -> None:
    port = int(redis_url.rsplit(':', 1)[1].split('/')[0])

    async def go() -> None:
        proxy = _CuttingProxy(port, b'cut-here', keep=4)
        server = await asyncio.start_server(proxy.handle, '127.0.0.1', 0)
        proxy_port = server.sockets[0].getsockname()[1]
        client = aredis.Redis(port=proxy_port, retry=None, socket_timeout=5)
        try:
            q = AsyncQueue('q', connection=client)
            await q.enqueue(jobs.add, 1, 2)  # loads the script: the next call is one short FCALL/EVALSHA
            with pytest.raises(redis.exceptions.ConnectionError):
                await q.enqueue(jobs.add, 1, 2, job_id='cut-here-job', description='x' * 100_000)
        finally:
            await aclose(client)
            server.close()

    asyncio.run(go())
    assert not redis_conn.exists('rq:job:cut-here-job')
    assert b'cut-here-job' not in redis_conn.lrange('rq:queue:q', 0, -1)
    assert redis_conn.llen('rq:queue:q') == 1  # the first enqueue only


# ---------------------------------------------------------------------------------------------------
# (c) awaiting a result with a real worker


@pytest.fixture
def worker(redis_url: str, redis_conn: redis.Redis) -> Iterator[subprocess.Popen[bytes]]:
    options = {'queues': ['q'], 'class': 'SimpleWorker', 'work': {'logging_level': 'WARNING'}}
    proc = subprocess.Popen([sys.executable, os.path.join(HERE, 'worker_process.py'), redis_url, json.dumps(options)])
    try:
        yield proc
    finally:
        proc.terminate()
        proc.wait(30)


def test_await_result_returns_the_workers_value(redis_url: str, worker: subprocess.Popen[bytes]) -> None:
    async def go() -> None:
        client = aredis.Redis.from_url(redis_url)
        try:
            q = AsyncQueue('q', connection=client)
            job = await q.enqueue(jobs.add, 20, 22)
            assert await job.result(timeout=60) == 42
            assert await job.get_status() == rqfast.job.JobStatus.FINISHED
            latest = await job.latest_result()
            assert latest is not None and latest.return_value == 42 and await job.return_value() == 42
            many = [await q.enqueue(jobs.add, i, i) for i in range(20)]
            assert await asyncio.gather(*(j.result(timeout=60) for j in many)) == [2 * i for i in range(20)]
            failing = await q.enqueue(jobs.div_by_zero)
            with pytest.raises(JobFailedError, match='ZeroDivisionError'):
                await failing.result(timeout=60)
            assert await q.failed_job_registry.get_job_ids() == [failing.id]
            assert await q.failed_job_registry.count() == 1
            await failing.requeue()
            with pytest.raises(JobFailedError):
                await failing.result(timeout=60)  # (its first result is FAILED too: the stream's oldest)
        finally:
            await aclose(client)

    asyncio.run(go())


def test_await_result_times_out_cleanly(redis_url: str, redis_conn: redis.Redis) -> None:
    async def go() -> None:
        client = aredis.Redis.from_url(redis_url)
        try:
            job = await AsyncQueue('nobody-works-here', connection=client).enqueue(jobs.add, 1, 2)
            started = time.monotonic()
            with pytest.raises(TimeoutError):
                await job.result(timeout=0.5)
            assert time.monotonic() - started >= 0.45
            assert await job.latest_result(timeout=0.2) is None
            assert await job.get_status() == rqfast.job.JobStatus.QUEUED  # still there, nothing changed
        finally:
            await aclose(client)

    asyncio.run(go())


def test_async_job_reads(redis_url: str) -> None:
    async def go() -> None:
        client = aredis.Redis.from_url(redis_url)
        try:
            await client.flushdb()
            q = AsyncQueue('reads', connection=client)
            job = await q.enqueue(jobs.add, 1, 2, meta={'k': 'v'})
            assert isinstance(job, AsyncJob) and job.meta == {'k': 'v'} and job.func_name.endswith('add')
            assert await q.count() == 1 and await q.get_job_ids(0, 1) == [job.id]
            fetched = await q.fetch_job(job.id)
            assert fetched == job and fetched.args == (1, 2)
            assert await q.fetch_job('missing') is None
            await q.pause()
            assert await q.is_paused()
            await q.resume()
            assert not await q.is_paused()
            assert await q.deferred_job_registry.count() == 0
            assert await q.scheduled_job_registry.get_job_ids() == []
            await job.cancel()
            assert await q.canceled_job_registry.get_job_ids() == [job.id]
            assert await job.get_status(refresh=False) == rqfast.job.JobStatus.CANCELED
        finally:
            await aclose(client)

    asyncio.run(go())
