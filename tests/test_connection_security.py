"""Connection security against real servers this test starts: TLS (`rediss://`, client certificates),
the ACL user of docs/connections.md (exactly its line), and Redis Sentinel. Producer and workers of every class.

A test skips only when this redis-server binary lacks the capability (the reason is printed).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

import rqfast
from rqfast import Queue, Retry
from rqfast.cli.settings import redis_from_settings
from rqfast.command import send_shutdown_command
from rqfast.group import Group

try:
    import redis_servers as servers
    import security_jobs as sj
    from polling import wait_for
except ImportError:  # tests/ became a package
    from tests import redis_servers as servers  # type: ignore[no-redef]
    from tests import security_jobs as sj  # type: ignore[no-redef]
    from tests.polling import wait_for  # type: ignore[no-redef]

pytestmark = pytest.mark.timeout(120)
TESTS = Path(__file__).resolve().parent
REPOSITORY = TESTS.parent
J = sj.__name__
CLASSES = ['rqfast.SimpleWorker', 'rqfast.Worker', 'rqfast.SpawnWorker']


def cli_worker(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`rqfast worker ... --burst` in a process of its own (the settings module and job modules on its path)."""
    return subprocess.run(
        [sys.executable, '-m', 'rqfast.cli', 'worker', 'q', '--burst', '-P', str(TESTS), *args],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=TESTS,
        env={**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPOSITORY), str(TESTS)]), **(env or {})},
    )


def enqueue_some(conn: redis.Redis) -> list[Any]:
    queue = Queue('q', connection=conn)
    return [
        queue.enqueue(f'{J}.noop', 1),
        queue.enqueue(f'{J}.noop', meta={'m': 1}, retry=Retry(max=1)),
        queue.enqueue(f'{J}.noop', depends_on=queue.enqueue(f'{J}.noop')),
    ]


def all_finished(conn: redis.Redis, jobs: list[Any]) -> None:
    for job in jobs:
        assert rqfast.job.Job.fetch(job.id, connection=conn).get_status() == 'finished', job.id


def run_each_class(conn: redis.Redis, *args: str, env: dict[str, str] | None = None) -> None:
    for worker_class in CLASSES:
        jobs = enqueue_some(conn)
        result = cli_worker('-w', worker_class, *args, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        all_finished(conn, jobs)


# --- TLS


@pytest.fixture(scope='module')
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A redis-server that speaks TLS only and requires a client certificate signed by a throwaway CA."""
    workdir = tmp_path_factory.mktemp('tls')
    certs = servers.openssl_ca(workdir / 'certs')
    port = servers.free_port()
    client_kwargs = {
        'ssl': True,
        'ssl_ca_certs': certs['ca.crt'],
        'ssl_certfile': certs['client.crt'],
        'ssl_keyfile': certs['client.key'],
    }
    args = [
        '--port', '0', '--tls-port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no',
        '--tls-cert-file', certs['server.crt'], '--tls-key-file', certs['server.key'],
        '--tls-ca-cert-file', certs['ca.crt'], '--tls-auth-clients', 'yes',
    ]  # fmt: skip
    ping = lambda: redis.Redis(host='127.0.0.1', port=port, **client_kwargs).ping()  # noqa: E731
    try:
        with servers.server(workdir, args, ping, 'redis-tls'):
            yield {'port': port, 'certs': certs, 'kwargs': client_kwargs}
    except RuntimeError:
        reason = servers.unsupported(workdir / 'redis-tls.log', 'tls')
        if reason:
            print(f'SKIP: this redis-server has no TLS: {reason}')
            pytest.skip(f'this redis-server has no TLS: {reason}')
        raise


def test_tls_rediss_url_every_worker_class(tls_server: dict[str, Any]) -> None:
    certs, port = tls_server['certs'], tls_server['port']
    conn = redis.Redis(host='127.0.0.1', port=port, **tls_server['kwargs'])
    conn.flushdb()
    url = (
        f'rediss://127.0.0.1:{port}/0?ssl_ca_certs={certs["ca.crt"]}&ssl_cert_reqs=required'
        f'&ssl_certfile={certs["client.crt"]}&ssl_keyfile={certs["client.key"]}'
    )
    run_each_class(conn, '-u', url)
    with pytest.raises(redis.ConnectionError):  # the server takes no plaintext, and no client without a certificate
        redis.Redis(host='127.0.0.1', port=port, socket_timeout=2).ping()
    with pytest.raises(redis.ConnectionError):
        redis.Redis(host='127.0.0.1', port=port, ssl=True, ssl_ca_certs=certs['ca.crt'], socket_timeout=2).ping()


def test_tls_settings_module(tls_server: dict[str, Any], tmp_path: Path) -> None:
    certs, port = tls_server['certs'], tls_server['port']
    settings = tmp_path / 'tls_settings.py'
    settings.write_text(
        f'REDIS_HOST = "127.0.0.1"\nREDIS_PORT = {port}\nREDIS_SSL = True\n'
        f'REDIS_SSL_CA_CERTS = {certs["ca.crt"]!r}\nREDIS_SSL_CERTFILE = {certs["client.crt"]!r}\n'
        f'REDIS_SSL_KEYFILE = {certs["client.key"]!r}\n'
    )
    conn = redis_from_settings(
        {
            'REDIS_HOST': '127.0.0.1',
            'REDIS_PORT': port,
            'REDIS_SSL': True,
            'REDIS_SSL_CA_CERTS': certs['ca.crt'],
            'REDIS_SSL_CERTFILE': certs['client.crt'],
            'REDIS_SSL_KEYFILE': certs['client.key'],
        },
        redis.Redis,
    )
    conn.flushdb()
    run_each_class(conn, '-c', 'tls_settings', '-P', str(tmp_path))


# --- the ACL user of docs/connections.md (moved there from the README)


def documented_acl_line() -> str:
    text = (REPOSITORY / 'docs' / 'connections.md').read_text()
    [line] = re.findall(r'^\s*(user rqfast .*)$', text, flags=re.MULTILINE)
    return line.strip()


@pytest.fixture(scope='module')
def acl_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A redis-server whose only users are an admin (for the test's checks) and the documented rqfast user."""
    workdir = tmp_path_factory.mktemp('acl')
    password = 'acl-test-password'
    line = documented_acl_line().replace('>CHANGE-ME', f'>{password}')
    (workdir / 'users.acl').write_text(f'user default on nopass ~* &* +@all\n{line}\n')
    port = servers.free_port()
    args = ['--port', str(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--aclfile', 'users.acl']
    admin = redis.Redis(host='127.0.0.1', port=port)
    with servers.server(workdir, args, admin.ping, 'redis-acl'):
        yield {'port': port, 'admin': admin, 'url': f'redis://rqfast:{password}@127.0.0.1:{port}/0'}


def test_the_acl_user_runs_producer_and_every_worker_class(acl_server: dict[str, Any]) -> None:
    admin: redis.Redis = acl_server['admin']
    admin.flushdb()
    admin.acl_log_reset()
    conn = redis.Redis.from_url(acl_server['url'])
    with pytest.raises(redis.exceptions.NoPermissionError):
        conn.set('not-rq', 1)
    with pytest.raises(redis.exceptions.NoPermissionError):
        conn.flushall()
    with pytest.raises(redis.exceptions.NoPermissionError):
        conn.config_get('dir')
    admin.acl_log_reset()

    queue = Queue('q', connection=conn)
    scheduled = queue.enqueue_in(__import__('datetime').timedelta(seconds=1), f'{J}.noop')
    group = Group.create(connection=conn)
    grouped = group.enqueue_many(queue, [Queue.prepare_data(f'{J}.noop')])
    failing = queue.enqueue(f'{J}.fail', retry=Retry(max=1))
    run_each_class(conn, '-u', acl_server['url'], '--with-scheduler')
    # the scheduled job is due at its whole-second score: once it is, a burst worker's scheduler moves
    # it (the burst workers above may all have ended before it was due)
    due = admin.zscore('rq:scheduled:q', scheduled.id)
    if due is not None:
        wait_for(lambda: time.time() > due + 0.1, timeout=10)
    result = cli_worker('-u', acl_server['url'], '--with-scheduler')
    assert result.returncode == 0, result.stderr
    all_finished(conn, [scheduled, *grouped])
    assert rqfast.job.Job.fetch(failing.id, connection=conn).get_status() == 'failed'
    rqfast.job.Job.fetch(failing.id, connection=conn).requeue()

    # an idle worker on two queues (two blocking waits, one unblocked), stopped by a pub/sub command
    idle = subprocess.Popen(
        [sys.executable, '-m', 'rqfast.cli', 'worker', 'q1', 'q2', '-u', acl_server['url'], '-n', 'acl-worker'],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=TESTS,
        env={**os.environ, 'PYTHONPATH': os.pathsep.join([str(REPOSITORY), str(TESTS)])},
    )
    try:
        wait_for(lambda: admin.exists('rq:worker:acl-worker'), timeout=30)
        time.sleep(0.5)  # blocked on both queues
        late = Queue('q2', connection=conn).enqueue(f'{J}.noop')
        wait_for(lambda: rqfast.job.Job.fetch(late.id, connection=conn).get_status() == 'finished', timeout=30)
        send_shutdown_command(conn, 'acl-worker')
        output, _ = idle.communicate(timeout=30)
    finally:
        idle.kill()
    assert idle.returncode == 0, output
    assert 'Error' not in output and 'NOPERM' not in output, output

    info = subprocess.run(
        [sys.executable, '-m', 'rqfast.cli', 'info', '-u', acl_server['url']],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, 'PYTHONPATH': str(REPOSITORY)},
    )
    assert info.returncode == 0, info.stderr
    denied = {entry['object'] for entry in admin.acl_log() if entry.get('username') == 'rqfast'}
    # left out on purpose (docs/connections.md): ip_address reads 'unknown'; no eviction warning
    assert denied <= {'client|list', 'config|get'}, denied


# --- Sentinel


@pytest.fixture(scope='module')
def sentinel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A master and a redis-sentinel (redis-server --sentinel) watching it as `mymaster`."""
    workdir = tmp_path_factory.mktemp('sentinel')
    master_port, sentinel_port = servers.free_port(), servers.free_port()
    master = redis.Redis(host='127.0.0.1', port=master_port)
    master_args = ['--port', str(master_port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
    conf = workdir / 'sentinel.conf'
    conf.write_text(
        f'port {sentinel_port}\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 {master_port} 1\n'
        'sentinel down-after-milliseconds mymaster 5000\n'
    )
    sentinel_client = redis.Redis(host='127.0.0.1', port=sentinel_port)

    def sentinel_ready() -> None:  # (the raw command: redis-py 5.0's sentinel_get_master_addr_by_name fails)
        address = sentinel_client.execute_command('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster')
        assert int(address[1]) == master_port

    with servers.server(workdir / 'master', master_args, master.ping, 'master'):
        with servers.server(workdir, [str(conf), '--sentinel'], sentinel_ready, 'sentinel'):
            yield {'master': master, 'sentinel_port': sentinel_port, 'master_port': master_port}


def test_sentinel_settings_every_worker_class(sentinel: dict[str, Any], tmp_path: Path) -> None:
    settings = {'SENTINEL': {'INSTANCES': [('127.0.0.1', sentinel['sentinel_port'])], 'MASTER_NAME': 'mymaster'}}
    (tmp_path / 'sentinel_settings.py').write_text(f'SENTINEL = {settings["SENTINEL"]!r}\n')
    conn = redis_from_settings(settings, redis.Redis)
    assert conn.connection_pool.__class__.__name__ == 'SentinelConnectionPool'
    conn.flushdb()
    run_each_class(conn, '-c', 'sentinel_settings', '-P', str(tmp_path))
    assert sentinel['master'].dbsize() > 0  # the jobs went through the master the sentinel named
