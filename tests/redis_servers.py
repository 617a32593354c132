"""Private redis-server (and redis-sentinel) processes a test starts with options of its own: TLS, ACLs, Sentinel.

Each lives in the test's tmp dir and is killed at the end; `capability_missing` tells whether this
redis-server binary can do something at all (the only reason such a test may skip).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return int(sock.getsockname()[1])


# The server every test starts: RQFAST_TEST_REDIS_SERVER names another binary (a path, or a name on PATH),
# e.g. Valkey's valkey-server; its client (for `--cluster create`) is the one beside it.
SERVER_ENV = 'RQFAST_TEST_REDIS_SERVER'


def binary() -> str:
    """The redis-server binary the tests start: $RQFAST_TEST_REDIS_SERVER, else redis-server on PATH."""
    wanted = os.environ.get(SERVER_ENV) or 'redis-server'
    found = shutil.which(wanted)
    if found is None:
        if wanted != 'redis-server':
            raise RuntimeError(f'{SERVER_ENV}={wanted!r}: no such executable')
        raise RuntimeError('redis-server is not on PATH (apt-get install -y redis-server)')
    return found


def cli_binary() -> str:
    """The client beside the server binary (valkey-cli beside valkey-server), else redis-cli on PATH."""
    server_path = binary()
    beside = os.path.join(os.path.dirname(server_path), os.path.basename(server_path).replace('-server', '-cli'))
    found = beside if beside != server_path and os.access(beside, os.X_OK) else shutil.which('redis-cli')
    if found is None:
        raise RuntimeError('redis-cli is not on PATH (apt-get install -y redis-tools)')
    return found


@contextmanager
def server(workdir: Path, args: list[str], ready: Callable[[], Any], name: str = 'redis') -> Iterator[Path]:
    """Run `redis-server <args>` in `workdir` until the block ends; `ready()` must succeed within 10 s."""
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f'{name}.log'
    proc = subprocess.Popen(
        [binary(), *args, '--dir', str(workdir), '--logfile', str(log)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        cwd=workdir,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                ready()
                break
            except Exception as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    text = log.read_text() if log.exists() else ''
                    raise RuntimeError(f'{name} did not start ({exc}):\n{text[-2000:]}') from exc
                time.sleep(0.05)
        yield log
    finally:
        proc.kill()
        proc.wait(10)


def unsupported(log: Path, feature: str) -> str | None:
    """The line of a failed server's log saying this binary lacks `feature` (e.g. 'tls'), if it says so."""
    text = log.read_text() if log.exists() else ''
    for line in text.splitlines():
        lowered = line.lower()
        if feature in lowered and any(word in lowered for word in ('not support', 'unrecognized', 'bad directive')):
            return line.strip()
    return None


def openssl_ca(directory: Path) -> dict[str, str]:
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl."""
    if shutil.which('openssl') is None:
        raise RuntimeError('openssl is not on PATH')
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        name: str(directory / name)
        for name in ('ca.key', 'ca.crt', 'server.key', 'server.crt', 'client.key', 'client.crt')
    }

    def run(*args: str) -> None:
        subprocess.run(['openssl', *args], check=True, capture_output=True, cwd=directory, timeout=60)

    run(
        'req',
        '-x509',
        '-new',
        '-nodes',
        '-newkey',
        'rsa:2048',
        '-keyout',
        paths['ca.key'],
        '-out',
        paths['ca.crt'],
        '-days',
        '1',
        '-subj',
        '/CN=rqfast test CA',
    )
    ext = directory / 'san.ext'
    ext.write_text('subjectAltName=IP:127.0.0.1,DNS:localhost\n')
    for who in ('server', 'client'):
        csr = str(directory / f'{who}.csr')
        run(
            'req',
            '-new',
            '-nodes',
            '-newkey',
            'rsa:2048',
            '-keyout',
            paths[f'{who}.key'],
            '-out',
            csr,
            '-subj',
            f'/CN={who}',
        )
        run(
            'x509',
            '-req',
            '-in',
            csr,
            '-CA',
            paths['ca.crt'],
            '-CAkey',
            paths['ca.key'],
            '-CAcreateserial',
            '-out',
            paths[f'{who}.crt'],
            '-days',
            '1',
            '-extfile',
            str(ext),
        )
    os.chmod(paths['server.key'], 0o600)
    return paths
