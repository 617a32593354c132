"""Webhooks sent by rqfast's workers to a local HTTP server, with rq 2.12's worker as the oracle.

The server (http.server in a thread, on 127.0.0.1) records every request; a path says how it
answers: /ok 200, /error 500, /hang not until the test lets it. Each worker class runs the jobs;
rq's own worker runs the same jobs against the same server, and what both sent is compared.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis
import rq
import rq.webhook

import rqfast
from rqfast import Retry, Webhook

try:
    from polling import wait_for
except ImportError:  # tests/ became a package
    from tests.polling import wait_for  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(90)

TESTS_DIR = Path(__file__).resolve().parent
WORKERS = [rqfast.SimpleWorker, rqfast.Worker, rqfast.SpawnWorker]
ISO = re.compile(r'^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(\+00:00)?$')


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class HookServer:
    """What the server received; `release` lets hanging requests answer."""

    url: str
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def on(self, path: str) -> list[Received]:
        with self.lock:
            return [r for r in self.received if r.path == path]


@pytest.fixture
def hooks() -> Iterator[HookServer]:
    state = HookServer('')

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get('Content-Length') or 0)
            raw = self.rfile.read(length) if length else b''
            with state.lock:
                state.received.append(
                    Received(self.command, self.path, dict(self.headers), json.loads(raw) if raw else None)
                )
            if self.path.startswith('/hang'):
                state.release.wait(60)
            self.send_response(500 if self.path.startswith('/error') else 200)
            self.send_header('Content-Length', '0')
            self.end_headers()

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
    server.daemon_threads = True
    state.url = f'http://127.0.0.1:{server.server_address[1]}'
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()


def hooks_for(url: str, module: Any = rqfast) -> list[Any]:
    """A finished POST with a header, a finished GET and a failed POST: the same for rq's Webhook and ours."""
    return [
        module.Webhook(f'{url}/done', 'finished', method='POST', headers={'X-Token': 'secret'}),
        module.Webhook(f'{url}/done-get', 'finished'),
        module.Webhook(f'{url}/fail', 'failed', method='POST', timeout=3),
    ]


def run(worker_class: Any, conn: redis.Redis, **kwargs: Any) -> Any:
    worker = worker_class(['q'], connection=conn)
    for name, value in kwargs.items():
        setattr(worker, name, value)
    worker.work(burst=True, logging_level='WARNING')
    return worker


@pytest.mark.parametrize('worker_class', WORKERS, ids=lambda c: c.__name__)
def test_finished_and_failed_jobs_send_their_matching_webhooks(
    redis_conn: redis.Redis, hooks: HookServer, worker_class: Any
) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    ok = queue.enqueue('jobs.say_hello', 'Ada', webhooks=hooks_for(hooks.url))
    bad = queue.enqueue('jobs.div_by_zero', webhooks=hooks_for(hooks.url))
    run(worker_class, redis_conn)  # a burst worker waits (bounded) for its webhooks before work() returns

    assert [r.body['job_id'] for r in hooks.on('/done')] == [ok.id]
    assert len(hooks.on('/done-get')) == 1 and len(hooks.on('/fail')) == 1
    done, got, fail = hooks.on('/done')[0], hooks.on('/done-get')[0], hooks.on('/fail')[0]
    assert done.method == 'POST' and done.headers['X-Token'] == 'secret'
    assert done.headers['Content-Type'] == 'application/json'
    assert done.body['func_name'] == 'jobs.say_hello' and done.body['status'] == 'finished'
    assert 'exc_info' not in done.body
    assert ISO.match(done.body['enqueued_at']) and ISO.match(done.body['ended_at'])
    assert got.method == 'GET' and got.body is None and got.path == '/done-get'
    assert fail.body['job_id'] == bad.id and fail.body['func_name'] == 'jobs.div_by_zero'
    assert fail.body['status'] == 'failed' and 'ZeroDivisionError' in fail.body['exc_info']
    assert ok.get_status() == 'finished' and bad.get_status() == 'failed'


def _shape(body: dict[str, Any]) -> dict[str, Any]:
    """A payload with what differs between two runs (ids, times, tracebacks' paths) reduced to its form."""
    shape = dict(body)
    shape['job_id'] = bool(body['job_id'])
    for name in ('enqueued_at', 'ended_at'):
        shape[name] = None if body[name] is None else bool(ISO.match(body[name])) and body[name].endswith('+00:00')
    if 'exc_info' in body:
        shape['exc_info'] = (body['exc_info'].startswith('Traceback'), body['exc_info'].strip().splitlines()[-1])
    return shape


def _sent(server: HookServer) -> list[tuple[str, str, str, list[str]]]:
    with server.lock:
        found = list(server.received)
        server.received.clear()
    skip = {'Host', 'Content-Length'}
    return sorted(
        (
            r.method,
            r.path,
            json.dumps(_shape(r.body) if r.body else None, sort_keys=True),
            sorted(set(r.headers) - skip),
        )
        for r in found
    )


@pytest.mark.parametrize('worker_class', WORKERS, ids=lambda c: c.__name__)
def test_what_is_sent_matches_rq(redis_conn: redis.Redis, hooks: HookServer, worker_class: Any) -> None:
    """The same jobs, enqueued by rq, run by rq's Worker then by ours: the same requests, payloads of the same form."""
    jobs = [('jobs.say_hello', ('Ada',)), ('jobs.div_by_zero', ()), ('jobs.add', (1, 'x'))]
    sent = []
    for runner in (rq.Worker, worker_class):
        queue = rq.Queue('q', connection=redis_conn)
        for func, args in jobs:
            queue.enqueue(func, *args, webhooks=hooks_for(hooks.url, rq.webhook), result_ttl=0)
        queue.enqueue('jobs.say_hello', retry=rq.Retry(max=1), webhooks=hooks_for(hooks.url, rq.webhook))
        runner(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
        wait_for(lambda: len(hooks.received) >= 6)
        sent.append(_sent(hooks))
    assert sent[1] == sent[0]
    assert len(sent[0]) == 6  # 2 finished jobs x 2 + 2 failed


@pytest.mark.parametrize('worker_class', WORKERS, ids=lambda c: c.__name__)
def test_an_endpoint_answering_500_gets_one_request_and_the_job_stays_finished(
    redis_conn: redis.Redis, hooks: HookServer, worker_class: Any, caplog: pytest.LogCaptureFixture
) -> None:
    counts = []
    for runner in (rq.SimpleWorker, worker_class):  # rq: one attempt, no retry
        hook = rq.webhook.Webhook(f'{hooks.url}/error', 'finished')
        job = rq.Queue('q', connection=redis_conn).enqueue('jobs.say_hello', webhooks=[hook])
        runner(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
        assert job.get_status() == 'finished'
        counts.append(len(hooks.on('/error')))
    assert counts == [1, 2]
    assert any('Failed to send webhook' in r.getMessage() for r in caplog.records if r.name == 'rqfast.webhook')


@pytest.mark.parametrize('worker_class', WORKERS, ids=lambda c: c.__name__)
def test_a_hanging_endpoint_delays_no_job_and_shutdown_waits_only_so_long(
    redis_conn: redis.Redis, hooks: HookServer, worker_class: Any
) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    hang = Webhook(f'{hooks.url}/hang', 'finished', timeout=60)
    # a first job to start the worker's horses, then five that each ask for a hanging request
    queue.enqueue('jobs.noop')
    timed = [queue.enqueue('jobs.noop', webhooks=[hang]) for _ in range(5)]
    worker = worker_class(['q'], connection=redis_conn)
    worker.webhook_shutdown_wait = 1
    start = time.monotonic()
    worker.work(burst=True, logging_level='WARNING')
    took = time.monotonic() - start
    # the first request hangs; the others wait behind it, then are dropped (on a loaded machine the sender
    # may not even have sent the first one in the webhook_shutdown_wait second: then none arrived)
    assert len(hooks.on('/hang')) <= 1, hooks.received
    ended = [job.get_status() for job in timed]
    assert ended == ['finished'] * 5
    runs = [rqfast.Job.fetch(job.id, connection=redis_conn) for job in timed]
    spread = (max(j.ended_at for j in runs) - min(j.started_at for j in runs)).total_seconds()  # type: ignore
    # bounds at half the hang: on a loaded machine a SpawnWorker's five jobs alone took 5.5 s
    assert spread < 30, spread  # nothing waited on the endpoint (one hung request would take 60 s)
    assert took < 30, took  # the jobs, then at most webhook_shutdown_wait for the webhooks (not the 60 s hang)


def test_a_retried_job_sends_failed_once_at_the_end(redis_conn: redis.Redis, hooks: HookServer) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    job = queue.enqueue('jobs.div_by_zero', retry=Retry(max=2), webhooks=hooks_for(hooks.url))
    run(rqfast.Worker, redis_conn)
    assert job.get_status() == 'failed'
    assert [r.body['job_id'] for r in hooks.on('/fail')] == [job.id]
    assert hooks.on('/done') == []


def test_a_killed_horse_sends_failed_without_reading_the_job_data(redis_conn: redis.Redis, hooks: HookServer) -> None:
    """The horse died before reporting: the parent sends from what it has (func_name unknown: None)."""
    queue = rqfast.Queue('q', connection=redis_conn)
    job = queue.enqueue('worker_jobs.signal_self', int(signal.SIGKILL), webhooks=hooks_for(hooks.url))
    run(rqfast.Worker, redis_conn)
    assert job.get_status() == 'failed'
    (sent,) = hooks.on('/fail')
    assert sent.body['job_id'] == job.id and sent.body['func_name'] is None
    assert 'Work-horse terminated unexpectedly' in sent.body['exc_info']


def test_jobs_without_webhooks_start_no_sender(redis_conn: redis.Redis) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    for _ in range(3):
        queue.enqueue('jobs.noop')
    worker = run(rqfast.SimpleWorker, redis_conn)
    assert worker._recorder.webhooks is None
    assert not [t for t in threading.enumerate() if t.name == 'rqfast-webhooks']


def test_is_async_false_sends_at_once(redis_conn: redis.Redis, hooks: HookServer) -> None:
    queue = rqfast.Queue('q', connection=redis_conn, is_async=False)
    job = queue.enqueue('jobs.div_by_zero', webhooks=hooks_for(hooks.url))
    (sent,) = hooks.on('/fail')  # sent before enqueue returned
    assert sent.body['job_id'] == job.id and 'ZeroDivisionError' in sent.body['exc_info']


def test_sigterm_stops_a_worker_whose_endpoint_hangs(
    redis_url: str, redis_conn: redis.Redis, hooks: HookServer
) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    job = queue.enqueue('jobs.noop', webhooks=[Webhook(f'{hooks.url}/hang', 'finished', timeout=60)])
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(TESTS_DIR.parent), str(TESTS_DIR)])}
    process = subprocess.Popen(
        [sys.executable, '-m', 'rqfast.cli', 'worker', '--url', redis_url, '-w', 'rqfast.Worker', 'q'],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: len(hooks.on('/hang')) == 1, timeout=30)
        assert job.get_status() == 'finished'
        start = time.monotonic()
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        took = time.monotonic() - start
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert took < 30, took  # WEBHOOK_SHUTDOWN_WAIT (5 s) and the worker's own stop, not the 60 s hang


def test_the_sender_never_blocks_and_drops_what_it_cannot_hold(caplog: pytest.LogCaptureFixture) -> None:
    from rqfast.worker.webhooks import WebhookJob, WebhookSender

    release, sent = threading.Event(), []

    class Stuck(Webhook):
        def send(self, job: Any, *, exc_string: str | None = None) -> None:
            release.wait(30)
            sent.append(job.id)

    sender = WebhookSender('w', capacity=2)
    hook = Stuck('http://127.0.0.1:9/', 'finished')
    start = time.monotonic()
    for n in range(5):  # one in flight, two held, two dropped
        sender.submit(hook, WebhookJob(str(n), None, None, None), None)
        if n == 0:
            wait_for(lambda: not sender._pending)  # the thread took the first one
    assert time.monotonic() - start < 15  # never waited for the stuck send (30 s)
    assert sum('webhooks waiting to be sent' in r.getMessage() for r in caplog.records) == 2
    assert sender.close(0.2) == 3  # the one in flight and the two held: not sent in time
    release.set()
    wait_for(lambda: sent == ['0'])
    assert sender._thread is not None
    sender._thread.join(5)
    assert not sender._thread.is_alive() and sent == ['0']  # the held ones were dropped at close
