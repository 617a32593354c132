"""rqfast.worker_pool and `rqfast worker-pool`: real worker processes, killed, restarted and stopped.

The pool runs as a process of its own (the command), its workers are its children; the tests look
at them through /proc and Redis and poll with deadlines.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import redis
import rq.cli
from click.testing import CliRunner

import rqfast
from rqfast.cli import main
from rqfast.worker_pool import WorkerPool

try:
    from polling import wait_for
except ImportError:  # tests/ became a package
    from tests.polling import wait_for  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(120)

TESTS_DIR = Path(__file__).resolve().parent
ENV = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(TESTS_DIR.parent), str(TESTS_DIR)])}


def children(pid: int) -> set[int]:
    """The live child processes of `pid` (the pool's workers)."""
    found: set[int] = set()
    for task in Path(f'/proc/{pid}/task').iterdir():
        text = (task / 'children').read_text().split()
        found.update(int(child) for child in text)
    return {child for child in found if _running(child)}


def _running(pid: int) -> bool:
    try:
        state = Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
    except OSError:
        return False
    return state != 'Z'


def registered(conn: redis.Redis) -> set[int]:
    """The pids of the workers registered in Redis whose process is running."""
    return {w.pid for w in rqfast.Worker.all(connection=conn) if _running(w.pid)}


@pytest.fixture
def start_pool(redis_url: str, tmp_path: Path) -> Iterator[Any]:
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str) -> subprocess.Popen[bytes]:
        log = open(tmp_path / f'pool-{len(started)}.log', 'wb')
        command = [sys.executable, '-m', 'rqfast.cli', 'worker-pool', '--url', redis_url, *args]
        # a session (process group) of its own, so teardown can kill the pool and every worker at once
        process = subprocess.Popen(command, env=ENV, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        started.append(process)
        return process

    yield start
    for process in started:
        # one signal to the whole group: killing the workers first let a live pool fork replacements
        # that outlived the test and took later tests' jobs
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        # ...and gone: a worker still dying (or a zombie not yet reaped by init) is still registered
        # and alive to the next test's stray-worker check, which killed it and warned (seen once in CI)
        wait_for(lambda pgid=process.pid: not _group_alive(pgid), timeout=10)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize('worker_class', ['rqfast.Worker', 'rqfast.SimpleWorker', 'rqfast.SpawnWorker'])
def test_killed_workers_come_back(redis_conn: redis.Redis, start_pool: Any, worker_class: str) -> None:
    pool = start_pool('-n', '2', '-w', worker_class, 'q')
    wait_for(lambda: len(registered(redis_conn)) == 2 and len(children(pool.pid)) == 2, timeout=30)
    first = children(pool.pid)
    assert registered(redis_conn) == first  # the pool's children are its workers
    killed = sorted(first)[0]
    os.kill(killed, signal.SIGKILL)
    # dead by its own /proc entry: the pool's children file can miss a live process while it changes
    wait_for(lambda: not _running(killed), timeout=30)
    wait_for(lambda: killed not in children(pool.pid) and len(children(pool.pid)) == 2, timeout=30)
    # (the pool deregisters the dead worker and starts its replacement in either order: wait for both)
    wait_for(lambda: len(registered(redis_conn)) == 2 and killed not in registered(redis_conn), timeout=30)
    assert registered(redis_conn) == children(pool.pid)
    for pid in first - {killed}:
        os.kill(pid, signal.SIGKILL)  # all at once too
    # (a worker still dying holds its blocking wait open: a job enqueued then would go to the dead one)
    wait_for(lambda: not any(_running(pid) for pid in first), timeout=30)
    wait_for(lambda: len(children(pool.pid)) == 2 and not children(pool.pid) & first, timeout=30)
    queue = rqfast.Queue('q', connection=redis_conn)
    jobs = [queue.enqueue('jobs.say_hello', str(n)) for n in range(6)]
    wait_for(lambda: all(job.get_status() == 'finished' for job in jobs), timeout=30)
    assert pool.poll() is None


@pytest.mark.parametrize('signum', [signal.SIGTERM, signal.SIGINT], ids=['SIGTERM', 'SIGINT'])
def test_a_signal_stops_the_pool_once_its_workers_finish_their_jobs(
    redis_conn: redis.Redis, start_pool: Any, signum: int
) -> None:
    pool = start_pool('-n', '2', 'q')
    wait_for(lambda: len(registered(redis_conn)) == 2, timeout=30)
    workers = children(pool.pid)
    queue = rqfast.Queue('q', connection=redis_conn)
    jobs = [queue.enqueue('jobs.long_running', 1.5) for _ in range(2)]
    wait_for(lambda: all(job.get_status() == 'started' for job in jobs), timeout=30)
    pool.send_signal(signum)
    assert pool.wait(timeout=30) == 0
    assert [job.get_status() for job in jobs] == ['finished', 'finished']  # warm shutdown: the jobs completed
    assert not any(_running(pid) for pid in workers)
    assert rqfast.Worker.all(connection=redis_conn) == []  # each worker registered its death


def test_burst_pool_runs_the_queue_dry_and_exits(redis_conn: redis.Redis, start_pool: Any) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    jobs = [queue.enqueue('jobs.say_hello', str(n)) for n in range(10)]
    pool = start_pool('-b', '-n', '3', '-w', 'rq.Worker', 'q')
    assert pool.wait(timeout=60) == 0
    assert all(job.get_status() == 'finished' for job in jobs)
    assert len({rqfast.Job.fetch(job.id, connection=redis_conn).worker_name for job in jobs}) >= 1


@pytest.mark.parametrize('worker_class', [rqfast.SimpleWorker, rqfast.Worker, rqfast.SpawnWorker])
def test_the_api_runs_any_worker_class(redis_conn: redis.Redis, worker_class: Any) -> None:
    queue = rqfast.Queue('q', connection=redis_conn)
    ok = queue.enqueue('jobs.say_hello', 'pool')
    bad = queue.enqueue('jobs.div_by_zero')
    pool = WorkerPool([queue], connection=redis_conn, num_workers=2, worker_class=worker_class)
    pool.start(burst=True, logging_level='WARNING')
    assert ok.get_status() == 'finished' and ok.return_value() == 'Hi there, pool!'
    assert bad.get_status() == 'failed'
    assert pool.number_of_active_workers == 0


def test_bad_input_is_refused_before_anything_starts(redis_url: str) -> None:
    runner = CliRunner()
    cases = {
        ('-n', '0'): '--num-workers must be at least 1',
        ('-w', 'rq.worker.NoSuchWorker'): '--worker-class',
        ('-j', 'rq.job.NoSuchJob'): '--job-class',
        ('--exception-handler', 'jobs.no_such_handler'): '--exception-handler',
        ('--quiet', '--verbose'): 'mutually exclusive',
    }
    for args, message in cases.items():
        result = runner.invoke(main, ['worker-pool', '-u', redis_url, '-b', *args])
        assert result.exit_code == 1, (args, result.output)
        assert message in result.output
    with pytest.raises(ValueError):
        WorkerPool(['q'], connection=redis.Redis.from_url(redis_url), num_workers=0)


def test_the_command_takes_every_option_of_rq_worker_pool() -> None:
    def names(command: click.Command) -> set[str]:
        return {opt for param in command.params for opt in param.opts}

    ours = main.commands['worker-pool']
    theirs = rq.cli.main.commands['worker-pool']
    assert names(theirs) <= names(ours), names(theirs) - names(ours)


def test_a_worker_started_late_is_stopped_all_the_same(redis_conn: redis.Redis) -> None:
    """A stop request that reaches a (re)started worker before its work() began ends it: the worker does not
    run the pool's handlers it was forked with, nor work on."""
    pool = WorkerPool(['q'], connection=redis_conn, num_workers=1, worker_class=rqfast.SimpleWorker)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    pool._install_signal_handlers()  # as when start() restarts a worker
    try:
        pool.start_worker(burst=False, _sleep=2)
    finally:
        signal.signal(signal.SIGINT, handlers[0])
        signal.signal(signal.SIGTERM, handlers[1])
    (data,) = pool.worker_dict.values()
    try:
        time.sleep(0.3)
        pool.stop_workers()
        data.process.join(10)
        assert not data.process.is_alive()
        assert pool.all_workers_have_stopped()
    finally:
        if data.process.is_alive():
            data.process.kill()
            data.process.join()


def _processes_of(redis_url: str) -> list[int]:
    """Every running process whose command line names this Redis (the pool, its workers and their horses)."""
    found = []
    for entry in Path('/proc').iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if redis_url.encode() in (entry / 'cmdline').read_bytes() and _running(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_a_signal_while_the_workers_start_stops_them_all(redis_url: str, start_pool: Any, tmp_path: Path) -> None:
    pool = start_pool('-n', '4', 'q')
    log = tmp_path / 'pool-0.log'
    wait_for(lambda: b'Starting worker pool' in log.read_bytes(), timeout=30)
    pool.send_signal(signal.SIGTERM)  # while it forks its workers, or just after
    assert pool.wait(timeout=30) == 0, log.read_text()
    wait_for(lambda: not _processes_of(redis_url), timeout=15)  # none left behind


SIGNALLED_POOL = """
import os, signal, sys
import redis, rqfast
from rqfast.worker_pool import WorkerPool

class SignalledPool(WorkerPool):
    def start_worker(self, *args, **kwargs):
        super().start_worker(*args, **kwargs)
        if len(self.worker_dict) == 2:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl+C while the pool starts its workers

pool = SignalledPool(['q'], connection=redis.Redis.from_url(sys.argv[1]), num_workers=4,
                     worker_class=rqfast.SimpleWorker)
pool.start(logging_level='WARNING')  # not burst: only the stop ends it
assert pool.status == pool.Status.STOPPED, pool.status
assert pool.worker_dict == {}, pool.worker_dict  # the two it started stopped; no more were started
print('stopped')
"""


def test_a_stop_signal_during_startup_stops_the_workers_started_so_far(redis_url: str) -> None:
    # in a process of its own, as a pool runs: forked from this test process, its workers would inherit
    # whatever earlier tests left in it (threads, locks)
    done = subprocess.run(
        [sys.executable, '-c', SIGNALLED_POOL, redis_url], env=ENV, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == 'stopped', done.stdout + done.stderr
    assert 'Traceback' not in done.stderr, done.stderr  # a worker stopped while starting ends quietly
    wait_for(lambda: not _processes_of(redis_url), timeout=15)  # none left behind
