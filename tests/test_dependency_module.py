"""rqfast.dependency (RQ's rq.dependency) and rqfast.contrib (RQ's, empty): the modules RQ code imports."""

from __future__ import annotations

from types import ModuleType

import redis
import rq.dependency

import rqfast.contrib
from rqfast import Queue
from rqfast.dependency import Dependency
from rqfast.job import Job
from rqfast.registry import DeferredJobRegistry


def _jobs(connection: redis.Redis, queue: Queue) -> tuple[Job, Job]:
    done = queue.enqueue('builtins.len', 'ab')
    pending = queue.enqueue('builtins.len', 'abc')
    done.set_status('finished')
    waits = Job.create('builtins.len', args=('x',), depends_on=[pending], connection=connection, origin=queue.name)
    ready = Job.create('builtins.len', args=('y',), depends_on=[done], connection=connection, origin=queue.name)
    waits.save()
    ready.save()
    return waits, ready


def test_jobs_are_sorted_by_their_dependencies_and_registered_as_rq_does(redis_conn: redis.Redis) -> None:
    queue = Queue('dependency-module', connection=redis_conn)
    waits, ready = _jobs(redis_conn, queue)
    with redis_conn.pipeline() as pipeline:
        met, unmet = Dependency.get_jobs_with_met_dependencies([waits, ready], pipeline)
    assert [job.id for job in met] == [ready.id] and [job.id for job in unmet] == [waits.id]
    assert set(DeferredJobRegistry(queue=queue).get_job_ids()) == {waits.id, ready.id}
    assert redis_conn.sismember(f'rq:job:{waits.dependency_ids[0]}:dependents', waits.id)

    # rq 2.12's helper on the same kind of jobs answers the same
    oracle = rq.Queue('dependency-module-rq', connection=redis_conn)
    rq_waits, rq_ready = _jobs(redis_conn, Queue(oracle.name, connection=redis_conn))
    with redis_conn.pipeline() as pipeline:
        rq_met, rq_unmet = rq.dependency.Dependency.get_jobs_with_met_dependencies(
            [
                rq.job.Job.fetch(rq_waits.id, connection=redis_conn),
                rq.job.Job.fetch(rq_ready.id, connection=redis_conn),
            ],
            pipeline,
        )
    assert [job.id for job in rq_met] == [rq_ready.id] and [job.id for job in rq_unmet] == [rq_waits.id]


def test_contrib_is_rqs_empty_package() -> None:
    """Nothing of its own but its submodules (rqfast.contrib.sentry, once some test imported it)."""
    names = [n for n, v in vars(rqfast.contrib).items() if not n.startswith('_') and not isinstance(v, ModuleType)]
    assert names == []
