"""A local Redis Cluster of 3 masters (no replicas) on free loopback ports, for tests/test_cluster.py.

`local_cluster(workdir)` starts three `redis-server --cluster-enabled yes` processes, joins them with
`redis-cli --cluster create`, waits for `cluster_state:ok` on every node, and kills them at the end.
Run it alone to keep one up by hand: `python -m tests.cluster_fixture [--replicas 1]` (prints the nodes' URL).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from tests.redis_servers import cli_binary, free_port, server


def _ping(port: int) -> None:
    import redis

    redis.Redis(port=port, socket_timeout=1).ping()


def _cluster_ok(port: int) -> bool:
    import redis

    info = redis.Redis(port=port, socket_timeout=1).execute_command('CLUSTER', 'INFO')
    text = info.decode() if isinstance(info, bytes) else str(info)
    return 'cluster_state:ok' in text


@contextmanager
def _node(workdir: Path, port: int) -> Iterator[None]:
    """One cluster node, started and killed by redis_servers.server (its log: node-<port>.log)."""
    args = ['--port', str(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes']
    args += ['--cluster-config-file', str(workdir / f'nodes-{port}.conf'), '--cluster-node-timeout', '2000']
    with server(workdir, [*args, '--save', '', '--appendonly', 'no'], lambda: _ping(port), name=f'node-{port}'):
        yield


@contextmanager
def local_cluster(workdir: Path, masters: int = 3, replicas: int = 0) -> Iterator[list[int]]:
    """The ports of a ready `masters`-master cluster (`replicas` replicas of each), running until the
    block ends: the masters' first (as `redis-cli --cluster create` assigns them), then the replicas'."""
    cli = cli_binary()
    workdir.mkdir(parents=True, exist_ok=True)
    ports: list[int] = []
    with ExitStack() as stack:
        while len(ports) < masters * (1 + replicas):
            port = free_port()
            # a cluster node also listens on port + 10000 (the cluster bus): that one must be free too
            if port in ports or port + 10000 > 65535 or not _bus_free(port + 10000):
                continue
            stack.enter_context(_node(workdir, port))
            ports.append(port)
        subprocess.run(
            [
                cli,
                '--cluster',
                'create',
                *(f'127.0.0.1:{port}' for port in ports),
                '--cluster-replicas',
                str(replicas),
                '--cluster-yes',
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        deadline = time.monotonic() + 30
        while not all(_cluster_ok(port) for port in ports) or not all(_in_sync(port, replicas) for port in ports):
            if time.monotonic() > deadline:
                raise RuntimeError('the local cluster did not reach cluster_state:ok (replicas in sync) in 30 s')
            time.sleep(0.1)
        yield ports


# On the slot's master, in one script (nothing runs in between): every key of the slot MIGRATEd to the
# target, 1,000 at a time, then the slot marked MIGRATING, so that from then on every command on it is
# sent on (ASK) to the target, which holds all of them. ARGV: slot, target host, target port, target id.
MOVE_KEYS = """
local slot, host, port, target = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local moved = 0
while true do
  local found = redis.call('CLUSTER', 'GETKEYSINSLOT', slot, 1000)
  if #found == 0 then break end
  redis.call('MIGRATE', host, port, '', 0, 60000, 'KEYS', unpack(found))
  moved = moved + #found
end
redis.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', target)
return moved
"""


@contextmanager
def cluster_client(port: int) -> Iterator[Any]:
    """A redis-py RedisCluster client of the local cluster (any node's port), closed afterwards."""
    from redis.cluster import RedisCluster

    client = RedisCluster(host='127.0.0.1', port=port)
    try:
        yield client
    finally:
        client.close()


def move_slot(ports: list[int], slot: int, source: int, target: int) -> int:
    """Move `slot` from the master on port `source` to the one on `target` while clients use it, in the
    order docs/connections.md gives (IMPORTING, the keys and MIGRATING in one script, then NODE on the
    target first): the slot's keys are never split between the two. Returns how many keys moved."""
    import redis

    def node_id(port: int) -> str:
        found = redis.Redis(port=port, decode_responses=True).execute_command('CLUSTER', 'MYID')
        return str(found)

    source_id, target_id = node_id(source), node_id(target)
    redis.Redis(port=target).execute_command('CLUSTER', 'SETSLOT', slot, 'IMPORTING', source_id)
    moved = int(redis.Redis(port=source).eval(MOVE_KEYS, 0, slot, '127.0.0.1', target, target_id))
    for port in sorted(ports, key=lambda port: (port != target, port != source)):
        redis.Redis(port=port).execute_command('CLUSTER', 'SETSLOT', slot, 'NODE', target_id)
    return moved


def _in_sync(port: int, replicas: int) -> bool:
    """A master has its `replicas` replicas connected; a replica its link to the master up."""
    import redis

    info = redis.Redis(port=port, socket_timeout=1).info('replication')
    if info.get('role') == 'master':
        return int(info.get('connected_slaves', 0)) >= replicas
    return info.get('master_link_status') == 'up'


def _bus_free(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        try:
            sock.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


if __name__ == '__main__':
    import signal
    import sys
    import tempfile

    replicas = int(sys.argv[sys.argv.index('--replicas') + 1]) if '--replicas' in sys.argv else 0
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # kill <pid> tears the nodes down too
    with tempfile.TemporaryDirectory() as tmp, local_cluster(Path(tmp), replicas=replicas) as found:
        print(f'redis://127.0.0.1:{found[0]}/?cluster=true  (nodes: {found}); Ctrl-C or kill stops it', flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
