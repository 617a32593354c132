"""Workers in processes of their own and a redis-server a test may kill, for the reliability tests.

`WorkerProcess` runs tests/worker_process.py (any worker class, attributes set before it works);
`KillableRedis` is a redis-server of the test's own with an append-only file fsynced on every write,
so `kill()` (SIGKILL) and `start()` on the same port keep every acknowledged write. `markers(dir)`
reads the chaos jobs' idempotency markers (tests/chaos/chaos_jobs.py).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
import rq.command

try:
    import redis_servers
except ImportError:  # tests/ as a package
    from tests import redis_servers  # type: ignore[no-redef]

HELPER = Path(__file__).with_name('worker_process.py')


def wait_until(condition: Callable[[], Any], timeout: float = 30.0, what: str = 'condition', step: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f'timed out after {timeout} s waiting for {what}')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


class WorkerProcess:
    """One worker process; its log goes to a file."""

    def __init__(self, url: str, options: dict[str, Any], log_path: Path) -> None:
        self.name = options.setdefault('name', uuid.uuid4().hex)
        self.key = f'rq:worker:{self.name}'
        self.log_path = log_path
        self.log_file = open(log_path, 'wb')  # noqa: SIM115 - closed in stop()
        path = os.pathsep.join([str(HELPER.parent.parent), os.environ.get('PYTHONPATH', '')])
        # a worker of its own: no job id a test process may carry (a horse's RQ_JOB_ID names its job)
        inherited = {k: v for k, v in os.environ.items() if k not in ('RQ_JOB_ID', 'RQ_EXECUTION_ID', 'RQ_WORKER_ID')}
        env = {**inherited, 'PYTHONPATH': path}
        self.proc = subprocess.Popen(
            [sys.executable, str(HELPER), url, json.dumps(options)],
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            env=env,
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors='replace')

    def signal(self, signum: int) -> None:
        self.proc.send_signal(signum)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_registered(self, conn: redis.Redis, timeout: float = 30.0) -> None:
        """Until the worker has registered (its hash has a state)."""
        wait_until(
            lambda: conn.hget(self.key, 'state') in (b'idle', b'busy', b'suspended'),
            timeout,
            f'worker {self.name} to start; log:\n{self.log()}',
        )

    def wait(self, timeout: float = 30.0) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f'the worker did not exit in {timeout} s; its log:\n{self.log()}') from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait(5)
        self.log_file.close()

    def children(self) -> list[int]:
        """Pids of this worker's child processes (horses, the breeder)."""
        try:
            text = Path(f'/proc/{self.pid}/task/{self.pid}/children').read_text()
        except OSError:
            return []
        return [int(pid) for pid in text.split()]


class KillableRedis:
    """A redis-server of the test's own, AOF with appendfsync always: a SIGKILL loses nothing acknowledged."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix='rqfast-chaos-redis-')
        self.url = f'redis://127.0.0.1:{self.port}/0'
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [redis_servers.binary(), '--port', str(self.port), '--bind', '127.0.0.1', '--save', '']
        args += ['--appendonly', 'yes', '--appendfsync', 'always', '--dir', self.dir]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis.from_url(self.url)
        wait_until(lambda: self._ping(client), timeout=20, what='the private redis-server')
        client.close()

    @staticmethod
    def _ping(client: redis.Redis) -> bool:
        try:
            return bool(client.ping())
        except redis.RedisError:
            return False

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(10)
            self.proc = None

    def stop(self) -> None:
        """A clean shutdown (SIGTERM); start() brings it back with its data."""
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def shut_down(conn: redis.Redis, workers: list[WorkerProcess], timeout: float = 15) -> None:
    """RQ's shutdown command to each worker process, then each must exit 0 within `timeout` s."""
    for w in workers:
        rq.command.send_shutdown_command(conn, w.name)
    for w in workers:
        assert w.wait(timeout) == 0, w.log()


def markers(directory: Path, job_id: str) -> list[str]:
    """The marker lines of a job ('start <pid>', 'end <pid>'), in order."""
    path = directory / job_id
    return path.read_text().split('\n')[:-1] if path.exists() else []


def runs(directory: Path, job_id: str) -> tuple[int, int]:
    """(bodies started, bodies completed) of a job."""
    lines = markers(directory, job_id)
    return sum(line.startswith('start') for line in lines), sum(line.startswith('end') for line in lines)
