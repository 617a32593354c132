"""RQFAST_SHARDING=queue on a local 3-master Redis Cluster: each queue a keyspace of its own,
`{rq:<queue>}`, so a fleet's queues spread over the masters (rqfast.keys, docs/connections.md).

The processes under test run in subprocesses (the setting is read at import), as in tests/test_cluster.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster_fixture import cluster_client, local_cluster
from tests.cluster_run import PIPELINE_TRANSACTIONS
from tests.test_cluster import ROOT, keys_by_node, run_bursts, wait_for

pytestmark = pytest.mark.timeout(120)

SHARDED = {'RQ_KEY_PREFIX': 'rq', 'RQFAST_SHARDING': 'queue'}


@pytest.fixture(scope='module')
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with local_cluster(tmp_path_factory.mktemp('sharded')) as ports:
        yield ports[0]


@pytest.fixture
def cluster(port: int) -> Iterator[Any]:
    with cluster_client(port) as client:
        yield client


def env(**more: str) -> dict[str, str]:
    return {**os.environ, **SHARDED, 'PYTHONPATH': ROOT, **more}


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env=env(), capture_output=True, text=True, timeout=90, check=check)


@pytest.mark.timeout(600)
def test_400_jobs_by_each_worker_class_run_once_with_a_keyspace_per_queue(
    port: int, cluster: Any, tmp_path: Path
) -> None:
    """The single-slot run of tests/test_cluster.py, sharded: 100 jobs for each class (SimpleWorker, at
    concurrency 10 too, Worker, SpawnWorker) enqueued by one producer, then the four burst workers at
    once; each queue's keys are all on the master of its tag, and the four use at least two masters."""
    kinds = {'simple': 'sa', 'simple10': 'sb', 'worker': 'sc', 'spawn': 'sd'}
    marks = tmp_path / 'marks'
    run('-m', 'tests.cluster_run', 'enqueue', str(port), '100', ','.join(kinds.values()), str(marks))
    assert [cluster.llen(f'{{rq:{q}}}:queue:{q}') for q in kinds.values()] == [100] * 4
    run_bursts(port, kinds, env())
    recorded: list[int] = []
    for queue in kinds.values():
        tag = f'{{rq:{queue}}}'
        assert cluster.llen(f'{tag}:queue:{queue}') == 0
        assert cluster.zcard(f'{tag}:finished:{queue}') == 100
        assert cluster.zcard(f'{tag}:failed:{queue}') + cluster.zcard(f'{tag}:wip:{queue}') == 0
        ran = cluster.hgetall(f'{tag}:test:ran')  # (a job's own writes, from its worker's keyspace)
        assert set(ran.values()) == {b'1'}
        recorded += [int(index) for index in ran]
    marked = [int(line) for line in marks.read_text().split()]
    assert sorted(marked + recorded) == list(range(400))  # every job exactly once
    where = keys_by_node(cluster)
    homes = set()
    for queue in kinds.values():
        tag = f'{{rq:{queue}}}'
        home = cluster.get_node_from_key(f'{tag}:queues').name
        homes.add(home)
        assert f'{tag}:job:job-{list(kinds.values()).index(queue) * 100 + 1}' in where[home]
        assert all(not key.startswith(tag) for node, found in where.items() if node != home for key in found)
    assert len(homes) >= 2


def test_dependencies_within_a_queue_run_and_what_spans_queues_is_refused(port: int) -> None:
    out = run('-m', 'tests.cluster_run', 'sharded_rules', str(port)).stdout.splitlines()
    assert out[0] == 'finished'  # the dependent, after its parent, in the queue's keyspace
    assert [line.split(' | ')[0] for line in out[1:]] == ['RQFAST_SHARDING=queue'] * 2
    assert 'cannot depend on job dparent' in out[1]
    assert 'groups are not supported' in out[2]


def test_the_cli_worker_of_one_queue(port: int, cluster: Any, tmp_path: Path) -> None:
    run('-m', 'tests.cluster_run', 'enqueue', str(port), '3', 'cq', str(tmp_path / 'marks'), '8000')
    url = f'redis://127.0.0.1:{port}/?cluster=true'
    run('-m', 'rqfast.cli', 'worker', '-u', url, '--burst', 'cq')
    assert cluster.zcard('{rq:cq}:finished:cq') == 3
    refused = run('-m', 'rqfast.cli', 'info', '-u', url, 'cq', check=False)  # (it reads one keyspace)
    assert refused.returncode == 1 and "RQ_KEY_PREFIX='{rq:<queue>}'" in refused.stderr, refused
    one = {**env(), 'RQFAST_SHARDING': '', 'RQ_KEY_PREFIX': '{rq:cq}'}  # the queue's keyspace, as a plain prefix
    info = subprocess.run(
        [sys.executable, '-m', 'rqfast.cli', 'info', '-u', url], env=one, capture_output=True, text=True
    )
    assert 'cq ' in info.stdout and '3 finished' in info.stdout, info


def test_scheduler_retry_dependency_and_pipelines_in_a_queues_keyspace(port: int, cluster: Any) -> None:
    """tests/test_cluster.py's features, sharded: a CLI worker with its scheduler, of the one queue."""
    url = f'redis://127.0.0.1:{port}/?cluster=true'
    worker = subprocess.Popen(
        [sys.executable, '-m', 'rqfast.cli', 'worker', '-u', url, '--name', 'fs', '--with-scheduler', 'features'],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        tag = '{rq:features}'
        wait_for(lambda: cluster.exists(f'{tag}:worker:fs'), 'the worker to register')
        run('-m', 'tests.cluster_run', 'features', str(port))
        done = {'retried', 'parent', 'child', 'later', 'many'} | {f'piped-{t}' for t in PIPELINE_TRANSACTIONS}
        finished = f'{tag}:finished:features'
        wait_for(lambda: {m.decode() for m in cluster.zrange(finished, 0, -1)} == done, 'the jobs to finish')
        assert cluster.zcard(f'{tag}:failed:features') == 0
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err


def masters_of(cluster: Any, queues: list[str]) -> set[str]:
    return {cluster.get_node_from_key(f'{{rq:{queue}}}:queues').name for queue in queues}


def test_workers_of_three_queues_on_three_masters_run_each_job_once(port: int, cluster: Any, tmp_path: Path) -> None:
    """450 jobs on three queues (each on a master of its own), then four burst workers of all three at
    once, each in its own queue order: SimpleWorker at concurrency 1 and 10, Worker at 4, SpawnWorker."""
    names = ['ma', 'mb', 'mc']
    assert len(masters_of(cluster, names)) >= 2  # (three with the fixture's slot ranges)
    marks = tmp_path / 'marks'
    run('-m', 'tests.cluster_run', 'enqueue', str(port), '150', ','.join(names), str(marks), '20000')
    orders = {'simple': 'ma,mb,mc', 'simple10': 'mc,mb,ma', 'worker4': 'mb,mc,ma', 'spawn': 'mc,ma,mb'}
    run_bursts(port, orders, env())
    recorded: list[int] = []
    for queue in names:
        tag = f'{{rq:{queue}}}'
        assert cluster.llen(f'{tag}:queue:{queue}') == 0
        assert cluster.zcard(f'{tag}:finished:{queue}') == 150
        assert cluster.zcard(f'{tag}:failed:{queue}') + cluster.zcard(f'{tag}:wip:{queue}') == 0
        ran = cluster.hgetall(f'{tag}:test:ran')  # (written by the job in its own queue's keyspace)
        assert set(ran.values()) == {b'1'}
        recorded += [int(index) for index in ran]
        assert cluster.exists(*(f'{tag}:worker:burst-{kind}' for kind in orders)) == 4  # (registered in each)
    marked = [int(line) for line in marks.read_text().split()]
    assert sorted(marked + recorded) == list(range(20000, 20450))  # every job exactly once


def test_a_worker_of_several_queues_keeps_their_order_and_one_round_trip_per_job(port: int, tmp_path: Path) -> None:
    marks = tmp_path / 'marks'
    run('-m', 'tests.cluster_run', 'queue_order', str(port), str(marks))
    assert marks.read_text().split() == ['0', '100', '1', '2', '3']  # hi's job, enqueued by lo's first, next
    costs = dict(line.split() for line in run('-m', 'tests.cluster_run', 'round_trips', str(port)).stdout.splitlines())
    assert float(costs['ma']) <= 1.05, costs  # the first queue busy: the finish claims the next, one call
    assert float(costs['mc']) <= 3.05, costs  # the last: a claim in each earlier keyspace first (documented)


SCHEDULE = """
import sys
from datetime import timedelta
from redis.cluster import RedisCluster
from rqfast import Queue
queue = Queue(sys.argv[2], connection=RedisCluster(host='127.0.0.1', port=int(sys.argv[1])))
queue.enqueue_in(timedelta(seconds=1), 'operator.add', 1, 2)
"""


def test_a_cli_worker_of_three_queues_waits_on_each_master_and_is_suspended(port: int, cluster: Any) -> None:
    """Idle, it takes a job on any of its queues' masters; its scheduler moves a job due in its second
    queue's keyspace; `rqfast suspend` stops it, `rqfast resume` lets it go on."""
    url = f'redis://127.0.0.1:{port}/?cluster=true'
    names = ['wa', 'wb', 'wc']
    assert len(masters_of(cluster, names)) >= 2
    worker = subprocess.Popen(
        [sys.executable, '-m', 'rqfast.cli', 'worker', '-u', url, '--name', 'three', '--with-scheduler', *names],
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: cluster.exists(*(f'{{rq:{q}}}:worker:three' for q in names)) == 3, 'the worker to register')
        run('-m', 'tests.cluster_run', 'enqueue', str(port), '1', 'wc', '/dev/null', '30000')
        wait_for(lambda: cluster.zcard('{rq:wc}:finished:wc') == 1, "the idle worker to take wc's job", 10)
        run('-c', SCHEDULE, str(port), 'wb')
        wait_for(lambda: cluster.zcard('{rq:wb}:finished:wb') == 1, "wb's scheduled job", 10)
        run('-m', 'rqfast.cli', 'suspend', '-u', url)
        assert all(cluster.exists(f'{{rq:{q}}}:suspended') for q in ('wb', 'wc'))  # (the queues with a keyspace)
        assert not cluster.exists('{rq:wa}:suspended')
        for queue in ('wa',):  # no keyspace yet: given one, then suspended too
            cluster.sadd(f'{{rq:{queue}}}:queues', f'{{rq:{queue}}}:queue:{queue}')
        run('-m', 'rqfast.cli', 'suspend', '-u', url)
        assert all(cluster.exists(f'{{rq:{q}}}:suspended') for q in names)
        wait_for(lambda: cluster.hget('{rq:wa}:worker:three', 'state') == b'suspended', 'the worker to suspend', 10)
        run('-m', 'tests.cluster_run', 'enqueue', str(port), '1', 'wb', '/dev/null', '30001')
        time.sleep(1.5)
        assert cluster.llen('{rq:wb}:queue:wb') == 1 and cluster.zcard('{rq:wb}:finished:wb') == 1
        run('-m', 'rqfast.cli', 'resume', '-u', url)
        assert not any(cluster.exists(f'{{rq:{q}}}:suspended') for q in names)
        wait_for(lambda: cluster.zcard('{rq:wb}:finished:wb') == 2, "wb's job once resumed", 10)
    finally:
        worker.terminate()
        _, err = worker.communicate(timeout=30)
    assert worker.returncode == 0, err
    for queue in names:  # its death, in each keyspace
        assert cluster.hexists(f'{{rq:{queue}}}:worker:three', 'death')
        assert not cluster.sismember(f'{{rq:{queue}}}:workers', f'{{rq:{queue}}}:worker:three')


ONE_SERVER = """
import sys
from redis import Redis
from rqfast import Queue, SimpleWorker
conn = Redis.from_url(sys.argv[1])
for name in ('plain-a', 'plain-b'):
    Queue(name, connection=conn).enqueue('operator.add', 1, 2, job_id=f'{name}-job')
SimpleWorker(['plain-b'], connection=conn).work(burst=True)
print(Queue('plain-b', connection=conn).fetch_job('plain-b-job').result)
"""


def test_sharded_mode_on_one_server_too(redis_url: str) -> None:
    """Nothing in it needs a cluster: the keyspaces are prefixes with braces (a test setup, a move)."""
    import redis

    out = run('-c', ONE_SERVER, redis_url)
    assert out.stdout.split() == ['3']
    conn = redis.Redis.from_url(redis_url)
    assert conn.llen('{rq:plain-a}:queue:plain-a') == 1
    assert conn.zcard('{rq:plain-b}:finished:plain-b') == 1
    assert conn.exists('rq:queue:plain-a', 'rq:job:plain-b-job') == 0


SETTLED = """
from redis import Redis
from rqfast import SimpleWorker, keys
with keys.within('listed'):
    SimpleWorker(['listed'], connection=Redis(), prepare_for_work=False)  # (as Worker.all() makes them)
print(keys.prefix())
SimpleWorker(['served'], connection=Redis(), prepare_for_work=False)
print(keys.prefix())
SimpleWorker(['second', 'first'], connection=Redis(), prepare_for_work=False)  # (its first queue's)
print(keys.prefix())
"""


def test_a_worker_made_for_its_queue_settles_the_process_in_its_keyspace() -> None:
    out = subprocess.run([sys.executable, '-c', SETTLED], env=env(), capture_output=True, text=True, check=True)
    assert out.stdout.split() == ['rq:', '{rq:served}:', '{rq:second}:']


@pytest.mark.parametrize(
    ('sharding', 'prefix', 'error'),
    [('slot', 'rq', 'set it to "queue"'), ('queue', '{rq}', 'RQ_KEY_PREFIX must have no braces')],
)
def test_the_setting_is_checked_at_import(sharding: str, prefix: str, error: str) -> None:
    bad = env(RQFAST_SHARDING=sharding, RQ_KEY_PREFIX=prefix)
    out = subprocess.run([sys.executable, '-c', 'import rqfast'], env=bad, capture_output=True, text=True)
    assert out.returncode != 0
    assert error in out.stderr
    for fine in ('none', 'queue', ''):
        ok = {**bad, 'RQFAST_SHARDING': fine, 'RQ_KEY_PREFIX': 'rq'}
        assert subprocess.run([sys.executable, '-c', 'import rqfast'], env=ok).returncode == 0


LISTINGS = """
import sys
from redis import Redis
from rqfast import Job, Queue, SimpleWorker, Worker, keys
from rqfast.cluster import KeyspaceError
conn = Redis.from_url(sys.argv[1])
for name in ('la', 'lb'):
    Queue(name, connection=conn).enqueue('operator.add', 1, 2, job_id=f'{name}-job')
print(sorted(q.name for q in Queue.all(conn) if q.name in ('la', 'lb')))
for call in (lambda: Job.fetch('la-job', conn), lambda: Job.exists('la-job', conn), lambda: Worker.all(conn)):
    try:
        call()
        print('no error')
    except KeyspaceError as exc:
        print(str(exc).split(':')[1].strip().split(' ')[0])
print(Queue('la', connection=conn).fetch_job('la-job').id)
with keys.within('lb'):
    print(Job.fetch('lb-job', conn).origin)
worker = SimpleWorker(['lb'], connection=conn, name='lister')
worker.register_birth()
print([w.name for w in Worker.all(queue=Queue('lb', connection=conn))])
worker.register_death()
"""


def test_queue_all_lists_every_keyspace_and_reads_without_a_queue_are_refused(redis_url: str) -> None:
    """Queue.all(connection) finds the queues of every keyspace (sharded mode needs no cluster: one
    server); Job.fetch/exists and Worker.all without a queue would read the base prefix, where nothing
    is: a KeyspaceError says so, and the calls with a queue (or inside keys.within) work."""
    out = run('-c', LISTINGS, redis_url).stdout.splitlines()
    assert out == ["['la', 'lb']", 'Job.fetch(id)', 'Job.exists(id)', 'Worker.all()', 'la-job', 'lb', "['lister']"]
