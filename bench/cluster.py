"""rqfast on one Redis and on a local 3-master Redis Cluster: jobs/s and Redis CPU per job, by node.

    python -m bench.cluster [--jobs 1000] [--queues 3] [--runs 1] [--layouts single,slot,keyspaces,sharded]

Each layout runs the same fleet: `--queues` queues of `--jobs` no-op jobs each, enqueued by one
producer process per queue, then worked by one SimpleWorker process per queue (burst), all at once.

- `single`: a private redis-server, the default prefix `rq`.
- `slot`: the cluster in single-slot mode, every process under `RQ_KEY_PREFIX='{rq}'` (one master
  holds everything).
- `keyspaces`: the cluster, each queue's producer and worker under a prefix of its own, `{rq:<queue>}`,
  the queue names picked so that the queues land on different masters (docs/connections.md, "one
  keyspace per queue group").
- `sharded`: the cluster with `RQFAST_SHARDING=queue` in every process (the same keyspaces as
  `keyspaces`, set by rqfast rather than by each process's prefix).

Redis CPU is each node's `INFO cpu` (used_cpu_sys + used_cpu_user) delta over the run, enqueue
included, divided by every job of the run. jobs/s is the work phase's (all jobs / from the workers'
start until the last exits). It starts its own servers on free loopback ports (tests/cluster_fixture.py
for the cluster) and prints a markdown table; it writes no file. On a small machine the client
processes share the cores with the nodes: read the per-node CPU split, and the model it gives
(jobs/s per master = 1 / Redis CPU per job on it), more than the jobs/s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
from redis.cluster import RedisCluster

ROOT = Path(__file__).resolve().parent.parent
NOOP = 'bench.jobs.noop'
SHARDED = 'sharded'  # (as a queue's prefix: RQFAST_SHARDING=queue, which puts it under {rq:<queue>})


def child(what: str, port: int, cluster: bool, queue: str, count: int) -> None:
    """A producer (`enqueue`) or a burst SimpleWorker (`work`) of one queue, in its own process: the
    prefix (RQ_KEY_PREFIX) is read when rqfast is imported."""
    from rqfast import Queue, SimpleWorker

    conn: Any = RedisCluster(host='127.0.0.1', port=port) if cluster else redis.Redis(port=port)
    target = Queue(queue, connection=conn)
    if what == 'enqueue':
        for start in range(0, count, 500):
            target.enqueue_many([Queue.prepare_data(NOOP) for _ in range(start, min(count, start + 500))])
    else:
        SimpleWorker([target], connection=conn).work(burst=True, logging_level='WARNING')


def _spawn(what: str, port: int, cluster: bool, queue: str, count: int, prefix: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, 'RQ_KEY_PREFIX': prefix, 'PYTHONPATH': str(ROOT), 'RQFAST_SHARDING': ''}
    if prefix == SHARDED:
        env.update(RQ_KEY_PREFIX='rq', RQFAST_SHARDING='queue')
    args = [sys.executable, '-m', 'bench.cluster', '--child', what, str(port), str(int(cluster)), queue, str(count)]
    return subprocess.Popen(args, env=env, cwd=ROOT)


def _all(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.wait(timeout=600) != 0:
            raise SystemExit(f'{process.args} exited with status {process.returncode}')


def _cpu(port: int) -> float:
    info = redis.Redis(port=port).info('cpu')
    return float(info['used_cpu_sys']) + float(info['used_cpu_user'])


def run_fleet(
    port: int, masters: list[int], cluster: bool, queues: dict[str, str], count: int
) -> tuple[float, list[float]]:
    """(jobs/s of the work phase, Redis CPU µs per job on each of `masters`): `queues` maps each queue
    to the prefix its processes run under."""
    before = [_cpu(node) for node in masters]
    _all([_spawn('enqueue', port, cluster, queue, count, prefix) for queue, prefix in queues.items()])
    start = time.perf_counter()
    _all([_spawn('work', port, cluster, queue, count, prefix) for queue, prefix in queues.items()])
    elapsed = time.perf_counter() - start
    jobs = count * len(queues)
    check(port, cluster, queues, count)
    spent = [_cpu(node) - was for node, was in zip(masters, before, strict=True)]
    return jobs / elapsed, [seconds * 1e6 / jobs for seconds in spent]


def check(port: int, cluster: bool, queues: dict[str, str], count: int) -> None:
    """Every job finished: a run that did not do all its work is an error, not a figure."""
    conn: Any = RedisCluster(host='127.0.0.1', port=port) if cluster else redis.Redis(port=port)
    for queue, given in queues.items():
        prefix = f'{{rq:{queue}}}' if given == SHARDED else given
        finished = int(conn.zcard(f'{prefix}:finished:{queue}'))
        if finished != count:
            raise SystemExit(f'{queue}: {finished} of {count} jobs finished')
        conn.delete(f'{prefix}:finished:{queue}')  # (the next run counts its own)
    conn.close()


def spread_names(conn: Any, count: int) -> list[str]:
    """`count` queue names whose `{rq:<name>}` tags spread evenly over the cluster's masters."""
    masters = len(conn.get_primaries())
    most = -(-count // masters)  # per master
    per_master: dict[str, int] = {}
    names: list[str] = []
    number = 0
    while len(names) < count:
        name = f'q{number}'
        node = conn.get_node_from_key(f'{{rq:{name}}}:queues').name
        if per_master.get(node, 0) < most:
            per_master[node] = per_master.get(node, 0) + 1
            names.append(name)
        number += 1
    return names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog='python -m bench.cluster', description=__doc__.split('\n')[0])
    parser.add_argument('--jobs', type=int, default=1000, help='jobs per queue (default 1000)')
    parser.add_argument('--queues', type=int, default=3)
    parser.add_argument('--runs', type=int, default=1)
    parser.add_argument('--layouts', default='single,slot,keyspaces,sharded')
    parser.add_argument('--child', nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        what, port, cluster, queue, count = args.child
        child(what, int(port), cluster == '1', queue, int(count))
        return
    layouts = args.layouts.split(',')
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix='bench-cluster-') as tmp:
        if 'single' in layouts:
            rows += _single(Path(tmp), args)
        if {'slot', 'keyspaces', 'sharded'} & set(layouts):
            rows += _on_cluster(Path(tmp), args, layouts)
    print(f'{args.queues} queues x {args.jobs} no-op jobs, one producer and one SimpleWorker per queue, at once\n')
    print('| layout | jobs/s | Redis CPU per job (µs), by master, largest first |')
    print('|---|---:|---|')
    print('\n'.join(rows))


def _row(layout: str, rate: float, cpu: list[float]) -> str:
    split = ' / '.join(f'{value:.0f}' for value in sorted(cpu, reverse=True))
    return f'| {layout} | {rate:,.0f} | {split} (sum {sum(cpu):.0f}) |'


def _single(workdir: Path, args: argparse.Namespace) -> list[str]:
    from tests.redis_servers import free_port, server

    port = free_port()
    rows = []
    with server(workdir, ['--port', str(port), '--save', '', '--appendonly', 'no'], lambda: _ping(port)):
        queues = {f'q{index}': 'rq' for index in range(args.queues)}
        for _ in range(args.runs):
            rows.append(_row('one Redis, `rq`', *run_fleet(port, [port], False, queues, args.jobs)))
    return rows


def _on_cluster(workdir: Path, args: argparse.Namespace, layouts: list[str]) -> list[str]:
    from tests.cluster_fixture import local_cluster

    rows = []
    with local_cluster(workdir / 'cluster') as ports:
        conn = RedisCluster(host='127.0.0.1', port=ports[0])
        masters = [node.port for node in conn.get_primaries()]
        names = spread_names(conn, args.queues)
        conn.close()
        for _ in range(args.runs):
            if 'slot' in layouts:
                queues = {name: '{rq}' for name in names}
                rows.append(_row('cluster, one slot `{rq}`', *run_fleet(ports[0], masters, True, queues, args.jobs)))
            if 'keyspaces' in layouts:
                queues = {name: f'{{rq:{name}}}' for name in names}
                rate, cpu = run_fleet(ports[0], masters, True, queues, args.jobs)
                rows.append(_row('cluster, a keyspace per queue `{rq:<queue>}`', rate, cpu))
            if 'sharded' in layouts:
                queues = {name: SHARDED for name in names}
                rows.append(
                    _row('cluster, `RQFAST_SHARDING=queue`', *run_fleet(ports[0], masters, True, queues, args.jobs))
                )
    return rows


def _ping(port: int) -> None:
    redis.Redis(port=port, socket_timeout=1).ping()


if __name__ == '__main__':
    main()
