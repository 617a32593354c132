"""RQ's public Worker API on rqfast's worker classes: dir() of RQ 2.12's (installed) and RQ 3.0's
(recorded below) Worker, SimpleWorker and SpawnWorker, public names only, against rqfast's.

A name rqfast leaves out is in LEFT_OUT with the reason; tests/test_surface.py does the same for modules.
RQ_3_0_NAMES was made once from /tmp/rq-3.0.0 (rq 3.0.0's source) with PYTHONPATH=/tmp/rq-3.0.0 and:
    import rq.worker as w
    {n: sorted(a for a in dir(getattr(w, n)) if not a.startswith('_')) for n in CLASSES}
"""

from __future__ import annotations

import inspect
from datetime import timedelta
from typing import Any

import pytest
import redis
import rq.worker

import rqfast.exceptions
import rqfast.worker
from rqfast import Queue, SimpleWorker, Worker
from rqfast.executions import Execution

CLASSES = ('Worker', 'SimpleWorker', 'SpawnWorker')

_HORSE = "rqfast's horses are forked ahead by the breeder and report over a pipe (pool.py, watching.py): no such step"
LEFT_OUT = {
    'fork_work_horse': _HORSE + " (SpawnWorker has RQ 3.0's: a child spawned for the job in hand)",
    'main_work_horse': _HORSE,
    'monitor_work_horse': _HORSE + " (the worker watches its horse in watching.py; SpawnWorker has RQ 3.0's)",
}

RQ_3_0_NAMES: dict[str, list[str]] = {
    'Worker': [
        'all',
        'all_keys',
        'bootstrap',
        'check_for_suspension',
        'clean_group_registries',
        'clean_registries',
        'cleanup_execution',
        'connection_timeout',
        'count',
        'current_execution_count',
        'death_date',
        'death_penalty_class',
        'dequeue_job_and_maintain_ttl',
        'dequeue_timeout',
        'execute_job',
        'execution',
        'executions_key',
        'exponential_backoff_factor',
        'find_by_key',
        'fork_work_horse',
        'get_current_executions',
        'get_current_job',
        'get_current_job_id',
        'get_heartbeat_ttl',
        'get_redis_server_version',
        'get_state',
        'handle_exception',
        'handle_execution_ended',
        'handle_job_failure',
        'handle_job_retry',
        'handle_job_success',
        'handle_payload',
        'handle_warm_shutdown_request',
        'handle_work_horse_killed',
        'heartbeat',
        'horse_pid',
        'increment_failed_job_count',
        'increment_successful_job_count',
        'increment_total_working_time',
        'is_horse',
        'job_class',
        'key',
        'kill_horse',
        'log_job_description',
        'log_result_lifespan',
        'main_work_horse',
        'maintain_heartbeats',
        'max_connection_wait_time',
        'monitor_work_horse',
        'perform_job',
        'pop_exc_handler',
        'prepare_execution',
        'prepare_job_execution',
        'procline',
        'pubsub_channel_name',
        'push_exc_handler',
        'queue_class',
        'queue_keys',
        'queue_names',
        'redis_worker_namespace_prefix',
        'redis_workers_keys',
        'refresh',
        'register_birth',
        'register_death',
        'reorder_queues',
        'request_force_stop',
        'request_stop',
        'request_stop_execution',
        'run_maintenance_tasks',
        'serialize',
        'set_shutdown_requested_date',
        'set_state',
        'setup_work_horse_signals',
        'should_run_maintenance_tasks',
        'shutdown_requested_date',
        'state',
        'stop_scheduler',
        'subscribe',
        'teardown',
        'unsubscribe',
        'validate_queues',
        'wait_for_horse',
        'work',
    ],
    'SimpleWorker': [
        'all',
        'all_keys',
        'bootstrap',
        'check_for_suspension',
        'clean_group_registries',
        'clean_registries',
        'cleanup_execution',
        'connection_timeout',
        'count',
        'current_execution_count',
        'death_date',
        'death_penalty_class',
        'dequeue_job_and_maintain_ttl',
        'dequeue_timeout',
        'execute_job',
        'execution',
        'executions_key',
        'exponential_backoff_factor',
        'find_by_key',
        'get_current_executions',
        'get_current_job',
        'get_current_job_id',
        'get_heartbeat_ttl',
        'get_redis_server_version',
        'get_state',
        'handle_exception',
        'handle_execution_ended',
        'handle_job_failure',
        'handle_job_retry',
        'handle_job_success',
        'handle_payload',
        'handle_warm_shutdown_request',
        'handle_work_horse_killed',
        'heartbeat',
        'horse_pid',
        'increment_failed_job_count',
        'increment_successful_job_count',
        'increment_total_working_time',
        'is_horse',
        'job_class',
        'key',
        'kill_horse',
        'log_job_description',
        'log_result_lifespan',
        'main_work_horse',
        'maintain_heartbeats',
        'max_connection_wait_time',
        'perform_job',
        'pop_exc_handler',
        'prepare_execution',
        'prepare_job_execution',
        'procline',
        'pubsub_channel_name',
        'push_exc_handler',
        'queue_class',
        'queue_keys',
        'queue_names',
        'redis_worker_namespace_prefix',
        'redis_workers_keys',
        'refresh',
        'register_birth',
        'register_death',
        'reorder_queues',
        'request_force_stop',
        'request_stop',
        'request_stop_execution',
        'run_maintenance_tasks',
        'serialize',
        'set_shutdown_requested_date',
        'set_state',
        'setup_work_horse_signals',
        'should_run_maintenance_tasks',
        'shutdown_requested_date',
        'state',
        'stop_scheduler',
        'subscribe',
        'teardown',
        'unsubscribe',
        'validate_queues',
        'wait_for_horse',
        'work',
    ],
    'SpawnWorker': [
        'all',
        'all_keys',
        'bootstrap',
        'check_for_suspension',
        'clean_group_registries',
        'clean_registries',
        'cleanup_execution',
        'connection_timeout',
        'count',
        'current_execution_count',
        'death_date',
        'death_penalty_class',
        'dequeue_job_and_maintain_ttl',
        'dequeue_timeout',
        'execute_job',
        'execution',
        'executions_key',
        'exponential_backoff_factor',
        'find_by_key',
        'fork_work_horse',
        'get_current_executions',
        'get_current_job',
        'get_current_job_id',
        'get_heartbeat_ttl',
        'get_redis_server_version',
        'get_state',
        'handle_exception',
        'handle_execution_ended',
        'handle_job_failure',
        'handle_job_retry',
        'handle_job_success',
        'handle_payload',
        'handle_warm_shutdown_request',
        'handle_work_horse_killed',
        'heartbeat',
        'horse_pid',
        'increment_failed_job_count',
        'increment_successful_job_count',
        'increment_total_working_time',
        'is_horse',
        'job_class',
        'key',
        'kill_horse',
        'log_job_description',
        'log_result_lifespan',
        'main_work_horse',
        'maintain_heartbeats',
        'max_connection_wait_time',
        'monitor_work_horse',
        'perform_job',
        'pop_exc_handler',
        'prepare_execution',
        'prepare_job_execution',
        'procline',
        'pubsub_channel_name',
        'push_exc_handler',
        'queue_class',
        'queue_keys',
        'queue_names',
        'redis_worker_namespace_prefix',
        'redis_workers_keys',
        'refresh',
        'register_birth',
        'register_death',
        'reorder_queues',
        'request_force_stop',
        'request_stop',
        'request_stop_execution',
        'run_maintenance_tasks',
        'serialize',
        'set_shutdown_requested_date',
        'set_state',
        'setup_work_horse_signals',
        'should_run_maintenance_tasks',
        'shutdown_requested_date',
        'state',
        'stop_scheduler',
        'subscribe',
        'teardown',
        'unsubscribe',
        'validate_queues',
        'wait_for_horse',
        'work',
    ],
}


def public(klass: type) -> set[str]:
    return {name for name in dir(klass) if not name.startswith('_')}


@pytest.mark.parametrize('name', CLASSES)
def test_rqs_public_worker_names_are_all_on_rqfasts_worker(name: str) -> None:
    mine = public(getattr(rqfast.worker, name))
    for version, theirs in (('2.12', public(getattr(rq.worker, name))), ('3.0', set(RQ_3_0_NAMES[name]))):
        missing = sorted(theirs - mine - set(LEFT_OUT))
        assert missing == [], f'rq {version} {name} has {missing}, rqfast does not (add them, or say why in LEFT_OUT)'


def test_every_name_left_out_is_still_rqs_and_has_a_reason() -> None:
    rqs = set().union(*(public(getattr(rq.worker, n)) | set(RQ_3_0_NAMES[n]) for n in CLASSES))
    in_every_class = set.intersection(*(public(getattr(rqfast.worker, n)) for n in CLASSES))
    for name, reason in LEFT_OUT.items():
        assert name in rqs and name not in in_every_class and reason.strip()


# --- what the added names do


def test_rq_3_executions_api_while_a_job_is_in_hand(redis_conn: redis.Redis) -> None:
    queue = Queue('api', connection=redis_conn)
    job = queue.enqueue('builtins.len', 'abc')
    worker = SimpleWorker([queue], connection=redis_conn)
    worker.register_birth()
    assert worker.current_execution_count == 0 and worker.executions == {}
    claimed = worker.dequeue_job_and_maintain_ttl(None)
    assert claimed is not None and claimed[0].id == job.id

    (execution,) = worker.get_current_executions()
    assert isinstance(execution, Execution) and execution.job_id == job.id and execution.worker_name == worker.name
    assert worker.current_execution_count == 1
    assert list(worker.executions) == [execution.id] and worker.executions[execution.id].job_id == job.id
    assert redis_conn.sismember(worker.executions_key, f'{job.id}:{execution.id}')

    worker.maintain_heartbeats(job, execution)
    assert worker.heartbeat(timeout=77) is False
    assert 70 < redis_conn.ttl(worker.key) <= 77 and 70 < redis_conn.ttl(worker.executions_key) <= 77
    with redis_conn.pipeline() as pipeline:
        worker.heartbeat(pipeline=pipeline)
        pipeline.execute()
    assert redis_conn.ttl(worker.key) > 77

    assert worker.perform_job(job, queue)
    assert worker.current_execution_count == 0 and worker.get_current_executions(refresh=True) == []
    assert job.latest_result().execution_id == execution.id
    worker.register_death()


def test_worker_hash_helpers_and_loop_steps(redis_conn: redis.Redis) -> None:
    queue = Queue('api2', connection=redis_conn)
    worker = Worker([queue], connection=redis_conn)
    worker.register_birth()
    worker.increment_successful_job_count()
    worker.increment_failed_job_count()
    with redis_conn.pipeline() as pipeline:
        worker.increment_total_working_time(timedelta(seconds=1.5), pipeline)
        pipeline.execute()
    worker.set_current_job_working_time(3.0)
    worker._shutdown_requested_date = None
    worker.set_shutdown_requested_date()
    worker.refresh()
    assert (worker.successful_job_count, worker.failed_job_count, worker.total_working_time) == (1, 1, 1.5)
    assert worker.shutdown_requested_date is not None
    assert set(worker.serialize()) == set(RQ_SERIALIZED) and worker.serialize()['queues'] == 'api2'
    assert worker.get_redis_server_version() >= (5,)
    worker.procline('testing')  # sets the process title when setproctitle is installed
    worker.validate_queues()
    assert worker.horse_pid == 0 and worker.wait_for_horse() == (None, None, None)
    worker.clean_group_registries()

    redis_conn.set('rq:suspended', 1)
    try:
        with pytest.raises(rqfast.exceptions.StopRequested):
            worker.check_for_suspension(burst=True)
    finally:
        redis_conn.delete('rq:suspended')
    worker.check_for_suspension(burst=False)  # not suspended: returns at once
    worker.request_stop_execution('no-such-execution')  # logged and ignored, as in RQ
    worker.register_death()


RQ_SERIALIZED = ('birth', 'last_heartbeat', 'queues', 'pid', 'hostname', 'ip_address', 'version', 'python_version')


@pytest.mark.parametrize(
    ('method', 'call'),
    [
        ('heartbeat', {'timeout': 1, 'pipeline': None}),
        ('get_heartbeat_ttl', {'job': None, 'working_time': 1.0}),
        ('maintain_heartbeats', {'job': None, 'execution': None}),
        ('perform_job', {'job': None, 'queue': None, 'execution': None}),
        ('handle_job_success', {'job': None, 'queue': None, 'started_job_registry': None, 'execution': None}),
        (
            'handle_job_retry',
            {'job': None, 'queue': None, 'retry': None, 'started_job_registry': None, 'execution': None},
        ),
    ],
)
def test_rq_3_signatures(method: str, call: dict[str, Any]) -> None:
    inspect.signature(getattr(SimpleWorker, method)).bind(None, **call)
