"""The Redis the bench measures against: a private redis-server it starts, or one the user owns."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass

import redis

_TRANSACTION_COMMANDS = {'multi', 'exec', 'discard'}
_SCRIPT_COMMANDS = {'eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro'}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


def _ranges(cpus: list[int]) -> str:
    return str(cpus[0]) if len(cpus) == 1 else f'{cpus[0]}-{cpus[-1]}'


class PrivateRedis:
    """A throwaway redis-server on a free loopback port, without persistence."""

    def __init__(self) -> None:
        binary = shutil.which('redis-server')
        if binary is None:
            raise SystemExit('redis-server is not on PATH; install it or pass --redis-url')
        self.port = _free_port()
        self._dir = tempfile.TemporaryDirectory(prefix='bench-redis-')
        self._proc = subprocess.Popen(
            [
                binary,
                '--port',
                str(self.port),
                '--bind',
                '127.0.0.1',
                '--save',
                '',
                '--appendonly',
                'no',
                '--dir',
                self._dir.name,
                '--daemonize',
                'no',
                '--loglevel',
                'warning',
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f'redis://127.0.0.1:{self.port}/0'
        self._wait_ready()

    def _wait_ready(self) -> None:
        client = redis.Redis.from_url(self.url)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f'redis-server on port {self.port} did not start') from None
                time.sleep(0.05)
            finally:
                client.close()

    def pin_apart(self) -> str:
        """Give redis-server the last CPU and this process (and so every worker) the others.

        On a small VM, whether the worker and Redis share a core changes every round trip's cost
        (2x on the machine this bench was written on); left to the scheduler, runs flip between
        the two. Pinning them apart makes runs comparable and resembles a Redis on another core
        or host. Returns what was done, for the report.
        """
        if not hasattr(os, 'sched_setaffinity'):
            return 'not pinned (no sched_setaffinity)'
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            return 'not pinned (one CPU)'
        os.sched_setaffinity(self._proc.pid, {cpus[-1]})
        os.sched_setaffinity(0, set(cpus[:-1]))
        return f'redis-server on CPU {cpus[-1]}, bench and workers on CPU {_ranges(cpus[:-1])}'

    def stop(self) -> None:
        self._proc.terminate()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._dir.cleanup()


@dataclass
class CommandCounts:
    """Calls per command group since the last CONFIG RESETSTAT, as INFO commandstats reports them.

    The bench's own CONFIG/INFO calls are included; they are the same in every counted run and
    cancel out when two runs are subtracted.
    """

    data: int  # every other command, including those a Lua script runs
    scripts: int  # EVAL/EVALSHA/FCALL calls
    transactions: int  # MULTI/EXEC/DISCARD


class Target:
    """Connection facts and the few admin commands the bench sends to the measured server."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client = redis.Redis.from_url(url)
        info = self.client.info('server')
        self.version = str(info['redis_version'])
        kwargs = self.client.connection_pool.connection_kwargs
        self.host = str(kwargs.get('host', '127.0.0.1'))
        self.port = int(kwargs.get('port', 6379))
        self.db = int(kwargs.get('db', 0))

    def connect(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def flush(self) -> None:
        self.client.flushdb()

    def reset_stats(self) -> None:
        self.client.config_resetstat()

    def cpu_seconds(self, client: redis.Redis | None = None) -> float:
        """The server's CPU time so far (INFO cpu: used_cpu_sys + used_cpu_user, all its threads).

        Pass a client of the calling process (a run's fork must not use the bench's own connection)."""
        info = (client or self.client).info('cpu')
        return float(info['used_cpu_sys']) + float(info['used_cpu_user'])

    def command_counts(self) -> CommandCounts:
        counts = CommandCounts(0, 0, 0)
        for name, stats in self.client.info('commandstats').items():
            command = name.removeprefix('cmdstat_')
            calls = int(stats['calls'])
            if command in _SCRIPT_COMMANDS:
                counts.scripts += calls
            elif command in _TRANSACTION_COMMANDS:
                counts.transactions += calls
            else:
                counts.data += calls
        return counts
