"""A worker with N slots holds jobs claimed ahead of a free slot while its jobs are short (loop.py,
_prefetch): queued for the job threads, so a thread that ends its job begins the next one itself, with
no round trip and no hop through the loop in between. Never with long jobs, never past max_jobs, and
every job claimed runs exactly once; a job held ahead can be stopped before it begins, and its timeout
counts from when it begins."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

import rqfast
from rqfast.command import send_stop_job_command
from rqfast.registry import StartedJobRegistry
from rqfast.status import JobStatus
from rqfast.worker import SimpleWorker
from rqfast.worker.recorder import Recorder

try:
    import concurrency_jobs as cj
    import jobs
except ImportError:  # tests/ became a package
    from tests import concurrency_jobs as cj  # type: ignore[no-redef]
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


def test_short_jobs_are_held_ahead_and_each_runs_once(redis_conn: redis.Redis) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    made = queue.enqueue_many([rqfast.Queue.prepare_data(jobs.add, (n, n)) for n in range(300)])
    worker = SimpleWorker([queue], connection=redis_conn, concurrency=4)
    worker.work(burst=True, logging_level='WARNING')
    assert worker._loop is not None and worker._loop.held > 0  # some started from the jobs held ahead
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in made)
    assert [job.return_value() for job in made] == [2 * n for n in range(300)]
    assert worker.successful_job_count == 300
    assert StartedJobRegistry('q', connection=redis_conn).count == 0 and queue.count == 0


@pytest.mark.parametrize('worker_class', [rqfast.Worker, rqfast.SpawnWorker])
def test_jobs_held_ahead_run_once_in_horses_too(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch, worker_class: type
) -> None:
    """A forking or spawn worker's job threads take the jobs held ahead the same way, each to a horse."""
    monkeypatch.setattr('rqfast.worker.loop.CONCURRENT_PREFETCH_MAX_RUN', 10.0)
    queue = rqfast.Queue('q', connection=redis_conn)
    made = queue.enqueue_many([rqfast.Queue.prepare_data(jobs.add, (n, n)) for n in range(24)])
    worker = worker_class([queue], connection=redis_conn, concurrency=2)
    worker.work(burst=True, logging_level='WARNING')
    assert worker._loop is not None and worker._loop.held > 0
    assert [job.return_value() for job in made] == [2 * n for n in range(24)]
    assert all(len(job.results()) == 1 for job in made)  # each ran once
    assert worker.successful_job_count == 24
    assert StartedJobRegistry('q', connection=redis_conn).count == 0 and queue.count == 0


def test_long_jobs_are_not_claimed_ahead(redis_conn: redis.Redis) -> None:
    """Two slots, three 0.8 s jobs: the third stays queued (another worker may take it) until a slot frees."""
    queue = rqfast.Queue('q', connection=redis_conn)
    made = [queue.enqueue(cj.sleep_then, 0.8) for _ in range(3)]
    worker = SimpleWorker([queue], connection=redis_conn, concurrency=2)
    runner = threading.Thread(target=worker.work, kwargs={'burst': True, 'logging_level': 'WARNING'})
    runner.start()
    deadline = time.monotonic() + 10
    while not all(job.get_status(refresh=True) is JobStatus.STARTED for job in made[:2]):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    time.sleep(0.3)
    assert made[2].get_status(refresh=True) is JobStatus.QUEUED
    runner.join(30)
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in made)
    assert worker._loop is not None and worker._loop.held == 0


@pytest.mark.parametrize('max_jobs', [45, 58, 71])
def test_max_jobs_counts_the_jobs_held_ahead(
    redis_conn: redis.Redis, max_jobs: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No job is claimed past max_jobs: the worker stops with none left started and the rest queued.
    (10 ms jobs keep the slots full, so jobs are held ahead as max_jobs nears; the run-time gate is
    opened wide, as 30 threads on a loaded machine can average past 50 ms: the gate has its own test.)"""
    monkeypatch.setattr('rqfast.worker.loop.CONCURRENT_PREFETCH_MAX_RUN', 10.0)
    queue = rqfast.Queue('q', connection=redis_conn)
    queue.enqueue_many([rqfast.Queue.prepare_data(cj.sleep_then, (0.01,)) for _ in range(120)])
    worker = SimpleWorker([queue], connection=redis_conn, concurrency=30)  # 15 held ahead at most
    worker.work(burst=True, max_jobs=max_jobs, logging_level='WARNING')
    assert worker._loop is not None and worker._loop.held > 0
    assert queue.finished_job_registry.count == max_jobs == worker.successful_job_count
    assert StartedJobRegistry('q', connection=redis_conn).count == 0
    assert queue.count == 120 - max_jobs


def test_the_jobs_recent_run_time_decides_how_many_are_held(redis_conn: redis.Redis) -> None:
    """The gate itself: nothing held before a job has reported, N // 2 (at least 1) while the moving
    average of run times is 50 ms or less, nothing once jobs turn long; never at concurrency 1."""
    worker = SimpleWorker(['q'], connection=redis_conn)
    loop = worker._loop_of(30)
    assert loop._prefetch() == 0
    loop.run_time = 0.01
    fresh = SimpleWorker(['q'], connection=redis_conn)._loop_of(4)
    assert loop._prefetch() == 15 and fresh._prefetch() == 0  # (no report yet in the new one)
    loop.run_time = 0.2
    assert loop._prefetch() == 0
    small = worker._loop_of(4)
    small.run_time = 0.001
    assert small._prefetch() == 2
    pair = worker._loop_of(2)
    pair.run_time = 0.001
    assert pair._prefetch() == 1
    single = worker._loop_of(1)
    single.run_time = 0.001
    assert single._prefetch() == 0


def _wait_until(condition: Callable[[], Any], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f'timed out waiting for {what}'
        time.sleep(0.02)


def test_a_thread_that_ends_its_job_begins_one_held_ahead_while_the_loop_is_busy(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop's thread is held inside a call for 0.5 s once jobs wait ahead: the job threads that end
    their jobs meanwhile begin those jobs themselves (before, only the loop began a job)."""
    monkeypatch.setattr('rqfast.worker.loop.CONCURRENT_PREFETCH_MAX_RUN', 10.0)
    queue = rqfast.Queue('q', connection=redis_conn)
    queue.enqueue_many([rqfast.Queue.prepare_data(cj.stamp_then_sleep, (0.01,)) for _ in range(60)])
    worker = SimpleWorker([queue], connection=redis_conn, concurrency=4)  # 2 held ahead
    stall: list[float] = []
    queued: list[str] = []
    finish = Recorder.finish

    def held_inside_a_call(recorder: Recorder, *args: object, **kwargs: object) -> object:
        loop = worker._loop
        if not stall and loop is not None and any(running.queued for running in loop.running.values()):
            queued.extend(running.claim.job_id or '' for running in loop.running.values() if running.queued)
            stall.append(time.time())
            time.sleep(0.5)
            stall.append(time.time())
        return finish(recorder, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Recorder, 'finish', held_inside_a_call)
    worker.work(burst=True, logging_level='WARNING')
    assert len(stall) == 2 and queued, 'no job was ever held ahead'
    began = dict(stamp.decode().split() for stamp in redis_conn.lrange('began', 0, -1))
    assert all(stall[0] < float(began[job_id]) < stall[1] for job_id in queued), (stall, queued, began)
    assert len(began) == 60 == worker.successful_job_count
    assert StartedJobRegistry('q', connection=redis_conn).count == 0


def _start_with_one_held_ahead(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch, last: Any) -> tuple[Any, ...]:
    """Two slots busy with jobs waiting for the key `go`, and the job `last(queue)` enqueued held ahead
    (queued for a job thread); the worker runs on a thread of its own."""
    monkeypatch.setattr('rqfast.worker.loop.CONCURRENT_PREFETCH_MAX_RUN', 10.0)
    queue = rqfast.Queue('q', connection=redis_conn)
    first = queue.enqueue(cj.noop)  # reports at once: jobs are short, so the next call claims one ahead
    waiting = [queue.enqueue(cj.wait_for_key, 'go') for _ in range(2)]
    held = last(queue)
    worker = SimpleWorker([queue], connection=redis_conn, concurrency=2)  # 1 held ahead
    runner = threading.Thread(target=worker.work, kwargs={'burst': True, 'logging_level': 'WARNING'})
    runner.start()
    try:
        _wait_until(lambda: redis_conn.get('in_flight') == b'2', 10, 'two jobs in flight')
        _wait_until(lambda: held.get_status(refresh=True) is JobStatus.STARTED, 10, 'the last job claimed ahead')
        assert worker._loop is not None and [r.claim.job_id for r in worker._loop.running.values() if r.queued] == [
            held.id
        ]
    except BaseException:
        redis_conn.set('go', '1')
        runner.join(15)
        raise
    return first, waiting, held, worker, runner


def test_a_job_held_ahead_that_is_stopped_never_runs(redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    first, waiting, held, worker, runner = _start_with_one_held_ahead(
        redis_conn, monkeypatch, lambda queue: queue.enqueue(cj.sleep_then_write, 0, 'held_ran')
    )
    try:
        send_stop_job_command(redis_conn, held.id)
        _wait_until(lambda: held.get_status(refresh=True) is JobStatus.STOPPED, 10, 'the held job to stop')
    finally:
        redis_conn.set('go', '1')
        runner.join(15)
    assert not runner.is_alive()
    assert held.get_status(refresh=True) is JobStatus.STOPPED
    assert redis_conn.get('held_ran') is None  # the thread that took it up did not run it
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in [first, *waiting])
    assert StartedJobRegistry('q', connection=redis_conn).count == 0


def test_a_job_held_ahead_has_its_whole_timeout_once_it_begins(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held 1.5 s behind two busy slots with a 1 s timeout, then runs 0.3 s: it finishes (its deadline
    starts when a thread begins it, not when it was claimed)."""
    first, waiting, held, worker, runner = _start_with_one_held_ahead(
        redis_conn, monkeypatch, lambda queue: queue.enqueue(cj.sleep_then, 0.3, job_timeout=1)
    )
    try:
        time.sleep(1.5)
        assert held.get_status(refresh=True) is JobStatus.STARTED
    finally:
        redis_conn.set('go', '1')
        runner.join(15)
    assert not runner.is_alive()
    assert held.get_status(refresh=True) is JobStatus.FINISHED, held.latest_result().exc_string
    assert held.return_value() == 'ok'
    assert worker.successful_job_count == 4


def test_with_jobs_queued_ahead_one_call_records_several_outcomes(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10 slots of 10 ms jobs: while the job threads have jobs queued ahead to go on with, the loop waits
    a little after an outcome comes in, so each call records several."""
    monkeypatch.setattr('rqfast.worker.loop.CONCURRENT_PREFETCH_MAX_RUN', 10.0)
    queue = rqfast.Queue('q', connection=redis_conn)
    queue.enqueue_many([rqfast.Queue.prepare_data(cj.stamp_then_sleep, (0.01,)) for _ in range(300)])
    worker = SimpleWorker([queue], connection=redis_conn, concurrency=10)
    recorded: list[int] = []
    finish = Recorder.finish

    def counting(recorder: Recorder, ended: Any, *args: Any, **kwargs: Any) -> Any:
        if ended:
            recorded.append(len(ended))
        return finish(recorder, ended, *args, **kwargs)

    monkeypatch.setattr(Recorder, 'finish', counting)
    worker.work(burst=True, logging_level='WARNING')
    assert sum(recorded) == 300 == worker.successful_job_count
    assert 300 / len(recorded) >= 2, sorted(recorded)  # (3.2 here; 1.2 without the pause)


def test_the_pause_before_a_call_needs_jobs_queued_ahead_and_jobs_that_are_not_short(redis_conn: redis.Redis) -> None:
    loop = SimpleWorker(['q'], connection=redis_conn)._loop_of(10)  # 5 held ahead
    assert loop.slots is not None
    threads = loop.slots.threads
    assert loop._coalescing() == 0.0  # no job has reported yet
    loop.run_time = 0.01
    threads._owed = 2
    assert loop._coalescing() == 0.0  # too few queued ahead to go on with
    threads._owed = 3
    assert loop._coalescing() == pytest.approx(0.002)  # a fifth of 10 ms
    loop.run_time = 0.006
    assert loop._coalescing() == pytest.approx(0.0012)
    loop.run_time = 0.5
    assert loop._coalescing() == pytest.approx(0.002)  # at most 2 ms
    loop.run_time = 0.001
    assert loop._coalescing() == 0.0  # short jobs: the call goes at once
    assert SimpleWorker(['q'], connection=redis_conn)._loop_of(1)._coalescing() == 0.0
