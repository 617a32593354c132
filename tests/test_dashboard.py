"""The dashboard over HTTP (`rqfast dashboard`, rqfast.dashboard), against the session's real Redis.

Pages are checked against what Redis holds; bad input (an unknown job, a malformed hash, a payload
the allow-list refuses, a wrong token, a forged form) gets a clear page and leaves Redis as it was.
The browser drives the same pages in tests/test_dashboard_browser.py.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from starlette.applications import Starlette
from starlette.routing import Mount

from rqfast import Queue, RateLimit, Retry, SimpleWorker
from rqfast.dashboard import Settings, create_app, create_wsgi_app, guard
from rqfast.dashboard.catalog import Catalog
from rqfast.dashboard.charts import nice_ceiling
from rqfast.dashboard.history import FunctionStats, HistoryStore, Point
from rqfast.dashboard.sampler import Sampler, function_name
from rqfast.security import JobPolicy
from tests.dashboard_server import csrf, dashboard, free_port, served, state

pytestmark = pytest.mark.timeout(90)

ROOT = Path(__file__).resolve().parent.parent
TRACEBACK = 'Traceback (most recent call last)'


def count_cell(html: str, row: str, kind: str) -> int:
    """The number in the `data-count="<kind>"` cell of the table row `data-queue="<row>"`."""
    found = re.search(rf'<tr data-queue="{re.escape(row)}">(.*?)</tr>', html, re.S)
    assert found, f'no row for queue {row}'
    cell = re.search(rf'data-count="{kind}">(?:<a [^>]*>)?([\d,]+)', found.group(1))
    assert cell, f'no {kind} count in the row of {row}'
    return int(cell.group(1).replace(',', ''))


def work(connection: redis.Redis, *queues: str) -> None:
    SimpleWorker(list(queues), connection=connection).work(burst=True)


@pytest.fixture
def filled(redis_conn: redis.Redis) -> dict[str, Any]:
    """Two queues: jobs queued, finished, failed, scheduled, deferred, a paused queue, priority lanes."""
    mail, reports = Queue('mail', connection=redis_conn), Queue('reports', connection=redis_conn)
    done = [mail.enqueue('operator.add', n, 1) for n in range(3)]
    failed = mail.enqueue('tests.dashboard_jobs.fail', 'boom')
    work(redis_conn, 'mail')
    queued = [mail.enqueue('operator.add', n, 2) for n in range(5)]
    laned = [reports.enqueue('operator.add', n, 3, priority=n % 2) for n in range(4)]
    scheduled = reports.enqueue_in(__import__('datetime').timedelta(hours=1), 'operator.add', 9, 9)
    deferred = reports.enqueue('operator.add', 1, 1, depends_on=queued[0])
    reports.pause()
    return {
        'done': done,
        'failed': failed,
        'queued': queued,
        'laned': laned,
        'scheduled': scheduled,
        'deferred': deferred,
    }


def test_every_page_answers_with_the_counts_redis_holds(redis_conn: redis.Redis, filled: dict[str, Any]) -> None:
    with dashboard(redis_conn) as client:
        pages = {path: client.get(path) for path in ('/', '/queues', '/queues/mail', '/jobs', '/workers')}
        pages.update({path: client.get(path) for path in ('/functions', '/scheduled', '/live/overview')})
        for kind in ('queued', 'started', 'finished', 'failed', 'deferred', 'scheduled', 'canceled', 'ready'):
            pages[f'/queues/reports/jobs/{kind}'] = client.get(f'/queues/reports/jobs/{kind}')
        assert {path: response.status_code for path, response in pages.items()} == dict.fromkeys(pages, 200)
        assert not [path for path, response in pages.items() if TRACEBACK in response.text]
        queues = pages['/queues'].text
        for name in ('mail', 'reports'):
            assert count_cell(queues, name, 'queued') == redis_conn.llen(f'rq:queue:{name}')
            for kind, key in (('finished', 'finished'), ('failed', 'failed'), ('scheduled', 'scheduled')):
                assert count_cell(queues, name, kind) == redis_conn.zcard(f'rq:{key}:{name}')
            assert count_cell(queues, name, 'deferred') == redis_conn.zcard(f'rq:deferred:{name}')
        assert count_cell(pages['/'].text, 'mail', 'queued') == 5
        assert count_cell(pages['/'].text, 'mail', 'failed') == 1
        assert re.search(r'id="queued-total">9<', pages['/'].text)
        assert 'badge paused' in re.search(r'<tr data-queue="reports">.*?</tr>', queues, re.S).group(0)
        assert re.search(r'<td class="mono">0:2 1:2 </td>', queues)  # reports' priority lanes
        listed = pages['/queues/reports/jobs/scheduled'].text
        assert filled['scheduled'].id in listed and filled['scheduled'].id in pages['/scheduled'].text
        assert filled['deferred'].id in pages['/queues/reports/jobs/deferred'].text
        queued_page = client.get('/queues/mail/jobs/queued').text
        assert [job.id for job in filled['queued']] == re.findall(r'<tr data-job="([^"]+)"', queued_page)


def test_a_job_page_shows_its_call_meta_progress_output_result_and_runs(redis_conn: redis.Redis) -> None:
    queue = Queue('pages', connection=redis_conn, events=True)
    job = queue.enqueue('tests.dashboard_jobs.report', 7, text='counting', capture_output=True)
    failing = queue.enqueue('tests.dashboard_jobs.fail', 'it broke', retry=Retry(max=1))
    work(redis_conn, 'pages')
    with dashboard(redis_conn) as client:
        page = client.get(f'/jobs/{job.id}', params={'queue': 'pages'}).text
        assert 'tests.dashboard_jobs.report(7, text=&#39;counting&#39;)' in page
        assert '&#39;stage&#39;: &#39;counted&#39;' in page  # meta
        assert '&#34;done&#34;: 7' in page  # progress
        assert 'counting on 7 items' in page  # captured output
        assert '{&#39;items&#39;: 7}' in page  # the result
        assert re.search(
            r'<td>finished</td>.*?<td>progress</td>.*?<td>started</td>', page, re.S
        )  # its events, newest first
        failed_page = client.get(f'/jobs/{failing.id}').text  # no queue given: found by its origin
        assert 'ValueError: it broke' in failed_page
        assert failed_page.count('badge failed') >= 2  # the status and its last run
        assert 'retried' in failed_page  # the first run's outcome (a retry was left)
        assert (
            client.get('/jobs', params={'id': job.id}, follow_redirects=False)
            .headers['location']
            .endswith(f'/jobs/{job.id}?queue=pages')
        )


def test_the_rate_limits_are_shown_without_a_page_waiting_for_their_scan(redis_conn: redis.Redis) -> None:
    queue = Queue('limited', connection=redis_conn)
    for n in range(5):
        queue.enqueue('operator.add', n, 1, rate_limit=RateLimit('api', concurrency=2))
    queue.enqueue('operator.add', 9, 9, rate_limit=RateLimit('window', rate=3, per=60))
    work(redis_conn, 'limited')
    queue.enqueue('operator.add', 1, 1, rate_limit=RateLimit('api', concurrency=2))
    with dashboard(redis_conn) as client:
        deadline = time.monotonic() + 20
        while 'data-limit="api"' not in (page := client.get('/queues').text):  # read in the background
            assert time.monotonic() < deadline, page
            time.sleep(0.1)
        api = re.search(r'<tr data-limit="api">(.*?)</tr>', page, re.S).group(1)
        cells = [int(c) if c.isdigit() else c for c in re.findall(r'<td class="n">([^<]*)</td>', api)]
        assert cells[:3] == [2, redis_conn.zcard('rq:rl:api:allowed'), redis_conn.zcard('rq:rl:api:rate_limited')]
        window = re.search(r'<tr data-limit="window">(.*?)</tr>', page, re.S).group(1)
        assert re.findall(r'<td class="n">([^<]*)</td>', window)[3] == '1'  # one start in its window log
        assert 'data-limit="api"' in client.get('/scheduled').text


def test_a_queue_name_that_needs_quoting_has_working_links(redis_conn: redis.Redis) -> None:
    name = 'reports & mail?#1'
    job = Queue(name, connection=redis_conn).enqueue('operator.add', 1, 1)
    with dashboard(redis_conn) as client:
        link = re.search(r'href="(/queues/[^"]*)"', client.get('/queues').text)
        assert link and link.group(1) == '/queues/reports%20%26%20mail%3F%231'
        page = client.get('/queues/reports%20%26%20mail%3F%231/jobs/queued')
        assert page.status_code == 200 and job.id in page.text
        assert client.get(f'/jobs/{job.id}').status_code == 200


def test_a_function_search_reads_a_bounded_stretch_of_the_list(redis_conn: redis.Redis) -> None:
    queue = Queue('search', connection=redis_conn)
    wanted = [queue.enqueue('operator.mul', n, 2) for n in range(3)]
    for n in range(30):
        queue.enqueue('operator.add', n, 1)
    with dashboard(redis_conn) as client:
        page = client.get('/queues/search/jobs/queued', params={'q': 'operator.mul'}).text
        assert re.findall(r'<tr data-job="([^"]+)"', page) == [job.id for job in wanted]
        assert 'Searched 33 of 33' in page
        response = client.get(
            '/jobs', params={'queue': 'search', 'status': 'queued', 'q': 'mul'}, follow_redirects=False
        )
        assert response.status_code == 303 and response.headers['location'].endswith('/queues/search/jobs/queued?q=mul')


# --- bad input: a clear page, nothing changed


def test_an_unknown_job_or_queue_is_a_404_page_and_changes_nothing(
    redis_conn: redis.Redis, filled: dict[str, Any]
) -> None:
    before = state(redis_conn)
    with dashboard(redis_conn) as client:
        for path in (
            '/jobs/no-such-job',
            '/jobs/not%20an%20id',
            '/queues/nope',
            '/queues/mail/jobs/nope',
            '/live/jobs/nope',
        ):
            response = client.get(path)
            assert response.status_code == 404, path
            assert 'There is no' in response.text and TRACEBACK not in response.text
        searched = client.get('/jobs', params={'id': 'no-such-job'})
        assert searched.status_code == 404 and 'No job &#39;no-such-job&#39;' in searched.text
    assert state(redis_conn) == before


def test_a_malformed_job_hash_is_shown_with_what_is_wrong(redis_conn: redis.Redis) -> None:
    redis_conn.hset('rq:job:broken', mapping={'status': 'bogus', 'created_at': 'yesterday', 'origin': 'x'})
    redis_conn.hset('rq:job:garbled', mapping={'data': b'\x80not a pickle', 'status': 'queued', 'origin': 'x'})
    before = state(redis_conn)
    with dashboard(redis_conn) as client:
        broken = client.get('/jobs/broken')
        assert broken.status_code == 200 and TRACEBACK not in broken.text
        assert 'this job hash cannot be loaded' in broken.text and 'no data field' in broken.text
        assert 'status=b&#39;bogus&#39;' in broken.text
        garbled = client.get('/jobs/garbled')
        assert garbled.status_code == 200 and TRACEBACK not in garbled.text
        assert 'cannot be read: ' in garbled.text  # the call: its data is no pickle
    assert state(redis_conn) == before


def test_a_payload_the_allow_list_refuses_is_never_unpickled(redis_conn: redis.Redis, tmp_path: Path) -> None:
    from tests.dashboard_jobs import Tripwire

    marker = tmp_path / 'tripped'
    queue = Queue('guarded', connection=redis_conn)
    job = queue.enqueue('operator.add', Tripwire(str(marker)), 1, meta={'note': Tripwire(str(marker))})
    assert not marker.exists()
    before = state(redis_conn)
    policy = JobPolicy.make(allow=['operator'])
    with dashboard(redis_conn, policy=policy) as client:
        page = client.get(f'/jobs/{job.id}').text
        assert 'not read: job' in page and 'tests.dashboard_jobs.trip, which is not in the allow-list' in page
        assert client.get('/queues/guarded/jobs/queued').status_code == 200
    assert not marker.exists()
    with dashboard(redis_conn, policy=JobPolicy.make(key='a signing key')) as client:
        assert 'it is not signed' in client.get(f'/jobs/{job.id}').text
    assert not marker.exists()
    with dashboard(redis_conn, decode=False) as client:
        assert 'started with --no-decode' in client.get(f'/jobs/{job.id}').text
    assert not marker.exists()
    assert state(redis_conn) == before


def test_a_wrong_token_is_refused_and_the_right_one_lets_in(redis_conn: redis.Redis, filled: dict[str, Any]) -> None:
    before = state(redis_conn)
    with dashboard(redis_conn, token='s3cret-token') as client:
        refused = client.get('/')
        assert refused.status_code == 401 and 'name="token"' in refused.text
        wrong = client.get('/queues', headers={'authorization': 'Bearer nope'})
        assert wrong.status_code == 401 and 'Wrong credentials' in wrong.text and TRACEBACK not in wrong.text
        assert client.post('/actions/empty', data={'queue': 'mail'}).status_code == 401
        assert client.post('/login', data={'token': 'nope'}).status_code == 401
        assert client.get('/', headers={'authorization': 'Bearer s3cret-token'}).status_code == 200
        logged_in = client.post('/login', data={'token': 's3cret-token'}, follow_redirects=True)
        assert logged_in.status_code == 200 and 'id="queues"' in logged_in.text
        assert 's3cret-token' not in client.cookies.get('rqfast_dashboard_token', '')
    with dashboard(redis_conn, basic_auth=('ops', 'pw')) as client:
        prompted = client.get('/workers')
        assert prompted.status_code == 401 and prompted.headers['www-authenticate'].startswith('Basic')
        assert client.get('/workers', auth=('ops', 'wrong')).status_code == 401
        assert client.get('/workers', auth=('ops', 'pw')).status_code == 200
    assert state(redis_conn) == before


def test_an_action_needs_its_csrf_token_and_a_confirmation(redis_conn: redis.Redis, filled: dict[str, Any]) -> None:
    before = state(redis_conn)
    with dashboard(redis_conn) as client:
        token = csrf(client, '/queues/mail')
        assert client.post('/actions/empty', data={'queue': 'mail'}).status_code == 403  # no token
        assert client.post('/actions/empty', data={'queue': 'mail', 'csrf': 'f' * 64}).status_code == 403
        cross = client.post(
            '/actions/empty', data={'queue': 'mail', 'csrf': token}, headers={'origin': 'http://evil.test'}
        )
        assert cross.status_code == 403 and 'another site' in cross.text
        asked = client.post('/actions/empty', data={'queue': 'mail', 'csrf': token, 'next': '/queues/mail'})
        assert asked.status_code == 200 and 'Delete all 5 queued jobs of queue mail?' in asked.text
        assert client.post('/actions/empty', data={'queue': 'nope', 'csrf': token}).status_code == 409
        assert client.post('/actions/explode', data={'csrf': token}).status_code == 404
        assert state(redis_conn) == before
        done = client.post(
            '/actions/empty', data={'queue': 'mail', 'csrf': token, 'confirm': 'yes', 'next': '/queues/mail'}
        )
        assert done.status_code == 303 and done.headers['location'] == '/queues/mail'
        assert redis_conn.llen('rq:queue:mail') == 0
        assert 'Removed 5 jobs from queue mail.' in client.get('/queues/mail').text  # the notice, once
        assert 'Removed 5 jobs' not in client.get('/queues/mail').text
        outside = client.post(
            '/actions/pause', data={'queue': 'mail', 'csrf': token, 'confirm': 'yes', 'next': 'https://evil.test/'}
        )
        assert outside.headers['location'] == '/'  # never sent off the dashboard


def test_read_only_shows_no_button_and_refuses_every_action(redis_conn: redis.Redis, filled: dict[str, Any]) -> None:
    before = state(redis_conn)
    secret = b'a secret of thirty-two bytes....'
    with dashboard(redis_conn, read_only=True, secret=secret) as client:
        page = client.get(f'/jobs/{filled["failed"].id}').text
        assert 'data-action=' not in page and 'data-action=' not in client.get('/queues/mail').text
        identity = client.cookies['rqfast_dashboard_csrf']  # a valid token, as a page with forms would carry
        token = guard.csrf_token(Settings(connection=redis_conn, secret=secret), identity)
        for action, target in (('requeue', {'job_id': filled['failed'].id}), ('empty', {}), ('suspend-workers', {})):
            form = {'queue': 'mail', **target, 'csrf': token, 'confirm': 'yes'}
            refused = client.post(f'/actions/{action}', data=form)
            assert refused.status_code == 403 and 'This dashboard is read-only' in refused.text
    assert state(redis_conn) == before


def test_mounted_in_an_asgi_app_and_a_wsgi_app(redis_conn: redis.Redis, filled: dict[str, Any]) -> None:
    inner = create_app(Settings(connection=redis_conn, sample=False))
    with served(Starlette(routes=[Mount('/ops/rq', app=inner)])) as url, httpx.Client(base_url=url) as client:
        page = client.get('/ops/rq/queues')
        assert page.status_code == 200 and 'href="/ops/rq/queues/mail"' in page.text
        assert 'href="/ops/rq/static/dashboard.css"' in page.text
        assert client.get('/ops/rq/static/dashboard.css').status_code == 200
        assert count_cell(client.get('/ops/rq/').text, 'mail', 'queued') == 5
    wsgi = create_wsgi_app(Settings(connection=redis_conn, sample=False))
    status: list[str] = []
    environ = {
        'REQUEST_METHOD': 'GET',
        'SCRIPT_NAME': '/admin/rq',
        'PATH_INFO': '/queues',
        'QUERY_STRING': '',
        'SERVER_NAME': 'localhost',
        'SERVER_PORT': '80',
        'SERVER_PROTOCOL': 'HTTP/1.1',
        'wsgi.url_scheme': 'http',
        'wsgi.input': __import__('io').BytesIO(b''),
        'wsgi.errors': sys.stderr,
        'wsgi.multithread': True,
        'wsgi.multiprocess': False,
        'wsgi.run_once': False,
        'wsgi.version': (1, 0),
        'HTTP_HOST': 'localhost',
    }
    body = b''.join(wsgi(environ, lambda s, headers, exc_info=None: status.append(s)))
    assert status == ['200 OK'] and b'href="/admin/rq/queues/mail"' in body


def test_redis_away_is_a_clear_503_page() -> None:
    gone = redis.Redis(port=free_port(), socket_connect_timeout=0.5)
    with dashboard(gone) as client:
        response = client.get('/queues')
        assert response.status_code == 503 and 'Redis cannot be reached' in response.text
        assert TRACEBACK not in response.text


# --- the history


def test_the_sampler_counts_what_the_workers_did_between_two_samples(redis_conn: redis.Redis) -> None:
    queue = Queue('sampled', connection=redis_conn)
    sampler = Sampler(redis_conn, Catalog(redis_conn), interval=5)
    worker = SimpleWorker(['sampled'], connection=redis_conn)
    worker.register_birth()  # a long-lived worker, alive across the samples (its counts are set by hand)
    try:
        now = time.time()
        assert sampler.tick(now) is None  # the first sample: what the next one is measured from
        for n in range(6):
            queue.enqueue('operator.add', n, 1)
        queue.enqueue('tests.dashboard_jobs.fail')
        work(redis_conn, 'sampled')  # a burst worker, gone before the next sample
        redis_conn.hset(worker.key, mapping={'successful_job_count': 6, 'failed_job_count': 1})
        for n in range(3):
            queue.enqueue('operator.add', n, 2)
        point = sampler.tick(now + 5)
    finally:
        worker.register_death()
    assert point is not None
    assert (point.done, point.failed, point.dt) == (6, 1, 5)
    assert point.queues['sampled'] == [3, 0, 10, 6, 1]  # size, started, in, finished, failed
    store = HistoryStore(redis_conn)
    assert [p.done for p in store.hour(now + 5)] == [6]
    minute = store.functions(now - 120)
    stats = minute[-1][1]
    assert stats['operator.add'].count == 6 and stats['tests.dashboard_jobs.fail'].failed == 1
    assert stats['operator.add'].quantile(0.5) is not None


def test_jobs_ending_in_the_same_second_as_a_sample_are_counted_once(redis_conn: redis.Redis) -> None:
    """A registry's scores are whole seconds: the jobs at the top score of one sample and those that come
    at that score after it are each counted once, over the samples."""
    queue = Queue('seconds', connection=redis_conn)
    sampler = Sampler(redis_conn, Catalog(redis_conn), interval=5)
    queue.enqueue('operator.add', 0, 0)
    work(redis_conn, 'seconds')
    sampler.tick(1000.0)
    counted = 0
    for round_ in range(4):
        for n in range(round_ + 1):
            queue.enqueue('operator.add', n, 1)
        work(redis_conn, 'seconds')
        point = sampler.tick(1005.0 + 5 * round_)
        assert point is not None
        counted += int(point.queue('seconds', 'finished'))
    assert counted == 1 + 2 + 3 + 4 == redis_conn.zcard('rq:finished:seconds') - 1


def test_the_history_keeps_its_windows_and_one_point_per_minute(redis_conn: redis.Redis) -> None:
    store = HistoryStore(redis_conn)
    start = 1_800_000_000.0
    for step in range(30):  # 30 samples, 5 s apart, then one 2 hours later
        point = Point(start + step * 5, 5.0, done=1)
        minute = Point(point.t - point.t % 60, 60.0, done=step)
        store.write(point.t, point, minute, {'f': FunctionStats(1, 0)})
    later = start + 7200
    store.write(later, Point(later, 5.0), Point(later - later % 60, 5.0), {})
    assert redis_conn.zcard('rq:dashboard:history:hour') == 1  # older than an hour: trimmed
    assert redis_conn.zcard('rq:dashboard:history:day') == 3 + 1  # one point per minute, rewritten each sample
    assert [p.done for p in store.day(later)][:3] == [11, 23, 29]


def test_a_second_dashboard_does_not_sample_while_the_first_holds_the_lock(redis_conn: redis.Redis) -> None:
    first, second = (Sampler(redis_conn, Catalog(redis_conn), interval=5) for _ in range(2))
    first.tick(100.0)
    second.tick(100.0)
    assert (first.samples, second.samples) == (1, 0)


def test_the_histogram_quantiles_and_the_chart_scale() -> None:
    stats = FunctionStats()
    for seconds in [0.002] * 50 + [0.2] * 45 + [20.0] * 5:
        stats.observe(seconds, failed=False)
    assert 0.001 < stats.quantile(0.5) <= 0.005
    assert 0.1 < stats.quantile(0.9) <= 0.25
    assert 10 < stats.quantile(0.99) <= 30
    assert FunctionStats().quantile(0.5) is None
    assert [nice_ceiling(v) for v in (0, 0.7, 3, 11, 240, 999)] == [1, 1, 5, 20, 250, 1000]
    assert function_name('myapp.tasks.send(1, 2)') == 'myapp.tasks.send'
    assert function_name('a custom description') == '(other)'


# --- RQ's own data, and the command


def test_rq_s_own_jobs_and_workers_are_shown(redis_conn: redis.Redis) -> None:
    import rq

    queue = rq.Queue('rq-side', connection=redis_conn)
    job = queue.enqueue('operator.add', 40, 2)
    broken = queue.enqueue('operator.truediv', 1, 0)
    waiting = queue.enqueue('operator.add', 1, 1)
    rq.SimpleWorker([queue], connection=redis_conn).work(burst=True)
    queue.enqueue('operator.add', 2, 2)
    with dashboard(redis_conn) as client:
        page = client.get('/queues').text
        assert count_cell(page, 'rq-side', 'queued') == 1
        assert count_cell(page, 'rq-side', 'finished') == 2 and count_cell(page, 'rq-side', 'failed') == 1
        job_page = client.get(f'/jobs/{job.id}').text
        assert 'operator.add(40, 2)' in job_page and '>42<' in job_page.replace(' ', '')
        assert 'ZeroDivisionError' in client.get(f'/jobs/{broken.id}').text
        assert waiting.id in client.get('/queues/rq-side/jobs/finished').text


def test_the_command_serves_the_overview_at_once(redis_url: str, redis_conn: redis.Redis, tmp_path: Path) -> None:
    Queue('cli', connection=redis_conn).enqueue('operator.add', 1, 2)
    port = free_port()
    command = [sys.executable, '-m', 'rqfast', 'dashboard', '-u', redis_url, '--port', str(port), '--read-only']
    log = open(tmp_path / 'dashboard.log', 'wb')  # noqa: SIM115 - closed below
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                response = httpx.get(f'http://127.0.0.1:{port}/', timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None and time.monotonic() < deadline, (tmp_path / 'dashboard.log').read_text()
                time.sleep(0.1)
        assert response.status_code == 200 and count_cell(response.text, 'cli', 'queued') == 1
        assert 'read-only' in response.text
    finally:
        process.terminate()
        process.wait(10)
        log.close()
    assert 'rqfast dashboard at http://127.0.0.1:' in (tmp_path / 'dashboard.log').read_text()


def test_the_workers_page_shows_each_workers_class_and_concurrency(redis_conn: redis.Redis) -> None:
    worker = SimpleWorker(['shown'], connection=redis_conn, concurrency=3, name='shown-worker')
    worker.register_birth()  # the fields rqfast adds to RQ's worker hash at birth
    try:
        fields = redis_conn.hgetall(worker.key)
        assert fields[b'worker_class'] == b'rqfast.worker.simple.SimpleWorker' and fields[b'concurrency'] == b'3'
        with dashboard(redis_conn) as client:
            page = client.get('/workers').text
            row = re.search(r'<tr[^>]*>(?:(?!</tr>).)*shown-worker(?:(?!</tr>).)*</tr>', page, re.S)
            assert row is not None
            assert 'rqfast.worker.simple.SimpleWorker' in row.group(0) and '>3<' in row.group(0).replace(' ', '')
    finally:
        worker.register_death()
