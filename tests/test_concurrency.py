"""SimpleWorker(concurrency=N): several jobs in flight in one process, every outcome recorded as RQ does.

The jobs note in Redis how many of them run at once (concurrency_jobs.py). RQ is the reader: what a
running and a finished job look like is read back through rq's own Job, registries and Worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis
import rq
import rq.job
import rq.registry
from rq.command import send_stop_job_command

import rqfast
from rqfast.job import Retry
from rqfast.registry import FailedJobRegistry, FinishedJobRegistry, StartedJobRegistry
from rqfast.status import JobStatus
from rqfast.worker import BaseWorker, SimpleWorker, loop

try:
    import concurrency_jobs as cj
except ImportError:  # tests/ became a package
    from tests import concurrency_jobs as cj  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


def wait_until(condition: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f'timed out waiting for {what}'
        time.sleep(0.02)


def in_thread(worker: SimpleWorker, **work: Any) -> threading.Thread:
    thread = threading.Thread(target=worker.work, kwargs={'burst': True, 'logging_level': 'WARNING', **work})
    thread.start()
    return thread


def test_concurrency_must_be_a_positive_integer(redis_conn: redis.Redis) -> None:
    for bad in (0, -1, 1.5, '2', True):
        with pytest.raises(ValueError, match='concurrency'):
            SimpleWorker(['q'], connection=redis_conn, concurrency=bad)  # type: ignore[arg-type]
    assert SimpleWorker(['q'], connection=redis_conn).concurrency == 1


def test_concurrency_above_one_is_refused_only_where_jobs_run_one_at_a_time(redis_conn: redis.Redis) -> None:
    with pytest.raises(ValueError, match='BaseWorker runs one job at a time.*SimpleWorker.*Worker and SpawnWorker'):
        BaseWorker(['q'], connection=redis_conn, concurrency=2)
    assert rqfast.Worker(['q'], connection=redis_conn, concurrency=2).concurrency == 2
    assert SimpleWorker(['q'], connection=redis_conn, concurrency=2).concurrency == 2


@pytest.mark.parametrize('concurrency', [1, 3])
def test_one_loop_runs_every_concurrency(
    connection: redis.Redis, monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    """Concurrency 1 is the loop with one slot and the inline runner, not a path of its own."""
    seen: list[tuple[int, bool, bool]] = []
    work = loop.Loop.work

    def spy(self: loop.Loop, *args: Any) -> int:
        seen.append((self.size, self.inline is not None, self.slots is not None))
        return work(self, *args)

    monkeypatch.setattr(loop.Loop, 'work', spy)
    q = rqfast.Queue('q', connection=connection)
    jobs = [q.enqueue(cj.sleep_then, 0, i) for i in range(4)]
    assert SimpleWorker([q], connection=connection, concurrency=concurrency).work(burst=True, logging_level='WARNING')
    assert seen == [(concurrency, concurrency == 1, concurrency > 1)]
    assert [job.return_value() for job in jobs] == [0, 1, 2, 3]


def test_outcomes_with_several_jobs_in_flight(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    ok = [q.enqueue(cj.sleep_then, 0.3, i) for i in range(4)]
    aok = [q.enqueue(cj.async_sleep_then, 0.3, i) for i in range(4)]
    failed = q.enqueue(cj.fail_after, 0.1)
    retried = q.enqueue(cj.fail_after, 0.1, retry=Retry(max=1))
    returned_retry = q.enqueue(cj.retry_once)
    thread_timeout = q.enqueue(cj.sleep_then_write, 2.5, 'late-return', job_timeout=1)
    async_timeout = q.enqueue(cj.async_sleep_then, 30, job_timeout=1)
    worker = SimpleWorker([q], connection=redis_conn, concurrency=8)
    started = time.monotonic()
    assert worker.work(burst=True, logging_level='WARNING')
    took = time.monotonic() - started

    for i, job in enumerate(ok):
        assert job.get_status(refresh=True) is JobStatus.FINISHED and job.return_value() == i
    for i, job in enumerate(aok):
        assert job.get_status(refresh=True) is JobStatus.FINISHED and job.return_value() == i
    assert int(redis_conn.get('most_in_flight') or 0) >= 6  # ran side by side, not one by one
    assert took < 20, took  # the two timeouts enforced: the async one's job sleeps 30 s
    assert failed.get_status(refresh=True) is JobStatus.FAILED
    assert 'asked to fail' in (failed.latest_result().exc_string or '')
    retried.refresh()
    assert retried.get_status() is JobStatus.FAILED and retried.retries_left == 0
    assert len(retried.results()) == 1  # (a retried failure leaves no result entry, as in RQ)
    assert returned_retry.get_status(refresh=True) is JobStatus.FINISHED and returned_retry.return_value() == 'retried'
    for job in (thread_timeout, async_timeout):
        assert job.get_status(refresh=True) is JobStatus.FAILED
        assert 'JobTimeoutException' in (job.latest_result().exc_string or ''), job.latest_result().exc_string
    failed_ids = FailedJobRegistry('q', connection=redis_conn).get_job_ids()
    assert set(failed_ids) == {failed.id, retried.id, thread_timeout.id, async_timeout.id}
    assert len(FinishedJobRegistry('q', connection=redis_conn).get_job_ids()) == 9
    assert StartedJobRegistry('q', connection=redis_conn).get_job_ids(cleanup=False) == []
    assert not redis_conn.keys('rq:execution:*')
    counts = redis_conn.hmget(worker.key, 'successful_job_count', 'failed_job_count')
    assert [int(c or 0) for c in counts] == [9, 6]  # (the retried job failed twice, a returned Retry counts one)

    # the timed-out thread runs on to its end, and its late return writes nothing
    wait_until(lambda: redis_conn.exists('late-return'), 10, 'the timed-out thread to end')
    time.sleep(0.1)
    assert thread_timeout.get_status(refresh=True) is JobStatus.FAILED
    assert len(thread_timeout.results()) == 1


def test_async_jobs_share_one_event_loop(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    jobs = [q.enqueue(cj.async_where) for _ in range(6)]
    SimpleWorker([q], connection=redis_conn, concurrency=3).work(burst=True, logging_level='WARNING')
    places = {tuple(job.return_value() or ()) for job in jobs}
    assert len(places) == 1, places


def test_claimed_jobs_look_started_to_rq_and_free_slots_only(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    jobs = [q.enqueue(cj.wait_for_key, 'go') for _ in range(3)] + [q.enqueue(cj.async_wait_for_key, 'go')]
    waiting = [q.enqueue(cj.noop) for _ in range(3)]
    worker = SimpleWorker([q], connection=redis_conn, concurrency=4)
    thread = in_thread(worker)
    try:
        wait_until(lambda: redis_conn.get('in_flight') == b'4', 15, 'four jobs in flight')
        rq_queue = rq.Queue('q', connection=redis_conn)
        started = rq.registry.StartedJobRegistry(queue=rq_queue).get_job_ids()
        assert sorted(started) == sorted(j.id for j in jobs)  # claimed only for a free slot
        assert rq_queue.job_ids == [j.id for j in waiting]
        for job in jobs:
            theirs = rq.job.Job.fetch(job.id, connection=redis_conn)
            assert theirs.get_status() == 'started' and theirs.worker_name == worker.name
            assert len(redis_conn.keys(f'rq:execution:{job.id}:*')) == 1  # an execution each
        [rq_worker] = rq.Worker.all(connection=redis_conn)
        assert rq_worker.get_state() == 'busy' and rq_worker.get_current_job_id() in {j.id for j in jobs}
        assert len(redis_conn.smembers(f'rq:worker:{worker.name}:executions')) == 4  # RQ 3.0's index

        send_stop_job_command(redis_conn, jobs[0].id)  # a thread job
        send_stop_job_command(redis_conn, jobs[3].id)  # the async one
        wait_until(lambda: jobs[0].get_status(refresh=True) is JobStatus.STOPPED, 10, 'the thread job to stop')
        wait_until(lambda: jobs[3].get_status(refresh=True) is JobStatus.STOPPED, 10, 'the async job to stop')
        # their slots went to the next jobs; the other two still run
        wait_until(lambda: all(j.get_status(refresh=True) is JobStatus.FINISHED for j in waiting), 10, 'the rest')
        assert jobs[1].get_status(refresh=True) is JobStatus.STARTED
        redis_conn.set('go', '1')
        thread.join(15)
        assert not thread.is_alive()
    finally:
        redis_conn.set('go', '1')
        thread.join(15)
    assert [j.get_status(refresh=True) for j in jobs] == [
        JobStatus.STOPPED,
        JobStatus.FINISHED,
        JobStatus.FINISHED,
        JobStatus.STOPPED,
    ]
    assert rq.job.Job.fetch(jobs[1].id, connection=redis_conn).return_value() == 'released'
    assert not redis_conn.smembers(f'rq:worker:{worker.name}:executions')


def test_rq_enqueues_rqfast_runs_rq_reads(redis_conn: redis.Redis) -> None:
    rq_queue = rq.Queue('q', connection=redis_conn)
    theirs = [rq_queue.enqueue(cj.sleep_then, 0.1, i) for i in range(10)]
    theirs.append(rq_queue.enqueue(cj.fail_after, 0))
    SimpleWorker(['q'], connection=redis_conn, concurrency=5).work(burst=True, logging_level='WARNING')
    for i, job in enumerate(theirs[:10]):
        job.refresh()
        assert job.get_status() == 'finished' and job.return_value() == i and job.worker_name
        assert job.latest_result().type == job.latest_result().Type.SUCCESSFUL
    assert theirs[10].get_status() == 'failed'
    assert rq.registry.FailedJobRegistry(queue=rq_queue).get_job_ids() == [theirs[10].id]
    assert len(rq.registry.FinishedJobRegistry(queue=rq_queue).get_job_ids()) == 10
    assert int(redis_conn.get('most_in_flight') or 0) >= 3


def test_queue_order_between_queues(redis_conn: redis.Redis) -> None:
    """The slots go to the first queue's jobs first, as one job at a time would."""
    high, low = rqfast.Queue('high', connection=redis_conn), rqfast.Queue('low', connection=redis_conn)
    low_jobs = [low.enqueue(cj.noop) for _ in range(3)]
    high_jobs = [high.enqueue(cj.wait_for_key, 'go') for _ in range(4)]
    thread = in_thread(SimpleWorker([high, low], connection=redis_conn, concurrency=4))
    try:
        wait_until(lambda: redis_conn.get('in_flight') == b'4', 15, 'four jobs in flight')
        assert sorted(StartedJobRegistry('high', connection=redis_conn).get_job_ids()) == sorted(
            j.id for j in high_jobs
        )
        assert StartedJobRegistry('low', connection=redis_conn).get_job_ids() == []
        assert all(j.get_status(refresh=True) is JobStatus.QUEUED for j in low_jobs)
    finally:
        redis_conn.set('go', '1')
        thread.join(15)
    assert all(j.get_status(refresh=True) is JobStatus.FINISHED for j in high_jobs + low_jobs)


def test_round_trips_per_job_under_load(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """Socket writes of the worker's own thread, per job, in the steady state: (cost(N + K) - cost(N)) / K.

    The jobs end together on a shared wall-clock tick, so outcomes are ready side by side, as under load,
    however fast or slow the machine is (plain 20 ms sleeps read exactly 0.9 on one CI machine).
    (Side threads, the jobs' own calls and connection set-ups are left out, as in test_worker_roundtrips.)
    """
    import redis.connection

    original = redis.connection.Connection.send_packed_command
    sent: list[int] = []
    main = threading.main_thread()

    def counting(self: Any, command: Any, check_health: bool = True) -> Any:
        if threading.current_thread() is main:
            packed = b''.join(bytes(p) for p in command) if isinstance(command, list | tuple) else bytes(command)
            if not any(word in packed[:40] for word in (b'HELLO', b'CLIENT', b'SCRIPT')):
                sent.append(1)
        return original(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, 'send_packed_command', counting)

    def cost(count: int) -> int:
        redis_conn.flushdb()
        q = rqfast.Queue('q', connection=redis_conn)
        q.enqueue_many([q.prepare_data(cj.until_tick, (0.05,)) for _ in range(count)])
        worker = SimpleWorker([q], connection=redis_conn, concurrency=10)
        sent.clear()
        worker.work(burst=True, logging_level='WARNING')
        assert FinishedJobRegistry('q', connection=redis_conn).count == count
        return len(sent)

    n, k = 20, 200
    per_job = (cost(n + k) - cost(n)) / k
    assert per_job <= 1
    assert per_job < 0.6, per_job  # several outcomes (and the next claims) share a call


def test_jobs_claimed_with_outcomes_get_the_workers_heartbeat_grace(redis_conn: redis.Redis) -> None:
    """A job claimed in the same call as other jobs' outcomes (finish_jobs) expires from the started
    registry `job_monitoring_interval + heartbeat_grace` after its claim, as one claimed alone does."""
    q = rqfast.Queue('q', connection=redis_conn)
    quick = [q.enqueue(cj.sleep_then, 0.1) for _ in range(2)]
    held = [q.enqueue(cj.wait_for_key, 'go') for _ in range(2)]
    worker = SimpleWorker([q], connection=redis_conn, concurrency=2)
    worker.heartbeat_grace = 77
    thread = in_thread(worker)
    try:
        wait_until(
            lambda: (
                redis_conn.get('in_flight') == b'2'
                and all(j.get_status(refresh=True) is JobStatus.STARTED for j in held)
            ),
            15,
            'the held jobs to run',
        )
        scores = dict(redis_conn.zrange('rq:wip:q', 0, -1, withscores=True))
        expected = time.time() + worker.job_monitoring_interval + 77
        assert len(scores) == 2
        assert all(abs(score - expected) < 5 for score in scores.values()), (scores, expected)
    finally:
        redis_conn.set('go', '1')
        thread.join(15)
    assert all(j.get_status(refresh=True) is JobStatus.FINISHED for j in quick + held)


@pytest.mark.parametrize('concurrency', [1, 2, 4])
def test_a_burst_runs_what_its_own_jobs_put_back_or_release(connection: redis.Redis, concurrency: int) -> None:
    """A job retried by its return value, and a dependent its parent released, are run by the same
    burst: the call that records the parent claims them (before, at concurrency > 1 the burst ended
    with them queued when the queue had been seen empty since)."""
    q = rqfast.Queue('put-back', connection=connection)
    retried = q.enqueue(cj.retry_once)
    parent = q.enqueue(cj.sleep_then, 0.05, 'parent')
    child = q.enqueue(cj.sleep_then, 0, 'child', depends_on=parent)
    SimpleWorker([q], connection=connection, concurrency=concurrency).work(burst=True, logging_level='WARNING')
    assert retried.get_status(refresh=True) == JobStatus.FINISHED and retried.return_value() == 'retried'
    assert child.get_status(refresh=True) == JobStatus.FINISHED
    assert q.count == 0
