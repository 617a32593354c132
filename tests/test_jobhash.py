"""The Job <-> hash mapping round-trips fields rqfast stores but does not act on (webhooks)."""

from __future__ import annotations

import redis
import rq
from rq.webhook import Webhook

from rqfast.job import Job


def test_a_job_with_webhooks_written_by_rq_is_fetched_and_saved_unchanged(connection: redis.Redis) -> None:
    queue = rq.Queue('hooks', connection=connection)
    job = queue.enqueue('operator.add', 1, 2, webhooks=[Webhook('https://example.invalid/done', 'finished')])
    stored = connection.hget(job.key, 'webhooks')

    fetched = Job.fetch(job.id, connection=connection)
    fetched.save()

    assert connection.hget(job.key, 'webhooks') == stored
    assert rq.job.Job.fetch(job.id, connection=connection).webhooks[0].url == 'https://example.invalid/done'


def test_a_fetched_job_holds_webhook_objects_as_rqs_does(connection: redis.Redis) -> None:
    from rqfast.webhook import Webhook as OurWebhook

    hook = Webhook('https://example.invalid/done', 'failed', method='POST', headers={'X': '1'}, timeout=3)
    job = rq.Queue('hooks', connection=connection).enqueue('operator.add', 1, 2, webhooks=[hook])

    (fetched,) = Job.fetch(job.id, connection=connection).webhooks
    assert isinstance(fetched, OurWebhook)
    assert fetched.to_dict() == rq.job.Job.fetch(job.id, connection=connection).webhooks[0].to_dict()


# --- JobRecord: one table of the stored fields, that job_fields and restore_job both follow


def _job_with_every_field(connection: redis.Redis) -> Job:
    from datetime import datetime, timezone

    from rqfast.job import Callback, Retry
    from rqfast.status import JobStatus
    from rqfast.webhook import Webhook as OurWebhook

    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    job = Job.create(
        'operator.add',
        args=(1, 2),
        connection=connection,
        result_ttl=10,
        ttl=20,
        failure_ttl=30,
        timeout=40,
        retry=Retry(max=3, interval=[1, 2], enqueue_at_front=True),
        depends_on=['parent-1', 'parent-2'],
        origin='q',
        meta={'k': 'v'},
        group_id='g',
        on_success=Callback('operator.truth', timeout=5),
        on_failure=Callback('operator.not_', timeout=6),
        on_stopped=Callback('operator.is_', timeout=7),
        webhooks=[OurWebhook('https://example.invalid', 'finished')],
        description='every field',
    )
    job.created_at = job.enqueued_at = job.started_at = job.ended_at = job.last_heartbeat = moment
    job.worker_name = 'w'
    job.number_of_retries = 1
    job.repeats_left, job.repeat_intervals = 2, [3]
    job.rate_limit_key, job.rate_limit_concurrency = 'reports', 2  # RQ 3.0's fields
    job.rate_limit_window_key, job.rate_limit_rate, job.rate_limit_per = 'reports', 10, 0.5  # rqfast's window
    job.allow_dependency_failures = True
    job.enqueue_at_front = False
    job._rqfast_trace = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'  # rqfast's (tracing.py)
    job.capture_output = True  # rqfast's own field (docs/features.md)
    job.priority = 3  # rqfast's own field (docs/features.md)
    job.events = 100  # rqfast's own field: its queue's events cap (rqfast.events)
    job.set_local_status(JobStatus.FAILED)
    job.set_local_result(42)
    job._exc_info = 'Traceback ...'
    return job


def _as_redis_returns(fields: dict) -> dict[bytes, bytes]:
    return {k.encode(): v if isinstance(v, bytes) else str(v).encode() for k, v in fields.items()}


def test_job_record_names_every_field_job_fields_writes(fake_conn: redis.Redis) -> None:
    from rqfast.jobhash import HASH_FIELDS, JobRecord

    written = _job_with_every_field(fake_conn).to_dict()
    assert [f.name for f in HASH_FIELDS] == list(written)  # every field, in RQ's order
    assert {f.attribute for f in HASH_FIELDS} == set(JobRecord.__annotations__)  # every annotated attribute


def test_every_stored_field_round_trips(fake_conn: redis.Redis) -> None:
    from rqfast.jobhash import JobRecord

    job = _job_with_every_field(fake_conn)
    again = Job(job.id, connection=fake_conn)
    again.restore(_as_redis_returns(job.to_dict()))
    for name in JobRecord.__annotations__:
        assert getattr(again, name) == getattr(job, name), name
    assert again.to_dict() == job.to_dict()


def test_an_absent_field_resets_its_attribute_except_the_kept_ones(fake_conn: redis.Redis) -> None:
    """As RQ's restore: a field it always parses goes back to its default; the ones it sets only when
    present (callbacks, webhooks, result, exc_info) keep what the job held."""
    from rqfast.status import JobStatus

    job = _job_with_every_field(fake_conn)
    job.restore({b'data': job.to_dict()['data']})
    assert (job.origin, job.description, job.ttl, job.timeout, job.retries_left) == ('', None, None, None, None)
    assert job.get_status(refresh=False) == JobStatus.CREATED
    assert (job.meta, job.depends_on_ids, job.enqueue_at_front_on_retry) == ({}, [], False)
    assert job.success_callback_timeout == 5 and job.failure_callback is not None
    assert job.webhooks and job._result == 42 and job._exc_info == 'Traceback ...'


def test_set_local_status_writes_nothing(fake_conn: redis.Redis) -> None:
    from rqfast.status import JobStatus

    job = Job.create('operator.add', args=(1, 2), connection=fake_conn)
    job.set_local_status(JobStatus.STARTED)
    assert job.get_status(refresh=False) == job._status == JobStatus.STARTED
    assert fake_conn.dbsize() == 0
    job.set_status(JobStatus.QUEUED)
    assert fake_conn.hget(job.key, 'status') == b'queued'


def test_a_job_reaches_its_registries_and_a_registry_its_queue(fake_conn: redis.Redis) -> None:
    """By dotted paths looked up when first used (rqfast.defaults.REGISTRY_CLASSES)."""
    from rqfast.queue import Queue
    from rqfast.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry

    job = Job.create('operator.add', args=(1, 2), connection=fake_conn, origin='q')
    assert isinstance(job.failed_job_registry, FailedJobRegistry)
    assert isinstance(job.started_job_registry, StartedJobRegistry)
    assert job.finished_job_registry.key == FinishedJobRegistry('q', connection=fake_conn).key
    assert FailedJobRegistry('q', connection=fake_conn).get_queue() == Queue('q', connection=fake_conn)
