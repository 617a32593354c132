"""SimpleWorker(concurrency=N) with `async def` jobs: once a job turned out async, the next claims are
loaded on the event loop's thread; a plain function among them still runs on a thread. The loop's
selector wakes its timers on time (not in whole milliseconds)."""

from __future__ import annotations

import selectors
import socket
import statistics
import threading
import time

import pytest
import redis
from rq.command import send_stop_job_command

import rqfast
from rqfast.status import JobStatus
from rqfast.worker import SimpleWorker, threads

try:
    import concurrency_jobs as cj
    from fleet import wait_until
except ImportError:  # tests/ became a package
    from tests import concurrency_jobs as cj  # type: ignore[no-redef]
    from tests.fleet import wait_until  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


def test_plain_and_async_jobs_in_turn_run_where_they_belong(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    jobs = []
    for i in range(12):  # runs of async jobs, then plain ones, then both in turn
        jobs.append(q.enqueue(cj.async_where if i < 4 or (i >= 8 and i % 2) else cj.where))
    SimpleWorker([q], connection=redis_conn, concurrency=2).work(burst=True, logging_level='WARNING')
    assert all(job.get_status(refresh=True) is JobStatus.FINISHED for job in jobs)
    loops = {tuple(job.return_value() or ()) for job in jobs if job.func_name.endswith('async_where')}
    assert len(loops) == 1, loops  # one event loop, on one thread
    [(loop, loop_thread)] = loops
    threads = {(job.return_value() or [])[1] for job in jobs if job.func_name.endswith('.where')}
    assert threads and loop_thread not in threads  # a plain function never runs on the loop's thread


def test_an_async_job_loaded_on_the_loop_stops_and_a_system_exit_fails_only_its_job(redis_conn: redis.Redis) -> None:
    q = rqfast.Queue('q', connection=redis_conn)
    first = [q.enqueue(cj.async_sleep_then, 0.05) for _ in range(2)]
    exits = q.enqueue(cj.async_exit)  # claimed after an async job ended: loaded on the loop's thread
    held = q.enqueue(cj.async_wait_for_key, 'go')
    after = [q.enqueue(cj.async_sleep_then, 0.05, i) for i in range(3)]
    worker = SimpleWorker([q], connection=redis_conn, concurrency=2)

    thread = threading.Thread(target=worker.work, kwargs={'burst': True, 'logging_level': 'WARNING'})
    thread.start()
    try:
        wait_until(
            lambda: held.get_status(refresh=True) is JobStatus.STARTED and redis_conn.get('in_flight'),
            15,
            'the held job to run',
        )
        send_stop_job_command(redis_conn, held.id)
        thread.join(15)
        assert not thread.is_alive()
    finally:
        redis_conn.set('go', '1')
        thread.join(15)
    assert held.get_status(refresh=True) is JobStatus.STOPPED
    assert exits.get_status(refresh=True) is JobStatus.FAILED
    assert 'ended without an outcome' in (exits.latest_result().exc_string or '')
    assert [job.get_status(refresh=True) for job in first + after] == [JobStatus.FINISHED] * 5
    assert [job.return_value() for job in after] == [0, 1, 2]
    assert redis_conn.get('in_flight') == b'0'  # the stopped job's task was cancelled (its finally ran)


@pytest.mark.skipif(not hasattr(selectors, 'EpollSelector'), reason='epoll only')
def test_the_loops_selector_never_wakes_early_and_sees_ready_files() -> None:
    selector = threads.PreciseEpollSelector()
    try:
        for _ in range(5):
            started = time.perf_counter()
            assert selector.select(0.0012) == []
            assert time.perf_counter() - started >= 0.0012  # never early (how late: the quiet test below)
        left, right = socket.socketpair()
        with left, right:
            selector.register(left, selectors.EVENT_READ, 'data')
            right.send(b'x')
            started = time.perf_counter()
            [(key, events)] = selector.select(30.0)
            assert key.data == 'data' and events == selectors.EVENT_READ
            assert time.perf_counter() - started < 15  # at once, not at the 30 s timeout
            assert selector.select(0) and selector.select(None)
    finally:
        selector.close()
    loop = threads.new_event_loop()
    try:
        assert isinstance(loop._selector, threads.PreciseEpollSelector)  # type: ignore[attr-defined]
    finally:
        loop.close()


@pytest.mark.quiet  # a wait's precision to a fraction of a millisecond: on a loaded machine a wake-up is late
@pytest.mark.skipif(not hasattr(selectors, 'EpollSelector'), reason='epoll only')
def test_the_loops_selector_waits_to_the_microsecond() -> None:
    selector = threads.PreciseEpollSelector()
    try:
        waits = []
        for _ in range(20):
            started = time.perf_counter()
            assert selector.select(0.0012) == []
            waits.append(time.perf_counter() - started)
        assert 0.0012 <= min(waits) and statistics.median(waits) < 0.0019, waits  # epoll's own: 2 ms
    finally:
        selector.close()
