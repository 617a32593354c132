"""rq-dashboard 0.9 (driven through its Flask test client) sees an rqfast worker as it sees RQ's.

The dashboard reads through the rq library: workers.json lists the worker with its state, current
job and counters, queues.json counts the queue and each registry, the jobs and job endpoints show
status, results and tracebacks. The running-job view is fetched from inside a job, while the worker
is busy; the same run with RQ's SimpleWorker is the oracle.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import rq.worker
from rq_dashboard.cli import make_flask_app
from rq_dashboard.web import setup_rq_connection

import rqfast
import rqfast.worker

try:
    import jobs
    import worker_jobs
except ImportError:  # tests/ became a package
    from tests import jobs, worker_jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

WORKERS = '/0/data/workers.json'
QUEUES = '/0/data/queues.json'


class RQSimpleWorker(rq.worker.SimpleWorker):
    """RQ's SimpleWorker without its pub/sub thread (it writes nothing, and takes 1 s to join)."""

    def subscribe(self) -> None:
        self.pubsub_thread = None

    def unsubscribe(self) -> None:
        pass


@pytest.fixture
def dashboard(redis_url: str, redis_conn: redis.Redis) -> Iterator[Any]:
    app = make_flask_app(None, None, None, '')
    app.config['RQ_DASHBOARD_REDIS_URL'] = redis_url
    app.testing = True
    setup_rq_connection(app)
    client = app.test_client()
    worker_jobs.DASHBOARD = client
    yield client
    worker_jobs.DASHBOARD = None


def get(client: Any, path: str) -> Any:
    response = client.get(path, follow_redirects=True)
    assert response.status_code == 200, (path, response.status_code, response.get_data(as_text=True)[:2000])
    return response.get_json() if response.is_json else response.get_data(as_text=True)


def scenario(conn: redis.Redis) -> str:
    """A worker that has run one success and one failure, and is running a third job that looks."""
    q = rq.Queue('q', connection=conn)
    q.enqueue(jobs.add, 1, 2, job_id='ok')
    q.enqueue(jobs.div_by_zero, job_id='bad')
    q.enqueue(worker_jobs.dashboard_inside, WORKERS, QUEUES, job_id='looker')
    q.enqueue(jobs.noop, job_id='waiting')
    rq.Queue('other', connection=conn).enqueue(jobs.noop, job_id='elsewhere')
    return 'looker'


def run(worker_class: type, conn: redis.Redis) -> dict[str, Any]:
    conn.flushdb()
    looker = scenario(conn)
    worker_class(['q'], name='dash-worker', connection=conn).work(burst=True, logging_level='WARNING')
    return rq.job.Job.fetch(looker, connection=conn).return_value()


def normalize(seen: dict[str, Any]) -> dict[str, Any]:
    """Working times, heartbeats and versions differ between runs and libraries by design."""
    for worker in seen[WORKERS]['workers']:
        for name in ('last_heartbeat', 'birth_date'):
            assert worker[name], name
            worker[name] = '<date>'
        assert worker['total_working_time'] >= 0
        worker['total_working_time'] = '<seconds>'
        worker['version'] = '<version>'
        created = worker['current_job'].get('created_at', '')
        assert re.match(r'\d{4}-\d\d-\d\dT', created), created
        worker['current_job']['created_at'] = '<date>'
    return seen


def test_dashboard_shows_a_busy_rqfast_worker_as_rqs(dashboard: Any, redis_conn: redis.Redis) -> None:
    expected = normalize(run(RQSimpleWorker, redis_conn))
    seen = normalize(run(rqfast.worker.SimpleWorker, redis_conn))
    assert seen == expected
    worker = seen[WORKERS]['workers'][0]
    assert worker['name'] == 'dash-worker' and worker['state'] == 'busy' and worker['queues'] == ['q']
    assert worker['current_job']['job_id'] == 'looker'
    assert 'dashboard_inside(' in worker['current_job']['call_string']
    assert worker['successful_job_count'] == 1 and worker['failed_job_count'] == 1
    counts = {q['name']: q for q in seen[QUEUES]['queues']}
    assert counts['q']['count'] == 1 and counts['q']['started_job_registry_count'] == 1
    assert counts['q']['finished_job_registry_count'] == 1 and counts['q']['failed_job_registry_count'] == 1
    assert counts['other']['count'] == 1


def test_dashboard_after_an_rqfast_run(dashboard: Any, redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    ok = q.enqueue(jobs.add, 2, 3)
    bad = q.enqueue(jobs.raise_custom_error, 'shown on the dashboard')
    retried = q.enqueue(jobs.div_by_zero, retry=rqfast.Retry(max=1, interval=60))
    parent = q.enqueue(jobs.div_by_zero)
    q.enqueue(jobs.noop, depends_on=parent)
    canceled = q.enqueue(jobs.noop)
    canceled.cancel()
    rqfast.SimpleWorker(['q'], name='done-worker', connection=redis_conn).work(burst=True, logging_level='WARNING')

    counts = get(dashboard, QUEUES)['queues'][0]
    assert (counts['name'], counts['count']) == ('q', 0)
    assert {
        name: counts[f'{name}_job_registry_count']
        for name in ('finished', 'failed', 'started', 'deferred', 'scheduled', 'canceled')
    } == {'finished': 1, 'failed': 2, 'started': 0, 'deferred': 1, 'scheduled': 1, 'canceled': 1}

    assert get(dashboard, WORKERS)['workers'] == []  # it died: gone from rq:workers

    failed = get(dashboard, '/0/data/jobs/q/failed/8/asc/1.json')
    assert {j['id'] for j in failed['jobs']} == {bad.id, parent.id}
    shown = next(j for j in failed['jobs'] if j['id'] == bad.id)
    assert 'CustomError: shown on the dashboard' in shown['exc_info'] and shown['ended_at']
    finished = get(dashboard, '/0/data/jobs/q/finished/8/asc/1.json')
    assert [j['id'] for j in finished['jobs']] == [ok.id]
    scheduled = get(dashboard, '/0/data/jobs/q/scheduled/8/asc/1.json')
    assert [j['id'] for j in scheduled['jobs']] == [retried.id]

    info = get(dashboard, f'/0/data/job/{ok.id}.json')
    assert (info['status'], info['result'], info['origin']) == ('finished', 5, 'q')
    assert info['started_at'] and info['ended_at'] and info['enqueued_at']
    info = get(dashboard, f'/0/data/job/{bad.id}.json')
    assert info['status'] == 'failed' and 'CustomError' in info['exc_info']

    for page in ('/0/view/queues', '/0/view/workers', f'/0/view/job/{ok.id}', '/0/view/jobs/q/failed/8/asc/1'):
        assert 'html' in get(dashboard, page).lower()


def test_dashboard_actions_on_rqfast_jobs(dashboard: Any, redis_conn: redis.Redis) -> None:
    """Requeue from the failed registry and delete, through the dashboard, then rqfast runs the requeued job."""
    q = rqfast.Queue('q', connection=redis_conn)
    flaky = q.enqueue(worker_jobs.fail_until, 1)
    doomed = q.enqueue(jobs.div_by_zero)
    rqfast.SimpleWorker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    assert flaky.get_status() == 'failed'
    assert get(dashboard, '/0/data/queues.json')['queues'][0]['failed_job_registry_count'] == 2
    assert dashboard.post(f'/job/{flaky.id}/requeue').status_code == 200
    assert dashboard.post(f'/job/{doomed.id}/delete').status_code == 200
    rqfast.SimpleWorker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    assert flaky.get_status() == 'finished' and flaky.return_value() == 2
    assert not redis_conn.exists(doomed.key)
    assert get(dashboard, '/0/data/queues.json')['queues'][0]['failed_job_registry_count'] == 0
