"""Poison jobs never take a worker down.

A job whose function cannot be imported, whose data cannot be deserialized, whose hash holds a field
no reader can parse, or that cannot be recorded as its hash asks, ends in the failed registry with a
reason that names the cause (a hash without `data` too); an id with no job hash behind it is dropped
and logged once; an id whose job key is not a hash is dead-lettered (rq:dead-letter:<queue>). Either way
the worker goes on with the next job (`after`, enqueued behind the poison, must finish).
"""

from __future__ import annotations

import base64
import logging
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

import pytest
import redis
import rq.job

import rqfast
from rqfast import Queue, SimpleWorker
from rqfast.job import Job
from rqfast.registry import FailedJobRegistry, StartedJobRegistry

try:
    import jobs
    import worker_jobs
except ImportError:  # tests/ became a package
    from tests import jobs, worker_jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(30)


def run(connection: redis.Redis, poison: Callable[[Queue, redis.Redis], Any]) -> tuple[Any, Job, SimpleWorker]:
    """Enqueue the poison, then a good job; one burst run. Returns (poison's result, the good job, the worker)."""
    q = Queue('q', connection=connection)
    made = poison(q, connection)
    after = q.enqueue(jobs.add, 20, 22)
    worker = SimpleWorker(['q'], connection=connection)
    worker.work(burst=True, logging_level='WARNING')
    assert after.get_status() == 'finished' and after.return_value() == 42, 'the worker did not go on'
    assert q.count == 0
    assert StartedJobRegistry('q', connection=connection).get_job_ids(cleanup=False) == []
    return made, after, worker


def failed_reason(connection: redis.Redis, job_id: str) -> str:
    """The job is in the failed registry, both libraries can load it, and this is the reason it gives."""
    assert job_id in FailedJobRegistry('q', connection=connection).get_job_ids(cleanup=False)
    job = Job.fetch(job_id, connection=connection)
    assert job.get_status() == 'failed'
    assert rq.job.Job.fetch(job_id, connection=connection).get_status() == 'failed'
    reason = job.exc_info or ''
    assert reason
    return reason


def corrupt(func: Any, **fields: Any) -> Callable[[Queue, redis.Redis], Job]:
    """A good job whose hash then gets `fields` overwritten."""

    def make(q: Queue, connection: redis.Redis) -> Job:
        job = q.enqueue(func)
        connection.hset(job.key, mapping=fields)
        return job

    return make


# ---------------------------------------------------------------------------------------------------
# The function or its data


@pytest.mark.parametrize(
    ('path', 'named'),
    [
        ('no_such_module_anywhere.func', 'no_such_module_anywhere.func'),
        (f'{jobs.__name__}.no_such_function', 'no_such_function'),
    ],
)
def test_a_function_that_cannot_be_imported(connection: redis.Redis, path: str, named: str) -> None:
    job, _, worker = run(connection, lambda q, c: q.enqueue(path))
    assert named in failed_reason(connection, job.id)
    assert worker.failed_job_count == 1 and worker.successful_job_count == 1


@pytest.mark.parametrize(
    'data', [b'not zlib, not pickle', zlib.compress(b'\x80\x05truncated pickle')], ids=['garbage', 'bad_pickle']
)
def test_data_that_cannot_be_deserialized(connection: redis.Redis, data: bytes) -> None:
    job, _, _ = run(connection, corrupt(jobs.noop, data=data))
    reason = failed_reason(connection, job.id)
    assert 'DeserializationError' in reason and 'cannot deserialize its data' in reason


def test_a_callback_that_cannot_be_imported(connection: redis.Redis) -> None:
    job, _, _ = run(connection, lambda q, c: q.enqueue(jobs.noop, on_success=rqfast.Callback('no_such_module.cb')))
    assert 'no_such_module.cb' in failed_reason(connection, job.id)


def test_a_failure_callback_that_cannot_be_imported(connection: redis.Redis) -> None:
    job, _, _ = run(
        connection, lambda q, c: q.enqueue(jobs.div_by_zero, on_failure=rqfast.Callback('no_such_module.on_failure'))
    )
    assert 'no_such_module.on_failure' in failed_reason(connection, job.id)


@pytest.mark.parametrize(
    'func', [worker_jobs.exit_process, worker_jobs.raise_keyboard_interrupt], ids=['sys_exit', 'keyboard_interrupt']
)
def test_a_job_that_exits_fails_and_the_worker_goes_on(connection: redis.Redis, func: Any) -> None:
    job, _, _ = run(connection, lambda q, c: q.enqueue(func))
    reason = failed_reason(connection, job.id)
    assert 'SystemExit: 3' in reason or 'KeyboardInterrupt' in reason


# ---------------------------------------------------------------------------------------------------
# Fields no reader can parse


UNREADABLE = {
    'status': b'bogus',
    'created_at': b'not a date',
    'enqueued_at': b'2020-13-45T00:00:00.000000Z',
    'started_at': b'yesterday',
    'timeout': b'abc',
    'result_ttl': b'forever',
    'failure_ttl': b'1.5',
    'ttl': b'x',
    'dependency_ids': b'[not json',
    'retries_left': b'many',
    'number_of_retries': b'?',
    'repeats_left': b'-',
    'retry_intervals': b'{broken',
    'success_callback_timeout': b'',
    'enqueue_at_front': b'yes',
    'allow_dependency_failures': b'maybe',
}


@pytest.mark.parametrize('field', sorted(UNREADABLE))
def test_an_unreadable_field_fails_the_job_and_names_the_field(connection: redis.Redis, field: str) -> None:
    job, _, _ = run(connection, corrupt(jobs.noop, **{field: UNREADABLE[field]}))
    reason = failed_reason(connection, job.id)  # also: the reset field lets both libraries load it again
    assert f'unreadable field(s) {field}={UNREADABLE[field]!r}' in reason, reason
    assert not connection.exists(f'rq:results:{job.id}') or job.latest_result().type.value == 2


def test_several_unreadable_fields_are_all_named(connection: redis.Redis) -> None:
    job, _, _ = run(connection, corrupt(jobs.noop, status='??', timeout='1x'))
    reason = failed_reason(connection, job.id)
    assert "status=b'??'" in reason and "timeout=b'1x'" in reason


def test_a_poison_job_is_not_retried(connection: redis.Redis) -> None:
    """Retrying a job that cannot be loaded would only fail again (or run with altered fields)."""
    make = corrupt(jobs.noop, created_at='never')

    def poison(q: Queue, connection: redis.Redis) -> Job:
        job = make(q, connection)
        connection.hset(job.key, mapping={'retries_left': 3})
        return job

    job, _, worker = run(connection, poison)
    failed_reason(connection, job.id)
    assert worker.failed_job_count == 1


def test_a_poison_job_keeps_its_failure_ttl(connection: redis.Redis) -> None:
    job, _, _ = run(connection, lambda q, c: corrupt(jobs.noop, status='bogus', failure_ttl=120)(q, c))
    failed_reason(connection, job.id)
    assert 100 < connection.ttl(job.key) <= 120


@pytest.mark.parametrize(
    ('fields', 'named'),
    [
        ({'retry_intervals': '"abc"', 'retries_left': '2'}, "retry_intervals='abc'"),
        ({'retry_intervals': '[]', 'retries_left': '2'}, 'retry_intervals=[]'),
    ],
    ids=['string', 'empty_list'],
)
def test_retry_intervals_that_cannot_be_used(connection: redis.Redis, fields: dict[str, str], named: str) -> None:
    job, _, _ = run(connection, corrupt(jobs.div_by_zero, **fields))
    reason = failed_reason(connection, job.id)
    assert named in reason and 'could not be recorded as its hash asks' in reason
    assert 'ZeroDivisionError' in reason, 'the original error is kept'


def test_repeat_intervals_that_cannot_be_used(connection: redis.Redis) -> None:
    job, _, _ = run(connection, corrupt(jobs.noop, repeat_intervals='{"a": 1}', repeats_left='1'))
    assert "repeat_intervals={'a': 1}" in failed_reason(connection, job.id)


def test_unreadable_meta_and_webhooks_are_read_as_rq_reads_them(connection: redis.Redis) -> None:
    """RQ keeps undecodable meta as {'unserialized': ...} and drops unreadable webhooks: the job runs."""
    job, _, _ = run(connection, corrupt(jobs.noop, meta=b'\x80garbage', webhooks='nope'))
    assert job.get_status() == 'finished'


# ---------------------------------------------------------------------------------------------------
# Ids with no job behind them


def test_an_id_without_a_hash_is_dropped_and_logged_once(
    connection: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger='rqfast'):
        run(connection, lambda q, c: c.rpush(q.key, 'ghost'))
    dropped = [r.getMessage() for r in caplog.records if 'ghost' in r.getMessage()]
    assert len(dropped) == 1 and 'no job hash' in dropped[0]
    assert FailedJobRegistry('q', connection=connection).count == 0
    assert not connection.exists('rq:job:ghost')


def test_a_hash_without_data_fails_with_a_reason(connection: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    """RQ drops such an id unseen (its hash left 'queued' in no registry); rqfast fails the job, saying why."""

    def poison(q: Queue, connection: redis.Redis) -> Job:
        job = q.enqueue(jobs.noop)
        connection.hdel(job.key, 'data')
        return job

    with caplog.at_level(logging.WARNING, logger='rqfast'):
        job, _, _ = run(connection, poison)
    assert 'its hash has no data' in reason_of_a_hash_without_data(connection, job.id)
    assert not any('no job hash' in r.getMessage() for r in caplog.records)


def reason_of_a_hash_without_data(connection: redis.Redis, job_id: str) -> str:
    """The job failed (status, failed registry) and its result stream holds the reason (the hash has
    no data, so neither library's Job.fetch loads it: read as stored)."""
    assert job_id in FailedJobRegistry('q', connection=connection).get_job_ids(cleanup=False)
    assert connection.hget(f'rq:job:{job_id}', 'status') == b'failed'
    [(_, fields)] = connection.xrevrange(f'rq:results:{job_id}', count=1)
    return zlib.decompress(base64.b64decode(fields[b'exc_string'])).decode()


@pytest.mark.parametrize('worker_class', [rqfast.SimpleWorker, rqfast.Worker, rqfast.SpawnWorker])
def test_a_hash_without_data_fails_in_every_worker_class(redis_conn: redis.Redis, worker_class: Any) -> None:
    q = Queue('q', connection=redis_conn)
    bad = q.enqueue(jobs.noop)
    redis_conn.hdel(bad.key, 'data')
    redis_conn.set('rq:job:a-string', 'x')
    redis_conn.rpush(q.key, 'a-string')
    wrong_type = q.enqueue(jobs.noop)
    redis_conn.hset(wrong_type.key, 'timeout', 'abc')
    bare = q.enqueue(jobs.noop)  # only its data left: every other field missing
    redis_conn.hdel(bare.key, *[k for k in redis_conn.hkeys(bare.key) if k != b'data'])
    after = q.enqueue(jobs.add, 20, 22)
    worker_class(['q'], connection=redis_conn).work(burst=True, logging_level='WARNING')
    assert after.get_status() == 'finished'
    assert 'unreadable field(s) timeout' in failed_reason(redis_conn, wrong_type.id)
    assert bare.get_status() == 'finished'  # the fields RQ can do without are defaulted
    assert 'its hash has no data' in reason_of_a_hash_without_data(redis_conn, bad.id)
    assert redis_conn.hkeys('rq:dead-letter:q') == [b'a-string']
    assert StartedJobRegistry('q', connection=redis_conn).get_job_ids(cleanup=False) == []
    assert q.count == 0


def test_a_job_key_that_is_not_a_hash_is_dead_lettered(
    connection: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    def poison(q: Queue, connection: redis.Redis) -> str:
        connection.set('rq:job:a-string', 'not a hash')
        connection.rpush(q.key, 'a-string')
        return 'a-string'

    with caplog.at_level(logging.WARNING, logger='rqfast'):
        run(connection, poison)
    logged = [r.getMessage() for r in caplog.records if 'a-string' in r.getMessage()]
    assert len(logged) == 1 and 'not a hash' in logged[0] and 'rq:dead-letter:q' in logged[0]
    assert b'its job key is a string, not a hash' in connection.hget('rq:dead-letter:q', 'a-string')
    assert connection.get('rq:job:a-string') == b'not a hash'


def test_many_ghosts_in_a_row(connection: redis.Redis) -> None:
    """More dropped ids than one claim call looks at (100): the worker keeps claiming."""

    def poison(q: Queue, connection: redis.Redis) -> None:
        connection.rpush(q.key, *[f'ghost-{i}' for i in range(250)])

    _, _, worker = run(connection, poison)
    assert worker.successful_job_count == 1


def test_a_poison_job_between_good_ones_with_several_queues(connection: redis.Redis) -> None:
    high, low = Queue('high', connection=connection), Queue('low', connection=connection)
    good = [high.enqueue(jobs.add, 1, 1), low.enqueue(jobs.add, 2, 2)]
    connection.rpush(high.key, 'ghost')
    bad = high.enqueue('no_such_module.f')
    good.append(low.enqueue(jobs.add, 3, 3))
    SimpleWorker(['high', 'low'], connection=connection).work(burst=True, logging_level='WARNING')
    assert [j.get_status() for j in good] == ['finished'] * 3
    assert bad.id in FailedJobRegistry('high', connection=connection).get_job_ids(cleanup=False)


def test_poison_taken_by_the_blocking_wait(redis_conn: redis.Redis) -> None:
    """The same through the worker's blocking wait (the id moved to the intermediate list, then claimed)."""
    q = Queue('q', connection=redis_conn)
    made: dict[str, Job] = {}

    def produce() -> None:
        time.sleep(1)  # the worker waits on its blocking pop by now (or soon: the outcome is the same)
        made['bad'] = Queue('staging', connection=redis_conn).enqueue(jobs.noop)  # made whole, then queued
        redis_conn.delete('rq:queue:staging')
        redis_conn.hdel(made['bad'].key, 'data')
        redis_conn.hset(made['bad'].key, 'origin', 'q')
        redis_conn.rpush(q.key, made['bad'].id)
        redis_conn.set('rq:job:a-string', 'x')
        redis_conn.rpush(q.key, 'a-string')
        made['after'] = q.enqueue(jobs.add, 20, 22)

    producer = threading.Thread(target=produce)
    producer.start()
    SimpleWorker(['q'], connection=redis_conn).work(max_jobs=2, logging_level='WARNING')
    producer.join()
    assert made['after'].get_status() == 'finished'
    assert 'its hash has no data' in reason_of_a_hash_without_data(redis_conn, made['bad'].id)
    assert redis_conn.hkeys('rq:dead-letter:q') == [b'a-string']
    assert redis_conn.llen('rq:queue:q:intermediate') == 0
