"""The producer-side API, RQ's contract, on the real server and on fakeredis.

Bad input must raise before anything reaches Redis: each of those tests checks that the db is as it
was (DBSIZE, or the keys concerned).
"""

from __future__ import annotations

import importlib
import pickle
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis

try:
    import jobs
    from snapshot import UNDER_TEST, implementation, snapshot
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import UNDER_TEST, implementation, snapshot  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

UUID4_RE = re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}')


@pytest.fixture(scope='module')
def impl() -> Any:
    return implementation(UNDER_TEST)


@pytest.fixture
def queue(impl: Any, connection: redis.Redis) -> Any:
    return impl.Queue('q', connection=connection)


@pytest.fixture
def sync_queue(impl: Any, connection: redis.Redis) -> Any:
    return impl.Queue('q', connection=connection, is_async=False)


# ---------------------------------------------------------------------------------------------------
# Public names: `from rq import X` -> `from rqfast import X`

PUBLIC_NAMES = {
    '': ['Queue', 'Retry', 'Callback', 'Repeat', 'get_current_job', 'cancel_job', 'requeue_job'],
    '.job': ['Job', 'JobStatus', 'Retry', 'Callback', 'Dependency', 'get_current_job', 'cancel_job', 'requeue_job'],
    '.queue': ['Queue'],
    '.registry': [
        'StartedJobRegistry',
        'FinishedJobRegistry',
        'FailedJobRegistry',
        'DeferredJobRegistry',
        'ScheduledJobRegistry',
        'CanceledJobRegistry',
    ],
    '.results': ['Result'],
    '.serializers': ['DefaultSerializer', 'JSONSerializer', 'resolve_serializer'],
    '.exceptions': [
        'NoSuchJobError',
        'DuplicateJobError',
        'InvalidJobOperation',
        'TimeoutFormatError',
        'DeserializationError',
        'InvalidJobDependency',
        'AbandonedJobError',
    ],
    '.decorators': ['job'],
}


@pytest.mark.parametrize('module', sorted(PUBLIC_NAMES))
def test_public_names(module: str) -> None:
    imported = importlib.import_module(f'{UNDER_TEST}{module}')
    missing = [name for name in PUBLIC_NAMES[module] if not hasattr(imported, name)]
    assert not missing, f'{UNDER_TEST}{module} lacks {missing}'


def test_serializer_aliases(impl: Any) -> None:
    resolve = impl.serializers.resolve_serializer
    assert resolve('json').loads(resolve('json').dumps({'a': [1]})) == {'a': [1]}
    assert resolve('json').dumps([1, 'a']) == b'[1, "a"]'
    call = ('f', None, (1,), {})
    assert resolve('pickle').dumps(call) == pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)
    assert resolve(None).dumps(call) == pickle.dumps(call, protocol=pickle.HIGHEST_PROTOCOL)


# ---------------------------------------------------------------------------------------------------
# Job: enqueue, fetch, exists, refresh, save


def test_enqueue_returns_a_queued_job(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.add, 2, 3)
    assert UUID4_RE.fullmatch(job.id)
    assert job.origin == 'q'
    assert job.func_name == f'{jobs.__name__}.add'
    assert job.args == (2, 3) and job.kwargs == {}
    assert job.description == f'{jobs.__name__}.add(2, 3)'
    assert job.timeout == 180
    assert job.enqueued_at is not None and job.enqueued_at.tzinfo is not None
    assert job.get_status() == impl.JobStatus.QUEUED == 'queued'
    assert job.is_queued
    assert not (job.is_finished or job.is_failed or job.is_started or job.is_deferred)
    assert not (job.is_canceled or job.is_scheduled or job.is_stopped)
    assert impl.Job.exists(job.id, connection=connection)
    assert connection.exists(f'rq:job:{job.id}')
    assert connection.sismember('rq:queues', 'rq:queue:q')


def test_fetch_returns_what_was_enqueued(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(
        jobs.echo, 1, 'a', k={'n': [1]}, job_timeout='2m', result_ttl=11, failure_ttl=22, ttl=33, meta={'x': 1}
    )
    fetched = impl.Job.fetch(job.id, connection=connection)
    assert fetched == job
    assert fetched.func is jobs.echo
    assert fetched.args == (1, 'a')
    assert fetched.kwargs == {'k': {'n': [1]}}
    assert (fetched.timeout, fetched.result_ttl, fetched.failure_ttl, fetched.ttl) == (120, 11, 22, 33)
    assert fetched.meta == {'x': 1}
    assert fetched.origin == 'q'
    assert fetched.get_status(refresh=False) == 'queued'
    assert abs((fetched.created_at - job.created_at).total_seconds()) < 0.001
    assert 0 < connection.ttl(job.key) <= 33


def test_fetch_instance_method_and_callable(impl: Any, queue: Any, connection: redis.Redis) -> None:
    method_job = queue.enqueue(jobs.Number(6).div, 3)
    callable_job = queue.enqueue(jobs.callable_adder, 1, b=2)
    builtin_job = queue.enqueue(len, [1, 2])
    string_job = queue.enqueue(f'{jobs.__name__}.say_hello', 'Ann')
    method = impl.Job.fetch(method_job.id, connection=connection)
    assert (method.func_name, method.instance) == ('div', jobs.Number(6))
    assert method.func(*method.args) == 2
    adder = impl.Job.fetch(callable_job.id, connection=connection)
    assert (adder.func_name, adder.instance) == ('__call__', jobs.callable_adder)
    assert impl.Job.fetch(builtin_job.id, connection=connection).func_name == 'builtins.len'
    assert impl.Job.fetch(string_job.id, connection=connection).func is jobs.say_hello


def test_fetch_missing_job(impl: Any, queue: Any, connection: redis.Redis) -> None:
    with pytest.raises(impl.exceptions.NoSuchJobError):
        impl.Job.fetch('no-such-job', connection=connection)
    assert not impl.Job.exists('no-such-job', connection=connection)
    assert queue.fetch_job('no-such-job') is None
    assert connection.dbsize() == 0


def test_fetch_many(impl: Any, queue: Any, connection: redis.Redis) -> None:
    a = queue.enqueue(jobs.add, 1, 2)
    b = queue.enqueue(jobs.say_hello)
    fetched = impl.Job.fetch_many([a.id, 'missing', b.id], connection=connection)
    assert fetched[0] == a and fetched[1] is None and fetched[2] == b
    assert fetched[2].func is jobs.say_hello


def test_refresh_sees_changes_made_elsewhere(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.add, 1, 2)
    other = impl.Job.fetch(job.id, connection=connection)
    other.meta['seen'] = True
    other.save_meta()
    assert job.meta == {}
    job.refresh()
    assert job.meta == {'seen': True}
    assert job.get_meta(refresh=True) == {'seen': True}


def test_save_meta_writes_only_meta(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.add, 1, 2)
    before = connection.hgetall(job.key)
    job.description = 'not saved'
    job.meta['progress'] = 10
    job.save_meta()
    after = connection.hgetall(job.key)
    assert after.pop(b'meta')
    assert after == before
    assert impl.Job.fetch(job.id, connection=connection).meta == {'progress': 10}


def test_save_writes_the_hash(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.add, 1, 2)
    job.description = 'renamed'
    job.meta = {'k': 'v'}
    job.save()
    fetched = impl.Job.fetch(job.id, connection=connection)
    assert fetched.description == 'renamed'
    assert fetched.meta == {'k': 'v'}
    assert fetched.get_status() == 'queued'


def test_job_create_then_enqueue_job(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = impl.Job.create(jobs.add, args=(1, 2), connection=connection, id='created-1')
    assert job.get_status(refresh=False) == 'created'
    assert connection.dbsize() == 0
    queue.enqueue_job(job)
    assert job.get_status() == 'queued'
    assert queue.job_ids == ['created-1']
    assert impl.Job.fetch('created-1', connection=connection).origin == 'q'


def test_custom_job_id(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.add, 1, 2, job_id='my_job-1')
    assert job.id == 'my_job-1'
    assert connection.exists('rq:job:my_job-1')
    assert queue.job_ids == ['my_job-1']


def test_enqueue_with_ttl_expires_the_hash(queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.add, 1, 2, ttl=30)
    assert 0 < connection.ttl(job.key) <= 30
    untimed = queue.enqueue(jobs.add, 1, 2)
    assert connection.ttl(untimed.key) == -1


# ---------------------------------------------------------------------------------------------------
# Status changes: delete, cancel, requeue


def test_delete(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.add, 1, 2)
    keep = queue.enqueue(jobs.add, 3, 4)
    job.delete()
    assert not impl.Job.exists(job.id, connection=connection)
    assert queue.job_ids == [keep.id]
    with pytest.raises(impl.exceptions.NoSuchJobError):
        impl.Job.fetch(job.id, connection=connection)


def test_delete_with_dependents(impl: Any, queue: Any, connection: redis.Redis) -> None:
    parent = queue.enqueue(jobs.add, 1, 2)
    child = queue.enqueue(jobs.add, 3, 4, depends_on=parent)
    parent.delete(delete_dependents=True)
    assert not impl.Job.exists(parent.id, connection=connection)
    assert not impl.Job.exists(child.id, connection=connection)
    assert not connection.exists(f'rq:job:{parent.id}:dependents')
    assert queue.deferred_job_registry.get_job_ids() == []


def test_cancel(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.add, 1, 2)
    keep = queue.enqueue(jobs.add, 3, 4)
    job.cancel()
    assert job.is_canceled
    assert job.get_status() == 'canceled'
    assert queue.job_ids == [keep.id]
    assert queue.canceled_job_registry.get_job_ids() == [job.id]
    assert job.id in queue.canceled_job_registry
    assert impl.Job.exists(job.id, connection=connection)
    with pytest.raises(impl.exceptions.InvalidJobOperation):
        job.cancel()


def test_cancel_job_helper_and_deferred(impl: Any, queue: Any, connection: redis.Redis) -> None:
    parent = queue.enqueue(jobs.add, 1, 2)
    child = queue.enqueue(jobs.add, 3, 4, depends_on=parent)
    impl.cancel_job(child.id, connection=connection)
    assert impl.Job.fetch(child.id, connection=connection).is_canceled
    assert queue.deferred_job_registry.get_job_ids() == []
    assert queue.canceled_job_registry.get_job_ids() == [child.id]


def test_requeue_failed_job(impl: Any, queue: Any, sync_queue: Any, connection: redis.Redis) -> None:
    job = sync_queue.enqueue(jobs.div_by_zero)
    assert job.is_failed
    assert queue.failed_job_registry.get_job_ids() == [job.id]
    requeued = impl.Job.fetch(job.id, connection=connection).requeue()
    assert requeued.id == job.id
    assert job.get_status() == 'queued'
    assert queue.job_ids == [job.id]
    assert queue.failed_job_registry.count == 0
    with pytest.raises(impl.exceptions.InvalidJobOperation):
        impl.Job.fetch(job.id, connection=connection).requeue()


def test_requeue_job_helper_at_front(impl: Any, queue: Any, sync_queue: Any, connection: redis.Redis) -> None:
    failed = sync_queue.enqueue(jobs.div_by_zero)
    first = queue.enqueue(jobs.noop)
    impl.requeue_job(failed.id, connection=connection)
    assert queue.job_ids == [first.id, failed.id]
    other = sync_queue.enqueue(jobs.raise_custom_error)
    queue.failed_job_registry.requeue(other.id, at_front=True)
    assert queue.job_ids == [other.id, first.id, failed.id]


def test_status_of_every_kind_of_job(impl: Any, queue: Any, sync_queue: Any) -> None:
    finished = sync_queue.enqueue(jobs.add, 1, 2)
    failed = sync_queue.enqueue(jobs.div_by_zero)
    deferred = queue.enqueue(jobs.noop, depends_on=queue.enqueue(jobs.noop))
    scheduled = queue.enqueue_in(timedelta(minutes=1), jobs.noop)
    assert finished.is_finished and finished.get_status() == 'finished'
    assert failed.is_failed and failed.get_status() == 'failed'
    assert deferred.is_deferred and deferred.get_status() == 'deferred'
    assert scheduled.is_scheduled and scheduled.get_status() == 'scheduled'
    for job in (finished, failed, deferred, scheduled):
        assert not job.is_started and not job.is_stopped and not job.is_queued


def test_get_status_of_a_deleted_job_raises(impl: Any, queue: Any) -> None:
    job = queue.enqueue(jobs.noop)
    job.delete()
    with pytest.raises(impl.exceptions.InvalidJobOperation):
        job.get_status()


# ---------------------------------------------------------------------------------------------------
# Results of synchronous runs


def test_sync_result(impl: Any, sync_queue: Any, connection: redis.Redis) -> None:
    job = sync_queue.enqueue(jobs.add, 2, 3)
    assert job.return_value() == 5
    fetched = impl.Job.fetch(job.id, connection=connection)
    assert fetched.return_value() == 5
    result = fetched.latest_result()
    assert result.type == impl.Result.Type.SUCCESSFUL
    assert result.return_value == 5
    assert [r.return_value for r in fetched.results()] == [5]
    assert sync_queue.finished_job_registry.get_job_ids() == [job.id]
    assert 0 < connection.ttl(job.key) <= 500


def test_sync_failure_result(impl: Any, sync_queue: Any, connection: redis.Redis) -> None:
    job = sync_queue.enqueue(jobs.raise_custom_error, 'bad thing')
    fetched = impl.Job.fetch(job.id, connection=connection)
    assert fetched.is_failed
    assert fetched.return_value() is None
    result = fetched.latest_result()
    assert result.type == impl.Result.Type.FAILED
    assert 'CustomError: bad thing' in result.exc_string
    assert sync_queue.failed_job_registry.get_job_ids() == [job.id]


def test_sync_meta_written_from_inside(impl: Any, sync_queue: Any, connection: redis.Redis) -> None:
    job = sync_queue.enqueue(jobs.save_meta_from_inside, 'step', 3, meta={'before': True})
    assert job.return_value() == job.id
    assert impl.Job.fetch(job.id, connection=connection).meta == {'before': True, 'step': 3}


def test_sync_async_function_and_result_ttl(impl: Any, sync_queue: Any, connection: redis.Redis) -> None:
    job = sync_queue.enqueue(jobs.async_add, 1, 2, result_ttl=-1)
    assert job.return_value() == 3
    assert connection.ttl(job.key) == -1
    gone = sync_queue.enqueue(jobs.add, 1, 2, result_ttl=0)
    assert not impl.Job.exists(gone.id, connection=connection)


def test_sync_unpicklable_result(impl: Any, sync_queue: Any, connection: redis.Redis) -> None:
    job = sync_queue.enqueue(jobs.return_unpicklable)
    fetched = impl.Job.fetch(job.id, connection=connection)
    assert fetched.is_finished
    assert fetched.return_value() == 'Unserializable return value'


def test_sync_callbacks_run(impl: Any, sync_queue: Any) -> None:
    jobs.CALLBACK_CALLS.clear()
    ok = sync_queue.enqueue(jobs.add, 1, 2, on_success=impl.Callback(jobs.success_callback))
    bad = sync_queue.enqueue(jobs.div_by_zero, on_failure=impl.Callback(f'{jobs.__name__}.failure_callback'))
    assert jobs.CALLBACK_CALLS == [('success', ok.id, 3), ('failure', bad.id, ZeroDivisionError)]


def test_callbacks_are_stored(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(
        jobs.noop,
        on_success=impl.Callback(jobs.success_callback, timeout='2m'),
        on_stopped=impl.Callback(jobs.stopped_callback),
    )
    stored = connection.hgetall(job.key)
    assert stored[b'success_callback_name'] == f'{jobs.__name__}.success_callback'.encode()
    assert stored[b'success_callback_timeout'] == b'120'
    assert stored[b'stopped_callback_timeout'] == b'60'
    assert stored[b'failure_callback_name'] == b''
    fetched = impl.Job.fetch(job.id, connection=connection)
    assert fetched.success_callback is jobs.success_callback
    assert fetched.stopped_callback is jobs.stopped_callback
    assert fetched.failure_callback is None


def test_no_result_before_running(queue: Any) -> None:
    job = queue.enqueue(jobs.add, 1, 2)
    assert job.return_value() is None
    assert job.latest_result() is None
    assert job.results() == []


# ---------------------------------------------------------------------------------------------------
# Queue


def test_queue_counts_and_ids(impl: Any, queue: Any, connection: redis.Redis) -> None:
    assert queue.count == 0 and queue.is_empty() and len(queue) == 0
    ids = [queue.enqueue(jobs.add, i, i).id for i in range(5)]
    assert queue.count == 5 and len(queue) == 5 and not queue.is_empty()
    assert queue.job_ids == ids
    assert queue.get_job_ids() == ids
    assert queue.get_job_ids(offset=1, length=2) == ids[1:3]
    assert queue.get_job_ids(offset=3) == ids[3:]
    assert [job.id for job in queue.jobs] == ids
    assert [job.id for job in queue.get_jobs(offset=2, length=2)] == ids[2:4]
    assert queue.fetch_job(ids[0]).id == ids[0]
    assert queue.get_job_position(ids[2]) == 2


def test_fetch_job_of_another_queue_is_none(impl: Any, queue: Any, connection: redis.Redis) -> None:
    other = impl.Queue('other', connection=connection).enqueue(jobs.noop)
    assert queue.fetch_job(other.id) is None


def test_queue_remove(queue: Any) -> None:
    a, b, c = (queue.enqueue(jobs.add, i, i) for i in range(3))
    queue.remove(b)
    queue.remove(c.id)
    assert queue.job_ids == [a.id]


def test_queue_empty(impl: Any, queue: Any, connection: redis.Redis) -> None:
    jobs_ = [queue.enqueue(jobs.add, i, i) for i in range(3)]
    other = impl.Queue('other', connection=connection).enqueue(jobs.noop)
    assert queue.empty() == 3
    assert queue.count == 0
    assert not any(impl.Job.exists(job.id, connection=connection) for job in jobs_)
    assert impl.Job.exists(other.id, connection=connection)


def test_queue_delete(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.noop)
    impl.Queue('other', connection=connection).enqueue(jobs.noop)
    queue.delete(delete_jobs=True)
    assert not connection.exists('rq:queue:q')
    assert not impl.Job.exists(job.id, connection=connection)
    assert [q.name for q in impl.Queue.all(connection=connection)] == ['other']


def test_queue_all(impl: Any, connection: redis.Redis) -> None:
    assert impl.Queue.all(connection=connection) == []
    impl.Queue('a', connection=connection).enqueue(jobs.noop)
    impl.Queue('b', connection=connection).enqueue_in(timedelta(seconds=5), jobs.noop)
    names = sorted(q.name for q in impl.Queue.all(connection=connection))
    assert names == ['a', 'b']
    assert connection.smembers('rq:queues') == {b'rq:queue:a', b'rq:queue:b'}


def test_at_front(queue: Any) -> None:
    a = queue.enqueue(jobs.noop)
    b = queue.enqueue(jobs.noop, at_front=True)
    assert queue.job_ids == [b.id, a.id]


def test_enqueue_many(impl: Any, queue: Any, connection: redis.Redis) -> None:
    parent = queue.enqueue(jobs.noop, job_id='parent')
    enqueued = queue.enqueue_many(
        [
            impl.Queue.prepare_data(jobs.add, (1, 2), job_id='m1'),
            impl.Queue.prepare_data(jobs.add, (3, 4), job_id='m2', at_front=True),
            impl.Queue.prepare_data(jobs.add, (5, 6), job_id='m3', depends_on=parent),
        ]
    )
    assert sorted(job.id for job in enqueued) == ['m1', 'm2', 'm3']
    assert queue.job_ids == ['m2', 'parent', 'm1']
    assert impl.Job.fetch('m3', connection=connection).is_deferred
    assert queue.deferred_job_registry.get_job_ids() == ['m3']


def test_enqueue_at_and_in(impl: Any, queue: Any, connection: redis.Redis) -> None:
    when = datetime.now(timezone.utc) + timedelta(minutes=10)
    at = queue.enqueue_at(when, jobs.add, 1, 2)
    later = queue.enqueue_in(timedelta(seconds=30), jobs.add, 3, 4)
    registry = queue.scheduled_job_registry
    assert registry.get_job_ids() == [later.id, at.id]
    assert abs(registry.get_scheduled_time(at).timestamp() - int(when.timestamp())) <= 1
    assert queue.count == 0
    assert at.is_scheduled and at.enqueued_at is None


def test_dependencies(impl: Any, queue: Any, sync_queue: Any, connection: redis.Redis) -> None:
    done = sync_queue.enqueue(jobs.noop)
    pending = queue.enqueue(jobs.noop)
    met = queue.enqueue(jobs.add, 1, 2, depends_on=done)
    unmet = queue.enqueue(jobs.add, 1, 2, depends_on=[done.id, pending])
    missing = queue.enqueue(jobs.add, 1, 2, depends_on='no-such-job')
    assert met.is_queued and missing.is_queued
    assert unmet.is_deferred
    fetched = impl.Job.fetch(unmet.id, connection=connection)
    assert fetched._dependency_ids == [done.id, pending.id]
    assert sorted(fetched.dependency_ids) == sorted([done.id, pending.id])
    assert pending.dependent_ids == [unmet.id]
    assert queue.deferred_job_registry.get_job_ids() == [unmet.id]
    assert queue.job_ids == [pending.id, met.id, missing.id]


def test_unique(impl: Any, queue: Any, connection: redis.Redis) -> None:
    job = queue.enqueue(jobs.add, 1, 2, job_id='u1', unique=True)
    assert job.is_queued and queue.job_ids == ['u1']


def test_decorator_delay(impl: Any, connection: redis.Redis) -> None:
    decorated = impl.job_decorator('deco', connection=connection, result_ttl=7)(jobs.say_hello)
    job = decorated.delay('Zed')
    assert job.origin == 'deco'
    assert job.result_ttl == 7
    assert impl.Queue('deco', connection=connection).job_ids == [job.id]
    assert decorated('Zed') == 'Hi there, Zed!'


def test_json_serializer(impl: Any, connection: redis.Redis) -> None:
    q = impl.Queue('q', connection=connection, serializer=impl.serializers.JSONSerializer)
    job = q.enqueue(jobs.add, 1, 2, meta={'a': [1, 2]})
    fetched = impl.Job.fetch(job.id, connection=connection, serializer='json')
    assert list(fetched.args) == [1, 2] and fetched.meta == {'a': [1, 2]}
    sync = impl.Queue('s', connection=connection, serializer='json', is_async=False)
    assert sync.enqueue(jobs.add, 2, 2).return_value() == 4


# ---------------------------------------------------------------------------------------------------
# Registries


def test_registries_as_queue_properties(impl: Any, queue: Any, sync_queue: Any) -> None:
    finished = sync_queue.enqueue(jobs.noop)
    failed = sync_queue.enqueue(jobs.div_by_zero)
    assert isinstance(queue.finished_job_registry, impl.FinishedJobRegistry)
    assert isinstance(queue.failed_job_registry, impl.FailedJobRegistry)
    assert isinstance(queue.started_job_registry, impl.StartedJobRegistry)
    assert isinstance(queue.deferred_job_registry, impl.DeferredJobRegistry)
    assert isinstance(queue.scheduled_job_registry, impl.ScheduledJobRegistry)
    assert isinstance(queue.canceled_job_registry, impl.CanceledJobRegistry)
    assert queue.finished_job_registry.count == 1 and len(queue.finished_job_registry) == 1
    assert queue.finished_job_registry.get_job_ids() == [finished.id]
    assert queue.failed_job_registry.get_job_ids() == [failed.id]
    assert queue.started_job_registry.count == 0
    assert queue.failed_job_registry.key == 'rq:failed:q'
    assert queue.finished_job_registry.key == 'rq:finished:q'


def test_registry_remove(impl: Any, queue: Any, sync_queue: Any, connection: redis.Redis) -> None:
    finished = sync_queue.enqueue(jobs.noop)
    registry = impl.FinishedJobRegistry('q', connection=connection)
    registry.remove(finished)
    assert registry.count == 0
    assert impl.Job.exists(finished.id, connection=connection)
    failed = sync_queue.enqueue(jobs.div_by_zero)
    queue.failed_job_registry.remove(failed.id, delete_job=True)
    assert queue.failed_job_registry.count == 0
    assert not impl.Job.exists(failed.id, connection=connection)


def test_registry_cleanup_of_expired_entries(impl: Any, queue: Any, connection: redis.Redis) -> None:
    connection.zadd('rq:finished:q', {'old-finished': 1_000_000_000, 'fresh-finished': 4_000_000_000})
    connection.zadd('rq:failed:q', {'old-failed': 1_000_000_000, 'kept-forever': -1, 'fresh-failed': 4_000_000_000})
    assert queue.finished_job_registry.get_job_ids() == ['fresh-finished']
    assert queue.failed_job_registry.count == 2
    assert sorted(queue.failed_job_registry.get_job_ids()) == ['fresh-failed', 'kept-forever']
    assert queue.finished_job_registry.get_job_ids(cleanup=False) == ['fresh-finished']


def test_registry_count_without_cleanup(impl: Any, queue: Any, connection: redis.Redis) -> None:
    connection.zadd('rq:finished:q', {'old': 1_000_000_000})
    assert queue.finished_job_registry.get_job_count(cleanup=False) == 1
    assert queue.finished_job_registry.get_job_count() == 0


def test_deferred_and_canceled_registries_are_not_cleaned(impl: Any, queue: Any, connection: redis.Redis) -> None:
    connection.zadd('rq:deferred:q', {'old-deferred': 1_000_000_000})
    connection.zadd('rq:canceled:q', {'old-canceled': 1_000_000_000})
    assert queue.deferred_job_registry.get_job_ids() == ['old-deferred']
    assert queue.canceled_job_registry.get_job_ids() == ['old-canceled']


# ---------------------------------------------------------------------------------------------------
# Bad input: raises, and nothing is written
#
# Stricter than RQ on purpose: RQ's enqueue_job() SADDs the queue to rq:queues in its own round trip
# before it serializes the job, so with RQ an unencodable argument or a duplicate unique id on a new
# queue leaves `rq:queues` written. rqfast does the whole enqueue in one script, after encoding.


@pytest.mark.parametrize('bad_id', ['a:b', 'has space', 'slash/', 'dot.id', 'new\nline'])
def test_invalid_job_id(impl: Any, queue: Any, connection: redis.Redis, bad_id: str) -> None:
    with pytest.raises(ValueError):
        queue.enqueue(jobs.add, 1, 2, job_id=bad_id)
    with pytest.raises(ValueError):
        queue.enqueue(jobs.add, 1, 2, job_id=bad_id, unique=True)
    with pytest.raises(ValueError):
        queue.enqueue_in(timedelta(seconds=1), jobs.add, 1, 2, job_id=bad_id)
    with pytest.raises(ValueError):
        impl.Job.create(jobs.add, connection=connection, id=bad_id)
    assert connection.dbsize() == 0


def test_non_string_job_id(impl: Any, queue: Any, connection: redis.Redis) -> None:
    with pytest.raises(TypeError):
        queue.enqueue(jobs.add, 1, 2, job_id=123)
    assert connection.dbsize() == 0


def test_non_callable(queue: Any, connection: redis.Redis) -> None:
    # RQ's enqueue() fails here with AttributeError ('int' has no __module__); enqueue_call() and
    # Job.create() raise TypeError, which rqfast raises on every path.
    with pytest.raises(TypeError):
        queue.enqueue_call(42)
    with pytest.raises(TypeError):
        queue.enqueue(42)
    with pytest.raises(TypeError):
        queue.enqueue(jobs.Number)  # a class is not a job function
    assert connection.dbsize() == 0


def test_main_module_function(queue: Any, connection: redis.Redis) -> None:
    def in_main() -> None:
        return None

    in_main.__module__ = '__main__'
    with pytest.raises(ValueError):
        queue.enqueue(in_main)
    assert connection.dbsize() == 0


def test_unpicklable_args_write_nothing(queue: Any, connection: redis.Redis) -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        queue.enqueue(jobs.echo, lambda: 1)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        queue.enqueue(jobs.echo, k=jobs.return_unpicklable())
    assert connection.dbsize() == 0


def test_unpicklable_meta_writes_nothing(queue: Any, connection: redis.Redis) -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        queue.enqueue(jobs.noop, meta={'lock': jobs.return_unpicklable()})
    assert connection.dbsize() == 0


def test_unencodable_args_with_json_write_nothing(impl: Any, connection: redis.Redis) -> None:
    q = impl.Queue('q', connection=connection, serializer=impl.serializers.JSONSerializer)
    with pytest.raises(TypeError):
        q.enqueue(jobs.echo, object())
    with pytest.raises(TypeError):
        q.enqueue(jobs.Number(1).div, 2)  # the instance is not JSON
    assert connection.dbsize() == 0


def test_unencodable_scheduled_job_writes_nothing(queue: Any, connection: redis.Redis) -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        queue.enqueue_in(timedelta(minutes=1), jobs.echo, lambda: 1)
    assert connection.dbsize() == 0


def test_unencodable_unique_job_writes_nothing(queue: Any, connection: redis.Redis) -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        queue.enqueue(jobs.echo, lambda: 1, job_id='u', unique=True)
    assert connection.dbsize() == 0


def test_enqueue_many_with_one_bad_job_writes_nothing(impl: Any, queue: Any, connection: redis.Redis) -> None:
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        queue.enqueue_many(
            [
                impl.Queue.prepare_data(jobs.add, (1, 2), job_id='good-1'),
                impl.Queue.prepare_data(jobs.echo, (lambda: 1,), job_id='bad'),
                impl.Queue.prepare_data(jobs.add, (3, 4), job_id='good-2'),
            ]
        )
    assert connection.dbsize() == 0


def test_unencodable_args_leave_existing_jobs_alone(queue: Any, connection: redis.Redis) -> None:
    queue.enqueue(jobs.add, 1, 2, job_id='existing')
    before = snapshot(connection)
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        queue.enqueue(jobs.echo, lambda: 1, job_id='existing')
    after = snapshot(connection)
    assert {k: v['value'] for k, v in after.items()} == {k: v['value'] for k, v in before.items()}


def test_duplicate_unique_id(impl: Any, queue: Any, connection: redis.Redis) -> None:
    original = queue.enqueue(jobs.add, 1, 2, job_id='dup', unique=True, meta={'n': 1})
    before = snapshot(connection)
    with pytest.raises(impl.exceptions.DuplicateJobError):
        queue.enqueue(jobs.say_hello, 'other', job_id='dup', unique=True, meta={'n': 2}, at_front=True)
    with pytest.raises(impl.exceptions.DuplicateJobError):
        impl.Queue('other', connection=connection).enqueue(jobs.noop, job_id='dup', unique=True)
    after = snapshot(connection)
    assert list(after) == list(before)
    assert {k: v['value'] for k, v in after.items()} == {k: v['value'] for k, v in before.items()}
    fetched = impl.Job.fetch('dup', connection=connection)
    assert fetched.func_name == original.func_name and fetched.meta == {'n': 1}
    assert queue.job_ids == ['dup']


def test_duplicate_of_a_plain_job_is_rejected_by_unique(impl: Any, queue: Any, connection: redis.Redis) -> None:
    queue.enqueue(jobs.add, 1, 2, job_id='plain')
    with pytest.raises(impl.exceptions.DuplicateJobError):
        queue.enqueue(jobs.add, 1, 2, job_id='plain', unique=True)
    assert queue.job_ids == ['plain']


def test_unique_needs_an_id_and_no_dependencies(impl: Any, queue: Any, connection: redis.Redis) -> None:
    with pytest.raises(ValueError):
        queue.enqueue(jobs.add, 1, 2, unique=True)
    with pytest.raises(ValueError):
        queue.enqueue(jobs.add, 1, 2, job_id='u', unique=True, depends_on='other')
    assert connection.dbsize() == 0


def test_zero_timeout(queue: Any, connection: redis.Redis) -> None:
    with pytest.raises(ValueError):
        queue.enqueue(jobs.add, 1, 2, job_timeout=0)
    with pytest.raises(ValueError):
        queue.enqueue_in(timedelta(seconds=5), jobs.add, 1, 2, job_timeout=0)
    assert connection.dbsize() == 0


@pytest.mark.parametrize('ttl', [0, -1, '0m'])
def test_non_positive_ttl(queue: Any, connection: redis.Redis, ttl: Any) -> None:
    with pytest.raises(ValueError):
        queue.enqueue(jobs.add, 1, 2, ttl=ttl)
    assert connection.dbsize() == 0


@pytest.mark.parametrize('option', ['job_timeout', 'result_ttl', 'failure_ttl', 'ttl'])
@pytest.mark.parametrize('value', ['1x', 'abc', 'm'])
def test_bad_timeout_string(impl: Any, queue: Any, connection: redis.Redis, option: str, value: str) -> None:
    with pytest.raises(impl.exceptions.TimeoutFormatError):
        queue.enqueue(jobs.add, 1, 2, **{option: value})
    assert connection.dbsize() == 0


def test_bad_default_timeout_string(impl: Any, connection: redis.Redis) -> None:
    with pytest.raises(impl.exceptions.TimeoutFormatError):
        impl.Queue('q', connection=connection, default_timeout='soon')
    assert connection.dbsize() == 0


def test_unknown_job_class(impl: Any, connection: redis.Redis) -> None:
    with pytest.raises((ImportError, AttributeError, ValueError)) as info:
        impl.Queue('q', connection=connection, job_class='no.such.Class')
    assert 'no.such' in str(info.value) or 'Class' in str(info.value)
    assert connection.dbsize() == 0


def test_bad_depends_on(queue: Any, connection: redis.Redis) -> None:
    with pytest.raises((ValueError, TypeError)):
        queue.enqueue(jobs.add, 1, 2, depends_on=42)
    assert connection.dbsize() == 0


def test_bad_retry_and_repeat(impl: Any, connection: redis.Redis) -> None:
    with pytest.raises(ValueError):
        impl.Retry(max=0)
    with pytest.raises(ValueError):
        impl.Retry(max=2, interval=[1, -1])
    with pytest.raises(ValueError):
        impl.Repeat(times=0)
    with pytest.raises(ValueError):
        impl.Repeat(times=2, interval=-5)
    assert connection.dbsize() == 0


def test_bad_callback(impl: Any, queue: Any, connection: redis.Redis) -> None:
    with pytest.raises(ValueError):
        impl.Callback(42)
    assert connection.dbsize() == 0


def test_json_serializer_rejects_unencodable_meta(impl: Any, connection: redis.Redis) -> None:
    q = impl.Queue('q', connection=connection, serializer='json')
    with pytest.raises(TypeError):
        q.enqueue(jobs.add, 1, 2, meta={'when': datetime.now()})
    assert connection.dbsize() == 0
