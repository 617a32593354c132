"""The dashboard on a local 3-master Redis Cluster: single-slot mode (RQ_KEY_PREFIX='{rq}') and sharded mode
(RQFAST_SHARDING=queue, a keyspace per queue): every keyspace's queues, jobs and workers are shown, and an
action lands in the right keyspace. The dashboard and the producers run in subprocesses (the settings are
read at import), as in tests/test_cluster.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cluster_fixture import cluster_client, local_cluster
from tests.dashboard_server import free_port

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parent.parent
MODES = {
    'single-slot': ({'RQ_KEY_PREFIX': '{rq}'}, '{{rq}}:'),
    'sharded': ({'RQ_KEY_PREFIX': 'rq', 'RQFAST_SHARDING': 'queue'}, '{{rq:{queue}}}:'),
}


@pytest.fixture(scope='module')
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with local_cluster(tmp_path_factory.mktemp('dashboard-cluster')) as ports:
        yield ports[0]


def environment(mode: str) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k not in ('RQ_KEY_PREFIX', 'RQFAST_SHARDING')}
    return {**inherited, **MODES[mode][0], 'PYTHONPATH': str(ROOT)}


def count(html: str, queue: str, kind: str) -> int:
    row = re.search(rf'<tr data-queue="{queue}">(.*?)</tr>', html, re.S)
    assert row, f'no row for {queue}'
    found = re.search(rf'data-count="{kind}">(?:<a [^>]*>)?([\d,]+)', row.group(1))
    assert found
    return int(found.group(1))


@pytest.mark.parametrize('mode', list(MODES))
def test_every_keyspace_is_shown_and_an_action_lands_in_its_keyspace(port: int, mode: str, tmp_path: Path) -> None:
    names = [f'{mode[:2]}-a', f'{mode[:2]}-b', f'{mode[:2]}-c']
    env = environment(mode)
    filled = subprocess.run(
        [sys.executable, '-m', 'tests.dashboard_cluster_run', 'fill', str(port), *names],
        env=env, capture_output=True, text=True, timeout=90, check=True, cwd=ROOT,
    )  # fmt: skip
    failed_id = filled.stdout.split()[-1]
    web = free_port()
    log = open(tmp_path / 'dashboard.log', 'wb')  # noqa: SIM115 - closed below
    command = [sys.executable, '-m', 'rqfast', 'dashboard', '--cluster', '-u', f'redis://127.0.0.1:{port}']
    process = subprocess.Popen([*command, '--port', str(web)], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        with httpx.Client(base_url=f'http://127.0.0.1:{web}', timeout=10) as client:
            _wait_served(client, process, tmp_path)
            check_pages(client, names, failed_id, port, mode)
    finally:
        process.terminate()
        process.wait(10)
        log.close()


def _wait_served(client: httpx.Client, process: subprocess.Popen[bytes], tmp_path: Path) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if client.get('/health').status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None and time.monotonic() < deadline, (tmp_path / 'dashboard.log').read_text()
        time.sleep(0.1)


def check_pages(client: httpx.Client, names: list[str], failed_id: str, port: int, mode: str) -> None:
    first, second, third = names
    queues = client.get('/queues').text
    assert [count(queues, first, kind) for kind in ('queued', 'finished', 'failed')] == [4, 2, 1]
    assert count(queues, second, 'queued') == count(queues, third, 'queued') == 5
    overview = client.get('/')
    assert overview.status_code == 200 and re.search(r'id="queued-total">14<', overview.text)
    workers = client.get('/workers').text
    assert f'idle-{second}' in workers and f'idle-{third}' in workers
    template = MODES[mode][1]
    assert template.format(queue=second) in workers  # the keyspace each is registered in
    job = client.get(f'/jobs/{failed_id}')  # found in its keyspace without naming the queue
    assert job.status_code == 200 and 'ZeroDivisionError' in job.text and 'operator.truediv(1, 0)' in job.text
    listed = client.get(f'/queues/{first}/jobs/failed').text
    assert failed_id in listed
    for path in ('/functions', '/scheduled', '/live/overview', f'/queues/{second}'):
        assert client.get(path).status_code == 200, path
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', client.get(f'/queues/{second}').text)
    assert token
    form = {'queue': second, 'csrf': token.group(1), 'confirm': 'yes', 'next': f'/queues/{second}'}
    assert client.post('/actions/pause', data=form).status_code == 303
    with cluster_client(port) as cluster:
        paused = template.format(queue=second) + 'paused-queues'
        assert cluster.sismember(paused, second)
        if mode == 'sharded':  # the other keyspaces' sets are left as they were
            assert not cluster.exists(template.format(queue=first) + 'paused-queues')
    row = re.search(rf'<tr data-queue="{second}">.*?</tr>', client.get('/queues').text, re.S)
    assert row and 'badge paused' in row.group(0)
