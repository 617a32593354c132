"""Where RQ 3.0 changed what dependents, deletes, groups and enqueue_many do: rqfast follows 3.0 by
default and 2.12 under RQFAST_COMPAT=2.12; each behaviour is checked in Redis, in both modes.

RQ 3.0's own suite (python -m tests.rq_suite --rq 3.0.0) pins the 3.0 side through the API; these pin
what it leaves out: the keys as Redis holds them, and the 2.12 side of each switch.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from rqfast import Queue, SimpleWorker, Worker, defaults, keys, maintenance
from rqfast.decorators import job as job_decorator
from rqfast.group import Group
from rqfast.job import Dependency, Job
from rqfast.results import Result
from rqfast.status import JobStatus


@pytest.fixture(params=['3.0', '2.12'])
def compat(request: pytest.FixtureRequest) -> Iterator[str]:
    saved = defaults.RQFAST_COMPAT
    defaults.set_compat(request.param)
    yield request.param
    defaults.set_compat(saved)


def failed_parent(conn: redis.Redis) -> tuple[Queue, Job]:
    q = Queue('q', connection=conn)
    parent = q.enqueue('tests.jobs.div_by_zero')
    SimpleWorker([q], connection=conn).work(burst=True)
    assert parent.get_status() == JobStatus.FAILED
    return q, parent


def test_allow_failure_dependent_of_a_failed_parent(redis_conn: redis.Redis, compat: str) -> None:
    """3.0: queued at once (its dependency already failed, which it allows); 2.12: deferred for good."""
    q, parent = failed_parent(redis_conn)

    child = q.enqueue('tests.jobs.noop', depends_on=Dependency(jobs=[parent], allow_failure=True))
    strict = q.enqueue('tests.jobs.noop', depends_on=Dependency(jobs=[parent]))

    if compat == '3.0':
        assert redis_conn.hget(child.key, 'status') == b'queued'
        assert redis_conn.lrange(q.key, 0, -1) == [child.id.encode()]
        assert redis_conn.zscore(keys.deferred_registry_key('q'), child.id) is None
    else:
        assert redis_conn.hget(child.key, 'status') == b'deferred'
        assert redis_conn.lrange(q.key, 0, -1) == []
        assert redis_conn.smembers(keys.dependents_key(parent.id)) == {child.id.encode(), strict.id.encode()}
    assert redis_conn.hget(strict.key, 'status') == b'deferred'  # no allow_failure: deferred in both


def test_delete_and_empty_drop_the_results_stream(redis_conn: redis.Redis, compat: str) -> None:
    """3.0: Job.delete, Queue.empty and Queue.delete delete rq:results:<id>; 2.12 leaves it to expire."""
    q = Queue('q', connection=redis_conn)
    deleted, emptied, other = (q.enqueue('tests.jobs.noop') for _ in range(3))
    for job in (deleted, emptied, other):
        Result.create_failure(job, ttl=-1, exc_string='earlier attempt')
    q.remove(other)  # not in the queue: empty() leaves it alone

    deleted.delete()
    q.empty()

    gone = compat == '3.0'
    assert redis_conn.exists(keys.results_key(deleted.id)) == (0 if gone else 1)
    assert redis_conn.exists(keys.results_key(emptied.id)) == (0 if gone else 1)
    assert redis_conn.exists(keys.results_key(other.id)) == 1
    assert not redis_conn.exists(deleted.key) and not redis_conn.exists(emptied.key)


def test_enqueue_many_duplicate_ids(redis_conn: redis.Redis, compat: str) -> None:
    """3.0: ValueError before anything is written; 2.12: both saved to the one key."""
    q = Queue('q', connection=redis_conn)
    datas = [Queue.prepare_data('tests.jobs.noop', job_id='same') for _ in range(2)]
    if compat == '3.0':
        with pytest.raises(ValueError, match='more than once'):
            q.enqueue_many(datas)
        assert redis_conn.keys('*') == []
    else:
        q.enqueue_many(datas)
        assert redis_conn.lrange(q.key, 0, -1) == [b'same', b'same']


def test_enqueue_many_deferred_ttl_and_at_front(redis_conn: redis.Redis, compat: str) -> None:
    """3.0: a deferred job expires after its ttl, and a met dependent honours at_front; 2.12: neither."""
    q = Queue('q', connection=redis_conn)
    unfinished = q.enqueue('tests.jobs.noop', job_id='unfinished')
    finished = q.enqueue('tests.jobs.noop', job_id='finished')
    redis_conn.hset(finished.key, 'status', 'finished')
    redis_conn.lrem(q.key, 0, 'finished')
    deferred, front = q.enqueue_many(
        [
            Queue.prepare_data('tests.jobs.noop', depends_on=unfinished, ttl=100),
            Queue.prepare_data('tests.jobs.noop', job_id='front', depends_on=finished, at_front=True),
        ]
    )

    assert redis_conn.hget(deferred.key, 'status') == b'deferred'
    if compat == '3.0':
        assert 0 < redis_conn.ttl(deferred.key) <= 100
        assert 0 < redis_conn.ttl(keys.dependencies_key(deferred.id)) <= 100
        assert redis_conn.lrange(q.key, 0, -1) == [b'front', b'unfinished']
    else:
        assert redis_conn.ttl(deferred.key) == -1
        assert redis_conn.lrange(q.key, 0, -1) == [b'unfinished', b'front']


def test_get_job_ids_of_length_zero(redis_conn: redis.Redis, compat: str) -> None:
    q = Queue('q', connection=redis_conn)
    job = q.enqueue('tests.jobs.noop')
    assert q.get_job_ids(length=0) == ([] if compat == '3.0' else [job.id])


def expired_group(conn: redis.Redis, q: Queue) -> Group:
    group = Group.create(connection=conn)
    jobs = group.enqueue_many(q, [Queue.prepare_data('tests.jobs.noop')])
    conn.delete(jobs[0].key)
    return group


def test_maintenance_pass_cleans_groups_once_per_window(redis_conn: redis.Redis, compat: str) -> None:
    """3.0: the whole pass takes rq:clean_groups (TTL: the maintenance interval less 1 s) and cleans the
    groups only if it got it; 2.12: every pass cleans them, and no lock key is written."""
    q = Queue('q', connection=redis_conn)
    worker = Worker([q], connection=redis_conn, maintenance_interval=30)
    first = expired_group(redis_conn, q)
    worker.clean_registries()
    assert not redis_conn.sismember(keys.GROUPS, first.name)

    second = expired_group(redis_conn, q)
    worker.clean_registries()
    if compat == '3.0':
        assert redis_conn.ttl(keys.GROUP_CLEANING_LOCK) == 29
        assert redis_conn.sismember(keys.GROUPS, second.name)  # this window's groups were cleaned already
        redis_conn.delete(keys.GROUP_CLEANING_LOCK)
        report = maintenance.clean_registries(redis_conn, ['q'], group_lock_ttl=29)
        assert report.groups_dropped == 1
    else:
        assert not redis_conn.exists(keys.GROUP_CLEANING_LOCK)
    assert not redis_conn.sismember(keys.GROUPS, second.name)


def test_clean_group_registries_is_one_script_call_under_the_lock(redis_conn: redis.Redis) -> None:
    q = Queue('q', connection=redis_conn)
    worker = Worker([q], connection=redis_conn, maintenance_interval=0)
    group = expired_group(redis_conn, q)
    worker.clean_group_registries()
    assert not redis_conn.sismember(keys.GROUPS, group.name)
    assert 0 < redis_conn.pttl(keys.GROUP_CLEANING_LOCK) <= 1000  # at least 1 s, even for a 0 interval


def test_move_dependents_to_ready_then_enqueue(redis_conn: redis.Redis) -> None:
    """RQ 3.0's two steps, each one script call: deferred -> rq:ready:<q> (ready_to_enqueue) -> queue."""
    q = Queue('q', connection=redis_conn)
    other = Queue('other', connection=redis_conn)
    parent = q.enqueue('tests.jobs.noop')
    here = q.enqueue('tests.jobs.noop', depends_on=parent)
    there = other.enqueue('tests.jobs.noop', depends_on=parent)
    redis_conn.hset(parent.key, 'status', 'finished')

    moved = q.move_dependents_to_ready(parent)

    assert moved == {'q': [here.id], 'other': [there.id]}
    for queue, job in ((q, here), (other, there)):
        assert redis_conn.hget(job.key, 'status') == b'ready_to_enqueue'
        assert redis_conn.zscore(keys.ready_registry_key(queue.name), job.id) is not None
        assert redis_conn.zscore(keys.deferred_registry_key(queue.name), job.id) is None
    assert not redis_conn.exists(keys.dependents_key(parent.id))
    assert redis_conn.lrange(other.key, 0, -1) == []

    q.enqueue_ready_jobs_by_queue(moved)
    q.enqueue_ready_jobs_by_queue(moved)  # a second drain finds nothing: no job is pushed twice

    assert redis_conn.lrange(q.key, 0, -1) == [parent.id.encode(), here.id.encode()]
    assert redis_conn.lrange(other.key, 0, -1) == [there.id.encode()]
    assert redis_conn.hget(there.key, 'status') == b'queued'
    assert not redis_conn.exists(keys.ready_registry_key('q'), keys.ready_registry_key('other'))


@pytest.mark.parametrize('multi', [False, True])
def test_move_dependents_to_ready_in_a_watched_pipeline(redis_conn: redis.Redis, multi: bool) -> None:
    """The caller's transaction holds the move: nothing moves before its execute(); the map is read now."""
    q = Queue('q', connection=redis_conn)
    parent = q.enqueue('tests.jobs.noop')
    child = q.enqueue('tests.jobs.noop', depends_on=parent)
    redis_conn.hset(parent.key, 'status', 'finished')
    with redis_conn.pipeline() as pipe:
        pipe.watch('some:key')
        if multi:
            pipe.multi()
        moved = q.move_dependents_to_ready(parent, pipeline=pipe)
        assert moved == {'q': [child.id]}
        assert redis_conn.hget(child.key, 'status') == b'deferred'
        pipe.execute()
    assert redis_conn.hget(child.key, 'status') == b'ready_to_enqueue'
    q.enqueue_ready_jobs_by_queue(moved)
    assert redis_conn.lrange(q.key, 0, -1) == [parent.id.encode(), child.id.encode()]


def test_cancel_answers_the_dependents_it_enqueued(redis_conn: redis.Redis) -> None:
    q = Queue('q', connection=redis_conn)
    parent = q.enqueue('tests.jobs.noop')
    child = q.enqueue('tests.jobs.noop', depends_on=parent)

    assert parent.cancel(enqueue_dependents=True) == {'q': [child.id]}
    assert redis_conn.lrange(q.key, 0, -1) == [child.id.encode()]
    assert not redis_conn.exists(keys.ready_registry_key('q'))  # pushed in the cancel's own call


def test_cancel_into_an_unwatched_pipeline(redis_conn: redis.Redis, compat: str) -> None:
    """3.0: enqueue_dependents wants a watched pipeline (ValueError, nothing written); 2.12 takes any."""
    q = Queue('q', connection=redis_conn)
    parent = q.enqueue('tests.jobs.noop')
    child = q.enqueue('tests.jobs.noop', depends_on=parent)
    with redis_conn.pipeline() as pipe:
        if compat == '3.0':
            with pytest.raises(ValueError, match='watched pipeline'):
                parent.cancel(pipeline=pipe, enqueue_dependents=True)
            assert redis_conn.hget(parent.key, 'status') == b'queued'
            return
        assert parent.cancel(pipeline=pipe, enqueue_dependents=True) == {}
        pipe.execute()
    assert redis_conn.hget(parent.key, 'status') == b'canceled'
    assert redis_conn.lrange(q.key, 0, -1) == [child.id.encode()]


def decorated() -> None:
    """A function for @job to decorate (never run)."""


def test_decorator_result_ttl(redis_conn: redis.Redis, compat: str) -> None:
    """3.0: no result_ttl leaves the worker's default (None stored); 2.12: 500 is stored."""
    q = Queue('q', connection=redis_conn)
    enqueued = job_decorator(q, connection=redis_conn)(decorated).enqueue()  # type: ignore[attr-defined]
    stored = redis_conn.hget(enqueued.key, 'result_ttl')
    assert stored == (None if compat == '3.0' else b'500')


def test_unreadable_meta_is_written_back_as_stored(redis_conn: redis.Redis, compat: str) -> None:
    q = Queue('q', connection=redis_conn)
    job = q.enqueue('tests.jobs.noop')
    unreadable = b'cnot_an_importable_module\nOwner\n.'
    redis_conn.hset(job.key, 'meta', unreadable)
    job.refresh()
    job.save_meta()
    assert (redis_conn.hget(job.key, 'meta') == unreadable) == (compat == '3.0')
