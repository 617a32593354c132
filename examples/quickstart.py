"""Enqueue a few jobs with rqfast, work them, and print what came back.

Run from the repository root after `python -m pip install .`:

    python examples/quickstart.py

Redis, in this order: $REDIS_URL if set; else a private redis-server started here on a free
loopback port (persistence off, stopped at exit) if redis-server is on PATH; else fakeredis in
this process, if it is installed.
"""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The job functions must come from an importable module, not __main__ (RQ refuses those).
sys.path.insert(0, str(Path(__file__).resolve().parent))

import quickstart_jobs  # noqa: E402
from redis import Redis  # noqa: E402

try:
    from rqfast import Queue
except ImportError as exc:
    sys.exit(f'rqfast is not importable ({exc}): run `python -m pip install .` from the repository root first')


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


def start_private_server(binary: str) -> Redis:
    """A redis-server of our own on a free loopback port, with persistence off, stopped at exit."""
    port = free_port()
    workdir = tempfile.mkdtemp(prefix='rqfast-quickstart-')
    proc = subprocess.Popen(
        [binary, '--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', workdir],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(workdir, ignore_errors=True)

    atexit.register(stop)
    conn = Redis(host='127.0.0.1', port=port)
    deadline = time.monotonic() + 10
    while True:
        try:
            conn.ping()
            return conn
        except OSError:  # redis.ConnectionError is one
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f'{binary} did not start on port {port}')
            time.sleep(0.02)


def connect() -> Redis:
    url = os.environ.get('REDIS_URL')
    if url:
        print(f'Redis: REDIS_URL ({url})')
        return Redis.from_url(url)
    binary = shutil.which('redis-server')
    if binary:
        conn = start_private_server(binary)
        print(f'Redis: a private redis-server on 127.0.0.1:{conn.connection_pool.connection_kwargs["port"]}')
        return conn
    try:
        import fakeredis
    except ImportError:
        print('No Redis: REDIS_URL is not set, redis-server is not on PATH and fakeredis is not installed.')
        print('Set REDIS_URL, `apt-get install -y redis-server`, or `python -m pip install "fakeredis[lua]"`.')
        sys.exit(1)
    print('Redis: fakeredis, in this process')
    fake: Redis = fakeredis.FakeStrictRedis()
    return fake


def enqueue_examples(queue: Any) -> list[Any]:
    return [
        queue.enqueue(quickstart_jobs.count_words, 'a drop-in, faster replacement for RQ'),
        queue.enqueue(quickstart_jobs.add, 2, 3),
        queue.enqueue(quickstart_jobs.add, a=40, b=2),
    ]


def run(conn: Redis) -> list[Any]:
    """Enqueue and work the jobs with a SimpleWorker, or inline if rqfast has no worker yet."""
    try:
        from rqfast import SimpleWorker
    except ImportError:
        print('Mode: Queue(is_async=False), jobs run as they are enqueued (rqfast.SimpleWorker is not importable)')
        return enqueue_examples(Queue('quickstart', connection=conn, is_async=False))
    print('Mode: SimpleWorker(...).work(burst=True)')
    queue = Queue('quickstart', connection=conn)
    jobs = enqueue_examples(queue)
    SimpleWorker([queue], connection=conn).work(burst=True)
    return jobs


def main() -> int:
    conn = connect()
    jobs = run(conn)
    for job in jobs:
        status = job.get_status(refresh=True)
        print(f'{job.id}  {job.func_name:<28} {getattr(status, "value", status):<9} {job.return_value()!r}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
