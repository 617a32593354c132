"""What tests/test_dashboard_cluster.py runs in subprocesses (RQ_KEY_PREFIX and RQFAST_SHARDING are read at
import): `python -m tests.dashboard_cluster_run fill <port> <queue>...` fills the queues on the local
cluster: in the first, 3 jobs run (2 finish, 1 fails) and 4 wait; in each other, 5 wait and a worker
stays registered (never working). Prints the failed job's id."""

from __future__ import annotations

import sys

from redis.cluster import RedisCluster

from rqfast import Queue, SimpleWorker


def fill(port: int, names: list[str]) -> None:
    conn = RedisCluster(host='127.0.0.1', port=port)
    first = Queue(names[0], connection=conn)
    first.enqueue('operator.add', 1, 2)
    first.enqueue('operator.add', 3, 4)
    failed = first.enqueue('operator.truediv', 1, 0)
    SimpleWorker([first], connection=conn).work(burst=True, logging_level='WARNING')
    for n in range(4):
        first.enqueue('operator.add', n, n)
    for name in names[1:]:
        queue = Queue(name, connection=conn)
        for n in range(5):
            queue.enqueue('operator.mul', n, 2)
        SimpleWorker([queue], connection=conn, name=f'idle-{name}').register_birth()
    print(failed.id)


if __name__ == '__main__':
    what, port, *names = sys.argv[1:]
    assert what == 'fill'
    fill(int(port), names)
