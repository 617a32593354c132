"""Job functions for tests/rq3/probe.py and the rq 3.0 interop tests (importable by every worker)."""

from __future__ import annotations

import time


def add(a: int, b: int) -> int:
    return a + b


def boom(message: str) -> None:
    raise ValueError(message)


def sleep_for(seconds: float) -> str:
    time.sleep(seconds)
    return 'slept'


def wait_for_key(url: str, key: str, deadline_s: float = 20.0) -> str:
    """Runs until `key` exists on the Redis at `url` (a test sets it to let the job end); sets
    `running:<key>` first, so a test knows the job's code runs (in the horse, for a forking worker)."""
    import redis

    conn = redis.Redis.from_url(url)
    conn.set(f'running:{key}', 1)
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if conn.exists(key):
            return 'released'
        time.sleep(0.02)
    return 'deadline'


def rq_sees_workers(url: str) -> list[dict[str, object]]:
    """What the installed rq's `Worker.all()` reports, read from inside a running job."""
    import redis
    from rq import Worker

    conn = redis.Redis.from_url(url)
    seen = []
    for worker in sorted(Worker.all(connection=conn), key=lambda w: w.name):
        executions = worker.get_current_executions(refresh=True)
        seen.append(
            {
                'name': worker.name,
                'state': worker.get_state(),
                'current_job_id': worker.get_current_job_id(),
                'current_execution_count': worker.current_execution_count,
                'execution_jobs': sorted(e.job_id for e in executions),
                'execution_workers': sorted(e.worker_name for e in executions),
            }
        )
    return seen


def dashboard_sees(url: str) -> list[dict[str, object]]:
    """rq-dashboard's workers.json (through its Flask test client), read from inside a running job."""
    from rq_dashboard.cli import make_flask_app
    from rq_dashboard.web import setup_rq_connection

    app = make_flask_app(None, None, None, '')
    app.config['RQ_DASHBOARD_REDIS_URL'] = url
    app.testing = True
    setup_rq_connection(app)
    response = app.test_client().get('/0/data/workers.json', follow_redirects=True)
    assert response.status_code == 200, response.get_data(as_text=True)[:2000]
    return [
        {'name': w['name'], 'state': w['state'], 'current_job': w['current_job']}
        for w in response.get_json()['workers']
    ]


def rqfast_sees_workers(url: str) -> list[dict[str, object]]:
    """What rqfast's `Worker.all()` reports, read from inside a running job."""
    import redis

    from rqfast import Worker

    conn = redis.Redis.from_url(url)
    return [
        {'name': w.name, 'state': w.get_state(), 'current_job_id': w.get_current_job_id()}
        for w in sorted(Worker.all(connection=conn), key=lambda w: w.name)
    ]
