"""RQFAST_SHARDING=queue through a failover and a slot move: what tests/test_cluster.py and
tests/test_cluster_migration.py check in single-slot mode, for one queue's keyspace `{rq:<queue>}`
while another queue's worker runs on another master.

In sharded mode a queue's keys all carry its tag, so a failover or a slot move concerns the queues of
that slot only: the worker of a queue elsewhere never notices. The processes under test run in
subprocesses (the setting is read at import), as in tests/test_cluster_sharded.py.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

from tests.cluster_fixture import cluster_client, local_cluster, move_slot
from tests.test_cluster import keys_by_node, wait_for
from tests.test_cluster_sharded import env

pytestmark = pytest.mark.timeout(150)


def tag(queue: str) -> str:
    return f'{{rq:{queue}}}'


def two_queues_on_two_masters(cluster: Any, candidates: list[str]) -> tuple[str, str]:
    """Two queue names whose keyspaces live on different masters."""
    first = candidates[0]
    home = cluster.get_node_from_key(f'{tag(first)}:queues').name
    second = next(q for q in candidates[1:] if cluster.get_node_from_key(f'{tag(q)}:queues').name != home)
    return first, second


def start_worker(port: int, name: str, queue: str, log: Path) -> subprocess.Popen[bytes]:
    url = f'redis://127.0.0.1:{port}/?cluster=true'
    command = [sys.executable, '-m', 'rqfast.cli', 'worker', '-u', url, '--name', name, queue]
    # (a file: a pipe nobody reads would fill and block the worker)
    return subprocess.Popen(command, env=env(), stdout=subprocess.DEVNULL, stderr=log.open('w'))


@contextmanager
def workers_of(
    port: int, name: str, queues: tuple[str, ...], tmp_path: Path, report: Callable[[], object] = lambda: ''
) -> Iterator[dict[str, subprocess.Popen[bytes]]]:
    """A CLI worker of each queue (`<name>-<queue>`); on a failure the tails of their logs, and
    `report()`, are printed; any still running at the end is killed."""
    logs = {q: tmp_path / f'{q}.log' for q in queues}
    workers = {q: start_worker(port, f'{name}-{q}', q, logs[q]) for q in queues}
    try:
        yield workers
    except BaseException:
        for q in queues:
            print(q, logs[q].read_text()[-3000:])  # the workers' side of what went wrong
        print(report())
        raise
    finally:
        for worker in workers.values():
            if worker.poll() is None:
                worker.kill()
                worker.wait()


def enqueue(port: int, count: int, queue: str, marks: Path, first: int = 0) -> None:
    command = [sys.executable, '-m', 'tests.cluster_run', 'enqueue', str(port), str(count), queue, str(marks)]
    subprocess.run([*command, str(first)], env=env(), check=True, capture_output=True, timeout=90)


def stop(worker: subprocess.Popen[bytes]) -> None:
    """A warm shutdown (SIGTERM): the worker exits 0. (The command channel through a failover is
    tests/test_cluster.py's to check.)"""
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0


def zcard(cluster: Any, key: str) -> int:
    """ZCARD, 0 while the cluster is failing over (the test's own client meets the dead master too)."""
    try:
        return int(cluster.zcard(key))
    except Exception:
        return 0


def state(port: int, queue: str) -> dict[str, int]:
    """A queue's counts, read afresh (for a failure's report)."""
    with cluster_client(port) as client:
        counts = {name: int(client.zcard(f'{tag(queue)}:{name}:{queue}')) for name in ('wip', 'finished', 'failed')}
        return {**counts, 'queued': int(client.llen(f'{tag(queue)}:queue:{queue}'))}


def marked(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def test_a_failover_of_one_queues_master_while_workers_of_two_queues_run(tmp_path: Path) -> None:
    """3 masters with a replica each, sharded by queue; the master of queue A's keyspace is shut down
    while A's worker runs 300 jobs and B's worker (another master) runs 300 of its own. A's worker
    follows the promoted replica: every job of A ends (at least once: Redis's replication is
    asynchronous, so a write the dead master acknowledged but had not yet sent on can be lost, and the
    job then runs again) and later jobs run; B's worker rides out the seconds the cluster reports
    itself down (CLUSTERDOWN on every node until the replica took over) and runs its jobs once each."""
    with local_cluster(tmp_path / 'ha', replicas=1) as ports:
        cluster = RedisCluster(host='127.0.0.1', port=ports[0])
        a, b = two_queues_on_two_masters(cluster, ['ha-a', 'ha-b', 'ha-c', 'ha-d', 'ha-e', 'ha-f'])
        home = cluster.get_node_from_key(f'{tag(a)}:queues')
        boot = next(port for port in ports if port != home.port)  # (a node that stays up, to bootstrap through)
        cluster.close()
        cluster = RedisCluster(host='127.0.0.1', port=boot)
        marks = {q: tmp_path / f'marks-{q}' for q in (a, b)}
        finished = {q: f'{tag(q)}:finished:{q}' for q in (a, b)}
        failed = f'{tag(a)}:failed:{a}'
        with workers_of(boot, 'w', (a, b), tmp_path, lambda: state(boot, a)) as workers:
            for q in (a, b):
                wait_for(lambda q=q: cluster.exists(f'{tag(q)}:worker:w-{q}'), f'the worker of {q} to register')
            enqueue(boot, 300, a, marks[a])
            enqueue(boot, 300, b, marks[b], 1000)
            wait_for(lambda: cluster.zcard(finished[a]) >= 30, 'the first jobs of A to finish')
            try:
                redis.Redis(port=home.port).shutdown(nosave=True)
            except redis.ConnectionError:
                pass  # (the server closed the connection as it went)
            ended = lambda: zcard(cluster, finished[a]) + zcard(cluster, failed)  # noqa: E731
            wait_for(lambda: ended() == 300, 'every job of A to end after the failover', 60)
            wait_for(lambda: zcard(cluster, finished[b]) == 300, 'every job of B to finish', 30)
            assert cluster.get_node_from_key(f'{tag(a)}:queues').port != home.port  # a replica took over
            later = tmp_path / 'later'
            enqueue(boot, 5, a, later, 2001)
            wait_for(lambda: ended() == 305, 'jobs enqueued after the failover to run', 30)
            for q in (a, b):
                stop(workers[q])
        assert cluster.zcard(f'{tag(b)}:failed:{b}') == 0
        # A job that makes a Redis call of its own in the seconds the master is gone fails with the
        # ConnectionError, visibly: the only jobs that may fail are those (one in 50)
        assert {m.decode() for m in cluster.zrange(failed, 0, -1)} <= {f'job-{i}' for i in range(0, 300, 50)}
        runs = marked(marks[a])
        print(f'failover: {len(runs) - len(set(runs))} of {len(set(runs))} jobs of A ran twice')  # (-s shows it)
        assert set(runs) == {index for index in range(300) if index % 50}  # each ran (at least once)
        assert sorted(marked(marks[b])) == [index for index in range(1000, 1300) if index % 50]  # once each
        assert set(marked(later)) == set(range(2001, 2006))
        cluster.close()


@pytest.fixture(scope='module')
def ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    with local_cluster(tmp_path_factory.mktemp('sharded-move')) as found:
        yield found


@pytest.fixture
def cluster(ports: list[int]) -> Iterator[Any]:
    with cluster_client(ports[0]) as client:
        yield client


def test_one_queues_slot_moves_to_another_master_while_its_worker_runs(
    ports: list[int], cluster: Any, tmp_path: Path
) -> None:
    """Queue A's slot moves (in one script: tests/cluster_fixture.move_slot) after its worker finished
    50 of 300 jobs, while queue B's worker runs on another master. Every job of both runs exactly once,
    A's keys all end on the new master, B's never moved, and A's worker carries on there."""
    port = ports[0]
    a, b = two_queues_on_two_masters(cluster, ['mv-a', 'mv-b', 'mv-c', 'mv-d', 'mv-e', 'mv-f'])
    home = cluster.get_node_from_key(f'{tag(a)}:queues')
    b_home = cluster.get_node_from_key(f'{tag(b)}:queues')
    target = next(node for node in cluster.get_primaries() if node.name not in (home.name, b_home.name))
    marks = {q: tmp_path / f'marks-{q}' for q in (a, b)}
    with workers_of(port, 'm', (a, b), tmp_path) as workers:
        for q in (a, b):
            wait_for(lambda q=q: cluster.exists(f'{tag(q)}:worker:m-{q}'), f'the worker of {q} to register')
        enqueue(port, 300, a, marks[a])
        enqueue(port, 300, b, marks[b], 1000)
        wait_for(lambda: cluster.zcard(f'{tag(a)}:finished:{a}') >= 50, 'the first jobs of A to finish')
        assert move_slot(ports, cluster.keyslot(f'{tag(a)}:queues'), home.port, target.port) > 0
        for q in (a, b):
            wait_for(lambda q=q: zcard(cluster, f'{tag(q)}:finished:{q}') == 300, f'every job of {q} to finish', 60)
        enqueue(port, 5, a, tmp_path / 'later', 2001)
        wait_for(lambda: zcard(cluster, f'{tag(a)}:finished:{a}') == 305, 'the moved worker to run later jobs', 30)
        for q in (a, b):
            stop(workers[q])
    for q, first in ((a, 0), (b, 1000)):
        assert cluster.zcard(f'{tag(q)}:failed:{q}') + cluster.zcard(f'{tag(q)}:wip:{q}') == 0
        recorded = {int(k) for k, v in cluster.hgetall(f'{tag(q)}:test:ran').items() if v == b'1'}
        assert recorded == set(range(first, first + 300, 50))
        assert sorted(marked(marks[q]) + sorted(recorded)) == list(range(first, first + 300))  # exactly once
    assert cluster.get_node_from_key(f'{tag(a)}:queues').name == target.name
    assert cluster.get_node_from_key(f'{tag(b)}:queues').name == b_home.name
    where = {name: {k for k in found if k.startswith(tag(a))} for name, found in keys_by_node(cluster).items()}
    assert [name for name, found in where.items() if found] == [target.name]


SHUTDOWN = """
import sys
from redis.cluster import RedisCluster
from rqfast.command import send_shutdown_command
send_shutdown_command(RedisCluster(host='127.0.0.1', port=int(sys.argv[1])), sys.argv[2])
"""


def test_a_command_sent_outside_any_keyspace_reaches_a_sharded_worker(
    ports: list[int], cluster: Any, tmp_path: Path
) -> None:
    """RQ's send_shutdown_command(connection, name) knows no queue: it publishes on the base prefix's
    channel, `rq:pubsub:<name>`, and a sharded worker listens there as well as in its keyspace."""
    worker = start_worker(ports[0], 'cmd', 'cmd-q', tmp_path / 'cmd.log')
    try:
        wait_for(lambda: cluster.exists(f'{tag("cmd-q")}:worker:cmd'), 'the worker to register')
        listening = lambda: sum(redis.Redis(port=p).pubsub_numsub('rq:pubsub:cmd')[0][1] for p in ports)  # noqa: E731
        wait_for(lambda: listening() > 0, 'the worker to listen', 10)
        command = [sys.executable, '-c', SHUTDOWN, str(ports[0]), 'cmd']
        subprocess.run(command, env=env(), check=True, capture_output=True, timeout=30)
        assert worker.wait(30) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert 'received command shutdown' in (tmp_path / 'cmd.log').read_text()
