"""RQ 2.12's public surface under rqfast: every module and name, and what the names that act on Redis do.

The list of names comes from rq itself at test time (ALLOWED_ABSENT says, name by name, what rqfast
leaves out on purpose); the behaviour tests use rq as the oracle on the same Redis.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import signal
import time
import types
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis
import rq
import rq.cli
import rq.defaults
import rq.worker

import rqfast
from rqfast import engine

try:
    import jobs
    from snapshot import following_reference
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import following_reference  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

# Every RQ 2.12 module is a feature rqfast has now: none is left out as a feature still to build.
FEATURE_MODULES: set[str] = set()

# What rqfast leaves out on purpose, by module ('*': the whole module), each with its reason.
ALLOWED_ABSENT: dict[str, dict[str, str]] = {
    'cli.cli': {'*': "rq's click commands; rqfast's CLI (rqfast.cli) has its own, and is the cli issue's"},
    'cli.workers': {'*': "rq's `worker` click command module: rqfast.cli.workers has rqfast's"},
    'scheduler': {
        'ACQUIRE_OR_REFRESH_LOCK_SCRIPT': "RQ's Lua source text: rqfast's scripts are files in lua/",
        'SCHEDULER_KEY_TEMPLATE': 'rqfast.keys.scheduler_key',
        'SCHEDULER_LOCKING_KEY_TEMPLATE': 'rqfast.keys.scheduler_lock_key',
        'SchedulerStatus': "the scheduler's internal state enum",
        'run': "the scheduler process's entry point: rqfast's scheduler runs in the worker's thread",
    },
    'scripts': {
        'UNIQUE_ENQUEUE_SCRIPT': "RQ's Lua source text: rqfast's is lua/enqueue_jobs.lua",
        'UNIQUE_SCHEDULE_SCRIPT': "RQ's Lua source text: rqfast's is lua/enqueue_jobs.lua",
        'ACQUIRE_OR_REFRESH_LOCK_SCRIPT': "RQ's Lua source text: rqfast's is lua/acquire_or_refresh_lock.lua",
        'RELEASE_LOCK_SCRIPT': "RQ's Lua source text: rqfast's is lua/release_lock.lua",
        'get_unique_enqueue_script': "RQ's per-connection script cache: rqfast.scripts.script() loads by sha1",
        'get_unique_schedule_script': "RQ's per-connection script cache: rqfast.scripts.script() loads by sha1",
    },
    'executions': {'cleanup_execution': "the worker's bookkeeping after a job: rqfast's finish script does it"},
    'queue': {'EnqueueData': 'the extension-points issue', 'EnqueueArgs': 'the extension-points issue'},
    'worker.base': {
        'setprocname': "RQ's process title helper",
        'PUBSUB_CHANNEL_TEMPLATE': 'rqfast.command.PUBSUB_CHANNEL_TEMPLATE',
    },
}


def rq_modules() -> list[str]:
    """RQ 2.12's modules, relative to `rq` ('' for the package, 'worker.base', 'cli.helpers'...)."""
    names = ['']
    for package, prefix in ((rq, ''), (rq.worker, 'worker.'), (rq.cli, 'cli.')):
        names += [prefix + info.name for info in pkgutil.iter_modules(package.__path__) if info.name != '__main__']
    return [name for name in names if name not in FEATURE_MODULES]


def public_names(module: types.ModuleType) -> set[str]:
    """__all__, else what the module defines: public classes and functions it owns, and constants that are
    not rq.defaults' (imported names are the other module's)."""
    if hasattr(module, '__all__'):
        return set(module.__all__)
    found = set()
    for name, value in vars(module).items():
        if name.startswith('_') or name == 'TYPE_CHECKING' or inspect.ismodule(value):
            continue
        if inspect.isclass(value) or inspect.isfunction(value):
            if value.__module__ == module.__name__:
                found.add(name)
        elif not callable(value) and getattr(rq.defaults, name, object()) is not value:
            if name not in {'logger'} and not _imported_constant(module, name, value):
                found.add(name)
    return found


def _imported_constant(module: types.ModuleType, name: str, value: Any) -> bool:
    """A constant the module took from another rq module (the same object there)."""
    for other in ('utils', 'job', 'defaults'):
        owner = importlib.import_module(f'rq.{other}')
        if owner is not module and getattr(owner, name, object()) is value:
            return True
    return False


@pytest.mark.parametrize('module', rq_modules())
def test_every_public_rq_module_and_name_is_under_rqfast(module: str) -> None:
    allowed = ALLOWED_ABSENT.get(module, {})
    if '*' in allowed:
        return
    rq_module = importlib.import_module(f'rq.{module}' if module else 'rq')
    ours = importlib.import_module(f'rqfast.{module}' if module else 'rqfast')
    missing = sorted(name for name in public_names(rq_module) - set(allowed) if not hasattr(ours, name))
    assert not missing, f'rqfast.{module} lacks {missing}'


def test_the_allow_list_names_only_what_rq_has() -> None:
    modules = set(rq_modules())
    for module, names in ALLOWED_ABSENT.items():
        assert module in modules, module
        if '*' not in names:
            rq_module = importlib.import_module(f'rq.{module}')
            assert set(names) <= set(vars(rq_module)), (module, set(names) - set(vars(rq_module)))


def test_rq_dotted_paths_resolve_under_rqfast() -> None:
    from rqfast.utils import import_attribute, import_job_class, import_queue_class, import_worker_class

    assert import_worker_class('rqfast.worker.RoundRobinWorker') is rqfast.worker.RoundRobinWorker
    assert import_worker_class('rqfast.worker.HerokuWorker') is rqfast.worker.HerokuWorker
    assert import_job_class('rqfast.job.Job') is rqfast.Job
    assert import_queue_class('rqfast.queue.Queue') is rqfast.Queue
    assert import_attribute('rqfast.utils.get_version') is rqfast.utils.get_version
    for bad in ('rqfast.worker.WrongWorker', 'non.existent.module'):
        with pytest.raises(ValueError):
            import_attribute(bad)
    with pytest.raises(ValueError):
        import_worker_class('datetime.datetime')


# --- commands: the payload on the wire is RQ's


def _published(conn: redis.Redis, channel: str, send: Any) -> dict[str, Any]:
    pubsub = conn.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(channel)
    pubsub.get_message(timeout=1)
    send()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        message = pubsub.get_message(timeout=0.5)
        if message is not None:
            pubsub.close()
            return message  # type: ignore[no-any-return]
    raise AssertionError('nothing published')


@pytest.mark.parametrize('command', ['shutdown', 'kill-horse'])
def test_commands_publish_what_rqs_publish_and_rq_reads_them(redis_conn: redis.Redis, command: str) -> None:
    import rq.command

    import rqfast.command

    senders = {'shutdown': 'send_shutdown_command', 'kill-horse': 'send_kill_horse_command'}
    theirs = _published(redis_conn, 'rq:pubsub:w1', lambda: getattr(rq.command, senders[command])(redis_conn, 'w1'))
    ours = _published(redis_conn, 'rq:pubsub:w1', lambda: getattr(rqfast.command, senders[command])(redis_conn, 'w1'))
    assert ours['channel'] == theirs['channel'] == b'rq:pubsub:w1'
    assert json.loads(ours['data']) == json.loads(theirs['data']) == {'command': command}
    assert rq.command.parse_payload(ours) == rqfast.command.parse_payload(theirs) == {'command': command}
    assert rqfast.command.PUBSUB_CHANNEL_TEMPLATE == rq.command.PUBSUB_CHANNEL_TEMPLATE


def test_stop_job_command_checks_the_job_then_publishes_rqs_payload(redis_conn: redis.Redis) -> None:
    from rqfast.command import send_stop_job_command
    from rqfast.exceptions import InvalidJobOperation, NoSuchJobError

    job = rqfast.Queue('surface', connection=redis_conn).enqueue(jobs.add, 1, 2)
    with pytest.raises(NoSuchJobError):
        send_stop_job_command(redis_conn, 'no-such-job')
    with pytest.raises(InvalidJobOperation):
        send_stop_job_command(redis_conn, job.id)  # not running
    redis_conn.hset(job.key, 'worker_name', 'w2')
    message = _published(redis_conn, 'rq:pubsub:w2', lambda: send_stop_job_command(redis_conn, job.id))
    assert json.loads(message['data']) == {'command': 'stop-job', 'job_id': job.id}


def test_the_worker_takes_rqs_stop_job_only_for_the_job_it_runs(redis_conn: redis.Redis) -> None:
    from rqfast.command import handle_command

    worker = rqfast.SimpleWorker(['surface'], connection=redis_conn)
    stopped: list[str] = []
    worker.stop_job = stopped.append  # type: ignore[method-assign]
    worker._recorder.hold(engine.Claim('running', 'surface'))
    handle_command(worker, {'command': 'stop-job', 'job_id': 'other'})
    handle_command(worker, {'command': 'stop-job', 'job_id': 'running'})
    handle_command(worker, {'command': 'unknown'})
    assert stopped == ['running']


# --- suspension: the same key as RQ's


@pytest.mark.parametrize('ttl', [None, 30])
def test_suspend_and_resume_write_rqs_key(connection: redis.Redis, ttl: int | None) -> None:
    import rq.suspension

    from rqfast.suspension import is_suspended, resume, suspend

    rq.suspension.suspend(connection, ttl)
    theirs = (connection.get('rq:suspended'), connection.ttl('rq:suspended'))
    assert resume(connection) == 1 and not connection.exists('rq:suspended')
    suspend(connection, ttl)
    assert (connection.get('rq:suspended'), connection.ttl('rq:suspended')) == theirs
    assert is_suspended(connection) and rq.suspension.is_suspended(connection)
    assert rq.suspension.resume(connection) == 1
    assert not is_suspended(connection)
    suspend(connection, 0)  # RQ: a TTL of 0 ends it at once
    assert not is_suspended(connection)


# --- worker registration: the sets RQ's functions read and write


def test_worker_registration_matches_rqs_on_the_same_sets(connection: redis.Redis) -> None:
    import rq.worker_registration as theirs

    import rqfast.worker_registration as ours

    worker = rqfast.SimpleWorker(['a', 'b'], name='w1', connection=connection)
    ours.register(worker)
    queue_a = rq.Queue('a', connection=connection)
    assert theirs.get_keys(queue_a) == ours.get_keys(rqfast.Queue('a', connection=connection)) == {worker.key}
    assert theirs.get_keys(connection=connection) == ours.get_keys(connection=connection) == {worker.key}
    ours.unregister(worker)
    assert connection.smembers('rq:workers') == connection.smembers('rq:workers:a') == set()
    with pytest.raises(ValueError):
        ours.get_keys()
    # the worker's hash is gone: cleaning drops it from both sets, as RQ's does
    ours.register(worker)
    ours.clean_worker_registry(rqfast.Queue('a', connection=connection))
    assert not connection.smembers('rq:workers:a') and not connection.smembers('rq:workers')
    assert ours.WORKERS_BY_QUEUE_KEY == theirs.WORKERS_BY_QUEUE_KEY
    assert ours.REDIS_WORKER_KEYS == theirs.REDIS_WORKER_KEYS


def test_a_registered_workers_key_is_in_rqs_sets(connection: redis.Redis) -> None:
    import rq.worker_registration as theirs

    worker = rqfast.SimpleWorker(['a'], name='w2', connection=connection)
    worker.register_birth()
    try:
        assert theirs.get_keys(rq.Queue('a', connection=connection)) == {worker.key}
    finally:
        worker.register_death()


# --- executions: reading back what the claim script wrote


def test_execution_of_a_claimed_job_reads_back_as_rqs_does(connection: redis.Redis) -> None:
    import rq.executions

    from rqfast.executions import Execution

    queue = rqfast.Queue('surface', connection=connection)
    queue.enqueue(jobs.add, 1, 2)
    second = queue.enqueue(jobs.add, 3, 4)
    worker = rqfast.SimpleWorker([queue], name='w3', connection=connection)
    worker.register_birth()
    worker.step()  # runs the first job; its finish claims the second, which is now started
    (execution,) = second.get_executions()
    assert execution.job_id == second.id and execution.worker_name == 'w3'
    assert execution.key == f'rq:execution:{second.id}:{execution.id}'
    theirs = rq.executions.Execution.fetch(execution.id, second.id, connection=connection)
    assert (theirs.created_at, theirs.last_heartbeat, theirs.worker_name) == (
        execution.created_at,
        execution.last_heartbeat,
        execution.worker_name,
    )
    assert execution.composite_key in [f'{j}:{x}' for j, x in queue.started_job_registry.get_job_and_execution_ids()]
    assert Execution.from_composite_key(execution.composite_key, connection).id == execution.id
    rq_job = rq.job.Job.fetch(second.id, connection=connection)
    assert [e.id for e in rq.executions.ExecutionRegistry(rq_job.id, connection).get_executions()] == [execution.id]
    connection.delete(execution.key)
    with pytest.raises(ValueError):
        Execution.fetch(execution.id, second.id, connection)


def test_execution_create_writes_what_rqs_writes(redis_conn: redis.Redis) -> None:
    """Against the installed RQ (2.12): rqfast under compat 2.12 (RQ 3.0 adds job_id to the hash)."""
    with following_reference():
        _execution_create_writes_what_rqs_writes(redis_conn)


def _execution_create_writes_what_rqs_writes(redis_conn: redis.Redis) -> None:
    import rq.executions

    from rqfast.executions import Execution, ExecutionRegistry

    job = rqfast.Queue('surface', connection=redis_conn).enqueue(jobs.add, 1, 2)
    with redis_conn.pipeline() as pipeline:
        ours = Execution.create(job, 100, pipeline=pipeline, worker_name='foo')
        assert not redis_conn.exists(ours.key)  # nothing reaches Redis before the caller executes
        pipeline.execute()
    rq_job = rq.job.Job.fetch(job.id, connection=redis_conn)
    with redis_conn.pipeline() as pipeline:
        theirs = rq.executions.Execution.create(rq_job, 100, pipeline=pipeline, worker_name='foo')
        pipeline.execute()
    assert set(redis_conn.hgetall(ours.key)) == set(redis_conn.hgetall(theirs.key))
    assert 98 <= redis_conn.ttl(ours.key) <= 100 and 158 <= redis_conn.ttl(f'rq:executions:{job.id}') <= 160
    started = {m.decode() for m in redis_conn.zrange('rq:wip:surface', 0, -1)}
    assert started == {ours.composite_key, theirs.composite_key}
    assert set(ExecutionRegistry(job.id, redis_conn).get_execution_ids()) == {ours.id, theirs.id}
    with redis_conn.pipeline() as pipeline:
        ours.delete(job=job, pipeline=pipeline)
        pipeline.execute()
    assert not redis_conn.exists(ours.key)
    assert {m.decode() for m in redis_conn.zrange('rq:wip:surface', 0, -1)} == {theirs.composite_key}


# --- intermediate queue


def test_intermediate_queue_uses_rqs_keys_and_markers(connection: redis.Redis) -> None:
    import rq.intermediate_queue

    from rqfast.intermediate_queue import IntermediateQueue

    queue = rqfast.Queue('surface', connection=connection)
    ours = IntermediateQueue(queue.key, connection)
    theirs = rq.intermediate_queue.IntermediateQueue(queue.key, connection)
    assert (ours.key, ours.get_first_seen_key('x')) == (theirs.key, theirs.get_first_seen_key('x'))
    connection.rpush(ours.key, 'x', 'y')
    assert ours.get_job_ids() == ['x', 'y']
    assert ours.get_first_seen('x') is None and not ours.should_be_cleaned_up('x')
    assert ours.set_first_seen('x') and not ours.set_first_seen('x')
    assert theirs.get_first_seen('x') == ours.get_first_seen('x')
    connection.set(ours.get_first_seen_key('x'), (datetime.now(timezone.utc) - timedelta(minutes=2)).timestamp())
    assert ours.should_be_cleaned_up('x') and theirs.should_be_cleaned_up('x')
    ours.remove('x')
    assert ours.get_job_ids() == ['y']


def test_intermediate_cleanup_drops_ids_whose_job_is_gone(connection: redis.Redis) -> None:
    from rqfast.intermediate_queue import IntermediateQueue

    queue = rqfast.Queue('surface', connection=connection)
    job = queue.enqueue(jobs.add, 1, 2)
    connection.lrem(queue.key, 1, job.id)
    intermediate = IntermediateQueue(queue.key, connection)
    connection.rpush(intermediate.key, 'gone', job.id)
    worker = rqfast.SimpleWorker([queue], connection=connection)
    intermediate.cleanup(worker, queue)
    assert intermediate.get_job_ids() == [job.id]  # seen once: marked, kept
    assert intermediate.get_first_seen(job.id) is not None


# --- rq.scripts' functions


def test_save_unique_job_stores_once_and_rq_reads_it(connection: redis.Redis) -> None:
    from rqfast.exceptions import DuplicateJobError
    from rqfast.scripts import save_unique_job, schedule_unique_job

    queue = rqfast.Queue('surface', connection=connection)
    queue.enqueue(jobs.add, 0, 0, job_id='first')
    job = queue.create_job(jobs.add, args=(1, 2), job_id='u1', ttl=60)
    assert save_unique_job(connection, queue.key, job, at_front=True)
    assert queue.get_job_ids() == ['u1', 'first']
    assert 50 < connection.ttl(job.key) <= 60
    assert rq.job.Job.fetch('u1', connection=connection).args == (1, 2)
    with pytest.raises(DuplicateJobError, match='u1'):
        save_unique_job(connection, queue.key, queue.create_job(jobs.add, args=(1, 2), job_id='u1'))
    stored_only = queue.create_job(jobs.add, args=(1, 2), job_id='u2')
    save_unique_job(connection, queue.key, stored_only, enqueue=False)
    assert connection.exists(stored_only.key) and 'u2' not in queue.get_job_ids()

    when = datetime.now(timezone.utc) + timedelta(hours=1)
    scheduled = queue.create_job(jobs.add, args=(1, 2), job_id='s1')
    assert schedule_unique_job(connection, queue.key, 'rq:scheduled:surface', scheduled, when)
    assert int(connection.zscore('rq:scheduled:surface', 's1') or 0) == int(when.timestamp())
    assert rq.job.Job.fetch('s1', connection=connection).get_status() == 'scheduled'
    with pytest.raises(DuplicateJobError):
        schedule_unique_job(connection, queue.key, 'rq:scheduled:surface', scheduled, when)
    with pytest.raises(ValueError):
        schedule_unique_job(connection, queue.key, 'rq:scheduled:other', queue.create_job(jobs.add), when)


def test_locks_behave_as_rqs(connection: redis.Redis) -> None:
    import rq.scripts as theirs

    import rqfast.scripts as ours

    for module in (theirs, ours):
        connection.delete('lock:x')
        assert module.acquire_or_refresh_lock(connection, 'lock:x', 'a', 61) == 'acquired'
        connection.expire('lock:x', 5)
        assert module.acquire_or_refresh_lock(connection, 'lock:x', 'a', 61) == 'refreshed'
        assert 55 < connection.ttl('lock:x') <= 61
        assert module.acquire_or_refresh_lock(connection, 'lock:x', 'b', 61) == 'taken'
        assert module.release_lock(connection, 'lock:x', 'b') is False
        assert connection.get('lock:x') == b'a'
        assert module.release_lock(connection, 'lock:x', 'a') is True
        assert module.release_lock(connection, 'lock:x', 'a') is False


# --- utils and connections


def test_utils_behave_as_rqs() -> None:
    import rq.utils as theirs

    import rqfast.utils as ours

    cases: list[tuple[str, tuple[Any, ...]]] = [
        ('as_text', (b'x',)),
        ('ceildiv', (13, 4)),
        ('truncate_long_string', ('12345', 3)),
        ('get_call_string', ('f', (1, 'a'), {'k': 2, 'b': None}, 3)),
        ('utcparse', ('2017-08-31T10:14:02Z',)),
        ('utcformat', (datetime(2017, 8, 31, 10, 14, 2, 5, tzinfo=timezone.utc),)),
        ('str_to_date', (b'2023-01-01T12:00:00.000000Z',)),
        ('parse_timeout', ('2h',)),
        ('is_nonstring_iterable', ('x',)),
        ('ensure_job_list', ((1, 2),)),
        ('decode_redis_hash', ({b'a': b'b'},)),
        ('normalize_config_path', ('app/cron_config.py',)),
        ('get_platform', ()),
        ('parse_composite_key', ('job:exec',)),
        ('parse_names', (['a', 'b'],)),
        ('compact', ([1, None, 2],)),
        ('safe_json_dumps', ({1},)),
    ]
    for name, args in cases:
        expected, got = getattr(theirs, name)(*args), getattr(ours, name)(*args)
        if isinstance(expected, theirs.Platform):
            expected = expected.value
            got = got.value
        assert got == expected, name
    assert ours.parse_names(['a', rqfast.Queue('b', connection=redis.Redis())]) == ['a', 'b']
    assert list(ours.split_list(list(range(5)), 2)) == list(theirs.split_list(list(range(5)), 2))
    for bad in (3, None):
        with pytest.raises(ValueError):
            ours.as_text(bad)
    with pytest.raises(ValueError):
        ours.str_to_date('')
    assert ours.backend_class(jobs, 'add') is jobs.add
    assert ours.backend_class(jobs, 'add', override=f'{jobs.__name__}.echo') is jobs.echo
    assert abs(ours.current_timestamp() - theirs.current_timestamp()) <= 1


def test_get_version_parses_and_caches_the_servers_version(redis_conn: redis.Redis) -> None:
    from rqfast.utils import get_version

    class Redis2(redis.Redis):
        calls = 0

        def info(self, *args: Any, **kwargs: Any) -> Any:
            Redis2.calls += 1
            return {'redis_version': 7.1}

    client = Redis2()
    assert get_version(client) == get_version(client) == (7, 1, 0) and Redis2.calls == 1
    assert len(get_version(redis_conn)) == 3


def test_connection_kwargs_rebuild_the_connection(redis_conn: redis.Redis) -> None:
    from rqfast.connections import get_connection_kwargs, parse_connection

    kwargs = get_connection_kwargs(redis_conn)
    assert redis.Redis(**kwargs).ping()
    client_class, connection_class, pool_kwargs = parse_connection(redis_conn)
    assert client_class is type(redis_conn) and pool_kwargs == kwargs
    assert client_class(connection_pool=redis.ConnectionPool(connection_class=connection_class, **pool_kwargs)).ping()


# --- worker classes


def test_heroku_worker_warns_its_horse_with_sigrtmin(redis_conn: redis.Redis) -> None:
    from rqfast.worker import HerokuWorker

    pid = os.fork()
    if pid == 0:  # a stand-in horse in a process group of its own, as the pool makes them
        os.setpgrp()
        time.sleep(10)
        os._exit(0)
    worker = HerokuWorker(['surface'], connection=redis_conn)
    try:
        time.sleep(0.2)
        worker._horse_pid = pid
        worker.handle_warm_shutdown_request()
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGRTMIN
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    worker._horse_pid = 0
    worker.handle_warm_shutdown_request()  # no horse: a warning, nothing else
    assert worker.horse_settings().imminent_shutdown_delay == HerokuWorker.imminent_shutdown_delay


def test_imminent_shutdown_raises_in_the_job_after_the_delay() -> None:
    from rqfast.exceptions import ShutDownImminentException
    from rqfast.horse import ImminentShutdown

    previous = {s: signal.getsignal(s) for s in (signal.SIGRTMIN, signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    try:
        ImminentShutdown(1).install()
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGRTMIN)
        with pytest.raises(ShutDownImminentException):
            time.sleep(3)
        ImminentShutdown(0).install()
        with pytest.raises(ShutDownImminentException):
            os.kill(os.getpid(), signal.SIGRTMIN)
            time.sleep(1)
    finally:
        signal.alarm(0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def test_round_robin_worker_takes_one_job_per_queue_in_turn(connection: redis.Redis) -> None:
    from rqfast.worker import RoundRobinWorker

    queues = [rqfast.Queue(f'q{i}', connection=connection) for i in range(3)]
    for i, queue in enumerate(queues):
        for j in range(2):
            queue.enqueue(jobs.add, i, j, job_id=f'q{i}_{j}')
    RoundRobinWorker(queues, connection=connection).work(burst=True)
    started = sorted((rqfast.Job.fetch(f'q{i}_{j}', connection=connection).started_at, f'q{i}_{j}')
                     for i in range(3) for j in range(2))  # fmt: skip
    assert [name for _, name in started] == ['q0_0', 'q1_0', 'q2_0', 'q0_1', 'q1_1', 'q2_1']


def test_signal_names() -> None:
    from rqfast.worker import SHUTDOWN_SIGNAL, signal_name

    assert signal_name(signal.SIGTERM) == 'SIGTERM' and signal_name(10_000) == 'SIG_UNKNOWN'
    assert SHUTDOWN_SIGNAL == rq.worker.SHUTDOWN_SIGNAL


# --- cli.helpers


def test_get_redis_from_config_reads_rqs_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from rqfast.cli import helpers

    client = helpers.get_redis_from_config({'REDIS_URL': 'redis://localhost:1/1', 'REDIS_DB': 2})
    assert (client.connection_pool.connection_kwargs['port'], client.connection_pool.connection_kwargs['db']) == (1, 1)
    client = helpers.get_redis_from_config({'REDIS_HOST': 'foo', 'REDIS_PORT': 2, 'REDIS_PASSWORD': 'bar'})
    assert client.connection_pool.connection_kwargs['host'] == 'foo'
    made: list[Any] = []

    class FakeSentinel:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append((args, kwargs))

        def master_for(self, name: str, redis_class: Any) -> str:
            return name

    monkeypatch.setattr(helpers, 'Sentinel', FakeSentinel)
    assert helpers.get_redis_from_config({'SENTINEL': {'INSTANCES': [('h', 1)], 'MASTER_NAME': 'm'}}) == 'm'
    assert made[0][0] == ([('h', 1)],)


def test_enqueue_argument_syntax_is_rqs(tmp_path: Any) -> None:
    from rq.cli.helpers import parse_function_arg as theirs

    from rqfast.cli.helpers import parse_function_arg as ours
    from rqfast.cli.helpers import parse_schedule

    data = tmp_path / 'data.json'
    data.write_text('{"test": true}')
    for i, argument in enumerate(['abc', ':{"json": true}', '%1, 2', 'key=value', 'k:=["j"]', 'e%=1.2', f':@{data}']):
        assert ours(argument, i) == theirs(argument, i)
    assert parse_schedule(None, '2000-01-23T23:45:01') == datetime(2000, 1, 23, 23, 45, 1)
    assert parse_schedule(None, None) is None


@pytest.mark.parametrize('timeout', [None, 1, -1, 500])
def test_worker_prepare_execution_records_what_rqs_worker_records(redis_conn: redis.Redis, timeout: Any) -> None:
    job = rqfast.Queue('surface', connection=redis_conn).enqueue(jobs.add, 1, 2, job_timeout=timeout)
    ours = rqfast.Worker(['surface'], name='ours', connection=redis_conn)
    theirs = rq.Worker(['surface'], name='theirs', connection=redis_conn)
    rq_job = rq.job.Job.fetch(job.id, connection=redis_conn)
    assert ours.get_heartbeat_ttl(job) == theirs.get_heartbeat_ttl(rq_job)
    execution = ours.prepare_execution(job)
    assert ours.execution is execution and redis_conn.hget(ours.key, 'state') == b'busy'
    rq_execution = theirs.prepare_execution(rq_job)
    assert redis_conn.ttl(execution.key) == redis_conn.ttl(rq_execution.key)
    scores = {m.decode().split(':')[1]: s for m, s in redis_conn.zrange('rq:wip:surface', 0, -1, withscores=True)}
    assert abs(scores[execution.id] - scores[rq_execution.id]) <= 1
    assert {e.id for e in job.get_executions()} == {execution.id, rq_execution.id}
