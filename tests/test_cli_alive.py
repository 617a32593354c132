"""`python -m rqfast` and `rqfast worker-alive`, the liveness probe the deployment examples use."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import redis
from click.testing import CliRunner

from rqfast import keys
from rqfast.cli import main
from rqfast.dates import now, utcformat
from rqfast.worker import SimpleWorker

REPO_ROOT = Path(__file__).resolve().parent.parent


def alive(url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ['worker-alive', '-u', url, *args])
    return result.exit_code, result.output


def registered(conn: redis.Redis, name: str) -> SimpleWorker:
    """A worker of this process (this host, a live pid) with its hash written, as at start-up."""
    worker = SimpleWorker(['default'], name=name, connection=conn)
    worker.register_birth()
    return worker


def set_last_heartbeat(conn: redis.Redis, name: str, seconds_ago: float) -> None:
    conn.hset(keys.worker_key(name), 'last_heartbeat', utcformat(now() - timedelta(seconds=seconds_ago)))


def test_python_dash_m_rqfast_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, '-m', 'rqfast', '--help'], capture_output=True, text=True, cwd=REPO_ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith('Usage: rqfast ')
    for command in ('worker', 'worker-pool', 'info', 'worker-alive'):
        assert f'  {command} ' in result.stdout


def test_no_worker_is_not_alive(redis_conn: redis.Redis, redis_url: str) -> None:
    code, output = alive(redis_url)
    assert code == 1
    assert 'no worker running on' in output


def test_a_worker_of_this_host_with_a_fresh_heartbeat_is_alive(redis_conn: redis.Redis, redis_url: str) -> None:
    registered(redis_conn, 'here')
    code, output = alive(redis_url)
    assert (code, output.split(':')[0]) == (0, 'worker here'), output
    set_last_heartbeat(redis_conn, 'here', 30)
    assert alive(redis_url)[0] == 0
    assert alive(redis_url, '--max-age', '20')[0] == 1


def test_a_stale_heartbeat_is_not_alive(redis_conn: redis.Redis, redis_url: str) -> None:
    registered(redis_conn, 'stale')
    set_last_heartbeat(redis_conn, 'stale', 120)
    code, output = alive(redis_url)
    assert code == 1
    assert 'worker stale: last heartbeat 120 s ago' in output


def test_only_this_hosts_live_pids_count_unless_named(redis_conn: redis.Redis, redis_url: str) -> None:
    registered(redis_conn, 'elsewhere')
    redis_conn.hset(keys.worker_key('elsewhere'), 'hostname', 'another-host')
    registered(redis_conn, 'gone')
    finished = subprocess.run([sys.executable, '-c', 'import os; print(os.getpid())'], capture_output=True, text=True)
    redis_conn.hset(keys.worker_key('gone'), 'pid', finished.stdout.strip())  # a pid that has exited
    code, output = alive(redis_url)
    assert code == 1 and 'no worker running on' in output, output
    assert alive(redis_url, '--name', 'elsewhere')[0] == 0  # named: wherever it runs
    code, output = alive(redis_url, '--name', 'nobody')
    assert code == 1 and "no worker named 'nobody'" in output


def test_a_running_worker_process_passes_the_probe_until_it_stops(redis_conn: redis.Redis, redis_url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(('RQ_', 'RQFAST_', 'REDIS_'))}
    worker = subprocess.Popen(
        [sys.executable, '-m', 'rqfast', 'worker', '-u', redis_url, '-n', 'probed', 'default'],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    probe = [sys.executable, '-m', 'rqfast', 'worker-alive', '-u', redis_url]
    try:
        deadline = time.monotonic() + 30
        while not redis_conn.exists(keys.worker_key('probed')):
            assert time.monotonic() < deadline, 'the worker did not register'
            time.sleep(0.1)
        result = subprocess.run(probe, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=60)
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.startswith('worker probed: last heartbeat ')
    finally:
        worker.send_signal(signal.SIGTERM)  # a warm shutdown: an idle worker stops at once
        assert worker.wait(timeout=30) == 0
    result = subprocess.run(probe, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    assert alive(redis_url, '--name', 'probed')[0] == 1  # its hash records its death
