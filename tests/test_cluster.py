"""rqfast on a local 3-master Redis Cluster in single-slot mode (RQ_KEY_PREFIX='{rq}'; rqfast.cluster).

The processes under test run in subprocesses (RQ_KEY_PREFIX is read at import) with redis-py's
RedisCluster client; this process reads what they wrote through a cluster client of its own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from redis.cluster import RedisCluster

from rqfast.cluster import ClusterKeyPrefixError, check_connection, check_prefix, hash_tag, is_cluster
from tests.cluster_fixture import cluster_client, local_cluster
from tests.cluster_run import PIPELINE_TRANSACTIONS

pytestmark = pytest.mark.timeout(120)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = '{rq}'

SHUTDOWN = """
import sys
from redis.cluster import RedisCluster
from rqfast.command import send_shutdown_command
send_shutdown_command(RedisCluster(host='127.0.0.1', port=int(sys.argv[1])), sys.argv[2])
"""


@pytest.fixture(scope='module')
def cluster_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with local_cluster(tmp_path_factory.mktemp('cluster')) as ports:
        yield ports[0]


@pytest.fixture
def cluster(cluster_port: int) -> Iterator[Any]:
    with cluster_client(cluster_port) as client:
        yield client


def env_with(prefix: str) -> dict[str, str]:
    return {**os.environ, 'RQ_KEY_PREFIX': prefix, 'PYTHONPATH': ROOT}


def run(*args: str, prefix: str = PREFIX, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], env=env_with(prefix), capture_output=True, text=True, timeout=90, check=check
    )


def cli(*args: str) -> list[str]:
    return [sys.executable, '-m', 'rqfast.cli', *args]


def wait_for(predicate: Callable[[], object], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f'timed out waiting for {what}')
        time.sleep(0.05)


def keys_by_node(cluster: Any) -> dict[str, list[str]]:
    """Every key of every master, by node name."""
    found = {}
    for node in cluster.get_primaries():
        found[node.name] = sorted(key.decode() for key in node.redis_connection.scan_iter(count=1000))
    return found


def test_hash_tag_follows_redis_rule() -> None:
    assert hash_tag('{rq}') == 'rq'
    assert hash_tag('app{team}x') == 'team'
    assert hash_tag('{a}{b}') == 'a'
    for untagged in ('rq', '{}rq', 'rq}{', '{rq', 'x}y'):
        assert hash_tag(untagged) is None, untagged
    with pytest.raises(ClusterKeyPrefixError, match='hash tag'):
        check_prefix('myapp')
    check_prefix('{rq}')


def test_a_plain_client_is_no_cluster(redis_conn: Any, cluster: Any) -> None:
    assert is_cluster(cluster)
    assert not is_cluster(redis_conn)
    check_connection(redis_conn)  # this process's prefix is rq: fine on one server...
    with pytest.raises(ClusterKeyPrefixError):
        check_connection(cluster)  # ...refused on a cluster


def run_bursts(cluster_port: int, kinds: dict[str, str], env: dict[str, str] | None = None) -> None:
    """One burst worker per (kind, queue) of tests/cluster_run.py, all at once; each must exit 0.
    `env`: the workers' environment (default: single-slot mode under PREFIX)."""
    workers = [
        subprocess.Popen(
            [sys.executable, '-m', 'tests.cluster_run', 'burst', str(cluster_port), kind, queue],
            env=env or env_with(PREFIX),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for kind, queue in kinds.items()
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=450)  # (a deadline: on a loaded machine a burst takes minutes)
        assert worker.returncode == 0, err


@pytest.mark.timeout(600)
def test_400_jobs_by_each_worker_class_run_once_in_one_slot(cluster_port: int, cluster: Any, tmp_path: Path) -> None:
    """100 jobs for each class (SimpleWorker, at concurrency 10 too, Worker, SpawnWorker), its four burst
    workers at once; 8 of the jobs write to Redis from the horse or child (a client rebuilt there). (100, not
    250: a SpawnWorker starts an interpreter per job, 250 of them took over 2 minutes on a loaded machine.)"""
    kinds = {'simple': 'qa', 'simple10': 'qb', 'worker': 'qc', 'spawn': 'qd'}
    marks = tmp_path / 'marks'
    run('-m', 'tests.cluster_run', 'enqueue', str(cluster_port), '100', ','.join(kinds.values()), str(marks))
    assert sum(cluster.llen(f'{PREFIX}:queue:{q}') for q in kinds.values()) == 400
    run_bursts(cluster_port, kinds)
    ran = {int(k): int(v) for k, v in cluster.hgetall(f'{PREFIX}:test:ran').items() if int(k) < 400}
    assert sorted(ran) == list(range(0, 400, 50))
    assert set(ran.values()) == {1}
    marked = [int(line) for line in marks.read_text().split()]
    assert sorted(marked + list(ran)) == list(range(400))  # every job exactly once
    for queue in kinds.values():
        assert cluster.llen(f'{PREFIX}:queue:{queue}') == 0
        assert cluster.zcard(f'{PREFIX}:finished:{queue}') == 100
        assert cluster.zcard(f'{PREFIX}:failed:{queue}') == 0
        assert cluster.zcard(f'{PREFIX}:wip:{queue}') == 0
    # single-slot mode: every key under the prefix, all on the master of the tag's slot
    home = cluster.get_node_from_key(f'{PREFIX}:queues').name
    # (other tests of this module write keyspaces of their own, {rq:<queue>}: only {rq}'s are looked at)
    where = {name: [k for k in found if k.startswith(PREFIX)] for name, found in keys_by_node(cluster).items()}
    assert [name for name, found in where.items() if found] == [home]
    assert all(key.startswith(f'{PREFIX}:') for key in where[home])
    assert f'{PREFIX}:job:job-399' in where[home]


def test_forking_and_spawning_workers_at_concurrency_above_one(cluster_port: int, cluster: Any, tmp_path: Path) -> None:
    kinds = {'worker4': 'qe', 'spawn2': 'qf'}
    marks = tmp_path / 'marks'
    run('-m', 'tests.cluster_run', 'enqueue', str(cluster_port), '50', ','.join(kinds.values()), str(marks), '2000')
    run_bursts(cluster_port, kinds)
    for queue in kinds.values():
        assert cluster.zcard(f'{PREFIX}:finished:{queue}') == 50
    recorded = {int(k) for k in cluster.hgetall(f'{PREFIX}:test:ran')} & set(range(2000, 2100))
    marked = [int(line) for line in marks.read_text().split()]
    assert sorted(marked + sorted(recorded)) == list(range(2000, 2100))  # each once; 2000 and 2050 in Redis


def test_cli_worker_scheduler_retry_dependency_commands_and_info(cluster_port: int, cluster: Any) -> None:
    url = f'redis://127.0.0.1:{cluster_port}'
    worker = subprocess.Popen(
        cli('worker', '--cluster', '-u', url, '--name', 'wc', '--with-scheduler', 'features', 'other'),
        env=env_with(PREFIX),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: cluster.exists(f'{PREFIX}:worker:wc'), 'the worker to register')
        run('-m', 'tests.cluster_run', 'features', str(cluster_port))
        done = {'retried', 'parent', 'child', 'later', 'many'} | {f'piped-{t}' for t in PIPELINE_TRANSACTIONS}
        finished = f'{PREFIX}:finished:features'
        wait_for(lambda: {m.decode() for m in cluster.zrange(finished, 0, -1)} == done, 'the jobs to finish')
        assert cluster.get(f'{PREFIX}:test:flaky:retried') == b'2'  # failed once, then retried
        assert cluster.zcard(f'{PREFIX}:failed:features') == 0
        shown = run('-m', 'tests.cluster_run', 'show_workers', str(cluster_port)).stdout.split('\n')
        assert shown[:2] == ["['wc']", 'finished']  # Worker.all(), and Job.fetch of the dependent
        info = run('-m', 'rqfast.cli', 'info', '-u', f'{url}/?cluster=true', 'features')
        assert 'wc' in info.stdout and f'{len(done)} finished' in info.stdout, info.stdout
        run('-c', SHUTDOWN, str(cluster_port), 'wc')  # over pub/sub, through the cluster client
        assert worker.wait(30) == 0, worker.stderr.read() if worker.stderr else ''
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        if worker.stderr:
            worker.stderr.close()
    assert not cluster.sismember(f'{PREFIX}:workers', f'{PREFIX}:worker:wc')


def test_maintenance_pass_on_the_cluster(cluster_port: int, cluster: Any) -> None:
    out = run('-m', 'tests.cluster_run', 'maintenance', str(cluster_port))
    assert out.stdout.split() == ['1']  # the finished job whose result_ttl ran out
    assert cluster.zcard(f'{PREFIX}:finished:maint') == 0


def test_a_prefix_without_hash_tag_is_refused_before_any_write(cluster_port: int, cluster: Any) -> None:
    producer = run('-m', 'tests.cluster_run', 'no_hash_tag', str(cluster_port), prefix='myapp', check=False)
    assert producer.returncode != 0
    assert 'ClusterKeyPrefixError' in producer.stderr and "RQ_KEY_PREFIX='{rq}'" in producer.stderr
    url = f'redis://127.0.0.1:{cluster_port}'
    for args in (['info', '--cluster', '-u', url], ['worker', '-u', f'{url}/?cluster=true', '--burst', 'q']):
        out = run('-m', 'rqfast.cli', *args, prefix='myapp', check=False)
        assert out.returncode == 1, out
        assert 'hash tag' in out.stderr
    written = [key for found in keys_by_node(cluster).values() for key in found if key.startswith('myapp')]
    assert written == []


def test_cluster_url_option_must_be_a_boolean(cluster_port: int) -> None:
    out = run('-m', 'rqfast.cli', 'info', '-u', f'redis://127.0.0.1:{cluster_port}/?cluster=maybe', check=False)
    assert out.returncode == 1
    assert 'cluster is a boolean' in out.stderr


def test_module_scope_cluster_is_a_real_three_master_cluster(cluster: Any) -> None:
    assert len(cluster.get_primaries()) == 3
    assert cluster.cluster_info()['cluster_state'] == 'ok'


CRON_CONFIG = """from rqfast import cron
from tests.cluster_jobs import mark

cron.register(mark, 'cronq', args=(1, {marks!r}), interval=1)
"""


def test_cron_scheduler_on_the_cluster(cluster_port: int, cluster: Any, tmp_path: Path) -> None:
    config = tmp_path / 'cluster_cron_config.py'
    config.write_text(CRON_CONFIG.format(marks=str(tmp_path / 'marks')))
    url = f'redis://127.0.0.1:{cluster_port}/?cluster=true'
    proc = subprocess.Popen(
        cli('cron', str(config), '-u', url, '-P', ROOT),
        env=env_with(PREFIX),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        history = f'{PREFIX}:cron_job:tests.cluster_jobs.mark:jobs'
        wait_for(lambda: cluster.zcard(history) >= 1 and proc.poll() is None, 'the cron job to be enqueued', 20)
        assert cluster.llen(f'{PREFIX}:queue:cronq') >= 1
        assert cluster.zcard(f'{PREFIX}:cron_schedulers') == 1
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out


def test_worker_pool_on_the_cluster(cluster_port: int, cluster: Any, tmp_path: Path) -> None:
    marks = tmp_path / 'marks'
    run('-m', 'tests.cluster_run', 'enqueue', str(cluster_port), '20', 'poolq', str(marks), '3000')
    url = f'redis://127.0.0.1:{cluster_port}'
    out = run('-m', 'rqfast.cli', 'worker-pool', '--cluster', '-u', url, '-n', '2', '--burst', 'poolq')
    assert cluster.zcard(f'{PREFIX}:finished:poolq') == 20, out.stderr
    assert cluster.llen(f'{PREFIX}:queue:poolq') == 0
    # (3000 records its run in Redis)
    assert sorted(int(line) for line in marks.read_text().split()) == list(range(3001, 3020))


def test_every_script_call_declares_the_slot_key() -> None:
    """KEYS[1] is what routes a call on a cluster: the direct call, and a call queued into a pipeline."""
    from rqfast import keys
    from rqfast.scriptload import script

    sent: list[tuple[Any, ...]] = []

    class Recorder:
        watching, explicit_transaction = False, False
        command_stack: list[Any] = []

        def execute_command(self, *args: Any) -> None:
            sent.append(args)

    runner = script('heartbeat')
    runner(Recorder(), ['x'])  # type: ignore[arg-type]
    runner.queue(Recorder(), ['y'])  # type: ignore[arg-type]
    assert [call[2:5] for call in sent] == [(1, keys.SLOT_KEY, keys.PREFIX)] * 2
    assert [call[0] for call in sent] == ['EVALSHA', 'EVAL']
    assert keys.SLOT_KEY == f'{keys.PREFIX}queues'


def test_one_keyspace_per_queue_spreads_queues_over_the_masters(
    cluster_port: int, cluster: Any, tmp_path: Path
) -> None:
    """Sharding by deployment, today: a queue served under a prefix of its own (`{rq:<queue>}`) is a
    keyspace on the master of its tag, so three such queues use the three masters."""
    chosen: dict[str, str] = {}  # master -> queue: the first names whose tags land on each master
    for number in range(200):
        name = f'shard{number}'
        chosen.setdefault(cluster.get_node_from_key(f'{{rq:{name}}}:queues').name, name)
        if len(chosen) == 3:
            break
    assert len(chosen) == 3
    marks = tmp_path / 'marks'
    for queue in chosen.values():
        shard = f'{{rq:{queue}}}'
        run('-m', 'tests.cluster_run', 'enqueue', str(cluster_port), '30', queue, str(marks), prefix=shard)
        run('-m', 'tests.cluster_run', 'burst', str(cluster_port), 'simple', queue, prefix=shard)
    by_node = keys_by_node(cluster)
    for node, queue in chosen.items():
        assert f'{{rq:{queue}}}:finished:{queue}' in by_node[node]
        assert cluster.zcard(f'{{rq:{queue}}}:finished:{queue}') == 30
        assert all(
            not key.startswith(f'{{rq:{queue}}}') for other in by_node if other != node for key in by_node[other]
        )
    # each keyspace numbers its jobs from 0: 1..29 marked in a file by each of the three, 0 recorded in Redis
    assert sorted(int(line) for line in marks.read_text().split()) == sorted(list(range(1, 30)) * 3)


def test_checking_a_horses_lazy_client_does_not_build_it() -> None:
    """A horse's Job gets a LazyClient that becomes a client when first used: the cluster check must
    not be that use (most jobs never touch Redis, and their horse builds no pool)."""
    from rqfast.horse import LazyClient

    lazy = LazyClient(b'not a recipe')
    check_connection(lazy)
    assert not is_cluster(lazy)
    assert '_recipe' in lazy.__dict__  # still lazy


def test_cluster_flag_on_a_server_that_is_no_cluster_is_one_error_line(redis_url: str) -> None:
    for command in (['info'], ['worker', '--burst', 'q']):
        out = run('-m', 'rqfast.cli', *command, '--cluster', '-u', redis_url, check=False)
        assert out.returncode == 1
        assert out.stderr.startswith('Error: cannot connect to a Redis Cluster through 127.0.0.1:'), out.stderr
        assert 'Traceback' not in out.stderr


def test_a_failover_of_the_slots_master_while_a_worker_runs(tmp_path: Path) -> None:
    """3 masters with a replica each; the master of the tag's slot is shut down while a worker runs
    300 jobs. The worker's script calls follow the promoted replica, its waits and its command channel
    find it again: every job ends (ran at least once: Redis's replication is asynchronous, so a
    write the dead master acknowledged but had not yet sent on can be lost; or failed visibly, when its
    own Redis call met the dead master), later jobs run, and a shutdown command still reaches the worker."""
    import redis

    with local_cluster(tmp_path / 'ha', replicas=1) as ports:
        cluster = RedisCluster(host='127.0.0.1', port=ports[1])
        home = cluster.get_node_from_key(f'{PREFIX}:queues')
        assert home.port != ports[1]  # (the processes bootstrap through a node that stays up)
        url = f'redis://127.0.0.1:{ports[1]}/?cluster=true'
        log = tmp_path / 'worker.log'  # (a file: a pipe nobody reads would fill and block the worker)
        worker = subprocess.Popen(
            cli('worker', '-u', url, '--name', 'fw', 'ha'),
            env=env_with(PREFIX),
            stdout=subprocess.DEVNULL,
            stderr=log.open('w'),
        )
        marks = tmp_path / 'marks'
        finished, failed = f'{PREFIX}:finished:ha', f'{PREFIX}:failed:ha'
        try:
            wait_for(lambda: cluster.exists(f'{PREFIX}:worker:fw'), 'the worker to register')
            run('-m', 'tests.cluster_run', 'enqueue', str(ports[1]), '300', 'ha', str(marks))
            wait_for(lambda: cluster.zcard(finished) >= 30, 'the first jobs to finish')
            try:
                redis.Redis(port=home.port).shutdown(nosave=True)
            except redis.ConnectionError:
                pass  # (the server closed the connection as it went)
            ended = lambda: _zcard(cluster, finished) + _zcard(cluster, failed)  # noqa: E731
            wait_for(lambda: ended() == 300, 'every job to end after the failover', 40)
            assert cluster.get_node_from_key(f'{PREFIX}:queues').port != home.port  # a replica took over
            later = tmp_path / 'later'
            run('-m', 'tests.cluster_run', 'enqueue', str(ports[1]), '5', 'ha', str(later), '1001')
            wait_for(lambda: ended() == 305, 'jobs enqueued after the failover to run', 30)
            run('-c', SHUTDOWN, str(ports[1]), 'fw')
            assert worker.wait(30) == 0
        except BaseException:
            print(log.read_text()[-5000:])  # the worker's side of what went wrong
            raise
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        # A job that makes a Redis call of its own while the master is gone fails with the ConnectionError,
        # visibly: the only jobs that may fail are those (one in 50)
        assert {m.decode() for m in cluster.zrange(failed, 0, -1)} <= {f'job-{i}' for i in range(0, 300, 50)}
        runs = [int(line) for line in marks.read_text().split()]
        print(f'failover: {len(runs) - len(set(runs))} of {len(set(runs))} jobs ran twice')  # (-s shows it)
        marked = set(runs)
        assert marked == {index for index in range(300) if index % 50}  # each ran (at least once)
        assert {int(line) for line in later.read_text().split()} == set(range(1001, 1006))
        cluster.close()


def _zcard(cluster: Any, key: str) -> int:
    """ZCARD, 0 while the cluster is failing over (the test's own client meets the dead master too)."""
    try:
        return int(cluster.zcard(key))
    except Exception:
        return 0
