"""The typed records the Lua scripts take: an EnqueueRecord names its fields and renders
lua/enqueue_jobs.lua's ARGV for one job (the layout its header documents), byte for byte what the
flat list it replaced carried."""

from __future__ import annotations

import redis

from rqfast import Queue, scripts
from rqfast.dates import epoch_seconds, now, utcformat
from rqfast.job import Job
from rqfast.scriptrecords import EnqueueRecord


def test_argv_is_enqueue_jobs_layout() -> None:
    record = EnqueueRecord(
        'j1',
        'batch',
        {'priority': 3, 'data': b'x'},
        at_front=True,
        ttl=50,
        allow_failure=True,
        dependency_ids=('d1', 'd2'),
    )

    assert record.argv() == ['j1', 'batch', 1, 0, 50, '', 1, 2, 'd1', 'd2', 2, 'priority', 3, 'data', b'x']


def test_argv_sends_an_empty_ttl_and_score_for_none() -> None:
    assert EnqueueRecord('j', 'queue', {}).argv() == ['j', 'queue', 0, 0, '', '', 0, 0, 0]
    assert EnqueueRecord('j', 'schedule', {}, unique=True, ttl=0, score=0).argv()[2:7] == [0, 1, '', 0, 0]


def test_for_job_writes_the_hash_but_status_with_the_priority_first(connection: redis.Redis) -> None:
    job = Job.create('operator.add', args=(1, 2), id='rec', connection=connection, depends_on=['a', 'b'], ttl=30)
    job.priority, job.enqueued_at = 4, now()

    queued = EnqueueRecord.for_job(job, 'queue', at_front=True)
    scheduled = EnqueueRecord.for_job(job, 'schedule', score=123, check_dependencies=False)

    assert (queued.job_id, queued.mode, queued.at_front, queued.ttl) == ('rec', 'queue', True, 30)
    assert list(queued.dependency_ids) == ['a', 'b'] and scheduled.dependency_ids == ()
    assert next(iter(queued.fields)) == 'priority' and 'status' not in queued.fields
    assert 'enqueued_at' not in queued.fields and 'enqueued_at' in scheduled.fields
    assert scheduled.argv()[5] == 123


def test_with_field_writes_one_more_field_last_in_a_new_record(connection: redis.Redis) -> None:
    record = EnqueueRecord.for_job(Job.create('operator.add', args=(1, 2), id='wf', connection=connection), 'queue')
    signed = record.with_field('extra', 'yes')
    moment = now()
    statuses = scripts.enqueue_jobs(connection, 'recq', utcformat(moment), epoch_seconds(moment), [signed])

    assert 'extra' not in record.fields and list(signed.fields)[-1] == 'extra'
    assert signed.argv()[-2:] == ['extra', 'yes'] and signed.argv()[8] == len(record.fields) + 1
    assert statuses == ['queued']
    assert connection.hget('rq:job:wf', 'extra') == b'yes'
    assert Queue('recq', connection=connection).job_ids == ['wf']
