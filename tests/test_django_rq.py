"""A django-rq project whose RQ settings name rqfast's classes: `manage.py rqworker --burst` runs the
job django_rq.enqueue queued, and django-rq's statistics count it (issue 23).

django-rq hands its WORKER_CLASS the JOB_CLASS and the class of its queues, rq's Job and DjangoRQ
unless set: with rq 2.12 (the normal run) and rq 3.0 (`python -m tests.rq3` runs this file too),
every worker class runs the job whichever of them are rqfast's. A job whose load fails (a field no
reader can parse) shows RQ's error line with its traceback in the worker's output.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import redis

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(
        importlib.util.find_spec('django_rq') is None, reason="django-rq is not installed (setup.cfg's test extra)"
    ),
]

ROOT = Path(__file__).resolve().parent.parent
WORKERS = ['Worker', 'SimpleWorker', 'SpawnWorker']
SETTINGS = {  # RQ = {...} beside WORKER_CLASS; the README's django-rq section shows these
    'worker_class_only': {},
    'job_class': {'JOB_CLASS': 'rqfast.job.Job'},
    'queue_class': {'QUEUE_CLASS': 'rqfast.queue.Queue'},
    'job_and_queue_class': {'JOB_CLASS': 'rqfast.job.Job', 'QUEUE_CLASS': 'rqfast.queue.Queue'},
}

FILES = {
    'settings.py': """
        import json, os
        SECRET_KEY = 'rqfast-test'
        INSTALLED_APPS = ['django_rq']
        USE_TZ = True
        RQ_QUEUES = {'default': {'URL': os.environ['REDIS_URL']}}
        RQ = json.loads(os.environ['RQ_SETTINGS'])
    """,
    'jobs.py': """
        def add(a, b):
            return a + b
    """,
    'manage.py': """
        import os, sys
        os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'settings')
        from django.core.management import execute_from_command_line
        execute_from_command_line(sys.argv)
    """,
    # enqueue, run `manage.py rqworker default --burst`, read back through django-rq: one JSON line
    'drive.py': """
        import json, os, subprocess, sys
        os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'settings')
        import django
        django.setup()
        import django_rq
        from django_rq.utils import get_statistics
        import jobs
        job = django_rq.enqueue(jobs.add, 2, 3)
        broken = django_rq.enqueue(jobs.add, 1, 1)
        django_rq.get_connection().hset(broken.key, 'timeout', b'abc')  # a field no reader can parse
        worker = subprocess.run(
            [sys.executable, 'manage.py', 'rqworker', 'default', '--burst'],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60,
        )
        queue = django_rq.get_queue('default')
        done = queue.fetch_job(job.id)
        [stats] = [q for q in get_statistics()['queues'] if q['name'] == 'default']
        print(json.dumps({
            'code': worker.returncode, 'output': worker.stdout, 'broken': broken.id,
            'status': str(getattr(done.get_status(), 'value', done.get_status())),
            'value': done.return_value(),
            'counts': [stats['finished_jobs'], stats['failed_jobs'], stats['jobs']],
        }))
    """,
}


@pytest.fixture(scope='module')
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp('djangoproject')
    for name, text in FILES.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())
    return folder


@pytest.mark.parametrize('settings', SETTINGS)
@pytest.mark.parametrize('worker', WORKERS)
def test_manage_py_rqworker_runs_the_job(
    project: Path, redis_url: str, redis_conn: redis.Redis, worker: str, settings: str
) -> None:
    rq_settings = {'WORKER_CLASS': f'rqfast.worker.{worker}', **SETTINGS[settings]}
    env = dict(os.environ, REDIS_URL=redis_url, RQ_SETTINGS=json.dumps(rq_settings), PYTHONPATH=str(ROOT))
    run = subprocess.run(
        [sys.executable, 'drive.py'], cwd=project, env=env, capture_output=True, text=True, timeout=100
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.splitlines()[-1])
    output = seen['output']
    assert seen['code'] == 0, output
    assert (seen['status'], seen['value']) == ('finished', 5), output
    assert seen['counts'] == [1, 1, 0], output  # finished, failed, still queued
    # the job that could not be loaded: RQ's error line and its traceback, in the worker's own output
    assert f'job {seen["broken"]}: exception raised while executing' in output, output
    assert "unreadable field(s) timeout=b'abc'" in output and 'Traceback (most recent call last)' in output
