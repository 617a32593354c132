"""RQFAST_AS_RQ / rqfast.install_as_rq() with rq 3.0 installed: every module of rq 3.0 is rqfast's, RQ's version
is the API served, the `rq` command runs rqfast, children inherit the switch, and it refuses (changing nothing)
where rq's own modules were imported first. Each scenario is a fresh interpreter (conftest.run_scenario)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from eco_support import run_scenario

pytestmark = pytest.mark.timeout(180)

BIN = Path(sys.executable).parent


def test_every_rq_module_is_rqfasts() -> None:
    """Each module rq 3.0.0's distribution ships, imported as rq.<name>, is rqfast's; rq.version is RQ's API."""
    seen = run_scenario(
        """
        import importlib, json, sys
        from importlib.metadata import files, version
        names = sorted(
            str(f.with_suffix('')).replace('/', '.').removesuffix('.__init__')
            for f in files('rq') if f.suffix == '.py' and f.parts[0] == 'rq' and f.stem != '__main__'
        )
        served = {}
        for name in names:
            module = importlib.import_module(name)
            served[name] = getattr(module, '__name__', '')
        import rq, rq.version, rqfast
        rq_files = [m for m in sys.modules.values() if 'site-packages/rq/' in (getattr(m, '__file__', '') or '')]
        print(json.dumps({
            'rq_version_installed': version('rq'), 'served': served, 'rq_files': len(rq_files),
            'VERSION': rq.VERSION, '__version__': rq.__version__, 'version.VERSION': rq.version.VERSION,
            'RQFAST_VERSION': rq.version.RQFAST_VERSION, 'rqfast': rqfast.VERSION,
            'same_classes': rq.Queue is rqfast.Queue and rq.job.Job is rqfast.job.Job,
        }))
        """,
        as_rq=True,
    )
    assert seen['rq_version_installed'] == '3.0.0'
    assert len(seen['served']) >= 40, seen['served']  # rq 3.0.0's wheel: 45 modules
    wrong = {name: got for name, got in seen['served'].items() if not got.startswith('rqfast') and got != name}
    assert not wrong, wrong
    assert seen['served']['rq.cli.cli'] == 'rqfast.cli'
    assert seen['rq_files'] == 0  # nothing of rq's own package was loaded
    assert (seen['VERSION'], seen['__version__'], seen['version.VERSION']) == ('3.0.0', '3.0.0', '3.0.0')
    assert seen['RQFAST_VERSION'] == seen['rqfast'] != '3.0.0'
    assert seen['same_classes'] is True


def test_rq_version_follows_rqfast_compat() -> None:
    seen = run_scenario(
        'import json, rq.version; print(json.dumps(rq.version.VERSION))', as_rq=True, env={'RQFAST_COMPAT': '2.12'}
    )
    assert seen == '2.12.0'


def test_rq_serves_rqfast_with_rqs_own_package_unreachable() -> None:
    """Whether or not rq is installed: rq's own package is made unfindable, `import rq` still gives rqfast."""
    seen = run_scenario(
        """
        import json, sys
        class NoRq:
            def find_spec(self, name, path=None, target=None):
                if name == 'rq' or name.startswith('rq.'):
                    raise ModuleNotFoundError(name)
        sys.meta_path.append(NoRq())  # after the switch's finder: it stands for rq not being installed
        import rq, rq.worker, rq.registry
        print(json.dumps([rq.__name__, rq.worker.__name__, rq.registry.__name__]))
        """,
        as_rq=True,
    )
    assert seen == ['rq', 'rqfast.worker', 'rqfast.registry']


def test_install_as_rq_refuses_after_rq_and_changes_nothing() -> None:
    seen = run_scenario(
        """
        import json, os, sys
        import rq.job  # rq's own package, as django_rq imports it when Django loads the app
        import rqfast
        before = (list(sys.meta_path), 'RQFAST_AS_RQ' in os.environ)
        try:
            rqfast.install_as_rq()
            refused = ''
        except rqfast.as_rq.AsRqRefused as exc:
            refused = str(exc)
        import rq
        after = (list(sys.meta_path), 'RQFAST_AS_RQ' in os.environ)
        print(json.dumps({'refused': refused, 'unchanged': before == after, 'rq': rq.__file__,
                          'on': rqfast.as_rq.serving_as_rq()}))
        """,
        as_rq=False,
    )
    assert "rq's own 'rq' was imported first" in seen['refused'] and 'Nothing was changed' in seen['refused']
    assert seen['unchanged'] is True and seen['on'] is False
    assert 'site-packages/rq/__init__.py' in seen['rq']


def test_environment_switch_set_after_rq_was_imported_refuses_at_import_rqfast() -> None:
    done = subprocess.run(
        [sys.executable, '-c', 'import os, rq; os.environ["RQFAST_AS_RQ"] = "1"; import rqfast'],
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if k != 'RQFAST_AS_RQ'},
    )
    assert done.returncode == 1
    assert "AsRqRefused: rqfast cannot serve `import rq` in this process: rq's own 'rq'" in done.stderr


def test_children_inherit_the_switch(clean_redis: str) -> None:
    """install_as_rq() in a worker process (no environment switch): its spawned children and forked horses
    run job code whose `import rq` is rqfast too."""
    seen = run_scenario(
        """
        import json, os
        import rqfast
        rqfast.install_as_rq()
        import redis
        from rq import Queue, SpawnWorker, Worker
        conn = redis.Redis.from_url(os.environ['REDIS_URL'])
        queue = Queue('children', connection=conn)
        jobs = [queue.enqueue('eco_switch_jobs.who_is_rq') for _ in range(2)]
        SpawnWorker([queue], connection=conn).work(burst=True, max_jobs=1)
        Worker([queue], connection=conn).work(burst=True)
        print(json.dumps([queue.fetch_job(job.id).return_value() for job in jobs]))
        """,
        as_rq=False,
        env={'REDIS_URL': clean_redis},
    )
    assert seen == ['rqfast', 'rqfast']


def test_switch_costs_nothing_when_off() -> None:
    """The .pth line imports nothing while RQFAST_AS_RQ is unset; set, it imports the switch (not rqfast)."""
    env = {k: v for k, v in os.environ.items() if k != 'RQFAST_AS_RQ'}
    command = [sys.executable, '-X', 'importtime', '-c', 'pass']
    off = subprocess.run(command, capture_output=True, text=True, env=env)
    on = subprocess.run(command, capture_output=True, text=True, env={**env, 'RQFAST_AS_RQ': '1'})

    def imported(report: str) -> set[str]:
        return {line.rsplit('|', 1)[-1].strip() for line in report.splitlines() if line.startswith('import time:')}

    assert '_rqfast_as_rq' not in imported(off.stderr)
    assert '_rqfast_as_rq' in imported(on.stderr)
    assert not {name for name in imported(on.stderr) if name.split('.')[0] == 'rqfast'}  # not rqfast itself


def test_the_editable_install_ships_the_pth() -> None:
    seen = run_scenario('import json, rqfast.as_rq; print(json.dumps(rqfast.as_rq.status().pth_files))', as_rq=False)
    assert seen and all(path.endswith('site-packages/rqfast-as-rq.pth') for path in seen)


def test_rq_command_runs_rqfast(clean_redis: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != 'RQFAST_AS_RQ'}
    on = subprocess.run(
        [str(BIN / 'rq'), 'info', '-u', clean_redis, '--only-queues'],
        capture_output=True,
        text=True,
        env={**env, 'RQFAST_AS_RQ': '1'},
    )
    assert on.returncode == 0, on.stderr
    doctor = subprocess.run([BIN / 'rq', 'doctor'], capture_output=True, text=True, env={**env, 'RQFAST_AS_RQ': '1'})
    assert doctor.returncode == 0 and 'import rq: rqfast (RQFAST_AS_RQ on' in doctor.stdout, doctor.stderr
    off = subprocess.run([str(BIN / 'rq'), '--version'], capture_output=True, text=True, env=env)
    assert off.returncode == 0 and '3.0.0' in off.stdout, (off.stdout, off.stderr)  # rq's own command


def test_rqfast_doctor_says_whether_the_switch_is_on() -> None:
    env = {k: v for k, v in os.environ.items() if k != 'RQFAST_AS_RQ'}
    off = subprocess.run([BIN / 'rqfast', 'doctor'], capture_output=True, text=True, env=env)
    on = subprocess.run([BIN / 'rqfast', 'doctor'], capture_output=True, text=True, env={**env, 'RQFAST_AS_RQ': '1'})
    assert "import rq: rq's own package (RQFAST_AS_RQ off); rq 3.0.0 is installed beside rqfast" in off.stdout
    assert 'import rq: rqfast (RQFAST_AS_RQ on: RQFAST_AS_RQ=1 at interpreter start' in on.stdout
    assert "serving RQ 3.0.0's API" in on.stdout


def test_sentrys_rq_integration_enables_on_rqfast() -> None:
    """Sentry finds RQ (rqfast) at a version it supports and patches rqfast's classes; rqfast's worker logs
    under `rq.worker`, the logger Sentry's integration ignores."""
    seen = run_scenario(
        """
        import json, redis, sentry_sdk
        from sentry_sdk.integrations.rq import RqIntegration
        from sentry_sdk.integrations.logging import _IGNORED_LOGGERS
        sentry_sdk.init(dsn='http://public@sentry.invalid/1', integrations=[RqIntegration()])
        import rq, rqfast
        from rqfast.worker import BaseWorker
        from rqfast.queue import Queue
        worker = rqfast.SimpleWorker(['q'], connection=redis.Redis(port=1), prepare_for_work=False)
        print(json.dumps({
            'enabled': sentry_sdk.get_client().get_integration(RqIntegration) is not None,
            'perform_job': hasattr(BaseWorker.perform_job, '__wrapped__'),
            'enqueue_job': hasattr(Queue.enqueue_job, '__wrapped__'),
            'ignored': 'rq.worker' in _IGNORED_LOGGERS, 'log': worker.log.name, 'version': rq.version.VERSION,
        }))
        """,
        as_rq=True,
    )
    assert seen == {
        'enabled': True,
        'perform_job': True,
        'enqueue_job': True,
        'ignored': True,
        'log': 'rq.worker',
        'version': '3.0.0',
    }
