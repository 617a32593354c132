"""The switch (RQFAST_AS_RQ / rqfast.install_as_rq()) and rqfast beside rq's own package, with the rq installed
here (2.12; tests/ecosystem/project does the same beside rq 3.0, with django-rq, Sentry and OpenTelemetry).

Scenarios that depend on what a process imported first run in a fresh interpreter.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import redis

import rqfast
from rqfast import execution
from rqfast.cli.doctor import report
from rqfast.queue import Queue

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent


def scenario(source: str, *, as_rq: bool = False, env: dict[str, str] | None = None) -> Any:
    environment = {k: v for k, v in os.environ.items() if k not in ('RQFAST_AS_RQ', 'RQFAST_COMPAT')}
    environment['PYTHONPATH'] = os.pathsep.join([str(TESTS), str(ROOT)])
    if as_rq:
        environment['RQFAST_AS_RQ'] = '1'
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, '-c', textwrap.dedent(source)], capture_output=True, text=True, env=environment, timeout=100
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the switch


def test_the_switch_serves_rq_from_rqfast() -> None:
    seen = scenario(
        """
        import json, sys
        import rq, rq.job, rq.worker, rq.registry, rq.version, rq.cli.cli
        import rqfast
        print(json.dumps({
            'modules': [rq.job.__name__, rq.worker.__name__, rq.registry.__name__, rq.cli.cli.__name__],
            'same': rq.job.Job is rqfast.job.Job and rq.Worker is rqfast.Worker,
            'versions': [rq.VERSION, rq.__version__, rq.version.VERSION, rq.version.RQFAST_VERSION],
            'own_rq_loaded': [n for n, m in list(sys.modules.items()) if '/rq/' in str(getattr(m, '__file__', 0))],
        }))
        """,
        as_rq=True,
    )
    assert seen['modules'] == ['rqfast.job', 'rqfast.worker', 'rqfast.registry', 'rqfast.cli']
    assert seen['same'] is True
    assert seen['versions'] == ['3.0.0', '3.0.0', '3.0.0', rqfast.VERSION]
    assert seen['own_rq_loaded'] == []


def test_rq_version_is_2_12_under_rqfast_compat() -> None:
    assert scenario('import json, rq; print(json.dumps(rq.VERSION))', as_rq=True, env={'RQFAST_COMPAT': '2.12'}) == (
        '2.12.0'
    )


def test_a_module_rqfast_lacks_is_a_clear_import_error() -> None:
    seen = scenario(
        """
        import json
        try:
            import rq.no_such_module
        except ModuleNotFoundError as exc:
            print(json.dumps([exc.name, str(exc)]))
        """,
        as_rq=True,
    )
    assert seen[0] == 'rq.no_such_module' and 'rqfast serves `rq` in this process' in seen[1]


def test_install_as_rq_turns_it_on_for_the_process_and_its_children() -> None:
    seen = scenario(
        """
        import json, os, subprocess, sys
        import rqfast
        rqfast.install_as_rq()
        import rq
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        command = [sys.executable, '-c', 'import rq; print(rq.__name__, rq.VERSION)']
        child = subprocess.run(command, capture_output=True, text=True, env=env)
        print(json.dumps([getattr(rq, '__rqfast_as_rq__', False), os.environ.get('RQFAST_AS_RQ'),
                          child.stdout.strip(), rqfast.as_rq.status().how]))
        """
    )
    assert seen == [True, '1', 'rq 3.0.0', 'install_as_rq()']


def test_install_as_rq_refuses_when_rq_was_imported_first() -> None:
    seen = scenario(
        """
        import json, os, sys
        import rq.job
        import rqfast
        meta_path = list(sys.meta_path)
        try:
            rqfast.install_as_rq()
            message = ''
        except rqfast.as_rq.AsRqRefused as exc:
            message = str(exc)
        print(json.dumps([message, meta_path == list(sys.meta_path), 'RQFAST_AS_RQ' in os.environ,
                          rqfast.as_rq.serving_as_rq()]))
        """
    )
    message, unchanged_path, env_set, on = seen
    assert message.startswith(
        "rqfast cannot serve `import rq` in this process: rq's own 'rq' was imported first, from "
    )
    assert 'site-packages/rq/__init__.py' in message and message.endswith('Nothing was changed.')
    assert (unchanged_path, env_set, on) == (True, False, False)


def test_a_bad_switch_value_is_an_error() -> None:
    environment = {**os.environ, 'RQFAST_AS_RQ': 'maybe', 'PYTHONPATH': str(ROOT)}
    done = subprocess.run([sys.executable, '-c', 'import rqfast'], capture_output=True, text=True, env=environment)
    assert done.returncode == 1
    assert "ValueError: Invalid RQFAST_AS_RQ='maybe': 1/true/yes/on or 0/false/no/off (unset: off)" in done.stderr


def test_rqfast_logs_under_rqs_names_while_serving_rq() -> None:
    seen = scenario(
        """
        import json, redis, rqfast
        from rqfast import maintenance, scheduler
        worker = rqfast.SimpleWorker(['q'], connection=redis.Redis(port=1), prepare_for_work=False)
        print(json.dumps([worker.log.name, maintenance.logger.name, scheduler.logger.name]))
        """,
        as_rq=True,
    )
    assert seen == ['rq.worker', 'rq.maintenance', 'rq.scheduler']
    worker = rqfast.SimpleWorker(['q'], connection=redis.Redis(port=1), prepare_for_work=False)
    assert worker.log.name == 'rqfast.worker'


def test_doctor_says_whether_the_switch_is_on() -> None:
    lines = report()
    assert lines[0] == f"rqfast {rqfast.VERSION}, serving RQ 3.0.0's API (RQFAST_COMPAT=3.0)"
    assert lines[1].startswith("import rq: rq's own package (RQFAST_AS_RQ off); rq 2.12.0 is installed beside rqfast")
    on = scenario('import json; from rqfast.cli.doctor import report; print(json.dumps(report()))', as_rq=True)
    assert on[1].startswith('import rq: rqfast (RQFAST_AS_RQ on: ')


def test_the_switch_is_not_imported_when_off() -> None:
    environment = {k: v for k, v in os.environ.items() if k != 'RQFAST_AS_RQ'}
    done = subprocess.run(
        [sys.executable, '-X', 'importtime', '-c', 'import rqfast'], capture_output=True, text=True, env=environment
    )
    assert '| rq\n' not in done.stderr and '|   rq\n' not in done.stderr  # rqfast alone does not import rq
    loaded = scenario(
        'import json, sys, rqfast; print(json.dumps([m for m in sys.modules if m.split(".")[0] == "rq"]))'
    )
    assert loaded == []


# --- rqfast beside rq's own package (the switch off)


@pytest.mark.parametrize('rq_first', [True, False])
def test_rqs_except_clauses_catch_rqfasts_exceptions(rq_first: bool) -> None:
    seen = scenario(
        f"""
        import json
        if {rq_first!r}:
            import rq.exceptions, rq.timeouts
        import rqfast.exceptions, rqfast.timeouts
        import rq.exceptions, rq.timeouts
        caught = []
        for ours, theirs in [(rqfast.exceptions.NoSuchJobError, rq.exceptions.NoSuchJobError),
                             (rqfast.exceptions.InvalidJobOperation, rq.exceptions.InvalidJobOperation),
                             (rqfast.timeouts.JobTimeoutException, rq.timeouts.JobTimeoutException),
                             (rqfast.timeouts.JobTimeoutException, rqfast.timeouts.BaseTimeoutException)]:
            try:
                raise ours('x')
            except theirs:
                caught.append(ours.__name__)
        try:
            raise rqfast.exceptions.ShutDownImminentException('x', {{'a': 1}})
        except rq.exceptions.ShutDownImminentException as exc:
            caught.append(exc.extra_info)
        print(json.dumps(caught))
        """
    )
    assert seen == ['NoSuchJobError', 'InvalidJobOperation', 'JobTimeoutException', 'JobTimeoutException', {'a': 1}]


@pytest.mark.parametrize('concurrency', [1, 4])
@pytest.mark.parametrize('worker_class', ['SimpleWorker', 'Worker', 'SpawnWorker'])
def test_rqs_get_current_job_in_job_code(redis_conn: redis.Redis, worker_class: str, concurrency: int) -> None:
    queue = Queue('current', connection=redis_conn)
    jobs = [queue.enqueue('as_rq_jobs.rq_current_job_id') for _ in range(3)]
    getattr(rqfast, worker_class)([queue], connection=redis_conn, concurrency=concurrency).work(burst=True)
    assert [queue.fetch_job(job.id).return_value() for job in jobs] == [job.id for job in jobs]


def test_rqs_job_objects_in_rqfasts_queue_and_registries(redis_conn: redis.Redis) -> None:
    import rq

    made = rq.Queue('objects', connection=redis_conn).create_job('operator.add', args=(3, 4), meta={'a': 1})
    queue = Queue('objects', connection=redis_conn)
    enqueued = queue.enqueue_job(made)
    assert isinstance(enqueued, rqfast.Job) and enqueued.id == made.id and enqueued.meta == {'a': 1}
    rqfast.SimpleWorker([queue], connection=redis_conn).work(burst=True)
    theirs = rq.job.Job.fetch(made.id, connection=redis_conn)
    ours = rqfast.Job.fetch(made.id, connection=redis_conn)
    assert ours.return_value() == 7
    assert ours == theirs and theirs in [ours] and ours != rq.job.Job.fetch(made.id, connection=redis_conn).id
    registry = queue.finished_job_registry
    assert theirs in registry
    assert registry.remove(theirs) == 1 and made.id not in registry.get_job_ids()


@pytest.mark.parametrize('rq_first', [True, False])
def test_rq_and_rqfast_jobs_and_workers_compare_by_id_and_name(rq_first: bool) -> None:
    seen = scenario(
        f"""
        import json, redis
        if {rq_first!r}:
            import rq.job, rq.worker
        import rqfast
        import rq, rq.job
        conn = redis.Redis(port=1)
        ours, theirs = rqfast.Job('abc', connection=conn), rq.job.Job('abc', connection=conn)
        worker = rqfast.SimpleWorker(['q'], connection=conn, name='w', prepare_for_work=False)
        rq_worker = rq.Worker(['q'], connection=conn, name='w', prepare_for_work=False)
        other = rq.Worker(['q'], connection=conn, name='x', prepare_for_work=False)
        try:
            rq_worker == 3
            raised = False
        except TypeError:
            raised = True
        print(json.dumps([ours == theirs, theirs == ours, theirs == rq.job.Job('other', connection=conn),
                          worker == rq_worker, rq_worker == worker, other == worker, raised]))
        """
    )
    assert seen == [True, True, False, True, True, False, True]


# --- RQ 3.0's enqueue path, which instrumentation patches by name


def test_enqueue_job_goes_through_setup_dependencies_and_enqueue_job(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, str]] = []

    def traced(name: str) -> Any:
        original = getattr(Queue, name)

        @functools.wraps(original)
        def wrapper(self: Queue, job: Any, *args: Any, **kwargs: Any) -> Any:
            calls.append((name, job.func_name))
            return original(self, job, *args, **kwargs)

        return wrapper

    for name in ('enqueue_job', 'setup_dependencies', '_enqueue_job'):
        monkeypatch.setattr(Queue, name, traced(name))
    queue = Queue('path', connection=redis_conn)
    parent = queue.enqueue('operator.add', 1, 2)
    child = queue.enqueue('operator.mul', 2, 3, depends_on=parent)
    assert calls == [
        (name, func)
        for func in ('operator.add', 'operator.mul')
        for name in ('enqueue_job', 'setup_dependencies', '_enqueue_job')
    ]
    assert parent.get_status() == 'queued' and child.get_status() == 'deferred'  # the script still checked them
    queue._enqueue_job(child)  # called directly, RQ's meaning: no dependency check
    assert child.get_status() == 'queued'


# --- the worker hash at birth (RQ 3.0: no state until the loop sets one)


def test_register_birth_writes_no_state(redis_conn: redis.Redis) -> None:
    worker = rqfast.SimpleWorker(['q'], connection=redis_conn)
    worker.register_birth()
    assert redis_conn.hget(worker.key, 'state') is None
    worker.register_death()
    started = rqfast.SimpleWorker(['q'], connection=redis_conn)
    started.bootstrap()
    try:
        assert redis_conn.hget(started.key, 'state') == b'started'
    finally:
        started.teardown()  # bootstrap() started its heartbeat and command threads


# --- run observers (rqfast.contrib.sentry's hook): each run, in the process that runs it


@pytest.mark.parametrize('concurrency', [1, 4])
def test_run_observers_see_each_run(redis_conn: redis.Redis, concurrency: int) -> None:
    seen: list[tuple[str, str, str]] = []

    def observer(job: Any) -> Any:
        from contextlib import contextmanager

        @contextmanager
        def watch() -> Any:
            seen.append(('start', job.id, ''))
            yield lambda outcome: seen.append(('end', job.id, outcome.kind.value))

        return watch()

    execution.add_run_observer(observer)
    try:
        queue = Queue('observed', connection=redis_conn)
        good, bad = queue.enqueue('operator.add', 1, 2), queue.enqueue('operator.truediv', 1, 0)
        rqfast.SimpleWorker([queue], connection=redis_conn, concurrency=concurrency).work(burst=True)
    finally:
        execution.remove_run_observer(observer)
    assert sorted(seen) == sorted(
        [('start', good.id, ''), ('end', good.id, 'success'), ('start', bad.id, ''), ('end', bad.id, 'failure')]
    )
