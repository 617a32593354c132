"""`pipeline=` on the public API: the caller's pipeline gets the writes, nothing is written before
its execute(), and then the db is what rq writes for the same calls queued into a pipeline.

Each scenario runs with rq, then with the library under test, on a MULTI pipeline and on a
non-transactional one, on the real server and on fakeredis, and the dbs are compared field by field
(tests/snapshot.py). The last tests check that the caller's own commands and rqfast's script calls
apply together (or not at all), and that a queued script call never depends on the script cache.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
import redis

from rqfast import Queue
from rqfast.exceptions import DuplicateJobError, InvalidJobOperation
from rqfast.job import Job, JobStatus
from rqfast.registry import FailedJobRegistry
from rqfast.results import Result

try:
    import jobs
    from snapshot import REFERENCE, UNDER_TEST, assert_same, id_map_for, implementation, normalize, snapshot
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import (  # type: ignore[no-redef]
        REFERENCE,
        UNDER_TEST,
        assert_same,
        id_map_for,
        implementation,
        normalize,
        snapshot,
    )

pytestmark = pytest.mark.timeout(60)

# A scenario is a setup (writes with the connection; returns the jobs it made) and the calls queued
# into the pipeline (returns the jobs they made); the jobs, in order, map ids between the two runs.
Setup = Callable[[Any, redis.Redis], list[Any]]
Queued = Callable[[Any, redis.Redis, Any, list[Any]], list[Any]]


def _values(conn: redis.Redis) -> dict[str, Any]:
    return {key: entry['value'] for key, entry in snapshot(conn).items()}


def run_queued(
    conn: redis.Redis, impl: Any, setup: Setup, queued: Queued, transaction: bool, watch: bool = False
) -> list[Any]:
    """Setup, then queue the calls into a pipeline; nothing may be written before its execute()."""
    made = setup(impl, conn)
    before = _values(conn)
    with conn.pipeline(transaction=transaction) as pipe:
        if watch:
            pipe.watch('caller:watched')
        made += queued(impl, conn, pipe, made)
        if impl.name == UNDER_TEST:  # rq writes some things at once (see test_cancel_enqueue_dependents)
            assert _values(conn) == before, 'written before execute()'
        pipe.execute()
    return made


def run_both(conn: redis.Redis, setup: Setup, queued: Queued, transaction: bool, watch: bool = False) -> None:
    dumps = {}
    for name in (REFERENCE, UNDER_TEST):
        conn.flushdb()
        conn.script_flush()  # a queued script call must not depend on the script cache
        made = run_queued(conn, implementation(name), setup, queued, transaction, watch)
        dumps[name] = normalize(snapshot(conn), id_map_for(*made))
    conn.flushdb()
    assert dumps[REFERENCE], 'the scenario wrote nothing: it checks nothing'
    assert_same(dumps[REFERENCE], dumps[UNDER_TEST])


def nothing(impl: Any, conn: redis.Redis) -> list[Any]:
    return []


def finished_parent(impl: Any, conn: redis.Redis) -> list[Any]:
    return [impl.Queue('sync', connection=conn, is_async=False).enqueue(jobs.add, 1, 2)]


def queued_parent(impl: Any, conn: redis.Redis) -> list[Any]:
    return [impl.Queue('q', connection=conn).enqueue(jobs.noop)]


def parent_and_dependent(impl: Any, conn: redis.Redis) -> list[Any]:
    q = impl.Queue('q', connection=conn)
    parent = q.enqueue(jobs.noop)
    return [parent, q.enqueue(jobs.add, 1, 2, depends_on=parent)]


TRANSACTION = pytest.mark.parametrize('transaction', [True, False], ids=['multi', 'no_multi'])


# ---------------------------------------------------------------------------------------------------
# Enqueueing


@TRANSACTION
def test_enqueue_calls_in_a_pipeline_write_what_rq_writes(connection: redis.Redis, transaction: bool) -> None:
    def queued(impl: Any, conn: redis.Redis, pipe: Any, made: list[Any]) -> list[Any]:
        q, other = impl.Queue('q', connection=conn), impl.Queue('other', connection=conn)
        first = q.enqueue(jobs.add, 1, 2, pipeline=pipe)
        second = q.enqueue_call(jobs.echo, args=(1,), kwargs={'x': 2}, ttl=60, pipeline=pipe, at_front=True)
        third = other.enqueue(jobs.say_hello, 'you', job_id='mine', meta={'m': 1}, result_ttl=10, pipeline=pipe)
        created = q.create_job(jobs.noop, description='made first')
        fourth = q.enqueue_job(created, pipeline=pipe)
        pipe.set('caller:key', 'caller value')
        for job in (first, second, third, fourth):
            assert job.get_status(refresh=False) == JobStatus.QUEUED
        return [first, second, third, fourth]

    run_both(connection, nothing, queued, transaction)


@TRANSACTION
@pytest.mark.parametrize('parent', [finished_parent, queued_parent], ids=['finished', 'unfinished'])
def test_enqueue_with_dependency_in_a_pipeline_writes_what_rq_writes(
    connection: redis.Redis, transaction: bool, parent: Setup
) -> None:
    def queued(impl: Any, conn: redis.Redis, pipe: Any, made: list[Any]) -> list[Any]:
        child = impl.Queue('q', connection=conn).enqueue(jobs.add, 3, 4, depends_on=made[0], pipeline=pipe)
        expected = 'queued' if parent is finished_parent else 'deferred'
        assert child.get_status(refresh=False) == expected  # what the script will decide, as in rq
        return [child]

    run_both(connection, parent, queued, transaction)


@TRANSACTION
def test_enqueue_many_in_a_pipeline_writes_what_rq_writes(connection: redis.Redis, transaction: bool) -> None:
    def setup(impl: Any, conn: redis.Redis) -> list[Any]:
        return finished_parent(impl, conn) + queued_parent(impl, conn)

    def queued(impl: Any, conn: redis.Redis, pipe: Any, made: list[Any]) -> list[Any]:
        done, pending = made
        datas = [
            impl.Queue.prepare_data(jobs.add, (1, 2), job_id='a'),
            impl.Queue.prepare_data(jobs.add, (3, 4), job_id='b', at_front=True),
            impl.Queue.prepare_data(jobs.noop, job_id='c', depends_on=pending),
            impl.Queue.prepare_data(jobs.noop, job_id='d', depends_on=done, ttl=30),
        ]
        enqueued = impl.Queue('q', connection=conn).enqueue_many(datas, pipeline=pipe)
        assert [job.id for job in enqueued] == ['a', 'b', 'c', 'd']
        assert [job.get_status(refresh=False) for job in enqueued] == ['queued', 'queued', 'deferred', 'queued']
        return []

    run_both(connection, setup, queued, transaction)


@TRANSACTION
def test_scheduling_in_a_pipeline_writes_what_rq_writes(connection: redis.Redis, transaction: bool) -> None:
    when = datetime(2031, 1, 2, 3, 4, 5, tzinfo=timezone.utc)

    def queued(impl: Any, conn: redis.Redis, pipe: Any, made: list[Any]) -> list[Any]:
        q = impl.Queue('q', connection=conn)
        at = q.enqueue_at(when, jobs.add, 1, 2, pipeline=pipe)
        later = q.enqueue_in(timedelta(hours=1), jobs.noop, pipeline=pipe)
        scheduled = q.schedule_job(q.create_job(jobs.say_hello), when, pipeline=pipe)
        assert {job.get_status(refresh=False) for job in (at, later, scheduled)} == {JobStatus.SCHEDULED}
        return [at, later, scheduled]

    run_both(connection, nothing, queued, transaction)


def test_unique_enqueue_ignores_the_pipeline_as_rq_does(connection: redis.Redis) -> None:
    """RQ runs its check-and-save script at once for unique=True, so DuplicateJobError raises at the call."""
    for name in (REFERENCE, UNDER_TEST):
        impl = implementation(name)
        connection.flushdb()
        q = impl.Queue('q', connection=connection)
        with connection.pipeline() as pipe:
            q.enqueue(jobs.add, 1, 2, job_id='once', unique=True, pipeline=pipe)
            assert connection.exists('rq:job:once'), name
            with pytest.raises(impl.exceptions.DuplicateJobError):
                q.enqueue(jobs.add, 1, 2, job_id='once', unique=True, pipeline=pipe)
            with pytest.raises(impl.exceptions.DuplicateJobError):
                job = q.create_job(jobs.add, job_id='once')
                q.schedule_job(job, datetime.now(timezone.utc), unique=True, pipeline=pipe)
            pipe.execute()


# ---------------------------------------------------------------------------------------------------
# Cancel, delete and the plain writes


@TRANSACTION
def test_cancel_in_a_pipeline_writes_what_rq_writes(connection: redis.Redis, transaction: bool) -> None:
    def queued(impl: Any, conn: redis.Redis, pipe: Any, made: list[Any]) -> list[Any]:
        parent, child = made
        child.cancel(pipeline=pipe)
        parent.cancel(pipeline=pipe)
        if impl.name == UNDER_TEST:  # rq's handle reads its status back from the db: still deferred
            assert child.get_status(refresh=False) == JobStatus.CANCELED
        return []

    run_both(connection, parent_and_dependent, queued, transaction)


def test_cancel_enqueue_dependents_in_a_watched_pipeline_writes_what_rq_writes(connection: redis.Redis) -> None:
    """RQ's own test does this: WATCH, cancel(enqueue_dependents=True), the caller's SET, execute.

    rq reads the dependents and sets the status at once (the pipeline is in WATCH mode); rqfast switches
    the pipeline to MULTI, as rq's enqueue does, and queues its one script call.
    """

    def queued(impl: Any, conn: redis.Redis, pipe: Any, made: list[Any]) -> list[Any]:
        made[0].cancel(pipeline=pipe, enqueue_dependents=True)
        pipe.set('caller:watched', 'changed')
        return []

    run_both(connection, parent_and_dependent, queued, transaction=True, watch=True)


@TRANSACTION
def test_delete_in_a_pipeline_writes_what_rq_writes(connection: redis.Redis, transaction: bool) -> None:
    def setup(impl: Any, conn: redis.Redis) -> list[Any]:
        q = impl.Queue('q', connection=conn)
        parent = q.enqueue(jobs.noop)
        dependents = [q.enqueue(jobs.add, n, 1, depends_on=parent) for n in range(2)]
        other = q.enqueue(jobs.noop)
        other_child = q.enqueue(jobs.noop, depends_on=other)
        alone = q.enqueue(jobs.noop)
        return [parent, *dependents, other, other_child, alone]

    def queued(impl: Any, conn: redis.Redis, pipe: Any, made: list[Any]) -> list[Any]:
        parent, _, _, other, _, alone = made
        parent.delete(pipeline=pipe, delete_dependents=True)
        other.delete_dependents(pipeline=pipe)
        alone.delete(pipeline=pipe, remove_from_queue=False)
        return []

    run_both(connection, setup, queued, transaction)


@TRANSACTION
def test_plain_writes_in_a_pipeline_write_what_rq_writes(connection: redis.Redis, transaction: bool) -> None:
    def setup(impl: Any, conn: redis.Redis) -> list[Any]:
        q = impl.Queue('q', connection=conn)
        return [q.enqueue(jobs.noop), q.enqueue(jobs.add, 1, 2), q.enqueue(jobs.noop)]

    def queued(impl: Any, conn: redis.Redis, pipe: Any, made: list[Any]) -> list[Any]:
        first, second, third = made
        q = impl.Queue('q', connection=conn)
        q.remove(first, pipeline=pipe)
        second.meta['saved'] = True
        second.save(pipeline=pipe)
        third.set_status(impl.JobStatus.FAILED, pipeline=pipe)
        impl.FinishedJobRegistry('q', connection=conn).add(third, ttl=100, pipeline=pipe)
        impl.DeferredJobRegistry('q', connection=conn).add(first, pipeline=pipe)
        impl.FinishedJobRegistry('q', connection=conn).remove(second, pipeline=pipe)
        return []

    run_both(connection, setup, queued, transaction)


@TRANSACTION
def test_results_in_a_pipeline_write_what_rq_writes(connection: redis.Redis, transaction: bool) -> None:
    if not hasattr(Result, 'create'):
        pytest.skip("Result.create comes with the 'api' branch")
    started = datetime(2030, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    ended = started + timedelta(seconds=2)

    def queued(impl: Any, conn: redis.Redis, pipe: Any, made: list[Any]) -> list[Any]:
        first, second = made
        kind = impl.Result.Type
        ok = impl.Result.create(first, kind.SUCCESSFUL, 100, return_value={'x': 1}, worker_name='w', pipeline=pipe)
        assert ok.id is None  # the entry id comes with execute()
        impl.Result.create_failure(first, 50, 'Traceback: boom', pipeline=pipe, execution_id='e1')
        impl.Result.create_retried(second, -1, None, 'w', 'e2', started, ended, pipeline=pipe)
        impl.Result.create_max_retries_exceeded(second, None, 3, 'w', 'e3', started, ended, pipeline=pipe)
        return []

    run_both(connection, parent_and_dependent, queued, transaction)


# ---------------------------------------------------------------------------------------------------
# The caller's transaction holds: both backends


def test_a_multi_applies_the_callers_commands_and_rqfasts_together(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    connection.set('caller:watched', 'v1')
    with connection.pipeline() as pipe:
        pipe.watch('caller:watched')
        job = q.enqueue(jobs.add, 1, 2, pipeline=pipe)
        pipe.hset('caller:hash', 'job', job.id)
        connection.set('caller:watched', 'v2')  # someone else writes: the whole transaction must fail
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert not connection.exists('caller:hash', job.key, q.key)

    with connection.pipeline() as pipe:
        pipe.watch('caller:watched')
        job = q.enqueue(jobs.add, 1, 2, pipeline=pipe)
        pipe.hset('caller:hash', 'job', job.id)
        replies = pipe.execute()
    assert replies == [[b'queued'], 1]
    assert connection.hget('caller:hash', 'job') == job.id.encode()
    assert q.job_ids == [job.id]
    assert Job.fetch(job.id, connection=connection).get_status() == JobStatus.QUEUED


@pytest.mark.parametrize('transaction', [True, False], ids=['multi', 'no_multi'])
def test_queued_calls_never_depend_on_the_script_cache(connection: redis.Redis, transaction: bool) -> None:
    """The first call of a script in a batch carries its source; the pipeline reused after execute()
    (a new batch) carries it again, so a SCRIPT FLUSH in between changes nothing."""
    q = Queue('q', connection=connection)
    with connection.pipeline(transaction=transaction) as pipe:
        for _ in range(2):
            to_cancel = q.enqueue(jobs.noop)
            connection.script_flush()
            before = _values(connection)
            enqueued = [q.enqueue(jobs.add, n, 1, pipeline=pipe) for n in range(3)]
            to_cancel.cancel(pipeline=pipe)
            pipe.set('caller:key', 'v')
            sent = [args[0] for args, _ in pipe.command_stack]
            assert sent == ['EVAL', 'EVALSHA', 'EVALSHA', 'EVAL', 'SET']
            assert _values(connection) == before
            pipe.execute()
            assert q.job_ids[-3:] == [job.id for job in enqueued]
            assert to_cancel.get_status() == JobStatus.CANCELED


def test_registry_remove_and_delete_goes_into_the_pipeline(connection: redis.Redis) -> None:
    """rq deletes the job at once here (its remove() calls job.delete() without the pipeline); rqfast
    queues the delete with the rest, so the caller's execute() applies both or neither."""
    q = Queue('q', connection=connection)
    job = q.enqueue(jobs.noop)
    registry = FailedJobRegistry('q', connection=connection)
    registry.add(job, ttl=100)
    before = _values(connection)
    with connection.pipeline() as pipe:
        registry.remove(job, pipeline=pipe, delete_job=True)
        assert _values(connection) == before
        pipe.execute()
    assert not connection.exists(job.key)
    assert job.id not in registry
    assert q.job_ids == []


def test_a_failed_cancel_check_raises_before_anything_is_queued(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.noop)
    job.cancel()
    with connection.pipeline() as pipe:
        with pytest.raises(InvalidJobOperation):
            job.cancel(pipeline=pipe)
        assert len(pipe) == 0
    with connection.pipeline() as pipe:
        with pytest.raises(InvalidJobOperation):  # as rq: the status cannot be read
            Job('no-such-job', connection=connection).cancel(pipeline=pipe)


def test_a_sync_queue_runs_and_stores_at_the_call(connection: redis.Redis) -> None:
    """is_async=False runs the job at enqueue time, so it is stored then (the pipeline is not used)."""
    q = Queue('sync', connection=connection, is_async=False)
    with connection.pipeline() as pipe:
        job = q.enqueue(jobs.add, 1, 2, pipeline=pipe)
        assert len(pipe) == 0
    assert job.get_status() == JobStatus.FINISHED
    assert job.return_value() == 3


def test_unique_enqueue_raises_at_the_call(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    q.enqueue(jobs.noop, job_id='taken')
    with connection.pipeline() as pipe:
        with pytest.raises(DuplicateJobError):
            q.enqueue(jobs.noop, job_id='taken', unique=True, pipeline=pipe)
        assert len(pipe) == 0
