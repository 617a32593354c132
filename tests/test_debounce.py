"""debounce=(key, delay) and throttle=(key, ttl) on enqueue (rqfast.debounce, lua/enqueue_debounced.lua,
lua/enqueue_throttled.lua): only the last enqueue of a burst runs, `delay` after it; at most one job per
`ttl` under a throttle key. The acceptance run: 8 processes enqueue 50 times each under one key.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
import redis
import rq
import rq.scheduler

from rqfast import Queue, RateLimit, SimpleWorker, keys
from rqfast.decorators import job as job_decorator
from rqfast.job import Job, JobStatus
from rqfast.registry import FinishedJobRegistry, ScheduledJobRegistry
from rqfast.scheduler import RQScheduler

try:
    import jobs
    from polling import wait_for
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.polling import wait_for  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(90)

RECORD = f'{jobs.__name__}.record_run'


def runs(connection: redis.Redis) -> list[tuple[list[Any], float]]:
    """[args, time] of every record_run job that ran."""
    return [tuple(json.loads(entry)) for entry in connection.lrange(jobs.RUNS_KEY, 0, -1)]  # type: ignore[misc]


def job_hashes(connection: redis.Redis) -> list[bytes]:
    return [key for key in connection.keys(f'{keys.JOB_PREFIX}*') if key.count(b':') == 2]


def work(connection: redis.Redis) -> None:
    SimpleWorker(['q'], connection=connection).work(burst=True, logging_level=None)


def move_due(connection: redis.Redis) -> None:
    scheduler = RQScheduler(['q'], connection=connection)
    scheduler.tick()
    scheduler.stop()


# --- debounce


def test_each_enqueue_of_a_burst_replaces_the_waiting_job(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first = queue.enqueue(RECORD, 1, debounce=('k', 30))
    second = queue.enqueue(RECORD, 2, debounce=('k', 30))
    before = time.time()
    last = queue.enqueue(RECORD, 3, debounce=('k', timedelta(seconds=30)))

    assert not Job.exists(first.id, connection) and not Job.exists(second.id, connection)  # deleted, as job.delete()
    assert ScheduledJobRegistry('q', connection=connection).get_job_ids() == [last.id]
    score = connection.zscore(keys.scheduled_registry_key('q'), last.id)
    assert math.ceil(before + 30) <= score <= math.ceil(time.time() + 30)  # never due before the delay
    assert last.get_status() == JobStatus.SCHEDULED and Job.fetch(last.id, connection).args == (3,)
    assert connection.get(keys.debounce_key('k')) == last.id.encode()
    assert 30 < connection.ttl(keys.debounce_key('k')) <= 30 + 86400
    assert queue.job_ids == []


def test_only_the_last_enqueue_runs_with_its_arguments(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    for n in range(5):
        last = queue.enqueue(RECORD, n, debounce=('k', 1))
    enqueued_at = time.time()
    move_due(connection)
    work(connection)
    assert runs(connection) == []  # not due yet

    wait_for(lambda: time.time() >= math.ceil(enqueued_at + 1), timeout=5, step=0.02)
    move_due(connection)
    work(connection)

    assert [args for args, _ in runs(connection)] == [[4]]
    assert FinishedJobRegistry('q', connection=connection).get_job_ids() == [last.id]
    assert job_hashes(connection) == [last.key.encode()]


def test_a_job_the_scheduler_moved_onto_the_queue_is_still_replaced(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first = queue.enqueue(RECORD, 1, debounce=('k', 0))
    wait_for(lambda: time.time() >= connection.zscore(keys.scheduled_registry_key('q'), first.id), step=0.02)
    move_due(connection)
    assert queue.job_ids == [first.id] and first.get_status() == JobStatus.QUEUED

    second = queue.enqueue(RECORD, 2, debounce=('k', 0))

    assert queue.job_ids == [] and not Job.exists(first.id, connection)
    assert second.get_status() == JobStatus.SCHEDULED


def test_a_started_job_ends_its_burst(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first = queue.enqueue(RECORD, 1, debounce=('k', 0))
    wait_for(lambda: time.time() >= connection.zscore(keys.scheduled_registry_key('q'), first.id), step=0.02)
    move_due(connection)
    work(connection)
    assert first.get_status() == JobStatus.FINISHED

    second = queue.enqueue(RECORD, 2, debounce=('k', 30))

    assert first.get_status() == JobStatus.FINISHED  # kept: it ran
    assert second.get_status() == JobStatus.SCHEDULED
    assert connection.get(keys.debounce_key('k')) == second.id.encode()


def test_a_job_waiting_again_after_it_started_is_not_replaced(connection: redis.Redis) -> None:
    """A retry or a repeat waits in the scheduled registry again, but it has run: its burst is over."""
    queue = Queue('q', connection=connection)
    first = queue.enqueue(RECORD, 1, debounce=('k', 30))
    connection.hset(first.key, 'started_at', '2026-01-01T00:00:00.000000Z')  # as a run leaves it

    second = queue.enqueue(RECORD, 2, debounce=('k', 30))

    assert set(ScheduledJobRegistry('q', connection=connection).get_job_ids()) == {first.id, second.id}


def test_a_replaced_rate_limited_job_frees_its_slot(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first = queue.enqueue(RECORD, 1, debounce=('k', 0), rate_limit=RateLimit('rl', 1))
    wait_for(lambda: time.time() >= connection.zscore(keys.scheduled_registry_key('q'), first.id), step=0.02)
    move_due(connection)
    assert first.get_status() == JobStatus.QUEUED  # promoted: it holds the key's one slot
    assert connection.zrange(keys.rate_limit_allowed_key('rl'), 0, -1) == [first.id.encode()]

    second = queue.enqueue(RECORD, 2, debounce=('k', 30), rate_limit=RateLimit('rl', 1))

    assert not Job.exists(first.id, connection) and queue.job_ids == []
    assert connection.zcard(keys.rate_limit_allowed_key('rl')) == 0
    assert second.get_status() == JobStatus.SCHEDULED


def test_a_sync_queue_schedules_a_debounced_job_as_enqueue_in_does(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection, is_async=False)
    queue.enqueue(RECORD, 1, debounce=('k', 30))
    last = queue.enqueue(RECORD, 2, debounce=('k', 30), at_front=True)
    assert last.get_status() == JobStatus.SCHEDULED and runs(connection) == []
    assert ScheduledJobRegistry('q', connection=connection).get_job_ids() == [last.id]
    assert Job.fetch(last.id, connection).enqueue_at_front


def test_keys_are_independent_and_plain_jobs_untouched(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    plain = queue.enqueue(RECORD, 0)
    a = queue.enqueue(RECORD, 1, debounce=('a', 30))
    b = queue.enqueue(RECORD, 2, debounce=('b', 30))
    assert queue.job_ids == [plain.id]
    assert set(ScheduledJobRegistry('q', connection=connection).get_job_ids()) == {a.id, b.id}


def test_an_rq_scheduler_and_worker_run_a_debounced_job(connection: redis.Redis) -> None:
    """rq 2.12 reads the layout: its scheduler moves the job, its worker runs it (the new keys it ignores)."""
    queue = Queue('q', connection=connection)
    for n in range(3):
        last = queue.enqueue(RECORD, n, debounce=('k', 0))
    wait_for(lambda: time.time() >= connection.zscore(keys.scheduled_registry_key('q'), last.id), step=0.02)
    theirs = rq.scheduler.RQScheduler(['q'], connection=connection)
    theirs.acquire_locks()
    theirs.enqueue_scheduled_jobs()
    theirs.release_locks()
    rq.SimpleWorker(['q'], connection=connection).work(burst=True)

    assert [args for args, _ in runs(connection)] == [[2]]
    assert rq.job.Job.fetch(last.id, connection=connection).get_status() == 'finished'


def test_debounce_on_the_job_decorator_and_enqueue_many(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)

    @job_decorator(queue, debounce=('decorated', 30))
    def record(*args: Any) -> None: ...

    record.__module__, record.__qualname__ = jobs.__name__, 'record_run'  # the worker imports tests.jobs's
    record.delay(1)
    last = record.delay(2)
    per_call = record.delay(3, debounce=('other', 30))
    assert set(ScheduledJobRegistry('q', connection=connection).get_job_ids()) == {last.id, per_call.id}
    assert Job.fetch(last.id, connection).args == (2,)

    made = queue.enqueue_many(
        [
            Queue.prepare_data(RECORD, (1,), debounce=('many', 30)),
            Queue.prepare_data(RECORD, (2,)),
            Queue.prepare_data(RECORD, (3,), debounce=('many', 30)),
        ]
    )
    assert [job.args for job in made] == [(2,), (1,), (3,)]
    assert queue.job_ids == [made[0].id]
    assert not Job.exists(made[1].id, connection)
    assert connection.get(keys.debounce_key('many')) == made[2].id.encode()
    (theirs,) = queue.enqueue_many([rq.Queue.prepare_data(RECORD, (4,))])  # RQ's EnqueueData has no such fields
    assert queue.job_ids == [made[0].id, theirs.id]


# --- throttle


def test_enqueues_inside_the_window_give_one_job(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first = queue.enqueue(RECORD, 1, throttle=('t', 30))
    again = [queue.enqueue(RECORD, n, throttle=('t', 30)) for n in range(2, 6)]

    assert queue.job_ids == [first.id]
    assert all(job.id == first.id and job.args == (1,) for job in again)  # the job that holds the window
    assert len(job_hashes(connection)) == 1
    assert 29_000 < connection.pttl(keys.throttle_key('t')) <= 30_000
    work(connection)
    assert [args for args, _ in runs(connection)] == [[1]]


def test_an_enqueue_after_the_window_gives_a_second_run(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first = queue.enqueue(RECORD, 1, throttle=('t', 0.3))
    assert queue.enqueue(RECORD, 2, throttle=('t', 0.3)).id == first.id
    work(connection)
    wait_for(lambda: not connection.exists(keys.throttle_key('t')), timeout=5, step=0.02)

    second = queue.enqueue(RECORD, 3, throttle=('t', 0.3))
    assert queue.enqueue(RECORD, 4, throttle=('t', 0.3)).id == second.id != first.id
    work(connection)

    assert [args for args, _ in runs(connection)] == [[1], [3]]


def test_a_throttled_enqueue_whose_holder_is_gone_returns_its_id(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    first = queue.enqueue(RECORD, 1, throttle=('t', 30), result_ttl=0)
    work(connection)  # result_ttl=0: the hash is deleted once it ran
    held = queue.enqueue(RECORD, 2, throttle=('t', 30))
    assert held.id == first.id and not Job.exists(first.id, connection)
    assert queue.job_ids == []


def test_throttle_with_dependencies_a_sync_queue_and_the_decorator(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    parent = queue.enqueue(RECORD, 0)
    child = queue.enqueue(RECORD, 1, throttle=('t', 30), depends_on=parent)
    assert child.get_status() == JobStatus.DEFERRED
    assert queue.enqueue(RECORD, 2, throttle=('t', 30)).id == child.id

    limited = queue.enqueue(RECORD, 7, throttle=('r', 30), rate_limit=RateLimit('rl', 1))
    assert queue.enqueue(RECORD, 8, throttle=('r', 30), rate_limit=RateLimit('rl', 1)).id == limited.id
    assert connection.zrange(keys.rate_limit_allowed_key('rl'), 0, -1) == [limited.id.encode()]

    sync = Queue('sync', connection=connection, is_async=False)
    ran = sync.enqueue(RECORD, 3, throttle=('s', 30))
    assert ran.get_status() == JobStatus.FINISHED
    assert sync.enqueue(RECORD, 4, throttle=('s', 30)).id == ran.id
    assert [args for args, _ in runs(connection)] == [[3]]  # the throttled one did not run

    @job_decorator(queue, throttle=('decorated', 30))
    def record(*args: Any) -> None: ...

    record.__module__, record.__qualname__ = jobs.__name__, 'record_run'
    assert record.delay(5).id == record.delay(6).id


def test_jobs_of_a_signing_queue_are_signed_through_the_guards(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection, signing_key=b'secret')
    debounced = queue.enqueue(RECORD, 1, debounce=('k', 0))
    throttled = queue.enqueue(RECORD, 2, throttle=('t', 30))
    wait_for(lambda: time.time() >= connection.zscore(keys.scheduled_registry_key('q'), debounced.id), step=0.02)
    move_due(connection)
    SimpleWorker(['q'], connection=connection, signing_key=b'secret').work(burst=True, logging_level=None)
    assert debounced.get_status() == throttled.get_status() == JobStatus.FINISHED
    assert sorted(args for args, _ in runs(connection)) == [[1], [2]]


# --- bad input: a clear error before anything touches Redis


class Untouchable(redis.Redis):
    def execute_command(self, *args: Any, **options: Any) -> Any:
        raise AssertionError(f'Redis was touched: {args[:2]}')


@pytest.mark.parametrize(
    'options',
    [
        {'debounce': ('', 1)},
        {'debounce': ('k', -1)},
        {'debounce': ('k', timedelta(seconds=-1))},
        {'debounce': ('k',)},
        {'debounce': 'k'},
        {'debounce': (1, 1)},
        {'debounce': ('k', 'soon')},
        {'debounce': ('k', float('nan'))},
        {'debounce': ('k', True)},
        {'throttle': ('', 1)},
        {'throttle': ('k', 0)},
        {'throttle': ('k', -5)},
        {'throttle': ('k', None)},
        {'debounce': ('k', 1), 'throttle': ('k', 1)},
        {'debounce': ('k', 1), 'depends_on': 'parent'},
        {'debounce': ('k', 1), 'job_id': 'x', 'unique': True},
        {'throttle': ('k', 1), 'job_id': 'x', 'unique': True},
        {'throttle': ('k', 1), 'pipeline': object()},
    ],
)
def test_bad_options_raise_before_redis_is_touched(options: dict[str, Any]) -> None:
    queue = Queue('q', connection=Untouchable())
    with pytest.raises(ValueError):
        queue.enqueue(RECORD, 1, **options)
    if 'unique' not in options:  # (prepare_data takes no unique=; enqueue_many takes the pipeline)
        pipeline = options.pop('pipeline', None)
        with pytest.raises(ValueError):
            queue.enqueue_many([Queue.prepare_data(RECORD, (1,), **options)], pipeline=pipeline)


def test_debounce_and_throttle_are_refused_by_enqueue_at_and_enqueue_in() -> None:
    queue = Queue('q', connection=Untouchable())
    with pytest.raises(ValueError, match='enqueue_at'):
        queue.enqueue_in(timedelta(seconds=5), RECORD, 1, debounce=('k', 1))
    with pytest.raises(ValueError, match='enqueue_at'):
        queue.enqueue_in(timedelta(seconds=5), RECORD, 1, throttle=('k', 1))


# --- race-free across producers


def test_threads_racing_on_one_key_leave_one_job(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    barrier = threading.Barrier(8)

    def produce(worker: int) -> None:
        barrier.wait()
        for n in range(25):
            queue.enqueue(RECORD, worker, n, debounce=('k', 30))
            queue.enqueue(RECORD, worker, n, throttle=('t', 30))

    threads = [threading.Thread(target=produce, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    scheduled = ScheduledJobRegistry('q', connection=connection).get_job_ids()
    assert scheduled == [connection.get(keys.debounce_key('k')).decode()]
    assert queue.job_ids == [connection.get(keys.throttle_key('t')).decode()]
    assert len(job_hashes(connection)) == 2


def _produce(url: str, barrier: Any, results: Any, worker: int, count: int, delay: float) -> None:
    connection = redis.Redis.from_url(url)
    queue = Queue('q', connection=connection)
    barrier.wait()
    calls = []
    for n in range(count):
        started = time.time()
        job = queue.enqueue(RECORD, worker, n, debounce=('burst', delay))
        calls.append((job.id, [worker, n], started, time.time()))
    results.put(calls)


def test_eight_processes_enqueue_fifty_times_one_run_after_the_last(redis_conn: redis.Redis, redis_url: str) -> None:
    """The acceptance run: a worker and a scheduler (polling every 0.1 s) run throughout the burst."""
    delay, poll = 2.0, 0.1
    context = multiprocessing.get_context('fork')
    barrier, results = context.Barrier(8), context.Queue()
    producers = [context.Process(target=_produce, args=(redis_url, barrier, results, w, 50, delay)) for w in range(8)]
    for producer in producers:
        producer.start()
    scheduler = RQScheduler(['q'], connection=redis_conn, interval=poll)
    scheduler.start()
    try:
        calls = [call for _ in producers for call in results.get(timeout=60)]
        for producer in producers:
            producer.join(10)
            assert producer.exitcode == 0
        # the worker keeps working until the burst's job has run (and a while after, for any other)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not runs(redis_conn):
            work(redis_conn)
            time.sleep(0.02)
        time.sleep(poll * 3)
        work(redis_conn)
    finally:
        scheduler.stop()

    assert len(calls) == 400
    survivor = redis_conn.get(keys.debounce_key('burst')).decode()
    (last,) = [call for call in calls if call[0] == survivor]
    assert last[3] >= max(started for job_id, _, started, _ in calls if job_id != survivor)  # it committed last
    assert len(runs(redis_conn)) == 1, runs(redis_conn)
    ((args, ran_at),) = runs(redis_conn)
    assert args == last[1]  # the arguments of the last enqueue
    assert job_hashes(redis_conn) == [keys.job_key(survivor).encode()]
    # due at the whole second after last + delay (RQ's scores are whole seconds), moved within a poll
    assert ran_at - last[2] >= delay - 0.01, ran_at - last[2]
    assert ran_at - last[3] <= delay + 1 + poll + 1.5, ran_at - last[3]
