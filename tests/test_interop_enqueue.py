"""RQ is the oracle: every enqueue option, run once with rq and once with rqfast, must leave the same db.

Each scenario runs on the freshly flushed db of the session's private server, first with `rq`, then
with the library under test (`rqfast`, or `rq` again with RQFAST_TEST_IMPL=rq to check the harness);
the two dumps are normalised (tests/snapshot.py) and compared key by key, field by field. The second
half reads across: rq reads what rqfast wrote and rqfast reads what rq wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis

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

Scenario = Callable[[Any, redis.Redis], list[Any]]
JOBS = jobs.__name__


def run_both(conn: redis.Redis, scenario: Scenario) -> dict[str, dict[str, Any]]:
    """Run `scenario(impl, conn)` with rq, then with the library under test, and compare the dbs.

    The scenario returns the jobs (or ids) whose ids differ between runs, in a fixed order.
    """
    dumps: dict[str, dict[str, Any]] = {}
    with following_reference():  # rq 2.12 is the oracle: rqfast follows 2.12 where 3.0 changed things
        for name in (REFERENCE, UNDER_TEST):
            conn.flushdb()
            ids = scenario(implementation(name), conn)
            dumps[name] = normalize(snapshot(conn), id_map_for(*ids))
    conn.flushdb()
    assert dumps[REFERENCE], 'the scenario wrote nothing: it checks nothing'
    assert_same(dumps[REFERENCE], dumps[UNDER_TEST])
    return dumps


def finished_job(impl: Any, conn: redis.Redis, name: str = 'sync') -> Any:
    """A job that ran and finished, via a synchronous queue."""
    return impl.Queue(name, connection=conn, is_async=False).enqueue(jobs.add, 1, 2)


def failed_job(impl: Any, conn: redis.Redis, name: str = 'q') -> Any:
    """A job that ran and failed, via a synchronous queue."""
    return impl.Queue(name, connection=conn, is_async=False).enqueue(jobs.div_by_zero)


# ---------------------------------------------------------------------------------------------------
# Plain enqueue options: one call each


def _q(impl: Any, conn: redis.Redis, **kwargs: Any) -> Any:
    return impl.Queue('q', connection=conn, **kwargs)


SIMPLE_CALLS: dict[str, Callable[[Any], tuple[Any, tuple[Any, ...], dict[str, Any]]]] = {
    'args': lambda impl: (jobs.add, (2, 3), {}),
    'args_and_kwargs': lambda impl: (jobs.echo, (1, 'two', 3.5, None), {'x': [1, 2], 'y': {'k': (1,)}}),
    'no_args': lambda impl: (jobs.noop, (), {}),
    'explicit_args_kwargs': lambda impl: (jobs.echo, (), {'args': (1, 2), 'kwargs': {'a': 1}}),
    'string_path': lambda impl: (f'{JOBS}.say_hello', (), {'name': 'Bob'}),
    'instance_method': lambda impl: (jobs.Number(4).div, (2,), {}),
    'callable_instance': lambda impl: (jobs.callable_adder, (1,), {'b': 2}),
    'builtin': lambda impl: (len, ([1, 2, 3],), {}),
    'async_function': lambda impl: (jobs.async_add, (1, 2), {}),
    'long_description_args': lambda impl: (jobs.echo, ('x' * 200,), {'k': 'y' * 100}),
    'job_timeout_int': lambda impl: (jobs.add, (1, 2), {'job_timeout': 30}),
    'job_timeout_minutes': lambda impl: (jobs.add, (1, 2), {'job_timeout': '2m'}),
    'job_timeout_hours': lambda impl: (jobs.add, (1, 2), {'job_timeout': '1h'}),
    'job_timeout_infinite': lambda impl: (jobs.add, (1, 2), {'job_timeout': -1}),
    'result_ttl_zero': lambda impl: (jobs.add, (1, 2), {'result_ttl': 0}),
    'result_ttl_forever': lambda impl: (jobs.add, (1, 2), {'result_ttl': -1}),
    'result_ttl_n': lambda impl: (jobs.add, (1, 2), {'result_ttl': 100}),
    'failure_ttl': lambda impl: (jobs.add, (1, 2), {'failure_ttl': 300}),
    'ttl': lambda impl: (jobs.add, (1, 2), {'ttl': 60}),
    'ttl_string': lambda impl: (jobs.add, (1, 2), {'ttl': '5m'}),
    'description': lambda impl: (jobs.add, (1, 2), {'description': 'adds one and two'}),
    'meta': lambda impl: (jobs.add, (1, 2), {'meta': {'a': 1, 'nested': {'x': [1, 2]}, 'b': None}}),
    'custom_job_id': lambda impl: (jobs.add, (1, 2), {'job_id': 'my-custom_id-1'}),
    'retry': lambda impl: (jobs.add, (1, 2), {'retry': impl.Retry(max=3, interval=[10, 20])}),
    'retry_int_interval': lambda impl: (jobs.add, (1, 2), {'retry': impl.Retry(max=2, interval=5)}),
    'retry_at_front': lambda impl: (jobs.add, (1, 2), {'retry': impl.Retry(max=2, enqueue_at_front=True)}),
    'callbacks': lambda impl: (
        jobs.add,
        (1, 2),
        {
            'on_success': impl.Callback(jobs.success_callback, timeout=10),
            'on_failure': impl.Callback(jobs.failure_callback),
            'on_stopped': impl.Callback(f'{JOBS}.stopped_callback', timeout='1m'),
        },
    ),
    'repeat': lambda impl: (jobs.add, (1, 2), {'repeat': impl.Repeat(times=3, interval=5)}),
    'repeat_intervals': lambda impl: (jobs.add, (1, 2), {'repeat': impl.Repeat(times=2, interval=[0, 30])}),
    'depends_on_missing_id': lambda impl: (jobs.add, (1, 2), {'depends_on': 'no-such-job'}),
    'everything': lambda impl: (
        jobs.echo,
        ('a',),
        {
            'k': 1,
            'job_timeout': '3m',
            'result_ttl': 50,
            'failure_ttl': 70,
            'ttl': 90,
            'description': 'all of it',
            'meta': {'m': 1},
            'retry': impl.Retry(max=1),
            'on_success': impl.Callback(jobs.success_callback),
        },
    ),
}


@pytest.mark.parametrize('option', sorted(SIMPLE_CALLS))
def test_enqueue_option_writes_what_rq_writes(redis_conn: redis.Redis, option: str) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        func, args, kwargs = SIMPLE_CALLS[option](impl)
        job = _q(impl, conn).enqueue(func, *args, **kwargs)
        return [job]

    run_both(redis_conn, scenario)


def test_enqueue_call_writes_what_rq_writes(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        job = _q(impl, conn).enqueue_call(
            func=jobs.echo,
            args=(1, 2),
            kwargs={'x': 3},
            timeout=30,
            result_ttl=10,
            failure_ttl=20,
            ttl=40,
            description='explicit',
            meta={'k': 'v'},
            retry=impl.Retry(max=2, interval=[1, 2]),
        )
        return [job]

    run_both(redis_conn, scenario)


def test_queue_default_timeout_writes_what_rq_writes(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        job = _q(impl, conn, default_timeout='10m').enqueue(jobs.add, 1, 2)
        return [job]

    run_both(redis_conn, scenario)


def test_at_front_pushes_to_the_head_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        first = q.enqueue(jobs.add, 1, 2)
        second = q.enqueue(jobs.add, 3, 4, at_front=True)
        third = q.enqueue(jobs.add, 5, 6)
        assert q.job_ids == [second.id, first.id, third.id]
        return [first, second, third]

    dumps = run_both(redis_conn, scenario)
    assert dumps[UNDER_TEST]['rq:queue:q']['value'] == ['<job1>', '<job0>', '<job2>']


# ---------------------------------------------------------------------------------------------------
# Dependencies


def test_depends_on_finished_job_is_enqueued_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        parent = finished_job(impl, conn)
        child = _q(impl, conn).enqueue(jobs.add, 1, 2, depends_on=parent)
        assert child.get_status() == 'queued'
        return [parent, child]

    dumps = run_both(redis_conn, scenario)
    assert 'rq:job::<job1>:dependencies' not in dumps[UNDER_TEST]


def test_depends_on_unfinished_job_is_deferred_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        parent = q.enqueue(jobs.add, 1, 2)
        child = q.enqueue(jobs.add, 3, 4, depends_on=parent.id)
        assert child.get_status() == 'deferred'
        return [parent, child]

    dumps = run_both(redis_conn, scenario)
    for key in ('rq:job:<job0>:dependents', 'rq:job::<job1>:dependencies', 'rq:deferred:q'):
        assert key in dumps[UNDER_TEST]


def test_depends_on_unfinished_job_with_ttl_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        parent = q.enqueue(jobs.add, 1, 2)
        child = q.enqueue(jobs.add, 3, 4, depends_on=parent, ttl=120)
        return [parent, child]

    run_both(redis_conn, scenario)


def test_depends_on_list_of_ids_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        done = finished_job(impl, conn)
        pending = _q(impl, conn).enqueue(jobs.noop)
        child = _q(impl, conn).enqueue(jobs.add, 1, 2, depends_on=[done.id, pending.id])
        return [done, pending, child]

    run_both(redis_conn, scenario)


def test_depends_on_all_finished_list_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        a = finished_job(impl, conn)
        b = finished_job(impl, conn)
        child = _q(impl, conn).enqueue(jobs.add, 1, 2, depends_on=[a, b.id])
        return [a, b, child]

    run_both(redis_conn, scenario)


def test_depends_on_dependency_object_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        a = q.enqueue(jobs.noop)
        b = q.enqueue(jobs.noop)
        dependency = impl.Dependency(jobs=[a, b.id], allow_failure=True, enqueue_at_front=True)
        child = q.enqueue(jobs.add, 1, 2, depends_on=dependency)
        return [a, b, child]

    run_both(redis_conn, scenario)


def test_depends_on_other_queue_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        parent = impl.Queue('other', connection=conn).enqueue(jobs.noop)
        child = _q(impl, conn).enqueue(jobs.add, 1, 2, depends_on=parent, at_front=True)
        return [parent, child]

    run_both(redis_conn, scenario)


# ---------------------------------------------------------------------------------------------------
# unique, enqueue_many, scheduling, enqueue_job


def test_unique_enqueue_and_duplicate_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        q.enqueue(jobs.add, 1, 2, job_id='only-once', unique=True, ttl=100, meta={'first': True})
        with pytest.raises(impl.exceptions.DuplicateJobError):
            q.enqueue(jobs.add, 9, 9, job_id='only-once', unique=True, meta={'second': True})
        q.enqueue(jobs.add, 3, 4, job_id='front-once', unique=True, at_front=True)
        return []

    dumps = run_both(redis_conn, scenario)
    assert dumps[UNDER_TEST]['rq:job:only-once']['value']['meta'].decoded == {'first': True}


def test_enqueue_many_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        done = finished_job(impl, conn)
        pending = q.enqueue(jobs.noop, job_id='pending')
        datas = [
            q.prepare_data(jobs.add, (1, 2), job_id='many-1'),
            q.prepare_data(jobs.add, (3, 4), {}, job_id='many-2', at_front=True, meta={'m': 2}),
            q.prepare_data(jobs.echo, (5,), {'k': 6}, job_id='many-3', timeout=30, result_ttl=10, ttl=70),
            q.prepare_data(jobs.add, (7, 8), job_id='many-4', depends_on=pending),
            q.prepare_data(jobs.add, (9, 10), job_id='many-5', depends_on=done.id),
            q.prepare_data(jobs.add, (11, 12), job_id='many-6', retry=impl.Retry(max=2, interval=3)),
        ]
        enqueued = q.enqueue_many(datas)
        assert sorted(j.id for j in enqueued) == [f'many-{i}' for i in range(1, 7)]
        return [done]

    run_both(redis_conn, scenario)


def test_enqueue_many_generated_ids_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        return q.enqueue_many([q.prepare_data(jobs.add, (i, i)) for i in range(3)])

    run_both(redis_conn, scenario)


def test_enqueue_at_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        when = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(minutes=10)
        a = q.enqueue_at(when, jobs.add, 1, 2)
        b = q.enqueue_at(when.astimezone(timezone(timedelta(hours=5))), jobs.add, 3, 4, meta={'m': 1}, at_front=True)
        c = q.enqueue_at(datetime(2031, 1, 2, 3, 4, 5, tzinfo=timezone.utc), jobs.echo, job_id='fixed', ttl=600)
        assert a.get_status() == 'scheduled'
        return [a, b, c]

    run_both(redis_conn, scenario)


def test_enqueue_in_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        job = q.enqueue_in(timedelta(seconds=90), jobs.add, 1, 2, job_timeout=20)
        return [job]

    run_both(redis_conn, scenario)


def test_enqueue_job_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        created = impl.Job.create(jobs.add, args=(1, 2), connection=conn, meta={'k': 1}, result_ttl=30)
        assert created.get_status(refresh=False) == 'created'
        q.enqueue_job(created)
        via_queue = q.create_job(jobs.echo, args=(3,), kwargs={'z': 4}, timeout='1m', job_id='from-create-job')
        q.enqueue_job(via_queue, at_front=True)
        return [created]

    run_both(redis_conn, scenario)


def test_job_create_and_save_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        job = impl.Job.create(jobs.add, args=(1, 2), connection=conn, id='saved-only', description='d')
        job.save()
        return []

    run_both(redis_conn, scenario)


def test_job_decorator_delay_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        decorated = impl.job_decorator('deco', connection=conn)(jobs.say_hello)
        a = decorated.delay('Ann')
        b = impl.job_decorator('deco', connection=conn, timeout=45, result_ttl=9, meta={'d': 1})(jobs.echo).delay(1)
        return [a, b]

    run_both(redis_conn, scenario)


def test_json_serializer_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        a = _q(impl, conn, serializer=impl.serializers.JSONSerializer).enqueue(jobs.add, 1, 2, meta={'k': [1]})
        b = _q(impl, conn, serializer='json').enqueue(f'{JOBS}.echo', 'x', y=None)
        c = impl.Queue('jsync', connection=conn, serializer='json', is_async=False).enqueue(jobs.add, 2, 2)
        return [a, b, c]

    dumps = run_both(redis_conn, scenario)
    assert dumps[UNDER_TEST]['rq:job:<job0>']['value']['data']['encoding'] == 'json'


# ---------------------------------------------------------------------------------------------------
# Synchronous queues: the job runs in-process


def test_sync_success_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        job = impl.Queue('sync', connection=conn, is_async=False).enqueue(jobs.add, 2, 3)
        assert job.get_status() == 'finished'
        assert job.return_value() == 5
        return [job]

    dumps = run_both(redis_conn, scenario)
    stream = dumps[UNDER_TEST]['rq:results:<job0>']['value']
    assert stream[0]['type'] == '1' and stream[0]['worker_name'] == ''


SYNC_CALLS: dict[str, Callable[[Any], tuple[Any, tuple[Any, ...], dict[str, Any]]]] = {
    'none_result': lambda impl: (jobs.noop, (), {}),
    'result_ttl_zero': lambda impl: (jobs.add, (1, 1), {'result_ttl': 0}),
    'result_ttl_forever': lambda impl: (jobs.add, (1, 1), {'result_ttl': -1}),
    'ttl': lambda impl: (jobs.add, (1, 1), {'ttl': 30}),
    'meta_from_inside': lambda impl: (jobs.save_meta_from_inside, ('k', 'v'), {'meta': {'before': 1}}),
    'async_function': lambda impl: (jobs.async_add, (1, 2), {}),
    'unpicklable_result': lambda impl: (jobs.return_unpicklable, (), {}),
    'instance_method': lambda impl: (jobs.Number(9).div, (3,), {}),
    'success_callback': lambda impl: (jobs.add, (1, 2), {'on_success': impl.Callback(jobs.success_callback)}),
    'failure': lambda impl: (jobs.div_by_zero, (), {}),
    'failure_ttl': lambda impl: (jobs.raise_custom_error, ('boom',), {'failure_ttl': 100}),
    'failure_callback': lambda impl: (jobs.div_by_zero, (), {'on_failure': impl.Callback(jobs.failure_callback)}),
    'failure_with_retry': lambda impl: (jobs.div_by_zero, (), {'retry': impl.Retry(max=2)}),
}


@pytest.mark.parametrize('case', sorted(SYNC_CALLS))
def test_sync_run_like_rq(redis_conn: redis.Redis, case: str) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        func, args, kwargs = SYNC_CALLS[case](impl)
        job = impl.Queue('sync', connection=conn, is_async=False).enqueue(func, *args, **kwargs)
        return [job]

    run_both(redis_conn, scenario)


def test_sync_dependent_of_finished_job_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = impl.Queue('sync', connection=conn, is_async=False)
        parent = q.enqueue(jobs.add, 1, 2)
        child = q.enqueue(jobs.add, 3, 4, depends_on=parent)
        assert child.get_status() == 'finished'
        return [parent, child]

    run_both(redis_conn, scenario)


# ---------------------------------------------------------------------------------------------------
# Removing, cancelling, deleting, requeueing


def test_queue_remove_empty_delete_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        a = q.enqueue(jobs.add, 1, 2)
        b = q.enqueue(jobs.add, 3, 4)
        c = q.enqueue(jobs.add, 5, 6)
        q.remove(b)
        q.remove(c.id)
        assert q.job_ids == [a.id]
        emptied = impl.Queue('emptied', connection=conn)
        emptied.enqueue(jobs.noop)
        parent = emptied.enqueue(jobs.noop)
        emptied.enqueue(jobs.noop, depends_on=parent)
        emptied.empty()
        gone = impl.Queue('gone', connection=conn)
        gone.enqueue(jobs.noop, job_id='gone-1')
        gone.delete(delete_jobs=True)
        kept = impl.Queue('kept-jobs', connection=conn)
        kept.enqueue(jobs.noop, job_id='kept-1')
        kept.delete(delete_jobs=False)
        return [a, b, c, parent]

    run_both(redis_conn, scenario)


def test_cancel_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        queued = q.enqueue(jobs.add, 1, 2)
        other = q.enqueue(jobs.add, 3, 4)
        queued.cancel()
        deferred = q.enqueue(jobs.noop, depends_on=other)
        deferred.cancel()
        scheduled = q.enqueue_in(timedelta(minutes=5), jobs.noop)
        impl.cancel_job(scheduled.id, connection=conn)
        with pytest.raises(impl.exceptions.InvalidJobOperation):
            queued.cancel()
        return [queued, other, deferred, scheduled]

    run_both(redis_conn, scenario)


def test_delete_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        q = _q(impl, conn)
        parent = q.enqueue(jobs.add, 1, 2)
        child = q.enqueue(jobs.noop, depends_on=parent)
        keep = q.enqueue(jobs.noop)
        parent.delete()
        finished = finished_job(impl, conn)
        finished.delete()
        scheduled = q.enqueue_in(timedelta(minutes=1), jobs.noop)
        scheduled.delete()
        p2 = q.enqueue(jobs.noop)
        c2 = q.enqueue(jobs.noop, depends_on=p2)
        p2.delete(delete_dependents=True)
        return [parent, child, keep, finished, scheduled, p2, c2]

    run_both(redis_conn, scenario)


def test_requeue_failed_job_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        job = failed_job(impl, conn)
        assert job.get_status() == 'failed'
        fetched = impl.Job.fetch(job.id, connection=conn)
        fetched.requeue()
        assert fetched.get_status() == 'queued'
        return [job]

    dumps = run_both(redis_conn, scenario)
    assert dumps[UNDER_TEST]['rq:queue:q']['value'] == ['<job0>']


def test_failed_registry_requeue_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        a = failed_job(impl, conn)
        b = failed_job(impl, conn)
        registry = impl.FailedJobRegistry('q', connection=conn)
        assert registry.count == 2
        registry.requeue(a.id)
        registry.requeue(b, at_front=True)
        with pytest.raises(impl.exceptions.InvalidJobOperation):
            registry.requeue(a.id)
        return [a, b]

    run_both(redis_conn, scenario)


def test_requeue_job_helper_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        job = failed_job(impl, conn)
        impl.requeue_job(job.id, connection=conn)
        return [job]

    run_both(redis_conn, scenario)


def test_save_meta_and_refresh_like_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> list[Any]:
        job = _q(impl, conn).enqueue(jobs.add, 1, 2)
        job.meta['progress'] = 50
        job.save_meta()
        job.description = 'changed'
        job.save()
        return [job]

    run_both(redis_conn, scenario)


# ---------------------------------------------------------------------------------------------------
# Reading across: what one library writes, the other reads


DIRECTIONS = [pytest.param(REFERENCE, UNDER_TEST, id='rq-writes'), pytest.param(UNDER_TEST, REFERENCE, id='rq-reads')]


@pytest.mark.parametrize(('writer_name', 'reader_name'), DIRECTIONS)
def test_fetch_reads_the_other_librarys_jobs(redis_conn: redis.Redis, writer_name: str, reader_name: str) -> None:
    writer, reader = implementation(writer_name), implementation(reader_name)
    q = writer.Queue('q', connection=redis_conn)
    parent = q.enqueue(jobs.add, 1, 2)
    job = q.enqueue(
        jobs.echo,
        1,
        'two',
        k=[3],
        job_timeout='2m',
        result_ttl=77,
        failure_ttl=88,
        ttl=99,
        description='described',
        meta={'m': {'n': 1}},
        depends_on=parent,
        retry=writer.Retry(max=3, interval=[1, 2]),
        repeat=writer.Repeat(times=2, interval=4),
        on_success=writer.Callback(jobs.success_callback, timeout=7),
        on_failure=writer.Callback(jobs.failure_callback),
    )
    read = reader.Job.fetch(job.id, connection=redis_conn)
    assert read.id == job.id
    assert read.get_status() == 'deferred'
    assert read.is_deferred
    assert read.func_name == f'{JOBS}.echo'
    assert read.func is jobs.echo
    assert tuple(read.args) == (1, 'two')
    assert read.kwargs == {'k': [3]}
    assert read.meta == {'m': {'n': 1}}
    assert read.origin == 'q'
    assert read.timeout == 120
    assert read.result_ttl == 77
    assert read.failure_ttl == 88
    assert read.ttl == 99
    assert read.description == 'described'
    assert read.dependency_ids == [parent.id]
    assert read._dependency_ids == [parent.id]
    assert read.retries_left == 3
    assert read.retry_intervals == [1, 2]
    assert read.repeats_left == 2
    assert read.repeat_intervals == [4]
    assert read.success_callback is jobs.success_callback
    assert read.success_callback_timeout == 7
    assert read.failure_callback is jobs.failure_callback
    assert read.failure_callback_timeout == 60
    assert read.created_at is not None and read.created_at.tzinfo is not None
    assert read.enqueued_at is None
    assert read.return_value() is None and read.latest_result() is None

    queued = reader.Job.fetch(parent.id, connection=redis_conn)
    assert queued.is_queued and queued.enqueued_at is not None
    assert queued.dependent_ids == [job.id]
    assert reader.Queue('q', connection=redis_conn).job_ids == [parent.id]


@pytest.mark.parametrize(('writer_name', 'reader_name'), DIRECTIONS)
def test_results_read_across(redis_conn: redis.Redis, writer_name: str, reader_name: str) -> None:
    writer, reader = implementation(writer_name), implementation(reader_name)
    sync = writer.Queue('sync', connection=redis_conn, is_async=False)
    ok = sync.enqueue(jobs.echo, 1, k='v')
    bad = sync.enqueue(jobs.raise_custom_error, 'kaboom')
    nothing = sync.enqueue(jobs.noop)

    read_ok = reader.Job.fetch(ok.id, connection=redis_conn)
    assert read_ok.is_finished
    assert read_ok.return_value() == ((1,), {'k': 'v'})
    latest = read_ok.latest_result()
    assert latest is not None and latest.type == reader.Result.Type.SUCCESSFUL
    assert latest.return_value == ((1,), {'k': 'v'})
    assert latest.worker_name == ''
    assert len(read_ok.results()) == 1
    assert read_ok.ended_at is not None and read_ok.started_at is not None

    read_bad = reader.Job.fetch(bad.id, connection=redis_conn)
    assert read_bad.is_failed
    failure = read_bad.latest_result()
    assert failure is not None and failure.type == reader.Result.Type.FAILED
    assert 'CustomError: kaboom' in failure.exc_string
    assert read_bad.return_value() is None

    read_nothing = reader.Job.fetch(nothing.id, connection=redis_conn)
    assert read_nothing.is_finished and read_nothing.return_value() is None
    assert read_nothing.latest_result().type == reader.Result.Type.SUCCESSFUL


@pytest.mark.parametrize(('writer_name', 'reader_name'), DIRECTIONS)
def test_registries_count_across(redis_conn: redis.Redis, writer_name: str, reader_name: str) -> None:
    writer, reader = implementation(writer_name), implementation(reader_name)
    q = writer.Queue('q', connection=redis_conn)
    sync = writer.Queue('q', connection=redis_conn, is_async=False)
    finished = sync.enqueue(jobs.add, 1, 2)
    failed = sync.enqueue(jobs.div_by_zero)
    queued = q.enqueue(jobs.noop)
    deferred = q.enqueue(jobs.noop, depends_on=queued)
    scheduled = q.enqueue_in(timedelta(minutes=3), jobs.noop)
    canceled = q.enqueue(jobs.noop)
    canceled.cancel()

    expected = {
        reader.FinishedJobRegistry: finished,
        reader.FailedJobRegistry: failed,
        reader.DeferredJobRegistry: deferred,
        reader.ScheduledJobRegistry: scheduled,
        reader.CanceledJobRegistry: canceled,
    }
    reader_queue = reader.Queue('q', connection=redis_conn)
    for registry_class, job in expected.items():
        registry = registry_class('q', connection=redis_conn)
        assert registry.count == 1, registry_class.__name__
        assert registry.get_job_ids() == [job.id], registry_class.__name__
        assert job.id in registry
    assert reader.StartedJobRegistry('q', connection=redis_conn).count == 0
    assert reader_queue.finished_job_registry.get_job_ids() == [finished.id]
    assert reader_queue.failed_job_registry.get_job_ids() == [failed.id]
    assert reader_queue.deferred_job_registry.get_job_ids() == [deferred.id]
    assert reader_queue.scheduled_job_registry.get_job_ids() == [scheduled.id]
    assert reader_queue.canceled_job_registry.get_job_ids() == [canceled.id]
    assert reader_queue.job_ids == [queued.id]
    assert reader_queue.count == 1
    assert reader.Job.fetch(canceled.id, connection=redis_conn).is_canceled
    assert reader.Job.fetch(scheduled.id, connection=redis_conn).is_scheduled


@pytest.mark.parametrize(('writer_name', 'reader_name'), DIRECTIONS)
def test_queue_all_lists_the_other_librarys_queues(redis_conn: redis.Redis, writer_name: str, reader_name: str) -> None:
    writer, reader = implementation(writer_name), implementation(reader_name)
    writer.Queue('alpha', connection=redis_conn).enqueue(jobs.noop)
    writer.Queue('beta', connection=redis_conn).enqueue_in(timedelta(minutes=1), jobs.noop)
    writer.Queue('gamma', connection=redis_conn).enqueue_many([writer.Queue.prepare_data(jobs.noop, job_id='g-1')])
    assert sorted(q.name for q in reader.Queue.all(connection=redis_conn)) == ['alpha', 'beta', 'gamma']
    assert all(isinstance(q, reader.Queue) for q in reader.Queue.all(connection=redis_conn))


@pytest.mark.parametrize(('writer_name', 'reader_name'), DIRECTIONS)
def test_requeue_across(redis_conn: redis.Redis, writer_name: str, reader_name: str) -> None:
    writer, reader = implementation(writer_name), implementation(reader_name)
    failed = writer.Queue('q', connection=redis_conn, is_async=False).enqueue(jobs.div_by_zero)
    job = reader.Job.fetch(failed.id, connection=redis_conn)
    assert job.is_failed
    job.requeue()
    back = writer.Job.fetch(failed.id, connection=redis_conn)
    assert back.is_queued
    assert writer.Queue('q', connection=redis_conn).job_ids == [failed.id]
    assert writer.FailedJobRegistry('q', connection=redis_conn).count == 0


@pytest.mark.parametrize(('writer_name', 'reader_name'), DIRECTIONS)
def test_json_jobs_read_across(redis_conn: redis.Redis, writer_name: str, reader_name: str) -> None:
    writer, reader = implementation(writer_name), implementation(reader_name)
    job = writer.Queue('q', connection=redis_conn, serializer='json').enqueue(jobs.add, 1, 2, meta={'a': [1]})
    read = reader.Job.fetch(job.id, connection=redis_conn, serializer=reader.serializers.JSONSerializer)
    assert read.func_name == f'{JOBS}.add'
    assert list(read.args) == [1, 2]
    assert read.meta == {'a': [1]}
