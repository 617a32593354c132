"""A FastAPI app whose request enqueues a job and awaits its result (docs/async.md).

    pip install 'rqfast[examples]'
    rqfast worker --url redis://localhost:6379/0 &      # runs the jobs (another process, or machine)
    uvicorn examples.fastapi_app:app                     # from the repository's root
    curl 'localhost:8000/add?a=1&b=2'                    # {"job_id": "...", "result": 3}

The app holds one redis.asyncio client for its life (lifespan); each request awaits its job's result
on the job's results stream (one blocking read, no polling), and answers 504 if none comes in time.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as aredis
from fastapi import FastAPI, HTTPException

from examples.quickstart_jobs import add, count_words
from rqfast.asyncio import AsyncQueue, JobFailedError

REDIS_URL = os.environ.get('REDIS_URL', 'redis://localhost:6379/0')
RESULT_TIMEOUT = float(os.environ.get('RESULT_TIMEOUT', '10'))


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    client = aredis.Redis.from_url(REDIS_URL)
    app.state.queue = AsyncQueue('default', connection=client)
    yield
    await client.aclose()


app = FastAPI(lifespan=lifespan)


@app.get('/add')
async def add_numbers(a: int, b: int) -> dict[str, Any]:
    job = await app.state.queue.enqueue(add, a, b, result_ttl=60)
    return {'job_id': job.id, 'result': await _result(job)}


@app.post('/count')
async def count(text: str) -> dict[str, Any]:
    """Enqueue only: the caller fetches the outcome later from /jobs/<id>."""
    job = await app.state.queue.enqueue(count_words, text)
    return {'job_id': job.id}


@app.get('/jobs/{job_id}')
async def job_status(job_id: str) -> dict[str, Any]:
    job = await app.state.queue.fetch_job(job_id)
    if job is None:
        raise HTTPException(404, 'no such job')
    latest = await job.latest_result()
    return {'status': await job.get_status(), 'result': latest.return_value if latest else None}


async def _result(job: Any) -> Any:
    try:
        return await job.result(timeout=RESULT_TIMEOUT)
    except TimeoutError:
        raise HTTPException(504, f'job {job.id} has no result yet') from None
    except JobFailedError as exc:
        raise HTTPException(500, str(exc)) from None
