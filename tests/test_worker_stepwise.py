"""RQ's worker API beyond work(): the hand-driven steps (prepare_execution, prepare_job_execution,
maintain_heartbeats, cleanup_execution), the worker hash's setters and readers, the command thread, and
what a worker takes and sets up when it is made. RQ is the oracle for what the steps write."""

from __future__ import annotations

import importlib
import json
import time
import warnings
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
import redis

import rqfast
from rqfast.dates import now
from rqfast.defaults import DEFAULT_WORKER_TTL
from rqfast.job import UNEVALUATED, Job
from rqfast.serializers import JSONSerializer
from rqfast.status import JobStatus
from rqfast.worker import SimpleWorker, SpawnWorker, Worker

try:
    import jobs
    from snapshot import (
        REFERENCE,
        UNDER_TEST,
        assert_same,
        following_reference,
        id_map_for,
        implementation,
        normalize,
        snapshot,
    )
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import (  # type: ignore[no-redef]
        REFERENCE,
        UNDER_TEST,
        assert_same,
        following_reference,
        id_map_for,
        implementation,
        normalize,
        snapshot,
    )

pytestmark = pytest.mark.timeout(60)


# --- the hand-driven steps write what RQ's write


def _steps(impl: Any, conn: redis.Redis, then: str) -> list[Any]:
    worker_class = importlib.import_module(f'{impl.name}.worker').Worker
    queue = impl.Queue('q', connection=conn)
    job = queue.enqueue(jobs.add, 1, 2)
    worker = worker_class([queue], name='w1', connection=conn)
    worker.prepare_execution(job)
    worker.prepare_job_execution(job)
    worker.maintain_heartbeats(job)
    if then == 'cleanup':
        with conn.pipeline() as pipeline:
            worker.cleanup_execution(job, pipeline=pipeline)
            pipeline.execute()
    elif then == 'perform':
        assert worker.perform_job(job, queue)
        assert worker.execution is None
        conn.delete(worker.key)  # the worker hashes differ (rqfast counts the job there), not the job's keys
    return [job]


@pytest.mark.parametrize('then', ['nothing', 'cleanup', 'perform'])
def test_the_hand_driven_steps_write_what_rqs_write(redis_conn: redis.Redis, then: str) -> None:
    dumps = {}
    for name in (REFERENCE, UNDER_TEST):
        redis_conn.flushdb()
        with following_reference():  # rqfast as the installed RQ (2.12: no job_id in the execution hash)
            ids = _steps(implementation(name), redis_conn, then)
        dumps[name] = normalize(snapshot(redis_conn), id_map_for(*ids))
    redis_conn.flushdb()
    assert_same(dumps[REFERENCE], dumps[UNDER_TEST])


def test_prepare_job_execution_marks_the_job_started_and_can_take_it_from_the_intermediate_list(
    connection: redis.Redis,
) -> None:
    queue = rqfast.Queue('q', connection=connection)
    job = queue.enqueue(jobs.add, 1, 2)
    connection.lmove(queue.key, queue.intermediate_queue_key, 'LEFT', 'RIGHT')
    worker = Worker([queue], name='w1', connection=connection)
    execution = worker.prepare_execution(job)
    worker.prepare_job_execution(job, remove_from_intermediate_queue=True)
    assert connection.lrange(queue.intermediate_queue_key, 0, -1) == []
    assert job.get_status(refresh=False) == JobStatus.STARTED and job.worker_name == 'w1'
    assert Job.fetch(job.id, connection=connection).get_status() == JobStatus.STARTED
    assert worker.get_current_job_id() == job.id and worker.get_current_job() == job
    assert (job.id, execution.id) in queue.started_job_registry.get_job_and_execution_ids()
    with connection.pipeline() as pipeline:
        worker.cleanup_execution(job, pipeline=pipeline)
        pipeline.execute()
    assert worker.get_current_job_id() is None and worker.execution is None
    assert queue.started_job_registry.get_job_and_execution_ids() == []


def test_maintain_heartbeats_does_not_bring_a_deleted_job_back(connection: redis.Redis) -> None:
    queue = rqfast.Queue('q', connection=connection)
    job = queue.enqueue(jobs.add, 1, 2)
    worker = Worker([queue], connection=connection)
    worker.prepare_execution(job)
    worker.prepare_job_execution(job)
    worker.maintain_heartbeats(job)
    assert connection.exists(worker.key) and connection.exists(job.key)
    connection.delete(job.key)
    worker.maintain_heartbeats(job)
    assert not connection.exists(job.key)


# --- the worker hash


def test_current_job_death_date_and_the_job_id_read_back(connection: redis.Redis) -> None:
    queue = rqfast.Queue('q', connection=connection)
    job = queue.enqueue(jobs.add, 1, 2)
    worker = Worker([queue], connection=connection)
    assert worker.get_current_job() is None
    worker.register_birth()
    worker.set_current_job_id(job.id)
    assert connection.hget(worker.key, 'current_job') == job.id.encode()
    assert worker.get_current_job() == job
    assert Worker.find_by_key(worker.key, connection=connection)._job_id == job.id
    worker.set_current_job_id(None)
    assert worker.get_current_job_id() is None
    assert Worker.find_by_key(worker.key, connection=connection)._job_id is None
    assert worker.death_date is None
    worker.register_death()
    assert worker.death_date is not None and abs((now() - worker.death_date).total_seconds()) < 5


def test_find_by_key_does_not_rename_the_callers_connection(redis_conn: redis.Redis) -> None:
    worker = Worker(['q'], name='seen', connection=redis_conn)
    worker.register_birth()
    reader = redis.Redis(connection_pool=redis.ConnectionPool(**redis_conn.connection_pool.connection_kwargs))
    reader.client_setname('reader')
    Worker.find_by_key(worker.key, connection=reader)
    assert reader.client_getname() == 'reader'


def test_should_run_maintenance_tasks_follows_the_interval(fake_conn: redis.Redis) -> None:
    worker = Worker(['q'], connection=fake_conn, maintenance_interval=10)
    assert worker.should_run_maintenance_tasks
    worker.last_cleaned_at = now()
    assert not worker.should_run_maintenance_tasks
    worker.last_cleaned_at = now() - timedelta(seconds=11)
    assert worker.should_run_maintenance_tasks
    worker.clean_registries()
    assert not worker.should_run_maintenance_tasks


# --- what a worker takes and sets up when it is made


def test_one_exception_handler_not_in_a_list(fake_conn: redis.Redis) -> None:
    def handler(job: Any, *exc_info: Any) -> bool:
        job.meta['handled'] = True
        job.save_meta()
        return True

    queue = rqfast.Queue('q', connection=fake_conn)
    job = queue.enqueue(jobs.div_by_zero)
    SimpleWorker([queue], connection=fake_conn, exception_handlers=handler).work(burst=True)
    job.refresh()
    assert job.is_failed and job.meta['handled'] is True


def test_a_worker_without_queues_can_register_but_not_work(fake_conn: redis.Redis) -> None:
    worker = SimpleWorker([], connection=fake_conn)
    worker.register_birth()
    assert fake_conn.exists(worker.key)
    with pytest.raises(ValueError, match='at least one queue'):
        worker.work(burst=True)
    with pytest.raises(ValueError):
        SimpleWorker([])


def test_default_worker_ttl_is_deprecated(fake_conn: redis.Redis) -> None:
    assert Worker(['q'], connection=fake_conn).worker_ttl == DEFAULT_WORKER_TTL
    with pytest.warns(DeprecationWarning, match='default_worker_ttl'):
        assert Worker(['q'], connection=fake_conn, default_worker_ttl=10).worker_ttl == 10
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert Worker(['q'], connection=fake_conn, worker_ttl=20).worker_ttl == 20


def test_the_connection_gets_rqs_socket_timeout_unless_it_has_a_longer_one() -> None:
    conn = redis.Redis(socket_timeout=5)
    Worker(['q'], connection=conn, prepare_for_work=False)
    assert conn.connection_pool.connection_kwargs['socket_timeout'] == 415
    Worker(['q'], connection=conn, worker_ttl=500, prepare_for_work=False)
    assert conn.connection_pool.connection_kwargs['socket_timeout'] == 495
    patient = redis.Redis(socket_timeout=1000)
    Worker(['q'], connection=patient, prepare_for_work=False)
    assert patient.connection_pool.connection_kwargs['socket_timeout'] == 1000


def test_the_ip_address_is_read_when_the_worker_is_made(redis_conn: redis.Redis) -> None:
    worker = Worker(['q'], connection=redis_conn)
    assert worker.ip_address not in ('', 'unknown')
    assert Worker(['q'], connection=redis_conn, prepare_for_work=False).ip_address == 'unknown'


@pytest.mark.parametrize('missing', ['client_setname', 'client_list'])
def test_a_server_without_client_commands_gives_an_unknown_ip_with_rqs_warning(
    fake_conn: redis.Redis, missing: str
) -> None:
    command = 'SETNAME' if missing == 'client_setname' else 'LIST'
    unknown = redis.ResponseError('unknown command')
    # without CLIENT LIST, the server has no CLIENT INFO either (Redis 6.2 added it)
    with (
        mock.patch.object(fake_conn, missing, side_effect=unknown),
        mock.patch.object(fake_conn, 'client_info', side_effect=unknown),
    ):
        with pytest.warns(Warning, match=f'CLIENT {command} command not supported'):
            worker = Worker(['q'], connection=fake_conn)
    assert worker.ip_address == 'unknown'


def test_serializer_arg_names_the_serializer(fake_conn: redis.Redis) -> None:
    assert SpawnWorker(['q'], connection=fake_conn)._serializer_arg is None
    assert SpawnWorker(['q'], connection=fake_conn, serializer='json')._serializer_arg == 'json'
    named = SpawnWorker(['q'], connection=fake_conn, serializer=JSONSerializer)._serializer_arg
    assert named == 'rqfast.serializers.JSONSerializer'
    assert SpawnWorker(['q'], connection=fake_conn, serializer=json)._serializer_arg == 'json'


# --- the command thread


def test_the_command_thread_survives_a_lost_connection(redis_conn: redis.Redis) -> None:
    worker = Worker('foo', connection=redis_conn)
    worker.subscribe()
    try:
        assert worker.pubsub_thread is not None and worker.pubsub_thread.is_alive()
        assert worker.pubsub is not None
        for client in redis_conn.client_list():
            try:
                redis_conn.client_kill(client['addr'])
            except (redis.ResponseError, redis.ConnectionError):  # (gone already; or this very connection)
                pass
        time.sleep(0.2)
        assert worker.pubsub_thread.is_alive()
    finally:
        worker.unsubscribe()


def test_the_command_thread_ends_on_another_error_reading_the_channel(redis_conn: redis.Redis) -> None:
    worker = Worker('foo', connection=redis_conn)
    with mock.patch('redis.client.PubSub.get_message', side_effect=ValueError('broken')):
        worker.subscribe()
        thread = worker.pubsub_thread
        assert thread is not None
        thread.join(timeout=10)
    assert not thread.is_alive()
    worker.unsubscribe()


def test_a_command_that_fails_to_run_does_not_end_the_command_thread(redis_conn: redis.Redis) -> None:
    worker = Worker('foo', connection=redis_conn)
    with mock.patch.object(Worker, 'handle_payload', side_effect=RuntimeError('bad command')) as handled:
        worker.subscribe()
        try:
            time.sleep(0.2)  # subscribed
            redis_conn.publish(worker.pubsub_channel_name, json.dumps({'command': 'shutdown'}))
            deadline = time.monotonic() + 10
            while not handled.called and time.monotonic() < deadline:
                time.sleep(0.05)
            assert handled.called
            assert worker.pubsub_thread is not None and worker.pubsub_thread.is_alive()
        finally:
            worker.unsubscribe()


# --- a job's callbacks, imported once


@pytest.mark.parametrize('kind', ['success', 'failure', 'stopped'])
def test_a_callback_is_imported_on_first_use_and_kept(fake_conn: redis.Redis, kind: str) -> None:
    bare = Job.create(jobs.add, args=(1, 2), connection=fake_conn)
    assert getattr(bare, f'_{kind}_callback') is UNEVALUATED
    assert getattr(bare, f'{kind}_callback') is None
    job = Job.create(jobs.add, args=(1, 2), connection=fake_conn, **{f'on_{kind}': rqfast.Callback('print')})
    assert getattr(job, f'_{kind}_callback') is UNEVALUATED
    assert getattr(job, f'{kind}_callback') is print
    assert getattr(job, f'_{kind}_callback') is print
    job.save()
    assert getattr(Job.fetch(job.id, connection=fake_conn), f'{kind}_callback') is print


class _Recording(Job):
    calls: list[str] = []

    def execute_success_callback(self, death_penalty_class: Any, result: Any) -> None:
        _Recording.calls.append(f'success {result}')
        super().execute_success_callback(death_penalty_class, result)

    def execute_failure_callback(self, death_penalty_class: Any, *exc_info: Any) -> None:
        _Recording.calls.append(f'failure {exc_info[0].__name__}')
        super().execute_failure_callback(death_penalty_class, *exc_info)


def test_the_worker_runs_callbacks_through_the_jobs_execute_callback_methods(fake_conn: redis.Redis) -> None:
    _Recording.calls = []
    queue = rqfast.Queue('q', connection=fake_conn, job_class=_Recording)
    queue.enqueue(jobs.add, 1, 2)
    queue.enqueue(jobs.div_by_zero)
    SimpleWorker([queue], connection=fake_conn, job_class=_Recording).work(burst=True)
    assert _Recording.calls == ['success 3', 'failure ZeroDivisionError']
