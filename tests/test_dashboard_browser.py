"""The dashboard in a real browser: headless Chromium (Debian's `chromium` and `chromium-driver`) driven by
selenium, against the session's real Redis, with real worker processes running.

Each page is loaded and its numbers checked against Redis; each action is clicked, confirmed, and its
effect checked in Redis. Screenshots of the overview and a job page go to $RQFAST_DASHBOARD_SCREENSHOTS
(docs/images makes the ones docs/dashboard.md shows), else to the test's temporary directory.

Without Chromium these tests are skipped, with the reason, on a developer's machine; under CI (CI set
in the environment, as .ci/run runs) they fail instead, so CI never passes without them.
"""

from __future__ import annotations

import base64
import operator
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from rqfast import Queue, SimpleWorker
from rqfast.cron import CronScheduler
from rqfast.dashboard import Settings, create_app
from tests.dashboard_server import served
from tests.fleet import WorkerProcess

pytestmark = pytest.mark.timeout(240)

CHROMIUM, DRIVER = shutil.which('chromium'), shutil.which('chromedriver')
FLAGS = [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--window-size=1280,900',
]
WAIT = 30.0  # seconds a page may take to show what is waited for (the machine may be loaded)


@pytest.fixture(scope='module')
def browser() -> Iterator[Any]:
    if not (CHROMIUM and DRIVER):
        message = 'headless Chromium is needed: apt-get install -y chromium chromium-driver'
        if os.environ.get('CI'):
            pytest.fail(f'{message} (CI runs the browser tests: they are not skipped there)')
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix='rqfast-chromium-')
    for flag in [*FLAGS, f'--user-data-dir={profile}']:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope='module')
def site(redis_url: str) -> Iterator[str]:
    """The dashboard, sampling every second and refreshing its pages every second."""
    connection = redis.Redis.from_url(redis_url)
    app = create_app(Settings(connection=connection, sample_interval=1, refresh=1))
    with served(app) as url:
        yield url
    connection.close()


@pytest.fixture
def workers(redis_url: str, redis_conn: redis.Redis, tmp_path: Path) -> Iterator[list[WorkerProcess]]:
    """Two forking workers of queue `busy` (a forking worker can stop a running job)."""
    started = [
        WorkerProcess(redis_url, {'queues': ['busy'], 'class': 'Worker', 'name': f'busy-{n}'}, tmp_path / f'w{n}.log')
        for n in range(2)
    ]
    try:
        for worker in started:
            worker.wait_registered(redis_conn, timeout=WAIT)
        yield started
    finally:
        for worker in started:
            worker.stop()


def shots() -> Path | None:
    where = os.environ.get('RQFAST_DASHBOARD_SCREENSHOTS')
    return Path(where) if where else None


def wait_for(condition: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = condition()
        except Exception:  # the page is being replaced (a live update): look again
            value = None
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out after {timeout} s waiting for {what}')
        time.sleep(0.1)


def css(driver: Any, selector: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, selector)


def cells(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, selector)


def screenshot(driver: Any, name: str) -> None:
    """The whole page (Chromium's DevTools capture beyond the viewport), to $RQFAST_DASHBOARD_SCREENSHOTS or a
    temporary directory."""
    width, height = driver.execute_script(
        'return [document.documentElement.scrollWidth, document.documentElement.scrollHeight]'
    )
    clip = {'x': 0, 'y': 0, 'width': width, 'height': min(height, 2400), 'scale': 1}
    shot = driver.execute_cdp_cmd(
        'Page.captureScreenshot', {'format': 'png', 'captureBeyondViewport': True, 'clip': clip}
    )
    ((shots() or Path(tempfile.mkdtemp())) / name).write_bytes(base64.b64decode(shot['data']))


def number(text: str) -> int:
    return int(text.strip().replace(',', ''))


def count(driver: Any, row: str, kind: str) -> int:
    return number(css(driver, f'tr[data-queue="{row}"] [data-count="{kind}"]').text)


def act(driver: Any, site: str, page: str, action: str, scope: str = '') -> str:
    """Click the action's button on `page` (within `scope`, a CSS selector), confirm, and return the notice."""
    driver.get(site + page)
    css(driver, f'{scope} button[data-action="{action}"]'.strip()).click()
    question = wait_for(lambda: css(driver, '#question').text, f'the question of {action}')
    assert question.endswith('?')
    css(driver, '#confirm').click()
    return str(wait_for(lambda: css(driver, '#notice').text, f'the notice of {action}'))


def run_burst(connection: redis.Redis, queue: str) -> None:
    SimpleWorker([queue], connection=connection).work(burst=True)


def test_the_overview_is_live_and_shows_what_redis_holds(
    browser: Any, site: str, redis_conn: redis.Redis, workers: list[WorkerProcess]
) -> None:
    busy, idle = Queue('busy', connection=redis_conn), Queue('idle', connection=redis_conn)
    for n in range(7):
        idle.enqueue('operator.add', n, 1)
    for n in range(40):
        busy.enqueue('tests.dashboard_jobs.sleep', 0.05 if n % 10 else 0.5)
    busy.enqueue('tests.dashboard_jobs.fail', 'a failure to chart')
    browser.get(site + '/')
    assert count(browser, 'idle', 'queued') == 7 == redis_conn.llen('rq:queue:idle')
    wait_for(lambda: len(cells(browser, '#worker-summary tr[data-worker]')) == 2, 'both workers on the overview')
    for n in range(3):
        idle.enqueue('operator.add', n, 2)
    wait_for(lambda: count(browser, 'idle', 'queued') == 10, 'the live update to show 3 more jobs, without a reload')
    wait_for(lambda: redis_conn.llen('rq:queue:busy') == 0 and not redis_conn.zcard('rq:wip:busy'), 'the jobs to run')
    wait_for(lambda: number(css(browser, '#queued-total').text) == 10, 'the queued total')
    wait_for(lambda: cells(browser, '#live svg.chart polyline.series-0'), 'the finished line of the last hour', 60)
    wait_for(lambda: count(browser, 'busy', 'failed') == 1 == redis_conn.zcard('rq:failed:busy'), 'the failure')
    wait_for(lambda: cells(browser, '#live svg.chart .series-1'), 'the failed series')
    finished = sum(int(redis_conn.hget(f'rq:worker:busy-{n}', 'successful_job_count') or 0) for n in range(2))
    assert finished == 40 and redis_conn.zcard('rq:finished:busy') == 40
    assert number(css(browser, '#workers-busy').text) + number(css(browser, '#workers-idle').text) == 2
    screenshot(browser, 'dashboard-overview.png')


def test_every_page_shows_what_redis_holds(
    browser: Any, site: str, redis_conn: redis.Redis, workers: list[WorkerProcess]
) -> None:
    busy, later = Queue('busy', connection=redis_conn, events=True), Queue('later', connection=redis_conn)
    job = busy.enqueue('tests.dashboard_jobs.report', 12, text='resizing images', capture_output=True)
    for _ in range(5):
        busy.enqueue('tests.dashboard_jobs.sleep', 0.02)
    scheduled = later.enqueue_in(timedelta(hours=2), 'operator.add', 1, 2)
    laned = [later.enqueue('operator.add', n, 1, priority=n % 3) for n in range(6)]
    cron = CronScheduler(redis_conn, name='cron-one')
    cron.register(operator.add, 'later', args=(1, 1), interval=600)
    cron.register_birth()
    wait_for(lambda: redis_conn.zcard('rq:finished:busy') == 6, 'the jobs to run')

    browser.get(site + '/queues')
    for name in ('busy', 'later'):
        assert count(browser, name, 'queued') == redis_conn.llen(f'rq:queue:{name}')
        assert count(browser, name, 'finished') == redis_conn.zcard(f'rq:finished:{name}')
        assert count(browser, name, 'scheduled') == redis_conn.zcard(f'rq:scheduled:{name}')
    browser.get(site + '/queues/later')
    assert number(css(browser, '#registries [data-count="queued"] .value').text) == 6
    lanes = {
        row.get_attribute('data-lane'): number(row.text.split()[1]) for row in cells(browser, '#lanes tr[data-lane]')
    }
    assert lanes == {'0': 2, '1': 2, '2': 2}
    browser.get(site + '/queues/later/jobs/queued')
    assert [row.get_attribute('data-job') for row in cells(browser, '#jobs tr[data-job]')] == [j.id for j in laned]

    browser.get(f'{site}/jobs/{job.id}?queue=busy')
    assert css(browser, '#call').text == "tests.dashboard_jobs.report(12, text='resizing images')"
    assert "'stage': 'counted'" in css(browser, '#meta').text
    assert '"done": 12' in css(browser, '#progress').text
    assert 'resizing images on 12 items' in css(browser, '#output').text
    assert "{'items': 12}" in css(browser, '#runs').text
    assert 'finished' in css(browser, '#events').text and 'progress' in css(browser, '#events').text
    assert css(browser, '#progress-bar i').get_attribute('style').replace(' ', '') in ('width:100%;', 'width:100.0%;')
    screenshot(browser, 'dashboard-job.png')

    browser.get(site + '/queues/busy')  # its events arrive as they happen (the queue's stream, over SSE)
    wait_for(lambda: css(browser, '#events').get_attribute('data-stream') == 'open', 'the event stream to open')
    live = busy.enqueue('tests.dashboard_jobs.sleep', 0.01)
    wait_for(lambda: int(css(browser, '#events').get_attribute('data-received') or 0) >= 3, 'three live events')
    shown = [row.text.split() for row in cells(browser, '#events tbody tr')[:3]]
    assert [row[2] for row in shown] == ['finished', 'started', 'queued'] and {row[3] for row in shown} == {live.id}

    browser.get(site + '/workers')
    rows = cells(browser, '#workers tr[data-worker]')
    assert sorted(row.get_attribute('data-worker') for row in rows) == ['busy-0', 'busy-1']
    for row in rows:
        stored = int(redis_conn.hget(f'rq:worker:{row.get_attribute("data-worker")}', 'successful_job_count') or 0)
        assert number(row.find_element('css selector', '[data-count="finished"]').text) == stored
    browser.get(site + '/scheduled')
    assert scheduled.id in css(browser, '[data-queue="later"]').text
    assert 'cron-one' in css(browser, '#cron').text and 'operator.add' in css(browser, '#cron').text
    wait_for(
        lambda: browser.get(site + '/functions') or cells(browser, 'tr[data-function="tests.dashboard_jobs.sleep"]'),
        'the sampled function',
    )

    browser.get(site + '/jobs/no-such-job')
    assert 'There is no job' in css(browser, '#message').text
    cron.register_death()


def test_each_action_asks_first_then_does_what_it_says_in_redis(
    browser: Any, site: str, redis_conn: redis.Redis, workers: list[WorkerProcess]
) -> None:
    idle, flaky, busy = (Queue(name, connection=redis_conn) for name in ('idle', 'flaky', 'busy'))
    kept = [idle.enqueue('operator.add', n, 1) for n in range(4)]
    broken = [flaky.enqueue('tests.dashboard_jobs.fail', f'failure {n}') for n in range(3)]
    run_burst(redis_conn, 'flaky')
    assert redis_conn.zcard('rq:failed:flaky') == 3

    assert 'Paused queue idle' in act(browser, site, '/queues/idle', 'pause')
    assert redis_conn.sismember('rq:paused-queues', 'idle')
    assert 'Resumed queue idle' in act(browser, site, '/queues/idle', 'resume')
    assert not redis_conn.sismember('rq:paused-queues', 'idle')

    first = broken[0].id
    assert f'Requeued job {first}' in act(
        browser, site, '/queues/flaky/jobs/failed', 'requeue', f'tr[data-job="{first}"]'
    )
    assert (
        redis_conn.lpos('rq:queue:flaky', first) is not None
        and redis_conn.hget(f'rq:job:{first}', 'status') == b'queued'
    )
    assert 'Requeued 2 failed jobs' in act(browser, site, '/queues/flaky', 'requeue-all')
    assert redis_conn.zcard('rq:failed:flaky') == 0 and redis_conn.llen('rq:queue:flaky') == 3

    target = kept[1].id
    assert f'Canceled job {target}' in act(
        browser, site, '/queues/idle/jobs/queued', 'cancel', f'tr[data-job="{target}"]'
    )
    assert redis_conn.hget(f'rq:job:{target}', 'status') == b'canceled'
    assert (
        redis_conn.zscore('rq:canceled:idle', target) is not None and redis_conn.lpos('rq:queue:idle', target) is None
    )
    gone = kept[2].id
    assert f'Deleted job {gone}' in act(browser, site, f'/jobs/{gone}?queue=idle', 'delete')
    assert not redis_conn.exists(f'rq:job:{gone}') and redis_conn.lpos('rq:queue:idle', gone) is None
    assert 'Removed 2 jobs from queue idle' in act(browser, site, '/queues/idle', 'empty')
    assert redis_conn.llen('rq:queue:idle') == 0

    assert 'Suspended every worker' in act(browser, site, '/workers', 'suspend-workers')
    assert redis_conn.exists('rq:suspended')
    assert 'Resumed the workers' in act(browser, site, '/workers', 'resume-workers')
    assert not redis_conn.exists('rq:suspended')

    running = busy.enqueue('tests.dashboard_jobs.sleep', 60)
    wait_for(lambda: redis_conn.hget(f'rq:job:{running.id}', 'status') == b'started', 'the long job to start')
    assert 'Sent a stop' in act(browser, site, f'/jobs/{running.id}?queue=busy', 'stop')
    wait_for(lambda: redis_conn.hget(f'rq:job:{running.id}', 'status') == b'stopped', 'the job to be stopped')
    assert redis_conn.zscore('rq:failed:busy', running.id) is not None  # RQ's place for a stopped job

    browser.get(site + '/queues/idle')  # a forged form (no CSRF cookie's token) changes nothing
    browser.execute_script(
        'var f = document.querySelector(\'button[data-action="pause"]\').form;'
        "f.querySelector('[name=csrf]').value = 'forged'; f.querySelector('button').click();"
    )
    assert 'forged' in wait_for(lambda: css(browser, '#message').text, 'the refusal')
    assert not redis_conn.sismember('rq:paused-queues', 'idle')
