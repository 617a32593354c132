"""The scheduler: due jobs move from rq:scheduled:<q> onto their queues, under RQ's scheduler locks.

RQ's own RQScheduler is the other party: it holds a lock rqfast must honour, and the two run side
by side on the same queues over 1,000 scheduled jobs, each of which must be enqueued exactly once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import redis
import rq
import rq.scheduler

from rqfast import Queue, Repeat, Retry, SimpleWorker, keys
from rqfast.job import JobStatus
from rqfast.results import Result
from rqfast.scheduler import RQScheduler

try:
    import jobs
    import worker_jobs
    from polling import wait_for
except ImportError:  # tests/ became a package
    from tests import jobs, worker_jobs  # type: ignore[no-redef]
    from tests.polling import wait_for  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)

TESTS = Path(__file__).resolve().parent


def wait_until_due(connection: redis.Redis, queue: str, job_id: str) -> None:
    score = connection.zscore(keys.scheduled_registry_key(queue), job_id)
    assert score is not None
    time.sleep(max(0.0, score - time.time() + 0.05))


@pytest.fixture
def scheduler(connection: redis.Redis) -> Iterator[RQScheduler]:
    sched = RQScheduler(['q'], connection=connection)
    yield sched
    sched.stop()


# --- one tick


def test_due_jobs_move_and_the_rest_wait(connection: redis.Redis, scheduler: RQScheduler) -> None:
    queue = Queue('q', connection=connection)
    due = queue.enqueue_at(datetime.now(timezone.utc) - timedelta(seconds=5), jobs.add, 1, 2)
    due_in = queue.enqueue_in(timedelta(seconds=-1), jobs.noop)
    later = queue.enqueue_in(timedelta(seconds=60), jobs.noop)
    before = datetime.now(timezone.utc).replace(microsecond=0)

    assert scheduler.tick() == {'q': 2}

    assert queue.get_job_ids() == [due.id, due_in.id]
    assert due.get_status() == JobStatus.QUEUED
    due.refresh()
    assert due.enqueued_at is not None and due.enqueued_at >= before
    assert connection.zrange(keys.scheduled_registry_key('q'), 0, -1) == [later.id.encode()]
    assert later.get_status() == JobStatus.SCHEDULED
    assert scheduler.tick() == {}


def test_front_of_the_queue_and_missing_jobs(connection: redis.Redis, scheduler: RQScheduler) -> None:
    queue = Queue('q', connection=connection)
    waiting = queue.enqueue(jobs.noop)
    past = datetime.now(timezone.utc) - timedelta(seconds=5)
    front = queue.enqueue_at(past, jobs.noop, at_front=True)  # moved in due order: front, back, rerun
    back = queue.enqueue_at(past + timedelta(seconds=1), jobs.noop)
    rerun = queue.enqueue_at(past + timedelta(seconds=2), jobs.noop, retry=Retry(max=1, enqueue_at_front=True))
    connection.hset(keys.job_key(rerun.id), 'ended_at', '2026-01-01T00:00:00.000000Z')  # it ran before
    connection.zadd(keys.scheduled_registry_key('q'), {'gone': 1})

    scheduler.tick()

    assert queue.get_job_ids() == [rerun.id, front.id, waiting.id, back.id]
    assert connection.zcard(keys.scheduled_registry_key('q')) == 0
    assert not connection.exists(keys.job_key('gone'))


def test_job_ttl_is_applied_when_moved(connection: redis.Redis, scheduler: RQScheduler) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue_in(timedelta(seconds=-1), jobs.noop, ttl=100)
    connection.persist(keys.job_key(job.id))

    scheduler.tick()

    assert 0 < connection.ttl(keys.job_key(job.id)) <= 100


def test_lock_and_hash_follow_rq(connection: redis.Redis, scheduler: RQScheduler) -> None:
    queue = Queue('q', connection=connection)
    scheduler.tick()

    assert connection.get(keys.scheduler_lock_key('q')) == scheduler.name.encode()
    assert 0 < connection.ttl(keys.scheduler_lock_key('q')) <= 61
    fields = {k.decode(): v.decode() for k, v in connection.hgetall(scheduler.key).items()}
    assert set(fields) == {'name', 'hostname', 'pid', 'queues', 'created_at', 'last_heartbeat'}
    assert fields['name'] == scheduler.name and fields['queues'] == 'q' and fields['pid'] == str(os.getpid())
    assert 0 < connection.ttl(scheduler.key) <= 61
    assert len(scheduler.name) == 32  # uuid4().hex, as RQ names its schedulers
    assert queue.scheduler_pid == os.getpid()
    assert RQScheduler.fetch(scheduler.name, connection).pid == os.getpid()

    scheduler.stop()

    assert not connection.exists(keys.scheduler_lock_key('q'))
    assert not connection.exists(scheduler.key)
    assert queue.scheduler_pid is None


def test_a_lock_held_by_another_scheduler_is_honoured(connection: redis.Redis, scheduler: RQScheduler) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue_in(timedelta(seconds=-1), jobs.noop)
    connection.set(keys.scheduler_lock_key('q'), 'someone-else', ex=61)

    assert scheduler.tick() == {}
    assert scheduler.acquired_locks == set()
    assert job.get_status() == JobStatus.SCHEDULED
    scheduler.stop()
    assert connection.get(keys.scheduler_lock_key('q')) == b'someone-else'  # not ours to release

    connection.delete(keys.scheduler_lock_key('q'))
    other = RQScheduler(['q'], connection=connection)
    assert other.tick() == {'q': 1}
    other.stop()


def test_the_tick_is_one_round_trip(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    queues = [Queue(name, connection=redis_conn) for name in ('a', 'b', 'c')]
    for queue in queues:
        for _ in range(5):
            queue.enqueue_in(timedelta(seconds=-1), jobs.noop)
    sched = RQScheduler(queues, connection=redis_conn)
    sched.tick(move=False)  # loads the script
    sent: list[Any] = []
    original = redis.connection.Connection.send_packed_command

    def counting(self: Any, command: Any, check_health: bool = True) -> None:
        sent.append(command)
        original(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, 'send_packed_command', counting)
    moved = sched.tick()
    monkeypatch.undo()
    sched.stop()

    assert moved == {'a': 5, 'b': 5, 'c': 5}
    assert len(sent) == 1


# --- in the worker


def test_burst_worker_with_scheduler_runs_due_jobs(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue_in(timedelta(seconds=-1), jobs.add, 2, 3)

    SimpleWorker(['q'], connection=connection).work(burst=True, with_scheduler=True, logging_level=None)

    assert job.get_status() == JobStatus.FINISHED
    assert job.return_value() == 5
    assert not connection.exists(keys.scheduler_lock_key('q'))
    assert connection.keys('rq:scheduler:*') == []


def test_retry_interval_flows_through_the_scheduler(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue(f'{worker_jobs.__name__}.fail_until', 1, retry=Retry(max=1, interval=1))
    worker = SimpleWorker(['q'], connection=connection)
    worker.work(burst=True, with_scheduler=True, logging_level=None)
    assert job.get_status() == JobStatus.SCHEDULED

    wait_until_due(connection, 'q', job.id)
    SimpleWorker(['q'], connection=connection).work(burst=True, with_scheduler=True, logging_level=None)

    assert job.get_status() == JobStatus.FINISHED
    assert job.return_value() == 2


def test_repeat_interval_flows_through_the_scheduler(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    job = queue.enqueue(jobs.add, 1, 1, repeat=Repeat(times=1, interval=1))
    SimpleWorker(['q'], connection=connection).work(burst=True, with_scheduler=True, logging_level=None)
    assert job.get_status() == JobStatus.SCHEDULED

    wait_until_due(connection, 'q', job.id)
    SimpleWorker(['q'], connection=connection).work(burst=True, with_scheduler=True, logging_level=None)

    assert job.get_status() == JobStatus.FINISHED
    assert [r.type for r in job.results()] == [Result.Type.SUCCESSFUL, Result.Type.SUCCESSFUL]


def test_scheduler_thread_moves_jobs_as_they_fall_due(redis_conn: redis.Redis) -> None:
    queue = Queue('q', connection=redis_conn)
    sched = RQScheduler(['q'], connection=redis_conn)
    sched.start()
    try:
        wait_for(lambda: queue.scheduler_pid == os.getpid(), timeout=5)
        job = queue.enqueue_in(timedelta(seconds=1), jobs.noop)
        took = wait_for(lambda: job.get_status() == JobStatus.QUEUED, timeout=30)
        assert took < 15  # moved when due, not at the fallback period (120 s)
    finally:
        sched.stop()
    assert queue.scheduler_pid is None


def test_work_sleeps_with_time_sleep_as_rqs_loop(connection: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """work() waits between rounds with time.sleep, as RQ's loop does (its tests patch it to end the loop
    after one round); listening for planned jobs changes nothing there, and its listener stops with it."""
    sched = RQScheduler(['q'], connection=connection)
    sleeps: list[float] = []

    def sleep_once(seconds: float) -> None:
        sleeps.append(seconds)
        sched.request_stop()

    monkeypatch.setattr('rqfast.scheduler.time.sleep', sleep_once)
    loop = threading.Thread(target=sched.work, daemon=True)
    loop.start()
    loop.join(5)
    if loop.is_alive():  # (a loop that sleeps some other way never ends: end it, then fail)
        sched._stop_requested = True
        loop.join(5)
        pytest.fail('work() did not end after the patched time.sleep asked it to stop')
    assert len(sleeps) == 1 and 0 < sleeps[0] <= 1
    assert sched._planned is None
    assert not connection.exists(sched.key)  # (the hash released, the loop over)


# --- side by side with RQ's scheduler


RQ_SCHEDULER = """
import sys
from redis import Redis
from rq.scheduler import RQScheduler
RQScheduler(sys.argv[2].split(','), connection=Redis.from_url(sys.argv[1]), name=sys.argv[3]).work()
"""


def start_rq_scheduler(redis_url: str, queues: list[str], name: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(TESTS.parent)]))
    return subprocess.Popen(
        [sys.executable, '-c', RQ_SCHEDULER, redis_url, ','.join(queues), name],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_an_rq_scheduler_lock_is_honoured(redis_conn: redis.Redis) -> None:
    queue = Queue('q', connection=redis_conn)
    job = queue.enqueue_in(timedelta(seconds=-1), jobs.noop)
    theirs = rq.scheduler.RQScheduler(['q'], connection=redis_conn)
    assert theirs.acquire_locks() == {'q'}
    ours = RQScheduler(['q'], connection=redis_conn)

    assert ours.tick() == {}
    assert job.get_status() == JobStatus.SCHEDULED

    theirs.release_locks()
    assert ours.tick() == {'q': 1}
    assert rq.Queue('q', connection=redis_conn).scheduler_pid == os.getpid()  # RQ reads our lock and hash
    assert theirs.acquire_locks() == set()  # and RQ honours ours
    ours.stop()


def test_rq_and_rqfast_schedulers_enqueue_each_of_1000_jobs_once(redis_conn: redis.Redis, redis_url: str) -> None:
    names = ['a', 'b', 'c', 'd']
    ours = RQScheduler(names, connection=redis_conn)
    for name in ('c', 'd'):  # ours holds two locks before RQ starts, so each side starts with some
        redis_conn.set(keys.scheduler_lock_key(name), ours.name, ex=61)
    theirs = start_rq_scheduler(redis_url, names, 'rq-side')
    holders: dict[str, set[str]] = {name: set() for name in names}

    def observe() -> None:
        for name in names:
            holder = redis_conn.get(keys.scheduler_lock_key(name))
            if holder:
                holders[name].add(holder.decode())

    try:
        wait_for(lambda: redis_conn.get(keys.scheduler_lock_key('a')) == b'rq-side', timeout=10)
        ours.start()
        queues = [Queue(name, connection=redis_conn) for name in names]
        start = datetime.now(timezone.utc)
        ids: list[str] = []
        for i in range(1000):  # due over the next 10 s, so ticks on both sides move them
            job = queues[i % 4].enqueue_at(start + timedelta(milliseconds=10 * i), jobs.noop)
            ids.append(job.id)
        # RQ alone holds a and b: it moves their due jobs. Handed over once it has moved some (on a slow
        # machine the 1,000 enqueues alone take seconds: the jobs' 10 s leave RQ some to move after them)
        deadline, moved_by_rq = time.monotonic() + 10, 0
        while time.monotonic() < deadline and not moved_by_rq:
            observe()
            time.sleep(0.05)
            moved_by_rq = sum(redis_conn.llen(keys.queue_key(n)) for n in ('a', 'b'))
        observe()
        theirs.send_signal(signal.SIGTERM)  # RQ's scheduler stops and releases its locks; ours takes them
        assert theirs.wait(10) == 0

        def settled() -> bool:  # every job moved, and ours seen holding the locks RQ gave up
            observe()
            moved = sum(redis_conn.zcard(keys.scheduled_registry_key(n)) for n in names) == 0
            return moved and all(ours.name in holders[n] for n in ('a', 'b'))

        wait_for(settled, timeout=30)
    finally:
        ours.stop()
        if theirs.poll() is None:
            theirs.kill()
            theirs.wait(10)

    enqueued = {name: [i.decode() for i in redis_conn.lrange(keys.queue_key(name), 0, -1)] for name in names}
    assert sum(len(v) for v in enqueued.values()) == 1000  # no id twice
    for n, name in enumerate(names):
        assert sorted(enqueued[name]) == sorted(ids[n::4])  # each on its own queue
    with redis_conn.pipeline(transaction=False) as pipe:
        for job_id in ids:
            pipe.hget(keys.job_key(job_id), 'status')
        assert set(pipe.execute()) == {b'queued'}
    assert 0 < moved_by_rq < 500
    assert holders['a'] == holders['b'] == {'rq-side', ours.name}  # handed over from RQ to rqfast
    assert holders['c'] == holders['d'] == {ours.name}
