"""`rqfast cron CONFIG_PATH` against `rq cron`: the same options, the same log lines, the same Redis state,
the same exit codes; a config written for rq (`from rq import cron`) runs unchanged."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from rqfast import keys

pytestmark = pytest.mark.timeout(90)

REPO_ROOT = Path(__file__).resolve().parents[1]
_ENV_LEAKS = ('RQ_REDIS_URL', 'RQFAST_REDIS_URL', 'RQ_CONFIG', 'RQFAST_CONFIG', 'REDIS_URL', 'REDIS_HOST')
CONFIG = """from {impl} import cron
from tests.jobs import noop, say_hello

cron.register(say_hello, 'default', args=('cli',), interval=1)
cron.register(noop, 'low', cron='0 3 29 2 *', name='nightly')  # (leap days only: never due in a run)
"""


def process(impl: str, *args: str) -> subprocess.Popen[str]:
    env = {key: value for key, value in os.environ.items() if key not in _ENV_LEAKS}
    return subprocess.Popen(
        [sys.executable, '-m', f'{impl}.cli', 'cron', *args],
        cwd=REPO_ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def run_until_two_runs(conn: redis.Redis, impl: str, config: Path, *options: str) -> tuple[int, str]:
    """Start `<impl> cron`, wait for its second run of the interval job, SIGTERM it: (exit code, output)."""
    proc = process(impl, str(config), *options)
    try:
        deadline = time.monotonic() + 20
        while conn.zcard(keys.cron_job_history_key('tests.jobs.say_hello')) < 2:
            assert proc.poll() is None, proc.communicate()[0]
            assert time.monotonic() < deadline, f'{impl} cron enqueued nothing'
            time.sleep(0.05)
        [name] = [n.decode() for n in conn.zrange(keys.CRON_SCHEDULERS, 0, -1)]
        assert conn.hget(keys.cron_scheduler_key(name), 'config_file') == str(config).encode()
        # the run is in Redis before its "Enqueued" line is logged: let the line come out (the next run
        # is a second away), or the signal's line may come first and the logs differ by that alone
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert conn.zcard(keys.CRON_SCHEDULERS) == 0, 'the scheduler did not deregister'
    return proc.returncode, out


def lines(out: str, config: Path) -> list[str]:
    """The log lines without their time, scheduler name and config path; repeats of a line once."""
    found: list[str] = []
    for line in out.splitlines():
        line = re.sub(r'^\d\d:\d\d:\d\d ', '', line).replace(str(config), '<config>')
        line = re.sub(r'CronScheduler \S+:\d+:[0-9a-f]{6}:', 'CronScheduler <name>:', line)
        if not found or found[-1] != line:
            found.append(line)
    return found


def write_config(tmp_path: Path, impl: str) -> Path:
    path = tmp_path / f'{impl}_cron_config.py'
    path.write_text(CONFIG.format(impl=impl))
    return path


@pytest.mark.parametrize('options', [(), ('--logging-level', 'WARNING'), ('-l', 'debug')])
def test_cron_runs_and_stops_as_rq_cron_does(
    redis_conn: redis.Redis, redis_url: str, tmp_path: Path, options: tuple[str, ...]
) -> None:
    outputs = {}
    for impl in ('rq', 'rqfast'):
        redis_conn.flushdb()
        config = write_config(tmp_path, impl)
        code, out = run_until_two_runs(redis_conn, impl, config, '-u', redis_url, *options)
        assert code == 0, out
        outputs[impl] = [line for line in lines(out, config) if 'heartbeat' not in line and 'Sleeping' not in line]
        assert redis_conn.llen(keys.queue_key('default')) >= 2 and redis_conn.llen(keys.queue_key('low')) == 0
    assert outputs['rqfast'] == outputs['rq']
    if not options:
        assert 'Enqueued job say_hello to queue default' in outputs['rqfast']
        assert "Registered 'tests.jobs.noop' to run on low with cron schedule '0 3 29 2 *'" in outputs['rqfast']
    if options[-1:] == ('WARNING',):
        assert outputs['rqfast'] == []


def test_rq_config_runs_unchanged(redis_conn: redis.Redis, redis_url: str, tmp_path: Path) -> None:
    """`rqfast cron` with a config that imports rq's cron module: its jobs are registered and run."""
    config = write_config(tmp_path, 'rq')
    code, out = run_until_two_runs(redis_conn, 'rqfast', config, '--url', redis_url)
    assert code == 0 and 'Successfully registered 2 cron jobs' in out, out


def test_config_given_by_module_path(redis_conn: redis.Redis, redis_url: str, tmp_path: Path) -> None:
    write_config(tmp_path, 'rqfast')
    proc = process('rqfast', 'rqfast_cron_config', '-u', redis_url, '-P', str(tmp_path))
    try:
        deadline = time.monotonic() + 20
        while not redis_conn.exists(keys.cron_job_history_key('tests.jobs.say_hello')):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[0]
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and 'received shutdown signal 2' in out, out


@pytest.mark.parametrize('path', ['does/not/exist.py', '/does/not/exist.py', 'broken'])
def test_bad_config_exits_as_rq_cron_does(redis_url: str, tmp_path: Path, path: str) -> None:
    """rq ends with a traceback and status 1; rqfast with status 1 and one `Error:` line saying the same."""
    if path == 'broken':
        (tmp_path / 'broken_config.py').write_text('this is not python :')
        path = str(tmp_path / 'broken_config.py')
    results = {}
    for impl in ('rq', 'rqfast'):
        proc = process(impl, path, '-u', redis_url)
        results[impl] = (proc.wait(30), proc.communicate()[0])
    assert results['rqfast'][0] == results['rq'][0] == 1
    [error] = [line for line in results['rqfast'][1].splitlines() if line.startswith('Error: ')]
    rq_message = results['rq'][1].strip().splitlines()[-1].split(': ', 1)[1]
    assert error == f'Error: {rq_message}'
