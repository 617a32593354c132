"""rqfast's SimpleWorker in process: RQ's constructor and work() surface, executing jobs, recording outcomes.

The core runs on the real server and on fakeredis (`connection`); what needs sockets or timing runs on
the real server only. RQ's byte-for-byte agreement is tests/test_worker_interop.py's job; here the
values themselves are checked.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
import redis

import rqfast
import rqfast.worker
from rqfast import Callback, Queue, Retry, SimpleWorker
from rqfast.dates import now
from rqfast.job import Job
from rqfast.registry import (
    FailedJobRegistry,
    FinishedJobRegistry,
    ScheduledJobRegistry,
    StartedJobRegistry,
)
from rqfast.serializers import JSONSerializer

try:
    import jobs
    import worker_jobs
except ImportError:  # tests/ became a package
    from tests import jobs, worker_jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(30)


def work(connection: redis.Redis, queues: Any = ('q',), **options: Any) -> SimpleWorker:
    """A burst run; the worker is returned for inspection."""
    worker_options = {k: options.pop(k) for k in list(options) if k not in WORK_KEYWORDS}
    worker = SimpleWorker(
        list(queues) if not isinstance(queues, str) else queues, connection=connection, **worker_options
    )
    worker.work(burst=True, logging_level='WARNING', **options)
    return worker


WORK_KEYWORDS = {'max_jobs', 'max_idle_time', 'with_scheduler', 'dequeue_strategy', 'date_format', 'log_format'}


def result_ttl_of(connection: redis.Redis, job: Job) -> tuple[int, int]:
    return connection.ttl(job.key), connection.ttl(f'rq:results:{job.id}')


# ---------------------------------------------------------------------------------------------------
# The public surface


def test_simple_worker_is_exported_under_rqs_names() -> None:
    assert rqfast.SimpleWorker is rqfast.worker.SimpleWorker
    assert issubclass(SimpleWorker, rqfast.worker.BaseWorker)
    assert {s.value for s in rqfast.worker.DequeueStrategy} == {'default', 'round_robin', 'random'}


def test_queues_given_as_names_queue_objects_or_one_string(connection: redis.Redis) -> None:
    q = Queue('objects', connection=connection)
    job = q.enqueue(jobs.add, 1, 1)
    by_object = SimpleWorker([q])  # the connection comes from the Queue
    assert by_object.connection is connection and by_object.queue_names() == ['objects']
    assert SimpleWorker('single', connection=connection).queue_names() == ['single']
    assert SimpleWorker(['a', 'b'], connection=connection).queue_keys() == ['rq:queue:a', 'rq:queue:b']
    assert by_object.work(burst=True, logging_level='WARNING') is True
    assert job.get_status() == 'finished'


def test_a_worker_needs_a_queue_and_a_connection(connection: redis.Redis) -> None:
    with pytest.raises(ValueError):  # made without one, as RQ's can be, it cannot work
        SimpleWorker([], connection=connection).work(burst=True)
    with pytest.raises(ValueError):
        SimpleWorker([])
    with pytest.raises(TypeError):
        SimpleWorker(['q'])


def test_work_returns_whether_any_job_ran(connection: redis.Redis) -> None:
    assert work(connection).successful_job_count == 0
    assert SimpleWorker(['q'], connection=connection).work(burst=True, logging_level='WARNING') is False
    Queue('q', connection=connection).enqueue(jobs.noop)
    assert SimpleWorker(['q'], connection=connection).work(burst=True, logging_level='WARNING') is True


def test_work_accepts_rqs_logging_arguments(connection: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    Queue('q', connection=connection).enqueue(jobs.noop)
    worker = SimpleWorker(['q'], connection=connection, name='logged')
    with caplog.at_level(logging.INFO, logger='rqfast'):
        assert worker.work(burst=True, logging_level='INFO', date_format='%H', log_format='%(message)s')
    assert any('Job OK' in r.getMessage() for r in caplog.records)


def test_a_live_worker_name_cannot_be_taken_twice(connection: redis.Redis) -> None:
    first = SimpleWorker(['q'], connection=connection, name='twin')
    first.register_birth()
    with pytest.raises(ValueError):
        SimpleWorker(['q'], connection=connection, name='twin').register_birth()
    first.register_death()
    SimpleWorker(['q'], connection=connection, name='twin').register_birth()  # a dead one's name is free


def test_max_jobs_stops_the_worker(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    for i in range(5):
        q.enqueue(jobs.add, i, i)
    worker = work(connection, max_jobs=2)
    assert worker.successful_job_count == 2 and q.count == 3
    assert FinishedJobRegistry('q', connection=connection).count == 2


@pytest.mark.parametrize('concurrency', [1, 3])
def test_max_jobs_zero_runs_one_job_as_rq_does_at_any_concurrency(connection: redis.Redis, concurrency: int) -> None:
    """RQ looks at max_jobs once a job is done: max_jobs=0 runs one job; one loop, one rule, at 1 as at N."""
    q = Queue('q', connection=connection)
    for i in range(3):
        q.enqueue(jobs.add, i, i)
    worker = work(connection, max_jobs=0, concurrency=concurrency)
    assert worker.successful_job_count == 1 and q.count == 2


def test_max_idle_time_stops_a_waiting_worker(redis_conn: redis.Redis) -> None:
    worker = SimpleWorker(['q'], connection=redis_conn)
    started = time.monotonic()
    assert worker.work(max_idle_time=1, logging_level='WARNING') is False
    assert 0.9 <= time.monotonic() - started < 20
    assert redis_conn.hget(worker.key, 'death')


def test_a_waiting_worker_takes_a_job_as_soon_as_it_arrives(redis_conn: redis.Redis) -> None:
    """No polling: the blocked worker wakes up on the push."""
    import threading

    q = Queue('q', connection=redis_conn)
    timer = threading.Timer(0.3, lambda: q.enqueue(jobs.add, 2, 2, job_id='late'))
    timer.start()
    started = time.monotonic()
    worker = SimpleWorker(['other', 'q'], connection=redis_conn)
    worker.dequeue_timeout = 60  # polling would see the job only after a minute's wait
    worker.work(max_jobs=1, logging_level='WARNING')
    assert time.monotonic() - started < 30
    assert Job.fetch('late', connection=redis_conn).return_value() == 4
    assert redis_conn.llen('rq:queue:q:intermediate') == redis_conn.llen('rq:queue:other:intermediate') == 0


def test_with_scheduler_enqueues_due_jobs_in_burst_mode(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    job = q.enqueue_in(timedelta(seconds=-5), jobs.add, 3, 4)
    assert job.get_status() == 'scheduled'
    work(connection, with_scheduler=True)
    assert job.get_status() == 'finished' and job.return_value() == 7


# ---------------------------------------------------------------------------------------------------
# Dequeue strategies


def _enqueue_tagged(connection: redis.Redis, layout: dict[str, int]) -> None:
    for name, count in layout.items():
        for i in range(count):
            Queue(name, connection=connection).enqueue(worker_jobs.record, f'{name}{i}')


def _order(connection: redis.Redis) -> list[str]:
    return [tag.decode() for tag in connection.lrange('order', 0, -1)]


def test_default_strategy_drains_queues_in_priority_order(connection: redis.Redis) -> None:
    _enqueue_tagged(connection, {'low': 2, 'high': 2})
    work(connection, ['high', 'low'])
    assert _order(connection) == ['high0', 'high1', 'low0', 'low1']


def test_round_robin_strategy_alternates(connection: redis.Redis) -> None:
    _enqueue_tagged(connection, {'a': 3, 'b': 3, 'c': 1})
    work(connection, ['a', 'b', 'c'], dequeue_strategy='round_robin')
    assert _order(connection) == ['a0', 'b0', 'c0', 'a1', 'b1', 'a2', 'b2']


def test_random_strategy_runs_everything_in_no_fixed_order(connection: redis.Redis) -> None:
    _enqueue_tagged(connection, {'a': 20, 'b': 20})
    work(connection, ['a', 'b'], dequeue_strategy=rqfast.worker.DequeueStrategy.RANDOM)
    order = _order(connection)
    assert Counter(tag[0] for tag in order) == {'a': 20, 'b': 20}
    assert [t for t in order if t[0] == 'a'] == [f'a{i}' for i in range(20)]  # each queue keeps its order
    assert order[:20] != [f'a{i}' for i in range(20)]  # 2**-20: not the default order


def test_an_unknown_strategy_is_refused(connection: redis.Redis) -> None:
    with pytest.raises(ValueError):
        SimpleWorker(['q'], connection=connection).work(burst=True, dequeue_strategy='fifo')


# ---------------------------------------------------------------------------------------------------
# What a job can be


@pytest.mark.parametrize(
    ('func', 'args', 'kwargs', 'expected'),
    [
        (f'{jobs.__name__}.say_hello', (), {'name': 'Ann'}, 'Hi there, Ann!'),
        (jobs.Number(9).div, (3,), {}, 3.0),
        (jobs.callable_adder, (1,), {'b': 2}, 13),
        (len, ([1, 2, 3],), {}, 3),
        (jobs.async_add, (20, 22), {}, 42),
        (jobs.echo, (1,), {'k': 'v'}, ((1,), {'k': 'v'})),
    ],
    ids=['dotted_path', 'instance_method', 'callable_instance', 'builtin', 'async_def', 'args_kwargs'],
)
def test_each_kind_of_callable_runs(connection: redis.Redis, func: Any, args: Any, kwargs: Any, expected: Any) -> None:
    job = Queue('q', connection=connection).enqueue(func, *args, **kwargs)
    work(connection)
    assert job.get_status() == 'finished', job.exc_info
    assert job.return_value() == expected


def test_get_current_job_and_meta_inside_the_job(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    who = q.enqueue(jobs.current_job_id)
    meta = q.enqueue(jobs.save_meta_from_inside, 'progress', 50, meta={'given': True})
    work(connection)
    assert who.return_value() == who.id
    assert meta.get_meta() == {'given': True, 'progress': 50}
    assert rqfast.get_current_job() is None  # outside a job


def test_json_serializer_end_to_end(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection, serializer=JSONSerializer)
    job = q.enqueue(jobs.echo, 1, [2], k={'x': 3}, meta={'m': 1})
    bad = q.enqueue(jobs.div_by_zero)
    work(connection, serializer=JSONSerializer)
    fetched = Job.fetch(job.id, connection=connection, serializer=JSONSerializer)
    assert fetched.get_status() == 'finished' and fetched.return_value() == [[1, [2]], {'k': {'x': 3}}]
    assert bad.get_status() == 'failed'


class CountingJob(Job):
    performed: list[str] = []

    def perform(self) -> Any:
        CountingJob.performed.append(self.id)
        return super().perform()


class LongTimeoutQueue(Queue):
    DEFAULT_TIMEOUT = 7


def test_job_class_and_queue_class_are_used(connection: redis.Redis) -> None:
    CountingJob.performed.clear()
    job = Queue('q', connection=connection).enqueue(jobs.add, 1, 2)
    worker = work(connection, job_class=CountingJob, queue_class=LongTimeoutQueue)
    assert CountingJob.performed == [job.id]
    assert isinstance(worker.queues[0], LongTimeoutQueue)
    dotted = SimpleWorker(
        ['q'], connection=connection, job_class=f'{__name__}.CountingJob', queue_class=f'{__name__}.LongTimeoutQueue'
    )
    assert dotted.job_class is CountingJob and dotted.queue_class is LongTimeoutQueue


# ---------------------------------------------------------------------------------------------------
# Timeouts and callbacks


def test_job_timeout_is_enforced_in_process(redis_conn: redis.Redis) -> None:
    q = Queue('q', connection=redis_conn)
    slow = q.enqueue(worker_jobs.sleep_ignoring_timeout, 10, job_timeout=1)
    after = q.enqueue(jobs.add, 1, 1)
    started = time.monotonic()
    work(redis_conn)
    assert time.monotonic() - started < 4
    assert slow.get_status() == 'failed'
    assert 'JobTimeoutException: Task exceeded maximum timeout value (1 seconds)' in slow.exc_info
    assert after.get_status() == 'finished'


def test_callbacks_run_with_the_job_and_its_outcome(connection: redis.Redis) -> None:
    jobs.CALLBACK_CALLS.clear()
    q = Queue('q', connection=connection)
    ok = q.enqueue(
        jobs.add,
        1,
        2,
        on_success=Callback(jobs.success_callback),
        on_failure=Callback(jobs.failure_callback),
        on_stopped=Callback(jobs.stopped_callback),
    )
    bad = q.enqueue(
        jobs.div_by_zero,
        on_success=Callback(jobs.success_callback),
        on_failure=Callback(f'{jobs.__name__}.failure_callback'),
    )
    work(connection)
    assert jobs.CALLBACK_CALLS == [('success', ok.id, 3), ('failure', bad.id, ZeroDivisionError)]


def test_a_callback_past_its_timeout_fails_the_job(redis_conn: redis.Redis) -> None:
    job = Queue('q', connection=redis_conn).enqueue(
        jobs.add, 1, 2, on_success=Callback(worker_jobs.slow_callback, timeout=1)
    )
    started = time.monotonic()
    work(redis_conn)
    assert time.monotonic() - started < 4
    assert job.get_status() == 'failed' and 'JobTimeoutException' in job.exc_info


def test_a_raising_failure_callback_replaces_the_jobs_error(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.div_by_zero, on_failure=Callback(worker_jobs.raising_callback))
    work(connection)
    assert job.get_status() == 'failed'
    assert 'RuntimeError: callback failed' in job.exc_info


# ---------------------------------------------------------------------------------------------------
# Results, TTLs and registries


@pytest.mark.parametrize(
    ('result_ttl', 'job_ttl', 'stream_ttl'),
    [
        (None, 500, 500),
        (0, -2, -2),
        (-1, -1, -1),
        (77, 77, 77),
    ],
    ids=['default', 'zero', 'forever', 'n'],
)
def test_result_ttl(connection: redis.Redis, result_ttl: int | None, job_ttl: int, stream_ttl: int) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.add, 2, 3, result_ttl=result_ttl)
    work(connection)
    ttls = result_ttl_of(connection, job)
    assert ttls[0] in (job_ttl, job_ttl - 1) and ttls[1] in (stream_ttl, stream_ttl - 1), ttls
    finished = FinishedJobRegistry('q', connection=connection).get_job_ids(cleanup=False)
    assert finished == ([] if result_ttl == 0 else [job.id])
    if result_ttl != 0:
        assert job.return_value() == 5


def test_default_result_ttl_of_the_worker(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    job = q.enqueue(jobs.add, 2, 3)
    own = q.enqueue(jobs.add, 2, 3, result_ttl=30)
    work(connection, default_result_ttl=100)
    assert connection.ttl(job.key) in (99, 100) and connection.ttl(own.key) in (29, 30)


@pytest.mark.parametrize(
    ('failure_ttl', 'job_ttl', 'stream_ttl'),
    [
        (None, 31536000, -1),
        (90, 90, 90),
        (-1, -1, -1),
    ],
    ids=['default', 'n', 'forever'],
)
def test_failure_ttl(connection: redis.Redis, failure_ttl: int | None, job_ttl: int, stream_ttl: int) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.raise_custom_error, 'nope', failure_ttl=failure_ttl)
    work(connection)
    ttls = result_ttl_of(connection, job)
    assert ttls[0] in (job_ttl, job_ttl - 1) and ttls[1] in (stream_ttl, stream_ttl - 1), ttls
    assert FailedJobRegistry('q', connection=connection).get_job_ids(cleanup=False) == [job.id]
    latest = job.latest_result()
    assert latest.type == latest.Type.FAILED
    assert latest.exc_string.startswith('Traceback (most recent call last)')
    assert 'tests/jobs.py' in latest.exc_string and 'CustomError: nope' in latest.exc_string


def test_unpicklable_return_value(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.return_unpicklable)
    work(connection)
    assert job.get_status() == 'finished'
    assert job.return_value() == 'Unserializable return value'


# ---------------------------------------------------------------------------------------------------
# Retry


def test_retry_without_interval_goes_back_to_the_queue(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(worker_jobs.fail_until, 2, retry=Retry(max=3))
    worker = work(connection)
    assert job.get_status() == 'finished' and job.return_value() == 3
    assert worker.failed_job_count == 2 and worker.successful_job_count == 1
    assert job.get_meta()['runs'] == 3 and Job.fetch(job.id, connection=connection).retries_left == 1
    assert [r.type for r in job.results()] == [job.latest_result().Type.SUCCESSFUL]


def test_retry_with_interval_goes_to_the_scheduled_registry(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(worker_jobs.fail_until, 5, retry=Retry(max=2, interval=[30, 60]))
    before = time.time()
    work(connection)
    assert job.get_status() == 'scheduled'
    registry = ScheduledJobRegistry('q', connection=connection)
    assert registry.get_job_ids() == [job.id]
    score = connection.zscore('rq:scheduled:q', job.id)
    assert before + 29 <= score <= time.time() + 31
    assert Job.fetch(job.id, connection=connection).retries_left == 1


def test_retries_exhausted_end_in_the_failed_registry(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(worker_jobs.fail_until, 5, retry=Retry(max=2))
    work(connection)
    assert job.get_status() == 'failed' and job.get_meta()['runs'] == 3
    assert FailedJobRegistry('q', connection=connection).get_job_ids(cleanup=False) == [job.id]


def test_a_job_returning_retry_runs_again_until_max(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(worker_jobs.return_retry, 2)
    work(connection)
    types = [r.type.value for r in reversed(job.results())]
    assert types == [4, 4, 5] and job.get_status() == 'failed'
    assert Job.fetch(job.id, connection=connection).number_of_retries == 2


# ---------------------------------------------------------------------------------------------------
# Exception handlers


def test_exception_handler_chain_stops_at_a_falsy_answer(connection: redis.Redis) -> None:
    calls: list[str] = []

    def first(job: Job, *exc_info: Any) -> bool:
        calls.append('first')
        return True

    def stop(job: Job, *exc_info: Any) -> bool:
        calls.append('stop')
        return False

    def never(job: Job, *exc_info: Any) -> None:
        calls.append('never')

    def raising(job: Job, *exc_info: Any) -> None:
        raise RuntimeError('a handler broke')

    Queue('q', connection=connection).enqueue(jobs.div_by_zero)
    worker = work(connection, exception_handlers=[first, stop, never])
    assert calls == ['first', 'stop'] and worker.failed_job_count == 1
    worker.pop_exc_handler()
    worker.push_exc_handler(raising)

    calls.clear()
    job = Queue('q', connection=connection).enqueue(jobs.div_by_zero)
    after = Queue('q', connection=connection).enqueue(jobs.noop)
    work(connection, exception_handlers=[raising, never])
    assert calls == [] and job.get_status() == 'failed' and after.get_status() == 'finished'


def test_disable_default_exception_handler_keeps_the_failed_registry_empty(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.div_by_zero)
    work(connection, disable_default_exception_handler=True)
    assert job.get_status() == 'failed'
    assert FailedJobRegistry('q', connection=connection).count == 0


# ---------------------------------------------------------------------------------------------------
# Dependents


def test_dependents_released_on_success_and_with_allow_failure(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    ok = q.enqueue(jobs.add, 1, 1)
    bad = q.enqueue(jobs.div_by_zero)
    after_ok = q.enqueue(jobs.noop, depends_on=ok)
    after_bad = q.enqueue(jobs.noop, depends_on=rqfast.job.Dependency(jobs=[bad], allow_failure=True))
    blocked = q.enqueue(jobs.noop, depends_on=bad)
    both = q.enqueue(jobs.noop, depends_on=[ok, after_ok])
    work(connection)
    assert [j.get_status() for j in (after_ok, after_bad, blocked, both)] == [
        'finished',
        'finished',
        'deferred',
        'finished',
    ]


# ---------------------------------------------------------------------------------------------------
# The worker hash, counters and heartbeats


def test_worker_hash_while_busy_and_after(redis_conn: redis.Redis) -> None:
    q = Queue('q', connection=redis_conn)
    q.enqueue(jobs.add, 1, 1)
    q.enqueue(jobs.div_by_zero)
    probe = q.enqueue(worker_jobs.worker_hash_inside)
    worker = work(redis_conn, name='hashed', worker_ttl=100)
    inside = probe.return_value()
    fields = inside['fields']
    assert fields['state'] == 'busy' and fields['current_job'] == probe.id
    assert fields['queues'] == 'q' and fields['pid'] == str(os.getpid())
    assert fields['hostname'] == socket.gethostname() and fields['python_version'] == sys.version
    assert fields['version'] == rqfast.VERSION
    host, port = fields['ip_address'].rsplit(':', 1)
    assert host == '127.0.0.1' and port.isdigit()
    assert fields['successful_job_count'] == '1' and fields['failed_job_count'] == '1'
    assert float(fields['total_working_time']) > 0 and fields['current_job_working_time'] == '0'
    assert set(fields) >= {'birth', 'last_heartbeat'}
    # rqfast's heartbeat TTL: job_monitoring_interval 30 + JOB_HEARTBEAT_GRACE 10 (the executions entry: + 10 more)
    assert 38 <= inside['ttl'] <= 40 and 38 <= inside['execution_ttl'] <= 40
    assert 48 <= inside['executions_ttl'] <= 50 and 38 <= inside['started_expiry'] <= 41
    assert inside['job_ttl'] == -1

    after = {k.decode(): v.decode() for k, v in redis_conn.hgetall(worker.key).items()}
    assert after['successful_job_count'] == '2' and after['failed_job_count'] == '1'
    assert after['state'] == 'idle' and 'current_job' not in after and 'death' in after
    assert 0 < redis_conn.ttl(worker.key) <= 60


def test_short_job_timeout_keeps_the_heartbeat_ttl(redis_conn: redis.Redis) -> None:
    """Unlike RQ's forking rule (min(timeout, interval) + 60), a short timeout does not shorten it: the
    heartbeat thread beats every third of the interval whatever the timeout."""
    probe = Queue('q', connection=redis_conn).enqueue(worker_jobs.worker_hash_inside, job_timeout=5)
    work(redis_conn)
    assert 38 <= probe.return_value()['ttl'] <= 40


def test_idle_worker_hash_ttl_is_worker_ttl_plus_60(redis_conn: redis.Redis) -> None:
    worker = SimpleWorker(['q'], connection=redis_conn, worker_ttl=100)
    worker.register_birth()
    assert 158 <= redis_conn.ttl(worker.key) <= 160
    assert worker.heartbeat() is False
    assert 158 <= redis_conn.ttl(worker.key) <= 160
    redis_conn.set('rq:suspended', 1)
    assert worker.heartbeat() is True
    worker.register_death()


def test_heartbeats_keep_flowing_while_a_long_job_runs(redis_conn: redis.Redis) -> None:
    probe = Queue('q', connection=redis_conn).enqueue(worker_jobs.heartbeat_probe, 2.5, job_timeout=60)
    work(redis_conn, job_monitoring_interval=2)
    seen = probe.return_value()
    before, after = seen['before'], seen['after']
    assert after['worker_heartbeat'] > before['worker_heartbeat']
    assert after['job_heartbeat'] > before['job_heartbeat']
    assert after['started_score'] > before['started_score']
    assert after['working_time'] >= 1 and 60 <= after['worker_ttl'] <= 62


def test_rq_worker_all_lists_the_busy_rqfast_worker(redis_conn: redis.Redis) -> None:
    q = Queue('q', connection=redis_conn)
    q.enqueue(jobs.noop)
    probe = q.enqueue(worker_jobs.rq_sees_worker)
    work(redis_conn, name='seen-by-rq')
    assert probe.return_value() == [
        {
            'name': 'seen-by-rq',
            'state': 'busy',
            'current_job': probe.id,
            'queues': ['q'],
            'successful': 1,
            'failed': 0,
            'birth': True,
            'pid': os.getpid(),
            'hostname': socket.gethostname(),
        }
    ]


def test_worker_all_and_counters_read_back_with_rqfast(connection: redis.Redis) -> None:
    q = Queue('q', connection=connection)
    q.enqueue(jobs.noop)
    q.enqueue(jobs.div_by_zero)
    worker = SimpleWorker(['q'], connection=connection, name='counted')
    worker.register_birth()
    assert [w.name for w in SimpleWorker.all(connection=connection)] == ['counted']
    assert SimpleWorker.count(connection=connection, queue=q) == 1
    worker.register_death()
    work(connection, name='counted')
    assert worker.successful_job_count == 0  # the instance that did not run
    assert connection.hget(worker.key, 'successful_job_count') == b'1'
    assert connection.hget(worker.key, 'failed_job_count') == b'1'
    assert SimpleWorker.all(connection=connection) == []


# ---------------------------------------------------------------------------------------------------
# Waiting: a blocking move, never a window where a popped id is recorded nowhere


def test_waiter_hands_over_one_id_and_puts_the_others_back(redis_conn: redis.Redis) -> None:
    from rqfast.worker.waiting import Waiter

    a, b = Queue('a', connection=redis_conn), Queue('b', connection=redis_conn)
    first, second = a.enqueue(jobs.noop), b.enqueue(jobs.noop)
    b.enqueue(jobs.noop)
    waiter = Waiter(redis_conn, ['a', 'b'])
    try:
        assert waiter.wait(1) == ('a', first.id)
    finally:
        waiter.close()
    assert redis_conn.lrange('rq:queue:a:intermediate', 0, -1) == [first.id.encode()]
    assert redis_conn.llen('rq:queue:b:intermediate') == 0
    assert b.job_ids[0] == second.id and b.count == 2, 'the id moved on b is back at its head'


def test_waiter_times_out_with_nothing_moved(redis_conn: redis.Redis) -> None:
    from rqfast.worker.waiting import Waiter

    waiter = Waiter(redis_conn, ['a', 'b'])
    started = time.monotonic()
    try:
        assert waiter.wait(1) is None
    finally:
        waiter.close()
    assert 0.9 <= time.monotonic() - started < 20
    assert not redis_conn.keys('rq:queue:*')


def test_a_moved_id_is_claimed_out_of_the_intermediate_list(connection: redis.Redis) -> None:
    from rqfast import engine

    q = Queue('q', connection=connection)
    job = q.enqueue(jobs.noop)
    connection.lmove(q.key, q.intermediate_queue_key, 'LEFT', 'RIGHT')
    claim = engine.claim_job(connection, engine.WorkerRef('w', ['q']), moved=('q', job.id))
    assert claim.job_id == job.id and connection.llen(q.intermediate_queue_key) == 0
    assert StartedJobRegistry('q', connection=connection).get_job_ids(cleanup=False) == [job.id]
    assert job.get_status() == 'started'


# ---------------------------------------------------------------------------------------------------
# The engine's stopped outcome (sent by the workers that can stop a job: forking, spawn)


def test_a_stopped_job_releases_no_dependents(connection: redis.Redis) -> None:
    from rqfast import engine

    q = Queue('q', connection=connection)
    parent = q.enqueue(jobs.noop)
    child = q.enqueue(jobs.noop, depends_on=rqfast.job.Dependency(jobs=[parent], allow_failure=True))
    ref = engine.WorkerRef('stopper', ['q'])
    claim = engine.claim_job(connection, ref)
    assert claim.job_id == parent.id
    job = Job(parent.id, connection=connection)
    job.restore(claim.raw)
    job.started_at = job.ended_at = claim.started_at
    stopped = engine.Outcome(engine.OutcomeKind.STOPPED, exc_string='Job stopped by user, work-horse terminated.')
    plan = engine.plan(
        job, stopped, now(), worker_name='stopper', execution_id=claim.execution_id, started_at=claim.started_at
    )
    engine.finish_job(connection, parent.id, 'q', claim.execution_id, plan, 0.0, ref, claim_next=False)
    assert parent.get_status() == 'stopped' and child.get_status() == 'deferred'
    assert FailedJobRegistry('q', connection=connection).get_job_ids(cleanup=False) == [parent.id]
    assert StartedJobRegistry('q', connection=connection).get_job_ids(cleanup=False) == []
    latest = parent.latest_result()
    assert latest.type == latest.Type.FAILED and latest.exc_string.startswith('Job stopped by user')
