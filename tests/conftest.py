"""Test fixtures: a private redis-server per test session, and fakeredis for the core tests; and the
order tests run in: the slow trials (tests/chaos, the fleets, the benchmark baseline, the RQ-suite
runner) last, so `python -m pytest` shows progress at once.

The real server is started from PATH on a free loopback port with persistence off, and it is the
only server these tests ever flush. RQFAST_TEST_REDIS_URL points the tests at another server
instead (which they will flush: give them one of their own).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator

import fakeredis
import pytest
import redis

try:
    import redis_servers
    import subsets
except ImportError:  # tests/ as a package
    from tests import redis_servers, subsets  # type: ignore[no-redef]

HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep

# Files of slow trials (minutes between them): run after the rest, in their own order.
SLOW_LAST = (
    'chaos/',
    'test_concurrency_fleet.py',
    'test_cron_fleet.py',
    'test_worker_fleet.py',
    'test_bench_baseline.py',
    'test_rq_suite_runner.py',
)


def _relative(path: object) -> str:
    """A path under tests/, with /."""
    text = str(path)
    return text[len(HERE) :].replace(os.sep, '/') if text.startswith(HERE) else text


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        '--subset',
        choices=sorted(subsets.SUBSETS),
        help='run only a named subset of the tests (tests/subsets.py): quick is a first try',
    )


def pytest_ignore_collect(collection_path: os.PathLike[str], config: pytest.Config) -> bool | None:
    """With --subset, the test files it does not list are not even imported."""
    name = config.getoption('subset')
    path = os.fspath(collection_path)
    if not name or not path.endswith('.py') or not os.path.basename(path).startswith('test_'):
        return None
    return True if not subsets.selects(name, _relative(path)) else None


# Left out of a run of the whole tests/ without -m (setup.cfg says why; CI runs them apart): a test marked
# `trial` (a long trial: the chaos suite, the fleets) or `quiet` (it measures time itself).
APART = ('trial', 'quiet')


def _left_out(config: pytest.Config, item: pytest.Item) -> bool:
    name = config.getoption('subset')
    if name and not subsets.selects(name, _relative(item.path), item.nodeid):
        return True
    whole_run = config.args_source is pytest.Config.ArgsSource.TESTPATHS and not config.getoption('markexpr')
    return whole_run and any(item.get_closest_marker(mark) for mark in APART)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """--subset's choice, and what a whole run leaves out; then the slow trials go last (a stable sort)."""
    dropped = [item for item in items if _left_out(config, item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        kept = set(map(id, items)) - set(map(id, dropped))
        items[:] = [item for item in items if id(item) in kept]
    items.sort(key=lambda item: _relative(item.path).startswith(SLOW_LAST))


def pytest_report_header() -> list[str]:
    """Which server binary and redis-py the run uses (the CI matrix varies both)."""
    try:
        binary = redis_servers.binary()
        version = subprocess.run([binary, '--version'], capture_output=True, text=True, timeout=30).stdout.strip()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        binary, version = '?', str(exc)
    return [f'server: {binary}: {version}', f'redis-py {redis.__version__}']


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope='session')
def redis_url() -> Iterator[str]:
    """URL of a Redis server that belongs to this test session."""
    url = os.environ.get('RQFAST_TEST_REDIS_URL')
    if url:
        yield url
        return
    try:
        binary = redis_servers.binary()  # redis-server, or $RQFAST_TEST_REDIS_SERVER
    except RuntimeError as exc:
        pytest.exit(str(exc), returncode=3)
    port = _free_port()
    workdir = tempfile.mkdtemp(prefix='rqfast-redis-')
    proc = subprocess.Popen(
        [
            binary,
            '--port',
            str(port),
            '--bind',
            '127.0.0.1',
            '--save',
            '',
            '--appendonly',
            'no',
            '--dir',
            workdir,
            '--logfile',
            os.path.join(workdir, 'redis.log'),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f'redis://127.0.0.1:{port}/0'
    client = redis.Redis.from_url(url)
    deadline = time.monotonic() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError as exc:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError('redis-server did not start') from exc
            time.sleep(0.02)
    client.close()
    yield url
    proc.terminate()
    proc.wait(10)
    shutil.rmtree(workdir, ignore_errors=True)


def _alive(pid: int) -> bool:
    """A process that runs (a killed worker stays a zombie until its parent reaps it: not alive)."""
    try:
        with open(f'/proc/{pid}/stat') as stat:
            return stat.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def _stop_stray_workers(conn: redis.Redis) -> list[int]:
    """Kill the worker processes an earlier test left running on this session's private server.

    A worker that outlives its test takes the next tests' jobs (one stray pool worker once failed a
    dozen unrelated tests): every worker registered on the private server was started by this
    session, so a live one other than this process is killed, and the test is warned.
    """
    strays = []
    for key in conn.smembers('rq:workers'):
        fields = conn.hmget(key, 'pid', 'hostname')
        if fields[0] is None or fields[1] != socket.gethostname().encode():
            continue
        pid = int(fields[0])
        if pid == os.getpid() or not _alive(pid):
            continue
        try:
            os.kill(pid, 9)
        except (ProcessLookupError, PermissionError):
            continue
        strays.append(pid)
    return strays


@pytest.fixture
def redis_conn(redis_url: str) -> Iterator[redis.Redis]:
    """A connection to the session's real server, flushed before each test."""
    conn = redis.Redis.from_url(redis_url)
    if not os.environ.get('RQFAST_TEST_REDIS_URL'):
        strays = _stop_stray_workers(conn)
        if strays:
            warnings.warn(f'killed worker processes an earlier test left running: {strays}', stacklevel=1)
    conn.flushdb()
    yield conn
    conn.close()


@pytest.fixture
def fake_conn() -> Iterator[redis.Redis]:
    """A fakeredis connection (with Lua), as RQ users test their apps."""
    server = fakeredis.FakeServer()
    conn = fakeredis.FakeStrictRedis(server=server)
    yield conn
    conn.close()


@pytest.fixture(params=['redis', 'fakeredis'])
def connection(request: pytest.FixtureRequest) -> redis.Redis:
    """Core tests run on both backends: the real server and fakeredis."""
    name = 'redis_conn' if request.param == 'redis' else 'fake_conn'
    return request.getfixturevalue(name)


def _worker_threads() -> dict[int, threading.Thread]:
    """The heartbeat threads of the workers alive in this process (one per working worker)."""
    return {t.ident or 0: t for t in threading.enumerate() if t.name == 'rqfast-heartbeat'}


@pytest.fixture(autouse=True)
def _no_worker_left_working(request: pytest.FixtureRequest) -> Iterator[None]:
    """A worker a test leaves working in this process heartbeats into the next tests' db (a stray once
    wrote a worker hash into another test's comparison): its upkeep is stopped and the test warned."""
    before = set(_worker_threads())
    yield
    left = {ident: t for ident, t in _worker_threads().items() if ident not in before}
    if not left:
        return
    time.sleep(0.5)  # a teardown in progress (a thread ending its own worker) gets a moment
    left = {ident: t for ident, t in left.items() if t.is_alive()}
    for thread in left.values():
        upkeep = getattr(getattr(thread, '_target', None), '__self__', None)
        if upkeep is not None:
            upkeep.stop()
    if left:
        warnings.warn(f'{request.node.nodeid} left {len(left)} worker(s) working: heartbeats stopped', stacklevel=1)
