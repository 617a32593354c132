"""rqfast's dashboard on what RQ 3.0.0 writes: its producer's jobs, its workers, their results, the
executions index, the ready registry and its concurrency rate limits (tests/test_dashboard.py does the
same for rq 2.12, the normal run's rq)."""

from __future__ import annotations

import re
import time

import pytest
import redis
import rq
import rq.worker
from rq.rate_limit import RateLimit

from tests.dashboard_server import dashboard

pytestmark = pytest.mark.timeout(60)


def cell(html: str, queue: str, kind: str) -> int:
    row = re.search(rf'<tr data-queue="{queue}">(.*?)</tr>', html, re.S)
    assert row, f'no row for {queue}'
    found = re.search(rf'data-count="{kind}">(?:<a [^>]*>)?([\d,]+)', row.group(1))
    assert found, kind
    return int(found.group(1).replace(',', ''))


def test_rq3_jobs_workers_and_rate_limits_are_shown(redis_conn: redis.Redis) -> None:
    queue = rq.Queue('rq3', connection=redis_conn)
    done = queue.enqueue('operator.add', 20, 22)
    broken = queue.enqueue('operator.truediv', 1, 0)
    rq.worker.SimpleWorker([queue], connection=redis_conn).work(burst=True)
    limited = [queue.enqueue('operator.add', n, 1, rate_limit=RateLimit('rq3-api', concurrency=1)) for n in range(3)]
    idle = rq.worker.SimpleWorker([queue], connection=redis_conn, name='rq3-idle')
    idle.register_birth()
    try:
        with dashboard(redis_conn) as client:
            queues = client.get('/queues').text
            assert cell(queues, 'rq3', 'finished') == 1 and cell(queues, 'rq3', 'failed') == 1
            assert cell(queues, 'rq3', 'queued') == redis_conn.llen('rq:queue:rq3')
            page = client.get(f'/jobs/{done.id}').text
            assert 'operator.add(20, 22)' in page and '>42<' in page.replace(' ', '')
            assert 'ZeroDivisionError' in client.get(f'/jobs/{broken.id}').text
            waiting = client.get(f'/jobs/{limited[-1].id}').text
            assert 'rq3-api' in waiting and limited[-1].get_status().value in waiting
            assert 'rq3-idle' in client.get('/workers').text
            deadline = time.monotonic() + 20
            while 'data-limit="rq3-api"' not in (listed := client.get('/queues').text):
                assert time.monotonic() < deadline
                time.sleep(0.1)
            row = re.search(r'<tr data-limit="rq3-api">(.*?)</tr>', listed, re.S)
            assert row and re.findall(r'<td class="n">([^<]*)</td>', row.group(1))[:3] == ['1', '1', '2']
    finally:
        idle.register_death()
