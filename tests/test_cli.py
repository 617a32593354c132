"""The `rqfast` command: argument and error handling in process (CliRunner), workers as real processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
import redis
from click.testing import CliRunner, Result

import rqfast
from rqfast import Queue
from rqfast.cli import classes, main
from rqfast.cli import workers as worker_module
from rqfast.job import Job, JobStatus
from rqfast.serializers import JSONSerializer
from rqfast.worker import SimpleWorker

try:
    import jobs
except ImportError:  # run from the repository root as a package
    from tests import jobs  # type: ignore[no-redef]

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
SIMPLE = 'rqfast.worker.SimpleWorker'
PROCESS_TIMEOUT = 30
# Variables that would point a worker somewhere other than where a test says.
_ENV_LEAKS = (
    'RQ_REDIS_URL',
    'RQFAST_REDIS_URL',
    'REDIS_URL',
    'RQ_CONFIG',
    'RQFAST_CONFIG',
    'RQ_WORKER_CLASS',
    'RQFAST_WORKER_CLASS',
    'RQ_JOB_CLASS',
    'RQFAST_JOB_CLASS',
    'RQ_QUEUE_CLASS',
    'RQFAST_QUEUE_CLASS',
    'RQ_CONNECTION_CLASS',
    'RQFAST_CONNECTION_CLASS',
    'REDIS_HOST',
    'REDIS_PORT',
    'REDIS_DB',
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No stray RQ_* variables, and sys.path restored after the in-process runs prepend --path to it."""
    monkeypatch.setattr(sys, 'path', list(sys.path))
    for name in _ENV_LEAKS:
        monkeypatch.delenv(name, raising=False)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _ENV_LEAKS}
    env.update(extra)
    return env


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


def rqfast_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = PROCESS_TIMEOUT
) -> subprocess.CompletedProcess[str]:
    """`python -m rqfast.cli ...` from the repository root, with tests/ importable as `jobs` and `tests.jobs`."""
    return subprocess.run(
        [sys.executable, '-m', 'rqfast.cli', *args],
        cwd=REPO_ROOT,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def worker_args(*args: str) -> list[str]:
    return ['worker', '--path', str(TESTS_DIR), '--path', str(REPO_ROOT), *args]


def assert_one_line_error(result: Result | subprocess.CompletedProcess[str], *fragments: str) -> str:
    output = result.output if isinstance(result, Result) else result.stdout + result.stderr
    code = result.exit_code if isinstance(result, Result) else result.returncode
    assert code != 0, output
    assert 'Traceback' not in output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith('Error: '), output
    for fragment in fragments:
        assert fragment in lines[0], output
    return lines[0]


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


# --- errors: one line and a non-zero exit, never a traceback


def test_bad_url_is_one_line() -> None:
    assert_one_line_error(invoke('worker', '--url', 'redis://:notaport'), 'notaport')


def test_bad_url_scheme_is_one_line() -> None:
    assert_one_line_error(invoke('worker', '--url', 'http://localhost'), 'Redis')


def test_unreachable_redis_is_one_line() -> None:
    port = _closed_port()
    line = assert_one_line_error(
        invoke('worker', '--url', f'redis://127.0.0.1:{port}', '-w', SIMPLE), f'127.0.0.1:{port}'
    )
    assert 'refused' in line.lower()


def test_unreachable_redis_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('RQ_REDIS_URL', f'redis://127.0.0.1:{_closed_port()}')
    assert_one_line_error(invoke('worker', '-w', SIMPLE), 'cannot connect')


def test_unknown_worker_class(redis_url: str) -> None:
    assert_one_line_error(invoke('worker', '-u', redis_url, '-w', 'no.such.Worker'), '--worker-class', 'no.such')


def test_missing_attribute_worker_class(redis_url: str) -> None:
    assert_one_line_error(invoke('worker', '-u', redis_url, '-w', 'rqfast.worker.NoSuchWorker'), '--worker-class')


def test_worker_class_must_be_a_worker(redis_url: str) -> None:
    assert_one_line_error(invoke('worker', '-u', redis_url, '-w', 'rqfast.Queue'), '--worker-class', 'subclass')


def test_unknown_job_and_queue_class(redis_url: str) -> None:
    assert_one_line_error(invoke('worker', '-u', redis_url, '-j', 'no.such.Job'), '--job-class')
    assert_one_line_error(invoke('worker', '-u', redis_url, '--queue-class', 'rqfast.job.Job'), '--queue-class')


def test_unknown_serializer(redis_url: str) -> None:
    assert_one_line_error(invoke('worker', '-u', redis_url, '-S', 'no.such.serializer'), '--serializer')
    assert_one_line_error(invoke('worker', '-u', redis_url, '-S', 'yaml'), '--serializer')


def test_unknown_exception_handler(redis_url: str) -> None:
    assert_one_line_error(
        invoke('worker', '-u', redis_url, '--exception-handler', 'no.such.handler'), '--exception-handler'
    )


def test_bad_dequeue_strategy_logging_level_and_flags(redis_url: str) -> None:
    assert_one_line_error(invoke('worker', '-u', redis_url, '--dequeue-strategy', 'lifo'), 'round_robin')
    assert_one_line_error(invoke('worker', '-u', redis_url, '--logging-level', 'LOUD'), 'LOUD')
    assert_one_line_error(invoke('worker', '-u', redis_url, '-v', '-q'), 'exclusive')


def test_missing_config_module(redis_url: str) -> None:
    assert_one_line_error(invoke('worker', '-c', 'no_such_settings_module_xyz'), '--config', 'no_such_settings')


def test_a_number_given_to_config_hints_at_concurrency(redis_url: str) -> None:
    """`-c 4` (rq's -c is --config) meant as a concurrency: the error names -C."""
    assert_one_line_error(invoke('worker', '-u', redis_url, '-c', '4'), "'4'", 'did you mean --concurrency/-C?')
    result = invoke('worker', '-c', 'no_such_settings_module_xyz')
    assert 'concurrency' not in result.output


def test_a_concurrency_the_worker_class_cannot_run_names_the_classes_that_can(redis_url: str) -> None:
    """One check (BaseWorker.check_concurrency), made before Redis is touched; Worker runs horses at once too."""
    result = invoke('worker', '-u', redis_url, '-w', 'rqfast.worker.base.BaseWorker', '-C', '2')
    line = assert_one_line_error(result, '--concurrency', 'BaseWorker runs one job at a time', 'Worker and SpawnWorker')
    with pytest.raises(ValueError) as raised:
        rqfast.worker.BaseWorker.check_concurrency(2)
    assert line.endswith(str(raised.value))


def test_broken_config_module(tmp_path: Path) -> None:
    (tmp_path / 'broken_settings_xyz.py').write_text('REDIS_URL = \n')
    assert_one_line_error(invoke('worker', '-P', str(tmp_path), '-c', 'broken_settings_xyz'), '--config')


def test_unreachable_sentinel_is_one_line(tmp_path: Path) -> None:
    (tmp_path / 'sentinel_settings_xyz.py').write_text(
        f'SENTINEL = {{"INSTANCES": [("127.0.0.1", {_closed_port()})], "MASTER_NAME": "m"}}\n'
    )
    assert_one_line_error(invoke('worker', '-P', str(tmp_path), '-c', 'sentinel_settings_xyz'), 'cannot connect')


def test_bad_redis_ssl_setting_is_one_line(tmp_path: Path) -> None:
    (tmp_path / 'ssl_settings_xyz.py').write_text('REDIS_SSL = "maybe"\n')
    assert_one_line_error(invoke('worker', '-P', str(tmp_path), '-c', 'ssl_settings_xyz'), 'REDIS_SSL')


def test_name_of_a_live_worker_is_one_line(redis_conn: redis.Redis, redis_url: str) -> None:
    live = SimpleWorker(['default'], connection=redis_conn, name='taken')
    live.register_birth()
    try:
        result = rqfast_cli(*worker_args('--url', redis_url, '--burst', '-n', 'taken', '-w', SIMPLE))
    finally:
        live.register_death()
    assert_one_line_error(result, 'taken')


def test_unwritable_pid_file(redis_conn: redis.Redis, redis_url: str, tmp_path: Path) -> None:
    assert_one_line_error(
        invoke('worker', '-u', redis_url, '-w', SIMPLE, '--pid', str(tmp_path / 'no' / 'pid')), '--pid'
    )


def test_suspended_workers_do_not_start(redis_conn: redis.Redis, redis_url: str) -> None:
    redis_conn.set('rq:suspended', 1)
    args = ['worker', '-u', redis_url, '-w', SIMPLE, '--burst']
    result = CliRunner().invoke(main, args, prog_name='rqfast', catch_exceptions=False)
    assert result.exit_code == 1  # rq's exit status and words, with the command that resumes
    assert result.output.strip() == 'RQ is currently suspended, to resume job execution run "rqfast resume"'
    # run under another name (as RQ's own suite runs rqfast's cli), it says rq's words exactly
    assert invoke(*args).output.strip() == 'RQ is currently suspended, to resume job execution run "rq resume"'


def test_errors_from_a_real_process(redis_url: str) -> None:
    """The same one line when run as a command, not only under CliRunner."""
    result = rqfast_cli('worker', '--url', f'redis://127.0.0.1:{_closed_port()}', '--burst')
    assert result.returncode == 1
    assert_one_line_error(result, 'cannot connect')
    assert_one_line_error(rqfast_cli('worker', '--url', 'redis://:notaport'), 'notaport')


# --- class names: RQ's map to rqfast's


@pytest.mark.parametrize('name', ['rq.SimpleWorker', 'rq.worker.SimpleWorker', SIMPLE, 'rqfast.SimpleWorker'])
def test_rq_simple_worker_names_map_to_rqfast(name: str) -> None:
    assert classes.worker_class(name) is SimpleWorker


@pytest.mark.parametrize('name', [None, 'rq.Worker', 'rq.worker.Worker', 'rqfast.Worker'])
def test_default_and_rq_worker_are_the_forking_worker_or_simple_until_it_exists(name: str | None) -> None:
    expected = getattr(rqfast, 'Worker', SimpleWorker)
    assert classes.worker_class(name) is expected


@pytest.mark.parametrize('name', ['rq.SpawnWorker', 'rq.worker.SpawnWorker'])
def test_rq_spawn_worker_maps_to_rqfast(name: str) -> None:
    if not hasattr(rqfast, 'SpawnWorker'):
        assert_one_line_error(CliRunner().invoke(main, ['worker', '-w', name]), '--worker-class')
    else:
        assert classes.worker_class(name) is rqfast.SpawnWorker


@pytest.mark.parametrize(
    'name',
    ['HerokuWorker', 'RoundRobinWorker', 'RandomWorker', 'SimpleWorker', 'SpawnWorker', 'Worker', 'BaseWorker'],
)
def test_every_rq_worker_class_name_maps_to_rqfast(name: str) -> None:
    expected = getattr(rqfast.worker, name)
    assert classes.worker_class(f'rq.worker.{name}') is expected
    if name != 'BaseWorker':
        assert classes.worker_class(f'rq.worker.worker_classes.{name}') is expected


def test_rq_queue_job_and_serializer_names_map_to_rqfast() -> None:
    assert classes.queue_class('rq.Queue') is Queue
    assert classes.queue_class('rq.queue.Queue') is Queue
    assert classes.job_class('rq.job.Job') is Job
    assert classes.job_class('rq.Job') is Job
    assert classes.serializer('rq.serializers.JSONSerializer') is JSONSerializer
    assert classes.serializer('json') is JSONSerializer


def test_rq_names_reach_the_worker(monkeypatch: pytest.MonkeyPatch, redis_conn: redis.Redis, redis_url: str) -> None:
    """`rq worker`'s Procfile line, with only the command renamed, builds an rqfast worker with its options."""
    built = {}

    def capture(instance: object, work_kwargs: dict[str, object]) -> None:
        built['worker'], built['work'] = instance, work_kwargs

    monkeypatch.setattr(worker_module, 'run', capture)
    result = invoke(
        'worker',
        'high',
        'low',
        '-u',
        redis_url,
        '-w',
        'rq.SimpleWorker',
        '-j',
        'rq.job.Job',
        '--queue-class',
        'rq.Queue',
        '-S',
        'rq.serializers.JSONSerializer',
        '-n',
        'procfile',
        '--results-ttl',
        '77',
        '--worker-ttl',
        '99',
        '--job-monitoring-interval',
        '11',
        '--max-jobs',
        '3',
        '--max-idle-time',
        '5',
        '--dequeue-strategy',
        'round_robin',
        '-b',
        '--logging_level',
        'debug',
        '--exception-handler',
        'tests.jobs.noop',
        '--disable-default-exception-handler',
        '-P',
        str(REPO_ROOT),
    )
    assert result.exit_code == 0, result.output
    worker = built['worker']
    assert type(worker) is SimpleWorker
    assert worker.name == 'procfile'
    assert worker.queue_names() == ['high', 'low']
    assert all(type(queue) is Queue for queue in worker.queues)
    assert worker.job_class is Job and worker.queue_class is Queue
    assert worker.serializer is JSONSerializer
    assert (worker.default_result_ttl, worker.worker_ttl, worker.job_monitoring_interval) == (77, 99, 11)
    assert worker.disable_default_exception_handler is True
    assert [handler.__name__ for handler in worker._exc_handlers] == ['noop']
    assert built['work'] == {
        'burst': True,
        'logging_level': 'DEBUG',
        'date_format': '%H:%M:%S',
        'log_format': '%(asctime)s %(message)s',
        'max_jobs': 3,
        'max_idle_time': 5,
        'with_scheduler': False,
        'dequeue_strategy': 'round_robin',
    }


def test_verbose_and_quiet_set_the_level(
    monkeypatch: pytest.MonkeyPatch, redis_conn: redis.Redis, redis_url: str
) -> None:
    levels = []
    monkeypatch.setattr(worker_module, 'run', lambda instance, kwargs: levels.append(kwargs['logging_level']))
    for flag in ('-v', '-q', '--logging-level=error'):
        assert invoke('worker', '-u', redis_url, '-w', SIMPLE, flag).exit_code == 0
    assert levels == ['DEBUG', 'WARNING', 'ERROR']


# --- real worker processes


def _enqueue(connection: redis.Redis, count: int, queue: str = 'default') -> list[Job]:
    q = Queue(queue, connection=connection)
    return [q.enqueue(jobs.say_hello, f'n{i}') for i in range(count)]


def _statuses(connection: redis.Redis, enqueued: list[Job]) -> list[JobStatus | None]:
    return [Job.fetch(job.id, connection=connection).get_status() for job in enqueued]


def test_burst_works_the_queues_and_exits_0(redis_conn: redis.Redis, redis_url: str) -> None:
    enqueued = _enqueue(redis_conn, 3) + _enqueue(redis_conn, 2, 'low')
    failing = Queue('low', connection=redis_conn).enqueue(jobs.div_by_zero)
    result = rqfast_cli(*worker_args('default', 'low', '--url', redis_url, '--burst', '-w', SIMPLE))
    assert result.returncode == 0, result.stderr
    assert _statuses(redis_conn, enqueued) == [JobStatus.FINISHED] * 5
    assert Job.fetch(enqueued[0].id, connection=redis_conn).return_value() == 'Hi there, n0!'
    assert Job.fetch(failing.id, connection=redis_conn).get_status() == JobStatus.FAILED
    assert redis_conn.llen('rq:queue:default') == redis_conn.llen('rq:queue:low') == 0
    assert 'Traceback' not in result.stdout


def test_default_worker_class_works_a_burst(redis_conn: redis.Redis, redis_url: str) -> None:
    """No --worker-class: rqfast.Worker, or SimpleWorker until the forking worker exists."""
    enqueued = _enqueue(redis_conn, 2)
    result = rqfast_cli(*worker_args('--url', redis_url, '--burst'))
    assert result.returncode == 0, result.stderr
    assert _statuses(redis_conn, enqueued) == [JobStatus.FINISHED] * 2


def test_max_jobs_stops_the_worker(redis_conn: redis.Redis, redis_url: str) -> None:
    enqueued = _enqueue(redis_conn, 5)
    result = rqfast_cli(*worker_args('--url', redis_url, '--max-jobs', '2', '-w', SIMPLE))
    assert result.returncode == 0, result.stderr
    assert _statuses(redis_conn, enqueued) == [JobStatus.FINISHED] * 2 + [JobStatus.QUEUED] * 3
    assert redis_conn.llen('rq:queue:default') == 3


def test_max_idle_time_stops_the_worker(redis_conn: redis.Redis, redis_url: str) -> None:
    started = time.monotonic()
    result = rqfast_cli(*worker_args('--url', redis_url, '--max-idle-time', '1', '-w', SIMPLE))
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - started < PROCESS_TIMEOUT


def test_config_module(redis_conn: redis.Redis, redis_url: str, tmp_path: Path) -> None:
    """REDIS_URL, QUEUES and NAME from a settings module, as `rq worker -c settings` reads them."""
    (tmp_path / 'rqfast_cli_settings.py').write_text(
        f'REDIS_URL = {redis_url!r}\nQUEUES = ["high", "low"]\nNAME = "from-config"\n'
    )
    enqueued = _enqueue(redis_conn, 1, 'high') + _enqueue(redis_conn, 1, 'low') + _enqueue(redis_conn, 1)
    result = rqfast_cli(*worker_args('-c', 'rqfast_cli_settings', '-P', str(tmp_path), '--burst', '-w', SIMPLE))
    assert result.returncode == 0, result.stderr
    assert _statuses(redis_conn, enqueued) == [JobStatus.FINISHED, JobStatus.FINISHED, JobStatus.QUEUED]
    assert redis_conn.hget('rq:worker:from-config', 'queues') == b'high,low'


def test_config_module_with_host_port_db(redis_conn: redis.Redis, redis_url: str, tmp_path: Path) -> None:
    parsed = urlparse(redis_url)
    db = int(parsed.path.strip('/') or 0)
    (tmp_path / 'rqfast_cli_host_settings.py').write_text(
        f'REDIS_HOST = {parsed.hostname!r}\nREDIS_PORT = {parsed.port}\nREDIS_DB = {db}\n'
    )
    enqueued = _enqueue(redis_conn, 2)
    result = rqfast_cli(*worker_args('-c', 'rqfast_cli_host_settings', '-P', str(tmp_path), '--burst', '-w', SIMPLE))
    assert result.returncode == 0, result.stderr
    assert _statuses(redis_conn, enqueued) == [JobStatus.FINISHED] * 2


def test_url_beats_config(redis_conn: redis.Redis, redis_url: str, tmp_path: Path) -> None:
    (tmp_path / 'rqfast_cli_bad_settings.py').write_text(f'REDIS_URL = "redis://127.0.0.1:{_closed_port()}"\n')
    enqueued = _enqueue(redis_conn, 1)
    result = rqfast_cli(
        *worker_args('-u', redis_url, '-c', 'rqfast_cli_bad_settings', '-P', str(tmp_path), '--burst', '-w', SIMPLE)
    )
    assert result.returncode == 0, result.stderr
    assert _statuses(redis_conn, enqueued) == [JobStatus.FINISHED]


@pytest.mark.parametrize('variable', ['RQ_REDIS_URL', 'RQFAST_REDIS_URL'])
def test_redis_url_from_the_environment(redis_conn: redis.Redis, redis_url: str, variable: str) -> None:
    enqueued = _enqueue(redis_conn, 2)
    result = rqfast_cli(*worker_args('--burst', '-w', SIMPLE), env=_env(**{variable: redis_url}))
    assert result.returncode == 0, result.stderr
    assert _statuses(redis_conn, enqueued) == [JobStatus.FINISHED] * 2


def test_rq_worker_class_from_the_environment(redis_conn: redis.Redis, redis_url: str) -> None:
    enqueued = _enqueue(redis_conn, 1)
    result = rqfast_cli(*worker_args('--burst'), env=_env(RQ_REDIS_URL=redis_url, RQ_WORKER_CLASS='rq.SimpleWorker'))
    assert result.returncode == 0, result.stderr
    assert _statuses(redis_conn, enqueued) == [JobStatus.FINISHED]


def test_name_registers_and_records_death(redis_conn: redis.Redis, redis_url: str) -> None:
    _enqueue(redis_conn, 1)
    result = rqfast_cli(*worker_args('--url', redis_url, '--burst', '--name', 'cli-named', '-w', SIMPLE))
    assert result.returncode == 0, result.stderr
    worker_hash = redis_conn.hgetall('rq:worker:cli-named')
    assert worker_hash[b'death']
    assert worker_hash[b'queues'] == b'default'
    assert int(worker_hash[b'successful_job_count']) == 1


def test_pid_file(redis_conn: redis.Redis, redis_url: str, tmp_path: Path) -> None:
    pid_file = tmp_path / 'worker.pid'
    proc = subprocess.Popen(
        [
            sys.executable,
            '-m',
            'rqfast.cli',
            *worker_args('--url', redis_url, '--burst', '--pid', str(pid_file), '-w', SIMPLE, '-n', 'pid-worker'),
        ],
        cwd=REPO_ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, stderr = proc.communicate(timeout=PROCESS_TIMEOUT)
    assert proc.returncode == 0, stderr
    assert pid_file.read_text() == str(proc.pid)
    assert redis_conn.hget('rq:worker:pid-worker', 'pid') == str(proc.pid).encode()


def test_sigterm_is_a_normal_stop(redis_conn: redis.Redis, redis_url: str) -> None:
    """A worker waiting for jobs stops on SIGTERM with exit status 0 and records its death."""
    proc = subprocess.Popen(
        [sys.executable, '-m', 'rqfast.cli', *worker_args('--url', redis_url, '-w', SIMPLE, '-n', 'term-worker')],
        cwd=REPO_ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + PROCESS_TIMEOUT
        while not redis_conn.hget('rq:worker:term-worker', 'birth'):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr and proc.stderr.read()
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=PROCESS_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, stderr
    assert 'Traceback' not in stderr
    assert redis_conn.hget('rq:worker:term-worker', 'death')


def test_version_and_help_run_as_a_module() -> None:
    result = rqfast_cli('--version')
    assert result.returncode == 0 and result.stdout.splitlines()[0] == f'rqfast {rqfast.VERSION}'
    assert 'RQ 3.0 (the default); RQ 2.12 with RQFAST_COMPAT=2.12' in result.stdout
    result = rqfast_cli('worker', '--help')
    assert result.returncode == 0 and '--worker-class' in result.stdout


# --- suspend, resume, info


def test_suspend_and_resume(redis_conn: redis.Redis, redis_url: str) -> None:
    result = invoke('suspend', '-u', redis_url)
    assert result.exit_code == 0, result.output
    assert redis_conn.get('rq:suspended') == b'1' and redis_conn.ttl('rq:suspended') == -1
    assert invoke('resume', '-u', redis_url).exit_code == 0
    assert not redis_conn.exists('rq:suspended')
    assert invoke('suspend', '-u', redis_url, '--duration', '60').exit_code == 0
    assert 0 < redis_conn.ttl('rq:suspended') <= 60
    assert invoke('suspend', '-u', redis_url, '--duration', '0').exit_code != 0


def test_suspend_unreachable_is_one_line() -> None:
    assert_one_line_error(invoke('suspend', '-u', f'redis://127.0.0.1:{_closed_port()}'), 'cannot connect')


def test_info_lists_queues_and_workers(redis_conn: redis.Redis, redis_url: str) -> None:
    _enqueue(redis_conn, 3)
    _enqueue(redis_conn, 1, 'low')
    worker = SimpleWorker(['default', 'low'], connection=redis_conn, name='info-worker')
    worker.register_birth()
    try:
        result = invoke('info', '-u', redis_url, '--raw')
    finally:
        worker.register_death()
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert 'queue default 3, 0 executing, 0 finished, 0 failed' in lines
    assert 'queue low 1, 0 executing, 0 finished, 0 failed' in lines
    # registered by hand: no state yet, shown as '?' (RQ writes none at birth; its loop sets `started`)
    assert any(line.startswith('worker info-worker (') and '? default, low' in line for line in lines)
    result = invoke('info', '-u', redis_url, 'low')
    assert result.exit_code == 0, result.output
    assert 'low' in result.output and '1 queues, 1 jobs total' in result.output
