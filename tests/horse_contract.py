"""The contract of the isolating workers (a fresh forked horse or spawned child per job), as a test class.

tests/test_worker_forking.py and tests/test_worker_spawn.py subclass HorseContract with their worker
class, the way saq runs one test class per backend. rq enqueues and reads back wherever it can: the
jobs' statuses, results and registries must look to rq as its own workers leave them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import rq
import rq.command
import rq.job
import rq.registry

import rqfast
import rqfast.command
import rqfast.exceptions
import rqfast.keys

KILLED = 'Work-horse terminated unexpectedly; waitpid returned 9 (signal 9); '  # RQ's words for SIGKILL
TESTS_DIR = Path(__file__).resolve().parent
REPO_DIR = TESTS_DIR.parent

# A worker in a process of its own, for the pub/sub commands: python -c RUNNER <url> <class> <name> <json>
RUNNER = """
import importlib, json, sys
sys.path[:0] = [sys.argv[5], sys.argv[6]]
import redis
url, path, name, options = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
module, _, attr = path.rpartition('.')
worker = getattr(importlib.import_module(module), attr)(['q'], name=name, connection=redis.Redis.from_url(url),
                                                        **options.get('worker', {}))
for key, value in options.get('attrs', {}).items():
    setattr(worker, key, value)
worker.work(burst=True, logging_level='INFO')
"""


def wait_until(predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f'condition not met within {timeout} s')
        time.sleep(interval)


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaped does not count)."""
    try:
        status = Path(f'/proc/{pid}/status').read_text()
    except OSError:
        return False
    return '\nState:\tZ' not in status


def rq_job(connection: redis.Redis, job_id: str) -> rq.job.Job:
    return rq.job.Job.fetch(job_id, connection=connection)


def exc_string(connection: redis.Redis, job_id: str) -> str:
    result = rq_job(connection, job_id).latest_result()
    assert result is not None
    return result.exc_string or ''


class WorkerProcess:
    """A burst worker of the class under test, in a subprocess, so that commands reach it over pub/sub."""

    def __init__(self, url: str, worker_path: str, name: str, options: dict[str, Any] | None = None) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [
                sys.executable,
                '-c',
                RUNNER,
                url,
                worker_path,
                name,
                json.dumps(options or {}),
                str(TESTS_DIR),
                str(REPO_DIR),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=str(REPO_DIR),
        )

    def wait(self, timeout: float = 20) -> str:
        try:
            output, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            output, _ = self.proc.communicate()
            raise AssertionError(f'worker did not exit:\n{output.decode(errors="replace")}') from None
        return output.decode(errors='replace')

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


class HorseContract:
    worker_class: type[rqfast.Worker]
    worker_path: str
    parent_is_worker: bool  # True: the worker starts each horse itself; False: its breeder forks them

    # --- helpers

    def run_burst(self, connection: redis.Redis, **attrs: Any) -> rqfast.Worker:
        worker = self.worker_class(['q'], connection=connection)
        for key, value in attrs.items():
            setattr(worker, key, value)
        worker.work(burst=True, logging_level='WARNING')
        return worker

    @pytest.fixture
    def worker_process(self, redis_url: str) -> Iterator[Callable[..., WorkerProcess]]:
        started: list[WorkerProcess] = []

        def start(name: str, options: dict[str, Any] | None = None) -> WorkerProcess:
            process = WorkerProcess(redis_url, self.worker_path, name, options)
            started.append(process)
            return process

        yield start
        for process in started:
            process.kill()

    # --- results, as rq reads them

    def test_rq_enqueues_rqfast_runs_rq_reads(self, redis_conn: redis.Redis) -> None:
        queue = rq.Queue('q', connection=redis_conn)
        ok = queue.enqueue('jobs.say_hello', 'horse')
        bad = queue.enqueue('jobs.div_by_zero')
        worker = self.run_burst(redis_conn)
        assert rq_job(redis_conn, ok.id).get_status() == 'finished'
        assert rq_job(redis_conn, ok.id).return_value() == 'Hi there, horse!'
        assert rq_job(redis_conn, bad.id).get_status() == 'failed'
        assert 'ZeroDivisionError' in exc_string(redis_conn, bad.id)
        assert bad.id in rq.registry.FailedJobRegistry('q', connection=redis_conn)
        assert ok.id in rq.registry.FinishedJobRegistry('q', connection=redis_conn)
        found = rq.Worker.find_by_key(f'rq:worker:{worker.name}', connection=redis_conn)
        assert found is not None
        assert (found.successful_job_count, found.failed_job_count) == (1, 1)

    def test_unserializable_return_value(self, redis_conn: redis.Redis) -> None:
        job = rq.Queue('q', connection=redis_conn).enqueue('jobs.return_unpicklable')
        self.run_burst(redis_conn)
        assert rq_job(redis_conn, job.id).return_value() == 'Unserializable return value'

    def test_a_fresh_process_per_job(self, redis_conn: redis.Redis) -> None:
        queue = rqfast.Queue('q', connection=redis_conn)
        ids = [queue.enqueue('jobs_isolation.where_am_i').id for _ in range(3)]
        worker = self.run_burst(redis_conn)
        seen = [rq_job(redis_conn, job_id).return_value() for job_id in ids]
        pids = {where['pid'] for where in seen}
        assert len(pids) == 3 and os.getpid() not in pids
        for job_id, where in zip(ids, seen, strict=True):
            assert (where['worker_id'], where['job_id']) == (worker.name, job_id)
        parents = {where['ppid'] for where in seen}
        assert parents == {os.getpid()} if self.parent_is_worker else len(parents) == 1  # else: one breeder

    def test_the_job_has_a_connection_of_its_own(self, redis_conn: redis.Redis) -> None:
        job = rqfast.Queue('q', connection=redis_conn).enqueue('jobs_isolation.enqueue_from_inside')
        self.run_burst(redis_conn)
        returned = rq_job(redis_conn, job.id).return_value()
        assert returned['me'] == job.id
        child = rq_job(redis_conn, returned['child'])
        assert child.get_status() == 'finished'  # the same burst worker ran it
        assert child.return_value() == 'Hi there, from inside!'

    # --- horses that die

    @pytest.mark.timeout(120)
    def test_sigkill_mid_job_fails_it_and_the_worker_carries_on(self, redis_conn: redis.Redis) -> None:
        queue = rq.Queue('q', connection=redis_conn)
        killed = queue.enqueue('jobs_isolation.kill_self')
        after = queue.enqueue('jobs.say_hello')
        started = time.monotonic()
        self.run_burst(redis_conn, horse_poll_interval=20)  # a death must show as end of file, not at a poll
        assert time.monotonic() - started < 10
        assert rq_job(redis_conn, killed.id).get_status() == 'failed'
        assert exc_string(redis_conn, killed.id) == KILLED
        assert killed.id in rq.registry.FailedJobRegistry('q', connection=redis_conn)
        assert rq_job(redis_conn, after.id).get_status() == 'finished'

    @pytest.mark.timeout(120)
    def test_os_exit_in_the_job(self, redis_conn: redis.Redis) -> None:
        queue = rq.Queue('q', connection=redis_conn)
        exited = queue.enqueue('jobs_isolation.exit_hard', 3)
        after = queue.enqueue('jobs.say_hello')
        self.run_burst(redis_conn)
        assert exc_string(redis_conn, exited.id) == 'Work-horse terminated unexpectedly; waitpid returned 768; '
        assert rq_job(redis_conn, after.id).get_status() == 'finished'

    @pytest.mark.timeout(120)
    def test_system_exit_in_the_job_is_a_failure(self, redis_conn: redis.Redis) -> None:
        job = rq.Queue('q', connection=redis_conn).enqueue('jobs_isolation.raise_system_exit')
        self.run_burst(redis_conn)
        assert rq_job(redis_conn, job.id).get_status() == 'failed'
        assert 'SystemExit: 5' in exc_string(redis_conn, job.id)

    # --- timeouts

    @pytest.mark.timeout(120)
    def test_a_job_past_its_timeout_fails_with_job_timeout_exception(self, redis_conn: redis.Redis) -> None:
        queue = rqfast.Queue('q', connection=redis_conn)
        job = queue.enqueue(
            'jobs.long_running', 20, job_timeout=1, on_failure=rqfast.Callback('jobs_isolation.record_failure')
        )
        after = queue.enqueue('jobs.say_hello')
        started = time.monotonic()
        self.run_burst(redis_conn)
        assert time.monotonic() - started < 10
        assert rq_job(redis_conn, job.id).get_status() == 'failed'
        text = exc_string(redis_conn, job.id)
        assert 'JobTimeoutException: Task exceeded maximum timeout value (1 seconds)' in text
        assert redis_conn.get(f'failure:{job.id}') == b'JobTimeoutException'  # on_failure ran, as in RQ
        assert rq_job(redis_conn, after.id).get_status() == 'finished'

    @pytest.mark.timeout(120)
    def test_the_worker_kills_a_horse_that_outlives_its_timeout(self, redis_conn: redis.Redis) -> None:
        queue = rqfast.Queue('q', connection=redis_conn)
        job = queue.enqueue('jobs_isolation.sleep_ignoring_alarm', 20, job_timeout=1)
        after = queue.enqueue('jobs.say_hello')
        started = time.monotonic()
        self.run_burst(redis_conn, horse_kill_grace=1)
        assert time.monotonic() - started < 10
        text = exc_string(redis_conn, job.id)
        assert 'killed by the worker' in text
        assert text.rstrip().endswith('JobTimeoutException: Task exceeded maximum timeout value (1 seconds)')
        assert rq_job(redis_conn, after.id).get_status() == 'finished'

    # --- pub/sub commands, sent with rq's own functions

    @pytest.mark.timeout(180)
    def test_kill_horse_command(self, redis_conn: redis.Redis, worker_process: Any) -> None:
        queue = rq.Queue('q', connection=redis_conn)
        job = queue.enqueue('jobs_isolation.announce_and_sleep', 30)
        after = queue.enqueue('jobs.say_hello')
        process = worker_process('killable')
        wait_until(lambda: redis_conn.exists(f'running:{job.id}'), timeout=60)
        rq.command.send_kill_horse_command(redis_conn, 'killable')
        process.wait()
        assert rq_job(redis_conn, job.id).get_status() == 'failed'
        assert exc_string(redis_conn, job.id) == KILLED
        assert rq_job(redis_conn, after.id).get_status() == 'finished'

    @pytest.mark.timeout(180)
    def test_stop_job_command(self, redis_conn: redis.Redis, worker_process: Any) -> None:
        queue = rqfast.Queue('q', connection=redis_conn)
        job = queue.enqueue(
            'jobs_isolation.announce_and_sleep', 30, on_stopped=rqfast.Callback('jobs_isolation.record_stopped')
        )
        after = queue.enqueue('jobs.say_hello')
        process = worker_process('stoppable')
        wait_until(lambda: redis_conn.exists(f'running:{job.id}'), timeout=60)
        rq.command.send_stop_job_command(redis_conn, job.id)
        process.wait()
        assert rq_job(redis_conn, job.id).get_status() == 'stopped'
        assert job.id in rq.registry.FailedJobRegistry('q', connection=redis_conn)
        assert exc_string(redis_conn, job.id) == 'Job stopped by user, work-horse terminated.'
        assert redis_conn.get(f'stopped:{job.id}') == str(process.proc.pid).encode()  # ran in the worker
        assert rq_job(redis_conn, after.id).get_status() == 'finished'

    @pytest.mark.timeout(180)
    def test_stop_execution_command(self, redis_conn: redis.Redis, worker_process: Any) -> None:
        """RQ 3.0's stop-execution (the execution id as RQ 3.0's readers find it: the worker's index)."""
        job = rqfast.Queue('q', connection=redis_conn).enqueue('jobs_isolation.announce_and_sleep', 30)
        process = worker_process('stoppable')
        wait_until(lambda: redis_conn.exists(f'running:{job.id}'), timeout=60)
        [member] = redis_conn.smembers(rqfast.keys.worker_executions_key('stoppable'))
        job_id, _, execution_id = member.decode().rpartition(':')
        assert job_id == job.id
        with pytest.raises(rqfast.exceptions.InvalidJobOperation):
            rqfast.command.send_stop_execution_command(redis_conn, job.id, 'not-this-one')
        rqfast.command.send_command(redis_conn, 'stoppable', 'stop-execution', job_id=job.id, execution_id='x0')
        time.sleep(0.3)  # an ignored command: the job is still running
        assert rq_job(redis_conn, job.id).get_status() == 'started'
        rqfast.command.send_stop_execution_command(redis_conn, job.id, execution_id)
        process.wait()
        assert rq_job(redis_conn, job.id).get_status() == 'stopped'
        assert exc_string(redis_conn, job.id) == 'Job stopped by user, work-horse terminated.'

    @pytest.mark.timeout(180)
    def test_a_warm_shutdown_lets_the_job_finish(self, redis_conn: redis.Redis, worker_process: Any) -> None:
        queue = rq.Queue('q', connection=redis_conn)
        job = queue.enqueue('jobs_isolation.announce_and_sleep', 2)
        later = queue.enqueue('jobs.say_hello')
        process = worker_process('warm')
        wait_until(lambda: redis_conn.exists(f'running:{job.id}'), timeout=60)
        process.proc.send_signal(signal.SIGINT)  # Ctrl+C: the horse, in a process group of its own, goes on
        process.wait()
        assert rq_job(redis_conn, job.id).get_status() == 'finished'
        assert rq_job(redis_conn, later.id).get_status() == 'queued'

    @pytest.mark.timeout(180)
    @pytest.mark.skipif(not Path('/proc/self/status').exists(), reason='reads /proc')
    def test_a_cold_shutdown_kills_the_horse(self, redis_conn: redis.Redis, worker_process: Any) -> None:
        job = rq.Queue('q', connection=redis_conn).enqueue('jobs_isolation.announce_and_sleep', 30)
        process = worker_process('cold')
        horse_pid = int(wait_until(lambda: redis_conn.get(f'running:{job.id}'), timeout=60))
        process.proc.send_signal(signal.SIGINT)
        time.sleep(1.2)  # a second signal within a second of the first is taken as the same keypress
        process.proc.send_signal(signal.SIGINT)
        process.wait()
        wait_until(lambda: not _alive(horse_pid), timeout=5)
        assert rq_job(redis_conn, job.id).get_status() == 'failed'

    @pytest.mark.timeout(180)
    def test_heartbeats_flow_while_the_horse_runs(self, redis_conn: redis.Redis, worker_process: Any) -> None:
        job = rqfast.Queue('q', connection=redis_conn).enqueue('jobs_isolation.announce_and_sleep', 4)
        process = worker_process('beating', {'worker': {'job_monitoring_interval': 2}})
        wait_until(lambda: redis_conn.exists(f'running:{job.id}'), timeout=60)
        first = redis_conn.hget('rq:worker:beating', 'last_heartbeat')
        wait_until(lambda: redis_conn.hget('rq:worker:beating', 'last_heartbeat') != first, timeout=3)
        assert redis_conn.ttl('rq:worker:beating') <= 2 + 60  # the busy TTL: monitoring interval + 60
        assert rq_job(redis_conn, job.id).get_status() == 'started'
        process.wait()
        assert rq_job(redis_conn, job.id).get_status() == 'finished'
