"""examples/fastapi_app.py and examples/django_async_view.py against a real Redis and a real worker: a
request enqueues, the worker runs the job, the request awaits its result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # (examples/ is imported as a namespace package, as uvicorn does from the root)

from examples import fastapi_app  # noqa: E402

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def client(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setattr(fastapi_app, 'REDIS_URL', redis_url)
    monkeypatch.setattr(fastapi_app, 'RESULT_TIMEOUT', 60.0)
    with TestClient(fastapi_app.app) as test_client:
        yield test_client


@pytest.fixture
def worker(redis_url: str, redis_conn: redis.Redis) -> Iterator[None]:
    options = {'queues': ['default'], 'class': 'SimpleWorker', 'work': {'logging_level': 'WARNING'}}
    proc = subprocess.Popen(
        [sys.executable, os.path.join(HERE, 'worker_process.py'), redis_url, json.dumps(options)], cwd=ROOT
    )
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_request_enqueues_and_awaits_the_workers_result(client: TestClient, worker: None) -> None:
    answer = client.get('/add', params={'a': 20, 'b': 22})
    assert answer.status_code == 200, answer.text
    assert answer.json()['result'] == 42
    job_id = client.post('/count', params={'text': 'one two three'}).json()['job_id']
    shown = client.get(f'/jobs/{job_id}').json()
    assert shown['status'] in ('queued', 'started', 'finished')
    assert client.get('/jobs/no-such-job').status_code == 404


def test_no_worker_means_a_504_and_the_job_stays_queued(
    client: TestClient, redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fastapi_app, 'RESULT_TIMEOUT', 0.3)
    answer = client.get('/add', params={'a': 1, 'b': 2})
    assert answer.status_code == 504
    assert redis_conn.llen('rq:queue:default') == 1


def _django(redis_url: str, timeout: str) -> list[object]:
    done = subprocess.run(
        [sys.executable, '-m', 'tests.django_async_run', redis_url, timeout],
        cwd=ROOT,
        env={**os.environ, 'PYTHONPATH': ROOT},
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    answer: list[object] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_the_django_async_view_awaits_the_workers_result(redis_url: str, worker: None) -> None:
    status, body = _django(redis_url, '60')
    assert status == 200 and isinstance(body, dict) and body['result'] == 42


def test_the_django_async_view_answers_504_without_a_worker(redis_url: str, redis_conn: redis.Redis) -> None:
    status, body = _django(redis_url, '0.3')
    assert status == 504 and isinstance(body, dict)
    assert redis_conn.lrange('rq:queue:default', 0, -1) == [body['job_id'].encode()]
