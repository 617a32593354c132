"""rqfast's lifecycle events: the capped stream rq:events:<queue> the scripts write for Queue(events=True) jobs."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from datetime import timedelta
from typing import Any

import pytest
import redis
import rq
from click.testing import CliRunner

import rqfast
from rqfast import Queue, Retry, SimpleWorker, keys
from rqfast.cli import main
from rqfast.events import Event, iter_events, job_events, read_events
from rqfast.registry import FailedJobRegistry
from rqfast.scheduler import RQScheduler

try:
    import jobs
    from test_worker_roundtrips import count_round_trips, per_job
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.test_worker_roundtrips import count_round_trips, per_job  # type: ignore[no-redef]

__all__ = ['count_round_trips']  # a fixture, used by name

pytestmark = pytest.mark.timeout(60)


def names(events: list[Event]) -> list[str]:
    return [event.name for event in events]


def work(connection: redis.Redis, *queues: str) -> SimpleWorker:
    worker = SimpleWorker(list(queues) or ['q'], connection=connection)
    worker.work(burst=True, logging_level='ERROR')
    return worker


def test_a_job_reporting_progress_has_its_events_in_order(connection: redis.Redis) -> None:
    """The acceptance run: queued, started, progress(50), finished, read through the reader API."""
    queue = Queue('q', connection=connection, events=True)
    job = queue.enqueue(jobs.report_progress, 50)
    worker = work(connection)
    events = read_events('q', connection)
    assert names(events) == ['queued', 'started', 'progress', 'finished']
    assert {e.job_id for e in events} == {job.id} and {e.queue for e in events} == {'q'}
    assert [e.worker for e in events] == ['', worker.name, worker.name, worker.name]
    assert events[2].progress == 50 and events[2].detail == '50' and events[0].progress is None
    ids = [tuple(map(int, e.id.split('-'))) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert abs(events[0].timestamp.timestamp() - time.time()) < 60
    assert job_events(job) == events and job.progress == 50 and job.return_value() == 1


def test_events_are_off_by_default(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection).enqueue(jobs.report_progress, 50)
    work(connection)
    assert job.progress == 50 and job.return_value() == 1
    assert connection.exists(keys.events_key('q')) == 0 and connection.hget(job.key, 'events') is None
    assert read_events('q', connection) == [] and job_events(job) == []


def test_the_flag_travels_with_the_job_not_the_worker(connection: redis.Redis) -> None:
    """Only the jobs of an events queue write events, whoever works the queue, in one shared stream."""
    on = Queue('q', connection=connection, events=True).enqueue(jobs.add, 1, 2)
    off = Queue('q', connection=connection).enqueue(jobs.add, 3, 4)
    assert connection.hget(on.key, 'events') == b'10000'
    work(connection)
    assert [(e.name, e.job_id) for e in read_events('q', connection)] == [
        ('queued', on.id),
        ('started', on.id),
        ('finished', on.id),
    ]
    assert off.return_value() == 7


def test_failures_retries_and_requeues(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection, events=True)
    failing = queue.enqueue(jobs.div_by_zero, retry=Retry(max=1))
    work(connection)
    events = job_events(failing)
    assert names(events) == ['queued', 'started', 'retried', 'started', 'failed']
    assert [e.detail for e in events[2::2]] == ['ZeroDivisionError', 'ZeroDivisionError']
    FailedJobRegistry('q', connection=connection).requeue(failing.id)
    assert names(job_events(failing))[-1] == 'requeued'
    later = queue.enqueue(jobs.raise_custom_error, retry=Retry(max=1, interval=30))
    work(connection)
    assert names(job_events(later)) == ['queued', 'started', 'scheduled']
    assert job_events(later)[-1].detail == 'CustomError'


def test_deferred_dependents_and_scheduled_jobs(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection, events=True)
    parent = queue.enqueue(jobs.add, 1, 1)
    child = queue.enqueue(jobs.add, 2, 2, depends_on=parent)
    later = queue.enqueue_in(timedelta(seconds=60), jobs.add, 3, 3)
    assert names(job_events(child)) == ['deferred'] and names(job_events(later)) == ['scheduled']
    work(connection)
    assert names(job_events(child)) == ['deferred', 'queued', 'started', 'finished']
    events = read_events('q', connection)
    finished_parent = next(i for i, e in enumerate(events) if e.job_id == parent.id and e.name == 'finished')
    queued_child = next(i for i, e in enumerate(events) if e.job_id == child.id and e.name == 'queued')
    assert finished_parent < queued_child  # the parent's outcome first, then the dependent it released


def test_the_scheduler_moving_a_due_job_writes_queued(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection, events=True).enqueue_in(timedelta(seconds=-1), jobs.add, 3, 3)
    scheduler = RQScheduler(['q'], connection=connection)
    try:
        assert scheduler.tick() == {'q': 1}
    finally:
        scheduler.stop()
    assert names(job_events(job)) == ['scheduled', 'queued']


def test_a_job_waiting_for_its_rate_window_writes_scheduled(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection, events=True)
    first, second = (queue.enqueue(jobs.add, n, 1, rate_limit=rqfast.RateLimit('w', rate=1, per=60)) for n in (1, 2))
    work(connection)
    assert names(job_events(first)) == ['queued', 'started', 'finished']
    assert names(job_events(second)) == ['queued', 'scheduled']  # claimed, then planned for the next window
    assert second.get_status() == 'scheduled'


def test_reading_from_an_id_and_waiting(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection, events=True)
    first = queue.enqueue(jobs.add, 1, 1)
    assert list(iter_events('q', connection)) == []  # since '$': only what comes next
    assert list(iter_events(queue, connection, since='$', block=0.2)) == []  # waited, then stopped
    mark = read_events('q', connection)[-1].id
    second = queue.enqueue(jobs.add, 2, 2)
    assert [e.job_id for e in read_events('q', connection, since=mark)] == [second.id]
    assert [e.job_id for e in iter_events('q', connection, since='0', count=1)] == [first.id, second.id]


def test_the_stream_is_capped(redis_conn: redis.Redis) -> None:
    queue = Queue('q', connection=redis_conn, events=5)
    queue.enqueue_many([Queue.prepare_data(jobs.add, (i, 1)) for i in range(300)])
    length = redis_conn.xlen(keys.events_key('q'))
    assert 5 <= length < 300  # MAXLEN ~ trims whole stream nodes: about the cap, not exactly


@pytest.mark.parametrize('bad', [-1, 0.5, 'yes'])
def test_a_bad_events_value_is_refused(connection: redis.Redis, bad: Any) -> None:
    with pytest.raises(ValueError, match='events must be True, False or a positive number'):
        Queue('q', connection=connection, events=bad)
    assert connection.keys('*') == []


def test_an_rq_worker_runs_such_a_job_and_writes_no_events(redis_conn: redis.Redis) -> None:
    job = Queue('q', connection=redis_conn, events=True).enqueue(jobs.add, 2, 3)
    rq.SimpleWorker(['q'], connection=redis_conn).work(burst=True, logging_level='ERROR')
    assert job.return_value() == 5 and names(job_events(job)) == ['queued']


def test_events_cost_no_round_trip(redis_conn: redis.Redis, count_round_trips: Any) -> None:
    """A job that reports progress costs the same round trips with events on as with them off (1 + 1)."""
    costs = []
    for events in (False, True):
        q = Queue('q', connection=redis_conn, events=events)

        def enqueue(n: int, q: Queue = q) -> None:
            q.enqueue_many([q.prepare_data(jobs.report_progress, (50,)) for _ in range(n)])

        cost, small, large = per_job(redis_conn, count_round_trips, enqueue)
        costs.append(cost)
    assert costs == [2, 2], costs
    assert redis_conn.xlen(keys.events_key('q')) > 0


def test_a_forked_horse_reports_progress_events(redis_conn: redis.Redis) -> None:
    job = Queue('q', connection=redis_conn, events=True).enqueue(jobs.report_progress, 50)
    rqfast.Worker(['q'], connection=redis_conn).work(burst=True, logging_level='ERROR')
    events = job_events(job)
    assert names(events) == ['queued', 'started', 'progress', 'finished'] and events[2].progress == 50


def test_cli_prints_the_events(redis_conn: redis.Redis, redis_url: str) -> None:
    job = Queue('q', connection=redis_conn, events=True).enqueue(jobs.report_progress, 50)
    work(redis_conn)
    result = CliRunner().invoke(main, ['events', 'q', '--since', '0', '--no-follow', '-u', redis_url])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    expected = [[name, job.id] for name in ('queued', 'started', 'progress', 'finished')]
    assert [line.split()[1:3] for line in lines] == expected
    assert lines[2].endswith(' 50') and 'worker=' in lines[1] and lines[0].endswith('Z queued ' + job.id)
    only_new = CliRunner().invoke(main, ['events', 'q', '--no-follow', '-u', redis_url])
    assert only_new.exit_code == 0 and only_new.output == ''


def test_a_worker_with_concurrency_writes_each_jobs_events(connection: redis.Redis) -> None:
    """finish_jobs.lua: several outcomes and claims in one call, each outcome's event among them."""
    queue = Queue('q', connection=connection, events=True)
    ran = [queue.enqueue(jobs.report_progress, 50) for _ in range(4)] + [queue.enqueue(jobs.div_by_zero)]
    plain = Queue('q', connection=connection).enqueue(jobs.add, 1, 1)
    SimpleWorker(['q'], connection=connection, concurrency=3).work(burst=True, logging_level='ERROR')
    for job in ran[:4]:
        assert names(job_events(job)) == ['queued', 'started', 'progress', 'finished']
    failed = job_events(ran[4])
    assert names(failed) == ['queued', 'started', 'failed'] and failed[-1].detail == 'ZeroDivisionError'
    assert plain.return_value() == 2 and job_events(plain) == []


def test_cli_follows_new_events(redis_conn: redis.Redis, redis_url: str) -> None:
    """`rqfast events q` (default --since $, --follow) prints the events written after it started, as they come."""
    tail = subprocess.Popen(
        [sys.executable, '-m', 'rqfast', 'events', 'q', '-u', redis_url], stdout=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    assert tail.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(tail.stdout or []), daemon=True)
    reader.start()
    try:
        queue, enqueued = Queue('q', connection=redis_conn, events=True), []
        deadline = time.monotonic() + 30
        while not lines:  # events written before it read the stream's end are not printed: enqueue until one is
            assert time.monotonic() < deadline, 'rqfast events printed nothing'
            enqueued.append(queue.enqueue(jobs.add, 1, 1).id)
            time.sleep(0.3)
        name, job_id = lines[0].split()[1:3]
        assert name == 'queued' and job_id in enqueued
    finally:
        tail.terminate()
        tail.wait(timeout=10)


def test_cancel_and_a_sync_queue(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection, events=True)
    job = queue.enqueue(jobs.add, 1, 1)
    job.cancel()
    assert names(job_events(job)) == ['queued', 'canceled']
    ran = Queue('s', connection=connection, events=True, is_async=False).enqueue(jobs.report_progress, 50)
    events = job_events(ran)  # run in this process: no claim, so no `started`
    assert names(events) == ['queued', 'progress', 'finished'] and events[1].progress == 50


def test_a_bad_events_field_never_fails_the_state_change(connection: redis.Redis) -> None:
    job = Queue('q', connection=connection, events=True).enqueue(jobs.add, 1, 1)
    connection.hset(job.key, 'events', 'lots')  # written by hand: the scripts treat it as no events
    work(connection)
    assert job.return_value() == 2 and names(job_events(job)) == ['queued']
