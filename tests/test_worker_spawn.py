"""rqfast.SpawnWorker: a fresh interpreter per job, started ahead of it (tests/horse_contract.py)."""

from __future__ import annotations

import functools
import os
import pickle
import sys
from typing import Any
from unittest import mock

import pytest
import redis
import rq

import rqfast
import rqfast.worker.spawn

try:
    import spawn_workers
    from horse_contract import HorseContract, rq_job
except ImportError:  # tests/ became a package
    from tests import spawn_workers  # type: ignore[no-redef]
    from tests.horse_contract import HorseContract, rq_job  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


class TestSpawnWorker(HorseContract):
    worker_class = rqfast.SpawnWorker
    parent_is_worker = True
    worker_path = 'rqfast.SpawnWorker'


def test_a_child_imports_only_what_its_job_needs(redis_conn: redis.Redis) -> None:
    job = rq.Queue('q', connection=redis_conn).enqueue('jobs_isolation.where_am_i')
    rqfast.SpawnWorker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    where = rq_job(redis_conn, job.id).return_value()
    assert where['worker_loaded'] is False
    assert where['redis_loaded'] is False  # the job never used its connection, so redis-py was never imported
    assert where['opentelemetry_loaded'] is False  # nor traced (no provider): the tracing API was not imported
    assert where['loaded_for_nothing'] == []  # a job with no JSON field, no log line, no failure, no callback


def test_children_start_ahead_and_none_outlives_the_worker(redis_conn: redis.Redis, monkeypatch: Any) -> None:
    queue = rq.Queue('q', connection=redis_conn)
    ids = [queue.enqueue('jobs_isolation.where_am_i').id for _ in range(2)]
    started: list[int] = []
    original = rqfast.SpawnWorker.start_horse

    def start_horse(self: rqfast.SpawnWorker) -> Any:
        horse = original(self)
        started.append(horse.pid)
        return horse

    monkeypatch.setattr(rqfast.SpawnWorker, 'start_horse', start_horse)
    worker = rqfast.SpawnWorker(['q'], connection=redis_conn)
    worker.work(burst=True, logging_level='WARNING')
    ran = [rq_job(redis_conn, job_id).return_value()['pid'] for job_id in ids]
    assert ran == started[:2]  # each job ran in a child started before it was claimed
    assert len(started) == 3  # and one more was waiting when the queue ran dry
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # reaped: no child left behind


# --- RQ 3.0: the horse's worker, its configuration checked before any job, fork_work_horse()


@pytest.fixture
def rq212(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rqfast.defaults, 'RQFAST_COMPAT', '2.12')


def _recording_worker(redis_conn: redis.Redis) -> tuple[Any, Any]:
    queue = spawn_workers.CustomQueue('q', connection=redis_conn, job_class=spawn_workers.CustomJob)
    worker = spawn_workers.RecordingSpawnWorker(
        [queue],
        connection=redis_conn,
        job_class=spawn_workers.CustomJob,
        queue_class=spawn_workers.CustomQueue,
        default_result_ttl=10000,
    )
    worker.death_penalty_class = spawn_workers.CustomDeathPenalty
    return queue, worker


def test_the_horse_runs_the_workers_hooks_with_its_classes(redis_conn: redis.Redis) -> None:
    queue, worker = _recording_worker(redis_conn)
    job = queue.enqueue('jobs.say_hello')
    worker.work(burst=True, logging_level='WARNING')
    recorded = redis_conn.get('spawn-worker-config')
    assert recorded == b'RecordingSpawnWorker CustomJob CustomQueue CustomDeathPenalty'
    assert job.return_value() == 'Hi there, Stranger!'
    assert 9000 < redis_conn.ttl(job.key) <= 10000


@pytest.mark.usefixtures('rq212')
def test_rq212_mode_horse_runs_the_hooks_too(redis_conn: redis.Redis) -> None:
    """RQ 2.12's spawned child ran a plain worker, so a subclass's hooks were silently skipped; rqfast
    runs them under RQFAST_COMPAT=2.12 too (a deliberate difference: the override is the app's code)."""
    queue, worker = _recording_worker(redis_conn)
    job = queue.enqueue('jobs.say_hello')
    worker.work(burst=True, logging_level='WARNING')
    assert redis_conn.get('spawn-worker-config') == b'RecordingSpawnWorker CustomJob CustomQueue CustomDeathPenalty'
    assert job.return_value() == 'Hi there, Stranger!'


def _handler(job: Any, *exc_info: Any) -> bool:
    return True


@pytest.mark.parametrize('kind', ['lambda', '__main__'])
def test_a_config_the_horse_cannot_import_fails_before_any_job(redis_conn: redis.Redis, kind: str) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    queue.enqueue('jobs.say_hello')
    handler: Any = lambda job, *exc_info: True  # noqa: E731
    if kind == '__main__':
        handler = functools.partial(_handler)
        handler.__module__ = '__main__'
    worker = rqfast.SpawnWorker([queue], connection=redis_conn, exception_handlers=[handler])
    with pytest.raises(ValueError if kind == '__main__' else (pickle.PicklingError, AttributeError)):
        worker.work(burst=True, logging_level='WARNING')
    assert queue.count == 1
    assert redis_conn.exists(worker.key) == 0


@pytest.mark.usefixtures('rq212')
def test_rq212_drops_a_handler_the_horse_cannot_import(redis_conn: redis.Redis) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    job = queue.enqueue('jobs.say_hello')
    worker = rqfast.SpawnWorker([queue], connection=redis_conn, exception_handlers=[lambda job, *exc_info: True])
    worker.work(burst=True, logging_level='WARNING')
    assert job.return_value() == 'Hi there, Stranger!'


def test_fork_work_horse_then_monitor_work_horse(redis_conn: redis.Redis) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    job = queue.enqueue('jobs.say_hello')
    worker = rqfast.SpawnWorker([queue], connection=redis_conn)
    worker.register_birth()
    try:
        claimed, claimed_queue = worker.dequeue_job_and_maintain_ttl(5)
        execution = worker.prepare_execution(claimed)
        worker.fork_work_horse(claimed, claimed_queue)
        assert os.getpgid(worker.horse_pid) == worker.horse_pid  # its own process group, set at spawn
        worker.monitor_work_horse(claimed, claimed_queue, execution)
    finally:
        worker.register_death()
    assert job.return_value() == 'Hi there, Stranger!'
    assert job.get_status() == rqfast.job.JobStatus.FINISHED


def test_fork_work_horse_child_rebuilds_the_connection(redis_conn: redis.Redis) -> None:
    connection = redis.Redis(unix_socket_path='/tmp/no-such-redis.sock', db=5, password='secret')
    queue = rqfast.Queue('q', connection=connection)
    worker = rqfast.SpawnWorker([queue], connection=connection, prepare_for_work=False)
    job = rqfast.job.Job.create('jobs.say_hello', connection=connection)
    with mock.patch('os.posix_spawn', return_value=2**22) as spawn:
        worker.fork_work_horse(job, queue)
    argv = spawn.call_args.args[1]
    assert argv[1] == '-c'
    with mock.patch.object(rqfast.SpawnWorker, 'find_by_key', return_value=None) as find_worker:
        with pytest.raises(SystemExit) as exited:
            exec(argv[2], {})
    assert exited.value.code == 1
    child_connection = find_worker.call_args.kwargs['connection']
    assert child_connection.connection_pool.connection_class is redis.UnixDomainSocketConnection
    kwargs = child_connection.connection_pool.connection_kwargs
    assert (kwargs['path'], kwargs['db'], kwargs['password']) == ('/tmp/no-such-redis.sock', 5, 'secret')


# --- how many children wait, and what a child started without `site` still finds


@pytest.mark.parametrize(('concurrency', 'waiting', 'expected'), [(1, None, 1), (3, None, 3), (3, 1, 1), (1, 2, 2)])
def test_one_child_waits_per_slot(
    redis_conn: redis.Redis, monkeypatch: Any, concurrency: int, waiting: int | None, expected: int
) -> None:
    started: list[int] = []
    original = rqfast.SpawnWorker.start_horse

    def start_horse(self: rqfast.SpawnWorker) -> Any:
        horse = original(self)
        started.append(horse.pid)
        return horse

    monkeypatch.setattr(rqfast.SpawnWorker, 'start_horse', start_horse)
    worker = rqfast.SpawnWorker(['q'], connection=redis_conn, concurrency=concurrency)
    if waiting is not None:
        worker.waiting_horses = waiting
    assert worker.spare_horses() == expected
    worker.work(burst=True, logging_level='WARNING')  # no job: only the children started ahead
    assert len(started) == expected
    for pid in started:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # stopped and reaped with the worker


_EDITABLE_FINDER = """
import sys
from importlib.machinery import PathFinder

MAPPING = {{'{package}': {directory!r}}}
NAMESPACES = {{}}


class _Finder:
    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname in MAPPING:
            return PathFinder.find_spec(fullname, [MAPPING[fullname].rpartition('/')[0]])
        return None


def install():
    if _Finder not in sys.meta_path:
        sys.meta_path.append(_Finder)
"""


def test_a_child_finds_what_an_editable_install_maps(
    redis_conn: redis.Redis, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package only an editable install's finder maps (setuptools' `__editable___*_finder`, installed by
    a .pth) is found by a child that skipped `site`: the finder is replayed there, installed when needed."""
    package, finder = 'rqfast_editable_demo', '__editable___rqfast_editable_demo_0_1_finder'
    source = tmp_path / 'src'
    (source / package).mkdir(parents=True)
    (source / package / '__init__.py').write_text(
        'import os, sys\n'
        'def where():\n'
        "    return {'pid': os.getpid(), 'finders': [type(f).__name__ if not isinstance(f, type) else f.__name__\n"
        '                                            for f in sys.meta_path]}\n'
    )
    site_packages = tmp_path / 'site'
    site_packages.mkdir()
    (site_packages / f'{finder}.py').write_text(
        _EDITABLE_FINDER.format(package=package, directory=str(source / package))
    )
    monkeypatch.syspath_prepend(str(site_packages))
    module = __import__(finder)
    # Only the standard hooks and editable finders: pytest's assertion rewriter, or a hook another test's
    # imports left (six's, say: CI's whole run), would make the child run `site` (rightly: site_replay gives '')
    spawn = rqfast.worker.spawn

    def replayable(hook: Any) -> bool:
        module = getattr(hook, '__module__', None)
        return module in spawn._STANDARD_HOOK_MODULES or spawn._editable_names(module) is not None

    monkeypatch.setattr(sys, 'meta_path', [f for f in sys.meta_path if replayable(f)])
    monkeypatch.setattr(sys, 'path_hooks', [f for f in sys.path_hooks if replayable(f)])
    module.install()
    assert __import__(package).where()['pid'] == os.getpid()  # the worker finds it through the finder only
    assert f'{finder} {package}' in rqfast.worker.spawn.site_replay().split('\n')[3:]

    job = rq.Queue('q', connection=redis_conn).enqueue(f'{package}.where')
    rqfast.SpawnWorker(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    where = rq_job(redis_conn, job.id).return_value()
    assert where is not None, rq_job(redis_conn, job.id).latest_result().exc_string
    assert where['pid'] != os.getpid()
    assert '_Finder' in where['finders']  # installed in the child when the job's import reached it


def test_a_hook_that_is_not_an_editable_finder_makes_the_child_run_site(monkeypatch: pytest.MonkeyPatch) -> None:
    class Hook:
        @staticmethod
        def find_spec(fullname: str, path: Any = None, target: Any = None) -> None:
            return None

    monkeypatch.setattr(sys, 'meta_path', [*sys.meta_path, Hook])
    assert rqfast.worker.spawn.site_replay() == ''
