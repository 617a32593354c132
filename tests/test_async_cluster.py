"""rqfast.asyncio on Redis Cluster: redis.asyncio's RedisCluster under a hash-tagged RQ_KEY_PREFIX, its
jobs run by a worker on redis-py's RedisCluster, their results awaited (tests/async_cluster_run.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from redis.asyncio.cluster import RedisCluster as AsyncCluster

from rqfast.asyncio import AsyncQueue
from rqfast.cluster import ClusterKeyPrefixError
from tests.cluster_fixture import local_cluster

pytestmark = pytest.mark.timeout(300)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope='module')
def cluster_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with local_cluster(tmp_path_factory.mktemp('cluster')) as ports:
        yield ports[0]


def test_an_unhashed_prefix_is_refused_on_an_async_cluster(cluster_port: int) -> None:
    client = AsyncCluster(host='127.0.0.1', port=cluster_port)  # (connects when first used: never here)
    with pytest.raises(ClusterKeyPrefixError, match='hash tag'):
        AsyncQueue('q', connection=client)


@pytest.mark.parametrize(
    'mode', [{'RQ_KEY_PREFIX': '{rq}'}, {'RQ_KEY_PREFIX': 'rq', 'RQFAST_SHARDING': 'queue'}], ids=['slot', 'sharded']
)
def test_enqueue_wait_and_read_on_a_cluster(cluster_port: int, mode: dict[str, str]) -> None:
    env = {**os.environ, **mode, 'PYTHONPATH': ROOT}
    done = subprocess.run(
        [sys.executable, '-m', 'tests.async_cluster_run', str(cluster_port)],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    first, second = seen['ids'][:2]
    assert seen['deferred'] == [second] and seen['second'] == 'deferred'
    assert seen['count'] == 1 + 5 + 1 + 1  # first, the batch, the throttled, the piped (second waits, one canceled)
    assert seen['throttled_same'] and seen['canceled']
    assert seen['results'] == [3, 7, 0, 2, 4, 6, 8, 10]
