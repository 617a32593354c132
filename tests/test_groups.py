"""Groups (rqfast.group.Group), with rq as the oracle.

rq's Group and rqfast's make the same calls on a flushed db and the dumps are compared field by field
(tests/snapshot.py); a group enqueued by one is read by the other; the maintenance pass prunes a group
whose jobs are gone as RQ's workers do. On the real server and on fakeredis.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
import redis
import rq
import rq.group

from rqfast import Queue, SimpleWorker, keys, maintenance
from rqfast.exceptions import NoSuchGroupError, TimeoutFormatError
from rqfast.group import Group
from rqfast.job import Job

try:
    import jobs
    from snapshot import REFERENCE, UNDER_TEST, assert_same, id_map_for, implementation, normalize, snapshot
    from test_roundtrips_enqueue import round_trips  # noqa: F401  (a fixture)
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
    from tests.test_roundtrips_enqueue import round_trips  # type: ignore[no-redef]  # noqa: F401

pytestmark = pytest.mark.timeout(60)

Scenario = Callable[[Any, Any, redis.Redis], list[Any]]


def group_class(name: str) -> Any:
    return importlib.import_module(f'{name}.group').Group


def run_both(conn: redis.Redis, scenario: Scenario) -> dict[str, list[Any]]:
    """`scenario(impl, Group, conn)` with rq, then with the library under test: the same db after, and
    the same answers (the scenario returns them, job ids first for the id map)."""
    dumps: dict[str, Any] = {}
    answers: dict[str, list[Any]] = {}
    for name in (REFERENCE, UNDER_TEST):
        conn.flushdb()
        answers[name] = scenario(implementation(name), group_class(name), conn)
        ids = [item for item in answers[name] if hasattr(item, 'id')]
        dumps[name] = normalize(snapshot(conn), id_map_for(*ids))
    conn.flushdb()
    assert dumps[REFERENCE], 'the scenario wrote nothing: it checks nothing'
    assert_same(dumps[REFERENCE], dumps[UNDER_TEST])
    plain = {name: [a for a in found if not hasattr(a, 'id')] for name, found in answers.items()}
    assert plain[REFERENCE] == plain[UNDER_TEST]
    return answers


def mixed_datas(impl: Any, conn: redis.Redis, q: Any) -> list[Any]:
    """Plain, at_front, with TTLs, and with an unmet and a met dependency."""
    done = impl.Queue('sync', connection=conn, is_async=False).enqueue(jobs.add, 1, 2, job_id='done')
    pending = q.enqueue(jobs.noop, job_id='pending')
    return [
        q.prepare_data(jobs.add, (1, 2), job_id='g-1'),
        q.prepare_data(jobs.add, (3, 4), job_id='g-2', at_front=True, meta={'m': 2}),
        q.prepare_data(jobs.echo, (5,), {'k': 6}, job_id='g-3', timeout=30, result_ttl=10, ttl=70),
        q.prepare_data(jobs.add, (7, 8), job_id='g-4', depends_on=pending),
        q.prepare_data(jobs.add, (9, 10), job_id='g-5', depends_on=done.id),
    ]


# ---------------------------------------------------------------------------------------------------
# The same calls, the same db


def test_group_enqueue_many_writes_what_rq_writes(connection: redis.Redis) -> None:
    def scenario(impl: Any, group_cls: Any, conn: redis.Redis) -> list[Any]:
        q = impl.Queue('q', connection=conn)
        group = group_cls.create(connection=conn, name='g')
        enqueued = group.enqueue_many(q, mixed_datas(impl, conn, q))
        more = group.enqueue_many(q, [q.prepare_data(jobs.noop, job_id='g-6')])
        return [*sorted(job.id for job in enqueued + more), [job.group_id for job in enqueued + more]]

    answers = run_both(connection, scenario)
    assert answers[UNDER_TEST][-1] == ['g'] * 6


def test_queue_enqueue_many_with_group_id_only_tags_the_jobs_as_rq_does(connection: redis.Redis) -> None:
    def scenario(impl: Any, group_cls: Any, conn: redis.Redis) -> list[Any]:
        q = impl.Queue('q', connection=conn)
        enqueued = q.enqueue_many([q.prepare_data(jobs.add, (1, 2), job_id='t-1')], group_id='g')
        return [enqueued[0].group_id, conn.exists('rq:group:g', 'rq:groups')]

    answers = run_both(connection, scenario)
    assert answers[UNDER_TEST] == ['g', 0]


def test_group_upkeep_writes_and_answers_what_rq_does(connection: redis.Redis) -> None:
    """cleanup, get_jobs, delete_job, Job.delete, all and clean_registries, with jobs gone under them."""

    def scenario(impl: Any, group_cls: Any, conn: redis.Redis) -> list[Any]:
        q = impl.Queue('q', connection=conn)
        one = group_cls.create(connection=conn, name='one')
        one.enqueue_many(q, [q.prepare_data(jobs.noop, job_id=f'one-{i}') for i in range(4)])
        two = group_cls.create(connection=conn, name='two')
        two.enqueue_many(q, [q.prepare_data(jobs.noop, job_id='two-0')])
        three = group_cls.create(connection=conn, name='three')
        three.enqueue_many(q, [q.prepare_data(jobs.noop, job_id='three-0')])
        conn.delete('rq:job:one-0', 'rq:job:two-0', 'rq:job:three-0')  # as if they had expired
        answers: list[Any] = []
        one.cleanup()
        answers.append(sorted(job.id for job in one.get_jobs()))
        impl.Job.fetch('one-1', connection=conn).delete()
        one.delete_job('one-2')
        answers.append(sorted(m.decode() for m in conn.smembers(one.key)))
        three.cleanup()  # its set goes; the name stays in rq:groups until all() or maintenance
        answers.append(sorted(m.decode() for m in conn.smembers('rq:groups')))
        answers.append(sorted(group.name for group in group_cls.all(conn)))
        answers.append(sorted(m.decode() for m in conn.smembers('rq:groups')))
        group_cls.clean_registries(conn)
        answers.append(sorted(m.decode() for m in conn.smembers('rq:groups')))
        with pytest.raises(importlib.import_module(f'{impl.name}.exceptions').NoSuchGroupError):
            group_cls.fetch('two', conn)
        answers.append(repr(group_cls.fetch('one', conn)))
        return answers

    answers = run_both(connection, scenario)
    assert answers[UNDER_TEST] == [
        ['one-1', 'one-2', 'one-3'],
        ['one-3'],
        ['one', 'three', 'two'],
        ['one', 'two'],
        ['one', 'two'],
        ['one'],
        'Group(id=one)',
    ]


def test_group_enqueue_many_into_a_pipeline_writes_nothing_before_execute(connection: redis.Redis) -> None:
    def scenario(impl: Any, group_cls: Any, conn: redis.Redis) -> list[Any]:
        q = impl.Queue('q', connection=conn)
        group = group_cls.create(connection=conn, name='g')
        with conn.pipeline() as pipe:
            datas = [q.prepare_data(jobs.add, (i, i), job_id=f'p-{i}') for i in range(3)]
            enqueued = group.enqueue_many(q, datas, pipe)
            queued = impl.name == 'rqfast'  # RQ executes the caller's pipeline in Group.enqueue_many
            if queued:
                assert conn.dbsize() == 0
                group.delete_job('p-0', pipeline=pipe)
                assert conn.dbsize() == 0
            pipe.execute()
        if not queued:
            group.delete_job('p-0')
        return [*enqueued]

    run_both(connection, scenario)


# ---------------------------------------------------------------------------------------------------
# One reads what the other wrote


@pytest.mark.parametrize('writer', ['rq', 'rqfast'])
def test_a_group_one_library_enqueued_the_other_reads(connection: redis.Redis, writer: str) -> None:
    reader = 'rqfast' if writer == 'rq' else 'rq'
    write_q = implementation(writer).Queue('q', connection=connection)
    written = group_class(writer).create(connection=connection, name='shared')
    ids = [job.id for job in written.enqueue_many(write_q, [write_q.prepare_data(jobs.add, (i, 1)) for i in range(3)])]

    read_cls = group_class(reader)
    group = read_cls.fetch('shared', connection)
    found = group.get_jobs()
    assert sorted(job.id for job in found) == sorted(ids)
    assert {job.group_id for job in found} == {'shared'}
    assert [g.name for g in read_cls.all(connection)] == ['shared']

    read_q = implementation(reader).Queue('q', connection=connection)
    added = group.enqueue_many(read_q, [read_q.prepare_data(jobs.noop, job_id='from-reader')])
    assert sorted(job.id for job in group_class(writer).fetch('shared', connection).get_jobs()) == sorted(
        [*ids, added[0].id]
    )


def test_get_jobs_answers_rqfast_jobs(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    group = Group.create(connection)
    assert len(group.name) == 32  # uuid4().hex, as RQ names groups
    enqueued = group.enqueue_many(q, [Queue.prepare_data(jobs.add, (1, 2))])
    fetched = Group.fetch(group.name, connection).get_jobs()
    assert fetched == enqueued and isinstance(fetched[0], Job)
    assert Job.fetch(enqueued[0].id, connection=connection).group_id == group.name
    assert Group.get_key('x') == 'rq:group:x' == Group.REDIS_GROUP_NAME_PREFIX + 'x'
    assert Group.REDIS_GROUP_KEY == keys.GROUPS


def test_fetch_of_a_group_without_jobs_raises(connection: redis.Redis) -> None:
    with pytest.raises(NoSuchGroupError):
        Group.fetch('nothing', connection)
    assert Group.create(connection, name='empty').get_jobs() == []
    assert Group.all(connection) == []


# ---------------------------------------------------------------------------------------------------
# One script call per chunk, the group writes in it


def test_group_enqueue_many_is_one_call_per_chunk(redis_conn: redis.Redis, round_trips: Any) -> None:
    q = Queue('q', connection=redis_conn)
    group = Group.create(redis_conn, name='big')
    datas = [Queue.prepare_data(jobs.noop) for _ in range(1001)]
    group.enqueue_many(q, datas[:1])  # loads the script
    with round_trips() as counted:
        group.enqueue_many(q, datas[1:2])
    assert counted.count == 1, counted
    with round_trips() as counted:
        enqueued = group.enqueue_many(q, datas[2:])
    assert counted.count == 1, counted
    assert redis_conn.scard(group.key) == 1001 == len(enqueued) + 2
    assert redis_conn.smembers('rq:groups') == {b'big'}


def test_bad_input_writes_nothing_not_even_the_group(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    group = Group.create(connection, name='g')
    with pytest.raises(TimeoutFormatError):
        group.enqueue_many(q, [Queue.prepare_data(jobs.noop, job_id='ok'), Queue.prepare_data(jobs.noop, timeout='x')])
    assert connection.dbsize() == 0


# ---------------------------------------------------------------------------------------------------
# Maintenance: step 7 of RQ's pass


def _maintain(impl_name: str, conn: redis.Redis) -> None:
    if impl_name == 'rq':
        rq.SimpleWorker(['q'], connection=conn).run_maintenance_tasks()
    else:
        maintenance.clean_registries(conn, ['q'])


def test_maintenance_prunes_groups_as_rq_workers_do(connection: redis.Redis) -> None:
    def scenario(impl: Any, group_cls: Any, conn: redis.Redis) -> list[Any]:
        q = impl.Queue('q', connection=conn)
        group_cls.create(conn, name='gone').enqueue_many(q, [q.prepare_data(jobs.noop, job_id='gone-0')])
        group_cls.create(conn, name='half').enqueue_many(
            q, [q.prepare_data(jobs.noop, job_id='half-0'), q.prepare_data(jobs.noop, job_id='half-1')]
        )
        conn.delete('rq:job:gone-0', 'rq:job:half-0')  # expired
        _maintain(impl.name, conn)
        return [sorted(m.decode() for m in conn.smembers('rq:groups')), conn.exists('rq:group:gone')]

    answers = run_both(connection, scenario)
    assert answers[UNDER_TEST] == [['half'], 0]


def test_maintenance_report_counts_the_group_step_in_one_call(redis_conn: redis.Redis, round_trips: Any) -> None:
    q = Queue('q', connection=redis_conn)
    datas = [Queue.prepare_data(jobs.noop, job_id=f'a-{i}') for i in range(3)]
    Group.create(redis_conn, name='a').enqueue_many(q, datas)
    Group.create(redis_conn, name='b').enqueue_many(q, [Queue.prepare_data(jobs.noop, job_id='b-0')])
    maintenance.clean_registries(redis_conn, ['q'])  # loads the script; nothing to prune yet
    redis_conn.delete('rq:job:a-0', 'rq:job:a-1', 'rq:job:b-0')
    with round_trips() as counted:
        report = maintenance.clean_registries(redis_conn, ['q'])
    assert counted.count == 1, counted
    assert (report.group_jobs_pruned, report.groups_dropped) == (3, 1)
    assert redis_conn.smembers('rq:group:a') == {b'a-2'}
    assert redis_conn.smembers('rq:groups') == {b'a'}


def test_started_only_cleanup_leaves_groups_alone(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    Group.create(connection, name='g').enqueue_many(q, [Queue.prepare_data(jobs.noop, job_id='g-0')])
    connection.delete('rq:job:g-0')
    q.started_job_registry.cleanup()
    assert connection.smembers('rq:group:g') == {b'g-0'}


@pytest.mark.parametrize('impl_name', ['rq', 'rqfast'])
def test_a_worker_deleting_a_result_ttl_0_job_takes_it_out_of_its_group(
    connection: redis.Redis, impl_name: str
) -> None:
    impl = implementation(impl_name)
    q = impl.Queue('q', connection=connection)
    group = group_class(impl_name).create(connection, name='g')
    group.enqueue_many(
        q, [q.prepare_data(jobs.add, (1, 2), job_id='brief', result_ttl=0), q.prepare_data(jobs.noop, job_id='kept')]
    )
    worker_cls = rq.SimpleWorker if impl_name == 'rq' else SimpleWorker
    worker_cls([q], connection=connection).work(burst=True)
    assert connection.smembers('rq:group:g') == {b'kept'}
    assert rq.group.Group.fetch('g', connection).get_jobs()[0].id == 'kept'
