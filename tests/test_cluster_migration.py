"""Moving rqfast's slot to another master while workers run (single-slot mode, RQ_KEY_PREFIX='{rq}').

rqfast's scripts declare one key (keys.SLOT_KEY) and reach the others from the prefix, so Redis cannot
check before a script runs that every key it will touch is on the node: the slot's keys must never be
split between two masters while rqfast runs. tests/cluster_fixture.move_slot moves them in one script
on the old master (docs/connections.md gives the commands); this checks that workers busy and idle
carry on through it, and what a migration done key batch by key batch (redis-cli --cluster reshard's
way) does to a script call instead.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.cluster_fixture import cluster_client, local_cluster, move_slot
from tests.test_cluster import PREFIX, cli, env_with, keys_by_node, run, wait_for

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope='module')
def ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    with local_cluster(tmp_path_factory.mktemp('migration')) as found:
        yield found


@pytest.fixture
def cluster(ports: list[int]) -> Iterator[Any]:
    with cluster_client(ports[0]) as client:
        yield client


def other_master(cluster: Any, home: Any) -> Any:
    return next(node for node in cluster.get_primaries() if node.name != home.name)


def test_the_slot_moves_to_another_master_while_workers_run(ports: list[int], cluster: Any, tmp_path: Path) -> None:
    """500 jobs run by a SimpleWorker and a Worker (burst); the slot moves after the first 50 finish.
    Every job runs exactly once, every key ends on the new master, and a worker that was blocked in its
    wait (its BLMOVE answered with a redirection) carries on there: jobs enqueued afterwards run."""
    port = ports[0]
    url = f'redis://127.0.0.1:{port}/?cluster=true'
    log = tmp_path / 'idle.log'
    idle = subprocess.Popen(
        cli('worker', '-u', url, '--name', 'idle', 'mc'), env=env_with(PREFIX), stderr=log.open('w')
    )
    marks = tmp_path / 'marks'
    try:
        wait_for(lambda: cluster.exists(f'{PREFIX}:worker:idle'), 'the idle worker to register')
        run('-m', 'tests.cluster_run', 'enqueue', str(port), '250', 'ma,mb', str(marks))
        home = cluster.get_node_from_key(f'{PREFIX}:queues')
        target = other_master(cluster, home)
        slot = cluster.keyslot(f'{PREFIX}:queues')
        bursts = {'simple': 'ma', 'worker': 'mb'}
        started = [
            subprocess.Popen(
                [sys.executable, '-m', 'tests.cluster_run', 'burst', str(port), kind, queue],
                env=env_with(PREFIX),
                stderr=subprocess.PIPE,
                text=True,
            )
            for kind, queue in bursts.items()
        ]
        wait_for(lambda: cluster.zcard(f'{PREFIX}:finished:ma') >= 50, 'the first jobs to finish')
        assert move_slot(ports, slot, home.port, target.port) > 0
        for worker in started:
            _, err = worker.communicate(timeout=90)
            assert worker.returncode == 0, err
        for queue in bursts.values():
            assert cluster.zcard(f'{PREFIX}:finished:{queue}') == 250
            assert cluster.zcard(f'{PREFIX}:failed:{queue}') + cluster.zcard(f'{PREFIX}:wip:{queue}') == 0
        recorded = {int(k) for k, v in cluster.hgetall(f'{PREFIX}:test:ran').items() if v == b'1'}
        assert recorded == set(range(0, 500, 50))
        runs = [int(line) for line in marks.read_text().split()]
        assert sorted(runs + sorted(recorded)) == list(range(500))  # every job exactly once
        assert cluster.get_node_from_key(f'{PREFIX}:queues').name == target.name
        where = {name: [k for k in found if k.startswith(PREFIX)] for name, found in keys_by_node(cluster).items()}
        assert [name for name, found in where.items() if found] == [target.name]
        run('-m', 'tests.cluster_run', 'enqueue', str(port), '5', 'mc', str(tmp_path / 'later'), '1000')
        wait_for(lambda: cluster.zcard(f'{PREFIX}:finished:mc') == 5, 'the idle worker to run the later jobs')
        idle.send_signal(signal.SIGTERM)
        assert idle.wait(30) == 0
    except BaseException:
        print(log.read_text()[-5000:])
        raise
    finally:
        if idle.poll() is None:
            idle.kill()
            idle.wait()


def test_a_script_call_in_a_slot_marked_migrating_is_refused(ports: list[int], cluster: Any) -> None:
    """What the one-script move avoids: once the old master marks the slot MIGRATING, a script that
    touches a key the node does not hold (a new job's, a missing one) fails with Redis's error, maybe
    after some of its writes (Redis does not roll a script back)."""
    run('-m', 'tests.cluster_run', 'enqueue', str(ports[0]), '1', 'mm', '/dev/null', '9000')
    home = cluster.get_node_from_key(f'{PREFIX}:queues')
    target = other_master(cluster, home)
    slot = cluster.keyslot(f'{PREFIX}:queues')
    target_id = str(redis.Redis(port=target.port, decode_responses=True).execute_command('CLUSTER', 'MYID'))
    home_id = str(redis.Redis(port=home.port, decode_responses=True).execute_command('CLUSTER', 'MYID'))
    redis.Redis(port=target.port).execute_command('CLUSTER', 'SETSLOT', slot, 'IMPORTING', home_id)
    redis.Redis(port=home.port).execute_command('CLUSTER', 'SETSLOT', slot, 'MIGRATING', target_id)
    try:
        out = run('-m', 'tests.cluster_run', 'enqueue', str(ports[0]), '1', 'mm', '/dev/null', '9001', check=False)
        assert out.returncode != 0
        assert 'Script attempted to access a non local key' in out.stderr
    finally:
        for port in (target.port, home.port):
            redis.Redis(port=port).execute_command('CLUSTER', 'SETSLOT', slot, 'STABLE')
    run('-m', 'tests.cluster_run', 'enqueue', str(ports[0]), '1', 'mm', '/dev/null', '9002')  # stable again
    assert cluster.llen(f'{PREFIX}:queue:mm') == 2
