"""enqueue(..., capture_output=True): the worker keeps what the job printed with its result (`output`)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Any

import pytest
import redis
import rq.job
import rq.results

import rqfast
from rqfast import Queue, SimpleWorker, capture
from rqfast.capture import captured_output
from rqfast.decorators import job as job_decorator
from rqfast.defaults import OUTPUT_CAP

try:
    import jobs
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(60)


def burst(worker_class: Any, connection: redis.Redis, **options: Any) -> None:
    worker_class(['q'], connection=connection, **options).work(burst=True, logging_level='WARNING')


def test_a_simple_worker_stores_stdout_and_stderr_with_the_result(
    connection: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    queue = Queue('q', connection=connection)
    captured = queue.enqueue(jobs.print_lines, 2, 'hello', to_stderr=True, capture_output=True)
    plain = queue.enqueue(jobs.print_lines, 1, 'plain')
    assert connection.hget(captured.key, 'capture_output') == b'1'
    assert connection.hget(plain.key, 'capture_output') is None  # nothing written for the others
    capsys.readouterr()
    burst(SimpleWorker, connection)
    expected = 'hello 0\nhello 0 on stderr\nhello 1\nhello 1 on stderr\n'
    assert captured.output == expected and captured.return_value() == 2
    assert captured.latest_result().output == expected  # type: ignore[union-attr]
    assert plain.output is None and plain.latest_result().output is None  # type: ignore[union-attr]
    entries = connection.xrange(f'rq:results:{plain.id}')
    assert b'output' not in entries[0][1]  # a plain job's result entry is RQ's, field for field
    seen = capsys.readouterr()
    assert 'hello' not in seen.out + seen.err and 'plain 0' in seen.out  # the captured job printed nothing


def test_a_failed_job_keeps_its_output(connection: redis.Redis) -> None:
    failed = Queue('q', connection=connection).enqueue(jobs.print_then_fail, 'going down', capture_output=True)
    burst(SimpleWorker, connection)
    assert failed.get_status() == 'failed'
    assert failed.output == 'going down\n' and 'CustomError' in (failed.latest_result().exc_string or '')  # type: ignore[union-attr]


def test_output_past_the_cap_is_cut_and_marked(connection: redis.Redis) -> None:
    big = Queue('q', connection=connection).enqueue(jobs.print_lines, 1, 'x' * (OUTPUT_CAP + 99), capture_output=True)
    burst(SimpleWorker, connection)
    output = big.output or ''
    assert output.startswith('x' * OUTPUT_CAP) and 'x' * (OUTPUT_CAP + 1) not in output
    assert output.endswith('\n[rqfast: output truncated, 102 more characters]\n')  # 99 x's, ' 0' and '\n'


def test_rq_loads_the_job_and_the_result(connection: redis.Redis) -> None:
    captured = Queue('q', connection=connection).enqueue(jobs.print_lines, 1, 'for rq', capture_output=True)
    burst(SimpleWorker, connection)
    theirs = rq.job.Job.fetch(captured.id, connection=connection)
    result = rq.results.Result.fetch_latest(theirs)
    assert result is not None and result.type == rq.results.Result.Type.SUCCESSFUL and result.return_value == 1
    assert theirs.return_value() == 1 and theirs.get_status() == 'finished'


def test_the_option_is_checked_before_redis_is_touched(connection: redis.Redis) -> None:
    with pytest.raises(TypeError, match='capture_output must be True or False'):
        Queue('q', connection=connection).enqueue(jobs.print_lines, 1, capture_output='yes')
    assert connection.keys('*') == []


def test_the_job_decorator_takes_the_option(connection: redis.Redis) -> None:
    printing = job_decorator('q', connection=connection, capture_output=True)(jobs.print_lines)
    queued = printing.delay(1, 'decorated')
    del jobs.print_lines.delay, jobs.print_lines.enqueue  # type: ignore[attr-defined]  # (a shared function)
    burst(SimpleWorker, connection)
    assert queued.output == 'decorated 0\n'


def test_each_thread_captures_only_its_own_job(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    queued = [queue.enqueue(jobs.print_slowly, name, 20, capture_output=True) for name in ('ant', 'bee', 'cat', 'dog')]
    plain = queue.enqueue(jobs.print_slowly, 'eel', 20)
    burst(SimpleWorker, connection, concurrency=5)
    for name, job in zip(('ant', 'bee', 'cat', 'dog'), queued, strict=True):
        assert job.output == ''.join(f'{name} {i}\n' for i in range(20)), job.output
    assert plain.output is None


def test_captures_in_threads_do_not_mix() -> None:
    """The capture itself, without a worker: each thread's buffer gets its own writes only."""
    outputs: dict[str, str] = {}
    barrier = threading.Barrier(3)

    def run(name: str) -> None:
        with captured_output() as output:
            barrier.wait()
            for i in range(50):
                print(name, i)
                sys.stderr.write(f'{name} err {i}\n')
        outputs[name] = output.text()

    threads = [threading.Thread(target=run, args=(name,)) for name in ('a', 'b', 'c')]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name in 'abc':
        assert outputs[name] == ''.join(f'{name} {i}\n{name} err {i}\n' for i in range(50))
    assert not type(sys.stdout).__name__ == '_Proxy' and not type(sys.stderr).__name__ == '_Proxy'


@pytest.mark.parametrize('worker_class', [rqfast.Worker, rqfast.SpawnWorker])
def test_forking_and_spawn_workers_send_the_output_back(redis_conn: redis.Redis, worker_class: Any) -> None:
    queue = Queue('q', connection=redis_conn)
    captured = queue.enqueue(jobs.print_lines, 2, 'horse', to_stderr=True, capture_output=True)
    failed = queue.enqueue(jobs.print_then_fail, 'horse fails', capture_output=True)
    plain = queue.enqueue(jobs.print_lines, 1, 'plain')
    burst(worker_class, redis_conn)
    assert captured.output == 'horse 0\nhorse 0 on stderr\nhorse 1\nhorse 1 on stderr\n'
    assert failed.output == 'horse fails\n' and failed.get_status() == 'failed'
    assert plain.output is None and plain.return_value() == 1


def test_async_jobs_on_one_event_loop_capture_their_own_output(connection: redis.Redis) -> None:
    queue = Queue('q', connection=connection)
    queued = [queue.enqueue(jobs.async_print_slowly, name, 10, capture_output=True) for name in ('fox', 'gnu')]
    plain = queue.enqueue(jobs.async_print_slowly, 'hen', 10)
    burst(SimpleWorker, connection, concurrency=3)
    for name, job in zip(('fox', 'gnu'), queued, strict=True):
        assert job.return_value() == 10 and job.output == ''.join(f'{name} {i}\n' for i in range(10)), job.output
    assert plain.output is None


def test_a_process_without_stdout_still_captures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, 'stdout', None)
    with captured_output() as output:
        print('kept')
    assert output.text() == 'kept\n' and sys.stdout is None


_PRINT_WHILE_SWAPPING = """
import sys, threading
from rqfast.capture import captured_output
stop = False
printed = [0]
def printer():
    while not stop:
        print('plain', file=None)  # (print's own lookup of sys.stdout)
        printed[0] += 1
def capturer():
    swaps = 0
    while swaps < 10000 or printed[0] < 300:  # (until the printers printed while captures came and went)
        with captured_output():
            print('captured')
        swaps += 1
threads = [threading.Thread(target=printer) for _ in range(3)]
for thread in threads:
    thread.start()
swappers = [threading.Thread(target=capturer) for _ in range(2)]
for thread in swappers:
    thread.start()
for thread in swappers:
    thread.join()
stop = True
for thread in threads:
    thread.join()
"""


def test_printing_while_captures_open_and_close_does_not_crash() -> None:
    """print() holds a borrowed reference to sys.stdout (python/cpython#130163): a thread printing plainly
    while the last capture closes must not find its proxy freed (a segfault at concurrency > 1)."""
    out = subprocess.run(
        [sys.executable, '-c', _PRINT_WHILE_SWAPPING], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count('plain') > 100  # (the printers ran while the captures came and went)


def test_a_stream_keeps_one_proxy() -> None:
    with captured_output():
        first = sys.stdout
    with captured_output():
        assert sys.stdout is first
    assert sys.stdout is not first


@pytest.mark.skipif(not hasattr(os, 'fork'), reason='fork is what this is about')
def test_a_child_forked_while_another_thread_writes_can_write() -> None:
    holding, release = threading.Event(), threading.Event()

    def write_slowly() -> None:
        with capture._passing, capture._lock:  # as a thread passing a write on while the process forks
            holding.set()
            release.wait(10)

    writer = threading.Thread(target=write_slowly, daemon=True)
    writer.start()
    assert holding.wait(5)
    pid = os.fork()
    if pid == 0:  # the child: the writer thread is not here, so its locks must not be either
        took = capture._passing.acquire(timeout=2) and capture._lock.acquire(timeout=2)
        os._exit(0 if took else 1)
    release.set()
    writer.join()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, 'the child found the locks held by a thread it does not have'
