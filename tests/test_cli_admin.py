"""`rqfast info/enqueue/empty/requeue/suspend/resume` against `rq`'s: same output, same Redis, same exit codes.

RQ is the oracle. `info` runs both CLIs as processes on one Redis and compares their lines. The commands that
write run each CLI (in process, through click's CliRunner) on the same starting db, and the two dbs are then
compared field by field (tests/snapshot.py), with the two outputs. Bad input gets rq's exit status; where rq
ends in a traceback, rqfast prints rq's exception message as one `Error:` line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis
import rq
import rq.cli
from click.testing import CliRunner, Result

import rqfast.cli

try:
    import jobs
    from snapshot import assert_same, normalize, snapshot
except ImportError:  # tests/ became a package
    from tests import jobs  # type: ignore[no-redef]
    from tests.snapshot import assert_same, normalize, snapshot  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(90)

REPO_ROOT = Path(__file__).resolve().parents[1]
JOBS = jobs.__name__
COMMANDS = {'rq': rq.cli.main, 'rqfast': rqfast.cli.main}
Setup = Callable[[redis.Redis], None]

_ENV_LEAKS = ('RQ_REDIS_URL', 'RQFAST_REDIS_URL', 'RQ_CONFIG', 'RQFAST_CONFIG', 'REDIS_URL', 'REDIS_HOST')


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, 'path', list(sys.path))
    for name in _ENV_LEAKS:
        monkeypatch.delenv(name, raising=False)


def cli(name: str, *args: str) -> Result:
    return CliRunner().invoke(COMMANDS[name], list(args))


def process(name: str, *args: str, **kwargs: Any) -> subprocess.Popen[str]:
    """`python -m rq.cli ...` (what the `rq` console script runs) or `python -m rqfast.cli ...`."""
    module = 'rq.cli' if name == 'rq' else 'rqfast.cli'
    env = {key: value for key, value in os.environ.items() if key not in _ENV_LEAKS}
    env['COLUMNS'] = '100'  # the bar chart's width follows the terminal's
    return subprocess.Popen(
        [sys.executable, '-m', module, *args],
        cwd=REPO_ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **kwargs,
    )


def run(name: str, *args: str) -> tuple[int, str]:
    proc = process(name, *args)
    out, _ = proc.communicate(timeout=60)
    return proc.returncode, out


def run_both(conn: redis.Redis, setup: Setup, *args: str) -> dict[str, Result]:
    """The same command with each CLI on the same starting db; the dbs they leave must be the same."""
    results, dumps = {}, {}
    for name in COMMANDS:
        conn.flushdb()
        setup(conn)
        results[name] = cli(name, *args)
        dumps[name] = normalize(snapshot(conn))
    conn.flushdb()
    assert_same(dumps['rq'], dumps['rqfast'], ' '.join(args))
    assert results['rq'].exit_code == results['rqfast'].exit_code, (results['rq'].output, results['rqfast'].output)
    return results


def nothing(conn: redis.Redis) -> None:
    pass


# --- rq info and rqfast info on the same Redis


def fleet(conn: redis.Redis) -> None:
    """Three queues with jobs, a failed and a finished job, and two live workers (idle, busy)."""
    default = rq.Queue('default', connection=conn)
    for n in range(3):
        default.enqueue(f'{JOBS}.add', n, 1)
    rq.Queue('low', connection=conn).enqueue(f'{JOBS}.noop')
    rq.Queue('high', connection=conn, is_async=False).enqueue(jobs.div_by_zero)
    rq.Queue('high', connection=conn, is_async=False).enqueue(jobs.add, 1, 2)
    for name, queues, state in (('w-idle', ['default', 'low'], 'idle'), ('w-busy', ['low'], 'busy')):
        worker = rq.Worker(queues, connection=conn, name=name)
        worker.register_birth()
        worker.set_state(state)


def info_lines(name: str, redis_url: str, *args: str) -> list[str]:
    """The lines `info` prints, sorted (rq lists queues and workers in a Python set's order), without the
    `Updated:` time."""
    code, out = run(name, 'info', '-u', redis_url, *args)
    assert code == 0, out
    return sorted(line for line in out.splitlines() if not line.startswith('Updated: '))


INFO_ARGS = [
    (),
    ('--raw',),
    ('--only-queues',),
    ('--only-workers',),
    ('--by-queue',),
    ('-R', '-r'),
    ('-W', '-R'),
    ('low', 'high'),
    ('low', '-R'),
    ('nosuch',),
]


@pytest.mark.parametrize('args', INFO_ARGS, ids=' '.join)
def test_info_prints_what_rq_info_prints(redis_conn: redis.Redis, redis_url: str, args: Sequence[str]) -> None:
    fleet(redis_conn)
    theirs = info_lines('rq', redis_url, *args)
    assert theirs, 'rq info printed nothing'
    assert info_lines('rqfast', redis_url, *args) == theirs


def test_info_counts(redis_conn: redis.Redis, redis_url: str) -> None:
    fleet(redis_conn)
    lines = info_lines('rqfast', redis_url)
    assert 'default      |███ 3, 0 executing, 0 finished, 0 failed' in lines
    assert 'high         | 0, 0 executing, 1 finished, 1 failed' in lines
    assert '3 queues, 4 jobs total' in lines and '2 workers, 3 queues' in lines
    assert info_lines('rqfast', redis_url, '-W', 'low') == sorted(
        [
            f'w-busy ({_host()} {_address(redis_conn, "w-busy")} {os.getpid()}): busy low. jobs: 0 finished, 0 failed',
            f'w-idle ({_host()} {_address(redis_conn, "w-idle")} {os.getpid()}): idle default, low. jobs: 0 finished, '
            '0 failed',
            '2 workers, 1 queues',
        ]
    )


def _host() -> str:
    return os.uname().nodename


def _address(conn: redis.Redis, worker: str) -> str:
    return conn.hget(f'rq:worker:{worker}', 'ip_address').decode()  # type: ignore[union-attr]


def test_info_empty_db_and_order(redis_conn: redis.Redis, redis_url: str) -> None:
    code, out = run('rqfast', 'info', '-u', redis_url)
    assert code == 0 and out.splitlines()[:3] == ['0 queues, 0 jobs total', '', '0 workers, 0 queues'], out
    assert out.splitlines()[4].startswith('Updated: ')
    fleet(redis_conn)
    code, out = run('rqfast', 'info', '-u', redis_url, '-r')
    assert [line.split()[1] for line in out.splitlines()] == ['default', 'high', 'low', 'w-busy', 'w-idle']


@pytest.mark.parametrize('name', ['rq', 'rqfast'])
def test_info_interval_refreshes_until_interrupted(redis_conn: redis.Redis, redis_url: str, name: str) -> None:
    """`info --interval` prints again every interval (it sees a change between two of its prints); Ctrl-C ends
    it with status 0. Waits for what it printed, not for a time: on a loaded machine a start takes seconds."""
    redis_conn.rpush('rq:queue:live', 'x')
    redis_conn.sadd('rq:queues', 'rq:queue:live')
    proc = process(name, 'info', '-u', redis_url, '-i', '0.2', '-Q')
    assert proc.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=read_lines, args=(proc, lines), daemon=True)
    reader.start()
    try:
        wait_printed(lines, '1 queues, 1 jobs total', 2)
        redis_conn.rpush('rq:queue:live', 'y')
        wait_printed(lines, '1 queues, 2 jobs total', 2)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    reader.join(10)
    out = ''.join(lines)
    assert proc.returncode == 0, out
    assert out.count('1 queues, 1 jobs total') >= 2 and out.count('1 queues, 2 jobs total') >= 2, out


def read_lines(proc: subprocess.Popen[str], lines: list[str]) -> None:
    for line in proc.stdout or ():
        lines.append(line)


def wait_printed(lines: list[str], text: str, times: int, timeout: float = 60) -> None:
    """Until `text` is in `times` of the lines a process printed so far (fails after `timeout` s)."""
    deadline = time.monotonic() + timeout
    while sum(text in line for line in list(lines)) < times:
        assert time.monotonic() < deadline, f'{text!r} not printed {times} times in {timeout} s: {lines}'
        time.sleep(0.05)


def test_info_unreachable_redis_exits_1() -> None:
    for name in COMMANDS:
        code, out = run(name, 'info', '-u', 'redis://127.0.0.1:1')
        assert code == 1 and 'Connection refused' in out


# --- enqueue: what rq enqueue writes


ENQUEUE_ARGS = [
    (f'{JOBS}.say_hello',),
    (f'{JOBS}.echo', 'hello', ':[1, {"key": "value"}]', '%1, 2', 'json:=[3.0, true]', 'nojson=abc', 'lit%={"a": 1}'),
    (f'{JOBS}.say_hello', '--queue', 'other', '--at-front'),
    (f'{JOBS}.say_hello', '--timeout', '10m', '--result-ttl', '100', '--ttl', '3600', '--failure-ttl', '1h'),
    (f'{JOBS}.say_hello', '--description', 'a job'),
    (f'{JOBS}.say_hello', '--retry-max', '3', '--retry-interval', '10', '--retry-interval', '20'),
    (f'{JOBS}.say_hello', '--retry-max', '2'),
    (f'{JOBS}.say_hello', '--schedule-at', '2100-01-01T00:00:00'),
    (f'{JOBS}.say_hello', '--schedule-at', '2001-01-01T00:00:00'),
    (f'{JOBS}.say_hello', '--depends-on', 'parent'),
    (f'{JOBS}.say_hello', '--depends-on', 'done', '--depends-on', 'parent'),
    ('not.imported.anywhere', '--quiet'),
    (f'{JOBS}.say_hello', '-S', 'rq.serializers.JSONSerializer', 'x'),
    (f'{JOBS}.say_hello', '-S', 'json', 'name=y'),
]


def parents(conn: redis.Redis) -> None:
    """A queued job `parent` and a finished job `done`, for --depends-on."""
    rq.Queue('default', connection=conn).enqueue(f'{JOBS}.noop', job_id='parent')
    rq.Queue('sync', connection=conn, is_async=False).enqueue(jobs.noop, job_id='done')


@pytest.mark.parametrize('args', ENQUEUE_ARGS, ids=' '.join)
def test_enqueue_writes_what_rq_enqueue_writes(redis_conn: redis.Redis, redis_url: str, args: Sequence[str]) -> None:
    results = run_both(redis_conn, parents, 'enqueue', '-u', redis_url, '--job-id', 'the-job', *args)
    assert results['rqfast'].exit_code == 0, results['rqfast'].output
    assert results['rqfast'].output == results['rq'].output


def test_enqueue_prints_the_call_and_the_new_id(redis_conn: redis.Redis, redis_url: str) -> None:
    result = cli('rqfast', 'enqueue', '-u', redis_url, f'{JOBS}.echo', 'a', 'k:=1')
    assert result.exit_code == 0
    job_id = redis_conn.lrange('rq:queue:default', 0, -1)[0].decode()
    assert result.output == f"Enqueued {JOBS}.echo('a', k=1) with job-id '{job_id}'.\n"


def test_enqueue_schedule_in_lands_in_the_scheduled_registry(redis_conn: redis.Redis, redis_url: str) -> None:
    before = time.time()
    result = cli('rqfast', 'enqueue', '-u', redis_url, '--job-id', 'later', f'{JOBS}.noop', '--schedule-in', '5m')
    assert result.exit_code == 0, result.output
    score = redis_conn.zscore('rq:scheduled:default', 'later')
    assert score is not None and before + 299 <= score <= time.time() + 301
    assert redis_conn.hget('rq:job:later', 'status') == b'scheduled' and not redis_conn.llen('rq:queue:default')


# --- empty and requeue: what rq's do


def queues_with_jobs(conn: redis.Redis) -> None:
    for name, count in (('a', 2), ('b', 3), ('c', 0)):
        queue = rq.Queue(name, connection=conn)
        for n in range(count):
            queue.enqueue(f'{JOBS}.add', n, n, job_id=f'{name}{n}')
    rq.Queue('c', connection=conn).enqueue(f'{JOBS}.noop', job_id='c-only').cancel()


EMPTY_ARGS = [('a',), ('a', 'b'), ('--all',), ('-a',), ('nosuch',), ()]


@pytest.mark.parametrize('args', EMPTY_ARGS, ids=lambda args: ' '.join(args) or 'no-queue')
def test_empty_does_what_rq_empty_does(redis_conn: redis.Redis, redis_url: str, args: Sequence[str]) -> None:
    results = run_both(redis_conn, queues_with_jobs, 'empty', '-u', redis_url, *args)
    assert results['rqfast'].exit_code == 0
    assert sorted(results['rqfast'].output.splitlines()) == sorted(results['rq'].output.splitlines())


def test_empty_output(redis_conn: redis.Redis, redis_url: str) -> None:
    queues_with_jobs(redis_conn)
    assert cli('rqfast', 'empty', '-u', redis_url, 'b', 'a').output == (
        '3 jobs removed from b queue\n2 jobs removed from a queue\n'
    )
    assert cli('rqfast', 'empty', '-u', redis_url).output == 'Nothing to do\n'


def failed_jobs(conn: redis.Redis) -> None:
    """Three failed jobs f0..f2 on queue `requeue` (one JSON-serialized queue `json`), and a finished job."""
    for n in range(3):
        rq.Queue('requeue', connection=conn, is_async=False).enqueue(jobs.div_by_zero, job_id=f'f{n}')
    json_queue = rq.Queue('json', connection=conn, is_async=False, serializer=rq.serializers.JSONSerializer)
    json_queue.enqueue(f'{JOBS}.div_by_zero', job_id='j0')
    rq.Queue('requeue', connection=conn, is_async=False).enqueue(jobs.noop, job_id='ok')


REQUEUE_ARGS = [
    ('--queue', 'requeue', 'f1'),
    ('--queue', 'requeue', 'f0', 'f2'),
    ('--queue', 'requeue', '--all'),
    ('--queue', 'requeue', '-a'),
    ('--queue', 'json', '-S', 'rq.serializers.JSONSerializer', '--all'),
    ('--queue', 'json', '-S', 'json', 'j0'),
    ('--queue', 'nosuch', '--all'),
    ('--queue', 'requeue'),
]


@pytest.mark.parametrize('args', REQUEUE_ARGS, ids=' '.join)
def test_requeue_does_what_rq_requeue_does(redis_conn: redis.Redis, redis_url: str, args: Sequence[str]) -> None:
    results = run_both(redis_conn, failed_jobs, 'requeue', '-u', redis_url, *args)
    assert results['rqfast'].exit_code == 0
    assert results['rqfast'].output == results['rq'].output


def test_requeue_of_a_job_not_in_the_failed_registry(redis_conn: redis.Redis, redis_url: str) -> None:
    """rq stops with a traceback, status 1; rqfast requeues the others, says how many it could not, status 1."""
    failed_jobs(redis_conn)
    result = cli('rqfast', 'requeue', '-u', redis_url, '--queue', 'requeue', 'ok', 'f0', 'missing')
    assert result.exit_code == cli('rq', 'requeue', '-u', redis_url, '--queue', 'requeue', 'ok').exit_code == 1
    assert result.output.splitlines()[0] == 'Requeueing 3 jobs from failed queue'
    assert result.output.splitlines()[-1] == 'Unable to requeue 2 jobs from failed job registry'
    assert redis_conn.lrange('rq:queue:requeue', 0, -1) == [b'f0']


# --- suspend and resume


@pytest.mark.parametrize('args', [(), ('--duration', '60')], ids=['forever', 'duration'])
def test_suspend_and_resume_print_what_rq_prints(redis_conn: redis.Redis, redis_url: str, args: Sequence[str]) -> None:
    results = run_both(redis_conn, nothing, 'suspend', '-u', redis_url, *args)
    assert results['rqfast'].exit_code == 0 and results['rqfast'].output == results['rq'].output
    results = run_both(redis_conn, lambda conn: conn.set('rq:suspended', 1), 'resume', '-u', redis_url)
    assert results['rqfast'].output == results['rq'].output == 'Resuming workers.\n'


# --- bad input: rq's exit status; rq's message, as one line where rq prints a traceback

USAGE_ERRORS = [  # click's own errors: the same text, exit status 2
    ('requeue',),
    ('requeue', '--queue'),
    ('enqueue',),
    ('suspend', '--duration', 'x'),
    ('info', '--interval', 'x'),
    ('empty', '--nosuch'),
    ('enqueue', f'{JOBS}.echo', '--retry-max', 'many'),
    ('enqueue', f'{JOBS}.echo', ':invalid_json'),
    ('enqueue', f'{JOBS}.echo', '%invalid_eval_statement'),
    ('enqueue', f'{JOBS}.echo', 'key=value', 'key=value'),
    ('enqueue', f'{JOBS}.echo', '--schedule-in', '1s', '--schedule-at', '2000-01-01T00:00:00'),
    ('enqueue', f'{JOBS}.echo', '@not_existing_file'),
    ('suspend', '--duration', '0'),
]


@pytest.mark.parametrize('args', USAGE_ERRORS, ids=' '.join)
def test_usage_errors_are_rqs(redis_conn: redis.Redis, redis_url: str, args: Sequence[str]) -> None:
    command, *rest = args
    theirs, ours = cli('rq', command, '-u', redis_url, *rest), cli('rqfast', command, '-u', redis_url, *rest)
    assert theirs.exit_code != 0
    assert (ours.exit_code, ours.output) == (theirs.exit_code, theirs.output)
    assert not redis_conn.keys('*')


FAILING_CALLS = [  # rq ends these in a traceback with status 1: rqfast prints its message as one line
    ('enqueue', f'{JOBS}.echo', '--timeout', '0'),
    ('enqueue', f'{JOBS}.echo', '--ttl', '-5'),
    ('enqueue', f'{JOBS}.echo', '--schedule-at', 'garbage'),
    ('enqueue', f'{JOBS}.echo', '--schedule-in', 'garbage'),
    ('enqueue', f'{JOBS}.echo', '--timeout', 'soon'),
    ('info', '-w', 'no.such.Worker'),
    ('info', '-j', 'rq.job.Nope'),
    ('empty', '-a', '--queue-class', 'nosuch.Queue'),
]


@pytest.mark.parametrize('args', FAILING_CALLS, ids=' '.join)
def test_failures_are_one_line_with_rqs_status(redis_conn: redis.Redis, redis_url: str, args: Sequence[str]) -> None:
    theirs, ours = cli('rq', *args, '-u', redis_url), cli('rqfast', *args, '-u', redis_url)
    assert theirs.exit_code == ours.exit_code == 1, (theirs.output, ours.output)
    assert 'Traceback' not in ours.output
    lines = ours.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith('Error: '), ours.output
    if 'enqueue' in args:
        assert str(theirs.exception).split(':')[0] in lines[0]
    assert not redis_conn.keys('rq:job:*')


def test_unreachable_redis_is_one_line_for_every_command() -> None:
    for args in (('empty', '-a'), ('requeue', '--queue', 'q', '-a'), ('enqueue', 'f'), ('suspend',), ('resume',)):
        result = cli('rqfast', *args, '-u', 'redis://127.0.0.1:1')
        assert result.exit_code == 1 == cli('rq', *args, '-u', 'redis://127.0.0.1:1').exit_code
        assert result.output.startswith('Error: cannot connect to Redis at 127.0.0.1:1/0') and 'Traceback' not in (
            result.output
        ), result.output
