"""A Django project with django-rq 4.2.0 whose jobs read rows its views write, with the commit modes django-rq
implements in its queue class (DjangoRQ): a job enqueued inside a transaction is enqueued when it commits, so the
worker never runs it before its row exists.

- the switch on (the recommended setup: RQFAST_AS_RQ=1, no RQ class settings): DjangoRQ is a subclass of rqfast's
  Queue, `manage.py rqworker` and `rqworker-pool` run rqfast's workers, commit modes hold;
- only WORKER_CLASS set (rq in charge of the rest): the same;
- QUEUE_CLASS = rqfast's Queue without the switch: no DjangoRQ, so no commit mode (docs/switching.md warns).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from eco_support import HERE, ROOT

pytestmark = pytest.mark.timeout(300)

FILES = {
    'settings.py': """
        import json, os
        SECRET_KEY = 'rqfast-test'
        INSTALLED_APPS = ['django_rq']
        USE_TZ = True
        DB = os.path.join(os.path.dirname(__file__), 'db.sqlite3')
        DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': DB}}
        RQ_QUEUES = {'default': {'URL': os.environ['REDIS_URL']}}
        RQ = json.loads(os.environ.get('RQ_SETTINGS', '{}'))
    """,
    'shop_jobs.py': """
        def read_item(pk):
            import rq
            from django.db import connection
            with connection.cursor() as cursor:
                cursor.execute('SELECT name FROM item WHERE id = %s', [pk])
                row = cursor.fetchone()
            return {'name': row[0] if row else None, 'rq': 'rqfast' if getattr(rq, '__rqfast_as_rq__', False) else 'rq'}
    """,
    'manage.py': """
        import os, sys
        os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'settings')
        from django.core.management import execute_from_command_line
        execute_from_command_line(sys.argv)
    """,
    # a view's work: a row and a job reading it, in one transaction; then a worker command; one JSON line
    'drive.py': """
        import json, os, subprocess, sys
        os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'settings')
        import django
        django.setup()
        from django.db import connection, transaction
        import django_rq, shop_jobs
        with connection.cursor() as cursor:
            cursor.execute('CREATE TABLE IF NOT EXISTS item (id INTEGER PRIMARY KEY, name TEXT)')
            cursor.execute('DELETE FROM item')
        queue = django_rq.get_queue('default')
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO item (id, name) VALUES (1, 'widget')")
            django_rq.enqueue(shop_jobs.read_item, 1)
            queued_in_transaction = queue.count
        job_ids = queue.job_ids
        command = sys.argv[1:]
        worker = subprocess.run([sys.executable, 'manage.py', *command], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=120)
        jobs = [queue.fetch_job(job_id) for job_id in job_ids]
        print(json.dumps({
            'queue_class': type(queue).__module__ + '.' + type(queue).__name__,
            'queued_in_transaction': queued_in_transaction, 'code': worker.returncode, 'output': worker.stdout[-3000:],
            'results': [job.return_value() for job in jobs],
            'statuses': [str(getattr(job.get_status(), 'value', job.get_status())) for job in jobs],
        }))
    """,
}

RQWORKER = ['rqworker', 'default', '--burst']
RQWORKER_POOL = ['rqworker-pool', 'default', '--num-workers', '2', '--burst']


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).write_text(textwrap.dedent(text).lstrip())
    return tmp_path


def drive(project: Path, redis_url: str, command: list[str], *, as_rq: bool, rq_settings: dict[str, str]) -> Any:
    env = {k: v for k, v in os.environ.items() if k not in ('RQFAST_AS_RQ', 'DJANGO_SETTINGS_MODULE')}
    env.update(REDIS_URL=redis_url, RQ_SETTINGS=json.dumps(rq_settings))
    env['PYTHONPATH'] = os.pathsep.join([str(project), str(HERE), str(ROOT)])
    if as_rq:
        env['RQFAST_AS_RQ'] = '1'
    run = subprocess.run(
        [sys.executable, 'drive.py', *command], cwd=project, env=env, capture_output=True, text=True, timeout=240
    )
    assert run.returncode == 0, run.stderr[-5000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize('command', [RQWORKER, RQWORKER_POOL], ids=['rqworker', 'rqworker-pool'])
def test_the_switch_keeps_commit_modes_and_runs_rqfasts_workers(
    project: Path, clean_redis: str, command: list[str]
) -> None:
    seen = drive(project, clean_redis, command, as_rq=True, rq_settings={})
    assert seen['queue_class'] == 'django_rq.queues.DjangoRQ'  # django-rq's own, on rqfast's Queue
    assert seen['queued_in_transaction'] == 0, 'enqueued before the transaction committed'
    assert seen['code'] == 0, seen['output']
    assert seen['statuses'] == ['finished'], seen['output']
    assert seen['results'] == [{'name': 'widget', 'rq': 'rqfast'}], seen['output']


def test_worker_class_only_keeps_commit_modes(project: Path, clean_redis: str) -> None:
    seen = drive(project, clean_redis, RQWORKER, as_rq=False, rq_settings={'WORKER_CLASS': 'rqfast.worker.Worker'})
    assert seen['queued_in_transaction'] == 0
    assert seen['statuses'] == ['finished'], seen['output']
    assert seen['results'] == [{'name': 'widget', 'rq': 'rq'}], seen['output']


def test_queue_class_rqfast_without_the_switch_loses_commit_modes(project: Path, clean_redis: str) -> None:
    """What docs/switching.md warns about: QUEUE_CLASS replaces DjangoRQ, which implements the commit modes."""
    settings = {'WORKER_CLASS': 'rqfast.worker.Worker', 'QUEUE_CLASS': 'rqfast.queue.Queue'}
    seen = drive(project, clean_redis, RQWORKER, as_rq=False, rq_settings=settings)
    assert seen['queue_class'] == 'rqfast.queue.Queue'
    assert seen['queued_in_transaction'] == 1  # enqueued at once, inside the transaction
