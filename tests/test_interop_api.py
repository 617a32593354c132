"""RQ is the oracle for the public calls beyond enqueue: dependencies, dequeueing, registries, results,
repeats, retries and the scheduler's steps. Each scenario runs once with rq and once with rqfast on a
flushed db; the two dumps are compared key by key (tests/snapshot.py), and the answers the calls give
are compared too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import pytest
import redis

try:
    import jobs
    from snapshot import REFERENCE, UNDER_TEST, implementation, run_both
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import REFERENCE, UNDER_TEST, implementation, run_both  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

Scenario = Callable[[Any, redis.Redis], tuple[list[Any], Any]]


def saved(impl: Any, conn: redis.Redis, status: str | None = None) -> Any:
    job = impl.Job.create(jobs.add, args=(1, 2), connection=conn, status=status and impl.JobStatus(status))
    job.save()
    return job


# --- dependencies


def test_register_dependency_and_cleanup_write_what_rq_writes(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        parents = [saved(impl, conn), saved(impl, conn)]
        child = impl.Job.create(jobs.add, args=(3, 4), connection=conn, depends_on=parents, origin='q')
        child.register_dependency()
        child.save()
        child.cleanup(ttl=100)
        parents[0].cleanup(ttl=50)
        parents[1].cleanup(ttl=-1)
        return [*parents, child], sorted(child.dependency_ids) == sorted(p.id for p in parents)

    run_both(redis_conn, scenario)


@pytest.mark.parametrize(
    'statuses, allow_failure',
    [
        (['finished', 'finished'], False),
        (['finished', 'started'], False),
        (['failed', 'finished'], False),
        (['failed', 'finished'], True),
        (['canceled', 'finished'], False),
        (['stopped', 'finished'], True),
    ],
)
def test_dependencies_are_met_answers_as_rq(redis_conn: redis.Redis, statuses: list[str], allow_failure: bool) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        parents = [saved(impl, conn, status=status) for status in statuses]
        dependency = impl.Dependency(parents, allow_failure=allow_failure)
        child = impl.Queue('q', connection=conn).enqueue(jobs.add, 1, 2, depends_on=dependency)
        answers = [
            child.dependencies_are_met(),
            child.dependencies_are_met(parent_job=parents[0]),
            child.dependencies_are_met(parent_job=parents[1], exclude_job_id=parents[1].id),
            child.dependencies_are_met(exclude_job_id=parents[1].id),
        ]
        return [*parents, child], answers

    run_both(redis_conn, scenario)


def test_dependencies_are_met_with_a_deleted_dependency(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        parent = saved(impl, conn, status='started')
        child = impl.Queue('q', connection=conn).enqueue(jobs.add, 1, 2, depends_on=parent)
        before = child.dependencies_are_met()
        conn.delete(parent.key)
        return [parent, child], [before, child.dependencies_are_met()]

    run_both(redis_conn, scenario)


@pytest.mark.parametrize('parent_status', ['finished', 'failed', 'canceled', 'stopped'])
def test_enqueue_dependents_writes_what_rq_writes(redis_conn: redis.Redis, parent_status: str) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        parent = saved(impl, conn, status='started')
        other = saved(impl, conn, status='started')
        q1, q2, q3 = (impl.Queue(name, connection=conn) for name in ('q1', 'q2', 'q3'))
        only_parent = q1.enqueue(jobs.add, 1, 2, depends_on=parent)  # one enqueued dependent per queue:
        at_front = q2.enqueue(jobs.add, 3, 4, depends_on=impl.Dependency(parent, enqueue_at_front=True))
        tolerant = q3.enqueue(jobs.add, 5, 6, depends_on=impl.Dependency(parent, allow_failure=True))
        waits_for_other = q1.enqueue(jobs.add, 7, 8, depends_on=[parent, other])
        q2.enqueue(jobs.noop)
        parent.set_status(parent_status)
        q1.enqueue_dependents(parent)  # (RQ enqueues them in set order)
        jobs_ = [parent, other, only_parent, at_front, tolerant, waits_for_other]
        return jobs_, [job.get_status() for job in jobs_]

    run_both(redis_conn, scenario)


def test_enqueue_dependents_with_exclude_and_local_status(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        parent = saved(impl, conn, status='started')
        other = saved(impl, conn, status='started')
        q = impl.Queue('q', connection=conn)
        child = q.enqueue(jobs.add, 1, 2, depends_on=[parent, other])
        q.enqueue_dependents(parent, exclude_job_id=other.id, refresh_job_status=True)  # parent is started
        first = child.get_status()
        parent.set_status(impl.JobStatus.FINISHED)  # in Redis...
        parent._status = impl.JobStatus.STARTED  # ...not in memory
        q.enqueue_dependents(parent, exclude_job_id=other.id, refresh_job_status=False)  # ...judged as started
        second = child.get_status()
        q.enqueue_dependents(parent, exclude_job_id=other.id)
        return [parent, other, child], [first, second, child.get_status()]

    run_both(redis_conn, scenario)


# --- the queue's dequeueing helpers


def test_push_pop_and_dequeue_any_as_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        foo, bar = impl.Queue('foo', connection=conn), impl.Queue('bar', connection=conn)
        foo.push_job_id('missing-1')
        enqueued = [foo.enqueue(jobs.add, 1, 2), bar.enqueue(jobs.add, 3, 4), foo.enqueue(jobs.add, 5, 6)]
        index = {job.id: n for n, job in enumerate(enqueued)}
        bar.push_job_id('front', at_front=True)
        answers: list[Any] = [bar.pop_job_id()]
        with pytest.raises(ValueError):
            impl.Queue.dequeue_any([foo], timeout=0, connection=conn)
        for queues in ([foo], [bar, foo], [foo, bar], [foo, bar]):
            found = impl.Queue.dequeue_any(queues, timeout=None, connection=conn)
            answers.append(found and (index[found[0].id], found[1].name, found[0].get_status()))
        with pytest.raises(impl.exceptions.DequeueTimeout):
            impl.Queue.dequeue_any([foo, bar], timeout=1, connection=conn)
        return enqueued, answers

    run_both(redis_conn, scenario)


def test_blocking_dequeue_from_one_queue_parks_the_id_as_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        q = impl.Queue('q', connection=conn)
        job = q.enqueue(jobs.add, 1, 2)
        found = impl.Queue.dequeue_any([q], timeout=1, connection=conn)
        return [job], (found[0].id == job.id, found[1] == q)

    run_both(redis_conn, scenario)


def test_queues_compare_only_with_queues(connection: redis.Redis) -> None:
    from rqfast import Queue

    assert Queue('b', connection=connection) > Queue('a', connection=connection)
    with pytest.raises(TypeError):
        _ = Queue('a', connection=connection) == 'a'


# --- repeats and retries


@pytest.mark.parametrize('interval', [0, 30])
def test_repeat_schedule_writes_what_rq_writes(redis_conn: redis.Redis, interval: int) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        q = impl.Queue('q', connection=conn)
        job = q.enqueue(jobs.add, 1, 2, repeat=impl.Repeat(times=2, interval=interval))
        q.empty()
        impl.Repeat.schedule(job, q)
        impl.Repeat.schedule(job, q)
        with pytest.raises(ValueError):
            impl.Repeat.schedule(job, q)
        return [job], job.repeats_left

    run_both(redis_conn, scenario)


@pytest.mark.parametrize('retry_kwargs', [{'max': 2}, {'max': 2, 'interval': 5}, {'max': 2, 'enqueue_at_front': True}])
def test_job_retry_writes_what_rq_writes(redis_conn: redis.Redis, retry_kwargs: dict[str, Any]) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        q = impl.Queue('q', connection=conn)
        first = q.enqueue(jobs.noop)
        job = q.enqueue(jobs.div_by_zero, retry=impl.Retry(**retry_kwargs))
        with conn.pipeline() as pipe:
            job.retry(q, pipe)
            pipe.execute()
        return [first, job], (job.retries_left, job.get_status())

    run_both(redis_conn, scenario)


# --- registries and results


def test_failed_registry_add_writes_what_rq_writes(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        q = impl.Queue('q', connection=conn)
        registry = impl.FailedJobRegistry(queue=q)
        a, b = q.enqueue(jobs.add, 1, 2), q.enqueue(jobs.add, 3, 4)
        registry.add(a, exc_string='Traceback: boom')
        registry.add(b, ttl=5)
        return [a, b], (a.id in registry, b.id in registry)

    run_both(redis_conn, scenario)


def test_started_registry_executions_and_scheduled_remove_jobs_as_rq(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        q = impl.Queue('q', connection=conn)
        job = q.enqueue(jobs.add, 1, 2)
        execution = importlib.import_module(f'{impl.name}.executions').Execution
        started = impl.StartedJobRegistry(queue=q)
        with conn.pipeline() as pipe:
            started.add_execution(execution(id='x1', job_id=job.id, connection=conn), pipeline=pipe, ttl=-1)
            live = [execution.create(job, 60, pipe), execution.create(job, 60, pipe)]
            for one in live:
                started.add_execution(one, pipeline=pipe, ttl=5)
            pipe.execute()
        started.remove_execution(execution(id='x1', job_id=job.id, connection=conn))
        member_after_one = len(started.get_job_and_execution_ids(cleanup=False))
        started.remove_executions(job)
        scheduled = impl.ScheduledJobRegistry(queue=q)
        conn.zadd(scheduled.key, {'due': 1, 'later': 2**40})
        with pytest.warns(DeprecationWarning):
            scheduled.remove_jobs()
        with pytest.raises(NotImplementedError):
            impl.CanceledJobRegistry(queue=q).get_expired_job_ids()
        return [job, *[one.id for one in live]], (member_after_one, started.get_job_and_execution_ids(cleanup=False))

    run_both(redis_conn, scenario)


def test_results_created_by_hand_are_what_rq_writes(redis_conn: redis.Redis) -> None:
    from datetime import datetime, timezone

    started = datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=timezone.utc)

    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        job = impl.Queue('q', connection=conn).enqueue(jobs.add, 1, 2)
        result = impl.Result
        result.create(job, result.Type.SUCCESSFUL, ttl=100, return_value={'a': 1}, worker_name='w')
        result.create_failure(job, ttl=-1, exc_string='boom', execution_id='x', execution_started_at=started)
        result.create_retried(job, 50, 'again', 'w', 'x', started, started)
        result.create_max_retries_exceeded(job, None, None, 'w', 'x', started, started)
        latest = result.fetch_latest(job)
        return [job], (latest.type.value, result.fetch(job), [r.type.value for r in result.all(job)])

    run_both(redis_conn, scenario)


def test_results_get_key_is_rqs() -> None:
    import rq.results

    from rqfast.results import get_key

    assert get_key('abc') == rq.results.get_key('abc')


# --- the job's own calls


def test_prepare_for_execution_writes_what_rq_writes(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        job = saved(impl, conn)
        with conn.pipeline() as pipe:
            job.prepare_for_execution('worker-1', pipe)
            pipe.execute()
        return [job], job.get_status()

    run_both(redis_conn, scenario)


def test_a_job_is_serialized_when_stored_not_when_created(connection: redis.Redis) -> None:
    import json

    from rqfast import Job

    number = jobs.Number(2)
    job = Job.create(number.div, args=(4,), serializer=json, connection=connection)  # json cannot encode Number

    assert (job.func, job.instance, job.args) == (number.div, number, (4,))
    with pytest.raises(TypeError):
        job.save()
    assert not connection.exists(job.key)


# --- the scheduler's steps and the worker records


def test_scheduler_steps_write_what_rqs_write(redis_conn: redis.Redis) -> None:
    from datetime import datetime, timezone

    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        scheduler_class = importlib.import_module(f'{impl.name}.scheduler').RQScheduler
        q = impl.Queue('q', connection=conn)
        due = q.enqueue_at(datetime(2020, 1, 1, tzinfo=timezone.utc), jobs.add, 1, 2)
        later = q.enqueue_at(datetime(2100, 1, 1, tzinfo=timezone.utc), jobs.add, 3, 4)
        conn.set('rq:scheduler-lock:taken', 'someone-else', ex=500)
        ours = scheduler_class(['q', 'taken', 'free'], connection=conn, name='s1')
        answers: list[Any] = [ours.should_reacquire_locks, sorted(ours.acquire_locks())]
        answers.append(ours.should_reacquire_locks)
        ours.register_birth()
        conn.delete('rq:scheduler-lock:free')
        ours.heartbeat()
        answers.append(sorted(ours.acquired_locks))
        ours.enqueue_scheduled_jobs()
        ours.release_locks()
        answers.append(sorted(ours.acquired_locks))
        names = conn.hget(ours.key, 'queues').decode().split(',')  # RQ joins a set, in set order
        conn.hset(ours.key, 'queues', ','.join(sorted(names)))
        return [due, later], answers

    run_both(redis_conn, scenario)


def test_scheduler_stop_releases_its_locks_and_hash_as_rqs(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        scheduler_class = importlib.import_module(f'{impl.name}.scheduler').RQScheduler
        conn.set('rq:scheduler-lock:taken', 'someone-else', ex=500)
        ours = scheduler_class(['q', 'taken'], connection=conn, name='s1')
        ours.acquire_locks()
        ours.register_birth()
        ours.stop()
        fetched_missing = False
        try:
            scheduler_class.fetch('s1', conn)
        except impl.exceptions.SchedulerNotFound:
            fetched_missing = True
        return [], (ours.status.value, fetched_missing)

    run_both(redis_conn, scenario)


def test_worker_count_all_and_refresh_answer_as_rqs(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        worker_class = importlib.import_module(f'{impl.name}.worker').Worker
        foo, bar = impl.Queue('foo', connection=conn), impl.Queue('bar', connection=conn)
        worker = worker_class([foo, bar], name='w1', connection=conn)
        worker.register_birth()
        conn.hset(worker.key, mapping={'successful_job_count': 3, 'total_working_time': 1.5})
        seen = worker_class.find_by_key(worker.key, connection=conn)
        seen.refresh()
        with pytest.raises(ValueError):
            worker_class.count()
        answers = [
            worker_class.count(connection=conn),
            worker_class.count(queue=foo),
            [w.name for w in worker_class.all(queue=bar)],
            sorted(worker_class.all_keys(connection=conn)),
            (seen.successful_job_count, seen.total_working_time, [q.name for q in seen.queues], seen.pid),
        ]
        worker.register_death()
        return [], answers

    answers = {}
    for name in (REFERENCE, UNDER_TEST):  # the answers only: the worker hashes differ (version, state)
        redis_conn.flushdb()
        answers[name] = scenario(implementation(name), redis_conn)[1]
    redis_conn.flushdb()
    assert answers[REFERENCE] == answers[UNDER_TEST]


def test_intermediate_queue_of_a_queue_is_rqs_view(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        q = impl.Queue('q', connection=conn)
        job = q.enqueue(jobs.add, 1, 2)
        impl.Queue.dequeue_any([q], timeout=None, connection=conn)
        return [job], (q.intermediate_queue.key, q.intermediate_queue.get_job_ids() == [job.id])

    run_both(redis_conn, scenario)
