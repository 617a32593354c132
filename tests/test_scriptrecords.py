"""The typed records the Lua scripts take: an EnqueueRecord names its fields and renders
lua/enqueue_jobs.lua's ARGV for one job (the layout its header documents): its field names as one
shape, its values but the empty ones."""

from __future__ import annotations

import pytest
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

    assert record.argv() == ['j1', 'batch', 1, 0, 50, '', 1, 2, 'd1', 'd2', 'priority\ndata\n', 3, b'x']


def test_empty_values_are_in_the_shape_and_sent_as_no_argument() -> None:
    record = EnqueueRecord('j', 'queue', {'a': '', 'b': 0, 'c': b'', 'd': 'x'})

    assert record.argv()[8:] == ['a=\nb\nc=\nd\n', 0, 'x']


def test_a_field_name_the_shape_cannot_carry_is_refused() -> None:
    for name in ('bad\nname', 'bad='):
        with pytest.raises(ValueError, match='field name'):
            EnqueueRecord('j', 'queue', {name: 'x'}).argv()


def test_records_of_one_shape_store_each_their_own_values(connection: redis.Redis) -> None:
    moment = now()
    records = [EnqueueRecord(f's{n}', 'queue', {'origin': 'shq', 'data': f'd{n}', 'meta': ''}) for n in range(3)]
    statuses = scripts.enqueue_jobs(connection, 'shq', utcformat(moment), epoch_seconds(moment), records)

    assert statuses == ['queued'] * 3
    for n in range(3):
        stored = connection.hgetall(f'rq:job:s{n}')
        assert list(stored) == [b'status', b'origin', b'data', b'meta', b'enqueued_at']
        assert (stored[b'data'], stored[b'meta'], stored[b'origin']) == (f'd{n}'.encode(), b'', b'shq')


def test_argv_sends_an_empty_ttl_and_score_for_none() -> None:
    assert EnqueueRecord('j', 'queue', {}).argv() == ['j', 'queue', 0, 0, '', '', 0, 0, '']
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
    assert signed.argv()[-1] == 'yes' and signed.argv()[8].endswith('\nextra\n')
    assert statuses == ['queued']
    assert connection.hget('rq:job:wf', 'extra') == b'yes'
    assert Queue('recq', connection=connection).job_ids == ['wf']
