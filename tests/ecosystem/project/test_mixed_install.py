"""rq 3.0 installed beside rqfast and the switch off (only the worker class is rqfast's, as most users first try):
job code's `rq.get_current_job()`, `except rq.exceptions.X` / `rq.timeouts.X` around rqfast's errors, rq's Job
objects handed to rqfast's queue. Each scenario is a fresh interpreter (conftest.run_scenario)."""

from __future__ import annotations

import pytest
from eco_support import CONCURRENCIES, WORKER_CLASSES, run_scenario

pytestmark = pytest.mark.timeout(180)


@pytest.mark.parametrize('concurrency', CONCURRENCIES)
@pytest.mark.parametrize('worker_class', WORKER_CLASSES)
def test_job_codes_rq_get_current_job_is_the_running_job(worker_class: str, concurrency: int, clean_redis: str) -> None:
    seen = run_scenario(
        f"""
        import json, os, redis
        import rqfast
        conn = redis.Redis.from_url(os.environ['REDIS_URL'])
        queue = rqfast.Queue('mixed', connection=conn)
        jobs = [queue.enqueue('eco_jobs.my_id') for _ in range(3)]
        if {worker_class!r} == 'SimpleWorker':
            jobs.append(queue.enqueue('eco_jobs.my_id_async'))
        rqfast.{worker_class}([queue], connection=conn, concurrency={concurrency}).work(burst=True)
        import rq  # rq's own package (the switch is off)
        assert not getattr(rq, '__rqfast_as_rq__', False)
        print(json.dumps([[job.id, queue.fetch_job(job.id).return_value()] for job in jobs]))
        """,
        as_rq=False,
        env={'REDIS_URL': clean_redis},
    )
    assert seen and all(job_id == returned for job_id, returned in seen), seen


@pytest.mark.parametrize('rq_first', [True, False])
def test_a_tool_catching_rqs_exceptions_catches_rqfasts(rq_first: bool, clean_redis: str) -> None:
    seen = run_scenario(
        f"""
        import json, os, redis
        if {rq_first!r}:
            import rq.exceptions, rq.timeouts
        import rqfast
        from rqfast.job import Job
        import rq.exceptions, rq.timeouts  # (already imported, or first now)
        conn = redis.Redis.from_url(os.environ['REDIS_URL'])
        caught = []
        try:
            Job.fetch('no-such-job', connection=conn)
        except rq.exceptions.NoSuchJobError:
            caught.append('NoSuchJobError')
        job = rqfast.Queue('tool', connection=conn).enqueue('eco_jobs.ok')
        job.delete()
        try:
            job.get_status()
        except rq.exceptions.InvalidJobOperation:
            caught.append('InvalidJobOperation')
        try:
            raise rqfast.timeouts.JobTimeoutException('late')
        except rq.timeouts.JobTimeoutException:
            caught.append('JobTimeoutException')
        try:
            raise rqfast.exceptions.ShutDownImminentException('now', {{'frame': 1}})
        except rq.exceptions.ShutDownImminentException as exc:
            caught.append(['ShutDownImminentException', exc.extra_info])
        print(json.dumps(caught))
        """,
        as_rq=False,
        env={'REDIS_URL': clean_redis},
    )
    shutdown = ['ShutDownImminentException', {'frame': 1}]
    assert seen == ['NoSuchJobError', 'InvalidJobOperation', 'JobTimeoutException', shutdown]


@pytest.mark.parametrize('worker_class', WORKER_CLASSES)
def test_job_code_catching_rqs_timeout_is_interrupted_by_rqfasts(worker_class: str, clean_redis: str) -> None:
    seen = run_scenario(
        f"""
        import json, os, redis
        import rqfast
        conn = redis.Redis.from_url(os.environ['REDIS_URL'])
        queue = rqfast.Queue('timeouts', connection=conn)
        # (a fresh child imports rq and the job's module inside the timeout: room for a loaded machine)
        job = queue.enqueue('eco_jobs.catches_rqs_timeout', 120, job_timeout=8)
        rqfast.{worker_class}([queue], connection=conn).work(burst=True)
        print(json.dumps(queue.fetch_job(job.id).return_value()))
        """,
        as_rq=False,
        env={'REDIS_URL': clean_redis},
    )
    assert seen == 'cleaned up'


def test_rqfast_queue_takes_rqs_job_objects(clean_redis: str) -> None:
    """rqfast's Queue.enqueue_job and registries accept an rq Job for the same id; an rqfast Job equals it."""
    seen = run_scenario(
        """
        import json, os, redis
        import rq, rqfast
        from rqfast.registry import FinishedJobRegistry
        conn = redis.Redis.from_url(os.environ['REDIS_URL'])
        rq_queue = rq.Queue('objects', connection=conn)
        queue = rqfast.Queue('objects', connection=conn)
        made = rq_queue.create_job('eco_jobs.ok', args=(7,))
        enqueued = queue.enqueue_job(made)
        fetched = rqfast.job.Job.fetch(made.id, connection=conn)
        rqfast.SimpleWorker([queue], connection=conn).work(burst=True)
        registry = FinishedJobRegistry('objects', connection=conn)
        rq_job = rq.job.Job.fetch(made.id, connection=conn)
        listed = rq_job in [fetched] and fetched == rq_job and hash(fetched) == hash(made.id)
        found = registry.__contains__(rq_job)
        registry.remove(rq_job)
        print(json.dumps({'type': type(enqueued).__module__, 'value': queue.fetch_job(made.id).return_value(),
                          'equal': listed, 'contains': found, 'removed': made.id not in registry.get_job_ids()}))
        """,
        as_rq=False,
        env={'REDIS_URL': clean_redis},
    )
    assert seen == {'type': 'rqfast.job', 'value': 7, 'equal': True, 'contains': True, 'removed': True}
