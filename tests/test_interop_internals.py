"""RQ is the oracle for the RQ internals that RQ's own tests (and some apps) call: `Queue._enqueue_job`,
`Queue._prepare_for_queue`, `Job._handle_retry_result`, `Job.perform` outside a worker, and the
started registry's cleanup. Each scenario runs once with rq and once with rqfast on a flushed db; the
dumps are compared key by key (tests/snapshot.py), and the answers the calls give are compared too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import redis
import rq

try:
    import jobs
    from snapshot import REFERENCE, UNDER_TEST, implementation, run_both
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import REFERENCE, UNDER_TEST, implementation, run_both  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

Scenario = Callable[[Any, redis.Redis], tuple[list[Any], Any]]


# --- Queue._enqueue_job / _prepare_for_queue


@pytest.mark.parametrize('at_front', [False, True])
def test_enqueue_job_without_dependency_check_writes_what_rq_writes(redis_conn: redis.Redis, at_front: bool) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        q = impl.Queue('q', connection=conn)
        other = q.enqueue(jobs.add, 0, 0)
        parent = q.enqueue(jobs.add, 1, 2)
        child = q.enqueue(jobs.add, 3, 4, depends_on=parent)
        assert child.get_status() == 'deferred'
        q._enqueue_job(child, at_front=at_front)
        answer = (child.get_status(), q.job_ids.index(child.id), child.id in q.deferred_job_registry)
        return [other, parent, child], answer

    run_both(redis_conn, scenario)


def test_enqueue_job_of_a_saved_deferred_job_leaves_the_deferred_registry(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        q = impl.Queue('q', connection=conn)
        other = q.enqueue(jobs.add, 0, 0)  # RQ's _enqueue_job does not add the queue to rq:queues; rqfast's does
        job = impl.Job.create(jobs.add, args=(1, 2), connection=conn, origin='q', status=impl.JobStatus.DEFERRED)
        job.save()
        q.deferred_job_registry.add(job)
        q._enqueue_job(job)
        return [other, job], (job.get_status(), q.job_ids[1:] == [job.id], job.id in q.deferred_job_registry)

    run_both(redis_conn, scenario)


def test_prepare_for_queue_sets_what_rqs_does_and_writes_nothing(redis_conn: redis.Redis) -> None:
    answers = []
    for name in (REFERENCE, UNDER_TEST):
        redis_conn.flushdb()
        impl = implementation(name)
        q = impl.Queue('q', connection=redis_conn, default_timeout=77)
        job = q.create_job(jobs.add, args=(1, 2))
        q._prepare_for_queue(job)
        assert job.enqueued_at is not None
        answers.append((job.origin, job.timeout, job.get_status(refresh=False), redis_conn.exists(job.key)))
    assert answers[0] == answers[1] == ('q', 77, 'queued', 0)


# --- Job._handle_retry_result


class ComparableRetry(rq.Retry):
    """RQ's Retry with an __eq__, so the snapshots' unpickled return values compare by value."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    __hash__ = None  # type: ignore[assignment]


@pytest.mark.parametrize('interval', [0, 10])
def test_handle_retry_result_writes_what_rq_writes(redis_conn: redis.Redis, interval: int) -> None:
    from datetime import datetime, timedelta, timezone

    started = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    retry = ComparableRetry(max=2, interval=interval)  # one class for both: the pickled return values match

    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        q = impl.Queue('q', connection=conn)
        job = q.enqueue(jobs.add, 1, 2, failure_ttl=300)
        with conn.pipeline() as pipe:
            job._handle_retry_result(q, pipe, retry, 'exec-1', started, started + timedelta(seconds=1))
            pipe.execute()
        job.refresh()
        result = job.latest_result()
        answer = (
            job.get_status(),
            job.number_of_retries,
            result.type.name,
            result.execution_id,
            q.job_ids == [job.id] * (2 - bool(interval)),
        )
        return [job], answer

    run_both(redis_conn, scenario)


# --- Job.perform() outside a worker


def test_perform_outside_a_worker_persists_the_job_as_rqs(redis_conn: redis.Redis) -> None:
    def scenario(impl: Any, conn: redis.Redis) -> tuple[list[Any], Any]:
        job = impl.Queue('q', connection=conn).enqueue(jobs.add, 1, 2, ttl=100)
        assert conn.ttl(job.key) > 0
        return [job], (job.perform(), conn.ttl(job.key), job.get_ttl())

    run_both(redis_conn, scenario)


def test_a_worker_does_not_persist_the_job_it_runs_again(connection: redis.Redis) -> None:
    """The claim script has persisted it: perform() under run_job sends nothing (one round trip per job)."""
    from rqfast import Queue
    from rqfast.execution import run_job

    job = Queue('q', connection=connection).enqueue(jobs.add, 1, 2, ttl=100)
    connection.expire(job.key, 50)  # as if not claimed: a PERSIST would show
    run_job(job)
    assert 0 < connection.ttl(job.key) <= 50
