"""What tests/test_async_cluster.py runs in a subprocess (RQ_KEY_PREFIX is read at import): an asyncio
producer on redis.asyncio's RedisCluster, a burst SimpleWorker on redis-py's, then the results awaited.

`python -m tests.async_cluster_run <port>` prints one JSON line of what it saw.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from redis.asyncio.cluster import RedisCluster as AsyncCluster
from redis.cluster import RedisCluster

from rqfast import Retry, SimpleWorker
from rqfast.asyncio import AsyncQueue
from rqfast.queue import Queue

ADD = 'tests.jobs.add'


async def aclose(client: Any) -> None:
    """client.aclose(), or close() on redis-py 5.0.0 (aclose came in 5.0.1)."""
    await (client.aclose() if hasattr(client, 'aclose') else client.close())


async def produce(port: int) -> dict[str, Any]:
    client = AsyncCluster(host='127.0.0.1', port=port)
    try:
        q = AsyncQueue('aq', connection=client)
        first = await q.enqueue(ADD, 1, 2, retry=Retry(max=2), priority=1)
        second = await q.enqueue(ADD, 3, 4, depends_on=first)
        many = await q.enqueue_many([Queue.prepare_data(ADD, (i, i)) for i in range(5)])
        throttled = [await q.enqueue(ADD, 0, 0, throttle=('t', 60)) for _ in range(2)]
        pipe = client.pipeline()
        piped = await q.enqueue(ADD, 5, 5, pipeline=pipe)
        await pipe.execute()
        canceled = await q.enqueue(ADD, 9, 9)
        await canceled.cancel()
        return {
            'ids': [first.id, second.id, *(job.id for job in many), piped.id],
            'deferred': await q.deferred_job_registry.get_job_ids(),
            'second': (await second.get_status()).value,
            'count': await q.count(),
            'throttled_same': throttled[0].id == throttled[1].id,
            'canceled': await q.canceled_job_registry.get_job_ids() == [canceled.id],
        }
    finally:
        await aclose(client)


async def results(port: int, ids: list[str]) -> list[Any]:
    client = AsyncCluster(host='127.0.0.1', port=port)
    try:
        q = AsyncQueue('aq', connection=client)
        found = [await q.fetch_job(job_id) for job_id in ids]
        return [await job.result(timeout=30) for job in found if job is not None]
    finally:
        await aclose(client)


def main() -> None:
    port = int(sys.argv[1])
    seen = asyncio.run(produce(port))
    sync = RedisCluster(host='127.0.0.1', port=port)
    SimpleWorker(['aq'], connection=sync).work(burst=True, logging_level='WARNING')
    sync.close()
    seen['results'] = asyncio.run(results(port, seen['ids']))
    print(json.dumps(seen))


if __name__ == '__main__':
    main()
